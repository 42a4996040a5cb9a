//! Ethernet II framing with up to two VLAN tags, and where an R-TAG and the payload start.
//!
//! Layout (all fields big-endian, no FCS in the buffer):
//!
//! ```text
//! 0      6      12                       12+4n                  payload_offset
//! | DA 6 | SA 6 | [TPID 2 | TCI 2] x n   | EtherType 2 | ...
//! | DA 6 | SA 6 | [TPID 2 | TCI 2] x n   | 0xF1C1 | reserved | seq | EtherType 2 | ...
//! ```
//!
//! `n` is 0, 1 or 2; a TPID is 0x8100 (C-tag, 802.1Q) or 0x88A8 (S-tag, 802.1ad) in either
//! position. The R-TAG (802.1CB 7.8) stands where the EtherType would, after the VLAN tags.
//! A third VLAN TPID is not walked: it is reported as the frame's EtherType.
//!
//! Over 600 lines only with its unit tests (about 170 of them); the codec is about 500.

use core::fmt;
use core::str::FromStr;

use super::rtag::{self, Tag};
use super::{read_u16, write_u16, Header, RangeError, WireError};
use crate::SeqNum;

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    /// The first EtherType (or TPID) position; each VLAN tag moves the next one 4 bytes on.
    pub const FIRST_ETHERTYPE: usize = 12;
    /// Within a VLAN tag, counted from its TPID.
    pub const TAG_TCI: usize = 2;
}

/// Length of an untagged Ethernet II header: two MAC addresses and an EtherType.
pub const HEADER_LEN: usize = 14;
/// Length of one VLAN tag (TPID and TCI).
pub const VLAN_TAG_LEN: usize = 4;
/// The number of VLAN tags the parser walks.
pub const MAX_VLAN_TAGS: usize = 2;

/// A 48-bit MAC address in transmission order (first octet first on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The address with each octet ANDed with the mask's.
    pub fn masked(self, mask: MacAddr) -> MacAddr {
        MacAddr(core::array::from_fn(|i| self.0[i] & mask.0[i]))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// Why a string is not a MAC address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseMacAddrError {
    /// The string that was given.
    pub input: String,
}

impl fmt::Display for ParseMacAddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a MAC address (expected six two-digit hex octets separated by ':' or '-', \
             e.g. aa:bb:cc:dd:ee:ff)",
            self.input
        )
    }
}

impl std::error::Error for ParseMacAddrError {}

impl FromStr for MacAddr {
    type Err = ParseMacAddrError;

    /// Accepts "aa:bb:cc:dd:ee:ff" and the IEEE form "AA-BB-CC-DD-EE-FF", in either case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = || ParseMacAddrError {
            input: s.to_owned(),
        };
        let separator = if s.contains('-') { '-' } else { ':' };
        let mut octets = [0u8; 6];
        let mut parts = s.split(separator);
        for octet in &mut octets {
            let part = parts.next().ok_or_else(error)?;
            if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(error());
            }
            *octet = u8::from_str_radix(part, 16).map_err(|_| error())?;
        }
        match parts.next() {
            Some(_) => Err(error()),
            None => Ok(MacAddr(octets)),
        }
    }
}

/// An EtherType (or TPID) value; values this crate does not know are kept as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// IPv6.
    pub const IPV6: EtherType = EtherType(0x86DD);
    /// C-tag TPID (IEEE 802.1Q customer VLAN tag).
    pub const C_TAG: EtherType = EtherType(0x8100);
    /// S-tag TPID (IEEE 802.1ad service VLAN tag).
    pub const S_TAG: EtherType = EtherType(0x88A8);
    /// The 802.1CB R-TAG (clause 7.8).
    pub const RTAG: EtherType = EtherType(0xF1C1);
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04X}", self.0)
    }
}

