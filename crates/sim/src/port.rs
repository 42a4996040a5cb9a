//! An egress port and the link it drives: eight traffic-class queues with byte limits and tail
//! drop, strict priority between classes, optional credit-based shaper per class and gate
//! control list, then the link's rate, propagation delay, failure schedule and random loss.
//!
//! A port may be paused (IEEE 802.3x, `pause`: it starts no frame before `paused_until`),
//! may hold a congestion point (`qcn`, `bcn`, `fecn`; the network drives them all), and may
//! change its rate at given times (`rate_changes`: an egress whose service rate drops).
//!
//! The port decides which frame starts when; it does not know where frames go. Queue occupancy
//! is visible (`queued_bytes`), which is where a congestion point (BCN/FECN/QCN sampling) hooks
//! in, and recorded over time for the whole port (`occupancy`, the queue-length series).

use std::collections::VecDeque;

use serde::Serialize;

use crate::bcn::BcnPoint;
use crate::fecn::FecnPoint;
use crate::metrics::{IntervalCounts, QueueSeries};
use crate::pause::Pause;
use crate::qcn::CongestionPoint;
use crate::rng::Rng;
use crate::shaper::{CreditShaper, GateControl};
use crate::spec::{LossSpec, PortSpec, TRAFFIC_CLASSES};
use crate::units::{BitsPerSec, Bytes, SimTime, PS_PER_SEC};

/// Why a frame was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Its class queue had no room (per-queue limit, tail drop).
    QueueFull,
    /// The node's shared buffer had no room.
    BufferFull,
    /// The link was down when it was sent.
    LinkDown,
    /// Random loss on the link.
    LinkLoss,
    /// It is longer than every open window of its class's gate (it could never be sent).
    GateTooShort,
    /// It crossed the link, and the far node identified no stream of it on that port (a frame
    /// carrying the identity of a stream whose paths do not take the link).
    NotIdentified,
}

impl DropReason {
    /// Every reason, in report order.
    pub const ALL: [DropReason; 6] = [
        DropReason::QueueFull,
        DropReason::BufferFull,
        DropReason::LinkDown,
        DropReason::LinkLoss,
        DropReason::GateTooShort,
        DropReason::NotIdentified,
    ];
}

/// A frame waiting in a queue: its packet and the buffer it holds.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    /// Packet index.
    pub packet: u32,
    /// Frame bytes (what the wire carries, before the L1 overhead).
    pub bytes: u32,
    /// Buffer bytes it occupies (whole cells).
    pub buffer: u32,
}

/// No port: a frame from its talker, or from a link direction without PAUSE.
pub const NO_PORT: u32 = u32::MAX;

/// Per-class counters of a port.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClassCounters {
    /// Frames transmitted.
    pub tx_frames: u64,
    /// Frame bytes transmitted.
    pub tx_bytes: u64,
    /// Drops by reason, indexed like `DropReason::ALL`.
    pub drops: [u64; DropReason::ALL.len()],
    /// Largest queue occupancy seen, in buffer bytes.
    pub max_queue_bytes: u64,
}

/// What the port can do now.
pub enum Selection {
    /// Start the head frame of this class now.
    Start(u8),
    /// Nothing may start before this time.
    WaitUntil(SimTime),
    /// Every queue is empty (or the port is busy and will look again when it is free).
    Idle,
}

enum LinkLoss {
    None,
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        p_good_to_bad: f64,
        p_bad_to_good: f64,
        loss_good: f64,
        loss_bad: f64,
        bad: bool,
    },
}

/// Picoseconds per byte at `rate`, when that is a whole number.
fn exact_ps_per_byte(rate: BitsPerSec) -> Option<u64> {
    let ps = 8 * PS_PER_SEC / rate.0;
    (ps * rate.0 == 8 * PS_PER_SEC).then_some(ps)
}

