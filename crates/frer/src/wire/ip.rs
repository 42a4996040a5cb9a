//! Just enough IPv4, IPv6 and UDP/TCP/SCTP to identify streams (802.1CB clause 6, IP stream
//! identification): addresses, DSCP, the next protocol and the transport ports.
//!
//! Every length is checked before it is used. Limits, on purpose:
//! - IPv4 options are skipped by the IHL, not read. Non-first fragments (fragment offset
//!   not 0) carry no transport header, so they have no ports.
//! - IPv6 extension headers are not walked: the next protocol is the fixed header's Next
//!   Header field, and ports are read only when that field is UDP, TCP or SCTP itself. A
//!   packet with a Hop-by-Hop, Routing, Fragment or Destination Options header therefore
//!   reports that header's number as its protocol and has no ports.
//! - Checksums are not verified.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use core::fmt;

use super::ethernet::EtherType;
use super::{read_u16, Header, WireError};

mod ipv4_field {
    pub type Field = core::ops::Range<usize>;
    pub const VERSION_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const FLAGS_FRAGMENT_OFFSET: usize = 6;
    pub const PROTOCOL: usize = 9;
    pub const SOURCE: Field = 12..16;
    pub const DESTINATION: Field = 16..20;
}

mod ipv6_field {
    pub type Field = core::ops::Range<usize>;
    pub const VERSION_TRAFFIC_CLASS: Field = 0..2;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const SOURCE: Field = 8..24;
    pub const DESTINATION: Field = 24..40;
}

/// Length of an IPv4 header without options.
pub const IPV4_MIN_HEADER_LEN: usize = 20;
/// Length of the fixed IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;
/// Bytes that hold the source and destination port at the start of UDP, TCP and SCTP.
pub const L4_PORTS_LEN: usize = 4;

/// An IP protocol / IPv6 next-header number; unknown values are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    /// Transmission Control Protocol.
    pub const TCP: IpProtocol = IpProtocol(6);
    /// User Datagram Protocol.
    pub const UDP: IpProtocol = IpProtocol(17);
    /// Stream Control Transmission Protocol.
    pub const SCTP: IpProtocol = IpProtocol(132);

    /// Whether the transport header starts with 16-bit source and destination ports.
    pub fn has_ports(self) -> bool {
        matches!(self, IpProtocol::TCP | IpProtocol::UDP | IpProtocol::SCTP)
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IpProtocol::TCP => f.write_str("tcp"),
            IpProtocol::UDP => f.write_str("udp"),
            IpProtocol::SCTP => f.write_str("sctp"),
            IpProtocol(other) => write!(f, "protocol {other}"),
        }
    }
}

/// A zero-copy view of an IPv4 packet. After `new_checked` no accessor panics.
#[derive(Clone, Debug)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Checks that `buffer` holds an IPv4 header and the whole packet its total length names;
    /// bytes after that (Ethernet padding) are ignored.
    ///
    /// # Errors
    /// [`WireError::Truncated`], [`WireError::IpVersion`] (version not 4),
    /// [`WireError::Ipv4HeaderLength`] (IHL < 5) or [`WireError::Ipv4TotalLength`].
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>, WireError> {
        let len = buffer.as_ref().len();
        if len < IPV4_MIN_HEADER_LEN {
            return Err(WireError::Truncated {
                header: Header::Ipv4Header,
                len,
                needed: IPV4_MIN_HEADER_LEN,
            });
        }
        let packet = Ipv4Packet { buffer };
        let version = packet.buffer.as_ref()[ipv4_field::VERSION_IHL] >> 4;
        if version != 4 {
            return Err(WireError::IpVersion {
                version,
                expected: 4,
            });
        }
        let ihl = packet.buffer.as_ref()[ipv4_field::VERSION_IHL] & 0x0f;
        if ihl < 5 {
            return Err(WireError::Ipv4HeaderLength { ihl });
        }
        let header_len = packet.header_len();
        if len < header_len {
            return Err(WireError::Truncated {
                header: Header::Ipv4Header,
                len,
                needed: header_len,
            });
        }
        let total_len = packet.total_len();
        if usize::from(total_len) < header_len {
            return Err(WireError::Ipv4TotalLength {
                total_len,
                header_len,
            });
        }
        if len < usize::from(total_len) {
            return Err(WireError::Truncated {
                header: Header::Ipv4TotalLength,
                len,
                needed: total_len.into(),
            });
        }
        Ok(packet)
    }

    /// Header length in bytes (IHL x 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[ipv4_field::VERSION_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point, 0..=63.
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[ipv4_field::DSCP_ECN] >> 2
    }

    /// Total length field: header and payload, in bytes.
    pub fn total_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), ipv4_field::TOTAL_LEN)
    }

    /// Fragment offset in 8-byte units (0 for an unfragmented packet or a first fragment).
    pub fn fragment_offset(&self) -> u16 {
        read_u16(self.buffer.as_ref(), ipv4_field::FLAGS_FRAGMENT_OFFSET) & 0x1fff
    }

    /// The protocol of the payload.
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[ipv4_field::PROTOCOL])
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let octets: [u8; 4] = self.buffer.as_ref()[ipv4_field::SOURCE]
            .try_into()
            .expect("4-byte field");
        Ipv4Addr::from(octets)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let octets: [u8; 4] = self.buffer.as_ref()[ipv4_field::DESTINATION]
            .try_into()
            .expect("4-byte field");
        Ipv4Addr::from(octets)
    }

    /// The bytes after the header, up to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

