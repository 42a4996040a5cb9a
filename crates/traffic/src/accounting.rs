//! Per-packet accounting of one stream: loss, duplicates, reordering and one-way latency.
//!
//! No I/O and no clock: it is fed `(sequence number, send time, receive time)` for every
//! arrival, so the real receiver and the simulator's sinks report the same metrics.
//!
//! Definitions (sequence numbers start at 0 and go up by one per data frame sent):
//! - *reordered* (RFC 4737 section 3.3): an arrival whose sequence number is below NextExp,
//!   the highest sequence number seen so far *from the same sender lane* plus one, and which
//!   is not a duplicate; its *reorder distance* is `NextExp - seq` (in sequence numbers of the
//!   stream). A sender with one socket is lane 0, so this is RFC 4737's NextExp. A multi-queue
//!   sender's lanes (one thread per TX queue, each sending its share of the stream in
//!   increasing order) interleave in an order nobody controls (thread scheduling, one queue
//!   served before another, the receiver reading one queue's ring before another's): that
//!   interleaving is not reordering; an inversion within one lane is.
//! - *duplicate*: an arrival of a sequence number already received. Tracked exactly within a
//!   window of [`DUPLICATE_WINDOW`] sequence numbers below the highest seen; an arrival older
//!   than that is counted as *too old* (neither unique nor duplicate, so it counts as lost).
//! - *expected*: the highest sequence number seen plus one, or the count an end-of-stream
//!   probe announced if larger (so losses at the tail are counted); *lost* = expected - unique.
//! - *latency*: receive time - send time in ns; a negative value (a clock step) is recorded
//!   as 0 and counted in `negative_latency`.
//! - *intervals*: consecutive windows of `interval_ns` by receive time, starting at the first
//!   arrival, empty windows included (an outage shows as intervals with nothing received).
//! - *sequence bins* (optional, [`StreamAccounting::with_seq_bins`]): bin k of N frames holds
//!   sequence numbers kN..(k+1)N-1, whatever their arrival time. Its `frames` is
//!   min(N, expected - kN), `received` the unique numbers of the bin that arrived,
//!   `lost` = frames - received, so the bins sum exactly to expected, unique, lost and
//!   duplicates. With a paced sender bin k holds the frames due in one slice of the send
//!   schedule, so a loss lands in the bin its frames were due in, not where the gap was seen.
//!   At most [`MAX_SEQ_BINS`] bins are kept (arrivals beyond them are not binned).

use crate::histogram::{Histogram, Summary};
use serde::Serialize;

/// Sequence numbers below the highest seen within which duplicates are detected exactly.
pub const DUPLICATE_WINDOW: u64 = 1 << 16;

/// Most sequence bins kept per stream.
pub const MAX_SEQ_BINS: u64 = 1 << 20;

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

/// Receive-side counters of one range of sequence numbers (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeqBinReport {
    /// First sequence number of the bin (k times the bin size).
    pub first_seq: u64,
    /// Sequence numbers of the bin the sender used: min(bin size, expected - first_seq).
    pub frames: u64,
    /// Unique sequence numbers of the bin received.
    pub received: u64,
    /// Arrivals of the bin's sequence numbers already received.
    pub duplicates: u64,
    /// `frames - received`.
    pub lost: u64,
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
    /// End-of-stream probes received (not counted in `arrivals`).
    pub end_probes: u64,
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
    /// Frames per sequence bin (`None`: no sequence bins kept).
    pub seq_bin_frames: Option<u64>,
    /// Per-sequence-bin series, bins 0 up to the one of `expected - 1` (empty without bins).
    pub seq_bins: Vec<SeqBinReport>,
}

