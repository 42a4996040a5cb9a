//! The IEEE 802.1CB R-TAG (clause 7.8) and adding it to / removing it from a frame.
//!
//! The R-TAG is 6 octets standing where an EtherType would, after the MAC addresses and any
//! VLAN tags, followed by the original EtherType (all big-endian):
//!
//! ```text
//! 0        2          4                 6           8
//! | 0xF1C1 | reserved | sequence_number | EtherType | payload ...
//! ```
//!
//! The reserved field is sent as 0 and ignored on receipt (docs/8021cb-decisions.md): a tag
//! with other bits there still carries its sequence number. Adding a tag makes a frame 6 bytes
//! longer (a 1518-byte frame becomes 1524).
//! Buffers hold frames without FCS, as the kernel and pcap see them; no padding is added or
//! removed.

use super::ethernet::{EtherType, Frame};
use super::{read_u16, write_u16, WireError};
use crate::SeqNum;

mod field {
    pub const TAG_TYPE: usize = 0;
    pub const RESERVED: usize = 2;
    pub const SEQUENCE_NUMBER: usize = 4;
    pub const NEXT_ETHERTYPE: usize = 6;
}

/// Length of the R-TAG itself: what adding one adds to a frame.
pub const RTAG_LEN: usize = 6;

/// A zero-copy view of an R-TAG and the EtherType after it, starting at the 0xF1C1.
///
/// After `new_checked` (or when obtained from [`Frame::rtag`]) no accessor panics.
#[derive(Clone, Debug)]
pub struct Tag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Tag<T> {
    /// Bytes the view covers: the R-TAG and the encapsulated EtherType.
    pub const LEN: usize = RTAG_LEN + 2;

    /// A view without checking the length; accessors panic if `buffer` is shorter than
    /// [`Self::LEN`].
    pub fn new_unchecked(buffer: T) -> Tag<T> {
        Tag { buffer }
    }

    /// A view over `buffer`, which must start at the tag's 0xF1C1.
    ///
    /// # Errors
    /// [`WireError::NoRtag`] if the first two bytes are not 0xF1C1; [`WireError::Truncated`]
    /// if the buffer is shorter than [`Self::LEN`].
    pub fn new_checked(buffer: T) -> Result<Tag<T>, WireError> {
        let bytes = buffer.as_ref();
        if bytes.len() < Self::LEN {
            return Err(WireError::Truncated {
                header: super::Header::Rtag,
                len: bytes.len(),
                needed: Self::LEN,
            });
        }
        let tag = Tag { buffer };
        if tag.tag_type() != EtherType::RTAG {
            return Err(WireError::NoRtag {
                ethertype: tag.tag_type(),
            });
        }
        Ok(tag)
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The tag's EtherType, 0xF1C1 for an R-TAG.
    pub fn tag_type(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), field::TAG_TYPE))
    }

    /// The reserved field (0 in a well-formed tag).
    pub fn reserved(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::RESERVED)
    }

    /// The sequence number, whatever the reserved field says.
    pub fn seq_num(&self) -> SeqNum {
        SeqNum(read_u16(self.buffer.as_ref(), field::SEQUENCE_NUMBER))
    }

    /// The EtherType of the payload the tag encapsulates.
    pub fn next_ethertype(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), field::NEXT_ETHERTYPE))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Tag<T> {
    /// Overwrites the sequence number.
    pub fn set_seq_num(&mut self, seq: SeqNum) {
        write_u16(self.buffer.as_mut(), field::SEQUENCE_NUMBER, seq.0);
    }
}

/// An R-TAG as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RtagRepr {
    /// The sequence number.
    pub seq: SeqNum,
    /// The EtherType of the encapsulated payload.
    pub next_ethertype: EtherType,
}

impl RtagRepr {
    /// Reads a tag, whatever its reserved field holds.
    pub fn parse<T: AsRef<[u8]>>(tag: &Tag<T>) -> RtagRepr {
        RtagRepr {
            seq: tag.seq_num(),
            next_ethertype: tag.next_ethertype(),
        }
    }

    /// Bytes `emit` writes: the tag and the EtherType after it.
    pub fn buffer_len(&self) -> usize {
        Tag::<&[u8]>::LEN
    }

