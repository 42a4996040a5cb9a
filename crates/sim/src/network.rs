//! A simulation: nodes, ports and streams built from a `Spec`, driven by the event core.
//!
//! A frame walks its stream's route tree: a talker's source creates it, each hop is an egress
//! port, and at each node the stream's FRER functions placed there run on arrival (sequence
//! generation tags it, recovery functions pass or discard it). A hop with several next hops
//! replicates the frame; a hop with none delivers it to the listener's metrics. Packets live in
//! an arena and events carry indices, so the hot loop allocates nothing per frame.
//!
//! Congestion control runs here on the state machines of `pause`, `qcn`, `bcn` and `fecn`.
//! PAUSE: a queued packet remembers the link direction it arrived over when that direction
//! runs PAUSE, so the receiver's count per ingress rises when it is queued and falls when it starts on its egress
//! wire (or is dropped as unsendable); a PAUSE frame takes the reverse wire's time and acts at
//! the sender after the propagation delay (`Event::Pause`), and is renewed halfway through its
//! time while the receiver is still above `xon` (`Event::PauseRefresh`; pause.rs says when). QCN: a port's congestion point
//! looks at every arriving frame of a stream with a reaction point, before the admission
//! check; a notification is a 64-byte frame that crosses the links the sampled frame took, in
//! reverse, each costing its wire time, its propagation delay and the processing delay of the
//! node it reaches, without queueing behind data or being lost (`Event::Notify` after that
//! fixed delay of the hop); the reaction point sets the talker's `Source::rate`, which every
//! departure reads, on notifications, byte-counter cycles (counted at departure) and timer
//! cycles (`Event::QcnTimer`). BCN: the same way back, signed feedback (`Event::Bcn`). FECN: a
//! probe is a 64-byte packet of its stream (`Packet::probe`, outside the stream's metrics and
//! FRER functions) that queues behind data, takes the smallest advertised rate of the ports
//! it is transmitted by (stamped when it starts on the wire, as the published pseudo-code's
//! "Transmit Packet" does), and comes back from the listener after the fixed delay of the way back
//! (`Event::Reflected`; the returned rates wait in the stream's `returned`, in order, since
//! every probe of a stream takes the same time back); each port's advertised rate is renewed
//! every interval while the sources run (`Event::FecnTick`).
//!
//! Attacks (`attack`): the attackers on a link see each frame of their stream as it arrives
//! over it, before the far node's FRER functions (a tag stripper takes its R-TAG off there);
//! the others send, at each `Event::Attack`, a copy of a frame they recorded (for `inject`
//! with another sequence number) into the link's egress queue. A frame an attacker made is
//! not `genuine`: the listener counts it apart, and no attacker records it. An injected frame
//! with another stream's identity becomes a frame of that stream where that stream crosses the
//! link (its hop there); where it does not, it crosses the link as a frame of the attacked
//! stream would and is `unidentified`: the far node identifies no stream of it on that port,
//! so it drops it (`DropReason::NotIdentified`) before anything else sees it.
//!
//! Defences: a frame arriving over a link meets the first of its stream's filters (`psfp`)
//! that takes it there, after the attackers and before the node's FRER functions; a recovery
//! function's guard (`guard`) looks at its counters every period (`Event::Guard`) while the
//! sources run, and may reset it.
//!
//! Why one module of 1,000 lines: every event handler works on the same arena of packets, ports and
//! streams, and splitting them would pass the whole simulation between modules; the congestion
//! controls' state machines are already their own modules.

use std::collections::VecDeque;
use std::time::Instant;

use frer::generation::SequenceGenerator;
use frer::recovery::{RecoveryParams, SequenceRecovery};
use frer::SeqNum;

use crate::attack::{AttackKind, Attacker};
use crate::bcn::BcnReaction;
use crate::engine::Scheduler;
use crate::fecn::UNLIMITED;
use crate::guard::{Guard, GuardCounters};
use crate::metrics::{QueueSeries, StreamMetrics};
use crate::pause::{PauseAction, CONTROL_FRAME_BYTES};
use crate::port::{DropReason, Port, Queued, Selection, NO_PORT};
use crate::psfp::{StreamFilter, NON_SDU_BYTES};
use crate::qcn::ReactionPoint;
use crate::report::{
    AttackRow, BcnPortRow, CnStreamRow, ControlRow, FecnPortRow, FilterRow, FrerRow, NodeRow,
    PauseRow, PortRow, PortSeriesRow, QcnPortRow, RateSeriesRow, Report, RunInfo, SeriesRow,
    TraceRow,
};
use crate::rng::Rng;
use crate::source::Source;
use crate::spec::Spec;
use crate::units::SimTime;

/// Something that happens at a point in simulated time.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// A stream's talker sends its next frame.
    Depart(u32),
    /// A packet has fully arrived at the far node of its current hop.
    Arrive(u32),
    /// A port looks at its queues again (end of a transmission, credit or gate change).
    Wake(u32),
    /// A PAUSE frame with this many quanta (0: XON) reaches the sender of this port.
    Pause(u32, u16),
    /// The receiver of this PAUSE link direction may renew the pause it asked for.
    PauseRefresh(u32),
    /// A QCN notification with this quantised |Fb| reaches this stream's talker.
    Notify(u32, u8),
    /// A stream's QCN timer may have ended a cycle.
    QcnTimer(u32),
    /// BCN feedback with this quantised value from the CP of this port reaches the stream's
    /// talker.
    Bcn(u32, i8, u16),
    /// A stream's talker sends its next FECN probe.
    Probe(u32),
    /// A reflected FECN probe reaches the stream's talker.
    Reflected(u32),
    /// A port's FECN interval ends.
    FecnTick(u32),
    /// An attacker may send a frame.
    Attack(u32),
    /// The guard of a stream's recovery function (stream, index among its functions) looks.
    Guard(u32, u32),
}

