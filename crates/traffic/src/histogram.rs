//! A log-linear (HDR-style) histogram of non-negative integers, for latencies in nanoseconds.
//!
//! Values below 1024 have a bucket each; above, every power-of-two octave is split into 512
//! buckets, so a reported value is within 0.1 % of a recorded one (three significant digits,
//! as HdrHistogram's usual setting). Minimum, maximum, mean and standard deviation are kept
//! exactly, beside the buckets. Buckets are allocated up to the largest value recorded, so a
//! histogram of microsecond latencies stays small (about 50 KiB at 1 ms).

use serde::Serialize;

const LINEAR_BITS: u32 = 10;
const LINEAR: usize = 1 << LINEAR_BITS;
const PER_OCTAVE: usize = LINEAR / 2;

/// The percentiles every latency summary reports.
pub const PERCENTILES: [f64; 8] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 100.0];

/// Counts of values in log-linear buckets plus exact extremes and moments.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    min: u64,
    max: u64,
    mean: f64,
    m2: f64,
}

/// A summary of a histogram, every value in the recorded unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values recorded.
    pub count: u64,
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation.
    pub stddev: f64,
    /// `(percentile, value)` for each of [`PERCENTILES`].
    pub percentiles: Vec<(f64, u64)>,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: Vec::new(),
            count: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    fn index(value: u64) -> usize {
        if value < LINEAR as u64 {
            return value as usize;
        }
        let octave = 63 - value.leading_zeros();
        let shift = octave - LINEAR_BITS + 1;
        LINEAR + (octave - LINEAR_BITS) as usize * PER_OCTAVE + (value >> shift) as usize
            - PER_OCTAVE
    }

    /// The middle of the bucket at `index`, the value reported for anything recorded there.
    fn representative(index: usize) -> u64 {
        if index < LINEAR {
            return index as u64;
        }
        let octave = (index - LINEAR) / PER_OCTAVE;
        let shift = octave as u32 + 1;
        let low = ((PER_OCTAVE + (index - LINEAR) % PER_OCTAVE) as u64) << shift;
        low + (1u64 << shift) / 2
    }

    /// Adds one value.
    pub fn record(&mut self, value: u64) {
        let index = Self::index(value);
        if index >= self.counts.len() {
            self.counts.resize(index + 1, 0);
        }
        self.counts[index] += 1;
        self.count += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        let delta = value as f64 - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (value as f64 - self.mean);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The value at percentile `p` (0..=100): the smallest recorded value such that at least
    /// `p` % of the values are at or below it (within the bucket precision); `None` if empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p / 100.0 * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Self::representative(index).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// How many recorded values lie below `value`: exact below 1024, otherwise counting the
    /// bucket of `value` as not below (so within the bucket precision, 0.1 %).
    pub fn count_below(&self, value: u64) -> u64 {
        if value > self.max {
            return self.count;
        }
        self.counts.iter().take(Self::index(value)).sum()
    }

    /// Adds every value `other` recorded (as if recorded here; the mean and variance combine
    /// exactly, Chan et al.'s pairwise formula).
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        let (n1, n2) = (self.count as f64, other.count as f64);
        let delta = other.mean - self.mean;
        self.count += other.count;
        self.mean += delta * n2 / (n1 + n2);
        self.m2 += other.m2 + delta * delta * n1 * n2 / (n1 + n2);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Count, extremes, mean, standard deviation and [`PERCENTILES`]; `None` if empty.
    pub fn summary(&self) -> Option<Summary> {
        if self.count == 0 {
            return None;
        }
        Some(Summary {
            count: self.count,
            min: self.min,
            max: self.max,
            mean: self.mean,
            stddev: (self.m2 / self.count as f64).sqrt(),
            percentiles: PERCENTILES
                .iter()
                .map(|&p| (p, self.percentile(p).unwrap_or(0)))
                .collect(),
        })
    }

    /// Empties the histogram.
    pub fn clear(&mut self) {
        self.counts.clear();
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.mean = 0.0;
        self.m2 = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_1024_and_within_a_thousandth_above() {
        for v in [
            0u64,
            1,
            1023,
            1024,
            1025,
            4095,
            123_456,
            987_654_321,
            u64::MAX / 3,
        ] {
            let r = Histogram::representative(Histogram::index(v));
            let err = (r as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 0.001, "value {v} reported as {r}");
            if v < 1024 {
                assert_eq!(r, v);
            }
        }
        let buckets = LINEAR + (64 - LINEAR_BITS as usize) * PER_OCTAVE;
        assert_eq!(Histogram::index(u64::MAX), buckets - 1);
    }

    #[test]
    fn percentiles_of_one_to_ten_thousand() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let s = h.summary().unwrap();
        assert_eq!((s.count, s.min, s.max), (10_000, 1, 10_000));
        assert!((s.mean - 5000.5).abs() < 1e-9);
        assert!((s.stddev - 2886.75).abs() < 0.01);
        let p50 = h.percentile(50.0).unwrap();
        assert!((4995..=5005).contains(&p50), "p50 {p50}");
        let p999 = h.percentile(99.9).unwrap();
        assert!((9980..=10_000).contains(&p999), "p99.9 {p999}");
        assert_eq!(h.percentile(100.0), Some(10_000));
        assert_eq!(h.percentile(0.0), Some(1));
    }

    #[test]
    fn count_below_is_exact_low_and_within_a_bucket_high() {
        let mut h = Histogram::new();
        for v in [10u64, 500, 1000, 5000, 20_000] {
            h.record(v);
        }
        assert_eq!(
            (
                h.count_below(0),
                h.count_below(10),
                h.count_below(11),
                h.count_below(1000)
            ),
            (0, 0, 1, 2)
        );
        assert_eq!(
            (
                h.count_below(5000),
                h.count_below(5010),
                h.count_below(20_001)
            ),
            (3, 4, 5)
        );
    }

    #[test]
    fn clear_forgets_everything() {
        let mut h = Histogram::new();
        h.record(5);
        h.clear();
        assert!(h.summary().is_none());
        h.record(7);
        assert_eq!(h.summary().unwrap().min, 7);
    }

    #[test]
    fn merging_is_recording_into_one() {
        let (mut a, mut b, mut both) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in [3u64, 900, 1500, 70_000] {
            a.record(v);
            both.record(v);
        }
        for v in [5u64, 2_000_000, 12] {
            b.record(v);
            both.record(v);
        }
        a.merge(&b);
        a.merge(&Histogram::new());
        let (m, w) = (a.summary().unwrap(), both.summary().unwrap());
        assert_eq!(
            (m.count, m.min, m.max, &m.percentiles),
            (w.count, w.min, w.max, &w.percentiles)
        );
        assert!((m.mean - w.mean).abs() < 1e-6 && (m.stddev - w.stddev).abs() < 1e-6);
    }
}
