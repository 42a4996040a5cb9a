//! Sequence decode (802.1CB 7.6, the R-TAG encapsulation): reads the sequence number a
//! received frame carries, for the recovery function, and counts the frames whose R-TAG
//! cannot be read (frerCpsSeqEncErroredPackets). Such frames are errors for the caller to
//! discard; they never reach recovery as a valid number or as an untagged frame.

use crate::wire::{Frame, RtagRepr, WireError};
use crate::SeqNum;

/// The sequence decode function of one port and stream, with its counter.
#[derive(Clone, Debug, Default)]
pub struct SequenceDecoder {
    seq_enc_errored_packets: u64,
}

impl SequenceDecoder {
    /// A decoder with its counter at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// `Some(number)` for an R-tagged frame, `None` for a frame without an R-TAG.
    ///
    /// # Errors
    /// The frame's `WireError`: a runt frame, or an R-TAG cut short (counted in
    /// `seq_enc_errored_packets`). The tag's reserved field is ignored.
    pub fn decode(&mut self, frame: &[u8]) -> Result<Option<SeqNum>, WireError> {
        let decoded = Frame::new_checked(frame)
            .map(|frame| frame.rtag().map(|tag| RtagRepr::parse(&tag).seq));
        if decoded.as_ref().is_err_and(WireError::is_encoding_error) {
            self.seq_enc_errored_packets += 1;
        }
        decoded
    }

    /// frerCpsSeqEncErroredPackets.
    pub fn seq_enc_errored_packets(&self) -> u64 {
        self.seq_enc_errored_packets
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::push_rtag;

    const UNTAGGED: [u8; 20] = [
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 20, 0, 0,
    ];

    #[test]
    fn reads_the_number_or_none_and_counts_only_bad_tags() {
        let mut decoder = SequenceDecoder::new();
        let tagged = push_rtag(&UNTAGGED, SeqNum(513)).unwrap();
        assert_eq!(decoder.decode(&tagged), Ok(Some(SeqNum(513))));
        assert_eq!(decoder.decode(&UNTAGGED), Ok(None));
        assert!(
            decoder.decode(&UNTAGGED[..10]).is_err(),
            "a runt is an error"
        );
        assert_eq!(
            decoder.seq_enc_errored_packets(),
            0,
            "but not an encoding error"
        );

        let mut reserved = tagged.clone();
        reserved[15] = 1;
        assert_eq!(
            decoder.decode(&reserved),
            Ok(Some(SeqNum(513))),
            "reserved bits are ignored on receipt"
        );
        assert!(decoder.decode(&tagged[..16]).is_err(), "R-TAG cut short");
        assert_eq!(decoder.seq_enc_errored_packets(), 1);
    }
}
