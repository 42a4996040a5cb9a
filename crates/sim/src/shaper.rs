//! The two TSN transmission selection rules of an egress port: the credit-based shaper
//! (802.1Qav) and the time-aware shaper's gate control list (802.1Qbv).
//!
//! Both are evaluated lazily: state is brought up to date when the port looks at it, and each
//! answers "may a frame start now, and if not, when at the earliest", so the port schedules one
//! wake-up instead of ticking.

use crate::spec::GateControlSpec;
use crate::units::{BitsPerSec, SimTime, PS_PER_SEC};

/// Credit-based shaper state of one traffic class. Credit is kept in bit-picoseconds per
/// second (bits scaled by 10^12) so it stays an exact integer.
#[derive(Clone, Debug)]
pub struct CreditShaper {
    idle_slope: u64,
    port_rate: u64,
    /// Credit in bits * 10^12.
    credit: i128,
    /// Time up to which `credit` is exact.
    updated: SimTime,
}

impl CreditShaper {
    /// A shaper with the given idleSlope on a port of the given rate, starting at zero credit.
    pub fn new(idle_slope: BitsPerSec, port_rate: BitsPerSec) -> Self {
        CreditShaper {
            idle_slope: idle_slope.0,
            port_rate: port_rate.0,
            credit: 0,
            updated: SimTime::ZERO,
        }
    }

    /// Brings the credit to `now`; `waiting` says whether the class had frames queued since the
    /// last update. Credit grows at idleSlope while frames wait; with an empty queue positive
    /// credit is reset to zero and negative credit recovers towards zero.
    #[inline]
    pub fn update(&mut self, now: SimTime, waiting: bool) {
        if now <= self.updated {
            return;
        }
        let gained = i128::from(self.idle_slope) * i128::from(now.0 - self.updated.0);
        self.credit = if waiting {
            self.credit + gained
        } else {
            (self.credit + gained).min(0)
        };
        self.updated = now;
    }

    /// Whether a frame of the class may start (credit >= 0) after `update`.
    #[inline]
    pub fn eligible(&self) -> bool {
        self.credit >= 0
    }

    /// The earliest time the credit reaches zero while frames wait.
    pub fn eligible_at(&self) -> SimTime {
        if self.credit >= 0 {
            return self.updated;
        }
        let wait = (-self.credit as u128).div_ceil(u128::from(self.idle_slope));
        self.updated.plus(SimTime(wait as u64))
    }

    /// Accounts a frame that starts now and occupies the wire for `duration`: credit falls at
    /// sendSlope = idleSlope - portRate meanwhile.
    pub fn transmit(&mut self, now: SimTime, duration: SimTime) {
        let send_slope = i128::from(self.idle_slope) - i128::from(self.port_rate);
        self.credit += send_slope * i128::from(duration.0);
        self.updated = now.plus(duration);
    }

    /// Current credit in bits (for reports and tests).
    pub fn credit_bits(&self) -> f64 {
        self.credit as f64 / PS_PER_SEC as f64
    }
}

/// A cyclic gate control list.
#[derive(Clone, Debug)]
pub struct GateControl {
    /// (gate states, start offset in the cycle, end offset in the cycle).
    entries: Vec<(u8, u64, u64)>,
    cycle: u64,
    base: u64,
}

impl GateControl {
    /// The list from its spec.
    pub fn new(spec: &GateControlSpec) -> Self {
        let mut offset = 0;
        let entries = spec
            .entries
            .iter()
            .map(|&(gates, duration)| {
                let entry = (gates, offset, offset + duration.0);
                offset += duration.0;
                entry
            })
            .collect();
        GateControl {
            entries,
            cycle: offset,
            base: spec.base_time.0 % offset,
        }
    }

