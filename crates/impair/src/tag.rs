//! Putting a frame's VLAN tag back into its bytes.
//!
//! On a veth the outermost VLAN tag of a frame is usually not in the frame's bytes but in the
//! skb's metadata (`skb->vlan_tci`): a tc program's `bpf_skb_vlan_push` puts it there, and the
//! kernel's receive path moves a tag that arrived in the bytes there (`skb_vlan_untag`) before
//! any AF_PACKET socket sees the frame. AF_PACKET then hands over the bytes without the tag and
//! reports the tag only in a `PACKET_AUXDATA` control message. The delay line sends bytes, so
//! it must write the tag back after the two MAC addresses, or the frame leaves untagged.
//! Inner tags (802.1ad stacks) stay in the bytes throughout and need nothing.
//!
//! The frames carry the virtio-net header of `PACKET_VNET_HDR` in front; four more bytes before
//! the network header move the offsets it holds: `csum_start` (when the checksum is left to
//! offload, `VIRTIO_NET_HDR_F_NEEDS_CSUM`) and `hdr_len` (the GSO packet's linear head).
//! `csum_offset` (from `csum_start`), `gso_size` (payload per segment) and `gso_type` stay.
//! No I/O here: bytes in, bytes out.

/// Bytes of the virtio-net header (`struct virtio_net_hdr`) in front of each frame.
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at csum_start + csum_offset is to be completed.
const VNET_F_NEEDS_CSUM: u8 = 1;
/// Offsets of `hdr_len` and `csum_start` in the virtio-net header (native byte order, as
/// AF_PACKET writes and reads it on a little-endian host and on a legacy big-endian one).
const HDR_LEN_AT: usize = 2;
const CSUM_START_AT: usize = 6;
/// The two MAC addresses before the tag.
const MACS_LEN: usize = 12;
/// Bytes of a VLAN tag (TPID, TCI).
pub const TAG_LEN: usize = 4;

/// An 802.1Q (TPID 0x8100) or 802.1ad (0x88A8) tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanTag {
    /// The tag protocol identifier.
    pub tpid: u16,
    /// Priority, drop eligibility and VLAN id.
    pub tci: u16,
}

impl VlanTag {
    fn bytes(self) -> [u8; TAG_LEN] {
        let [a, b] = self.tpid.to_be_bytes();
        let [c, d] = self.tci.to_be_bytes();
        [a, b, c, d]
    }
}

fn add_to_field(header: &mut [u8], at: usize, n: u16) {
    let value = u16::from_ne_bytes([header[at], header[at + 1]]).saturating_add(n);
    header[at..at + 2].copy_from_slice(&value.to_ne_bytes());
}

