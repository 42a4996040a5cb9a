//! An attacker on one link direction (issue 35): it sees the frames of one stream cross the
//! link and injects frames of that stream's identity into it, or strips their R-TAG.
//!
//! - `inject`: a forged frame carrying the sequence number last seen on the link plus `offset`
//!   (mod 2^16), the size of the last frame seen, and the stream's identity or, with
//!   `identity`, another stream's;
//! - `replay`: the frame that crossed the link `age` frames before the last one, tag and all;
//! - `babble`: the last frame that crossed, again and again;
//! - `strip_tag`: every frame of the stream crossing the link loses its R-TAG.
//!
//! The three that send do so every `every` from `start` until `end` (at most `count` times),
//! and only once they have seen what they copy; their frames enter the link's egress queue in
//! the stream's class, sharing the wire with the genuine traffic, and are marked not genuine
//! so that the listener's metrics count them apart. Only genuine frames are recorded: the
//! attacker does not build on its own frames. This module knows nothing of packets: the
//! network gives it the frames it sees and sends copies of the one it picks.

use std::collections::VecDeque;

use serde::Deserialize;

use crate::spec::HopSpec;
use crate::units::SimTime;

/// The oldest frame a replay can send: this many frames before the last one, so that a replay
/// can bring back the same sequence number after a whole wrap of the 16-bit space.
pub const MAX_REPLAY_AGE: u32 = 1 << 16;

/// An attack on the link of the port it is attached to.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttackSpec {
    /// Index of the stream whose frames it sees (and whose identity its frames carry, unless
    /// `identity`).
    pub stream: u32,
    /// `inject` only: the index of another stream whose identity the forged frames carry.
    #[serde(default)]
    pub identity: Option<u32>,
    /// The attack acts from this time ...
    pub start: SimTime,
    /// ... until this time (excluded).
    pub end: SimTime,
    /// Time between two frames it sends; `None` for `strip_tag`, which sends nothing.
    #[serde(default)]
    pub every: Option<SimTime>,
    /// At most this many frames sent; `None`: until `end`.
    #[serde(default)]
    pub count: Option<u64>,
    /// What it does.
    pub action: AttackKind,
}

/// The kinds of attack.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AttackKind {
    /// A forged frame numbered `offset` after the last number seen.
    Inject {
        /// Added to the last sequence number seen, mod 2^16.
        offset: u16,
    },
    /// A copy of the frame seen `age` frames before the last one.
    Replay {
        /// 1..=`MAX_REPLAY_AGE`.
        age: u32,
    },
    /// A copy of the last frame seen.
    Babble,
    /// The R-TAG taken off every frame of the stream.
    StripTag,
}

impl AttackKind {
    /// The name used in scenarios and reports.
    pub fn name(self) -> &'static str {
        match self {
            AttackKind::Inject { .. } => "inject",
            AttackKind::Replay { .. } => "replay",
            AttackKind::Babble => "babble",
            AttackKind::StripTag => "strip_tag",
        }
    }
}

impl AttackSpec {
    /// Checks the attack on port `port` (named `name`) against the scenario's streams' routes.
    ///
    /// # Errors
    /// A message naming the bad value and what would be valid.
    pub fn check(&self, name: &str, port: u32, stream_hops: &[&[HopSpec]]) -> Result<(), String> {
        let kind = self.action.name();
        let owner = format!("port {name}: {kind} attack");
        let hops = stream_hops.get(self.stream as usize).ok_or_else(|| {
            format!(
                "{owner}: stream {} out of range (0..{})",
                self.stream,
                stream_hops.len()
            )
        })?;
        if !hops.iter().any(|h| h.port == port) {
            return Err(format!(
                "{owner}: stream {} does not cross this port",
                self.stream
            ));
        }
        if self.start >= self.end {
            return Err(format!(
                "{owner}: start {} ps is not before end {} ps",
                self.start.0, self.end.0
            ));
        }
        if let Some(identity) = self.identity {
            if !matches!(self.action, AttackKind::Inject { .. }) {
                return Err(format!(
                    "{owner}: identity is for inject only (its forged frames)"
                ));
            }
            if identity == self.stream || identity as usize >= stream_hops.len() {
                return Err(format!(
                    "{owner}: identity {identity} is out of range (another stream of 0..{})",
                    stream_hops.len()
                ));
            }
        }
        if let AttackKind::Replay { age } = self.action {
            if !(1..=MAX_REPLAY_AGE).contains(&age) {
                return Err(format!(
                    "{owner}: age {age} is out of range (1..={MAX_REPLAY_AGE})"
                ));
            }
        }
        match (self.action, self.every, self.count) {
            (AttackKind::StripTag, None, None) => Ok(()),
            (AttackKind::StripTag, _, _) => Err(format!(
                "{owner}: sends no frames, so takes no every or count"
            )),
            (_, Some(every), count) if every.0 > 0 && count != Some(0) => Ok(()),
            _ => Err(format!(
                "{owner}: needs every > 0 (and a count >= 1, if any)"
            )),
        }
    }
}

/// What an attacker does with the frames it sees.
#[derive(Clone, Copy, Debug)]
enum Action {
    /// Sends copies of a recorded frame (inject, replay, babble).
    Send,
    /// Strips the R-TAG of every frame between start and end.
    Strip,
}