/// Which kind of VLAN tag: the TPID that introduces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagProtocol {
    /// 0x8100, an IEEE 802.1Q C-tag.
    CTag,
    /// 0x88A8, an IEEE 802.1ad S-tag.
    STag,
}

impl TagProtocol {
    /// The tag protocol a TPID announces, or `None` if it is not a VLAN TPID.
    pub fn from_tpid(tpid: EtherType) -> Option<TagProtocol> {
        match tpid {
            EtherType::C_TAG => Some(TagProtocol::CTag),
            EtherType::S_TAG => Some(TagProtocol::STag),
            _ => None,
        }
    }

    /// The TPID written for this kind of tag.
    pub fn tpid(self) -> EtherType {
        match self {
            TagProtocol::CTag => EtherType::C_TAG,
            TagProtocol::STag => EtherType::S_TAG,
        }
    }
}

/// One VLAN tag: its protocol and the three fields of its TCI (PCP 3 bits, DEI 1, VID 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VlanTag {
    protocol: TagProtocol,
    pcp: u8,
    dei: bool,
    vid: u16,
}

impl VlanTag {
    /// A tag with the given fields.
    ///
    /// # Errors
    /// [`RangeError`] if `pcp` is above 7 or `vid` above 4095.
    pub fn new(protocol: TagProtocol, pcp: u8, dei: bool, vid: u16) -> Result<VlanTag, RangeError> {
        if pcp > 7 {
            return Err(RangeError {
                field: "pcp",
                value: pcp.into(),
                valid: "0..=7",
            });
        }
        if vid > 4095 {
            return Err(RangeError {
                field: "vid",
                value: vid.into(),
                valid: "0..=4095",
            });
        }
        Ok(VlanTag {
            protocol,
            pcp,
            dei,
            vid,
        })
    }

    /// The tag read from its TCI (host order).
    pub fn from_tci(protocol: TagProtocol, tci: u16) -> VlanTag {
        VlanTag {
            protocol,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0FFF,
        }
    }

    /// The tag's TCI (host order).
    pub fn tci(self) -> u16 {
        (u16::from(self.pcp) << 13) | (u16::from(self.dei) << 12) | self.vid
    }

    /// C-tag or S-tag.
    pub fn protocol(self) -> TagProtocol {
        self.protocol
    }

    /// Priority code point, 0..=7.
    pub fn pcp(self) -> u8 {
        self.pcp
    }

    /// Drop eligible indicator.
    pub fn dei(self) -> bool {
        self.dei
    }

    /// VLAN identifier, 0..=4095 (0 = priority-tagged, no VLAN).
    pub fn vid(self) -> u16 {
        self.vid
    }
}

/// The VLAN tags of a frame, outermost first: zero, one or two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VlanTags {
    tags: [VlanTag; MAX_VLAN_TAGS],
    len: usize,
}

impl VlanTags {
    /// No VLAN tags.
    pub const NONE: VlanTags = VlanTags {
        tags: [VlanTag {
            protocol: TagProtocol::CTag,
            pcp: 0,
            dei: false,
            vid: 0,
        }; MAX_VLAN_TAGS],
        len: 0,
    };

    /// The given tags, outermost first.
    ///
    /// # Errors
    /// [`RangeError`] if there are more than [`MAX_VLAN_TAGS`].
    pub fn new(tags: &[VlanTag]) -> Result<VlanTags, RangeError> {
        if tags.len() > MAX_VLAN_TAGS {
            return Err(RangeError {
                field: "VLAN tag count",
                value: tags.len() as u64,
                valid: "0..=2",
            });
        }
        let mut stack = VlanTags::NONE;
        stack.tags[..tags.len()].copy_from_slice(tags);
        stack.len = tags.len();
        Ok(stack)
    }

    /// The tags, outermost first.
    pub fn as_slice(&self) -> &[VlanTag] {
        &self.tags[..self.len]
    }

