//! The event core: a list of future events ordered by (time, insertion counter), so events at
//! the same time run in the order they were scheduled and every run is deterministic. It holds
//! no models and no global state; a simulation owns one `Scheduler` and passes it explicitly.
//!
//! The list is a 4-ary min-heap in a `Vec` (half the depth of a binary heap, and the four
//! children of a slot are adjacent in memory), moving a hole instead of swapping entries.

use crate::units::SimTime;

const ARITY: usize = 4;

#[derive(Clone, Copy)]
struct Entry<E> {
    time: SimTime,
    order: u64,
    event: E,
}

impl<E> Entry<E> {
    /// (time, order) compared as one 128-bit number: no data-dependent branch.
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.time.0) << 64) | u128::from(self.order)
    }

    #[inline]
    fn before(&self, other: &Self) -> bool {
        self.key() < other.key()
    }
}

/// A time-ordered list of events of type `E` and the current simulated time.
pub struct Scheduler<E> {
    heap: Vec<Entry<E>>,
    now: SimTime,
    scheduled: u64,
    processed: u64,
}

impl<E: Copy> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Scheduler<E> {
    /// An empty scheduler at time zero.
    pub fn new() -> Self {
        Scheduler {
            heap: Vec::with_capacity(1024),
            now: SimTime::ZERO,
            scheduled: 0,
            processed: 0,
        }
    }

    /// The time of the event being processed (or of the last one).
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `time`, which must not be in the past.
    #[inline]
    pub fn at(&mut self, time: SimTime, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let entry = Entry {
            time,
            order: self.scheduled,
            event,
        };
        self.scheduled += 1;
        let mut hole = self.heap.len();
        self.heap.push(entry);
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if !entry.before(&self.heap[parent]) {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = entry;
    }

    /// Removes the earliest event, advances the clock to its time and returns it.
    #[inline]
    pub fn pop(&mut self) -> Option<E> {
        let last = self.heap.pop()?;
        let top = if self.heap.is_empty() {
            last
        } else {
            let top = self.heap[0];
            let len = self.heap.len();
            let mut hole = 0;
            loop {
                let first = hole * ARITY + 1;
                if first >= len {
                    break;
                }
                let mut best = first;
                for child in first + 1..(first + ARITY).min(len) {
                    if self.heap[child].before(&self.heap[best]) {
                        best = child;
                    }
                }
                if !self.heap[best].before(&last) {
                    break;
                }
                self.heap[hole] = self.heap[best];
                hole = best;
            }
            self.heap[hole] = last;
            top
        };
        self.now = top.time;
        self.processed += 1;
        Some(top.event)
    }

    /// How many events have been popped so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn events_come_out_in_time_order_and_ties_in_insertion_order() {
        let mut s = Scheduler::new();
        s.at(SimTime(30), "c");
        s.at(SimTime(10), "a1");
        s.at(SimTime(20), "b");
        s.at(SimTime(10), "a2");
        s.at(SimTime(10), "a3");
        let mut out = Vec::new();
        while let Some(e) = s.pop() {
            out.push((s.now().0, e));
        }
        assert_eq!(
            out,
            vec![(10, "a1"), (10, "a2"), (10, "a3"), (20, "b"), (30, "c")]
        );
        assert_eq!(s.processed(), 5);
    }

    #[test]
    fn interleaved_random_pushes_and_pops_come_out_sorted() {
        let mut rng = Rng::new(3, 0);
        let mut s = Scheduler::new();
        let mut popped = Vec::new();
        for i in 0..20_000u64 {
            let t = s.now().0 + rng.next_u64() % 50;
            s.at(SimTime(t), i);
            if rng.chance(0.4) {
                let e = s.pop().unwrap();
                popped.push((s.now().0, e));
            }
        }
        while let Some(e) = s.pop() {
            popped.push((s.now().0, e));
        }
        assert_eq!(popped.len(), 20_000);
        // Time never goes back, and equal times keep insertion order.
        assert!(popped
            .windows(2)
            .all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
    }
}
