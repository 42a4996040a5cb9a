//! The 802.1CB sequence number: 16 bits, compared modulo 65536 (RecovSeqNumSpace).

use core::fmt;

/// Number of distinct sequence numbers (802.1CB 7.4.3.2.1, RecovSeqNumSpace).
pub const SEQ_SPACE: u32 = 1 << 16;

/// A sequence number as carried in an R-TAG. An absent number is `Option<SeqNum>`, never a
/// magic value inside the range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqNum(pub u16);

impl SeqNum {
    /// The signed distance `self - earlier` modulo 65536, in `-32768..=32767`.
    #[inline]
    pub fn delta_from(self, earlier: SeqNum) -> i32 {
        i32::from(self.0.wrapping_sub(earlier.0) as i16)
    }

    /// The number `n` steps after this one, wrapping at 65535 -> 0.
    #[inline]
    pub fn wrapping_add(self, n: u16) -> SeqNum {
        SeqNum(self.0.wrapping_add(n))
    }
}

impl From<u16> for SeqNum {
    fn from(value: u16) -> Self {
        SeqNum(value)
    }
}

impl fmt::Display for SeqNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_is_signed_modulo_65536() {
        assert_eq!(SeqNum(5).delta_from(SeqNum(3)), 2);
        assert_eq!(SeqNum(3).delta_from(SeqNum(5)), -2);
        assert_eq!(SeqNum(0).delta_from(SeqNum(65535)), 1);
        assert_eq!(SeqNum(65535).delta_from(SeqNum(0)), -1);
        assert_eq!(SeqNum(32767).delta_from(SeqNum(0)), 32767);
        assert_eq!(SeqNum(32768).delta_from(SeqNum(0)), -32768);
    }

    #[test]
    fn wrapping_add_wraps_at_65535() {
        assert_eq!(SeqNum(65535).wrapping_add(1), SeqNum(0));
        assert_eq!(SeqNum(65534).wrapping_add(3), SeqNum(1));
    }
}
