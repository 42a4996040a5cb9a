//! QCN, IEEE 802.1Qau-2010 congestion notification (Alizadeh et al., "Data Center Transport
//! Mechanisms: Congestion Control Theory and IEEE Standardization", Allerton 2008): the
//! congestion point (CP) of an egress port and the reaction point (RP) of a talker.
//!
//! CP: every arriving frame of a stream that runs an RP (a congestion-notification stream) is
//! counted against the sampling interval of its class's queue; when the interval is used up
//! the frame is sampled with Q the queue's buffer bytes at arrival: Qoff = Q - Qeq,
//! Qdelta = Q - Qold, Qold = Q, Fb = -(Qoff + w * Qdelta). Only negative Fb is sent back:
//! |Fb| is quantised to 6 bits over [0, Fbmax], Fbmax = (2w + 1) Qeq, and a notification with
//! a quantised value of at least 1 goes to the sampled frame's talker. The next sampling
//! interval follows the quantised |Fb| (`SAMPLE_INTERVALS`), 150 KB when there is no
//! feedback, times a random factor in [1 - jitter, 1 + jitter] (jitter 0: exactly the table,
//! so the number of samples follows the formula exactly). Without it, constant-rate sources
//! lock in phase with the sampling, one of them is sampled more than its share of the bytes,
//! and identical sources settle at unequal rates.
//!
//! RP: a rate limiter per stream, inactive (the stream's configured rate) until its first
//! notification. On a notification of quantised value q: TR = CR, CR = CR (1 - Gd q) (at
//! most halving, since Gd 63 < 1/2), at least the minimum rate; the byte counter and timer
//! restart. Each time the byte counter counts `byte_counter` bytes sent, or the timer runs
//! `timer`, a cycle of that counter ends: while both counters have ended at most
//! `fast_recovery` cycles, fast recovery CR = (CR + TR) / 2; when one of them has ended more,
//! active increase TR += R_AI first; when both have, hyper-active increase TR += i R_HAI with
//! i = min(cycles) - fast_recovery. TR and CR never exceed the configured rate; the limiter
//! goes inactive when CR reaches it.
//!
//! Parameters are data (`QcnPointSpec`, `QcnReactionSpec`); their defaults and sources are in
//! python/frerlab/sim/scenario.py (`QcnPoint`, `QcnReaction`) and docs/congestion.md.
//!
//! The notification's way back is modelled in network.rs: a 64-byte frame crossing, in
//! reverse, the links the sampled frame took from its talker to the CP.

use serde::Deserialize;

use crate::rng::Rng;
use crate::units::{BitsPerSec, SimTime};

/// Sampling interval in bytes by quantised |Fb| / 8 (IEEE 802.1Qau, the CP's sampling table:
/// 150 KB at no congestion down to 18.5 KB at the largest feedback, as
/// ../shared/notes/simulation.md gives it).
pub const SAMPLE_INTERVALS: [u64; 8] = [
    150_000, 75_000, 50_000, 37_500, 30_000, 25_000, 21_500, 18_500,
];

/// Largest quantised feedback (6 bits).
pub const MAX_QUANTISED_FB: u8 = 63;

/// A congestion point on an egress port, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QcnPointSpec {
    /// Equilibrium queue length Qeq, in bytes.
    pub qeq: u64,
    /// Weight of the queue's growth, w.
    pub w: f64,
    /// Each sampling interval is the table's times a factor drawn uniformly from
    /// [1 - jitter, 1 + jitter]; 0 samples exactly by the table.
    pub jitter: f64,
}

/// A reaction point of a stream, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QcnReactionSpec {
    /// Decrease gain Gd.
    pub gd: f64,
    /// Bytes sent per byte-counter cycle.
    pub byte_counter: u64,
    /// Length of a timer cycle.
    pub timer: SimTime,
    /// Cycles of fast recovery.
    pub fast_recovery: u32,
    /// Active increase step R_AI.
    pub active_increase: BitsPerSec,
    /// Hyper-active increase step R_HAI.
    pub hyper_increase: BitsPerSec,
    /// Smallest rate a notification can set.
    pub min_rate: BitsPerSec,
}