/// Appends `message` (a virtio-net header, then an Ethernet frame) to `out`, with `tag`, if
/// any, inserted after the MAC addresses and the header's offsets moved to match. A message
/// too short to hold the header and both addresses is appended unchanged.
pub fn put_tagged(message: &[u8], tag: Option<VlanTag>, out: &mut Vec<u8>) {
    let split = VNET_HDR_LEN + MACS_LEN;
    let Some(tag) = tag.filter(|_| message.len() >= split) else {
        out.extend_from_slice(message);
        return;
    };
    let start = out.len();
    out.reserve(message.len() + TAG_LEN);
    out.extend_from_slice(&message[..split]);
    out.extend_from_slice(&tag.bytes());
    out.extend_from_slice(&message[split..]);
    let header = &mut out[start..start + VNET_HDR_LEN];
    if header[0] & VNET_F_NEEDS_CSUM != 0 {
        add_to_field(header, CSUM_START_AT, TAG_LEN as u16);
    }
    if u16::from_ne_bytes([header[HDR_LEN_AT], header[HDR_LEN_AT + 1]]) != 0 {
        add_to_field(header, HDR_LEN_AT, TAG_LEN as u16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A virtio-net header: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset.
    fn vnet(flags: u8, gso_type: u8, hdr_len: u16, gso_size: u16, start: u16, off: u16) -> Vec<u8> {
        let mut h = vec![flags, gso_type];
        for v in [hdr_len, gso_size, start, off] {
            h.extend_from_slice(&v.to_ne_bytes());
        }
        h
    }

    const MACS: [u8; 12] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    /// EtherType IPv4 and the first bytes of an IPv4/UDP packet.
    const REST: [u8; 6] = [0x08, 0x00, 0x45, 0x00, 0x00, 0x54];

    fn message(header: Vec<u8>, after_macs: &[u8]) -> Vec<u8> {
        [header, MACS.to_vec(), after_macs.to_vec()].concat()
    }

    fn vlan(tpid: u16, tci: u16) -> Option<VlanTag> {
        Some(VlanTag { tpid, tci })
    }

    fn tagged(message: &[u8], tag: Option<VlanTag>) -> Vec<u8> {
        let mut out = vec![0xEE]; // appended after what is there
        put_tagged(message, tag, &mut out);
        assert_eq!(out[0], 0xEE);
        out.split_off(1)
    }

    #[test]
    fn a_metadata_tag_goes_after_the_macs_and_moves_the_checksum_start() {
        // UDP over IPv4, checksum left to offload: csum_start = 14 + 20, csum_offset = 6.
        let input = message(vnet(1, 0, 0, 0, 34, 6), &REST);
        let out = tagged(&input, vlan(0x8100, 0x2014));
        let expected = [
            vnet(1, 0, 0, 0, 38, 6),
            MACS.to_vec(),
            vec![0x81, 0x00, 0x20, 0x14],
            REST.to_vec(),
        ]
        .concat();
        assert_eq!(out, expected);
    }

    #[test]
    fn a_complete_frame_keeps_its_header_and_an_8021ad_tag_its_tpid() {
        let input = message(vnet(0, 0, 0, 0, 0, 0), &REST);
        let out = tagged(&input, vlan(0x88A8, 100));
        let expected = [
            vnet(0, 0, 0, 0, 0, 0),
            MACS.to_vec(),
            vec![0x88, 0xA8, 0x00, 0x64],
            REST.to_vec(),
        ]
        .concat();
        assert_eq!(out, expected);
    }

    #[test]
    fn a_gso_packet_keeps_its_segment_size_and_its_head_grows() {
        // UDP GSO (gso_type 5), head of 42 bytes, 1400-byte segments.
        let input = message(vnet(1, 5, 42, 1400, 34, 6), &REST);
        let out = tagged(&input, vlan(0x8100, 20));
        assert_eq!(&out[..VNET_HDR_LEN], &vnet(1, 5, 46, 1400, 38, 6)[..]);
        assert_eq!(out.len(), input.len() + TAG_LEN);
    }

    #[test]
    fn frames_without_a_metadata_tag_stay_as_they_are() {
        // A tag already in the bytes (an inner one of a stack, or a frame never untagged).
        let input = message(
            vnet(1, 0, 0, 0, 38, 6),
            &[0x81, 0x00, 0x00, 0x0A, 0x08, 0x00],
        );
        assert_eq!(tagged(&input, None), input);
        let runt = vec![0u8; VNET_HDR_LEN + 11];
        assert_eq!(tagged(&runt, vlan(0x8100, 1)), runt);
    }

    #[test]
    fn a_stack_gets_its_outer_tag_back_in_front_of_the_inner_one() {
        let input = message(
            vnet(0, 0, 0, 0, 0, 0),
            &[0x81, 0x00, 0x00, 0x0A, 0x08, 0x00],
        );
        let out = tagged(&input, vlan(0x88A8, 0x0014));
        assert_eq!(
            &out[VNET_HDR_LEN + 12..],
            &[0x88, 0xA8, 0x00, 0x14, 0x81, 0x00, 0x00, 0x0A, 0x08, 0x00]
        );
    }
}
