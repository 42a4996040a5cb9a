//! How evenly frames really went or came: the distribution of the gaps between consecutive
//! frames' timestamps, against the nominal gap.
//!
//! The sender records each frame's send stamp (per-frame TX stamps where the socket has them,
//! else the time of the send call), the receiver each arrival's receive stamp. The nominal gap
//! is 1 / requested rate for a paced sender, else the mean of the gaps recorded (the achieved
//! rate). Bursting shows as the share of gaps below half the nominal gap; a constant-rate
//! stream that leaves on time has almost none.

use crate::histogram::Histogram;
use serde::Serialize;

/// Gaps as multiples of the nominal gap at which [`GapReport::shares`] splits them.
pub const SHARE_BOUNDS: [f64; 4] = [0.5, 0.9, 1.1, 2.0];

/// The gaps of one run of timestamps on one clock.
#[derive(Debug, Clone, Default)]
pub struct Gaps {
    last_ns: Option<u64>,
    gaps: Histogram,
    backwards: u64,
}

/// Where the nominal gap came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Nominal {
    /// 1 / the requested rate.
    RequestedRate,
    /// The mean of the gaps recorded (1 / the achieved rate).
    MeanGap,
}

/// The gap distribution of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapReport {
    /// Gaps recorded (stamps - 1, less any that went backwards).
    pub count: u64,
    /// The nominal gap (ns) the shares are relative to.
    pub nominal_ns: f64,
    /// Where `nominal_ns` came from.
    pub nominal: Nominal,
    /// Mean gap (ns).
    pub mean_ns: f64,
    /// 1st, 50th and 99th percentile of the gaps (ns, within 0.1 %).
    pub p1_ns: u64,
    /// Median gap (ns).
    pub p50_ns: u64,
    /// 99th percentile (ns).
    pub p99_ns: u64,
    /// Smallest and largest gap (ns).
    pub min_ns: u64,
    /// Largest gap (ns).
    pub max_ns: u64,
    /// Share of gaps below half the nominal gap: frames sent or received in bursts.
    pub below_half_share: f64,
    /// Share of gaps per range of multiples of the nominal gap: below 0.5, 0.5..0.9, 0.9..1.1,
    /// 1.1..2, 2 and above (see [`SHARE_BOUNDS`]); sums to 1.
    pub shares: [f64; 5],
    /// Stamps earlier than the one before (a clock step, or frames stamped out of order):
    /// not counted as gaps.
    pub backwards: u64,
}

impl Gaps {
    /// No stamps yet.
    pub fn new() -> Self {
        Gaps::default()
    }

    /// Adds the next stamp (ns).
    pub fn record(&mut self, time_ns: u64) {
        match self.last_ns {
            Some(last) if time_ns < last => self.backwards += 1,
            Some(last) => self.gaps.record(time_ns - last),
            None => {}
        }
        self.last_ns = Some(time_ns);
    }

    /// Forgets the last stamp, so the next one starts a new run (a stamp that never came
    /// makes no gap).
    pub fn restart(&mut self) {
        self.last_ns = None;
    }

    /// Adds the gaps of another run (e.g. another sender thread's): the runs are not joined,
    /// no gap is made between them.
    pub fn merge(&mut self, other: &Gaps) {
        self.gaps.merge(&other.gaps);
        self.backwards += other.backwards;
    }

    /// Gaps recorded so far.
    pub fn count(&self) -> u64 {
        self.gaps.count()
    }

    /// The distribution against `nominal_ns` (1 / requested rate), or against the mean gap if
    /// `None`; `None` before two stamps.
    pub fn report(&self, nominal_ns: Option<f64>) -> Option<GapReport> {
        let summary = self.gaps.summary()?;
        let (nominal_ns, nominal) = match nominal_ns {
            Some(n) => (n, Nominal::RequestedRate),
            None => (summary.mean, Nominal::MeanGap),
        };
        let n = summary.count as f64;
        let below = |ratio: f64| self.gaps.count_below((ratio * nominal_ns).ceil() as u64) as f64;
        let mut shares = [0.0; 5];
        let mut previous = 0.0;
        for (share, ratio) in shares.iter_mut().zip(SHARE_BOUNDS) {
            let cumulative = below(ratio);
            *share = (cumulative - previous) / n;
            previous = cumulative;
        }
        shares[4] = (n - previous) / n;
        let percentile = |p| self.gaps.percentile(p).unwrap_or(0);
        Some(GapReport {
            count: summary.count,
            nominal_ns,
            nominal,
            mean_ns: summary.mean,
            p1_ns: percentile(1.0),
            p50_ns: percentile(50.0),
            p99_ns: percentile(99.0),
            min_ns: summary.min,
            max_ns: summary.max,
            below_half_share: shares[0],
            shares,
            backwards: self.backwards,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_gaps_have_no_bursting_and_bursts_show() {
        let mut even = Gaps::new();
        for k in 0..1001u64 {
            even.record(1_000_000 + k * 10_000 + (k % 3) * 100);
        }
        let r = even.report(Some(10_000.0)).unwrap();
        assert_eq!((r.count, r.below_half_share, r.backwards), (1000, 0.0, 0));
        assert!(
            (9_800..=10_200).contains(&r.p50_ns) && r.p1_ns >= 9_700 && r.p99_ns <= 10_300,
            "{r:?}"
        );
        assert_eq!(r.shares[2], 1.0);
        // bursts of 10 frames 100 ns apart every 100 us: nominal 10 us, 9 gaps in 10 below half
        let mut bursty = Gaps::new();
        for burst in 0..100u64 {
            for i in 0..10 {
                bursty.record(burst * 100_000 + i * 100);
            }
        }
        let r = bursty.report(Some(10_000.0)).unwrap();
        assert!((r.below_half_share - 900.0 / 999.0).abs() < 1e-9, "{r:?}");
        assert!((r.shares[4] - 99.0 / 999.0).abs() < 1e-9 && r.p50_ns == 100);
        assert!((r.shares.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn mean_gap_is_the_nominal_without_a_rate_and_steps_back_are_set_apart() {
        let mut g = Gaps::new();
        for t in [0u64, 100, 200, 150, 250, 350] {
            g.record(t);
        }
        let r = g.report(None).unwrap();
        assert_eq!((r.count, r.backwards, r.nominal), (4, 1, Nominal::MeanGap));
        assert_eq!(r.nominal_ns, 100.0);
        g.restart();
        g.record(10_000);
        assert_eq!(g.count(), 4, "no gap across a restart");
        assert!(Gaps::new().report(None).is_none());
    }
}