/// The congestion point of one egress port.
#[derive(Clone, Debug)]
pub struct CongestionPoint {
    qeq: f64,
    w: f64,
    jitter: f64,
    fb_max: f64,
    rng: Rng,
    /// Per class: bytes still to arrive before the next sample, and Qold.
    to_sample: [u64; 8],
    q_old: [u64; 8],
    /// Bytes of CN frames that arrived.
    pub arrived_bytes: u64,
    /// Frames sampled.
    pub samples: u64,
    /// Notifications sent.
    pub notifications: u64,
}

impl CongestionPoint {
    /// The CP of `spec`, drawing its intervals from `rng`, its first sample after about
    /// 150 KB.
    pub fn new(spec: &QcnPointSpec, rng: Rng) -> Self {
        let qeq = spec.qeq as f64;
        let mut cp = CongestionPoint {
            qeq,
            w: spec.w,
            jitter: spec.jitter,
            fb_max: (2.0 * spec.w + 1.0) * qeq,
            rng,
            to_sample: [0; 8],
            q_old: [0; 8],
            arrived_bytes: 0,
            samples: 0,
            notifications: 0,
        };
        for c in 0..8 {
            cp.to_sample[c] = cp.interval(0);
        }
        cp
    }

    /// The next sampling interval after a quantised |Fb| of `quantised`.
    fn interval(&mut self, quantised: u8) -> u64 {
        let base = SAMPLE_INTERVALS[usize::from(quantised / 8)];
        if self.jitter == 0.0 {
            return base;
        }
        let factor = 1.0 - self.jitter + 2.0 * self.jitter * self.rng.uniform();
        (base as f64 * factor).round() as u64
    }

    /// A CN frame of `bytes` arrives at the queue of `class`, which holds `q` buffer bytes; the
    /// quantised |Fb| to send back, if it is sampled and the feedback is negative.
    #[inline]
    pub fn arrive(&mut self, class: u8, bytes: u32, q: u64) -> Option<u8> {
        let c = usize::from(class);
        let bytes = u64::from(bytes);
        self.arrived_bytes += bytes;
        if self.to_sample[c] > bytes {
            self.to_sample[c] -= bytes;
            return None;
        }
        self.samples += 1;
        let q_off = q as f64 - self.qeq;
        let q_delta = q as f64 - self.q_old[c] as f64;
        self.q_old[c] = q;
        let fb = -(q_off + self.w * q_delta);
        let quantised = if fb < 0.0 {
            ((-fb / self.fb_max * 64.0) as u64).min(u64::from(MAX_QUANTISED_FB)) as u8
        } else {
            0
        };
        self.to_sample[c] = self.interval(quantised);
        if quantised == 0 {
            return None;
        }
        self.notifications += 1;
        Some(quantised)
    }
}

/// The reaction point (rate limiter) of one stream.
#[derive(Clone, Debug)]
pub struct ReactionPoint {
    spec: QcnReactionSpec,
    /// The stream's configured rate: the limiter's ceiling.
    line: f64,
    /// Current rate CR and target rate TR, in bit/s.
    current: f64,
    target: f64,
    active: bool,
    bytes: u64,
    byte_cycles: u32,
    timer_cycles: u32,
    /// When the running timer cycle ends (`NEVER` while inactive).
    pub timer_due: SimTime,
    /// Notifications received.
    pub notifications: u64,
}

impl ReactionPoint {
    /// The RP of `spec` for a stream configured at `line`.
    pub fn new(spec: &QcnReactionSpec, line: BitsPerSec) -> Self {
        ReactionPoint {
            spec: spec.clone(),
            line: line.0 as f64,
            current: line.0 as f64,
            target: line.0 as f64,
            active: false,
            bytes: 0,
            byte_cycles: 0,
            timer_cycles: 0,
            timer_due: SimTime::NEVER,
            notifications: 0,
        }
    }