/// A frame in flight. `bytes` includes the R-TAG while `rtag` is set.
#[derive(Clone, Copy, Debug)]
struct Packet {
    stream: u32,
    hop: u32,
    number: u64,
    created: SimTime,
    bytes: u32,
    rtag: Option<SeqNum>,
    /// While queued: the PAUSE link direction it arrived over (`NO_PORT`: none).
    ingress: u32,
    /// A FECN probe: `number` is the rate it carries, in bit/s.
    probe: bool,
    /// Sent by the talker (or a copy made by replication), not made by an attacker.
    genuine: bool,
    /// It carries the identity of a stream that its link's far node does not identify there.
    unidentified: bool,
}

struct Node {
    name: String,
    processing_delay: SimTime,
    shared_buffer: Option<u64>,
    cell: u64,
    buffer_used: u64,
    buffer_peak: u64,
}

struct Hop {
    port: u32,
    next_start: u32,
    next_len: u32,
}

struct Recovery {
    node: u32,
    ingress: Option<u32>,
    individual: bool,
    /// Passed frames keep their R-TAG (`RecoverySpec::keep_tag`).
    keep_tag: bool,
    function: SequenceRecovery,
    guard: Option<Guard>,
}

struct Stream {
    name: String,
    class: u8,
    source: Source,
    hops: Vec<Hop>,
    next: Vec<u32>,
    first_start: u32,
    first_len: u32,
    generation: Option<(u32, SequenceGenerator)>,
    rtag_bytes: u32,
    recovery: Vec<Recovery>,
    filters: Vec<StreamFilter>,
    created: u64,
    metrics: StreamMetrics,
    /// Boxed: most streams have none, and the hot fields stay together.
    control: Option<Box<RateControl>>,
}

/// What sets a stream's rate.
enum Regulator {
    Qcn(ReactionPoint),
    Bcn(BcnReaction),
    Fecn {
        /// Probe period.
        interval: SimTime,
        /// Probes sent.
        sent: u64,
        /// Rates of reflected probes on their way back, the first to arrive first.
        returned: VecDeque<u64>,
    },
}

/// A stream's regulator, its rate over time, and the ways back to its talker.
struct RateControl {
    regulator: Regulator,
    rates: QueueSeries,
    /// The stream's configured rate.
    line: u64,
    /// Messages that reached the talker (notifications, reflected probes).
    received: u64,
    /// Per hop: the hop before it (`NO_HOP` for a first hop).
    parent: Vec<u32>,
    /// Per hop: the time a 64-byte frame takes from the hop's far node back to the talker,
    /// crossing, in reverse, the hop's link and those before it (each link's wire time and
    /// propagation delay, and the processing delay of the node it reaches).
    back_delay: Vec<SimTime>,
}

/// No hop: the parent of a first hop.
const NO_HOP: u32 = u32::MAX;

impl RateControl {
    /// The time a notification sent by the node that `hop` leaves from takes to the talker.
    fn notify_delay(&self, hop: u32) -> SimTime {
        match self.parent[hop as usize] {
            NO_HOP => SimTime::ZERO,
            parent => self.back_delay[parent as usize],
        }
    }
}

/// A built network ready to run, and its results afterwards.
pub struct Simulation {
    scheduler: Scheduler<Event>,
    nodes: Vec<Node>,
    ports: Vec<Port>,
    streams: Vec<Stream>,
    attackers: Vec<Attacker<Packet>>,
    packets: Vec<Packet>,
    free_packets: Vec<u32>,
    unsendable: Vec<(u8, Queued)>,
    trace: Option<Vec<TraceRow>>,
    interval: SimTime,
    /// Sources stop at this time, and so do QCN timers.
    duration: SimTime,
    /// Time of the last event other than a port's wake-up: the end of the run.
    end: SimTime,
    /// Whether any link direction runs PAUSE (else enqueueing skips its ingress accounting).
    any_pause: bool,
    /// When a frame last started on a wire, tracked while PAUSE runs (whether renewals still
    /// serve a draining network).
    last_start: SimTime,
    wall_seconds: f64,
}

