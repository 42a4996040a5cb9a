//! Per-packet accounting of one stream: loss, duplicates, reordering and one-way latency.
//!
//! No I/O and no clock: it is fed `(sequence number, send time, receive time)` for every
//! arrival, so the real receiver and the simulator's sinks report the same metrics.
//!
//! Definitions (sequence numbers start at 0 and go up by one per data frame sent):
//! - *reordered* (RFC 4737 section 3.3): an arrival whose sequence number is below NextExp,
//!   the highest sequence number seen so far plus one, and which is not a duplicate; its
//!   *reorder distance* is `NextExp - seq`.
//! - *duplicate*: an arrival of a sequence number already received. Tracked exactly within a
//!   window of [`DUPLICATE_WINDOW`] sequence numbers below the highest seen; an arrival older
//!   than that is counted as *too old* (neither unique nor duplicate, so it counts as lost).
//! - *expected*: the highest sequence number seen plus one, or the count an end-of-stream
//!   probe announced if larger (so losses at the tail are counted); *lost* = expected - unique.
//! - *latency*: receive time - send time in ns; a negative value (a clock step) is recorded
//!   as 0 and counted in `negative_latency`.
//! - *intervals*: consecutive windows of `interval_ns` by receive time, starting at the first
//!   arrival, empty windows included (an outage shows as intervals with nothing received).

use crate::histogram::{Histogram, Summary};
use serde::Serialize;

/// Sequence numbers below the highest seen within which duplicates are detected exactly.
pub const DUPLICATE_WINDOW: u64 = 1 << 16;

/// How one arrival was classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Sequence number above every one seen before.
    InOrder,
    /// First arrival of a sequence number below NextExp (RFC 4737).
    Reordered,
    /// A sequence number received before.
    Duplicate,
    /// Below the duplicate window: cannot be classified.
    TooOld,
}

/// Receive-side counters of one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalReport {
    /// Start of the interval, ns after the stream's first arrival.
    pub start_ns: u64,
    /// Unique sequence numbers received in the interval.
    pub received: u64,
    /// Duplicates received in the interval.
    pub duplicates: u64,
    /// Reordered arrivals in the interval.
    pub reordered: u64,
    /// Growth of the gap count (expected - unique) during the interval; the series sums to `lost`.
    pub lost: i64,
    /// Latency of the interval's arrivals (ns), if any arrived.
    pub latency_ns: Option<Summary>,
}

/// Everything the accounting of one stream measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamReport {
    /// Every arrival, duplicates included.
    pub arrivals: u64,
    /// Distinct sequence numbers received.
    pub unique: u64,
    /// Arrivals of a sequence number already received.
    pub duplicates: u64,
    /// Arrivals below NextExp that were not duplicates (RFC 4737).
    pub reordered: u64,
    /// Largest `NextExp - seq` of a reordered arrival.
    pub max_reorder_distance: u64,
    /// Arrivals older than the duplicate window.
    pub too_old: u64,
    /// Sequence numbers the sender used, as far as the receiver knows.
    pub expected: u64,
    /// `expected - unique`.
    pub lost: u64,
    /// Whether an end-of-stream probe arrived (if not, tail losses are not counted).
    pub end_seen: bool,
    /// Arrivals whose send time was after their receive time.
    pub negative_latency: u64,
    /// Receive time of the first arrival (ns, the caller's clock).
    pub first_arrival_ns: Option<u64>,
    /// Receive time of the last arrival (ns, the caller's clock).
    pub last_arrival_ns: Option<u64>,
    /// One-way latency over all unique arrivals (ns).
    pub latency_ns: Option<Summary>,
    /// Per-interval series.
    pub intervals: Vec<IntervalReport>,
}

/// Accounting of one stream (see the module documentation for the definitions).
#[derive(Debug, Clone)]
pub struct StreamAccounting {
    seen: Vec<u64>,
    highest: Option<u64>,
    arrivals: u64,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    max_reorder_distance: u64,
    too_old: u64,
    end_count: Option<u64>,
    negative_latency: u64,
    first_arrival_ns: Option<u64>,
    last_arrival_ns: Option<u64>,
    latency: Histogram,
    interval_ns: u64,
    interval: Interval,
    intervals: Vec<IntervalReport>,
}

#[derive(Debug, Clone)]
struct Interval {
    index: u64,
    received: u64,
    duplicates: u64,
    reordered: u64,
    gaps_at_start: u64,
    latency: Histogram,
}

