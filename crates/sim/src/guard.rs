//! The rogue-rate guard of a recovery function, with the testbed's rule
//! (python/frerlab/dataplane/control.py `guard`, docs/security.md): every `period` it compares
//! the increase of the function's rogue count with `threshold`; above it is an alarm. If the
//! function also passed nothing in that period its stream is locked out (a forged frame right
//! after a reset took the window), and with `reset` the function is given a management reset
//! (802.1CB 10.4.1.4), so that its next frame sets the window again. A function that still
//! passes frames is not reset: its rogue frames are then an attacker's beside a working stream.

use frer::recovery::RecoveryCounters;
use serde::Deserialize;

use crate::units::SimTime;

/// A guard's settings.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardSpec {
    /// More rogue frames than this in one period is an alarm.
    pub threshold: u64,
    /// How often it looks.
    pub period: SimTime,
    /// Reset a locked-out function.
    #[serde(default)]
    pub reset: bool,
}

/// What a guard counted.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuardCounters {
    /// Periods with more rogue frames than the threshold.
    pub alarms: u64,
    /// Alarms in periods in which the function passed nothing.
    pub locked_out: u64,
    /// Management resets it gave.
    pub resets: u64,
}

/// A running guard.
#[derive(Clone, Debug)]
pub struct Guard {
    /// Its settings.
    pub spec: GuardSpec,
    /// Its counters.
    pub counters: GuardCounters,
    rogue: u64,
    passed: u64,
}

impl Guard {
    /// A guard of `spec` over a function with no frames yet.
    pub fn new(spec: GuardSpec) -> Self {
        Guard {
            spec,
            counters: GuardCounters::default(),
            rogue: 0,
            passed: 0,
        }
    }

    /// The end of a period, with the function's counters now: whether it resets the function.
    pub fn look(&mut self, now: &RecoveryCounters) -> bool {
        let rogue = now.rogue_packets - self.rogue;
        let passed = now.passed_packets - self.passed;
        (self.rogue, self.passed) = (now.rogue_packets, now.passed_packets);
        if rogue <= self.spec.threshold {
            return false;
        }
        self.counters.alarms += 1;
        if passed > 0 {
            return false;
        }
        self.counters.locked_out += 1;
        self.counters.resets += u64::from(self.spec.reset);
        self.spec.reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(rogue_packets: u64, passed_packets: u64) -> RecoveryCounters {
        RecoveryCounters {
            rogue_packets,
            passed_packets,
            ..RecoveryCounters::default()
        }
    }

    #[test]
    fn an_alarm_above_the_threshold_and_a_reset_only_when_nothing_passed() {
        let mut g = Guard::new(GuardSpec {
            threshold: 2,
            period: SimTime(1),
            reset: true,
        });
        assert!(!g.look(&counts(2, 0)), "at the threshold: no alarm");
        assert!(
            !g.look(&counts(5, 1)),
            "above it, but the stream passes frames"
        );
        assert!(g.look(&counts(8, 1)), "above it and nothing passed");
        let c = g.counters;
        assert_eq!((c.alarms, c.locked_out, c.resets), (2, 1, 1));
        let mut watching = Guard::new(GuardSpec {
            reset: false,
            ..g.spec
        });
        assert!(!watching.look(&counts(3, 0)));
        assert_eq!(watching.counters.locked_out, 1);
    }
}
