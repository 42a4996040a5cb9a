//! Ethernet II + IPv4 + UDP headers for the raw (AF_PACKET) mode: written once per run by the
//! sender, read by the raw receiver to find the probe payload.

use std::net::Ipv4Addr;

/// Bytes of the Ethernet II, IPv4 (no options) and UDP headers.
pub const HEADERS_LEN: usize = 14 + 20 + 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_UDP: u8 = 17;
const TTL: u8 = 64;

/// Addresses of a raw UDP frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Source IPv4 address.
    pub src_ip: Ipv4Addr,
    /// Destination IPv4 address.
    pub dst_ip: Ipv4Addr,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes Ethernet, IPv4 (DF set, checksum filled) and UDP headers (checksum 0, allowed for
/// IPv4 by RFC 768) for a frame of `frame.len()` bytes without FCS into `frame[..HEADERS_LEN]`.
///
/// # Panics
/// If `frame` is shorter than [`HEADERS_LEN`].
pub fn emit_headers(frame: &mut [u8], a: &Addresses) {
    let ip_len = (frame.len() - 14) as u16;
    frame[0..6].copy_from_slice(&a.dst_mac);
    frame[6..12].copy_from_slice(&a.src_mac);
    frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip = &mut frame[14..34];
    ip.fill(0);
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[6] = 0x40;
    ip[8] = TTL;
    ip[9] = PROTO_UDP;
    ip[12..16].copy_from_slice(&a.src_ip.octets());
    ip[16..20].copy_from_slice(&a.dst_ip.octets());
    let checksum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    let udp = &mut frame[34..42];
    udp[0..2].copy_from_slice(&a.src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&a.dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
    udp[6..8].fill(0);
}

/// The UDP payload of an Ethernet II / IPv4 / UDP frame to `dst_port`; `None` for anything else.
pub fn udp_payload(frame: &[u8], dst_port: u16) -> Option<&[u8]> {
    if frame.len() < HEADERS_LEN
        || frame[12..14] != ETHERTYPE_IPV4.to_be_bytes()
        || frame[14] >> 4 != 4
    {
        return None;
    }
    let ihl = usize::from(frame[14] & 0x0F) * 4;
    if ihl < 20 || frame[23] != PROTO_UDP {
        return None;
    }
    let udp = frame.get(14 + ihl..14 + ihl + 8)?;
    if u16::from_be_bytes([udp[2], udp[3]]) != dst_port {
        return None;
    }
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    frame.get(14 + ihl + 8..14 + ihl + udp_len.max(8))
}

/// Parses a MAC address written as six hex pairs separated by `:` or `-`.
///
/// # Errors
/// When the text is not such an address.
pub fn parse_mac(text: &str) -> Result<[u8; 6], String> {
    let bad =
        || format!("MAC address {text:?} is not valid (six hex pairs, e.g. 02:00:00:00:00:01)");
    let parts: Vec<&str> = text.split([':', '-']).collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut mac = [0u8; 6];
    for (m, p) in mac.iter_mut().zip(parts) {
        if p.len() != 2 {
            return Err(bad());
        }
        *m = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_checksum() {
        let a = Addresses {
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_mac: [2, 0, 0, 0, 0, 1],
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip: Ipv4Addr::new(198, 18, 0, 2),
            src_port: 1000,
            dst_port: 5000,
        };
        let mut frame = vec![0xAAu8; 60];
        emit_headers(&mut frame, &a);
        assert_eq!(
            ipv4_checksum(&frame[14..34]),
            0,
            "a correct header sums to 0xFFFF"
        );
        assert_eq!(&frame[16..18], &46u16.to_be_bytes());
        let payload = udp_payload(&frame, 5000).unwrap();
        assert_eq!(payload.len(), 18);
        assert!(udp_payload(&frame, 5001).is_none());
        assert!(udp_payload(&frame[..40], 5000).is_none());
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("02:0a:FF:00:00:01").unwrap(),
            [2, 10, 255, 0, 0, 1]
        );
        assert!(parse_mac("02:0a:ff:00:00")
            .unwrap_err()
            .contains("\"02:0a:ff:00:00\""));
        assert!(parse_mac("02:0a:ff:00:00:zz").is_err());
    }
}
