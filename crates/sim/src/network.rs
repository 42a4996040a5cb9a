//! A simulation: nodes, ports and streams built from a `Spec`, driven by the event core.
//!
//! A frame walks its stream's route tree: a talker's source creates it, each hop is an egress
//! port, and at each node the stream's FRER functions placed there run on arrival (sequence
//! generation tags it, recovery functions pass or discard it). A hop with several next hops
//! replicates the frame; a hop with none delivers it to the listener's metrics. Packets live in
//! an arena and events carry indices, so the hot loop allocates nothing per frame.
//!
//! Congestion notification (BCN, FECN, QCN) fits in without rewrites: a congestion point reads
//! a port's `queued_bytes` when a frame is enqueued, feedback frames are packets of a control
//! stream routed back to the talker (a route tree like any other), and the reaction point sets
//! the talker's `Source::rate`, which every departure reads.

use std::time::Instant;

use frer::generation::SequenceGenerator;
use frer::recovery::{RecoveryParams, SequenceRecovery};
use frer::SeqNum;

use crate::engine::Scheduler;
use crate::metrics::StreamMetrics;
use crate::port::{DropReason, Port, Queued, Selection};
use crate::report::{
    FrerRow, NodeRow, PortRow, PortSeriesRow, Report, RunInfo, SeriesRow, TraceRow,
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
    function: SequenceRecovery,
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
    created: u64,
    metrics: StreamMetrics,
}

/// A built network ready to run, and its results afterwards.
pub struct Simulation {
    scheduler: Scheduler<Event>,
    nodes: Vec<Node>,
    ports: Vec<Port>,
    streams: Vec<Stream>,
    packets: Vec<Packet>,
    free_packets: Vec<u32>,
    unsendable: Vec<(u8, Queued)>,
    trace: Option<Vec<TraceRow>>,
    interval: SimTime,
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
        let ports = spec
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| Port::new(p, spec.interval, Rng::new(spec.seed, (1 << 32) | i as u64)))
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
                recovery.push(Recovery {
                    node: r.node,
                    ingress: r.ingress,
                    individual: r.individual,
                    function,
                });
            }
            let source = Source::new(s, spec.duration, Rng::new(spec.seed, i as u64));
            if let Some(t) = source.first_departure() {
                scheduler.at(t, Event::Depart(i as u32));
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
                created: 0,
                metrics: StreamMetrics::new(spec.interval, spec.warmup),
            });
        }
        Ok(Simulation {
            scheduler,
            nodes,
            ports,
            streams,
            packets: Vec::with_capacity(4096),
            free_packets: Vec::with_capacity(4096),
            unsendable: Vec::new(),
            trace: spec.trace.then(Vec::new),
            interval: spec.interval,
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
                }
            }
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

    fn depart(&mut self, stream_id: u32, now: SimTime) {
        let stream = &mut self.streams[stream_id as usize];
        let bytes = stream.source.frame_bytes();
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
        });
        if self.run_frer_functions(packet, talker, None, now) {
            self.forward(packet, start, len, now);
        }
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
            if !r.individual && packet.rtag.take().is_some() {
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
        if !self.run_frer_functions(packet_id, node, Some(port), now) {
            return;
        }
        if len == 0 {
            let packet = self.packets[packet_id as usize];
            let stream = &mut self.streams[packet.stream as usize];
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
            self.forward(packet_id, start, len, now);
        }
    }

    /// Sends the packet on each of the hops `next[start..start + len]` of its stream, copying
    /// it for every hop after the first (replication).
    #[inline]
    fn forward(&mut self, packet_id: u32, start: u32, len: u32, now: SimTime) {
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
            self.enqueue(port, copy, now);
        }
    }

    fn enqueue(&mut self, port_id: u32, packet_id: u32, now: SimTime) {
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
            self.drop_packet(port_id, class, frame.packet, DropReason::GateTooShort, now);
        }
        let port = &mut self.ports[port_id as usize];
        let wake = match selection {
            Selection::Start(class) => {
                let (frame, end) = port.start(class, now);
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
    }

    /// The results of the run.
    pub fn report(&mut self) -> Report {
        let end = self.scheduler.now();
        let interval_s = self.interval.as_secs_f64();
        let mut report = Report::default();
        for stream in &mut self.streams {
            report.streams.push(stream.metrics.summary(&stream.name));
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
                    r.individual,
                    r.function.counters(),
                ));
            }
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
            for (i, row) in port.occupancy.finish(end).iter().enumerate() {
                report.port_series.push(PortSeriesRow::new(
                    &port.name,
                    node,
                    i as f64 * interval_s,
                    self.interval,
                    row,
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