    /// Writes 0xF1C1, a zero reserved field, the sequence number and the EtherType.
    ///
    /// # Panics
    /// If the view's buffer is shorter than `buffer_len()`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut Tag<T>) {
        let bytes = tag.buffer.as_mut();
        write_u16(bytes, field::TAG_TYPE, EtherType::RTAG.0);
        write_u16(bytes, field::RESERVED, 0);
        write_u16(bytes, field::SEQUENCE_NUMBER, self.seq.0);
        write_u16(bytes, field::NEXT_ETHERTYPE, self.next_ethertype.0);
    }
}

/// Where an R-TAG goes in a frame that has none, and the EtherType it will encapsulate.
fn insertion_point(frame: &[u8]) -> Result<(usize, EtherType), WireError> {
    let frame = Frame::new_checked(frame)?;
    if let Some(tag) = frame.rtag() {
        return Err(WireError::RtagPresent { seq: tag.seq_num() });
    }
    Ok((frame.tag_offset(), frame.ethertype()))
}

/// Where the frame's R-TAG stands and the sequence number it carries.
fn existing_tag(frame: &[u8]) -> Result<(usize, SeqNum), WireError> {
    let frame = Frame::new_checked(frame)?;
    let tag = frame.rtag().ok_or(WireError::NoRtag {
        ethertype: frame.ethertype(),
    })?;
    let repr = RtagRepr::parse(&tag);
    Ok((frame.tag_offset(), repr.seq))
}

/// A copy of `frame` with an R-TAG carrying `seq` inserted after the MACs and VLAN tags.
///
/// # Errors
/// [`WireError::Truncated`] for a frame too short to parse; [`WireError::RtagPresent`] if the
/// frame already carries an R-TAG.
pub fn push_rtag(frame: &[u8], seq: SeqNum) -> Result<Vec<u8>, WireError> {
    let (at, next_ethertype) = insertion_point(frame)?;
    let mut tagged = Vec::with_capacity(frame.len() + RTAG_LEN);
    tagged.extend_from_slice(&frame[..at]);
    tagged.extend_from_slice(&[0; RTAG_LEN]);
    tagged.extend_from_slice(&frame[at..]);
    RtagRepr {
        seq,
        next_ethertype,
    }
    .emit(&mut Tag::new_unchecked(&mut tagged[at..]));
    Ok(tagged)
}

/// [`push_rtag`] on a frame in place: it grows by 6 bytes. On error it is left unchanged.
///
/// # Errors
/// As [`push_rtag`].
pub fn push_rtag_in_place(frame: &mut Vec<u8>, seq: SeqNum) -> Result<(), WireError> {
    let (at, next_ethertype) = insertion_point(frame)?;
    frame.splice(at..at, [0; RTAG_LEN]);
    RtagRepr {
        seq,
        next_ethertype,
    }
    .emit(&mut Tag::new_unchecked(&mut frame[at..]));
    Ok(())
}

/// The sequence number of `frame`'s R-TAG and a copy of the frame without it.
///
/// # Errors
/// [`WireError::Truncated`] for a frame that ends inside a header; [`WireError::NoRtag`] if
/// no R-TAG follows the VLAN tags.
pub fn pop_rtag(frame: &[u8]) -> Result<(SeqNum, Vec<u8>), WireError> {
    let (at, seq) = existing_tag(frame)?;
    let mut untagged = Vec::with_capacity(frame.len() - RTAG_LEN);
    untagged.extend_from_slice(&frame[..at]);
    untagged.extend_from_slice(&frame[at + RTAG_LEN..]);
    Ok((seq, untagged))
}

