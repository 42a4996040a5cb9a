//! The results of a run as plain rows, serialised to JSON for the Python side (which turns
//! each table into a pandas DataFrame): per-stream summaries, per-interval series, per-port
//! and per-node counters, each port's queue length and throughput per interval, FRER counters
//! (with the rogue-rate guards'), stream filters (802.1Qci),
//! congestion control (PAUSE per link direction; QCN, BCN and FECN per port; per
//! rate-controlled stream its messages and its rate per interval; control frames per link),
//! what each attacker did, the optional trace, and how fast the run went.

use frer::recovery::RecoveryCounters;
use serde::Serialize;

use crate::bcn::BcnPoint;
use crate::fecn::FecnPoint;
use crate::guard::GuardCounters;
use crate::metrics::{IntervalRow, QueueInterval, StreamSummary};
use crate::pause::{Pause, CONTROL_FRAME_BYTES};
use crate::port::{ClassCounters, DropReason, Port};
use crate::psfp::FilterCounters;
use crate::qcn::CongestionPoint;
use crate::units::SimTime;

/// Everything a run reports.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// One row per stream.
    pub streams: Vec<StreamSummary>,
    /// One row per stream and interval.
    pub series: Vec<SeriesRow>,
    /// One row per port and traffic class that carried or dropped frames.
    pub ports: Vec<PortRow>,
    /// One row per port (every port, idle ones too) and interval.
    pub port_series: Vec<PortSeriesRow>,
    /// One row per node.
    pub nodes: Vec<NodeRow>,
    /// One row per recovery function.
    pub frer: Vec<FrerRow>,
    /// One row per stream filter (802.1Qci).
    pub filters: Vec<FilterRow>,
    /// One row per link direction running PAUSE.
    pub pause: Vec<PauseRow>,
    /// One row per port with a QCN congestion point.
    pub qcn_ports: Vec<QcnPortRow>,
    /// One row per port with a BCN congestion point.
    pub bcn_ports: Vec<BcnPortRow>,
    /// One row per port with a FECN point.
    pub fecn_ports: Vec<FecnPortRow>,
    /// One row per stream whose rate QCN, BCN or FECN controls.
    pub cn_streams: Vec<CnStreamRow>,
    /// One row per rate-controlled stream and interval: its sending rate.
    pub rate_series: Vec<RateSeriesRow>,
    /// One row per port whose link carried control frames (probes, notifications).
    pub control: Vec<ControlRow>,
    /// One row per attacker.
    pub attacks: Vec<AttackRow>,
    /// Every transmission and drop, when the scenario asked for a trace.
    pub trace: Vec<TraceRecord>,
    /// Size and speed of the run.
    pub run: RunInfo,
}

/// One interval of a stream's series.
#[derive(Debug, Serialize)]
pub struct SeriesRow {
    /// Stream name.
    pub stream: String,
    /// Start of the interval, in seconds.
    pub time_s: f64,
    /// Frames sent in the interval.
    pub sent: u64,
    /// Of those, distinct frames received.
    pub received: u64,
    /// Of those, frames never received.
    pub lost: u64,
    /// Extra copies of frames sent in the interval.
    pub duplicates: u64,
    /// Reordered frames among those sent in the interval.
    pub reordered: u64,
    /// Mean latency of frames sent in the interval, in nanoseconds.
    pub latency_mean_ns: Option<f64>,
    /// L2 throughput of distinct frames arriving in the interval, in bit/s.
    pub throughput_bps: f64,
}

impl SeriesRow {
    /// The row of interval `row` starting at `time_s`, `length_s` long.
    pub fn new(stream: &str, time_s: f64, length_s: f64, row: &IntervalRow) -> Self {
        SeriesRow {
            stream: stream.to_string(),
            time_s,
            sent: row.sent,
            received: row.received,
            lost: row.sent.saturating_sub(row.received),
            duplicates: row.duplicates,
            reordered: row.reordered,
            latency_mean_ns: (row.received > 0)
                .then(|| row.latency_sum_ps / row.received as f64 / 1000.0),
            throughput_bps: row.rx_bytes as f64 * 8.0 / length_s,
        }
    }
}