    /// The current rate.
    pub fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.current.round() as u64)
    }

    /// A notification of quantised |Fb| `q` arrives at `now`: decrease; the new rate.
    pub fn notify(&mut self, q: u8, now: SimTime) -> BitsPerSec {
        self.notifications += 1;
        self.active = true;
        self.target = self.current;
        let factor = 1.0 - self.spec.gd * f64::from(q);
        self.current = (self.current * factor).max(self.spec.min_rate.0 as f64);
        self.bytes = 0;
        self.byte_cycles = 0;
        self.timer_cycles = 0;
        self.timer_due = now.plus(self.spec.timer);
        self.rate()
    }

    /// The stream sent a frame of `bytes`; the new rate when a byte-counter cycle ended.
    #[inline]
    pub fn sent(&mut self, bytes: u32) -> Option<BitsPerSec> {
        if !self.active {
            return None;
        }
        self.bytes += u64::from(bytes);
        if self.bytes < self.spec.byte_counter {
            return None;
        }
        self.bytes -= self.spec.byte_counter;
        self.byte_cycles += 1;
        Some(self.increase())
    }

    /// The timer cycle ending at `now` ended; the new rate.
    pub fn timer(&mut self, now: SimTime) -> BitsPerSec {
        self.timer_cycles += 1;
        self.timer_due = now.plus(self.spec.timer);
        self.increase()
    }

    fn increase(&mut self) -> BitsPerSec {
        let fr = self.spec.fast_recovery;
        let (b, t) = (self.byte_cycles, self.timer_cycles);
        if b > fr && t > fr {
            self.target += f64::from(b.min(t) - fr) * self.spec.hyper_increase.0 as f64;
        } else if b > fr || t > fr {
            self.target += self.spec.active_increase.0 as f64;
        }
        self.target = self.target.min(self.line);
        self.current = ((self.current + self.target) / 2.0).min(self.line);
        if self.current >= self.line {
            self.active = false;
            self.timer_due = SimTime::NEVER;
        }
        self.rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaction() -> ReactionPoint {
        ReactionPoint::new(
            &QcnReactionSpec {
                gd: 1.0 / 128.0,
                byte_counter: 150_000,
                timer: SimTime(15_000_000_000),
                fast_recovery: 5,
                active_increase: BitsPerSec(5_000_000),
                hyper_increase: BitsPerSec(50_000_000),
                min_rate: BitsPerSec(5_000_000),
            },
            BitsPerSec(10_000_000_000),
        )
    }

    #[test]
    fn the_cp_samples_every_150_kb_without_congestion_and_feeds_back_only_when_negative() {
        let spec = QcnPointSpec {
            qeq: 26_000,
            w: 2.0,
            jitter: 0.0,
        };
        let mut cp = CongestionPoint::new(&spec, Rng::new(1, 0));
        let sent: Vec<Option<u8>> = (0..300).map(|_| cp.arrive(0, 1500, 0)).collect();
        assert_eq!(cp.samples, 3, "at 150, 300 and 450 KB");
        assert!(sent.iter().all(Option::is_none));
        // Q = 2 Qeq, growing by Qeq since the last sample: Fb = -(Qeq + 2 Qeq) = -3/5 Fbmax.
        let mut cp = CongestionPoint::new(&spec, Rng::new(1, 0));
        cp.arrive(0, 1500, 26_000);
        cp.q_old[0] = 26_000;
        cp.to_sample[0] = 1;
        assert_eq!(cp.arrive(0, 1500, 52_000), Some(38));
        assert_eq!(cp.to_sample[0], SAMPLE_INTERVALS[4]);
    }

    #[test]
    fn the_rp_decreases_then_recovers_halfway_then_increases() {
        let mut rp = reaction();
        assert_eq!(rp.sent(1500), None, "inactive before any notification");
        assert_eq!(rp.notify(63, SimTime(0)).0, 5_078_125_000);
        // Five fast-recovery cycles halve the distance to TR each time.
        for _ in 0..100 {
            rp.sent(1500);
        }
        assert_eq!(rp.rate().0, 7_539_062_500);
        for _ in 0..400 {
            rp.sent(1500);
        }
        // Fast recovery ends at 750 KB, 1/32 of the cut left (TR is the 10 G before the cut).
        assert_eq!(rp.rate().0, 9_846_191_406);
        // Active increase caps at the configured rate and deactivates the limiter.
        for _ in 0..10_000 {
            rp.sent(1500);
        }
        assert_eq!(rp.rate().0, 10_000_000_000);
        assert_eq!(rp.timer_due, SimTime::NEVER);
    }
}