/// A zero-copy view of an IPv6 packet's fixed header. After `new_checked` no accessor panics.
#[derive(Clone, Debug)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Checks that `buffer` holds the fixed header and the payload its length field names;
    /// bytes after that (Ethernet padding) are ignored.
    ///
    /// # Errors
    /// [`WireError::Truncated`] or [`WireError::IpVersion`] (version not 6).
    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>, WireError> {
        let len = buffer.as_ref().len();
        if len < IPV6_HEADER_LEN {
            return Err(WireError::Truncated {
                header: Header::Ipv6Header,
                len,
                needed: IPV6_HEADER_LEN,
            });
        }
        let packet = Ipv6Packet { buffer };
        let version = packet.buffer.as_ref()[0] >> 4;
        if version != 6 {
            return Err(WireError::IpVersion {
                version,
                expected: 6,
            });
        }
        let needed = IPV6_HEADER_LEN + usize::from(packet.payload_len());
        if len < needed {
            return Err(WireError::Truncated {
                header: Header::Ipv6PayloadLength,
                len,
                needed,
            });
        }
        Ok(packet)
    }

    /// Traffic class, 8 bits (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (read_u16(&self.buffer.as_ref()[ipv6_field::VERSION_TRAFFIC_CLASS], 0) >> 4) as u8
    }

    /// Differentiated services code point: the top 6 bits of the traffic class.
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Payload length field: bytes after the fixed header.
    pub fn payload_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), ipv6_field::PAYLOAD_LEN)
    }

    /// The fixed header's Next Header field (extension headers are not walked).
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[ipv6_field::NEXT_HEADER])
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let octets: [u8; 16] = self.buffer.as_ref()[ipv6_field::SOURCE]
            .try_into()
            .expect("16-byte field");
        Ipv6Addr::from(octets)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let octets: [u8; 16] = self.buffer.as_ref()[ipv6_field::DESTINATION]
            .try_into()
            .expect("16-byte field");
        Ipv6Addr::from(octets)
    }

    /// The bytes after the fixed header, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[IPV6_HEADER_LEN..IPV6_HEADER_LEN + usize::from(self.payload_len())]
    }
}

/// Source and destination port of a UDP, TCP or SCTP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct L4Ports {
    /// Source port.
    pub src: u16,
    /// Destination port.
    pub dst: u16,
}

impl L4Ports {
    /// The ports at the start of a transport header.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if `segment` is shorter than 4 bytes.
    pub fn parse(segment: &[u8]) -> Result<L4Ports, WireError> {
        if segment.len() < L4_PORTS_LEN {
            return Err(WireError::Truncated {
                header: Header::L4Ports,
                len: segment.len(),
                needed: L4_PORTS_LEN,
            });
        }
        Ok(L4Ports {
            src: read_u16(segment, 0),
            dst: read_u16(segment, 2),
        })
    }
}

