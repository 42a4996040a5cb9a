//! What the simulator measures. A listener's metrics, with the metric names of frerlab's real
//! receiver: frames sent and received, loss, duplicates, reordering (RFC 4737: a frame is
//! reordered when its number is below the next expected one), latency percentiles from the
//! real receiver's log-linear histogram (`frerlab_traffic::histogram`, fed picoseconds here),
//! and a per-interval series; those count genuine frames only, and the frames an attacker made
//! that reached the listener are counted apart (`forged_delivered`). An egress port's queue-length series: per interval, the largest
//! and the time-weighted mean of its queued buffer bytes, kept exactly at every change.
//! Every series covers the intervals holding the times 0 to the scenario's duration: the run
//! goes on until the frames still queued at the end are delivered (they count in the totals),
//! and that drain can last far longer than the scenario (a 1518-byte frame takes 12 s on a
//! 1 kbit/s link), so the series, whose size the cost estimate bounds, stop at the duration.
//!
//! The frame accounting is the simulator's own rather than `frerlab_traffic::accounting`'s:
//! the simulator knows exactly what the talker sent, leaves out frames sent before the warm-up
//! (while still tracking them for reordering), and bins its series by send time.

use frerlab_traffic::histogram::{Histogram, Summary};
use serde::Serialize;

use crate::units::SimTime;

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
    /// Intervals the series covers.
    bins: usize,
    warmup: SimTime,
    /// Frames sent after the warm-up.
    pub sent: u64,
    /// Distinct frames received (sent after the warm-up).
    pub received: u64,
    /// Copies of already received frames.
    pub duplicates: u64,
    /// Reordered frames (RFC 4737).
    pub reordered: u64,
    /// Frames an attacker made (not genuine) that reached the listener, whenever sent.
    pub forged_delivered: u64,
    /// Latency of distinct frames, in picoseconds.
    pub latency: Histogram,
    /// Per-interval series.
    pub series: Vec<IntervalRow>,
}

impl StreamMetrics {
    /// Empty metrics with the series interval, duration and warm-up of the scenario.
    pub fn new(interval: SimTime, duration: SimTime, warmup: SimTime) -> Self {
        StreamMetrics {
            seen: Vec::new(),
            next_expected: 0,
            interval,
            bins: bins(interval, duration),
            warmup,
            sent: 0,
            received: 0,
            duplicates: 0,
            reordered: 0,
            forged_delivered: 0,
            latency: Histogram::new(),
            series: Vec::new(),
        }
    }

    /// The series row of the interval holding `t`; None after the scenario's duration.
    #[inline]
    fn row(&mut self, t: SimTime) -> Option<&mut IntervalRow> {
        let index = usize::try_from(t.0 / self.interval.0).ok()?;
        if index >= self.bins {
            return None;
        }
        if index >= self.series.len() {
            self.series.resize(index + 1, IntervalRow::default());
        }
        Some(&mut self.series[index])
    }

    /// The talker sent a frame at `t`.
    #[inline]
    pub fn on_sent(&mut self, t: SimTime) {
        if t >= self.warmup {
            self.sent += 1;
        }
        if let Some(row) = self.row(t) {
            row.sent += 1;
        }
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
            if let Some(row) = self.row(sent_at) {
                row.duplicates += 1;
            }
            return;
        }
        self.seen[word] |= bit;
        let reordered = number < self.next_expected;
        self.next_expected = self.next_expected.max(number + 1);
        let latency = SimTime(now.0 - sent_at.0);
        if measured {
            self.received += 1;
            self.reordered += u64::from(reordered);
            self.latency.record(latency.0);
        }
        if let Some(row) = self.row(sent_at) {
            row.received += 1;
            row.reordered += u64::from(reordered);
            row.latency_sum_ps += latency.0 as f64;
        }
        if let Some(row) = self.row(now) {
            row.rx_bytes += u64::from(bytes);
        }
    }
}

/// One interval of a port's queue-length series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueInterval {
    /// Largest occupancy in the interval, in buffer bytes.
    pub max_bytes: u64,
    /// Integral of the occupancy over the interval, in byte-picoseconds (divided by the
    /// interval's length, the time-weighted mean).
    pub byte_ps: u128,
}

