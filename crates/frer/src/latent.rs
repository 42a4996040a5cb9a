//! Latent error detection (802.1CB 7.4.4): notices a path that failed silently by comparing a
//! sequence recovery function's passed and discarded counters.
//!
//! With `paths` healthy paths every passed packet is matched by `paths - 1` discarded copies,
//! so `passed * (paths - 1) - discarded` stays near a base value. Every `period` the detector
//! compares it with the base captured at the last reset; every `reset_period` it captures a new
//! base (LatentErrorReset, counted in `latent_error_resets`; SequenceRecoveryReset is a
//! different event and is not counted here). Individual recovery functions must not run it
//! (7.5). It has no clock: `poll` takes the time and the counters.

use core::fmt;

use crate::recovery::RecoveryCounters;

/// Default frerSeqRcvyLatentErrorPeriod: 2000 ms.
pub const DEFAULT_PERIOD_NS: u64 = 2_000_000_000;
/// Default frerSeqRcvyLatentResetPeriod: 30000 ms.
pub const DEFAULT_RESET_PERIOD_NS: u64 = 30_000_000_000;
/// Largest frerSeqRcvyLatentErrorPaths accepted (a stream replicated to more is unheard of).
pub const MAX_PATHS: u16 = 1024;

/// The four managed parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatentParams {
    /// frerSeqRcvyLatentErrorDifference: the largest tolerated |difference|.
    pub difference: u64,
    /// frerSeqRcvyLatentErrorPeriod, in nanoseconds.
    pub period_ns: u64,
    /// frerSeqRcvyLatentErrorPaths: how many paths the stream is expected to arrive on.
    pub paths: u16,
    /// frerSeqRcvyLatentResetPeriod, in nanoseconds.
    pub reset_period_ns: u64,
}

impl LatentParams {
    /// Parameters with the standard's default periods.
    pub fn with_defaults(difference: u64, paths: u16) -> Self {
        LatentParams {
            difference,
            period_ns: DEFAULT_PERIOD_NS,
            paths,
            reset_period_ns: DEFAULT_RESET_PERIOD_NS,
        }
    }
}

/// A latent-error parameter out of range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LatentParamError {
    /// `paths` outside `2..=MAX_PATHS`.
    Paths(i64),
    /// A period of zero or less; the field name says which.
    Period(&'static str, i64),
    /// A negative difference.
    Difference(i64),
}

impl fmt::Display for LatentParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LatentParamError::Paths(v) => write!(f, "paths {v} is out of range (2..={MAX_PATHS})"),
            LatentParamError::Period(name, v) => {
                write!(f, "{name} {v} is out of range (1..={})", u64::MAX)
            }
            LatentParamError::Difference(v) => {
                write!(f, "difference {v} is out of range (0..={})", u64::MAX)
            }
        }
    }
}

impl std::error::Error for LatentParamError {}

/// Which way the counters drifted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LatentCondition {
    /// Fewer discards than `paths - 1` per passed packet: a path delivers nothing.
    MissingCopies,
    /// More discards than expected: more copies arrive than there are paths.
    ExcessCopies,
}

impl LatentCondition {
    /// "missing-copies" or "excess-copies".
    pub fn as_str(self) -> &'static str {
        match self {
            LatentCondition::MissingCopies => "missing-copies",
            LatentCondition::ExcessCopies => "excess-copies",
        }
    }
}

/// A latent error signalled by one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatentError {
    /// Which way the counters drifted.
    pub condition: LatentCondition,
    /// CurBaseDifference - (passed * (paths - 1) - discarded) at the test.
    pub difference: i64,
    /// When the test that fired was due.
    pub at_ns: u64,
}

impl fmt::Display for LatentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "latent error ({}): difference {} at {} ns",
            self.condition.as_str(),
            self.difference,
            self.at_ns
        )
    }
}

/// The latent error detection function of one sequence recovery function.
#[derive(Clone, Debug)]
pub struct LatentErrorDetector {
    params: LatentParams,
    cur_base_difference: i64,
    next_test_ns: u64,
    next_reset_ns: u64,
    latent_error_resets: u64,
}