/// The fields of an IPv4 or IPv6 packet that IP stream identification looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpFields {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// DSCP, 0..=63 (IPv4 DS field / IPv6 traffic class, top 6 bits).
    pub dscp: u8,
    /// IPv4 protocol or IPv6 fixed-header Next Header.
    pub protocol: IpProtocol,
    /// Transport ports, for UDP/TCP/SCTP packets that carry the transport header (not for
    /// non-first IPv4 fragments).
    pub ports: Option<L4Ports>,
}

impl IpFields {
    /// Reads the IP packet that an Ethernet frame with `ethertype` carries as `packet`.
    ///
    /// # Errors
    /// [`WireError::NotIp`] for an EtherType other than IPv4 or IPv6; the errors of
    /// [`Ipv4Packet::new_checked`] / [`Ipv6Packet::new_checked`]; [`WireError::Truncated`] if
    /// a UDP/TCP/SCTP payload is too short for its ports.
    pub fn parse(ethertype: EtherType, packet: &[u8]) -> Result<IpFields, WireError> {
        match ethertype {
            EtherType::IPV4 => {
                let ip = Ipv4Packet::new_checked(packet)?;
                let carries_ports = ip.protocol().has_ports() && ip.fragment_offset() == 0;
                Ok(IpFields {
                    src: ip.src_addr().into(),
                    dst: ip.dst_addr().into(),
                    dscp: ip.dscp(),
                    protocol: ip.protocol(),
                    ports: if carries_ports {
                        Some(L4Ports::parse(ip.payload())?)
                    } else {
                        None
                    },
                })
            }
            EtherType::IPV6 => {
                let ip = Ipv6Packet::new_checked(packet)?;
                Ok(IpFields {
                    src: ip.src_addr().into(),
                    dst: ip.dst_addr().into(),
                    dscp: ip.dscp(),
                    protocol: ip.next_header(),
                    ports: if ip.next_header().has_ports() {
                        Some(L4Ports::parse(ip.payload())?)
                    } else {
                        None
                    },
                })
            }
            other => Err(WireError::NotIp { ethertype: other }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IPv4, IHL 5, DSCP 46 (EF), total length 28, UDP, 198.18.0.1 -> 198.18.1.2, ports
    /// 5000 -> 6000, followed by 2 bytes of Ethernet padding.
    const IPV4_UDP: [u8; 30] = [
        0x45, 0xb8, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 198, 18, 0, 1, 198,
        18, 1, 2, 0x13, 0x88, 0x17, 0x70, 0x00, 0x08, 0x00, 0x00, 0xee, 0xee,
    ];

    /// IPv6, traffic class 0x88 (DSCP 34), payload 8 bytes, TCP, 2001:db8::1 -> 2001:db8::2,
    /// ports 80 -> 443.
    fn ipv6_tcp() -> Vec<u8> {
        let mut p = vec![0x68, 0x80, 0x00, 0x00, 0x00, 0x08, 0x06, 0x40];
        p.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
        p.extend_from_slice(&[0x00, 0x50, 0x01, 0xbb, 0, 0, 0, 0]);
        p
    }

    #[test]
    fn ipv4_udp_fixture_yields_addresses_dscp_and_ports() {
        let ip = Ipv4Packet::new_checked(&IPV4_UDP[..]).unwrap();
        assert_eq!(ip.header_len(), 20);
        assert_eq!(ip.total_len(), 28);
        assert_eq!(ip.payload().len(), 8, "padding is not payload");
        let fields = IpFields::parse(EtherType::IPV4, &IPV4_UDP).unwrap();
        assert_eq!(
            fields,
            IpFields {
                src: "198.18.0.1".parse().unwrap(),
                dst: "198.18.1.2".parse().unwrap(),
                dscp: 46,
                protocol: IpProtocol::UDP,
                ports: Some(L4Ports {
                    src: 5000,
                    dst: 6000
                }),
            }
        );
    }

    #[test]
    fn ipv6_tcp_fixture_yields_addresses_dscp_and_ports() {
        let fields = IpFields::parse(EtherType::IPV6, &ipv6_tcp()).unwrap();
        assert_eq!(fields.src, "2001:db8::1".parse::<IpAddr>().unwrap());
        assert_eq!(fields.dst, "2001:db8::2".parse::<IpAddr>().unwrap());
        assert_eq!(fields.dscp, 34);
        assert_eq!(fields.protocol, IpProtocol::TCP);
        assert_eq!(fields.ports, Some(L4Ports { src: 80, dst: 443 }));
    }

    #[test]
    fn ipv4_options_are_skipped_by_ihl() {
        let mut p = IPV4_UDP[..20].to_vec();
        p[0] = 0x46;
        p[3] = 32;
        p.extend_from_slice(&[1, 1, 1, 0]);
        p.extend_from_slice(&IPV4_UDP[20..28]);
        let fields = IpFields::parse(EtherType::IPV4, &p).unwrap();
        assert_eq!(
            fields.ports,
            Some(L4Ports {
                src: 5000,
                dst: 6000
            })
        );
    }

    #[test]
    fn non_first_fragments_have_no_ports_but_first_fragments_do() {
        let mut later = IPV4_UDP;
        later[7] = 0x01;
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &later).unwrap().ports,
            None
        );
        let mut first = IPV4_UDP;
        first[6] = 0x20;
        assert!(IpFields::parse(EtherType::IPV4, &first)
            .unwrap()
            .ports
            .is_some());
    }

    #[test]
    fn ipv6_extension_header_is_reported_not_walked() {
        let mut p = ipv6_tcp();
        p[6] = 0;
        let fields = IpFields::parse(EtherType::IPV6, &p).unwrap();
        assert_eq!(fields.protocol, IpProtocol(0));
        assert_eq!(fields.ports, None);
    }

    #[test]
    fn malformed_packets_are_errors_that_say_what_is_wrong() {
        assert_eq!(
            IpFields::parse(EtherType(0x88f7), &IPV4_UDP)
                .unwrap_err()
                .to_string(),
            "EtherType 0x88F7 is not IP (expected 0x0800 for IPv4 or 0x86DD for IPv6)"
        );
        assert_eq!(
            IpFields::parse(EtherType::IPV6, &IPV4_UDP).unwrap_err(),
            WireError::Truncated {
                header: Header::Ipv6Header,
                len: 30,
                needed: 40
            }
        );
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &ipv6_tcp())
                .unwrap_err()
                .to_string(),
            "IP version field is 6 (the EtherType announced IPv4)"
        );
        let mut short_ihl = IPV4_UDP;
        short_ihl[0] = 0x44;
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &short_ihl)
                .unwrap_err()
                .to_string(),
            "IPv4 IHL 4 is out of range (5..=15)"
        );
        let mut long_ihl = IPV4_UDP;
        long_ihl[0] = 0x4f;
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &long_ihl).unwrap_err(),
            WireError::Truncated {
                header: Header::Ipv4Header,
                len: 30,
                needed: 60
            }
        );
        let mut small_total = IPV4_UDP;
        small_total[3] = 19;
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &small_total)
                .unwrap_err()
                .to_string(),
            "IPv4 total length 19 is shorter than its header (20 bytes)"
        );
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &IPV4_UDP[..26])
                .unwrap_err()
                .to_string(),
            "IPv4 packet of 26 bytes is shorter than its total length field (28 bytes)"
        );
        let mut no_ports = IPV4_UDP;
        no_ports[3] = 22;
        assert_eq!(
            IpFields::parse(EtherType::IPV4, &no_ports)
                .unwrap_err()
                .to_string(),
            "IP payload of 2 bytes is shorter than the UDP/TCP/SCTP ports (4 bytes)"
        );
        let mut v6 = ipv6_tcp();
        v6.truncate(45);
        assert_eq!(
            IpFields::parse(EtherType::IPV6, &v6)
                .unwrap_err()
                .to_string(),
            "IPv6 packet of 45 bytes is shorter than its payload length field (48 bytes)"
        );
    }
}
