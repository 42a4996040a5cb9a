//! When each frame is due: constant rate, on/off bursts, or Poisson arrivals.
//!
//! A [`Schedule`] gives the due time of frame k as ns after the start. Times come from the
//! frame index (not by adding gaps), so a constant rate does not drift by rounding.

use serde::Deserialize;

/// The shape of the offered traffic; every pattern averages the requested rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    /// Equal gaps of 1/rate.
    Constant,
    /// `frames` frames back to back (on), then silence (off) until the next burst is due at
    /// `frames`/rate after the previous one.
    Bursts {
        /// Frames per burst (at least 1).
        frames: u32,
    },
    /// Exponentially distributed gaps with mean 1/rate (a Poisson process), reproducible
    /// from `seed`.
    Poisson {
        /// Seed of the pseudo-random gaps.
        seed: u64,
    },
}

/// Due times of successive frames.
#[derive(Debug, Clone)]
pub struct Schedule {
    pattern: Pattern,
    gap_ns: Option<f64>,
    index: u64,
    poisson_time_ns: f64,
    rng: u64,
}

impl Schedule {
    /// A schedule of `pattern` at `frames_per_sec`, or back to back if `None`.
    ///
    /// # Errors
    /// When a burst has 0 frames.
    pub fn new(pattern: Pattern, frames_per_sec: Option<f64>) -> Result<Self, String> {
        if let Pattern::Bursts { frames: 0 } = pattern {
            return Err("burst of 0 frames is not valid (1 or more frames per burst)".into());
        }
        let rng = match pattern {
            Pattern::Poisson { seed } => seed,
            _ => 0,
        };
        Ok(Schedule {
            pattern,
            gap_ns: frames_per_sec.map(|f| 1e9 / f),
            index: 0,
            poisson_time_ns: 0.0,
            rng,
        })
    }

    /// A uniform number in (0, 1] (SplitMix64).
    fn uniform(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Due time of the next frame in ns after the start (0 for every frame when unpaced).
    pub fn next_due_ns(&mut self) -> u64 {
        let k = self.index;
        self.index += 1;
        let Some(gap) = self.gap_ns else { return 0 };
        let due = match self.pattern {
            Pattern::Constant => k as f64 * gap,
            Pattern::Bursts { frames } => (k / u64::from(frames) * u64::from(frames)) as f64 * gap,
            Pattern::Poisson { .. } => {
                if k > 0 {
                    self.poisson_time_ns += -self.uniform().ln() * gap;
                }
                self.poisson_time_ns
            }
        };
        due as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_and_bursts() {
        let mut c = Schedule::new(Pattern::Constant, Some(1000.0)).unwrap();
        let times: Vec<u64> = (0..3).map(|_| c.next_due_ns()).collect();
        assert_eq!(times, [0, 1_000_000, 2_000_000]);
        let mut b = Schedule::new(Pattern::Bursts { frames: 3 }, Some(1000.0)).unwrap();
        let times: Vec<u64> = (0..7).map(|_| b.next_due_ns()).collect();
        assert_eq!(times, [0, 0, 0, 3_000_000, 3_000_000, 3_000_000, 6_000_000]);
        assert!(Schedule::new(Pattern::Bursts { frames: 0 }, None)
            .unwrap_err()
            .contains("0 frames"));
    }

    #[test]
    fn poisson_mean_rate_and_spread() {
        let mut p = Schedule::new(Pattern::Poisson { seed: 42 }, Some(1e6)).unwrap();
        let n = 200_000;
        let times: Vec<u64> = (0..n).map(|_| p.next_due_ns()).collect();
        let mean_gap = times[n - 1] as f64 / (n - 1) as f64;
        assert!((mean_gap - 1000.0).abs() < 10.0, "mean gap {mean_gap}");
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let var = gaps.iter().map(|g| (g - mean_gap).powi(2)).sum::<f64>() / gaps.len() as f64;
        // Exponential gaps: standard deviation equals the mean.
        assert!((var.sqrt() / mean_gap - 1.0).abs() < 0.02);
    }

    #[test]
    fn unpaced_is_always_due() {
        let mut s = Schedule::new(Pattern::Constant, None).unwrap();
        assert_eq!((s.next_due_ns(), s.next_due_ns()), (0, 0));
    }
}
