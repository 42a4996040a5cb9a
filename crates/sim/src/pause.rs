//! IEEE 802.3x PAUSE (IEEE 802.3 Annex 31B, MAC Control PAUSE), per link direction.
//!
//! Where the buffer is measured: PAUSE on the direction U -> N of a link makes N count, per
//! ingress, the buffer bytes (whole cells) of the frames that arrived over that link and still
//! wait in any of N's egress queues (ingress accounting, as switches do per ingress port; a
//! frame replicated onto two egress ports counts twice, like the buffer it holds). Frames
//! still in flight, in N's processing delay, or delivered to N as the listener are not counted.
//!
//! When a frame from U is queued and the count is above `xoff`, N sends PAUSE with `quanta`
//! (units of 512 bit times at the link's rate, 1..=65535) unless a pause it asked for is still
//! running; when a frame leaves and the count is at or below `xon` while that pause runs, N
//! sends PAUSE with quanta 0 (XON). N renews a pause it asked for when half of its time has
//! passed and the count is still above `xon` (switches refresh PAUSE before it runs out, so the
//! sender never resumes while the receiver is congested; the half is frerlab's choice): while the
//! sources run, and after they stop as long as some frame has started on some wire since the
//! PAUSE was sent, so that a cycle of pauses (a deadlock) cannot hold the run open for ever. A pause that runs out while the
//! count is still above `xoff` is asked again by the next frame from U that is queued.
//!
//! The PAUSE frame is 64 bytes on the reverse direction N -> U: it starts when the frame on
//! that wire ends (MAC Control frames go ahead of queued data), holds the wire for its wire time
//! (the data behind it waits), and acts at U after the propagation delay: U starts no new frame
//! on U -> N until the pause ends (the frame in flight finishes), or at once on XON.
//!
//! Parameters (`PauseSpec`): the frame, the quantum and the 65535 limit are IEEE 802.3's
//! (Annex 31B); `xoff`/`xon` are implementation choices the standard leaves open, so their
//! defaults are frerlab's (python/frerlab/sim/scenario.py `Pause`, docs/congestion.md, which
//! also gives the headroom a lossless queue needs above `xoff`).

use serde::Deserialize;

use crate::units::{BitsPerSec, SimTime};

/// Bytes of a MAC Control frame (PAUSE) and of a QCN notification: the minimum Ethernet frame.
pub const CONTROL_FRAME_BYTES: u32 = 64;
/// Bit times in one pause quantum (IEEE 802.3 31B.2).
pub const BITS_PER_QUANTUM: u64 = 512;

/// PAUSE on one link direction, as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    /// The port of the reverse direction (N -> U), which carries the PAUSE frames.
    pub reverse: u32,
    /// Buffer bytes from this ingress above which the receiver sends PAUSE.
    pub xoff: u64,
    /// Buffer bytes at or below which the receiver sends XON.
    pub xon: u64,
    /// Pause time of a PAUSE frame, in quanta of 512 bit times (1..=65535).
    pub quanta: u16,
}

/// What the receiver of a link direction decides about PAUSE after a change of its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseAction {
    /// Nothing to send.
    None,
    /// Send PAUSE with the configured quanta.
    Xoff,
    /// Send PAUSE with quanta 0.
    Xon,
}

/// The PAUSE state of one link direction: the receiver's count and decisions, the sender's
/// paused time, and the counters reported.
#[derive(Clone, Debug)]
pub struct Pause {
    /// The reverse port (N -> U).
    pub reverse: u32,
    xoff: u64,
    xon: u64,
    /// Quanta of a PAUSE (not XON) frame.
    pub quanta: u16,
    /// Buffer bytes at the receiver that arrived over this link direction.
    pub buffered: u64,
    /// Largest `buffered`.
    pub buffered_peak: u64,
    /// The receiver's knowledge of when the pause it asked for ends; `ZERO`: none asked.
    asked_until: SimTime,
    /// When the asked pause is to be renewed.
    refresh_at: SimTime,
    /// When the receiver sent the last PAUSE.
    pub asked_at: SimTime,
    /// PAUSE frames with a non-zero pause time sent by the receiver.
    pub xoff_frames: u64,
    /// PAUSE frames with pause time 0 sent by the receiver.
    pub xon_frames: u64,
    /// Time the sender was paused within the run's duration, in picoseconds.
    paused_ps: u64,
}