/// A running attack on the link of `port`; `F` is the network's frame.
#[derive(Clone, Debug)]
pub struct Attacker<F> {
    /// The egress port whose link it is on.
    pub port: u32,
    /// The stream it attacks.
    pub stream: u32,
    /// The stream whose identity its frames carry.
    pub identity: u32,
    /// What it is.
    pub kind: AttackKind,
    /// Frames it sent or stripped.
    pub frames: u64,
    action: Action,
    start: SimTime,
    end: SimTime,
    every: SimTime,
    remaining: Option<u64>,
    /// The genuine frames seen last, the newest at the back; at most `keep`.
    seen: VecDeque<F>,
    keep: usize,
}

impl<F: Copy> Attacker<F> {
    /// The attacker of a checked `spec` on port `port`.
    pub fn new(port: u32, spec: &AttackSpec) -> Self {
        let (action, keep) = match spec.action {
            AttackKind::Inject { .. } | AttackKind::Babble => (Action::Send, 1),
            AttackKind::Replay { age } => (Action::Send, age as usize + 1),
            AttackKind::StripTag => (Action::Strip, 0),
        };
        Attacker {
            port,
            stream: spec.stream,
            identity: spec.identity.unwrap_or(spec.stream),
            kind: spec.action,
            frames: 0,
            action,
            start: spec.start,
            end: spec.end,
            every: spec.every.unwrap_or(SimTime::ZERO),
            remaining: spec.count,
            seen: VecDeque::with_capacity(keep),
            keep,
        }
    }

    /// When it sends its first frame; `None` for one that sends nothing.
    pub fn first_time(&self) -> Option<SimTime> {
        matches!(self.action, Action::Send).then_some(self.start)
    }

    /// It tries to send at `now`: the time of its next try, if any.
    pub fn next_time(&mut self, now: SimTime) -> Option<SimTime> {
        if let Some(n) = self.remaining.as_mut() {
            *n -= 1;
            if *n == 0 {
                return None;
            }
        }
        let next = now.plus(self.every);
        (next < self.end).then_some(next)
    }

    /// Whether it strips the R-TAG of a frame crossing at `now`.
    pub fn strips(&self, now: SimTime) -> bool {
        matches!(self.action, Action::Strip) && self.start <= now && now < self.end
    }

    /// A genuine frame of its stream crossed the link.
    pub fn see(&mut self, frame: F) {
        if self.keep == 0 {
            return;
        }
        if self.seen.len() == self.keep {
            self.seen.pop_front();
        }
        self.seen.push_back(frame);
    }

    /// The recorded frame its next frame copies (the last one seen, or for a replay the one
    /// `age` frames before it); `None` until it has seen that far back.
    pub fn template(&self) -> Option<F> {
        (self.seen.len() == self.keep)
            .then(|| self.seen.front().copied())
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(action: AttackKind, count: Option<u64>) -> AttackSpec {
        AttackSpec {
            stream: 0,
            identity: None,
            start: SimTime(10),
            end: SimTime(35),
            every: Some(SimTime(10)),
            count,
            action,
        }
    }

    #[test]
    fn a_replay_copies_the_frame_age_before_the_last_once_it_has_seen_it() {
        let mut a = Attacker::new(0, &spec(AttackKind::Replay { age: 2 }, None));
        a.see(1);
        a.see(2);
        assert_eq!(a.template(), None);
        a.see(3);
        a.see(4);
        assert_eq!(a.template(), Some(2));
        let mut babble = Attacker::new(0, &spec(AttackKind::Babble, None));
        babble.see(7);
        assert_eq!(babble.template(), Some(7));
    }

    #[test]
    fn sending_stops_at_the_end_or_after_count_tries() {
        let mut a: Attacker<u8> = Attacker::new(0, &spec(AttackKind::Babble, None));
        assert_eq!(a.first_time(), Some(SimTime(10)));
        assert_eq!(a.next_time(SimTime(10)), Some(SimTime(20)));
        assert_eq!(a.next_time(SimTime(30)), None);
        let mut once: Attacker<u8> = Attacker::new(0, &spec(AttackKind::Babble, Some(1)));
        assert_eq!(once.next_time(SimTime(10)), None);
    }

    #[test]
    fn a_bad_attack_is_named_with_what_would_be_valid() {
        let hops = [HopSpec {
            port: 3,
            next: vec![],
        }];
        let routes: [&[HopSpec]; 1] = [&hops];
        let err = |s: AttackSpec, port| s.check("A", port, &routes).unwrap_err();
        assert_eq!(
            err(spec(AttackKind::Babble, None), 2),
            "port A: babble attack: stream 0 does not cross this port"
        );
        assert_eq!(
            err(spec(AttackKind::Replay { age: 0 }, None), 3),
            "port A: replay attack: age 0 is out of range (1..=65536)"
        );
        assert_eq!(
            err(spec(AttackKind::StripTag, None), 3),
            "port A: strip_tag attack: sends no frames, so takes no every or count"
        );
        let mut foreign = spec(AttackKind::Babble, None);
        foreign.identity = Some(1);
        assert_eq!(
            err(foreign.clone(), 3),
            "port A: babble attack: identity is for inject only (its forged frames)"
        );
        foreign.action = AttackKind::Inject { offset: 1 };
        assert_eq!(
            err(foreign, 3),
            "port A: inject attack: identity 1 is out of range (another stream of 0..1)"
        );
        assert_eq!(
            err(spec(AttackKind::Inject { offset: 1 }, Some(0)), 3),
            "port A: inject attack: needs every > 0 (and a count >= 1, if any)"
        );
    }
}
