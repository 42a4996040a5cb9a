//! What a listener measures, with the metric names of frerlab's real receiver: frames sent and
//! received, loss, duplicates, reordering (RFC 4737: a frame is reordered when its number is
//! below the next expected one), latency percentiles from a log-linear histogram, and a
//! per-interval series.

use serde::Serialize;

use crate::units::SimTime;

/// Sub-buckets per power of two: percentiles are exact to within 1/256 (0.4 %) of the value.
const SUB_BUCKET_BITS: u32 = 8;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;

/// A log-linear histogram of latencies in picoseconds, with exact min, max, mean and stddev.
#[derive(Clone, Debug, Default)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    count: u64,
    sum: f64,
    sum_sq: f64,
    min: u64,
    max: u64,
}

impl LatencyHistogram {
    #[inline]
    fn bucket(value: u64) -> usize {
        if value < SUB_BUCKETS {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros();
        let shift = exponent - SUB_BUCKET_BITS;
        let sub = (value >> shift) & (SUB_BUCKETS - 1);
        ((u64::from(shift) + 1) * SUB_BUCKETS + sub) as usize
    }

    fn bucket_low(index: usize) -> u64 {
        let index = index as u64;
        if index < SUB_BUCKETS {
            return index;
        }
        let shift = index / SUB_BUCKETS - 1;
        (SUB_BUCKETS + index % SUB_BUCKETS) << shift
    }

    /// Adds one latency.
    #[inline]
    pub fn record(&mut self, latency: SimTime) {
        let v = latency.0;
        let b = Self::bucket(v);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.count += 1;
        let x = v as f64;
        self.sum += x;
        self.sum_sq += x * x;
    }

    /// The value at quantile `q` (0..=1), in picoseconds: the lower edge of its bucket,
    /// clamped to the exact min and max (the largest rank is the exact max).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return Some(self.max);
        }
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Self::bucket_low(index).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean in picoseconds.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Population standard deviation in picoseconds.
    pub fn stddev(&self) -> Option<f64> {
        let mean = self.mean()?;
        Some(
            (self.sum_sq / self.count as f64 - mean * mean)
                .max(0.0)
                .sqrt(),
        )
    }
}

/// One row of a stream's per-interval series. Frames are counted in the interval they were
/// sent in (so loss per interval is sent - received); throughput in the interval they arrived.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IntervalRow {
    /// Frames the talker sent.
    pub sent: u64,
    /// Distinct frames delivered.
    pub received: u64,
    /// Extra copies delivered.
    pub duplicates: u64,
    /// Delivered frames that arrived after a higher-numbered one.
    pub reordered: u64,
    /// Sum of latencies of the distinct frames, in picoseconds.
    pub latency_sum_ps: f64,
    /// Bytes (L2) of distinct frames that arrived in this interval.
    pub rx_bytes: u64,
}

/// The listener-side accounting of one stream.
#[derive(Clone, Debug)]
pub struct StreamMetrics {
    seen: Vec<u64>,
    next_expected: u64,
    interval: SimTime,
    warmup: SimTime,
    /// Frames sent after the warm-up.
    pub sent: u64,
    /// Distinct frames received (sent after the warm-up).
    pub received: u64,
    /// Copies of already received frames.
    pub duplicates: u64,
    /// Reordered frames (RFC 4737).
    pub reordered: u64,
    /// Latency of distinct frames.
    pub latency: LatencyHistogram,
    /// Per-interval series.
    pub series: Vec<IntervalRow>,
}

impl StreamMetrics {
    /// Empty metrics with the series interval and warm-up of the scenario.
    pub fn new(interval: SimTime, warmup: SimTime) -> Self {
        StreamMetrics {
            seen: Vec::new(),
            next_expected: 0,
            interval,
            warmup,
            sent: 0,
            received: 0,
            duplicates: 0,
            reordered: 0,
            latency: LatencyHistogram::default(),
            series: Vec::new(),
        }
    }

    #[inline]
    fn row(&mut self, t: SimTime) -> &mut IntervalRow {
        let index = (t.0 / self.interval.0) as usize;
        if index >= self.series.len() {
            self.series.resize(index + 1, IntervalRow::default());
        }
        &mut self.series[index]
    }

    /// The talker sent a frame at `t`.
    #[inline]
    pub fn on_sent(&mut self, t: SimTime) {
        if t >= self.warmup {
            self.sent += 1;
        }
        self.row(t).sent += 1;
    }

