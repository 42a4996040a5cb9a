//! Wire formats: the bytes of a frame as the kernel and pcap see them (no preamble, no FCS),
//! read and written without copying.
//!
//! Each format follows the same shape: a view `Foo<T: AsRef<[u8]>>` over a buffer whose
//! `new_checked` validates every length it will later rely on (after a successful check no
//! accessor panics), and, where frames are also built, a plain `FooRepr` struct with `parse`,
//! `buffer_len` and `emit`. Malformed input is a [`WireError`] value for the caller to count,
//! never a panic. Unknown enum values (EtherTypes, IP protocols) are kept as they are.
//!
//! All multi-byte fields on the wire are big-endian (network order); every accessor returns
//! host-order numbers.
//!
//! - [`ethernet`]: MAC addresses, up to two VLAN tags, the position of the R-TAG and payload.
//! - [`rtag`]: the 802.1CB R-TAG (clause 7.8) and `push_rtag` / `pop_rtag`.
//! - [`ip`]: just enough IPv4/IPv6 and UDP/TCP/SCTP to identify streams.

pub mod ethernet;
pub mod ip;
pub mod rtag;

use core::fmt;

pub use ethernet::{
    EtherType, Frame, FrameRepr, MacAddr, ParseMacAddrError, TagProtocol, VlanTag, VlanTags,
};
pub use ip::{IpFields, IpProtocol, Ipv4Packet, Ipv6Packet, L4Ports};
pub use rtag::{pop_rtag, pop_rtag_in_place, push_rtag, push_rtag_in_place, RtagRepr, Tag};

/// Why a buffer could not be read as the frame or packet it should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The buffer ends before `header` does: `len` bytes present, `needed` bytes required.
    Truncated {
        header: Header,
        len: usize,
        needed: usize,
    },
    /// `pop_rtag` found this EtherType where the R-TAG should stand.
    NoRtag { ethertype: EtherType },
    /// `push_rtag` was given a frame that already carries an R-TAG with this sequence number.
    RtagPresent { seq: crate::SeqNum },
    /// A VLAN tag had to be rewritten in a frame that has none.
    Untagged,
    /// The EtherType is neither IPv4 (0x0800) nor IPv6 (0x86DD).
    NotIp { ethertype: EtherType },
    /// The IP version field disagrees with the EtherType that announced the packet.
    IpVersion { version: u8, expected: u8 },
    /// An IPv4 IHL below 5 (a header shorter than 20 bytes).
    Ipv4HeaderLength { ihl: u8 },
    /// An IPv4 total length shorter than the packet's own header.
    Ipv4TotalLength { total_len: u16, header_len: usize },
}

/// The header a [`WireError::Truncated`] was cut short in; names the unit being measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// Destination MAC, source MAC and EtherType (14 bytes).
    Ethernet,
    /// An 802.1Q/802.1ad tag (4 bytes) and the EtherType after it.
    VlanTag,
    /// The R-TAG (6 bytes) and the encapsulated EtherType after it.
    Rtag,
    /// The IPv4 header: 20 bytes, or as long as its IHL says.
    Ipv4Header,
    /// The IPv4 packet as long as its total length field says.
    Ipv4TotalLength,
    /// The fixed 40-byte IPv6 header.
    Ipv6Header,
    /// The IPv6 packet as long as its payload length field says.
    Ipv6PayloadLength,
    /// The source and destination ports that open a UDP, TCP or SCTP header (4 bytes).
    L4Ports,
}

impl Header {
    /// What the length in the message is the length of, and what it fell short of.
    fn unit_and_name(self) -> (&'static str, &'static str) {
        match self {
            Header::Ethernet => ("frame", "an Ethernet header"),
            Header::VlanTag => ("frame", "its VLAN tag and the EtherType after it"),
            Header::Rtag => ("frame", "its R-TAG and the EtherType after it"),
            Header::Ipv4Header => ("IPv4 packet", "its header"),
            Header::Ipv4TotalLength => ("IPv4 packet", "its total length field"),
            Header::Ipv6Header => ("IPv6 packet", "an IPv6 header"),
            Header::Ipv6PayloadLength => ("IPv6 packet", "its payload length field"),
            Header::L4Ports => ("IP payload", "the UDP/TCP/SCTP ports"),
        }
    }
}

impl WireError {
    /// Whether this is an R-TAG that cannot be read (cut short by the end of the frame): what
    /// frerCpsSeqEncErroredPackets counts (802.1CB 10.8).
    pub fn is_encoding_error(&self) -> bool {
        matches!(
            self,
            WireError::Truncated {
                header: Header::Rtag,
                ..
            }
        )
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated { header, len, needed } => {
                let (unit, name) = header.unit_and_name();
                write!(f, "{unit} of {len} bytes is shorter than {name} ({needed} bytes)")
            }
            WireError::NoRtag { ethertype } => write!(
                f,
                "no R-TAG (EtherType {ethertype} after the MAC addresses and VLAN tags; expected {})",
                EtherType::RTAG
            ),
            WireError::RtagPresent { seq } => write!(
                f,
                "frame already carries an R-TAG (sequence number {seq}); a frame takes only one"
            ),
            WireError::Untagged => write!(f, "frame has no VLAN tag to rewrite"),
            WireError::NotIp { ethertype } => write!(
                f,
                "EtherType {ethertype} is not IP (expected {} for IPv4 or {} for IPv6)",
                EtherType::IPV4,
                EtherType::IPV6
            ),
            WireError::IpVersion { version, expected } => write!(
                f,
                "IP version field is {version} (the EtherType announced IPv{expected})"
            ),
            WireError::Ipv4HeaderLength { ihl } => {
                write!(f, "IPv4 IHL {ihl} is out of range (5..=15)")
            }
            WireError::Ipv4TotalLength { total_len, header_len } => write!(
                f,
                "IPv4 total length {total_len} is shorter than its header ({header_len} bytes)"
            ),
        }
    }
}

impl std::error::Error for WireError {}

/// A field value outside the range the format can carry, e.g. a VID of 5000.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeError {
    /// The field's name as the user would write it ("vid", "pcp").
    pub field: &'static str,
    /// The value that was given.
    pub value: u64,
    /// The valid values, written as a Rust range ("0..=4095").
    pub valid: &'static str,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} is out of range ({})",
            self.field, self.value, self.valid
        )
    }
}

impl std::error::Error for RangeError {}

/// The big-endian u16 at `at..at + 2`; callers have checked the length.
fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// Writes `value` big-endian at `at..at + 2`; callers have checked the length.
fn write_u16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_bad_value_and_what_is_valid() {
        let short = WireError::Truncated {
            header: Header::Ethernet,
            len: 10,
            needed: 14,
        };
        assert_eq!(
            short.to_string(),
            "frame of 10 bytes is shorter than an Ethernet header (14 bytes)"
        );
        assert_eq!(
            WireError::NoRtag {
                ethertype: EtherType::IPV4
            }
            .to_string(),
            "no R-TAG (EtherType 0x0800 after the MAC addresses and VLAN tags; expected 0xF1C1)"
        );
        let range = RangeError {
            field: "vid",
            value: 5000,
            valid: "0..=4095",
        };
        assert_eq!(range.to_string(), "vid 5000 is out of range (0..=4095)");
    }
}