impl Simulation {
    /// Builds the network of `spec` and schedules every source's first frame.
    ///
    /// # Errors
    /// A message naming the bad value when the spec is inconsistent or a FRER parameter is out
    /// of range.
    pub fn new(spec: &Spec) -> Result<Simulation, String> {
        spec.check()?;
        let nodes = spec
            .nodes
            .iter()
            .map(|n| Node {
                name: n.name.clone(),
                processing_delay: n.processing_delay,
                shared_buffer: n.shared_buffer.map(|b| b.0),
                cell: n.cell.0,
                buffer_used: 0,
                buffer_peak: 0,
            })
            .collect();
        let ports: Vec<Port> = spec
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Port::new(
                    p,
                    spec.interval,
                    spec.duration,
                    Rng::new(spec.seed, (1 << 32) | i as u64),
                )
            })
            .collect();
        let mut streams = Vec::with_capacity(spec.streams.len());
        let mut scheduler = Scheduler::new();
        for (i, s) in spec.streams.iter().enumerate() {
            let mut next = Vec::new();
            let hops = s
                .hops
                .iter()
                .map(|h| {
                    let hop = Hop {
                        port: h.port,
                        next_start: next.len() as u32,
                        next_len: h.next.len() as u32,
                    };
                    next.extend_from_slice(&h.next);
                    hop
                })
                .collect();
            let first_start = next.len() as u32;
            next.extend_from_slice(&s.first_hops);
            let mut recovery = Vec::new();
            for r in &s.recovery {
                let params = RecoveryParams {
                    algorithm: r
                        .algorithm
                        .parse()
                        .map_err(|e| format!("stream {}: {e}", s.name))?,
                    history_length: r.history_length,
                    reset_timeout_ns: r.reset_timeout.map(|t| t.as_ns().max(1)),
                    individual_recovery: r.individual,
                    take_no_sequence: r.take_no_sequence,
                };
                let function =
                    SequenceRecovery::new(params).map_err(|e| format!("stream {}: {e}", s.name))?;
                if let Some(g) = r.guard.filter(|g| g.period < spec.duration) {
                    let index = recovery.len() as u32;
                    scheduler.at(g.period, Event::Guard(i as u32, index));
                }
                recovery.push(Recovery {
                    node: r.node,
                    ingress: r.ingress,
                    individual: r.individual,
                    keep_tag: r.keep_tag,
                    function,
                    guard: r.guard.map(Guard::new),
                });
            }
            let regulator = if let Some(rp) = &s.qcn {
                Some(Regulator::Qcn(ReactionPoint::new(rp, s.rate)))
            } else if let Some(rp) = &s.bcn {
                Some(Regulator::Bcn(BcnReaction::new(rp, s.rate)))
            } else {
                s.fecn.as_ref().map(|f| Regulator::Fecn {
                    interval: f.interval,
                    sent: 0,
                    returned: VecDeque::new(),
                })
            };
            let control = regulator.map(|regulator| {
                let mut rates = QueueSeries::new(spec.interval, spec.duration);
                rates.add(SimTime::ZERO, s.rate.0);
                let (parent, back_delay) = ways_back(s, spec, &ports);
                Box::new(RateControl {
                    regulator,
                    rates,
                    line: s.rate.0,
                    received: 0,
                    parent,
                    back_delay,
                })
            });
            let source = Source::new(s, spec.duration, Rng::new(spec.seed, i as u64));
            if let Some(t) = source.first_departure() {
                scheduler.at(t, Event::Depart(i as u32));
                if s.fecn.is_some() {
                    scheduler.at(t, Event::Probe(i as u32));
                }
            }
            streams.push(Stream {
                name: s.name.clone(),
                class: s.class,
                source,
                hops,
                next,
                first_start,
                first_len: s.first_hops.len() as u32,
                generation: s.generation.map(|node| (node, SequenceGenerator::new())),
                rtag_bytes: s.rtag_bytes,
                recovery,
                filters: s.filters.iter().map(StreamFilter::new).collect(),
                created: 0,
                metrics: StreamMetrics::new(spec.interval, spec.duration, spec.warmup),
                control,
            });
        }
        let mut attackers = Vec::new();
        for (port, p) in spec.ports.iter().enumerate() {
            for a in &p.attacks {
                let attacker = Attacker::new(port as u32, a);
                if let Some(t) = attacker.first_time() {
                    scheduler.at(t, Event::Attack(attackers.len() as u32));
                }
                attackers.push(attacker);
            }
        }
        for (i, port) in ports.iter().enumerate() {
            if let Some(fecn) = &port.fecn {
                if fecn.interval() < spec.duration {
                    scheduler.at(fecn.interval(), Event::FecnTick(i as u32));
                }
            }
        }
        Ok(Simulation {
            scheduler,
            nodes,
            ports,
            streams,
            attackers,
            packets: Vec::with_capacity(4096),
            free_packets: Vec::with_capacity(4096),
            unsendable: Vec::new(),
            trace: spec.trace.then(Vec::new),
            interval: spec.interval,
            duration: spec.duration,
            end: SimTime::ZERO,
            any_pause: spec.ports.iter().any(|p| p.pause.is_some()),
            last_start: SimTime::ZERO,
            wall_seconds: 0.0,
        })
    }

    /// Runs until no event is left (sources stop at the scenario duration).
    pub fn run(&mut self) {
        let started = Instant::now();
        while let Some(event) = self.scheduler.pop() {
            let now = self.scheduler.now();
            match event {
                Event::Depart(stream) => self.depart(stream, now),
                Event::Arrive(packet) => self.arrive(packet, now),
                Event::Wake(port) => {
                    if self.ports[port as usize].wakeup == Some(now) {
                        self.ports[port as usize].wakeup = None;
                        self.serve(port, now);
                    }
                    // A wake-up may be left over (a pause ended early by XON): not the end.
                    continue;
                }
                Event::Pause(port, quanta) => self.pause_arrives(port, quanta, now),
                Event::PauseRefresh(port) => {
                    let pause = self.ports[port as usize]
                        .pause
                        .as_ref()
                        .expect("PAUSE port");
                    let active = now < self.duration || self.last_start > pause.asked_at;
                    let action = pause.refresh(now, active);
                    self.send_pause(port, action, now);
                }
                Event::Notify(stream, q) => {
                    let control = self.control(stream);
                    control.received += 1;
                    let Regulator::Qcn(rp) = &mut control.regulator else {
                        unreachable!("QCN notification to a stream without QCN")
                    };
                    let rate = rp.notify(q, now);
                    self.set_rate(stream, rate.0, now);
                    self.schedule_timer(stream);
                }
                Event::QcnTimer(stream) => {
                    let Regulator::Qcn(rp) = &mut self.control(stream).regulator else {
                        unreachable!("QCN timer of a stream without QCN")
                    };
                    if rp.timer_due == now {
                        let rate = rp.timer(now);
                        self.set_rate(stream, rate.0, now);
                        self.schedule_timer(stream);
                    }
                }
                Event::Bcn(stream, fb, port) => {
                    let control = self.control(stream);
                    control.received += 1;
                    let Regulator::Bcn(rp) = &mut control.regulator else {
                        unreachable!("BCN feedback to a stream without BCN")
                    };
                    let rate = rp.feedback(fb, u32::from(port));
                    self.set_rate(stream, rate.0, now);
                }
                Event::Probe(stream) => self.send_probe(stream, now),
                Event::Attack(attacker) => self.attack(attacker, now),
                Event::Guard(stream, index) => self.guard(stream, index, now),
                Event::Reflected(stream) => {
                    let control = self.control(stream);
                    control.received += 1;
                    let Regulator::Fecn { returned, .. } = &mut control.regulator else {
                        unreachable!("FECN probe of a stream without FECN")
                    };
                    let rate = returned.pop_front().expect("a reflected probe's rate");
                    let rate = rate.min(control.line);
                    self.set_rate(stream, rate, now);
                }
                Event::FecnTick(port_id) => {
                    let port = &mut self.ports[port_id as usize];
                    let q = port.queued_bytes.iter().sum();
                    let paused = port.pause.as_ref().map_or(0, |p| {
                        p.paused_before(now, port.paused_until, self.duration)
                    });
                    let fecn = port.fecn.as_mut().expect("FECN port");
                    let capacity = fecn.capacity(port.rate.0, paused);
                    fecn.tick(q, capacity);
                    let next = now.plus(fecn.interval());
                    if next < self.duration {
                        self.scheduler.at(next, Event::FecnTick(port_id));
                    }
                }
            }
            self.end = now;
        }
        self.wall_seconds += started.elapsed().as_secs_f64();
    }

    #[inline]
    fn alloc(&mut self, packet: Packet) -> u32 {
        match self.free_packets.pop() {
            Some(id) => {
                self.packets[id as usize] = packet;
                id
            }
            None => {
                self.packets.push(packet);
                (self.packets.len() - 1) as u32
            }
        }
    }

    /// The rate control of a stream that has one.
    fn control(&mut self, stream_id: u32) -> &mut RateControl {
        self.streams[stream_id as usize]
            .control
            .as_deref_mut()
            .expect("a stream with rate control")
    }

    fn depart(&mut self, stream_id: u32, now: SimTime) {
        let stream = &mut self.streams[stream_id as usize];
        let bytes = stream.source.frame_bytes();
        if let Some(Regulator::Qcn(rp)) = stream.control.as_deref_mut().map(|c| &mut c.regulator) {
            if let Some(rate) = rp.sent(bytes) {
                self.set_rate(stream_id, rate.0, now);
            }
        }
        let stream = &mut self.streams[stream_id as usize];
        let number = stream.created;
        stream.created += 1;
        stream.metrics.on_sent(now);
        if let Some(t) = stream.source.next_departure() {
            self.scheduler.at(t, Event::Depart(stream_id));
        }
        let (start, len) = (stream.first_start, stream.first_len);
        let talker = self.ports[stream.next[start as usize] as usize].from;
        let packet = self.alloc(Packet {
            stream: stream_id,
            hop: u32::MAX,
            number,
            created: now,
            bytes,
            rtag: None,
            ingress: NO_PORT,
            probe: false,
            genuine: true,
            unidentified: false,
        });
        if self.run_frer_functions(packet, talker, None, now) {
            self.forward(packet, start, len, NO_PORT, now);
        }
    }

    /// The talker of a FECN stream sends a probe now, and the next one an interval later
    /// while its source runs.
    fn send_probe(&mut self, stream_id: u32, now: SimTime) {
        let stream = &mut self.streams[stream_id as usize];
        let (start, len) = (stream.first_start, stream.first_len);
        let Some(Regulator::Fecn { interval, sent, .. }) =
            stream.control.as_deref_mut().map(|c| &mut c.regulator)
        else {
            unreachable!("a probe of a stream without FECN")
        };
        *sent += 1;
        let next = now.plus(*interval);
        if next < self.duration {
            self.scheduler.at(next, Event::Probe(stream_id));
        }
        let packet = self.alloc(Packet {
            stream: stream_id,
            hop: u32::MAX,
            number: UNLIMITED,
            created: now,
            bytes: CONTROL_FRAME_BYTES,
            rtag: None,
            ingress: NO_PORT,
            probe: true,
            genuine: true,
            unidentified: false,
        });
        self.forward(packet, start, len, NO_PORT, now);
    }

    /// A probe that left through `hop` reached the listener at `now`: its rate goes back.
    fn reflect(&mut self, packet_id: u32, hop: u32, now: SimTime) {
        let packet = self.packets[packet_id as usize];
        self.free_packets.push(packet_id);
        let control = self.control(packet.stream);
        let at = now.plus(control.back_delay[hop as usize]);
        let Regulator::Fecn { returned, .. } = &mut control.regulator else {
            unreachable!("a probe of a stream without FECN")
        };
        returned.push_back(packet.number);
        self.count_way_back(packet.stream, Some(hop));
        self.scheduler.at(at, Event::Reflected(packet.stream));
    }

    /// A control frame goes back to the talker of `stream`, crossing in reverse the link of
    /// `hop` and every link before it (None: it starts at the talker's own node): one more
    /// on each of those links' counts.
    fn count_way_back(&mut self, stream_id: u32, mut hop: Option<u32>) {
        let stream = &self.streams[stream_id as usize];
        let control = stream
            .control
            .as_deref()
            .expect("a stream with rate control");
        while let Some(h) = hop {
            self.ports[stream.hops[h as usize].port as usize].control_back += 1;
            hop = Some(control.parent[h as usize]).filter(|&p| p != NO_HOP);
        }
    }

    /// Schedules the end of a QCN stream's running timer cycle, unless the limiter is inactive
    /// or its source has stopped by then (the run ends when no event is left).
    fn schedule_timer(&mut self, stream_id: u32) {
        let Regulator::Qcn(rp) = &self.control(stream_id).regulator else {
            unreachable!("QCN timer of a stream without QCN")
        };
        let due = rp.timer_due;
        if due < self.duration {
            self.scheduler.at(due, Event::QcnTimer(stream_id));
        }
    }

    /// Sets a rate-controlled stream's sending rate (bit/s) from `now` on.
    fn set_rate(&mut self, stream_id: u32, rate: u64, now: SimTime) {
        let stream = &mut self.streams[stream_id as usize];
        let control = stream.control.as_mut().expect("a stream with rate control");
        control.rates.remove(now, stream.source.rate.0);
        control.rates.add(now, rate);
        stream.source.rate = crate::units::BitsPerSec(rate);
    }

    /// A QCN or BCN congestion point at the port of `hop` sends feedback for a frame of
    /// `stream_id` arriving at `now`: the message reaches the talker after the way back.
    fn notify(&mut self, stream_id: u32, hop: u32, event: Event, now: SimTime) {
        let control = self.control(stream_id);
        let at = now.plus(control.notify_delay(hop));
        let parent = Some(control.parent[hop as usize]).filter(|&p| p != NO_HOP);
        self.count_way_back(stream_id, parent);
        self.scheduler.at(at, event);
    }

    /// Runs the stream's FRER functions placed at `node` on a packet that arrived through
    /// `ingress`; false when a recovery function discarded (and freed) it.
    #[inline]
    fn run_frer_functions(
        &mut self,
        packet_id: u32,
        node: u32,
        ingress: Option<u32>,
        now: SimTime,
    ) -> bool {
        let packet = &mut self.packets[packet_id as usize];
        let stream = &mut self.streams[packet.stream as usize];
        if let Some((gen_node, generator)) = stream.generation.as_mut() {
            if *gen_node == node && packet.rtag.is_none() {
                packet.rtag = Some(generator.next_seq());
                packet.bytes += stream.rtag_bytes;
            }
        }
        for r in stream.recovery.iter_mut() {
            if r.node != node || (r.ingress.is_some() && r.ingress != ingress) {
                continue;
            }
            if !r.function.receive(packet.rtag, now.as_ns()).is_pass() {
                self.free_packets.push(packet_id);
                return false;
            }
            if !r.individual && !r.keep_tag && packet.rtag.take().is_some() {
                packet.bytes -= stream.rtag_bytes;
            }
        }
        true
    }

    fn arrive(&mut self, packet_id: u32, now: SimTime) {
        let packet = self.packets[packet_id as usize];
        let stream = &self.streams[packet.stream as usize];
        let hop = &stream.hops[packet.hop as usize];
        let (port, start, len) = (hop.port, hop.next_start, hop.next_len);
        let node = self.ports[port as usize].to;
        if packet.unidentified {
            let class = stream.class;
            self.drop_packet(port, class, packet_id, DropReason::NotIdentified, now);
            return;
        }
        if !self.attackers.is_empty() && !packet.probe {
            self.attackers_see(packet_id, port, now);
        }
        let passes = packet.probe
            || (self.filter(packet_id, node, port, now)
                && self.run_frer_functions(packet_id, node, Some(port), now));
        if !passes {
            return;
        }
        if len == 0 {
            let packet = self.packets[packet_id as usize];
            if packet.probe {
                self.reflect(packet_id, packet.hop, now);
                return;
            }
            let stream = &mut self.streams[packet.stream as usize];
            if !packet.genuine {
                stream.metrics.forged_delivered += 1;
                self.free_packets.push(packet_id);
                return;
            }
            let l2_bytes = packet.bytes
                - if packet.rtag.is_some() {
                    stream.rtag_bytes
                } else {
                    0
                };
            stream
                .metrics
                .on_received(packet.number, packet.created, l2_bytes, now);
            self.free_packets.push(packet_id);
        } else {
            self.forward(packet_id, start, len, port, now);
        }
    }

    /// The first of its stream's filters that takes a packet arriving at `node` over `port` at
    /// `now`: whether it passes (a packet it drops is freed).
    fn filter(&mut self, packet_id: u32, node: u32, port: u32, now: SimTime) -> bool {
        let packet = &self.packets[packet_id as usize];
        let stream = &mut self.streams[packet.stream as usize];
        let Some(filter) = stream.filters.iter_mut().find(|f| f.matches(node, port)) else {
            return true;
        };
        let rtag = if packet.rtag.is_some() {
            stream.rtag_bytes
        } else {
            0
        };
        let sdu = packet.bytes.saturating_sub(rtag + NON_SDU_BYTES);
        if filter.pass(sdu, now) {
            return true;
        }
        self.free_packets.push(packet_id);
        false
    }

    /// The guard of recovery function `index` of `stream_id` looks at its counters at `now`,
    /// maybe resets it, and looks again a period later while the sources run.
    fn guard(&mut self, stream_id: u32, index: u32, now: SimTime) {
        let r = &mut self.streams[stream_id as usize].recovery[index as usize];
        let guard = r.guard.as_mut().expect("a guarded recovery function");
        if guard.look(r.function.counters()) {
            r.function.reset();
        }
        let next = now.plus(guard.spec.period);
        if next < self.duration {
            self.scheduler.at(next, Event::Guard(stream_id, index));
        }
    }

    /// The attackers on the link of `port` see a packet of a stream arrive over it at `now`:
    /// those of its stream record it if it is genuine, or strip its R-TAG.
    fn attackers_see(&mut self, packet_id: u32, port: u32, now: SimTime) {
        let packet = &mut self.packets[packet_id as usize];
        let stream = &self.streams[packet.stream as usize];
        for attacker in &mut self.attackers {
            if attacker.port != port || attacker.stream != packet.stream {
                continue;
            }
            if attacker.strips(now) {
                if packet.rtag.take().is_some() {
                    packet.bytes -= stream.rtag_bytes;
                    attacker.frames += 1;
                }
            } else if packet.genuine {
                attacker.see(*packet);
            }
        }
    }

    /// An attacker sends a copy of the frame it recorded into its link's egress queue at
    /// `now` (an injected one with its forged sequence number), if it has recorded one.
    fn attack(&mut self, attacker_id: u32, now: SimTime) {
        let attacker = &mut self.attackers[attacker_id as usize];
        if let Some(t) = attacker.next_time(now) {
            self.scheduler.at(t, Event::Attack(attacker_id));
        }
        let Some(frame) = attacker.template() else {
            return;
        };
        let rtag = match (attacker.kind, frame.rtag) {
            (AttackKind::Inject { offset }, Some(seq)) => Some(seq.wrapping_add(offset)),
            (AttackKind::Inject { .. }, None) => return, // no number seen to forge from
            _ => frame.rtag,
        };
        attacker.frames += 1;
        let (port, identity) = (attacker.port, attacker.identity);
        let identity_hop = self.streams[identity as usize]
            .hops
            .iter()
            .position(|h| h.port == port);
        let (stream, hop) = match identity_hop {
            Some(hop) => (identity, hop as u32),
            None => (frame.stream, frame.hop),
        };
        let packet = self.alloc(Packet {
            stream,
            hop,
            rtag,
            created: now,
            ingress: NO_PORT,
            genuine: false,
            unidentified: identity_hop.is_none(),
            ..frame
        });
        self.enqueue(port, packet, NO_PORT, now);
    }

    /// Sends the packet, which arrived over `ingress` (`NO_PORT`: from its talker), on each of
    /// the hops `next[start..start + len]` of its stream, copying it for every hop after the
    /// first (replication).
    #[inline]
    fn forward(&mut self, packet_id: u32, start: u32, len: u32, ingress: u32, now: SimTime) {
        for k in 0..len {
            let stream_id = self.packets[packet_id as usize].stream as usize;
            let hop = self.streams[stream_id].next[(start + k) as usize];
            let copy = if k + 1 == len {
                packet_id
            } else {
                let packet = self.packets[packet_id as usize];
                self.alloc(packet)
            };
            self.packets[copy as usize].hop = hop;
            let port = self.streams[stream_id].hops[hop as usize].port;
            self.enqueue(port, copy, ingress, now);
        }
    }

    fn enqueue(&mut self, port_id: u32, packet_id: u32, ingress: u32, now: SimTime) {
        if self.ports[port_id as usize].has_congestion_point() {
            self.congestion_points(port_id, packet_id, now);
        }
        let packet = self.packets[packet_id as usize];
        let class = self.streams[packet.stream as usize].class;
        let port = &mut self.ports[port_id as usize];
        let node = &mut self.nodes[port.from as usize];
        let buffer = if node.cell == 1 {
            u64::from(packet.bytes)
        } else {
            u64::from(packet.bytes).div_ceil(node.cell) * node.cell
        };
        let refused = if !port.has_room(class, buffer as u32) {
            Some(DropReason::QueueFull)
        } else if node
            .shared_buffer
            .is_some_and(|limit| node.buffer_used + buffer > limit)
        {
            Some(DropReason::BufferFull)
        } else {
            None
        };
        if let Some(reason) = refused {
            self.drop_packet(port_id, class, packet_id, reason, now);
            return;
        }
        node.buffer_used += buffer;
        node.buffer_peak = node.buffer_peak.max(node.buffer_used);
        port.push(
            class,
            Queued {
                packet: packet_id,
                bytes: packet.bytes,
                buffer: buffer as u32,
            },
            now,
        );
        if self.any_pause {
            self.count_ingress(packet_id, ingress, buffer, now);
        }
        self.serve(port_id, now);
    }

    /// The congestion points of a port see a packet arrive at `now`, before the admission
    /// check: QCN and BCN may sample a data frame of a stream they control, FECN counts every
    /// frame (it stamps probes when they start on the wire, `serve`).
    fn congestion_points(&mut self, port_id: u32, packet_id: u32, now: SimTime) {
        let packet = &mut self.packets[packet_id as usize];
        let stream = &self.streams[packet.stream as usize];
        let port = &mut self.ports[port_id as usize];
        let (class, hop, stream_id) = (stream.class, packet.hop, packet.stream);
        let wire_bytes = port.wire_bytes(packet.bytes);
        if let Some(fecn) = port.fecn.as_mut() {
            fecn.arrive(wire_bytes);
        }
        if packet.probe {
            return;
        }
        let q = port.queued_bytes[usize::from(class)];
        let event = match (
            stream.control.as_deref().map(|c| &c.regulator),
            &mut port.qcn,
            &mut port.bcn,
        ) {
            (Some(Regulator::Qcn(_)), Some(cp), _) => cp
                .arrive(class, packet.bytes, q)
                .map(|fb| Event::Notify(packet.stream, fb)),
            (Some(Regulator::Bcn(rp)), _, Some(cp)) => cp
                .arrive(class, packet.bytes, q)
                .filter(|&fb| fb < 0 || rp.takes_positive_from(port_id))
                .map(|fb| {
                    cp.sent(fb);
                    Event::Bcn(packet.stream, fb, port_id as u16)
                }),
            _ => None,
        };
        if let Some(event) = event {
            self.notify(stream_id, hop, event, now);
        }
    }

    /// A packet that arrived over `ingress` was queued taking `buffer` bytes: the receiver's
    /// count of that link direction rises when it runs PAUSE, and the packet remembers it.
    fn count_ingress(&mut self, packet_id: u32, ingress: u32, buffer: u64, now: SimTime) {
        let pause = (ingress != NO_PORT)
            .then(|| self.ports[ingress as usize].pause.as_mut())
            .flatten();
        let Some(pause) = pause else {
            self.packets[packet_id as usize].ingress = NO_PORT;
            return;
        };
        let action = pause.on_queued(buffer, now);
        self.packets[packet_id as usize].ingress = ingress;
        self.send_pause(ingress, action, now);
    }

    /// A queued frame left its queue at `now` (started or dropped): when it counts for a PAUSE
    /// link direction, the count falls.
    fn left_queue(&mut self, frame: Queued, now: SimTime) {
        let ingress = self.packets[frame.packet as usize].ingress;
        if ingress == NO_PORT {
            return;
        }
        let pause = self.ports[ingress as usize].pause.as_mut();
        let action = pause
            .expect("PAUSE port")
            .on_left(u64::from(frame.buffer), now);
        self.send_pause(ingress, action, now);
    }

    /// The receiver of the PAUSE link direction `paused` sends `action` on the reverse wire.
    fn send_pause(&mut self, paused: u32, action: PauseAction, now: SimTime) {
        if action == PauseAction::None {
            return;
        }
        let port = &self.ports[paused as usize];
        let rate = port.rate;
        let reverse = port.pause.as_ref().expect("PAUSE port").reverse;
        let wire = &mut self.ports[reverse as usize];
        let end = now
            .max(wire.busy_until)
            .plus(wire.wire_time(CONTROL_FRAME_BYTES));
        wire.busy_until = end;
        let acts_at = end.plus(wire.delay);
        let pause = self.ports[paused as usize]
            .pause
            .as_mut()
            .expect("PAUSE port");
        let refresh = pause.sent(action, now, acts_at, rate);
        if let Some(at) = refresh {
            self.scheduler.at(at, Event::PauseRefresh(paused));
        }
        let quanta = if action == PauseAction::Xoff {
            pause.quanta
        } else {
            0
        };
        self.scheduler.at(acts_at, Event::Pause(paused, quanta));
    }

    /// A PAUSE frame of `quanta` reaches the sender of port `port_id` at `now`.
    fn pause_arrives(&mut self, port_id: u32, quanta: u16, now: SimTime) {
        let port = &mut self.ports[port_id as usize];
        let (until, rate) = (port.paused_until, port.rate);
        let pause = port.pause.as_mut().expect("PAUSE port");
        port.paused_until = pause.receive(quanta, now, until, rate, self.duration);
        self.serve(port_id, now);
    }

    fn drop_packet(
        &mut self,
        port_id: u32,
        class: u8,
        packet_id: u32,
        reason: DropReason,
        now: SimTime,
    ) {
        self.ports[port_id as usize].count_drop(class, reason);
        if let Some(trace) = self.trace.as_mut() {
            let packet = self.packets[packet_id as usize];
            trace.push(TraceRow::new(
                now,
                now,
                port_id,
                class,
                packet.stream,
                packet.number,
                Some(reason),
            ));
        }
        self.free_packets.push(packet_id);
    }

    /// Starts the next frame on a port if one may start now, and arranges to look again.
    fn serve(&mut self, port_id: u32, now: SimTime) {
        let port = &mut self.ports[port_id as usize];
        let selection = port.select(now, &mut self.unsendable);
        while let Some((class, frame)) = self.unsendable.pop() {
            self.nodes[self.ports[port_id as usize].from as usize].buffer_used -=
                u64::from(frame.buffer);
            if self.any_pause {
                self.left_queue(frame, now);
            }
            self.drop_packet(port_id, class, frame.packet, DropReason::GateTooShort, now);
        }
        let port = &mut self.ports[port_id as usize];
        let mut left = None;
        let wake = match selection {
            Selection::Start(class) => {
                let (frame, end) = port.start(class, now);
                left = Some(frame);
                let packet = &mut self.packets[frame.packet as usize];
                if packet.probe {
                    port.control_forward += 1;
                    if let Some(fecn) = port.fecn.as_mut() {
                        packet.number = fecn.stamp(packet.number);
                    }
                }
                self.nodes[port.from as usize].buffer_used -= u64::from(frame.buffer);
                let lost = port.link_drop(now);
                let arrival = end
                    .plus(port.delay)
                    .plus(self.nodes[port.to as usize].processing_delay);
                let more = port.has_frames();
                if let Some(trace) = self.trace.as_mut() {
                    let packet = self.packets[frame.packet as usize];
                    trace.push(TraceRow::new(
                        now,
                        end,
                        port_id,
                        class,
                        packet.stream,
                        packet.number,
                        None,
                    ));
                }
                match lost {
                    Some(reason) => self.drop_packet(port_id, class, frame.packet, reason, now),
                    None => self.scheduler.at(arrival, Event::Arrive(frame.packet)),
                }
                more.then_some(end)
            }
            Selection::WaitUntil(t) => Some(t),
            Selection::Idle => {
                (now < port.busy_until && port.has_frames()).then_some(port.busy_until)
            }
        };
        if let Some(t) = wake {
            let port = &mut self.ports[port_id as usize];
            if port.wakeup.map_or(true, |pending| t < pending) {
                port.wakeup = Some(t);
                self.scheduler.at(t, Event::Wake(port_id));
            }
        }
        if let (true, Some(frame)) = (self.any_pause, left) {
            self.last_start = now;
            self.left_queue(frame, now);
        }
    }

    /// The results of the run.
    pub fn report(&mut self) -> Report {
        let end = self.end;
        let interval_s = self.interval.as_secs_f64();
        let mut report = Report::default();
        for stream in &mut self.streams {
            report.streams.push(stream.metrics.summary(&stream.name));
            if let Some(control) = stream.control.as_mut() {
                let (mechanism, probes_sent) = match &control.regulator {
                    Regulator::Qcn(_) => ("qcn", 0),
                    Regulator::Bcn(_) => ("bcn", 0),
                    Regulator::Fecn { sent, .. } => ("fecn", *sent),
                };
                report.cn_streams.push(CnStreamRow {
                    stream: stream.name.clone(),
                    mechanism,
                    received: control.received,
                    received_bytes: control.received * u64::from(CONTROL_FRAME_BYTES),
                    probes_sent,
                    final_rate_bps: stream.source.rate.0,
                });
                for (i, row) in control.rates.finish(end).iter().enumerate() {
                    report.rate_series.push(RateSeriesRow::new(
                        &stream.name,
                        i as f64 * interval_s,
                        self.interval,
                        row,
                    ));
                }
            }
            for (i, row) in stream.metrics.series.iter().enumerate() {
                report.series.push(SeriesRow::new(
                    &stream.name,
                    i as f64 * interval_s,
                    interval_s,
                    row,
                ));
            }
            for r in &mut stream.recovery {
                r.function.advance(end.as_ns());
                let ingress = r.ingress.map(|p| self.ports[p as usize].name.clone());
                report.frer.push(FrerRow::new(
                    &stream.name,
                    &self.nodes[r.node as usize].name,
                    ingress,
                    (r.individual, r.keep_tag),
                    r.function.counters(),
                    r.guard
                        .as_ref()
                        .map_or(GuardCounters::default(), |g| g.counters),
                ));
            }
            for f in &stream.filters {
                let ingress = f.ingress.map(|p| self.ports[p as usize].name.clone());
                report.filters.push(FilterRow {
                    stream: stream.name.clone(),
                    node: self.nodes[f.node as usize].name.clone(),
                    ingress,
                    counters: f.counters,
                });
            }
        }
        for a in &self.attackers {
            report.attacks.push(AttackRow {
                port: self.ports[a.port as usize].name.clone(),
                stream: self.streams[a.stream as usize].name.clone(),
                identity: self.streams[a.identity as usize].name.clone(),
                kind: a.kind.name(),
                frames: a.frames,
            });
        }
        let node_names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        for port in &mut self.ports {
            for (class, c) in port.counters.iter().enumerate() {
                if c.tx_frames > 0 || c.drops.iter().any(|&d| d > 0) {
                    report
                        .ports
                        .push(PortRow::new(port, class as u8, c, &node_names));
                }
            }
            let node = node_names[port.from as usize];
            let peer = node_names[port.to as usize];
            if let Some(pause) = &port.pause {
                report.pause.push(PauseRow::new(
                    &port.name,
                    node,
                    peer,
                    pause,
                    pause.paused_seconds(),
                ));
            }
            if let Some(cp) = &port.qcn {
                report.qcn_ports.push(QcnPortRow::new(&port.name, node, cp));
            }
            if let Some(cp) = &port.bcn {
                report.bcn_ports.push(BcnPortRow::new(&port.name, node, cp));
            }
            if let Some(fecn) = &port.fecn {
                report
                    .fecn_ports
                    .push(FecnPortRow::new(&port.name, node, fecn));
            }
            if port.control_forward + port.control_back > 0 {
                report
                    .control
                    .push(ControlRow::new(&port.name, node, peer, port));
            }
            let tx = &port.tx_series.values;
            for (i, row) in port.occupancy.finish(end).iter().enumerate() {
                report.port_series.push(PortSeriesRow::new(
                    &port.name,
                    node,
                    (i as f64 * interval_s, self.interval),
                    row,
                    tx.get(i).copied().unwrap_or(0),
                ));
            }
        }
        for node in &self.nodes {
            report.nodes.push(NodeRow {
                node: node.name.clone(),
                buffer_peak_bytes: node.buffer_peak,
            });
        }
        if let Some(trace) = &self.trace {
            let stream_names: Vec<&str> = self.streams.iter().map(|s| s.name.as_str()).collect();
            report.trace = trace
                .iter()
                .map(|row| row.named(&self.ports, &stream_names))
                .collect();
        }
        let events = self.scheduler.processed();
        report.run = RunInfo {
            events,
            wall_seconds: self.wall_seconds,
            events_per_second: if self.wall_seconds > 0.0 {
                events as f64 / self.wall_seconds
            } else {
                0.0
            },
            simulated_seconds: end.as_secs_f64(),
            frames_created: self.streams.iter().map(|s| s.created).sum(),
        };
        report
    }
}

/// For each hop of `stream`: the hop before it (`NO_HOP` for a first hop), and the time a
/// 64-byte frame takes from the hop's far node back to the talker: per link of the way there,
/// in reverse, its wire time, its propagation delay and the processing delay of the node it
/// reaches.
fn ways_back(
    stream: &crate::spec::StreamSpec,
    spec: &Spec,
    ports: &[Port],
) -> (Vec<u32>, Vec<SimTime>) {
    let mut parent = vec![NO_HOP; stream.hops.len()];
    for (i, hop) in stream.hops.iter().enumerate() {
        for &next in &hop.next {
            parent[next as usize] = i as u32;
        }
    }
    let back = (0..stream.hops.len())
        .map(|hop| {
            let mut delay = SimTime::ZERO;
            let mut at = hop as u32;
            while at != NO_HOP {
                let port = &ports[stream.hops[at as usize].port as usize];
                delay = delay
                    .plus(port.wire_time(CONTROL_FRAME_BYTES))
                    .plus(port.delay)
                    .plus(spec.nodes[port.from as usize].processing_delay);
                at = parent[at as usize];
            }
            delay
        })
        .collect();
    (parent, back)
}
