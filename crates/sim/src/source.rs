//! Traffic sources: when a talker sends its next frame and how long that frame is. Constant
//! rate, Poisson and on/off bursts, any frame size distribution, offered load counted at L1
//! (with the 20 bytes of preamble and gap) or L2.
//!
//! The rate is a field read at every departure, so a rate limiter (the reaction point of
//! BCN/FECN/QCN congestion notification) can change it during a run.

use crate::rng::Rng;
use crate::spec::{FrameSizeSpec, PatternSpec, StreamSpec};
use crate::units::{BitsPerSec, SimTime, ETHERNET_L1_OVERHEAD, PS_PER_SEC};

/// The departure process of one stream.
#[derive(Clone, Debug)]
pub struct Source {
    frame_size: FrameSizeSpec,
    pattern: PatternSpec,
    /// Current sending rate (peak rate during bursts).
    pub rate: BitsPerSec,
    rate_counts_l1: bool,
    remaining: Option<u64>,
    stop: SimTime,
    /// Time of the next departure in picoseconds, kept fractional so the long-run rate is exact.
    next_ps: f64,
    /// Start of the current burst (on/off only).
    burst_start_ps: f64,
    rng: Rng,
}

impl Source {
    /// The source of `spec`, stopping at `stop`, drawing from `rng`.
    pub fn new(spec: &StreamSpec, stop: SimTime, rng: Rng) -> Self {
        Source {
            frame_size: spec.frame_size.clone(),
            pattern: spec.pattern.clone(),
            rate: spec.rate,
            rate_counts_l1: spec.rate_counts_l1,
            remaining: spec.count,
            stop,
            next_ps: spec.start.0 as f64,
            burst_start_ps: spec.start.0 as f64,
            rng,
        }
    }

    /// The time of the first departure, if any.
    pub fn first_departure(&self) -> Option<SimTime> {
        let t = SimTime(self.next_ps as u64);
        (t < self.stop && self.remaining != Some(0)).then_some(t)
    }

    fn mean_frame_bits(&self) -> f64 {
        let bytes = match self.frame_size {
            FrameSizeSpec::Fixed { bytes } => f64::from(bytes),
            FrameSizeSpec::Uniform { min, max } => (f64::from(min) + f64::from(max)) / 2.0,
            FrameSizeSpec::Exponential { mean } => mean,
        };
        let overhead = if self.rate_counts_l1 {
            ETHERNET_L1_OVERHEAD.0 as f64
        } else {
            0.0
        };
        (bytes + overhead) * 8.0
    }

    /// Draws the size of the frame departing now, in bytes.
    #[inline]
    pub fn frame_bytes(&mut self) -> u32 {
        match self.frame_size {
            FrameSizeSpec::Fixed { bytes } => bytes,
            FrameSizeSpec::Uniform { min, max } => {
                min + (self.rng.next_u64() % u64::from(max - min + 1)) as u32
            }
            FrameSizeSpec::Exponential { mean } => {
                self.rng.exponential(mean).round().max(1.0) as u32
            }
        }
    }

    /// Advances past the departure that just happened; the time of the next one, if any.
    #[inline]
    pub fn next_departure(&mut self) -> Option<SimTime> {
        if let Some(n) = self.remaining.as_mut() {
            *n -= 1;
            if *n == 0 {
                return None;
            }
        }
        let gap = self.mean_frame_bits() * PS_PER_SEC as f64 / self.rate.0 as f64;
        match self.pattern {
            PatternSpec::Constant => self.next_ps += gap,
            PatternSpec::Poisson => self.next_ps += self.rng.exponential(gap),
            PatternSpec::OnOff { on, off } => {
                self.next_ps += gap;
                let period = (on.0 + off.0) as f64;
                while self.next_ps >= self.burst_start_ps + on.0 as f64 {
                    self.burst_start_ps += period;
                    self.next_ps = self.next_ps.max(self.burst_start_ps);
                }
            }
        }
        let t = SimTime(self.next_ps.round() as u64);
        (t < self.stop).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::StreamSpec;

    fn spec(pattern: PatternSpec, l1: bool) -> StreamSpec {
        StreamSpec {
            name: "s".into(),
            source: 0,
            destination: 1,
            class: 0,
            frame_size: FrameSizeSpec::Fixed { bytes: 64 },
            pattern,
            rate: BitsPerSec(1_000_000_000),
            rate_counts_l1: l1,
            start: SimTime::ZERO,
            count: None,
            hops: vec![],
            first_hops: vec![],
            generation: None,
            rtag_bytes: 0,
            recovery: vec![],
            filters: vec![],
            qcn: None,
            bcn: None,
            fecn: None,
        }
    }

    fn departures(mut source: Source) -> Vec<u64> {
        let mut times = vec![source.first_departure().unwrap().0];
        while let Some(t) = source.next_departure() {
            times.push(t.0);
        }
        times
    }

    #[test]
    fn l1_line_rate_of_64_byte_frames_is_one_frame_per_672_ns() {
        let s = Source::new(
            &spec(PatternSpec::Constant, true),
            SimTime::from_ns(6720),
            Rng::new(1, 0),
        );
        let times = departures(s);
        assert_eq!(times.len(), 10);
        assert_eq!(times[1], 672_000);
    }

    #[test]
    fn l2_rate_counts_only_the_frame() {
        let s = Source::new(
            &spec(PatternSpec::Constant, false),
            SimTime::from_ns(1024),
            Rng::new(1, 0),
        );
        assert_eq!(departures(s), vec![0, 512_000]);
    }

    #[test]
    fn on_off_sends_only_during_bursts() {
        let pattern = PatternSpec::OnOff {
            on: SimTime::from_ns(1344),
            off: SimTime::from_ns(2000),
        };
        let s = Source::new(&spec(pattern, true), SimTime::from_ns(6000), Rng::new(1, 0));
        let ns: Vec<u64> = departures(s).iter().map(|t| t / 1000).collect();
        assert_eq!(ns, vec![0, 672, 3344, 4016]);
    }
}