impl Pause {
    /// The state of `spec`, nothing buffered.
    pub fn new(spec: &PauseSpec) -> Self {
        Pause {
            reverse: spec.reverse,
            xoff: spec.xoff,
            xon: spec.xon,
            quanta: spec.quanta,
            buffered: 0,
            buffered_peak: 0,
            asked_until: SimTime::ZERO,
            refresh_at: SimTime::ZERO,
            asked_at: SimTime::ZERO,
            xoff_frames: 0,
            xon_frames: 0,
            paused_ps: 0,
        }
    }

    /// A frame from this link direction took `buffer` bytes at the receiver at `now`.
    #[inline]
    pub fn on_queued(&mut self, buffer: u64, now: SimTime) -> PauseAction {
        self.buffered += buffer;
        self.buffered_peak = self.buffered_peak.max(self.buffered);
        if self.buffered > self.xoff && now >= self.asked_until {
            PauseAction::Xoff
        } else {
            PauseAction::None
        }
    }

    /// A frame from this link direction left the receiver's queues at `now`.
    #[inline]
    pub fn on_left(&mut self, buffer: u64, now: SimTime) -> PauseAction {
        self.buffered -= buffer;
        if self.buffered <= self.xon && now < self.asked_until {
            PauseAction::Xon
        } else {
            PauseAction::None
        }
    }

    /// The receiver sent `action` at `now`, which will act at the sender at `acts_at`, the link
    /// running at `rate`; counts it and remembers when the asked pause ends. For a PAUSE: when
    /// to look at renewing it (`refresh`), half its pause time after it acts.
    pub fn sent(
        &mut self,
        action: PauseAction,
        now: SimTime,
        acts_at: SimTime,
        rate: BitsPerSec,
    ) -> Option<SimTime> {
        match action {
            PauseAction::Xoff => {
                self.xoff_frames += 1;
                let time = pause_time(self.quanta, rate);
                self.asked_until = acts_at.plus(time);
                self.refresh_at = acts_at.plus(SimTime(time.0 / 2));
                self.asked_at = now;
                Some(self.refresh_at)
            }
            PauseAction::Xon => {
                self.xon_frames += 1;
                self.asked_until = SimTime::ZERO;
                None
            }
            PauseAction::None => None,
        }
    }

    /// At `now`, the renewal time of a pause asked for earlier: PAUSE again when that pause
    /// is still asked (no XON since, no newer PAUSE), the count is above `xon`, and the network
    /// is `active` (its sources run, or a frame has started since `asked_at`).
    pub fn refresh(&self, now: SimTime, active: bool) -> PauseAction {
        let due = self.refresh_at == now && now < self.asked_until;
        if due && self.buffered > self.xon && active {
            PauseAction::Xoff
        } else {
            PauseAction::None
        }
    }

    /// A PAUSE of `quanta` reaches the sender at `now`, whose current pause ends at
    /// `paused_until`; returns the new end of its pause (`now` for XON). The paused time is
    /// counted up to `horizon`, the run's duration.
    pub fn receive(
        &mut self,
        quanta: u16,
        now: SimTime,
        paused_until: SimTime,
        rate: BitsPerSec,
        horizon: SimTime,
    ) -> SimTime {
        let within = |until: SimTime| until.min(horizon).0.saturating_sub(now.0);
        self.paused_ps -= within(paused_until);
        let until = now.plus(pause_time(quanta, rate));
        self.paused_ps += within(until);
        until
    }

    /// Picoseconds the sender was paused before `now` (its current pause ending at
    /// `paused_until`), within the run's duration `horizon`.
    pub fn paused_before(&self, now: SimTime, paused_until: SimTime, horizon: SimTime) -> u64 {
        self.paused_ps - paused_until.min(horizon).0.saturating_sub(now.0)
    }