/// Counters of one traffic class of one port.
#[derive(Debug, Serialize)]
pub struct PortRow {
    /// Port name.
    pub port: String,
    /// Node owning the port.
    pub node: String,
    /// Node at the far end.
    pub peer: String,
    /// Traffic class.
    pub class: u8,
    /// Frames transmitted.
    pub tx_frames: u64,
    /// Frame bytes transmitted.
    pub tx_bytes: u64,
    /// Largest queue occupancy, in buffer bytes.
    pub max_queue_bytes: u64,
    /// Tail drops at the per-queue limit.
    pub drop_queue_full: u64,
    /// Drops for lack of shared buffer.
    pub drop_buffer_full: u64,
    /// Frames lost on a failed link.
    pub drop_link_down: u64,
    /// Frames lost to random link loss.
    pub drop_link_loss: u64,
    /// Frames longer than every gate window of their class.
    pub drop_gate_too_short: u64,
    /// Frames that crossed the link and were not identified at the far node (`peer`).
    pub drop_not_identified: u64,
}

impl PortRow {
    /// The row of `class` of `port`.
    pub fn new(port: &Port, class: u8, c: &ClassCounters, node_names: &[&str]) -> Self {
        let d = |reason: DropReason| c.drops[reason as usize];
        PortRow {
            port: port.name.clone(),
            node: node_names[port.from as usize].to_string(),
            peer: node_names[port.to as usize].to_string(),
            class,
            tx_frames: c.tx_frames,
            tx_bytes: c.tx_bytes,
            max_queue_bytes: c.max_queue_bytes,
            drop_queue_full: d(DropReason::QueueFull),
            drop_buffer_full: d(DropReason::BufferFull),
            drop_link_down: d(DropReason::LinkDown),
            drop_link_loss: d(DropReason::LinkLoss),
            drop_gate_too_short: d(DropReason::GateTooShort),
            drop_not_identified: d(DropReason::NotIdentified),
        }
    }
}

/// One interval of a port's queue length: buffer bytes queued over all its traffic classes
/// (frames waiting, as in `PortRow::max_queue_bytes`: a frame leaves the queue when its
/// transmission starts).
#[derive(Debug, Serialize)]
pub struct PortSeriesRow {
    /// Port name.
    pub port: String,
    /// Node owning the port.
    pub node: String,
    /// Start of the interval, in seconds.
    pub time_s: f64,
    /// Largest occupancy in the interval, in buffer bytes.
    pub queue_max_bytes: u64,
    /// Time-weighted mean occupancy over the interval, in buffer bytes.
    pub queue_mean_bytes: f64,
    /// Frame bytes (L2) whose transmission started in the interval, as bit/s.
    pub tx_bps: f64,
}

impl PortSeriesRow {
    /// The row of interval `row` of `port` (starting at `time_s`, `length` long) that sent
    /// `tx_bytes`.
    pub fn new(
        port: &str,
        node: &str,
        (time_s, length): (f64, SimTime),
        row: &QueueInterval,
        tx_bytes: u64,
    ) -> Self {
        PortSeriesRow {
            port: port.to_string(),
            node: node.to_string(),
            time_s,
            queue_max_bytes: row.max_bytes,
            queue_mean_bytes: row.byte_ps as f64 / length.0 as f64,
            tx_bps: tx_bytes as f64 * 8.0 / length.as_secs_f64(),
        }
    }
}

