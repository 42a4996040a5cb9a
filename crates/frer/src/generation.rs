//! Sequence generation function (802.1CB 7.4.1): numbers a stream's frames before replication,
//! so every copy carries the same number.

use crate::SeqNum;

/// The sequence generation function of one stream (GenSeqNum and frerCpsSeqGenResets).
#[derive(Clone, Debug, Default)]
pub struct SequenceGenerator {
    gen_seq_num: u16,
    resets: u64,
}

impl SequenceGenerator {
    /// A generator whose first number is 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number for the next frame; the one after 65535 is 0.
    #[inline]
    pub fn next_seq(&mut self) -> SeqNum {
        let seq = SeqNum(self.gen_seq_num);
        self.gen_seq_num = self.gen_seq_num.wrapping_add(1);
        seq
    }

    /// SequenceGenerationReset: the next number is 0 again; counts frerCpsSeqGenResets.
    pub fn reset(&mut self) {
        self.gen_seq_num = 0;
        self.resets += 1;
    }

    /// frerCpsSeqGenResets: how many times `reset` was called.
    pub fn resets(&self) -> u64 {
        self.resets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_number_is_zero_and_wraps_after_65535() {
        let mut gen = SequenceGenerator::new();
        assert_eq!(gen.next_seq(), SeqNum(0));
        assert_eq!(gen.next_seq(), SeqNum(1));
        for _ in 2..65535 {
            gen.next_seq();
        }
        assert_eq!(gen.next_seq(), SeqNum(65535));
        assert_eq!(gen.next_seq(), SeqNum(0));
    }

    #[test]
    fn reset_restarts_at_zero_and_is_counted() {
        let mut gen = SequenceGenerator::new();
        gen.next_seq();
        gen.next_seq();
        gen.reset();
        assert_eq!(gen.resets(), 1);
        assert_eq!(gen.next_seq(), SeqNum(0));
    }
}
