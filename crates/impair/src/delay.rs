//! The delay line's model: how long each frame is held, and the queue of held frames.
//!
//! A frame arriving at time t is due at t + d, d drawn per frame:
//! - with probability `reorder` it is sent at once (d = 0) and so overtakes the frames still
//!   held (netem's `reorder` model);
//! - otherwise d is uniform in [delay - jitter, delay + jitter] (netem's default jitter
//!   distribution); jitter may not exceed the delay, so the mean delay is exactly `delay`.
//!   Jitter larger than the spacing of frames reorders them too.
//!
//! Frames leave in order of due time; equal due times leave in arrival order, so a constant
//! delay never reorders. No I/O and no clock here: times are parameters.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io;

/// Longest delay (and jitter) accepted: 10 s, which bounds the frames held at once.
pub const MAX_DELAY_NS: u64 = 10_000_000_000;

/// The delay of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DelayConfig {
    /// Mean delay in ns (0..=MAX_DELAY_NS).
    pub delay_ns: u64,
    /// Half-width of the uniform jitter in ns (0..=delay_ns).
    pub jitter_ns: u64,
    /// Probability that a frame is sent at once, overtaking the held ones (0..=1; needs a delay).
    pub reorder: f64,
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

impl DelayConfig {
    /// Checks the ranges.
    ///
    /// # Errors
    /// `InvalidInput` naming the bad value and the valid range.
    pub fn validate(&self) -> io::Result<()> {
        if self.delay_ns > MAX_DELAY_NS {
            return Err(invalid(format!(
                "delay_ns {} is out of range (0..={MAX_DELAY_NS})",
                self.delay_ns
            )));
        }
        if self.jitter_ns > self.delay_ns {
            return Err(invalid(format!(
                "jitter_ns {} is out of range (0..=delay_ns, here {})",
                self.jitter_ns, self.delay_ns
            )));
        }
        if !(0.0..=1.0).contains(&self.reorder) {
            return Err(invalid(format!(
                "reorder {} is out of range (0..=1)",
                self.reorder
            )));
        }
        if self.reorder > 0.0 && self.delay_ns == 0 {
            return Err(invalid(format!(
                "reorder {} needs a delay_ns above 0 (frames sent at once overtake only delayed ones)",
                self.reorder
            )));
        }
        Ok(())
    }

    /// True when this direction needs the delay line at all.
    pub fn is_active(&self) -> bool {
        self.delay_ns > 0
    }

    fn sample_ns(&self, rng: &mut fastrand::Rng) -> u64 {
        if self.reorder > 0.0 && rng.f64() < self.reorder {
            return 0;
        }
        if self.jitter_ns == 0 {
            return self.delay_ns;
        }
        // jitter_ns <= delay_ns, so the result is never negative.
        self.delay_ns - self.jitter_ns + rng.u64(0..=2 * self.jitter_ns)
    }
}

/// What happened to a frame offered to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Held until its due time.
    Held,
    /// Due at once (the reorder draw, or a delay of 0 from the jitter).
    Early,
    /// Dropped: the queue holds its limit already.
    Overflow,
}

struct Held {
    due_ns: u64,
    order: u64,
    direction: usize,
    frame: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.order) == (other.due_ns, other.order)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    /// Reversed, so the max-heap yields the earliest (due time, arrival order) first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due_ns, other.order).cmp(&(self.due_ns, self.order))
    }
}

/// The frames held by the delay line, for any number of directions, ordered by due time.
pub struct DelayQueue {
    heap: BinaryHeap<Held>,
    arrivals: u64,
    limit: usize,
    rng: fastrand::Rng,
    spare: Vec<Vec<u8>>,
}

impl DelayQueue {
    /// An empty queue holding at most `limit` frames, drawing delays from seed `seed`.
    pub fn new(limit: usize, seed: u64) -> Self {
        DelayQueue {
            heap: BinaryHeap::new(),
            arrivals: 0,
            limit,
            rng: fastrand::Rng::with_seed(seed),
            spare: Vec::new(),
        }
    }