/// [`pop_rtag`] on a frame in place: it shrinks by 6 bytes. On error it is left unchanged.
///
/// # Errors
/// As [`pop_rtag`].
pub fn pop_rtag_in_place(frame: &mut Vec<u8>) -> Result<SeqNum, WireError> {
    let (at, seq) = existing_tag(frame)?;
    frame.drain(at..at + RTAG_LEN);
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Header;

    /// Untagged IPv4 frame: DA, SA, EtherType 0x0800, 4 payload bytes.
    const PLAIN: [u8; 18] = [
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, 0x45, 0x00, 0x00, 0x14,
    ];
    /// `PLAIN` with an R-TAG carrying 0xBEEF.
    const TAGGED: [u8; 24] = [
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0xf1, 0xc1, 0x00, 0x00, 0xbe, 0xef, 0x08,
        0x00, 0x45, 0x00, 0x00, 0x14,
    ];

    #[test]
    fn push_inserts_the_fixture_tag_and_pop_removes_it() {
        assert_eq!(push_rtag(&PLAIN, SeqNum(0xbeef)).unwrap(), TAGGED);
        assert_eq!(pop_rtag(&TAGGED).unwrap(), (SeqNum(0xbeef), PLAIN.to_vec()));

        let mut frame = PLAIN.to_vec();
        push_rtag_in_place(&mut frame, SeqNum(0xbeef)).unwrap();
        assert_eq!(frame, TAGGED);
        assert_eq!(pop_rtag_in_place(&mut frame), Ok(SeqNum(0xbeef)));
        assert_eq!(frame, PLAIN);
    }

    #[test]
    fn tag_goes_after_the_vlan_tag() {
        let mut vlan = PLAIN[..12].to_vec();
        vlan.extend_from_slice(&[0x81, 0x00, 0x20, 0x0a, 0x08, 0x00, 0xaa]);
        let tagged = push_rtag(&vlan, SeqNum(1)).unwrap();
        assert_eq!(
            &tagged[12..],
            &[0x81, 0x00, 0x20, 0x0a, 0xf1, 0xc1, 0, 0, 0, 1, 0x08, 0x00, 0xaa]
        );
    }

    #[test]
    fn tag_view_reads_and_repr_emits_the_fixture() {
        let tag = Tag::new_checked(&TAGGED[12..]).unwrap();
        assert_eq!(tag.tag_type(), EtherType::RTAG);
        assert_eq!(tag.reserved(), 0);
        let repr = RtagRepr::parse(&tag);
        assert_eq!(
            repr,
            RtagRepr {
                seq: SeqNum(0xbeef),
                next_ethertype: EtherType::IPV4
            }
        );
        let mut out = [0u8; 8];
        assert_eq!(repr.buffer_len(), out.len());
        let mut view = Tag::new_unchecked(&mut out[..]);
        repr.emit(&mut view);
        view.set_seq_num(SeqNum(0xbeef));
        assert_eq!(out, TAGGED[12..20]);
    }

    #[test]
    fn a_nonzero_reserved_field_is_ignored_on_receipt() {
        let mut odd = TAGGED;
        odd[14] = 0x80;
        odd[15] = 0x01;
        let (seq, popped) = pop_rtag(&odd).unwrap();
        let (expected_seq, expected) = pop_rtag(&TAGGED).unwrap();
        assert_eq!((seq, popped), (expected_seq, expected));
    }

    #[test]
    fn popping_an_untagged_frame_names_the_ethertype_found() {
        let err = pop_rtag(&PLAIN).unwrap_err();
        assert_eq!(
            err,
            WireError::NoRtag {
                ethertype: EtherType::IPV4
            }
        );
        assert_eq!(
            err.to_string(),
            "no R-TAG (EtherType 0x0800 after the MAC addresses and VLAN tags; expected 0xF1C1)"
        );
    }

    #[test]
    fn pushing_onto_a_tagged_frame_is_refused() {
        assert_eq!(
            push_rtag(&TAGGED, SeqNum(1)),
            Err(WireError::RtagPresent {
                seq: SeqNum(0xbeef)
            })
        );
        let mut frame = TAGGED.to_vec();
        assert!(push_rtag_in_place(&mut frame, SeqNum(1)).is_err());
        assert_eq!(frame, TAGGED);
    }

    #[test]
    fn truncated_input_is_an_error() {
        assert_eq!(
            pop_rtag(&TAGGED[..19]),
            Err(WireError::Truncated {
                header: Header::Rtag,
                len: 19,
                needed: 20
            })
        );
        assert_eq!(
            push_rtag(&PLAIN[..13], SeqNum(0)),
            Err(WireError::Truncated {
                header: Header::Ethernet,
                len: 13,
                needed: 14
            })
        );
        assert_eq!(
            Tag::new_checked(&TAGGED[12..19]).unwrap_err(),
            WireError::Truncated {
                header: Header::Rtag,
                len: 7,
                needed: 8
            }
        );
        assert_eq!(
            Tag::new_checked(&[0x08, 0x00, 0, 0, 0, 0, 0, 0][..]).unwrap_err(),
            WireError::NoRtag {
                ethertype: EtherType::IPV4
            }
        );
    }

    #[test]
    fn maximum_frame_grows_from_1518_to_1524_bytes() {
        let mut frame = vec![0u8; 1518];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(push_rtag(&frame, SeqNum(65535)).unwrap().len(), 1524);
    }
}