impl StreamAccounting {
    /// Accounting with a per-interval series every `interval_ns` (at least 1 ns).
    pub fn new(interval_ns: u64) -> Self {
        StreamAccounting {
            seen: vec![0; (DUPLICATE_WINDOW / 64) as usize],
            highest: None,
            arrivals: 0,
            unique: 0,
            duplicates: 0,
            reordered: 0,
            max_reorder_distance: 0,
            too_old: 0,
            end_count: None,
            negative_latency: 0,
            first_arrival_ns: None,
            last_arrival_ns: None,
            latency: Histogram::new(),
            interval_ns: interval_ns.max(1),
            interval: Interval {
                index: 0,
                received: 0,
                duplicates: 0,
                reordered: 0,
                gaps_at_start: 0,
                latency: Histogram::new(),
            },
            intervals: Vec::new(),
        }
    }

    fn bit(seq: u64) -> (usize, u64) {
        let slot = seq % DUPLICATE_WINDOW;
        ((slot / 64) as usize, 1u64 << (slot % 64))
    }

    fn gaps(&self) -> u64 {
        self.expected().saturating_sub(self.unique)
    }

    /// Closes intervals up to the one containing `recv_ns` (empty ones included).
    fn advance_intervals(&mut self, recv_ns: u64) {
        let first = *self.first_arrival_ns.get_or_insert(recv_ns);
        let index = recv_ns.saturating_sub(first) / self.interval_ns;
        while self.interval.index < index {
            self.close_interval();
        }
    }

    fn close_interval(&mut self) {
        let gaps = self.gaps();
        let i = &mut self.interval;
        self.intervals.push(IntervalReport {
            start_ns: i.index * self.interval_ns,
            received: i.received,
            duplicates: i.duplicates,
            reordered: i.reordered,
            lost: gaps as i64 - i.gaps_at_start as i64,
            latency_ns: i.latency.summary(),
        });
        i.index += 1;
        i.received = 0;
        i.duplicates = 0;
        i.reordered = 0;
        i.gaps_at_start = gaps;
        i.latency.clear();
    }

    /// Accounts one arrival of data sequence number `seq` sent at `send_ns`, received at
    /// `recv_ns` (both ns on one clock), and says how it was classified.
    pub fn record(&mut self, seq: u64, send_ns: u64, recv_ns: u64) -> Arrival {
        self.advance_intervals(recv_ns);
        self.arrivals += 1;
        self.last_arrival_ns = Some(recv_ns);
        let arrival = match self.highest {
            Some(h) if seq <= h => {
                if h - seq >= DUPLICATE_WINDOW {
                    Arrival::TooOld
                } else {
                    let (word, mask) = Self::bit(seq);
                    if self.seen[word] & mask != 0 {
                        Arrival::Duplicate
                    } else {
                        self.seen[word] |= mask;
                        self.max_reorder_distance = self.max_reorder_distance.max(h + 1 - seq);
                        Arrival::Reordered
                    }
                }
            }
            previous => {
                let from = previous.map_or(0, |h| h + 1);
                if seq - from >= DUPLICATE_WINDOW {
                    self.seen.fill(0);
                } else {
                    for s in from..seq {
                        let (word, mask) = Self::bit(s);
                        self.seen[word] &= !mask;
                    }
                }
                let (word, mask) = Self::bit(seq);
                self.seen[word] |= mask;
                self.highest = Some(seq);
                Arrival::InOrder
            }
        };
        match arrival {
            Arrival::Duplicate => {
                self.duplicates += 1;
                self.interval.duplicates += 1;
            }
            Arrival::TooOld => self.too_old += 1,
            Arrival::InOrder | Arrival::Reordered => {
                if arrival == Arrival::Reordered {
                    self.reordered += 1;
                    self.interval.reordered += 1;
                }
                self.unique += 1;
                self.interval.received += 1;
                let latency = recv_ns.checked_sub(send_ns).unwrap_or_else(|| {
                    self.negative_latency += 1;
                    0
                });
                self.latency.record(latency);
                self.interval.latency.record(latency);
            }
        }
        arrival
    }

    /// Notes an end-of-stream probe received at `recv_ns`: the sender used sequence numbers
    /// `0..count`.
    pub fn record_end(&mut self, count: u64, recv_ns: u64) {
        self.advance_intervals(recv_ns);
        self.end_count = Some(self.end_count.map_or(count, |c| c.max(count)));
    }

    /// Sequence numbers the sender used, as far as known.
    pub fn expected(&self) -> u64 {
        self.highest.map_or(0, |h| h + 1).max(self.end_count.unwrap_or(0))
    }