    /// The outermost tag, the one a bridge port classifies on.
    pub fn outer(&self) -> Option<VlanTag> {
        self.as_slice().first().copied()
    }
}

/// A zero-copy view of an Ethernet frame's L2 header: MACs, VLAN tags, R-TAG, EtherType.
///
/// `new_checked` walks the tags once and checks that the buffer holds every header it found;
/// after that no accessor panics.
#[derive(Clone, Debug)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
    vlan_count: usize,
    has_rtag: bool,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Reads the L2 header of `buffer`.
    ///
    /// An R-TAG's reserved field is ignored (802.1CB 7.8: sent as 0, ignored on receipt).
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the buffer ends inside the Ethernet header, a VLAN tag or
    /// the R-TAG (each including the EtherType that follows it).
    pub fn new_checked(buffer: T) -> Result<Frame<T>, WireError> {
        let bytes = buffer.as_ref();
        let len = bytes.len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated {
                header: Header::Ethernet,
                len,
                needed: HEADER_LEN,
            });
        }
        let mut at = field::FIRST_ETHERTYPE;
        let mut vlan_count = 0;
        while vlan_count < MAX_VLAN_TAGS
            && TagProtocol::from_tpid(EtherType(read_u16(bytes, at))).is_some()
        {
            let needed = at + VLAN_TAG_LEN + 2;
            if len < needed {
                return Err(WireError::Truncated {
                    header: Header::VlanTag,
                    len,
                    needed,
                });
            }
            at += VLAN_TAG_LEN;
            vlan_count += 1;
        }
        let has_rtag = EtherType(read_u16(bytes, at)) == EtherType::RTAG;
        if has_rtag && len < at + Tag::<&[u8]>::LEN {
            return Err(WireError::Truncated {
                header: Header::Rtag,
                len,
                needed: at + Tag::<&[u8]>::LEN,
            });
        }
        Ok(Frame {
            buffer,
            vlan_count,
            has_rtag,
        })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC address.
    pub fn dst_addr(&self) -> MacAddr {
        MacAddr(
            self.buffer.as_ref()[field::DESTINATION]
                .try_into()
                .expect("6-byte field"),
        )
    }

    /// Source MAC address.
    pub fn src_addr(&self) -> MacAddr {
        MacAddr(
            self.buffer.as_ref()[field::SOURCE]
                .try_into()
                .expect("6-byte field"),
        )
    }

    /// The VLAN tags, outermost first.
    pub fn vlan_tags(&self) -> VlanTags {
        let mut tags = VlanTags::NONE;
        for index in 0..self.vlan_count {
            tags.tags[index] = self.vlan_tag_at(index);
        }
        tags.len = self.vlan_count;
        tags
    }

    /// The outermost VLAN tag, if any.
    pub fn outer_vlan(&self) -> Option<VlanTag> {
        (self.vlan_count > 0).then(|| self.vlan_tag_at(0))
    }

    /// Offset of the R-TAG, or of the EtherType if there is none: right after the VLAN tags.
    pub fn tag_offset(&self) -> usize {
        field::FIRST_ETHERTYPE + VLAN_TAG_LEN * self.vlan_count
    }

    /// A view of the R-TAG (and the EtherType after it), if the frame has one.
    pub fn rtag(&self) -> Option<Tag<&[u8]>> {
        self.has_rtag
            .then(|| Tag::new_unchecked(&self.buffer.as_ref()[self.tag_offset()..]))
    }

    /// The EtherType of the payload: after the VLAN tags and after the R-TAG if there is one.
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), self.payload_offset() - 2))
    }

    /// Offset of the first byte after the EtherType (after the R-TAG if there is one).
    pub fn payload_offset(&self) -> usize {
        let rtag_len = if self.has_rtag { rtag::RTAG_LEN } else { 0 };
        self.tag_offset() + rtag_len + 2
    }

    /// The bytes after the EtherType: the IP packet, for an IP frame.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.payload_offset()..]
    }

    /// The MAC service data unit as a bridge's EISS sees it, with the VLAN tags and R-TAG
    /// removed: the EtherType and the payload after it.
    pub fn msdu(&self) -> &[u8] {
        &self.buffer.as_ref()[self.payload_offset() - 2..]
    }

    fn vlan_tag_at(&self, index: usize) -> VlanTag {
        let bytes = self.buffer.as_ref();
        let at = field::FIRST_ETHERTYPE + VLAN_TAG_LEN * index;
        let protocol =
            TagProtocol::from_tpid(EtherType(read_u16(bytes, at))).unwrap_or(TagProtocol::CTag);
        VlanTag::from_tci(protocol, read_u16(bytes, at + field::TAG_TCI))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Overwrites the destination MAC address.
    pub fn set_dst_addr(&mut self, addr: MacAddr) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr.0);
    }

    /// Overwrites the outermost VLAN tag (TPID and TCI).
    ///
    /// # Errors
    /// [`WireError::Untagged`] if the frame has no VLAN tag.
    pub fn set_outer_vlan(&mut self, tag: VlanTag) -> Result<(), WireError> {
        if self.vlan_count == 0 {
            return Err(WireError::Untagged);
        }
        let bytes = self.buffer.as_mut();
        write_u16(bytes, field::FIRST_ETHERTYPE, tag.protocol.tpid().0);
        write_u16(bytes, field::FIRST_ETHERTYPE + field::TAG_TCI, tag.tci());
        Ok(())
    }
}