/// Accounting of one stream (see the module documentation for the definitions).
#[derive(Debug, Clone)]
pub struct StreamAccounting {
    seen: Vec<u64>,
    highest: Option<u64>,
    /// Highest sequence number seen per sender lane (index: lane).
    lane_highest: Vec<Option<u64>>,
    arrivals: u64,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    max_reorder_distance: u64,
    too_old: u64,
    end_count: Option<u64>,
    end_probes: u64,
    negative_latency: u64,
    first_arrival_ns: Option<u64>,
    last_arrival_ns: Option<u64>,
    latency: Histogram,
    interval_ns: u64,
    interval: Interval,
    intervals: Vec<IntervalReport>,
    seq_bin_frames: Option<u64>,
    /// (received, duplicates) per sequence bin, as far as arrivals reached.
    seq_bins: Vec<(u64, u64)>,
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
            lane_highest: vec![None],
            arrivals: 0,
            unique: 0,
            duplicates: 0,
            reordered: 0,
            max_reorder_distance: 0,
            too_old: 0,
            end_count: None,
            end_probes: 0,
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
            seq_bin_frames: None,
            seq_bins: Vec::new(),
        }
    }

    /// Also keeps per-sequence-bin counts, `frames` sequence numbers per bin (at least 1).
    pub fn with_seq_bins(mut self, frames: u64) -> Self {
        self.seq_bin_frames = Some(frames.max(1));
        self
    }

    /// The (received, duplicates) of the bin of `seq`, if bins are kept and it is in range.
    fn seq_bin(&mut self, seq: u64) -> Option<&mut (u64, u64)> {
        let index = seq / self.seq_bin_frames?;
        if index >= MAX_SEQ_BINS {
            return None;
        }
        let index = index as usize;
        if self.seq_bins.len() <= index {
            self.seq_bins.resize(index + 1, (0, 0));
        }
        self.seq_bins.get_mut(index)
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
    /// `recv_ns` (both ns on one clock), from a sender with one lane; says how it was
    /// classified.
    pub fn record(&mut self, seq: u64, send_ns: u64, recv_ns: u64) -> Arrival {
        self.record_lane(0, seq, send_ns, recv_ns)
    }

    /// As [`StreamAccounting::record`], for an arrival sent by lane `lane` of a multi-queue
    /// sender: reordering is judged against that lane's earlier arrivals only.
    pub fn record_lane(&mut self, lane: u8, seq: u64, send_ns: u64, recv_ns: u64) -> Arrival {
        self.advance_intervals(recv_ns);
        let lane = usize::from(lane);
        if self.lane_highest.len() <= lane {
            self.lane_highest.resize(lane + 1, None);
        }
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
                        match self.lane_highest[lane] {
                            Some(lh) if seq < lh => {
                                self.max_reorder_distance =
                                    self.max_reorder_distance.max(lh + 1 - seq);
                                Arrival::Reordered
                            }
                            _ => {
                                // behind another lane only: in order for its own lane
                                self.lane_highest[lane] = Some(seq);
                                Arrival::InOrder
                            }
                        }
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
                self.lane_highest[lane] = Some(seq);
                Arrival::InOrder
            }
        };
        match arrival {
            Arrival::Duplicate => {
                self.duplicates += 1;
                self.interval.duplicates += 1;
                if let Some(bin) = self.seq_bin(seq) {
                    bin.1 += 1;
                }
            }
            Arrival::TooOld => self.too_old += 1,
            Arrival::InOrder | Arrival::Reordered => {
                if arrival == Arrival::Reordered {
                    self.reordered += 1;
                    self.interval.reordered += 1;
                }
                self.unique += 1;
                self.interval.received += 1;
                if let Some(bin) = self.seq_bin(seq) {
                    bin.0 += 1;
                }
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
        self.end_probes += 1;
        self.end_count = Some(self.end_count.map_or(count, |c| c.max(count)));
    }

    /// Sequence numbers the sender used, as far as known.
    pub fn expected(&self) -> u64 {
        self.highest
            .map_or(0, |h| h + 1)
            .max(self.end_count.unwrap_or(0))
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
            end_probes: self.end_probes,
            negative_latency: self.negative_latency,
            first_arrival_ns: self.first_arrival_ns,
            last_arrival_ns: self.last_arrival_ns,
            latency_ns: self.latency.summary(),
            intervals: finished.intervals,
            seq_bin_frames: self.seq_bin_frames,
            seq_bins: self.seq_bins_report(expected),
        }
    }

    /// Bins 0 up to the one holding `expected - 1` (at most [`MAX_SEQ_BINS`]).
    fn seq_bins_report(&self, expected: u64) -> Vec<SeqBinReport> {
        let Some(size) = self.seq_bin_frames else {
            return Vec::new();
        };
        (0..expected.div_ceil(size).min(MAX_SEQ_BINS))
            .map(|k| {
                let (received, duplicates) =
                    self.seq_bins.get(k as usize).copied().unwrap_or((0, 0));
                let frames = size.min(expected - k * size);
                SeqBinReport {
                    first_seq: k * size,
                    frames,
                    received,
                    duplicates,
                    lost: frames - received,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(seqs: &[u64]) -> (StreamAccounting, Vec<Arrival>) {
        let mut acc = StreamAccounting::new(1_000);
        let kinds = seqs
            .iter()
            .enumerate()
            .map(|(i, &s)| acc.record(s, 0, i as u64 * 10))
            .collect();
        (acc, kinds)
    }

    #[test]
    fn rfc4737_example_sequence() {
        // RFC 4737 section 3.4-style arrival order: 1,2,3,5,6,7,8,4,9 (0 first).
        let (acc, kinds) = feed(&[0, 1, 2, 3, 5, 6, 7, 8, 4, 9]);
        assert_eq!(kinds[8], Arrival::Reordered);
        let r = acc.report();
        assert_eq!(
            (
                r.unique,
                r.reordered,
                r.max_reorder_distance,
                r.lost,
                r.duplicates
            ),
            (10, 1, 5, 0, 0)
        );
    }

    #[test]
    fn loss_duplicates_and_tail_loss() {
        let (mut acc, kinds) = feed(&[0, 1, 1, 3, 4, 4, 4, 6]);
        assert_eq!(kinds[2], Arrival::Duplicate);
        let r = acc.report();
        assert_eq!(
            (r.arrivals, r.unique, r.duplicates, r.lost, r.expected),
            (8, 5, 3, 2, 7)
        );
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
        assert_eq!(
            (
                r.intervals[3].received,
                r.intervals[3].reordered,
                r.intervals[3].lost
            ),
            (1, 1, -1)
        );
        assert_eq!(
            r.intervals.iter().map(|i| i.lost).sum::<i64>() as u64,
            r.lost
        );
    }

    #[test]
    fn seq_bins_count_by_sequence_number_and_sum_to_the_totals() {
        // bins of 4: 0..3 (2 lost, 1 duplicated), 4..7 (reordered 5 lands in its own bin),
        // 8..11 (all lost, nothing of it arrived), 12..13 (the tail the end probe announced)
        let mut acc = StreamAccounting::new(1_000).with_seq_bins(4);
        for (t, seq) in [0u64, 3, 3, 4, 6, 7, 5, 12].into_iter().enumerate() {
            acc.record(seq, 0, t as u64 * 1_000_000);
        }
        acc.record_end(14, 9_000_000);
        acc.record_end(14, 9_000_001);
        let r = acc.report();
        let bins: Vec<(u64, u64, u64, u64, u64)> = r
            .seq_bins
            .iter()
            .map(|b| (b.first_seq, b.frames, b.received, b.duplicates, b.lost))
            .collect();
        assert_eq!(
            bins,
            [
                (0, 4, 2, 1, 2),
                (4, 4, 4, 0, 0),
                (8, 4, 0, 0, 4),
                (12, 2, 1, 0, 1)
            ]
        );
        assert_eq!(
            (r.seq_bin_frames, r.end_probes, r.arrivals),
            (Some(4), 2, 8)
        );
        let sum = |f: fn(&SeqBinReport) -> u64| r.seq_bins.iter().map(f).sum::<u64>();
        assert_eq!(
            (
                sum(|b| b.frames),
                sum(|b| b.received),
                sum(|b| b.lost),
                sum(|b| b.duplicates)
            ),
            (r.expected, r.unique, r.lost, r.duplicates)
        );
        assert!(
            StreamAccounting::new(1_000).report().seq_bins.is_empty(),
            "no bins unless asked for"
        );
    }

    #[test]
    fn lanes_interleave_without_reordering_and_reorder_within_a_lane() {
        // lane 0 sent 0, 2, 3, 6; lane 1 sent 1, 4, 5 (a shared counter): lane 1 ran ahead,
        // then lane 0 caught up; only lane 0's 3-after-6 is an inversion within a lane
        let mut acc = StreamAccounting::new(1_000);
        let arrivals: Vec<Arrival> = [
            (1, 1),
            (1, 4),
            (0, 0),
            (0, 2),
            (1, 5),
            (0, 6),
            (0, 3),
            (1, 4),
        ]
        .iter()
        .map(|&(lane, seq)| acc.record_lane(lane, seq, 0, 1))
        .collect();
        use Arrival::*;
        assert_eq!(
            arrivals,
            [InOrder, InOrder, InOrder, InOrder, InOrder, InOrder, Reordered, Duplicate]
        );
        let r = acc.report();
        assert_eq!(
            (
                r.unique,
                r.reordered,
                r.max_reorder_distance,
                r.duplicates,
                r.lost
            ),
            (7, 1, 4, 1, 0)
        );
        // the same arrivals from one lane: every arrival behind the highest is reordered
        let (acc, _) = feed(&[1, 4, 0, 2, 5, 6, 3]);
        assert_eq!(acc.report().reordered, 3);
    }

    #[test]
    fn send_after_receive_is_counted_not_negative() {
        let mut acc = StreamAccounting::new(100);
        acc.record(0, 50, 40);
        let r = acc.report();
        assert_eq!((r.negative_latency, r.latency_ns.unwrap().max), (1, 0));
    }
}