    /// Seconds the sender was paused within the run's duration.
    pub fn paused_seconds(&self) -> f64 {
        SimTime(self.paused_ps).as_secs_f64()
    }
}

/// The pause time of `quanta` on a link of `rate`.
pub fn pause_time(quanta: u16, rate: BitsPerSec) -> SimTime {
    rate.time_for_bits(u64::from(quanta) * BITS_PER_QUANTUM)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause() -> Pause {
        Pause::new(&PauseSpec {
            reverse: 1,
            xoff: 3000,
            xon: 1000,
            quanta: 100,
        })
    }

    #[test]
    fn xoff_above_the_threshold_once_then_xon_below_the_other() {
        let mut p = pause();
        let rate = BitsPerSec(10_000_000_000);
        assert_eq!(p.on_queued(1500, SimTime(0)), PauseAction::None);
        assert_eq!(p.on_queued(1500, SimTime(1)), PauseAction::None);
        assert_eq!(p.on_queued(1500, SimTime(2)), PauseAction::Xoff);
        assert_eq!(
            p.sent(PauseAction::Xoff, SimTime(5), SimTime(10), rate),
            Some(SimTime(2_560_010))
        );
        assert_eq!(
            p.on_queued(1500, SimTime(3)),
            PauseAction::None,
            "pause running"
        );
        assert_eq!(p.on_left(1500, SimTime(4)), PauseAction::None);
        assert_eq!(p.on_left(1500, SimTime(5)), PauseAction::None);
        assert_eq!(p.on_left(1500, SimTime(6)), PauseAction::None);
        assert_eq!(p.on_left(1500, SimTime(7)), PauseAction::Xon);
        assert_eq!(
            p.sent(PauseAction::Xon, SimTime(8), SimTime(16), rate),
            None
        );
        assert_eq!((p.xoff_frames, p.xon_frames, p.buffered_peak), (1, 1, 6000));
    }

    #[test]
    fn a_quantum_is_512_bit_times_and_paused_time_is_the_union() {
        let rate = BitsPerSec(10_000_000_000);
        assert_eq!(pause_time(1, rate), SimTime(51_200));
        let mut p = pause();
        let horizon = SimTime(10_000_000);
        let until = p.receive(100, SimTime(0), SimTime::ZERO, rate, horizon);
        assert_eq!(until, SimTime(5_120_000));
        // XON halfway: paused for half the time.
        let until = p.receive(0, SimTime(2_560_000), until, rate, horizon);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-15;
        assert!(close(p.paused_seconds(), 2.56e-6));
        // A pause running past the end of the run is cut there; one after it is not counted.
        let until = p.receive(100, SimTime(9_000_000), until, rate, horizon);
        assert!(close(p.paused_seconds(), 3.56e-6));
        p.receive(100, SimTime(12_000_000), until, rate, horizon);
        assert!(close(p.paused_seconds(), 3.56e-6));
    }

    #[test]
    fn a_pause_is_renewed_halfway_while_the_count_is_above_xon() {
        let mut p = pause();
        let rate = BitsPerSec(10_000_000_000);
        for t in 0..3 {
            p.on_queued(1500, SimTime(t));
        }
        let at = p
            .sent(PauseAction::Xoff, SimTime(5), SimTime(10), rate)
            .expect("a renewal time");
        assert_eq!(
            p.refresh(SimTime(at.0 - 1), true),
            PauseAction::None,
            "not yet"
        );
        assert_eq!(p.refresh(at, true), PauseAction::Xoff);
        assert_eq!(
            p.refresh(at, false),
            PauseAction::None,
            "nothing moves: a deadlock is not held"
        );
        let later = p
            .sent(PauseAction::Xoff, at, at, rate)
            .expect("a renewal time");
        assert_eq!(
            p.refresh(at, true),
            PauseAction::None,
            "superseded by the newer PAUSE"
        );
        for _ in 0..3 {
            p.on_left(1500, later);
        }
        assert_eq!(
            p.refresh(later, true),
            PauseAction::None,
            "at xon: not renewed"
        );
    }
}