/// The L2 header as plain values: what [`Frame`] reads and what `emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRepr {
    /// Destination MAC address.
    pub dst_addr: MacAddr,
    /// Source MAC address.
    pub src_addr: MacAddr,
    /// VLAN tags, outermost first.
    pub vlan_tags: VlanTags,
    /// The R-TAG's sequence number, if the frame carries one.
    pub rtag: Option<SeqNum>,
    /// The payload's EtherType. A VLAN TPID or 0xF1C1 here would be read back as a tag.
    pub ethertype: EtherType,
}

impl FrameRepr {
    /// Reads the header values of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> FrameRepr {
        let rtag = frame.rtag().map(|tag| rtag::RtagRepr::parse(&tag).seq);
        FrameRepr {
            dst_addr: frame.dst_addr(),
            src_addr: frame.src_addr(),
            vlan_tags: frame.vlan_tags(),
            rtag,
            ethertype: frame.ethertype(),
        }
    }

    /// Bytes the header takes: 14, plus 4 per VLAN tag, plus 6 for an R-TAG.
    pub fn buffer_len(&self) -> usize {
        let rtag_len = if self.rtag.is_some() {
            rtag::RTAG_LEN
        } else {
            0
        };
        HEADER_LEN + VLAN_TAG_LEN * self.vlan_tags.as_slice().len() + rtag_len
    }

    /// Writes the header to the start of `buffer`; the payload goes after `buffer_len()` bytes.
    ///
    /// # Panics
    /// If `buffer` is shorter than `buffer_len()`.
    pub fn emit(&self, buffer: &mut [u8]) {
        buffer[field::DESTINATION].copy_from_slice(&self.dst_addr.0);
        buffer[field::SOURCE].copy_from_slice(&self.src_addr.0);
        let mut at = field::FIRST_ETHERTYPE;
        for tag in self.vlan_tags.as_slice() {
            write_u16(buffer, at, tag.protocol.tpid().0);
            write_u16(buffer, at + field::TAG_TCI, tag.tci());
            at += VLAN_TAG_LEN;
        }
        match self.rtag {
            Some(seq) => {
                let repr = rtag::RtagRepr {
                    seq,
                    next_ethertype: self.ethertype,
                };
                repr.emit(&mut Tag::new_unchecked(&mut buffer[at..]));
            }
            None => write_u16(buffer, at, self.ethertype.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DA 01:80:c2:00:00:0e, SA 02:00:00:00:00:01, S-tag PCP 5 VID 100, C-tag PCP 3 DEI VID 7,
    /// R-TAG seq 0x1234, IPv4, then two payload bytes.
    const DOUBLE_TAGGED_RTAG: [u8; 34] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, // DA
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // SA
        0x88, 0xa8, 0xa0, 0x64, // S-tag: PCP 5, DEI 0, VID 100
        0x81, 0x00, 0x70, 0x07, // C-tag: PCP 3, DEI 1, VID 7
        0xf1, 0xc1, 0x00, 0x00, 0x12, 0x34, // R-TAG, seq 0x1234
        0x08, 0x00, // IPv4
        0xde, 0xad, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn double_tagged_frame_with_rtag_parses_and_emits_back() {
        let frame = Frame::new_checked(&DOUBLE_TAGGED_RTAG[..]).unwrap();
        assert_eq!(frame.dst_addr(), "01:80:c2:00:00:0e".parse().unwrap());
        assert_eq!(frame.src_addr().to_string(), "02:00:00:00:00:01");
        let tags = frame.vlan_tags();
        let expected = [
            VlanTag::new(TagProtocol::STag, 5, false, 100).unwrap(),
            VlanTag::new(TagProtocol::CTag, 3, true, 7).unwrap(),
        ];
        assert_eq!(tags.as_slice(), &expected);
        assert_eq!(frame.tag_offset(), 20);
        assert_eq!(frame.rtag().unwrap().seq_num(), SeqNum(0x1234));
        assert_eq!(frame.ethertype(), EtherType::IPV4);
        assert_eq!(frame.payload_offset(), 28);
        assert_eq!(&frame.payload()[..2], &[0xde, 0xad]);
        assert_eq!(&frame.msdu()[..3], &[0x08, 0x00, 0xde]);

        let repr = FrameRepr::parse(&frame);
        assert_eq!(repr.buffer_len(), 28);
        let mut out = DOUBLE_TAGGED_RTAG;
        out[..28].fill(0);
        repr.emit(&mut out);
        assert_eq!(out, DOUBLE_TAGGED_RTAG);
    }

    #[test]
    fn untagged_frame_has_payload_after_14_bytes() {
        let bytes = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3, 4, 5, 0x86, 0xdd, 0x60,
        ];
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert!(frame.vlan_tags().as_slice().is_empty());
        assert!(frame.rtag().is_none());
        assert_eq!(frame.ethertype(), EtherType::IPV6);
        assert_eq!(frame.payload(), &[0x60]);
    }

    #[test]
    fn customer_tag_may_stand_outside_a_service_tag() {
        let bytes = [
            0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x81, 0x00, 0x00, 0x0a, 0x88, 0xa8, 0x00, 0x14,
            0x08, 0x06,
        ];
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        let tags = frame.vlan_tags();
        assert_eq!(tags.as_slice()[0].protocol(), TagProtocol::CTag);
        assert_eq!(tags.as_slice()[0].vid(), 10);
        assert_eq!(tags.as_slice()[1].protocol(), TagProtocol::STag);
        assert_eq!(tags.as_slice()[1].vid(), 20);
        assert_eq!(frame.ethertype(), EtherType(0x0806));
    }

    #[test]
    fn a_third_vlan_tpid_is_reported_as_the_ethertype() {
        let mut bytes = vec![0u8; 12];
        bytes.extend_from_slice(&[
            0x81, 0x00, 0, 1, 0x81, 0x00, 0, 2, 0x81, 0x00, 0, 3, 0x08, 0x00,
        ]);
        let frame = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(frame.vlan_tags().as_slice().len(), 2);
        assert_eq!(frame.ethertype(), EtherType::C_TAG);
    }

    #[test]
    fn truncated_headers_are_errors_naming_the_lengths() {
        let err = Frame::new_checked(&[0u8; 10][..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "frame of 10 bytes is shorter than an Ethernet header (14 bytes)"
        );
        let mut tagged = vec![0u8; 12];
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        assert_eq!(
            Frame::new_checked(&tagged[..]).unwrap_err(),
            WireError::Truncated {
                header: Header::VlanTag,
                len: 16,
                needed: 18
            }
        );
        let mut rtagged = vec![0u8; 12];
        rtagged.extend_from_slice(&[0xf1, 0xc1, 0x00, 0x00, 0x00, 0x01, 0x08]);
        assert_eq!(
            Frame::new_checked(&rtagged[..]).unwrap_err(),
            WireError::Truncated {
                header: Header::Rtag,
                len: 19,
                needed: 20
            }
        );
    }

    #[test]
    fn outer_vlan_and_destination_can_be_rewritten_in_place() {
        let mut bytes = DOUBLE_TAGGED_RTAG;
        let mut frame = Frame::new_checked(&mut bytes[..]).unwrap();
        frame.set_dst_addr(MacAddr([0x02, 0, 0, 0, 0, 0x99]));
        frame
            .set_outer_vlan(VlanTag::new(TagProtocol::CTag, 7, false, 4094).unwrap())
            .unwrap();
        assert_eq!(&bytes[..6], &[0x02, 0, 0, 0, 0, 0x99]);
        assert_eq!(&bytes[12..16], &[0x81, 0x00, 0xef, 0xfe]);
        assert_eq!(&bytes[16..], &DOUBLE_TAGGED_RTAG[16..]);

        let mut untagged = [0u8; 14];
        let mut frame = Frame::new_checked(&mut untagged[..]).unwrap();
        let tag = VlanTag::new(TagProtocol::CTag, 0, false, 1).unwrap();
        assert_eq!(frame.set_outer_vlan(tag), Err(WireError::Untagged));
    }

    #[test]
    fn mac_addresses_parse_in_both_notations_and_reject_the_rest() {
        let mac = MacAddr([0xaa, 0xbb, 0xcc, 0x0d, 0xee, 0xff]);
        assert_eq!(mac.to_string(), "aa:bb:cc:0d:ee:ff");
        assert_eq!("aa:bb:cc:0d:ee:ff".parse::<MacAddr>(), Ok(mac));
        assert_eq!("AA-BB-CC-0D-EE-FF".parse::<MacAddr>(), Ok(mac));
        for bad in [
            "",
            "aa:bb:cc:dd:ee",
            "aa:bb:cc:dd:ee:ff:00",
            "aa:bb:cc:dd:ee:fg",
            "a:bb:cc:dd:ee:ff0",
            "aa-bb:cc:dd:ee:ff",
            "+a:bb:cc:dd:ee:ff",
        ] {
            let err = bad.parse::<MacAddr>().unwrap_err();
            assert_eq!(err.input, bad);
            assert!(err.to_string().contains("is not a MAC address"), "{err}");
        }
    }

    #[test]
    fn vlan_tag_fields_are_range_checked() {
        assert_eq!(
            VlanTag::new(TagProtocol::CTag, 0, false, 5000)
                .unwrap_err()
                .to_string(),
            "vid 5000 is out of range (0..=4095)"
        );
        assert_eq!(
            VlanTag::new(TagProtocol::CTag, 8, false, 1)
                .unwrap_err()
                .to_string(),
            "pcp 8 is out of range (0..=7)"
        );
        let tag = VlanTag::new(TagProtocol::STag, 7, true, 4095).unwrap();
        assert_eq!(tag.tci(), 0xffff);
        assert_eq!(VlanTag::from_tci(TagProtocol::STag, 0xffff), tag);
        let three = [tag; 3];
        assert_eq!(
            VlanTags::new(&three).unwrap_err().to_string(),
            "VLAN tag count 3 is out of range (0..=2)"
        );
    }
}