/// The occupancy of an egress port (all its classes together) over time, binned into the
/// scenario's intervals. Every enqueue and dequeue updates it, so the integral is exact and
/// no sampling events are needed: bytes queued at `t` add bytes x (end of interval - t) to the
/// open interval's integral, bytes leaving at `t` take back the same for the time they will
/// not spend; the intervals before the one of the current time are closed. A QCN stream's
/// sending rate is kept the same way, as a level in bit/s instead of bytes.
#[derive(Clone, Debug)]
pub struct QueueSeries {
    interval: SimTime,
    /// Buffer bytes queued now.
    level: u64,
    /// End of the open interval.
    boundary: SimTime,
    /// The open interval, its integral counting the bytes queued now until `boundary`.
    open: QueueInterval,
    closed: Vec<QueueInterval>,
    /// Intervals the series covers.
    bins: usize,
}

/// The number of intervals holding the times 0 to `duration`.
fn bins(interval: SimTime, duration: SimTime) -> usize {
    usize::try_from(duration.0 / interval.0 + 1).unwrap_or(usize::MAX)
}

impl QueueSeries {
    /// An empty queue with the series interval and duration of the scenario.
    pub fn new(interval: SimTime, duration: SimTime) -> Self {
        QueueSeries {
            interval,
            bins: bins(interval, duration),
            level: 0,
            boundary: interval,
            open: QueueInterval {
                max_bytes: 0,
                byte_ps: 0,
            },
            closed: Vec::new(),
        }
    }

    /// `bytes` were queued at `now`.
    #[inline]
    pub fn add(&mut self, now: SimTime, bytes: u64) {
        let recorded = self.advance(now);
        self.level += bytes;
        if recorded {
            self.open.max_bytes = self.open.max_bytes.max(self.level);
            self.open.byte_ps += u128::from(bytes) * u128::from(self.boundary.0 - now.0);
        }
    }

    /// `bytes` left the queue at `now`.
    #[inline]
    pub fn remove(&mut self, now: SimTime, bytes: u64) {
        let recorded = self.advance(now);
        self.level -= bytes;
        if recorded {
            self.open.byte_ps -= u128::from(bytes) * u128::from(self.boundary.0 - now.0);
        }
    }

    /// Closes the intervals before the one holding `now`, as far as the series goes; false
    /// when `now` is past it (the level is still kept, nothing more is recorded).
    #[inline]
    fn advance(&mut self, now: SimTime) -> bool {
        while now >= self.boundary && self.closed.len() < self.bins {
            self.close();
        }
        now < self.boundary
    }

    /// Closes the open interval and opens the next one, the bytes queued now counted over all
    /// of it.
    #[cold]
    #[inline(never)]
    fn close(&mut self) {
        self.closed.push(self.open);
        let next = self.boundary.plus(self.interval);
        self.open = QueueInterval {
            max_bytes: self.level,
            byte_ps: u128::from(self.level) * u128::from(next.0 - self.boundary.0),
        };
        self.boundary = next;
    }

    /// The intervals up to the one holding `end` (the end of the run) or the scenario's
    /// duration, whichever comes first, closed with the level held after the last change.
    pub fn finish(&mut self, end: SimTime) -> &[QueueInterval] {
        let count = bins(self.interval, end).min(self.bins);
        while self.closed.len() < count {
            self.close();
        }
        &self.closed
    }
}

/// A count per interval (the bytes a port sent), as far as the series go. Times come in
/// order, so the interval is found by division only when a boundary is crossed.
#[derive(Clone, Debug)]
pub struct IntervalCounts {
    interval: SimTime,
    bins: usize,
    /// The interval of the last count, and its end.
    index: usize,
    boundary: SimTime,
    /// The count of each interval, up to the last one with a count.
    pub values: Vec<u64>,
}

impl IntervalCounts {
    /// Empty counts with the series interval and duration of the scenario.
    pub fn new(interval: SimTime, duration: SimTime) -> Self {
        IntervalCounts {
            interval,
            bins: bins(interval, duration),
            index: 0,
            boundary: interval,
            values: Vec::new(),
        }
    }