/// An egress port with its link.
pub struct Port {
    /// Name in reports.
    pub name: String,
    /// Node owning the port.
    pub from: u32,
    /// Node at the far end.
    pub to: u32,
    /// Line rate.
    pub rate: BitsPerSec,
    /// Propagation delay.
    pub delay: SimTime,
    overhead: Bytes,
    /// Picoseconds per byte when the rate divides 8 * 10^12 (every common line rate), so the
    /// wire time is a multiplication; `None`: divide with rounding up.
    ps_per_byte: Option<u64>,
    queues: [VecDeque<Queued>; TRAFFIC_CLASSES],
    /// Bit `c` set when the queue of class `c` holds a frame.
    nonempty: u8,
    /// Buffer bytes queued per class.
    pub queued_bytes: [u64; TRAFFIC_CLASSES],
    limits: [Option<u64>; TRAFFIC_CLASSES],
    shapers: [Option<CreditShaper>; TRAFFIC_CLASSES],
    gates: Option<GateControl>,
    failures: Vec<(SimTime, SimTime)>,
    loss: LinkLoss,
    rng: Rng,
    /// The wire is busy until this time.
    pub busy_until: SimTime,
    /// Time of the pending wake-up event, if one is scheduled.
    pub wakeup: Option<SimTime>,
    /// Counters per class.
    pub counters: [ClassCounters; TRAFFIC_CLASSES],
    /// Buffer bytes queued over all classes, per interval of the scenario.
    pub occupancy: QueueSeries,
    /// PAUSE on this link direction (the far node pauses this port); boxed, as `qcn`, to keep
    /// the port's hot fields together.
    pub pause: Option<Box<Pause>>,
    /// No frame starts before this time (a PAUSE received).
    pub paused_until: SimTime,
    /// The QCN congestion point of this port's queues.
    pub qcn: Option<Box<CongestionPoint>>,
    /// The BCN congestion point of this port's queues.
    pub bcn: Option<Box<BcnPoint>>,
    /// The FECN advertised rate of this port.
    pub fecn: Option<Box<FecnPoint>>,
    /// Rate changes still to come, the next one last.
    rate_changes: Vec<(SimTime, BitsPerSec)>,
    /// Frame bytes sent, per interval of the scenario.
    pub tx_series: IntervalCounts,
    /// Control frames (FECN probes) this port sent.
    pub control_forward: u64,
    /// Control frames (QCN and BCN notifications, reflected FECN probes) that crossed this
    /// port's link the other way, towards this port's node.
    pub control_back: u64,
}