/// PAUSE on one link direction: what its receiver sent back, and how long its sender waited.
#[derive(Debug, Serialize)]
pub struct PauseRow {
    /// The paused port (link direction).
    pub port: String,
    /// Its node, the sender that pauses.
    pub node: String,
    /// The far node, which counts the buffer and sends the PAUSE frames.
    pub peer: String,
    /// PAUSE frames with a pause time (XOFF).
    pub xoff_frames: u64,
    /// PAUSE frames with pause time 0 (XON).
    pub xon_frames: u64,
    /// Bytes of all PAUSE frames (64 each) on the reverse direction.
    pub pause_bytes: u64,
    /// Time the port was paused, in seconds.
    pub paused_s: f64,
    /// Largest buffer bytes at the far node from this link direction.
    pub ingress_peak_bytes: u64,
}

impl PauseRow {
    /// The row of the PAUSE state `p` of port `port`, paused `paused_s` in all.
    pub fn new(port: &str, node: &str, peer: &str, p: &Pause, paused_s: f64) -> Self {
        PauseRow {
            port: port.to_string(),
            node: node.to_string(),
            peer: peer.to_string(),
            xoff_frames: p.xoff_frames,
            xon_frames: p.xon_frames,
            pause_bytes: (p.xoff_frames + p.xon_frames) * u64::from(CONTROL_FRAME_BYTES),
            paused_s,
            ingress_peak_bytes: p.buffered_peak,
        }
    }
}

/// A QCN congestion point: what it saw, sampled and sent.
#[derive(Debug, Serialize)]
pub struct QcnPortRow {
    /// Port name.
    pub port: String,
    /// Node owning the port.
    pub node: String,
    /// Bytes of frames of QCN streams that arrived at its queues.
    pub arrived_bytes: u64,
    /// Frames sampled.
    pub samples: u64,
    /// Notifications sent (samples with negative feedback).
    pub notifications: u64,
    /// Bytes of the notifications (64 each).
    pub notification_bytes: u64,
}

impl QcnPortRow {
    /// The row of the congestion point `cp` of `port`.
    pub fn new(port: &str, node: &str, cp: &CongestionPoint) -> Self {
        QcnPortRow {
            port: port.to_string(),
            node: node.to_string(),
            arrived_bytes: cp.arrived_bytes,
            samples: cp.samples,
            notifications: cp.notifications,
            notification_bytes: cp.notifications * u64::from(CONTROL_FRAME_BYTES),
        }
    }
}

/// A BCN congestion point: what it saw, sampled and sent.
#[derive(Debug, Serialize)]
pub struct BcnPortRow {
    /// Port name.
    pub port: String,
    /// Node owning the port.
    pub node: String,
    /// Bytes of frames of BCN streams that arrived at its queues.
    pub arrived_bytes: u64,
    /// Frames sampled.
    pub samples: u64,
    /// Negative feedback sent.
    pub negative: u64,
    /// Positive feedback sent.
    pub positive: u64,
    /// Bytes of all feedback (64 each).
    pub notification_bytes: u64,
}

impl BcnPortRow {
    /// The row of the congestion point `cp` of `port`.
    pub fn new(port: &str, node: &str, cp: &BcnPoint) -> Self {
        BcnPortRow {
            port: port.to_string(),
            node: node.to_string(),
            arrived_bytes: cp.arrived_bytes,
            samples: cp.samples,
            negative: cp.negative,
            positive: cp.positive,
            notification_bytes: (cp.negative + cp.positive) * u64::from(CONTROL_FRAME_BYTES),
        }
    }
}

/// A FECN point: probes stamped and the rate it advertised.
#[derive(Debug, Serialize)]
pub struct FecnPortRow {
    /// Port name.
    pub port: String,
    /// Node owning the port.
    pub node: String,
    /// Probes that passed.
    pub probes: u64,
    /// Advertised rate at the end of the run, in bit/s.
    pub advertised_bps: f64,
    /// Smallest advertised rate of the run, in bit/s.
    pub min_advertised_bps: f64,
}