    /// Offers `frame` of `direction`, arrived at `arrival_ns`, delayed as `config` says.
    pub fn admit(
        &mut self,
        direction: usize,
        config: &DelayConfig,
        arrival_ns: u64,
        frame: &[u8],
    ) -> Admission {
        self.admit_with(direction, config, arrival_ns, |copy| {
            copy.extend_from_slice(frame)
        })
    }

    /// [`DelayQueue::admit`] for a frame that `write` appends to an empty buffer (so the frame
    /// may be rewritten on the way in without a copy of its own).
    pub fn admit_with(
        &mut self,
        direction: usize,
        config: &DelayConfig,
        arrival_ns: u64,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Admission {
        if self.heap.len() >= self.limit {
            return Admission::Overflow;
        }
        let delay = config.sample_ns(&mut self.rng);
        let mut copy = self.spare.pop().unwrap_or_default();
        copy.clear();
        write(&mut copy);
        self.heap.push(Held {
            due_ns: arrival_ns + delay,
            order: self.arrivals,
            direction,
            frame: copy,
        });
        self.arrivals += 1;
        if delay == 0 {
            Admission::Early
        } else {
            Admission::Held
        }
    }

    /// Due time of the earliest held frame.
    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|h| h.due_ns)
    }

    /// Frames held now.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Hands every frame due at `now_ns` to `send(direction, frame)`, earliest first; returns
    /// how many.
    pub fn release_due(&mut self, now_ns: u64, mut send: impl FnMut(usize, &[u8])) -> usize {
        let mut released = 0;
        while self.heap.peek().is_some_and(|h| h.due_ns <= now_ns) {
            let held = self.heap.pop().expect("peeked");
            send(held.direction, &held.frame);
            self.spare.push(held.frame);
            released += 1;
        }
        released
    }

    /// Forgets every held frame; returns how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.heap.len();
        self.heap.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn released(queue: &mut DelayQueue, now: u64) -> Vec<(usize, u8)> {
        let mut out = Vec::new();
        queue.release_due(now, |dir, frame| out.push((dir, frame[0])));
        out
    }

    #[test]
    fn constant_delay_keeps_order_and_time() {
        let config = DelayConfig {
            delay_ns: 5 * MS,
            ..Default::default()
        };
        let mut q = DelayQueue::new(100, 1);
        for i in 0..10u8 {
            assert_eq!(
                q.admit(0, &config, u64::from(i) * 10, &[i]),
                Admission::Held
            );
        }
        assert_eq!(q.next_due(), Some(5 * MS));
        assert!(released(&mut q, 5 * MS - 1).is_empty());
        assert_eq!(
            released(&mut q, 5 * MS + 45),
            (0..5).map(|i| (0, i)).collect::<Vec<_>>()
        );
        assert_eq!(
            released(&mut q, 6 * MS),
            (5..10).map(|i| (0, i)).collect::<Vec<_>>()
        );
        assert!(q.is_empty());
    }

    #[test]
    fn equal_due_times_leave_in_arrival_order_across_directions() {
        let config = DelayConfig {
            delay_ns: MS,
            ..Default::default()
        };
        let mut q = DelayQueue::new(100, 1);
        for i in 0..50u8 {
            q.admit(usize::from(i % 2), &config, 0, &[i]);
        }
        let out = released(&mut q, MS);
        assert_eq!(
            out,
            (0..50).map(|i| (usize::from(i % 2), i)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn jitter_stays_within_bounds_and_keeps_the_mean() {
        let config = DelayConfig {
            delay_ns: 2 * MS,
            jitter_ns: MS,
            reorder: 0.0,
        };
        let mut q = DelayQueue::new(200_000, 7);
        let n = 100_000u64;
        for i in 0..n {
            q.admit(0, &config, 0, &i.to_le_bytes());
        }
        let (mut sum, mut min, mut max, mut last) = (0u128, u64::MAX, 0, 0);
        while let Some(due) = q.next_due() {
            assert!(due >= last, "released in due order");
            last = due;
            min = min.min(due);
            max = max.max(due);
            sum += u128::from(due) * q.release_due(due, |_, _| {}) as u128;
        }
        assert!(
            min >= MS && max <= 3 * MS,
            "delays within delay +- jitter: {min}..{max}"
        );
        let mean = sum as f64 / n as f64;
        // uniform over 2 ms: standard deviation 0.577 ms, of the mean 1.8 us; allow 5 sigma.
        assert!((mean - 2e6).abs() < 10e3, "mean delay {mean} ns");
    }

    #[test]
    fn jitter_wider_than_the_spacing_reorders() {
        let config = DelayConfig {
            delay_ns: MS,
            jitter_ns: MS,
            reorder: 0.0,
        };
        let mut q = DelayQueue::new(10_000, 3);
        for i in 0..1000u64 {
            q.admit(0, &config, i * 50_000, &i.to_le_bytes());
        }
        let mut order = Vec::new();
        q.release_due(u64::MAX, |_, f| {
            order.push(u64::from_le_bytes(f.try_into().unwrap()))
        });
        let inversions = order.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(inversions > 100, "{inversions} adjacent inversions");
    }

    #[test]
    fn reorder_sends_the_drawn_fraction_at_once() {
        let config = DelayConfig {
            delay_ns: 10 * MS,
            jitter_ns: 0,
            reorder: 0.2,
        };
        let mut q = DelayQueue::new(100_000, 11);
        let n = 50_000;
        let early = (0..n)
            .filter(|_| q.admit(0, &config, 0, &[0]) == Admission::Early)
            .count();
        // binomial(50000, 0.2): standard deviation 89; allow 5 sigma.
        assert!(
            (early as f64 - 10_000.0).abs() < 450.0,
            "{early} early of {n}"
        );
        assert_eq!(q.release_due(0, |_, _| {}), early);
        assert_eq!(q.len(), n - early);
    }

    #[test]
    fn overflow_drops_beyond_the_limit() {
        let config = DelayConfig {
            delay_ns: MS,
            ..Default::default()
        };
        let mut q = DelayQueue::new(3, 1);
        let admitted: Vec<_> = (0..5).map(|i| q.admit(0, &config, 0, &[i])).collect();
        assert_eq!(admitted[..3], [Admission::Held; 3]);
        assert_eq!(admitted[3..], [Admission::Overflow; 2]);
        assert_eq!(q.clear(), 3);
        assert_eq!(q.admit(0, &config, 0, &[9]), Admission::Held);
    }

    #[test]
    fn validation_names_the_bad_value_and_the_range() {
        let bad = |c: DelayConfig| c.validate().unwrap_err().to_string();
        assert_eq!(
            bad(DelayConfig {
                delay_ns: MAX_DELAY_NS + 1,
                ..Default::default()
            }),
            "delay_ns 10000000001 is out of range (0..=10000000000)"
        );
        assert_eq!(
            bad(DelayConfig {
                delay_ns: 1,
                jitter_ns: 2,
                reorder: 0.0
            }),
            "jitter_ns 2 is out of range (0..=delay_ns, here 1)"
        );
        assert_eq!(
            bad(DelayConfig {
                delay_ns: 1,
                jitter_ns: 0,
                reorder: 1.5
            }),
            "reorder 1.5 is out of range (0..=1)"
        );
        assert!(bad(DelayConfig {
            reorder: 0.5,
            ..Default::default()
        })
        .starts_with("reorder 0.5 needs a delay_ns"));
        assert!(DelayConfig {
            delay_ns: MS,
            jitter_ns: MS,
            reorder: 1.0
        }
        .validate()
        .is_ok());
        assert!(!DelayConfig::default().is_active());
    }
}