    /// The listener received frame `number` (sent at `sent_at`, `bytes` long) at `now`.
    #[inline]
    pub fn on_received(&mut self, number: u64, sent_at: SimTime, bytes: u32, now: SimTime) {
        let word = (number / 64) as usize;
        let bit = 1u64 << (number % 64);
        if word >= self.seen.len() {
            self.seen.resize(word + 1, 0);
        }
        let measured = sent_at >= self.warmup;
        if self.seen[word] & bit != 0 {
            if measured {
                self.duplicates += 1;
            }
            self.row(sent_at).duplicates += 1;
            return;
        }
        self.seen[word] |= bit;
        let reordered = number < self.next_expected;
        self.next_expected = self.next_expected.max(number + 1);
        let latency = SimTime(now.0 - sent_at.0);
        if measured {
            self.received += 1;
            self.reordered += u64::from(reordered);
            self.latency.record(latency);
        }
        let row = self.row(sent_at);
        row.received += 1;
        row.reordered += u64::from(reordered);
        row.latency_sum_ps += latency.0 as f64;
        self.row(now).rx_bytes += u64::from(bytes);
    }
}

/// The summary of one stream as reported.
#[derive(Clone, Debug, Serialize)]
pub struct StreamSummary {
    /// Stream name.
    pub stream: String,
    /// Frames sent after the warm-up.
    pub sent: u64,
    /// Distinct frames received.
    pub received: u64,
    /// Frames never received.
    pub lost: u64,
    /// lost / sent.
    pub loss_ratio: f64,
    /// Extra copies received.
    pub duplicates: u64,
    /// Reordered frames (RFC 4737).
    pub reordered: u64,
    /// Latency statistics in nanoseconds; `None` when nothing arrived.
    pub latency_min_ns: Option<f64>,
    /// Mean latency.
    pub latency_mean_ns: Option<f64>,
    /// Standard deviation of latency.
    pub latency_stddev_ns: Option<f64>,
    /// Maximum latency.
    pub latency_max_ns: Option<f64>,
    /// Median latency.
    pub latency_p50_ns: Option<f64>,
    /// 90th percentile.
    pub latency_p90_ns: Option<f64>,
    /// 99th percentile.
    pub latency_p99_ns: Option<f64>,
    /// 99.9th percentile.
    pub latency_p99_9_ns: Option<f64>,
    /// 99.99th percentile.
    pub latency_p99_99_ns: Option<f64>,
    /// 99.999th percentile.
    pub latency_p99_999_ns: Option<f64>,
}

impl StreamMetrics {
    /// The reported summary.
    pub fn summary(&self, stream: &str) -> StreamSummary {
        let ns = |ps: Option<u64>| ps.map(|v| v as f64 / 1000.0);
        let h = &self.latency;
        let lost = self.sent.saturating_sub(self.received);
        StreamSummary {
            stream: stream.to_string(),
            sent: self.sent,
            received: self.received,
            lost,
            loss_ratio: if self.sent == 0 {
                0.0
            } else {
                lost as f64 / self.sent as f64
            },
            duplicates: self.duplicates,
            reordered: self.reordered,
            latency_min_ns: ns((h.count() > 0).then_some(h.min)),
            latency_mean_ns: h.mean().map(|v| v / 1000.0),
            latency_stddev_ns: h.stddev().map(|v| v / 1000.0),
            latency_max_ns: ns((h.count() > 0).then_some(h.max)),
            latency_p50_ns: ns(h.quantile(0.5)),
            latency_p90_ns: ns(h.quantile(0.9)),
            latency_p99_ns: ns(h.quantile(0.99)),
            latency_p99_9_ns: ns(h.quantile(0.999)),
            latency_p99_99_ns: ns(h.quantile(0.9999)),
            latency_p99_999_ns: ns(h.quantile(0.99999)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_the_bucket_resolution() {
        let mut h = LatencyHistogram::default();
        for v in 1..=100_000u64 {
            h.record(SimTime(v * 1000));
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        assert!(
            (p50 - 50_000_000.0).abs() / 50_000_000.0 < 1.0 / 256.0,
            "p50 {p50}"
        );
        assert_eq!(h.quantile(1.0), Some(100_000_000));
        assert_eq!(h.quantile(0.0), Some(1000));
        assert!((h.mean().unwrap() - 50_000_500.0).abs() < 1.0);
    }

    #[test]
    fn duplicates_and_reordering_are_counted_once_each() {
        let mut m = StreamMetrics::new(SimTime(1_000_000), SimTime::ZERO);
        for _ in 0..4 {
            m.on_sent(SimTime::ZERO);
        }
        for number in [0, 2, 1, 2, 3] {
            m.on_received(number, SimTime::ZERO, 64, SimTime(10));
        }
        let s = m.summary("s");
        assert_eq!(
            (s.sent, s.received, s.duplicates, s.reordered, s.lost),
            (4, 4, 1, 1, 0)
        );
    }
}
