//! BCN, Backward Congestion Notification (Bergamasco, Cisco, IEEE 802.1 contributions
//! 2005-2007; the parameters as ../shared/notes/simulation.md gives them): the congestion point
//! (CP) of an egress port and the rate regulator of a talker.
//!
//! CP: each arriving frame of a stream that runs a BCN regulator is sampled with probability
//! `pm`. On a sample, with Q the queue's buffer bytes at arrival: Qoff = Q - Qeq,
//! Qdelta = Q - Qold, Qold = Q, Fb = -(Qoff + w * Qdelta), quantised to a signed 6-bit value
//! over [-Fbmax, Fbmax], Fbmax = (2w + 1) Qeq. Above the severe-congestion threshold `qsc` the
//! feedback is the largest negative value ("BCNmax"). A negative value goes back to the talker
//! and names this CP; a positive one goes back only when the talker's regulator was last
//! slowed by this CP (BCN's rate-limiter tag: positive feedback only reaches frames that carry
//! the CP's identity).
//!
//! Regulator: inactive (the stream's configured rate) until its first negative feedback.
//! Fb < 0: r = max(r (1 - Gd |Fb|), min_rate), and the regulator remembers the CP. Fb > 0:
//! r = min(r + Gi Fb Ru, configured rate); at the configured rate it goes inactive. Additive
//! increase and multiplicative decrease: BCN converges to proportional, not max-min, fairness.
//!
//! The notification's way back is the same as QCN's (network.rs).

use serde::Deserialize;

use crate::rng::Rng;
use crate::units::BitsPerSec;

/// Largest quantised feedback magnitude (6-bit signed values).
pub const MAX_QUANTISED_FB: i8 = 63;

/// A BCN congestion point on an egress port, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BcnPointSpec {
    /// Equilibrium queue length Qeq, in bytes.
    pub qeq: u64,
    /// Weight of the queue's growth, w.
    pub w: f64,
    /// Probability that an arriving frame is sampled.
    pub pm: f64,
    /// Severe-congestion threshold Qsc in bytes: above it a sample sends the largest negative
    /// feedback.
    pub qsc: u64,
}

/// A BCN rate regulator of a stream, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BcnReactionSpec {
    /// Increase gain Gi.
    pub gi: f64,
    /// Decrease gain Gd.
    pub gd: f64,
    /// Rate unit Ru of an increase.
    pub ru: BitsPerSec,
    /// Smallest rate a decrease sets.
    pub min_rate: BitsPerSec,
}

/// The congestion point of one egress port.
#[derive(Clone, Debug)]
pub struct BcnPoint {
    spec: BcnPointSpec,
    fb_max: f64,
    rng: Rng,
    q_old: [u64; 8],
    /// Bytes of frames of BCN streams that arrived.
    pub arrived_bytes: u64,
    /// Frames sampled.
    pub samples: u64,
    /// Negative notifications sent.
    pub negative: u64,
    /// Positive notifications sent.
    pub positive: u64,
}

impl BcnPoint {
    /// The CP of `spec`, drawing its samples from `rng`.
    pub fn new(spec: &BcnPointSpec, rng: Rng) -> Self {
        BcnPoint {
            fb_max: (2.0 * spec.w + 1.0) * spec.qeq as f64,
            spec: spec.clone(),
            rng,
            q_old: [0; 8],
            arrived_bytes: 0,
            samples: 0,
            negative: 0,
            positive: 0,
        }
    }

    /// A frame of `bytes` of a BCN stream arrives at the queue of `class`, which holds `q`
    /// buffer bytes; the quantised feedback when it is sampled and the feedback is not zero.
    #[inline]
    pub fn arrive(&mut self, class: u8, bytes: u32, q: u64) -> Option<i8> {
        self.arrived_bytes += u64::from(bytes);
        if !self.rng.chance(self.spec.pm) {
            return None;
        }
        self.samples += 1;
        let c = usize::from(class);
        let q_off = q as f64 - self.spec.qeq as f64;
        let q_delta = q as f64 - self.q_old[c] as f64;
        self.q_old[c] = q;
        if q > self.spec.qsc {
            return Some(-MAX_QUANTISED_FB);
        }
        let fb = -(q_off + self.spec.w * q_delta) / self.fb_max * 64.0;
        let limit = f64::from(MAX_QUANTISED_FB);
        let quantised = fb.clamp(-limit, limit) as i8;
        (quantised != 0).then_some(quantised)
    }

    /// Counts a notification that was sent.
    pub fn sent(&mut self, fb: i8) {
        if fb < 0 {
            self.negative += 1;
        } else {
            self.positive += 1;
        }
    }
}