    /// Adds `n` to the interval holding `t`, no earlier than the last one's (nothing after
    /// the scenario's duration).
    #[inline]
    pub fn add(&mut self, t: SimTime, n: u64) {
        if t >= self.boundary {
            let index = t.0 / self.interval.0;
            self.index = usize::try_from(index).unwrap_or(usize::MAX);
            self.boundary = SimTime((index + 1).saturating_mul(self.interval.0));
        }
        if self.index >= self.bins {
            return;
        }
        if self.index >= self.values.len() {
            self.values.resize(self.index + 1, 0);
        }
        self.values[self.index] += n;
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
    /// Extra copies of genuine frames received.
    pub duplicates: u64,
    /// Reordered frames (RFC 4737).
    pub reordered: u64,
    /// Frames an attacker made (forged, replayed, babbled) that reached the listener.
    pub forged_delivered: u64,
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
        let latency = self.latency.summary();
        let stat = |f: fn(&Summary) -> f64| latency.as_ref().map(|s| f(s) / 1000.0);
        let percentile = |p: f64| self.latency.percentile(p).map(|ps| ps as f64 / 1000.0);
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
            forged_delivered: self.forged_delivered,
            latency_min_ns: stat(|s| s.min as f64),
            latency_mean_ns: stat(|s| s.mean),
            latency_stddev_ns: stat(|s| s.stddev),
            latency_max_ns: stat(|s| s.max as f64),
            latency_p50_ns: percentile(50.0),
            latency_p90_ns: percentile(90.0),
            latency_p99_ns: percentile(99.0),
            latency_p99_9_ns: percentile(99.9),
            latency_p99_99_ns: percentile(99.99),
            latency_p99_999_ns: percentile(99.999),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_reported_in_nanoseconds_with_picosecond_precision() {
        let mut m = StreamMetrics::new(SimTime(1_000_000), SimTime(1_000_000), SimTime::ZERO);
        for (number, latency_ps) in [(0, 1_500), (1, 2_500)] {
            m.on_sent(SimTime::ZERO);
            m.on_received(number, SimTime::ZERO, 64, SimTime(latency_ps));
        }
        let s = m.summary("s");
        assert_eq!((s.latency_min_ns, s.latency_max_ns), (Some(1.5), Some(2.5)));
        assert_eq!(
            (s.latency_mean_ns, s.latency_stddev_ns),
            (Some(2.0), Some(0.5))
        );
        assert_eq!(s.latency_p99_999_ns, Some(2.5));
    }

    #[test]
    fn a_queue_level_held_over_several_intervals_fills_each_of_them() {
        let mut q = QueueSeries::new(SimTime(10), SimTime(100));
        q.add(SimTime(5), 4);
        q.add(SimTime(6), 2);
        q.remove(SimTime(36), 6);
        let rows: Vec<(u64, u128)> = q
            .finish(SimTime(40))
            .iter()
            .map(|r| (r.max_bytes, r.byte_ps))
            .collect();
        assert_eq!(rows, [(6, 4 + 4 * 6), (6, 60), (6, 60), (6, 36), (0, 0)]);
        assert_eq!(
            q.finish(SimTime(40)).len(),
            5,
            "finishing twice changes nothing"
        );
    }

    #[test]
    fn series_stop_at_the_duration_while_totals_count_the_drain() {
        // A frame sent at 0 arrives 10^15 intervals later: one row, and nothing allocated
        // for the intervals of the drain.
        let mut m = StreamMetrics::new(SimTime(10), SimTime(15), SimTime::ZERO);
        m.on_sent(SimTime::ZERO);
        m.on_received(0, SimTime::ZERO, 64, SimTime(10u64.pow(16)));
        assert_eq!(m.summary("s").received, 1);
        assert_eq!(m.series.len(), 1);
        assert_eq!((m.series[0].received, m.series[0].rx_bytes), (1, 0));

        let mut q = QueueSeries::new(SimTime(10), SimTime(15));
        q.add(SimTime(5), 4);
        q.remove(SimTime(10u64.pow(16)), 4);
        q.add(SimTime(10u64.pow(16) + 1), 7);
        let rows: Vec<(u64, u128)> = q
            .finish(SimTime(10u64.pow(16) + 1))
            .iter()
            .map(|r| (r.max_bytes, r.byte_ps))
            .collect();
        assert_eq!(rows, [(4, 20), (4, 40)]);
    }

    #[test]
    fn duplicates_and_reordering_are_counted_once_each() {
        let mut m = StreamMetrics::new(SimTime(1_000_000), SimTime(1_000_000), SimTime::ZERO);
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