    /// The earliest time `>= now` at which a frame of `class` lasting `duration` can start and
    /// finish while the class's gate stays open (the guard band rule); `None` when no window
    /// of the list is long enough.
    pub fn earliest_start(&self, class: u8, now: SimTime, duration: SimTime) -> Option<SimTime> {
        let bit = 1u8 << class;
        let pos = (now.0 + self.cycle - self.base) % self.cycle;
        let cycle_start = now.0 - pos;
        let first = self
            .entries
            .iter()
            .position(|&(_, _, end)| pos < end)
            .unwrap_or(0);
        let mut window_start: Option<u64> = None;
        // Two full cycles cover a window that wraps around the end of the list.
        for k in 0..=2 * self.entries.len() {
            let index = (first + k) % self.entries.len();
            let lap = (first + k) / self.entries.len();
            let (gates, start, end) = self.entries[index];
            let abs_start = cycle_start + lap as u64 * self.cycle + start;
            let abs_end = cycle_start + lap as u64 * self.cycle + end;
            if gates & bit == 0 {
                window_start = None;
                continue;
            }
            let ws = *window_start.get_or_insert(abs_start.max(now.0));
            if abs_end.saturating_sub(ws) >= duration.0 {
                return Some(SimTime(ws));
            }
        }
        None
    }

    /// Whether the gate of `class` is open at `t`.
    pub fn is_open(&self, class: u8, t: SimTime) -> bool {
        let pos = (t.0 + self.cycle - self.base) % self.cycle;
        self.entries
            .iter()
            .find(|&&(_, _, end)| pos < end)
            .is_some_and(|&(gates, _, _)| gates & (1 << class) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcl() -> GateControl {
        // class 7 open for 100 ns, then every other class for 900 ns.
        GateControl::new(&GateControlSpec {
            base_time: SimTime::ZERO,
            entries: vec![(0x80, SimTime::from_ns(100)), (0x7f, SimTime::from_ns(900))],
        })
    }

    #[test]
    fn a_frame_that_fits_starts_now_inside_its_window() {
        assert_eq!(
            gcl().earliest_start(7, SimTime::from_ns(10), SimTime::from_ns(50)),
            Some(SimTime::from_ns(10))
        );
    }

    #[test]
    fn guard_band_defers_a_frame_that_would_overrun_the_window() {
        let g = gcl();
        assert_eq!(
            g.earliest_start(7, SimTime::from_ns(60), SimTime::from_ns(50)),
            Some(SimTime::from_ns(1000))
        );
        assert_eq!(
            g.earliest_start(0, SimTime::from_ns(20), SimTime::from_ns(50)),
            Some(SimTime::from_ns(100))
        );
    }

    #[test]
    fn a_frame_longer_than_every_window_never_starts() {
        assert_eq!(
            gcl().earliest_start(7, SimTime::ZERO, SimTime::from_ns(101)),
            None
        );
    }

    #[test]
    fn a_window_continues_across_consecutive_open_entries_and_the_cycle_end() {
        let g = GateControl::new(&GateControlSpec {
            base_time: SimTime::ZERO,
            entries: vec![
                (0x01, SimTime::from_ns(100)),
                (0x02, SimTime::from_ns(100)),
                (0x01, SimTime::from_ns(100)),
            ],
        });
        // class 0 is open 200..300 and 300..400 (next cycle's first entry): 200 ns long.
        assert_eq!(
            g.earliest_start(0, SimTime::from_ns(250), SimTime::from_ns(150)),
            Some(SimTime::from_ns(250))
        );
        assert!(g.is_open(0, SimTime::from_ns(350)));
        assert!(!g.is_open(0, SimTime::from_ns(150)));
    }

    #[test]
    fn credit_falls_while_sending_and_recovers_at_idle_slope() {
        let mut cbs = CreditShaper::new(BitsPerSec(250_000_000), BitsPerSec(1_000_000_000));
        cbs.update(SimTime::ZERO, true);
        assert!(cbs.eligible());
        cbs.transmit(SimTime::ZERO, SimTime::from_ns(1000));
        assert!((cbs.credit_bits() + 750.0).abs() < 1e-9);
        cbs.update(SimTime::from_ns(1000), true);
        assert_eq!(cbs.eligible_at(), SimTime::from_ns(4000));
        cbs.update(SimTime::from_ns(5000), false);
        assert_eq!(cbs.credit_bits(), 0.0);
    }
}