    /// Unique sequence numbers received so far.
    pub fn unique(&self) -> u64 {
        self.unique
    }

    /// Whether an end-of-stream probe has arrived.
    pub fn end_seen(&self) -> bool {
        self.end_count.is_some()
    }

    /// The report so far, the interval in progress included.
    pub fn report(&self) -> StreamReport {
        let mut finished = self.clone();
        if finished.first_arrival_ns.is_some() {
            finished.close_interval();
        }
        let expected = self.expected();
        StreamReport {
            arrivals: self.arrivals,
            unique: self.unique,
            duplicates: self.duplicates,
            reordered: self.reordered,
            max_reorder_distance: self.max_reorder_distance,
            too_old: self.too_old,
            expected,
            lost: expected.saturating_sub(self.unique),
            end_seen: self.end_count.is_some(),
            negative_latency: self.negative_latency,
            first_arrival_ns: self.first_arrival_ns,
            last_arrival_ns: self.last_arrival_ns,
            latency_ns: self.latency.summary(),
            intervals: finished.intervals,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(seqs: &[u64]) -> (StreamAccounting, Vec<Arrival>) {
        let mut acc = StreamAccounting::new(1_000);
        let kinds = seqs.iter().enumerate().map(|(i, &s)| acc.record(s, 0, i as u64 * 10)).collect();
        (acc, kinds)
    }

    #[test]
    fn rfc4737_example_sequence() {
        // RFC 4737 section 3.4-style arrival order: 1,2,3,5,6,7,8,4,9 (0 first).
        let (acc, kinds) = feed(&[0, 1, 2, 3, 5, 6, 7, 8, 4, 9]);
        assert_eq!(kinds[8], Arrival::Reordered);
        let r = acc.report();
        assert_eq!((r.unique, r.reordered, r.max_reorder_distance, r.lost, r.duplicates), (10, 1, 5, 0, 0));
    }

    #[test]
    fn loss_duplicates_and_tail_loss() {
        let (mut acc, kinds) = feed(&[0, 1, 1, 3, 4, 4, 4, 6]);
        assert_eq!(kinds[2], Arrival::Duplicate);
        let r = acc.report();
        assert_eq!((r.arrivals, r.unique, r.duplicates, r.lost, r.expected), (8, 5, 3, 2, 7));
        acc.record_end(10, 100);
        let r = acc.report();
        assert_eq!((r.expected, r.lost, r.end_seen), (10, 5, true));
    }

    #[test]
    fn duplicate_window_and_too_old() {
        let mut acc = StreamAccounting::new(1_000);
        acc.record(5, 0, 1);
        acc.record(5 + DUPLICATE_WINDOW, 0, 2);
        assert_eq!(acc.record(5, 0, 3), Arrival::TooOld);
        assert_eq!(acc.record(6, 0, 4), Arrival::Reordered);
        assert_eq!(acc.record(6, 0, 5), Arrival::Duplicate);
        // Slot 6 is reused by 6 + window, which is new, and 7 (cleared on the way) is not a duplicate.
        assert_eq!(acc.record(6 + DUPLICATE_WINDOW, 0, 6), Arrival::InOrder);
        assert_eq!(acc.record(7, 0, 7), Arrival::Reordered);
        assert_eq!(acc.report().too_old, 1);
    }

    #[test]
    fn latency_and_intervals_with_an_outage() {
        let mut acc = StreamAccounting::new(100);
        acc.record(0, 1_000, 1_010);
        acc.record(1, 1_020, 1_040);
        acc.record(5, 1_300, 1_305);
        acc.record(4, 1_250, 1_311);
        let r = acc.report();
        let lat = r.latency_ns.as_ref().unwrap();
        assert_eq!((lat.min, lat.max, lat.count), (5, 61, 4));
        assert_eq!(r.intervals.len(), 4);
        assert_eq!(r.intervals[0].received, 2);
        assert_eq!(r.intervals[1].received, 0);
        assert_eq!((r.intervals[2].received, r.intervals[2].lost), (1, 3));
        assert_eq!((r.intervals[3].received, r.intervals[3].reordered, r.intervals[3].lost), (1, 1, -1));
        assert_eq!(r.intervals.iter().map(|i| i.lost).sum::<i64>() as u64, r.lost);
    }

    #[test]
    fn send_after_receive_is_counted_not_negative() {
        let mut acc = StreamAccounting::new(100);
        acc.record(0, 50, 40);
        let r = acc.report();
        assert_eq!((r.negative_latency, r.latency_ns.unwrap().max), (1, 0));
    }
}
