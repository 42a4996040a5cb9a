//! FECN, Forward Explicit Congestion Notification (Jiang, Jain, So-In, IEEE 802.1au, 2007; an
//! Ethernet form of ATM's ERICA; the formulas and parameters as ../shared/notes/simulation.md
//! gives them): the advertised rate of an egress port and the probing talker.
//!
//! Talker: every `interval` T it sends a rate-discovery probe (a 64-byte frame) carrying an
//! unlimited rate along the stream's path, in band, queueing behind data. Each port with a
//! FECN point writes min(carried rate, its advertised rate) into it when it transmits it (the
//! published pseudo-code stamps at "Transmit Packet"), so the rate is the port's when the probe
//! leaves its queue, not when it joined it; the listener reflects
//! it, and when it is back the talker sends at min(its configured rate, the returned rate).
//! A talker starts at its configured rate before its first probe returns (fast start).
//!
//! Port, every T: with B the bits that arrived in the interval (on the wire: the per-frame
//! overhead counted, as in the port's rate), C the port's current rate and
//! q its queued bytes, rho = B / (T C f(q)) and the new rate is min(C, r / rho) (when nothing
//! arrived: C if the queue is empty, else r unchanged); it may grow at most by the factor
//! `max_increase` per interval, and is averaged r = alpha new + (1 - alpha) r. The queue
//! control f is the ERICA+-style hyperbola the notes reconstruct:
//! f(q) = a Qeq / ((a - 1) q + Qeq) for q <= Qeq, max(c, b Qeq / ((b - 1) q + Qeq)) above.
//! The first advertised rate is C / N0.
//!
//! The port uses as C its current rate for the share of the interval it was not paused (at least
//! C / N0): where the egress's service rate drops (an output-generated hotspot) the switch knows
//! the new rate, and where PAUSE stops it, it sends less (the published pseudo-code estimates the
//! capacity from what the port sent; with PAUSE on, taking the link rate instead makes every
//! paused port look underloaded, and FECN never cuts the flows PAUSE holds back). The probe's way back from the
//! listener is a fixed delay, as QCN's notifications (network.rs).

use serde::Deserialize;

use crate::units::SimTime;

/// Probes carry "no limit yet" as this rate (the slides' rate = -1).
pub const UNLIMITED: u64 = u64::MAX;

/// A FECN point on an egress port, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FecnPointSpec {
    /// Measurement interval T.
    pub interval: SimTime,
    /// Equilibrium queue length Qeq, in bytes.
    pub qeq: u64,
    /// Queue-control parameters a (> 1), b (> 1) and the floor c (0 < c <= 1).
    pub a: f64,
    /// See `a`.
    pub b: f64,
    /// See `a`.
    pub c: f64,
    /// Weight of the new rate in the exponential average.
    pub alpha: f64,
    /// The first advertised rate is the port's rate divided by this.
    pub n0: u32,
    /// The advertised rate grows at most by this factor per interval.
    pub max_increase: f64,
}

/// A probing talker, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FecnSourceSpec {
    /// Probe period T.
    pub interval: SimTime,
}

/// The advertised rate of one egress port.
#[derive(Clone, Debug)]
pub struct FecnPoint {
    spec: FecnPointSpec,
    /// Advertised rate, in bit/s.
    pub advertised: f64,
    bits: u64,
    /// Probes that passed.
    pub probes: u64,
    /// Smallest advertised rate of the run.
    pub min_advertised: f64,
    /// The port's paused time, in total, at the last interval's end (picoseconds).
    paused_ps: u64,
}

impl FecnPoint {
    /// The point of `spec` on a port of `rate` bit/s.
    pub fn new(spec: &FecnPointSpec, rate: u64) -> Self {
        let first = rate as f64 / f64::from(spec.n0);
        FecnPoint {
            spec: spec.clone(),
            advertised: first,
            bits: 0,
            probes: 0,
            min_advertised: first,
            paused_ps: 0,
        }
    }

    /// The measurement interval T.
    pub fn interval(&self) -> SimTime {
        self.spec.interval
    }

    /// A frame taking `wire_bytes` on the port's wire (its overhead included, as in the
    /// port's rate) arrived at the port.
    #[inline]
    pub fn arrive(&mut self, wire_bytes: u64) {
        self.bits += 8 * wire_bytes;
    }

    /// A probe carrying `rate` starts on the port's wire: the rate it carries on.
    pub fn stamp(&mut self, rate: u64) -> u64 {
        self.probes += 1;
        rate.min(self.advertised.round() as u64)
    }