impl FecnPortRow {
    /// The row of the FECN point `p` of `port`.
    pub fn new(port: &str, node: &str, p: &FecnPoint) -> Self {
        FecnPortRow {
            port: port.to_string(),
            node: node.to_string(),
            probes: p.probes,
            advertised_bps: p.advertised,
            min_advertised_bps: p.min_advertised,
        }
    }
}

/// A stream whose rate QCN, BCN or FECN controls.
#[derive(Debug, Serialize)]
pub struct CnStreamRow {
    /// Stream name.
    pub stream: String,
    /// "qcn", "bcn" or "fecn".
    pub mechanism: &'static str,
    /// Messages that reached the talker: notifications (QCN, BCN) or reflected probes (FECN).
    pub received: u64,
    /// Bytes of those messages (64 each).
    pub received_bytes: u64,
    /// FECN probes sent (0 for QCN and BCN).
    pub probes_sent: u64,
    /// Sending rate at the end of the run, in bit/s.
    pub final_rate_bps: u64,
}

/// Control frames on one port's link: FECN probes it sent, and notifications and reflected
/// probes that crossed its link the other way (towards its node). Each is 64 bytes.
#[derive(Debug, Serialize)]
pub struct ControlRow {
    /// Port name.
    pub port: String,
    /// Node owning the port.
    pub node: String,
    /// Node at the far end.
    pub peer: String,
    /// Control frames sent by the port (node to peer).
    pub forward_frames: u64,
    /// Control frames that crossed the link from peer to node.
    pub back_frames: u64,
    /// Bytes of both (64 each).
    pub control_bytes: u64,
}

impl ControlRow {
    /// The row of `port`.
    pub fn new(name: &str, node: &str, peer: &str, port: &Port) -> Self {
        ControlRow {
            port: name.to_string(),
            node: node.to_string(),
            peer: peer.to_string(),
            forward_frames: port.control_forward,
            back_frames: port.control_back,
            control_bytes: (port.control_forward + port.control_back)
                * u64::from(CONTROL_FRAME_BYTES),
        }
    }
}

/// One interval of a rate-controlled stream's sending rate (QCN's current rate CR, BCN's
/// regulated rate, FECN's returned rate; in the stream's rate layer, L1 or L2).
#[derive(Debug, Serialize)]
pub struct RateSeriesRow {
    /// Stream name.
    pub stream: String,
    /// Start of the interval, in seconds.
    pub time_s: f64,
    /// Time-weighted mean rate over the interval, in bit/s.
    pub rate_mean_bps: f64,
    /// Largest rate in the interval, in bit/s.
    pub rate_max_bps: u64,
}

impl RateSeriesRow {
    /// The row of interval `row` (the rate as a level) starting at `time_s`, `length` long.
    pub fn new(stream: &str, time_s: f64, length: SimTime, row: &QueueInterval) -> Self {
        RateSeriesRow {
            stream: stream.to_string(),
            time_s,
            rate_mean_bps: row.byte_ps as f64 / length.0 as f64,
            rate_max_bps: row.max_bytes,
        }
    }
}

/// Buffer use of one node.
#[derive(Debug, Serialize)]
pub struct NodeRow {
    /// Node name.
    pub node: String,
    /// Largest total of queued buffer bytes over its ports.
    pub buffer_peak_bytes: u64,
}

/// The clause-10 counters of one recovery function.
#[derive(Debug, Serialize)]
pub struct FrerRow {
    /// Stream name.
    pub stream: String,
    /// Node it runs on.
    pub node: String,
    /// Port whose frames it sees (individual recovery of a member stream), if restricted.
    pub ingress: Option<String>,
    /// Individual recovery.
    pub individual: bool,
    /// Passed frames keep their R-TAG (a relay that recovers and replicates again).
    pub keep_tag: bool,
    /// Its clause-10 counters, flattened into the row under their own names.
    #[serde(flatten)]
    pub counters: RecoveryCounters,
    /// Alarms of its rogue-rate guard (0 without one).
    pub guard_alarms: u64,
    /// Of those, alarms in a period in which it passed nothing (locked out).
    pub guard_locked_out: u64,
    /// Management resets its guard gave (also counted in `resets`).
    pub guard_resets: u64,
}