impl Port {
    /// The port of `spec`, drawing its losses from `rng`, its occupancy series binned by
    /// `interval` up to `duration`.
    pub fn new(spec: &PortSpec, interval: SimTime, duration: SimTime, mut rng: Rng) -> Port {
        // The congestion point draws from a generator of its own, seeded from the port's.
        let qcn = spec
            .qcn
            .as_ref()
            .map(|cp| Box::new(CongestionPoint::new(cp, Rng::new(rng.next_u64(), 0))));
        let bcn = spec
            .bcn
            .as_ref()
            .map(|cp| Box::new(BcnPoint::new(cp, Rng::new(rng.next_u64(), 1))));
        let loss = match spec.loss {
            LossSpec::None => LinkLoss::None,
            LossSpec::Bernoulli { p } => LinkLoss::Bernoulli { p },
            LossSpec::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => LinkLoss::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
                bad: false,
            },
        };
        Port {
            name: spec.name.clone(),
            from: spec.from,
            to: spec.to,
            rate: spec.rate,
            delay: spec.delay,
            overhead: spec.overhead,
            ps_per_byte: exact_ps_per_byte(spec.rate),
            queues: Default::default(),
            nonempty: 0,
            queued_bytes: [0; TRAFFIC_CLASSES],
            limits: std::array::from_fn(|c| spec.queue_limits[c].map(|b| b.0)),
            shapers: std::array::from_fn(|c| {
                spec.idle_slopes[c].map(|s| CreditShaper::new(s, spec.rate))
            }),
            gates: spec.gate_control.as_ref().map(GateControl::new),
            failures: spec.failures.clone(),
            loss,
            rng,
            busy_until: SimTime::ZERO,
            wakeup: None,
            counters: [ClassCounters::default(); TRAFFIC_CLASSES],
            occupancy: QueueSeries::new(interval, duration),
            pause: spec.pause.as_ref().map(|p| Box::new(Pause::new(p))),
            paused_until: SimTime::ZERO,
            qcn,
            bcn,
            fecn: spec
                .fecn
                .as_ref()
                .map(|p| Box::new(FecnPoint::new(p, spec.rate.0))),
            rate_changes: spec.rate_changes.iter().rev().copied().collect(),
            tx_series: IntervalCounts::new(interval, duration),
            control_forward: 0,
            control_back: 0,
        }
    }

    /// Whether a QCN, BCN or FECN point looks at the frames arriving here.
    #[inline]
    pub fn has_congestion_point(&self) -> bool {
        self.qcn.is_some() || self.bcn.is_some() || self.fecn.is_some()
    }

    /// Takes on the rate changes due by `now`.
    #[inline]
    fn follow_rate_changes(&mut self, now: SimTime) {
        while let Some(&(at, rate)) = self.rate_changes.last() {
            if at > now {
                break;
            }
            self.rate = rate;
            self.ps_per_byte = exact_ps_per_byte(rate);
            self.rate_changes.pop();
        }
    }

    /// Time the wire is occupied by a frame of `bytes` (plus the per-frame overhead).
    #[inline]
    pub fn wire_time(&self, bytes: u32) -> SimTime {
        let bytes = Bytes(u64::from(bytes) + self.overhead.0);
        match self.ps_per_byte {
            Some(ps) => SimTime(bytes.0 * ps),
            None => self.rate.time_for_bytes(bytes),
        }
    }

    /// Bytes a frame of `bytes` takes on the wire (the per-frame overhead added).
    #[inline]
    pub fn wire_bytes(&self, bytes: u32) -> u64 {
        u64::from(bytes) + self.overhead.0
    }

    /// Whether the per-queue limit of `class` leaves room for `buffer` more bytes.
    #[inline]
    pub fn has_room(&self, class: u8, buffer: u32) -> bool {
        let c = usize::from(class);
        self.limits[c].map_or(true, |limit| {
            self.queued_bytes[c] + u64::from(buffer) <= limit
        })
    }

    /// Appends a frame to the queue of `class` (room already checked).
    #[inline]
    pub fn push(&mut self, class: u8, frame: Queued, now: SimTime) {
        let c = usize::from(class);
        if let Some(shaper) = self.shapers[c].as_mut() {
            shaper.update(now, !self.queues[c].is_empty());
        }
        self.queues[c].push_back(frame);
        self.nonempty |= 1 << class;
        self.queued_bytes[c] += u64::from(frame.buffer);
        self.occupancy.add(now, u64::from(frame.buffer));
        let counters = &mut self.counters[c];
        counters.max_queue_bytes = counters.max_queue_bytes.max(self.queued_bytes[c]);
    }

    /// Counts a drop of a frame of `class`.
    #[inline]
    pub fn count_drop(&mut self, class: u8, reason: DropReason) {
        self.counters[usize::from(class)].drops[reason as usize] += 1;
    }

    /// Strict priority over the classes whose shaper and gate allow a start now; frames that
    /// can never pass their gate are removed and returned in `unsendable`.
    pub fn select(&mut self, now: SimTime, unsendable: &mut Vec<(u8, Queued)>) -> Selection {
        if now < self.busy_until {
            return Selection::Idle;
        }
        self.follow_rate_changes(now);
        if now < self.paused_until {
            return if self.has_frames() {
                Selection::WaitUntil(self.paused_until)
            } else {
                Selection::Idle
            };
        }
        let mut wait = SimTime::NEVER;
        let mut classes = self.nonempty;
        while classes != 0 {
            let class = 7 - classes.leading_zeros() as u8;
            classes &= !(1 << class);
            let c = usize::from(class);
            while let Some(head) = self.queues[c].front().copied() {
                let mut start = now;
                if let Some(shaper) = self.shapers[c].as_mut() {
                    shaper.update(now, true);
                    if !shaper.eligible() {
                        start = shaper.eligible_at();
                    }
                }
                if let Some(gates) = &self.gates {
                    match gates.earliest_start(class, start, self.wire_time(head.bytes)) {
                        Some(t) => start = t,
                        None => {
                            unsendable.push((class, self.pop(class, now)));
                            continue;
                        }
                    }
                }
                if start == now {
                    return Selection::Start(class);
                }
                wait = wait.min(start);
                break;
            }
        }
        if wait == SimTime::NEVER {
            Selection::Idle
        } else {
            Selection::WaitUntil(wait)
        }
    }

    fn pop(&mut self, class: u8, now: SimTime) -> Queued {
        let c = usize::from(class);
        let frame = self.queues[c]
            .pop_front()
            .expect("pop from a non-empty queue");
        self.queued_bytes[c] -= u64::from(frame.buffer);
        self.occupancy.remove(now, u64::from(frame.buffer));
        if self.queues[c].is_empty() {
            self.nonempty &= !(1 << class);
        }
        frame
    }

    /// Starts the head frame of `class` now: the wire is busy for its wire time.
    #[inline]
    pub fn start(&mut self, class: u8, now: SimTime) -> (Queued, SimTime) {
        let frame = self.pop(class, now);
        let duration = self.wire_time(frame.bytes);
        let c = usize::from(class);
        if let Some(shaper) = self.shapers[c].as_mut() {
            shaper.transmit(now, duration);
        }
        self.busy_until = now.plus(duration);
        self.counters[c].tx_frames += 1;
        self.counters[c].tx_bytes += u64::from(frame.bytes);
        self.tx_series.add(now, u64::from(frame.bytes));
        (frame, self.busy_until)
    }

    /// Whether any queue holds a frame.
    #[inline]
    pub fn has_frames(&self) -> bool {
        self.nonempty != 0
    }

    /// Whether the link loses a frame sent at `now`, and why.
    #[inline]
    pub fn link_drop(&mut self, now: SimTime) -> Option<DropReason> {
        if self
            .failures
            .iter()
            .any(|&(down, up)| down <= now && now < up)
        {
            return Some(DropReason::LinkDown);
        }
        let lost = match &mut self.loss {
            LinkLoss::None => false,
            LinkLoss::Bernoulli { p } => self.rng.chance(*p),
            LinkLoss::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
                bad,
            } => {
                let flip = if *bad { *p_bad_to_good } else { *p_good_to_bad };
                if self.rng.chance(flip) {
                    *bad = !*bad;
                }
                self.rng.chance(if *bad { *loss_bad } else { *loss_good })
            }
        };
        lost.then_some(DropReason::LinkLoss)
    }
}