    /// The queue control f(q) for `q` queued bytes.
    fn queue_factor(&self, q: u64) -> f64 {
        let (q, qeq) = (q as f64, self.spec.qeq as f64);
        let s = &self.spec;
        if q <= qeq {
            s.a * qeq / ((s.a - 1.0) * q + qeq)
        } else {
            (s.b * qeq / ((s.b - 1.0) * q + qeq)).max(s.c)
        }
    }

    /// The capacity of a port of `rate` bit/s over the interval that ends, when it has been
    /// paused `paused_ps` in total so far: its rate for the share of the interval it was not
    /// paused, at least rate / N0 (a port paused throughout would otherwise advertise 0, from
    /// which no bounded increase grows).
    pub fn capacity(&mut self, rate: u64, paused_ps: u64) -> u64 {
        let paused = paused_ps - self.paused_ps;
        self.paused_ps = paused_ps;
        let share = 1.0 - (paused as f64 / self.spec.interval.0 as f64).min(1.0);
        ((rate as f64 * share) as u64).max(rate / u64::from(self.spec.n0))
    }

    /// The interval ends with `q` bytes queued on a port now sending at `capacity` bit/s:
    /// the next advertised rate.
    pub fn tick(&mut self, q: u64, capacity: u64) {
        let capacity = capacity as f64;
        let old = self.advertised;
        let fresh = if self.bits == 0 {
            if q == 0 {
                capacity
            } else {
                old
            }
        } else {
            let seconds = self.spec.interval.as_secs_f64();
            let rho = self.bits as f64 / (seconds * capacity * self.queue_factor(q));
            (old / rho).min(capacity)
        };
        let fresh = fresh.min(old * self.spec.max_increase);
        self.advertised = self.spec.alpha * fresh + (1.0 - self.spec.alpha) * old;
        self.min_advertised = self.min_advertised.min(self.advertised);
        self.bits = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBIT: u64 = 1_000_000_000;

    fn point() -> FecnPoint {
        FecnPoint::new(
            &FecnPointSpec {
                interval: SimTime(1_000_000_000),
                qeq: 24_000,
                a: 1.1,
                b: 1.002,
                c: 0.1,
                alpha: 0.5,
                n0: 200,
                max_increase: 2.0,
            },
            10 * GBIT,
        )
    }

    #[test]
    fn the_queue_control_is_a_above_an_empty_queue_one_at_qeq_and_never_below_c() {
        let p = point();
        assert!((p.queue_factor(0) - 1.1).abs() < 1e-12);
        assert!((p.queue_factor(24_000) - 1.0).abs() < 1e-12);
        assert!(p.queue_factor(12_000) > 1.0 && p.queue_factor(48_000) < 1.0);
        assert_eq!(p.queue_factor(u64::MAX / 4), 0.1);
    }

    #[test]
    fn the_advertised_rate_starts_at_c_over_n0_and_converges_to_the_fair_share() {
        let mut p = point();
        assert_eq!(p.advertised, 50_000_000.0, "10 Gbit/s / 200");
        // Four greedy flows each sending at the advertised rate, the queue at Qeq (f = 1):
        // the rate settles where 4 r = C, within the bounded increase per interval.
        for _ in 0..200 {
            let bits_per_flow = (p.advertised * 0.001).round() as u64;
            p.arrive(4 * bits_per_flow / 8);
            p.tick(24_000, 10 * GBIT);
        }
        assert!((p.advertised - 2.5e9).abs() < 1e6, "{}", p.advertised);
        assert!(p.stamp(UNLIMITED).abs_diff(2_500_000_000) < 1_000);
        assert_eq!(p.stamp(1_000), 1_000);
        assert_eq!(p.probes, 2);
    }

    #[test]
    fn a_paused_share_of_the_interval_is_not_capacity() {
        let mut p = point();
        assert_eq!(p.capacity(10 * GBIT, 0), 10 * GBIT);
        assert_eq!(
            p.capacity(10 * GBIT, 250_000_000),
            7_500_000_000,
            "a quarter of 1 ms"
        );
        assert_eq!(
            p.capacity(10 * GBIT, 250_000_000),
            10 * GBIT,
            "no more since"
        );
        assert_eq!(
            p.capacity(10 * GBIT, 5_000_000_000),
            50_000_000,
            "throughout: C / N0"
        );
    }

    #[test]
    fn an_idle_port_advertises_its_rate_and_a_busy_port_without_arrivals_keeps_its_rate() {
        let mut p = point();
        p.tick(3_000, 10 * GBIT);
        assert_eq!(
            p.advertised, 50_000_000.0,
            "queue not empty, nothing arrived"
        );
        // Doubling at most per interval from 50 Mbit/s, then halving the distance each time.
        for _ in 0..40 {
            p.tick(0, 10 * GBIT);
        }
        assert!((p.advertised - 1e10).abs() < 1e7, "{}", p.advertised);
    }
}