impl FrerRow {
    /// The row of one function and its guard's counters.
    pub fn new(
        stream: &str,
        node: &str,
        ingress: Option<String>,
        (individual, keep_tag): (bool, bool),
        counters: &RecoveryCounters,
        guard: GuardCounters,
    ) -> Self {
        FrerRow {
            stream: stream.to_string(),
            node: node.to_string(),
            ingress,
            individual,
            keep_tag,
            counters: *counters,
            guard_alarms: guard.alarms,
            guard_locked_out: guard.locked_out,
            guard_resets: guard.resets,
        }
    }
}

/// What one stream filter did (ieee802-dot1q-psfp's counters).
#[derive(Debug, Serialize)]
pub struct FilterRow {
    /// Stream name.
    pub stream: String,
    /// Node it filters at.
    pub node: String,
    /// The port whose frames it takes (a member path); `None`: every port into `node`.
    pub ingress: Option<String>,
    /// Its counters, flattened into the row under their own names.
    #[serde(flatten)]
    pub counters: FilterCounters,
}

/// What one attacker did.
#[derive(Debug, Serialize)]
pub struct AttackRow {
    /// The port whose link it is on.
    pub port: String,
    /// The stream it attacked.
    pub stream: String,
    /// The stream whose identity its frames carried.
    pub identity: String,
    /// inject, replay, babble or strip_tag.
    pub kind: &'static str,
    /// Frames it sent (inject, replay, babble) or stripped of their R-TAG (strip_tag).
    pub frames: u64,
}

/// A transmission or drop as recorded during the run (indices, not names).
#[derive(Clone, Copy, Debug)]
pub struct TraceRow {
    start: SimTime,
    end: SimTime,
    port: u32,
    class: u8,
    stream: u32,
    number: u64,
    drop: Option<DropReason>,
}

impl TraceRow {
    /// A frame of `stream` numbered `number` left (`drop` None) or was dropped at `port`.
    pub fn new(
        start: SimTime,
        end: SimTime,
        port: u32,
        class: u8,
        stream: u32,
        number: u64,
        drop: Option<DropReason>,
    ) -> Self {
        TraceRow {
            start,
            end,
            port,
            class,
            stream,
            number,
            drop,
        }
    }

    /// The reported form, with names.
    pub fn named(&self, ports: &[Port], streams: &[&str]) -> TraceRecord {
        TraceRecord {
            start_ns: self.start.0 as f64 / 1000.0,
            end_ns: self.end.0 as f64 / 1000.0,
            port: ports[self.port as usize].name.clone(),
            class: self.class,
            stream: streams[self.stream as usize].to_string(),
            number: self.number,
            drop: self.drop,
        }
    }
}

/// One transmission (start and end on the wire) or drop (`drop` says why).
#[derive(Debug, Serialize)]
pub struct TraceRecord {
    /// When transmission started (or the drop happened), in nanoseconds.
    pub start_ns: f64,
    /// When the last bit left, in nanoseconds (equal to `start_ns` for drops).
    pub end_ns: f64,
    /// Port name.
    pub port: String,
    /// Traffic class.
    pub class: u8,
    /// Stream name.
    pub stream: String,
    /// The frame's number within its stream.
    pub number: u64,
    /// Why it was dropped; `None` for a transmission.
    pub drop: Option<DropReason>,
}

/// How big and how fast a run was.
#[derive(Debug, Default, Serialize)]
pub struct RunInfo {
    /// Events processed.
    pub events: u64,
    /// Wall-clock time of the event loop.
    pub wall_seconds: f64,
    /// events / wall_seconds.
    pub events_per_second: f64,
    /// Simulated time at the last event.
    pub simulated_seconds: f64,
    /// Frames the talkers created.
    pub frames_created: u64,
}
