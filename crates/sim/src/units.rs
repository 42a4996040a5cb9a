//! Units in the types: simulated time in picoseconds, rates in bits per second, sizes in bytes,
//! with the converters between them in one place.

use serde::{Deserialize, Serialize};

/// Picoseconds per second.
pub const PS_PER_SEC: u64 = 1_000_000_000_000;

/// A point in (or span of) simulated time, in picoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimTime(pub u64);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);
    /// A time later than any event.
    pub const NEVER: SimTime = SimTime(u64::MAX);

    /// From nanoseconds.
    pub fn from_ns(ns: u64) -> SimTime {
        SimTime(ns * 1000)
    }

    /// Whole nanoseconds (truncated), the time unit of the FRER functions.
    pub fn as_ns(self) -> u64 {
        self.0 / 1000
    }

    /// Seconds as a float, for reports.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_SEC as f64
    }

    /// `self + span`, saturating at `NEVER`.
    #[inline]
    pub fn plus(self, span: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(span.0))
    }
}

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitsPerSec(pub u64);

impl BitsPerSec {
    /// Time to send `bits` at this rate, rounded up to a whole picosecond.
    #[inline]
    pub fn time_for_bits(self, bits: u64) -> SimTime {
        match bits.checked_mul(PS_PER_SEC) {
            Some(ps_bits) => SimTime(ps_bits.div_ceil(self.0)),
            // Above 18.4 Mbit (a long PAUSE's 65535 quanta are 33.6 Mbit), in 128 bits.
            None => SimTime(
                (u128::from(bits) * u128::from(PS_PER_SEC)).div_ceil(u128::from(self.0)) as u64,
            ),
        }
    }

    /// Time to send `bytes` at this rate.
    #[inline]
    pub fn time_for_bytes(self, bytes: Bytes) -> SimTime {
        self.time_for_bits(bytes.bits())
    }
}

/// A size in bytes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    /// The size in bits.
    #[inline]
    pub fn bits(self) -> u64 {
        self.0 * 8
    }
}

/// Preamble, start-of-frame delimiter and minimum inter-frame gap of Ethernet (IEEE 802.3):
/// the bytes an L1 rate counts on top of the frame.
pub const ETHERNET_L1_OVERHEAD: Bytes = Bytes(20);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_64_byte_frame_takes_672_ns_on_the_wire_at_1_gbit() {
        let rate = BitsPerSec(1_000_000_000);
        assert_eq!(rate.time_for_bytes(Bytes(64 + 20)), SimTime::from_ns(672));
    }

    #[test]
    fn the_longest_pause_does_not_overflow() {
        // 65535 quanta of 512 bit times at 10 Gbit/s: 3.355392 ms.
        let bits = 65_535 * 512;
        assert_eq!(
            BitsPerSec(10_000_000_000).time_for_bits(bits),
            SimTime(3_355_392_000)
        );
    }

    #[test]
    fn transmission_time_rounds_up() {
        assert_eq!(BitsPerSec(3).time_for_bits(1), SimTime(333_333_333_334));
    }
}