impl LatentErrorDetector {
    /// Starts at `start_ns` on a recovery function whose counters then are `start`.
    ///
    /// # Errors
    /// `LatentParamError` when `paths` is outside `2..=1024` or a period is zero.
    pub fn new(
        params: LatentParams,
        start_ns: u64,
        start: &RecoveryCounters,
    ) -> Result<Self, LatentParamError> {
        if !(2..=MAX_PATHS).contains(&params.paths) {
            return Err(LatentParamError::Paths(i64::from(params.paths)));
        }
        for (name, value) in [
            ("period_ns", params.period_ns),
            ("reset_period_ns", params.reset_period_ns),
        ] {
            if value == 0 {
                return Err(LatentParamError::Period(name, 0));
            }
        }
        Ok(LatentErrorDetector {
            cur_base_difference: expected_difference(&params, start),
            next_test_ns: start_ns.saturating_add(params.period_ns),
            next_reset_ns: start_ns.saturating_add(params.reset_period_ns),
            params,
            latent_error_resets: 0,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &LatentParams {
        &self.params
    }

    /// frerCpsSeqRcvyLatentErrorResets.
    pub fn latent_error_resets(&self) -> u64 {
        self.latent_error_resets
    }

    /// Runs the test and the reset that are due at `now_ns` (a test before a reset due at the
    /// same time, so a reset cannot hide an error). Several missed periods run as one test.
    /// Returns the latent error if the test fired.
    pub fn poll(&mut self, now_ns: u64, counters: &RecoveryCounters) -> Option<LatentError> {
        let mut fired = None;
        if now_ns >= self.next_test_ns {
            let at_ns = self.next_test_ns;
            self.next_test_ns = next_due(self.next_test_ns, self.params.period_ns, now_ns);
            let difference = self.cur_base_difference - expected_difference(&self.params, counters);
            if difference.unsigned_abs() > self.params.difference {
                let condition = if difference < 0 {
                    LatentCondition::MissingCopies
                } else {
                    LatentCondition::ExcessCopies
                };
                fired = Some(LatentError {
                    condition,
                    difference,
                    at_ns,
                });
            }
        }
        if now_ns >= self.next_reset_ns {
            self.next_reset_ns = next_due(self.next_reset_ns, self.params.reset_period_ns, now_ns);
            self.cur_base_difference = expected_difference(&self.params, counters);
            self.latent_error_resets += 1;
        }
        fired
    }
}

/// passed * (paths - 1) - discarded, the quantity that stays constant on healthy paths.
fn expected_difference(params: &LatentParams, counters: &RecoveryCounters) -> i64 {
    let passed = i128::from(counters.passed_packets) * i128::from(params.paths - 1);
    (passed - i128::from(counters.discarded_packets)) as i64
}

/// The first deadline after `now_ns` on the grid `due + k * period`.
fn next_due(due: u64, period: u64, now_ns: u64) -> u64 {
    let missed = (now_ns - due) / period + 1;
    due.saturating_add(missed.saturating_mul(period))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(passed: u64, discarded: u64) -> RecoveryCounters {
        RecoveryCounters {
            passed_packets: passed,
            discarded_packets: discarded,
            ..Default::default()
        }
    }

    fn detector(difference: u64, paths: u16) -> LatentErrorDetector {
        let params = LatentParams {
            difference,
            period_ns: 100,
            paths,
            reset_period_ns: 1000,
        };
        LatentErrorDetector::new(params, 0, &counters(0, 0)).unwrap()
    }

    #[test]
    fn healthy_paths_never_fire() {
        let mut d = detector(5, 3);
        for t in 1..50u64 {
            assert_eq!(d.poll(t * 100, &counters(t * 10, t * 20)), None);
        }
    }

    #[test]
    fn a_dead_path_fires_missing_copies_only_above_the_difference() {
        let mut d = detector(5, 2);
        assert_eq!(
            d.poll(100, &counters(10, 5)),
            None,
            "|diff| 5 is not above 5"
        );
        let err = d.poll(200, &counters(16, 10)).unwrap();
        assert_eq!(err.condition, LatentCondition::MissingCopies);
        assert_eq!((err.difference, err.at_ns), (-6, 200));
    }

    #[test]
    fn excess_copies_fire_the_other_condition() {
        let mut d = detector(0, 2);
        let err = d.poll(100, &counters(10, 12)).unwrap();
        assert_eq!(
            (err.condition, err.difference),
            (LatentCondition::ExcessCopies, 2)
        );
    }

    #[test]
    fn reset_period_rebases_and_counts_latent_error_resets() {
        let mut d = detector(0, 2);
        assert!(
            d.poll(1000, &counters(100, 90)).is_some(),
            "test runs before the reset"
        );
        assert_eq!(d.latent_error_resets(), 1);
        assert_eq!(
            d.poll(1100, &counters(110, 100)),
            None,
            "new base absorbs the old drift"
        );
        d.poll(5500, &counters(110, 100));
        assert_eq!(d.latent_error_resets(), 2, "missed reset periods run once");
    }

    #[test]
    fn rejects_bad_parameters() {
        let bad = LatentParams {
            paths: 1,
            ..LatentParams::with_defaults(0, 2)
        };
        let err = LatentErrorDetector::new(bad, 0, &counters(0, 0)).unwrap_err();
        assert_eq!(err.to_string(), "paths 1 is out of range (2..=1024)");
        let bad = LatentParams {
            period_ns: 0,
            ..LatentParams::with_defaults(0, 2)
        };
        let err = LatentErrorDetector::new(bad, 0, &counters(0, 0)).unwrap_err();
        assert!(err.to_string().starts_with("period_ns 0 is out of range"));
    }
}