/// The rate regulator of one stream.
#[derive(Clone, Debug)]
pub struct BcnReaction {
    spec: BcnReactionSpec,
    line: f64,
    rate: f64,
    /// The CP (port index) whose negative feedback last slowed the stream; `None` while the
    /// regulator is inactive.
    pub throttled_by: Option<u32>,
    /// Notifications received.
    pub notifications: u64,
}

impl BcnReaction {
    /// The regulator of `spec` for a stream configured at `line`.
    pub fn new(spec: &BcnReactionSpec, line: BitsPerSec) -> Self {
        BcnReaction {
            spec: spec.clone(),
            line: line.0 as f64,
            rate: line.0 as f64,
            throttled_by: None,
            notifications: 0,
        }
    }

    /// Whether positive feedback from the CP `port` would reach this regulator (the frame
    /// carries that CP's tag).
    #[inline]
    pub fn takes_positive_from(&self, port: u32) -> bool {
        self.throttled_by == Some(port)
    }

    /// Feedback `fb` from the CP `port` arrives; the new rate.
    pub fn feedback(&mut self, fb: i8, port: u32) -> BitsPerSec {
        self.notifications += 1;
        let magnitude = f64::from(fb.unsigned_abs());
        if fb < 0 {
            self.rate =
                (self.rate * (1.0 - self.spec.gd * magnitude)).max(self.spec.min_rate.0 as f64);
            self.throttled_by = Some(port);
        } else if self.takes_positive_from(port) {
            self.rate =
                (self.rate + self.spec.gi * magnitude * self.spec.ru.0 as f64).min(self.line);
            if self.rate >= self.line {
                self.throttled_by = None;
            }
        }
        BitsPerSec(self.rate.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(pm: f64) -> BcnPoint {
        let spec = BcnPointSpec {
            qeq: 24_000,
            w: 2.0,
            pm,
            qsc: 240_000,
        };
        BcnPoint::new(&spec, Rng::new(7, 0))
    }

    #[test]
    fn the_cp_samples_with_probability_pm_and_signs_the_feedback() {
        let mut cp = point(0.1);
        for _ in 0..100_000 {
            cp.arrive(0, 1500, 0);
        }
        // Binomial(100,000, 0.1): standard deviation about 95.
        assert!(
            (cp.samples as f64 - 10_000.0).abs() < 400.0,
            "{} samples",
            cp.samples
        );
        assert_eq!(cp.arrived_bytes, 150_000_000);
        // Always sampled from here on: Q = 2 Qeq, grown by Qeq: Fb = -3/5 Fbmax -> -38.
        let mut cp = point(1.0);
        cp.q_old[0] = 24_000;
        assert_eq!(cp.arrive(0, 1500, 48_000), Some(-38));
        // An empty queue that was at Qeq: Fb = Qeq + 2 Qeq = 3/5 Fbmax -> +38.
        cp.q_old[0] = 24_000;
        assert_eq!(cp.arrive(0, 1500, 0), Some(38));
        // Above Qsc: the largest negative value, whatever the growth.
        assert_eq!(cp.arrive(0, 1500, 250_000), Some(-63));
        // At Qeq without growth: nothing to say.
        cp.q_old[0] = 24_000;
        assert_eq!(cp.arrive(0, 1500, 24_000), None);
    }

    #[test]
    fn the_regulator_decreases_multiplicatively_and_increases_additively_from_its_cp_only() {
        let spec = BcnReactionSpec {
            gi: 4.0,
            gd: 1.0 / 128.0,
            ru: BitsPerSec(1_000_000),
            min_rate: BitsPerSec(5_000_000),
        };
        let mut rp = BcnReaction::new(&spec, BitsPerSec(10_000_000_000));
        assert!(!rp.takes_positive_from(3), "inactive: no tag");
        assert_eq!(rp.feedback(-63, 3).0, 5_078_125_000, "r (1 - 63/128)");
        assert_eq!(
            rp.feedback(10, 4).0,
            5_078_125_000,
            "another CP's positive feedback"
        );
        assert_eq!(
            rp.feedback(10, 3).0,
            5_118_125_000,
            "Gi Fb Ru = 4 x 10 x 1 Mbit/s"
        );
        for _ in 0..200 {
            rp.feedback(63, 3);
        }
        assert_eq!(rp.feedback(63, 3).0, 10_000_000_000);
        assert_eq!(
            rp.throttled_by, None,
            "inactive again at the configured rate"
        );
    }
}
