//! The generator: paced probe frames over UDP (`sendmmsg`, or one UDP GSO send per batch), raw
//! Ethernet (AF_PACKET, `sendmmsg`) or an AF_XDP socket's TX ring (the same frames as raw
//! mode, past the kernel's socket layers), with a report of the rate really achieved so a slow
//! generator is never mistaken for a lossy network.
//!
//! How evenly the frames went is measured from per-frame timestamps: in UDP and raw modes at a
//! paced rate the socket's TX stamps (the NIC's where the interface has hardware stamps, else
//! the kernel's software stamp as the driver takes the frame), read back from the error queue;
//! otherwise (xdp mode, `gso`, unpaced) the time of the send call. The report's `gaps` and
//! `timestamps` say which.
//!
//! Multi-queue (xdp mode, `queues` N > 1): N AF_XDP sockets, one per TX queue 0..N-1, each
//! driven by its own sender (a *lane*) on its own thread, pinned to the k-th CPU the process
//! may use (modulo their number); lane 0 runs in the caller's thread (pinned for the run, its
//! affinity put back at the end), lanes 1..N-1 on threads started at the first step. The lanes
//! share the one stream: each paces rate/N (lane k's schedule shifted by k frame gaps of the
//! whole stream, k bursts for bursts, its own seed for Poisson, so the merged stream has the
//! requested shape), and each frame's sequence number comes from one shared atomic counter
//! taken when the frame is due. So the numbers used are always exactly 0..M, with no gap, however
//! unevenly the lanes run (a lane that falls behind takes fewer numbers, it leaves no holes):
//! the receiver's expected = M, and sent = received + lost stays exact; with numbers fixed per
//! lane (k, k+N, ...) a lane that fell behind at the deadline would leave numbers unused that
//! the receiver would count as lost. Within a lane the numbers increase; each probe carries its
//! lane ([`crate::payload`]) so the receiver judges reordering within each lane, not across
//! lanes, whose interleaving nobody controls. Lane 0 sends the end-of-stream probes once every
//! lane has finished, and its report merges all lanes', with the frames each queue sent.
//!
//! Work is done in [`Sender::step`] slices so a caller can check for Ctrl-C or show progress
//! between them. A test mode ([`Impairment`]) drops, duplicates or swaps chosen sequence
//! numbers on purpose, after the sequence numbers are assigned: an impairment whose effect on
//! the receiver's counts is known in advance.
//!
//! Why one module of 1,200 lines: the three transmit paths (UDP, raw, AF_XDP) share the pacing
//! loop, the batch bookkeeping and the report, and the lanes of multi-queue runs are these same
//! senders.

use crate::frame::{FrameSize, Rate, FCS_LEN};
use crate::gaps::{GapReport, Gaps};
use crate::histogram::{Histogram, Summary};
use crate::pacing::{Pattern, Schedule};
use crate::packet::{self, Addresses};
use crate::payload::{Kind, Probe, MAX_SEQ, PROBE_LEN};
use crate::sys;
use crate::timestamping::{self, Capability, HardwareStamping, Source, Timestamps, TxStamp};
use crate::xdp_redirect::MAX_QUEUES;
use crate::xsk::{self, BindMode, XskSocket};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How frames leave the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A connected UDP socket; the kernel writes the headers.
    Udp,
    /// An AF_PACKET socket on one interface; the sender writes the whole frame.
    Raw,
    /// AF_XDP sockets on queues 0..N-1 of one interface (N = `queues`, default 1); the
    /// sender writes the whole frame (as raw mode), the receiver takes frames an XDP program
    /// redirects to it.
    Xdp,
}

/// Where the frames go: a socket for `sendmmsg`, or an AF_XDP socket.
enum Output {
    Socket(OwnedFd),
    Xsk(XskSocket),
}

impl Output {
    /// Sends up to `count` frames of `len` bytes from `frames`; returns how many were taken.
    fn send(&mut self, frames: &mut [u8], len: usize, count: usize) -> io::Result<usize> {
        match self {
            Output::Socket(fd) => sys::send_batch(fd, frames, len, count),
            Output::Xsk(xsk) => xsk.send(frames, len, count),
        }
    }
}

/// Sequence numbers the sender mistreats on purpose (test mode).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Impairment {
    /// Never sent.
    #[serde(default)]
    pub drop: BTreeSet<u64>,
    /// Sent twice, back to back.
    #[serde(default)]
    pub duplicate: BTreeSet<u64>,
    /// Held back and sent right after the next sequence number.
    #[serde(default)]
    pub swap: BTreeSet<u64>,
}

impl Impairment {
    fn is_empty(&self) -> bool {
        self.drop.is_empty() && self.duplicate.is_empty() && self.swap.is_empty()
    }
}

fn default_batch() -> usize {
    32
}

fn default_end_probes() -> u32 {
    3
}

fn default_queues() -> u32 {
    1
}

/// What to send, where, how fast and for how long.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenderConfig {
    /// UDP or raw Ethernet.
    pub mode: Mode,
    /// Destination IPv4 address.
    pub destination: Ipv4Addr,
    /// Destination UDP port.
    pub port: u16,
    /// Source UDP port (0: any free port; raw mode uses the destination port if 0).
    #[serde(default)]
    pub source_port: u16,
    /// Interface to send on (raw and xdp modes).
    #[serde(default)]
    pub interface: Option<String>,
    /// Destination MAC (raw and xdp modes; broadcast if absent).
    #[serde(default)]
    pub dst_mac: Option<String>,
    /// Ethernet frame size, FCS included.
    pub frame_size: FrameSize,
    /// Offered rate.
    pub rate: Rate,
    /// Shape of the traffic.
    pub pattern: Pattern,
    /// Stop after this many seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Stop after this many data sequence numbers.
    #[serde(default)]
    pub count: Option<u64>,
    /// Stream id carried in every probe.
    #[serde(default)]
    pub stream_id: u16,
    /// Frames per `sendmmsg` call (1..=64).
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// End-of-stream probes sent at the end (0..=100).
    #[serde(default = "default_end_probes")]
    pub end_probes: u32,
    /// Test mode: sequence numbers to drop, duplicate or swap.
    #[serde(default)]
    pub impair: Impairment,
    /// UDP mode: hand each batch of due frames to the kernel as one UDP GSO send; the kernel's
    /// per-send work is paid once per batch, and a NIC (or the stack, before a device without
    /// GSO) cuts it into the same frames. Off by default: on a veth the batch crosses as one
    /// packet, so anything that handles frames on the way (tc/eBPF, the FRER data plane) sees
    /// one packet per batch. Falls back to `sendmmsg` where the kernel refuses.
    #[serde(default)]
    pub gso: bool,
    /// xdp mode: send on TX queues 0..queues, one thread each (1..=the queues the interface
    /// has).
    #[serde(default = "default_queues")]
    pub queues: u32,
}

/// Frames one TX queue's sender sent.
#[derive(Debug, Clone, Serialize)]
pub struct QueueSent {
    /// TX queue index (and the lane in the probes).
    pub queue: u32,
    /// Data frames it handed to the kernel (duplicates included).
    pub frames_sent: u64,
    /// The CPU its thread was pinned to (`None`: not pinned, one queue).
    pub cpu: Option<usize>,
}

/// What the sender did.
#[derive(Debug, Clone, Serialize)]
pub struct SenderReport {
    /// UDP or raw.
    pub mode: Mode,
    /// Frame size (bytes, FCS included).
    pub frame_size: u32,
    /// UDP payload bytes per frame.
    pub udp_payload: u32,
    /// Stream id.
    pub stream_id: u16,
    /// Requested frames/s (`None`: unpaced).
    pub requested_fps: Option<f64>,
    /// Frames handed to the kernel, duplicates included, end probes excluded.
    pub frames_sent: u64,
    /// End-of-stream probes handed to the kernel after the data frames: frames of the same
    /// stream, so the frames on the wire are `frames_sent + end_probes_sent`.
    pub end_probes_sent: u64,
    /// Sequence numbers used (0..sequence_count).
    pub sequence_count: u64,
    /// Seconds from the start to the end of sending.
    pub elapsed_s: f64,
    /// Frames sent per second.
    pub achieved_fps: f64,
    /// Achieved layer-1 bit rate (frame + 20 bytes per frame).
    pub achieved_l1_bps: f64,
    /// Achieved layer-2 bit rate (frame bytes).
    pub achieved_l2_bps: f64,
    /// Frames that were due before the deadline but never sent.
    pub unsent_due: u64,
    /// Largest delay of a frame behind its due time (ns).
    pub max_lag_ns: u64,
    /// Seconds spent spinning to frames' due times (every sending thread's): CPU time that is
    /// pacing, not work (see `WakeMargin`).
    pub spin_s: f64,
    /// Times the kernel refused a batch for lack of buffer space (retried).
    pub kernel_refusals: u64,
    /// ICMP port-unreachable reports (UDP mode: nothing listened at the destination port for
    /// a while; the refused batch was retried).
    pub port_unreachable: u64,
    /// True when the generator did not keep up with the requested rate (see `shortfall_reason`).
    pub shortfall: bool,
    /// Why `shortfall` is set, in words.
    pub shortfall_reason: Option<String>,
    /// CLOCK_REALTIME ns of the first send.
    pub start_realtime_ns: u64,
    /// Test-mode impairment was active.
    pub impaired: bool,
    /// Batches went to the kernel as UDP GSO sends.
    pub gso: bool,
    /// xdp mode: how the kernel moved frames from the socket's memory to the interface.
    pub xsk_bind: Option<BindMode>,
    /// xdp mode: the TX queues used, one sender thread each, and what each sent.
    pub queues: Option<Vec<QueueSent>>,
    /// Which stamps the gaps come from (`tx`, on the clock `clock`), and what the interface
    /// offers.
    pub timestamps: Timestamps,
    /// Per-frame TX stamps read back from the socket (0 when send-call times are used).
    pub tx_stamps: u64,
    /// Per frame with a software TX stamp: the stamp minus the send time in its probe (ns),
    /// how much later the kernel took the frame than the payload stamp says: the error a
    /// latency computed from the payload stamp carries on the send side.
    pub tx_stamp_after_payload_ns: Option<Summary>,
    /// Distribution of the gaps between frames as sent, against 1 / requested rate (paced)
    /// or the mean gap (unpaced); `None` before two frames. Multi-queue: the gaps within each
    /// lane, against N / requested rate (each lane's own pace).
    pub gaps: Option<GapReport>,
}

/// The sender's per-frame TX stamps: which, and the run of stamp numbers so far.
struct TxStamping {
    source: Source,
    /// Keeps the interface's hardware stamping on while sending.
    _hardware: Option<HardwareStamping>,
    next_id: u32,
    received: u64,
    stamps: Vec<TxStamp>,
    /// Send times in the probes by stamp number (modulo its length).
    payload_ns: Vec<u64>,
    after_payload: Histogram,
}

/// Send times kept for matching TX stamps (frames sent but not yet stamped, at most).
const PAYLOAD_TIMES: usize = 1 << 16;

/// What the lanes of one stream share.
struct Shared {
    /// The next sequence number (may run past `count` by the lanes that found it used up).
    next_seq: AtomicU64,
    /// Set to end every lane early (an error in one, or the sender dropped).
    stop: AtomicBool,
    /// Data frames sent, per lane.
    sent: Vec<AtomicU64>,
}

/// A running generator (lane 0 of its stream, or another lane on its own thread).
pub struct Sender {
    config: SenderConfig,
    lane: u8,
    shared: Arc<Shared>,
    /// Added to every due time (this lane's place in the stream's schedule).
    offset_ns: u64,
    /// The CPU this lane's thread is pinned to (multi-queue).
    cpu: Option<usize>,
    /// Lane 0: the caller's affinity, to put back when the run ends.
    affinity: Option<sys::CpuAffinity>,
    /// Lane 0: lanes 1..N, before the start, running, and finished.
    waiting: Vec<Sender>,
    running: Vec<JoinHandle<io::Result<Sender>>>,
    done: Vec<Sender>,
    /// All data frames of this lane sent (end probes and the other lanes still to come).
    data_done: bool,
    output: Output,
    frame_len: usize,
    payload_at: usize,
    buffers: Vec<u8>,
    schedule: Schedule,
    requested_fps: Option<f64>,
    deadline_ns: Option<u64>,
    next_due_ns: u64,
    held: Option<u64>,
    start_ns: u64,
    start_realtime_ns: u64,
    last_send_ns: u64,
    frames_sent: u64,
    end_probes_sent: u64,
    max_lag_ns: u64,
    wake_margin: WakeMargin,
    spin_ns: u64,
    kernel_refusals: u64,
    port_unreachable: u64,
    unsent_due: u64,
    gso_segments: usize,
    finished: bool,
    tx_stamping: Option<TxStamping>,
    gaps: Gaps,
    timestamps: Timestamps,
}

/// How long the sender waits at the end for the TX stamps of its last frames.
const LAST_STAMPS_WAIT_NS: u64 = 20_000_000;

/// Allowed lag behind schedule, as a fraction of the run (at least 1 ms), before a shortfall
/// is flagged; also how long after the deadline frames due before it may still go out.
const LAG_TOLERANCE: f64 = 0.01;

impl Sender {
    /// [`Sender::new`] from a JSON object of [`SenderConfig`].
    ///
    /// # Errors
    /// `InvalidInput` for JSON that is not a valid configuration, else as [`Sender::new`].
    pub fn from_json(config: &str) -> io::Result<Sender> {
        let config = serde_json::from_str(config).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad sender configuration: {e}"),
            )
        })?;
        Sender::new(config)
    }

    /// [`Sender::report`] as a JSON object.
    pub fn report_json(&self) -> String {
        serde_json::to_string(&self.report()).expect("reports are plain data")
    }

    /// Validates `config` and opens the socket (one per queue in multi-queue xdp mode);
    /// pacing starts at the first [`Sender::step`].
    ///
    /// # Errors
    /// `InvalidInput` naming the bad value, or the OS error of opening the socket.
    pub fn new(config: SenderConfig) -> io::Result<Sender> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let queues = config.queues;
        if queues != 1 {
            if config.mode != Mode::Xdp {
                return Err(invalid(format!("queues {queues} is for xdp mode only")));
            }
            if let Some(name) = config.interface.as_deref() {
                let has = sys::interface_queues(name, true)?;
                let most = has.min(MAX_QUEUES);
                if !(1..=most).contains(&queues) {
                    return Err(invalid(format!("queues {queues} is out of range for {name} (1..={most}: it has {has} TX queues)")));
                }
            }
        }
        if let Some(count) = config.count.filter(|&c| c > MAX_SEQ) {
            return Err(invalid(format!(
                "count {count} is out of range (1..={MAX_SEQ}: 56-bit sequence numbers)"
            )));
        }
        let shared = Arc::new(Shared {
            next_seq: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            sent: (0..queues.max(1)).map(|_| AtomicU64::new(0)).collect(),
        });
        let mut first = Sender::open(config.clone(), 0, Arc::clone(&shared))?;
        for lane in 1..queues {
            let config = SenderConfig {
                end_probes: 0,
                ..config.clone()
            };
            first
                .waiting
                .push(Sender::open(config, lane as u8, Arc::clone(&shared))?);
        }
        Ok(first)
    }

    /// Lane `lane` of `shared.sent.len()` lanes: validates `config` and opens its socket.
    fn open(config: SenderConfig, lane: u8, shared: Arc<Shared>) -> io::Result<Sender> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let lanes = shared.sent.len() as u32;
        if !(1..=sys::MAX_BATCH).contains(&config.batch) {
            return Err(invalid(format!(
                "batch {} is out of range (1..={})",
                config.batch,
                sys::MAX_BATCH
            )));
        }
        if config.end_probes > 100 {
            return Err(invalid(format!(
                "end_probes {} is out of range (0..=100)",
                config.end_probes
            )));
        }
        match config.duration_s {
            Some(d) if !(d.is_finite() && d > 0.0) => {
                return Err(invalid(format!(
                    "duration {d} s is not valid (a positive number of seconds)"
                )))
            }
            None if config.count.is_none() => {
                return Err(invalid(
                    "neither a duration nor a count was given (one is needed to stop)".into(),
                ))
            }
            _ => {}
        }
        if config.count == Some(0) {
            return Err(invalid("count 0 is not valid (1 or more frames)".into()));
        }
        let requested_fps = config
            .rate
            .frames_per_sec(config.frame_size)
            .map_err(invalid)?;
        let (pattern, offset_frames) = match config.pattern {
            Pattern::Constant => (config.pattern, u64::from(lane)),
            Pattern::Bursts { frames } => (config.pattern, u64::from(lane) * u64::from(frames)),
            Pattern::Poisson { seed } => (
                Pattern::Poisson {
                    seed: seed.wrapping_add(u64::from(lane)),
                },
                0,
            ),
        };
        let schedule =
            Schedule::new(pattern, requested_fps.map(|f| f / f64::from(lanes))).map_err(invalid)?;
        let offset_ns = requested_fps.map_or(0, |f| (offset_frames as f64 * 1e9 / f) as u64);
        let size = config.frame_size;
        let (output, frame_len, payload_at, header) = match config.mode {
            Mode::Udp => {
                let fd = sys::udp_socket(
                    (Ipv4Addr::UNSPECIFIED, config.source_port),
                    Some((config.destination, config.port)),
                )?;
                sys::set_buffers(&fd, 4 << 20);
                (Output::Socket(fd), size.udp_payload() as usize, 0, None)
            }
            Mode::Raw | Mode::Xdp => {
                let mode = if config.mode == Mode::Raw {
                    "raw"
                } else {
                    "xdp"
                };
                let name = config
                    .interface
                    .as_deref()
                    .ok_or_else(|| invalid(format!("{mode} mode needs an interface")))?;
                let frame_len = size.bytes_without_fcs() as usize;
                if config.mode == Mode::Xdp && frame_len > xsk::MAX_FRAME_BYTES {
                    return Err(invalid(format!(
                        "frame size {} is too large for xdp mode (64..={} bytes: one 4 KiB UMEM chunk less the kernel's headroom)",
                        size.bytes(),
                        xsk::MAX_FRAME_BYTES + FCS_LEN as usize
                    )));
                }
                let index = sys::interface_index(name)?;
                let (src_mac, src_ip) = sys::interface_addresses(name)?;
                let dst_mac = match config.dst_mac.as_deref() {
                    Some(text) => packet::parse_mac(text).map_err(invalid)?,
                    None => [0xFF; 6],
                };
                let src_port = if config.source_port == 0 {
                    config.port
                } else {
                    config.source_port
                };
                let addresses = Addresses {
                    dst_mac,
                    src_mac,
                    src_ip,
                    dst_ip: config.destination,
                    src_port,
                    dst_port: config.port,
                };
                let output = if config.mode == Mode::Raw {
                    let fd = sys::packet_socket(index, 0)?;
                    sys::set_buffers(&fd, 4 << 20);
                    Output::Socket(fd)
                } else {
                    Output::Xsk(XskSocket::open(index as u32, u32::from(lane), false)?)
                };
                (output, frame_len, packet::HEADERS_LEN, Some(addresses))
            }
        };
        let gso_segments = sys::MAX_GSO_SEGMENTS.min(sys::MAX_GSO_BYTES / frame_len);
        let gso_segments = match &output {
            Output::Socket(fd)
                if config.gso
                    && config.mode == Mode::Udp
                    && gso_segments > 1
                    && sys::enable_udp_gso(fd, frame_len).is_ok() =>
            {
                gso_segments
            }
            _ => 0,
        };
        let (tx_stamping, timestamps) =
            open_tx_stamping(&config, &output, requested_fps.is_some(), gso_segments > 0)?;
        let mut buffers = vec![0u8; frame_len * sys::MAX_BATCH];
        for frame in buffers.chunks_mut(frame_len) {
            if let Some(a) = &header {
                packet::emit_headers(frame, a);
            }
            Probe::emit_header(
                &mut frame[payload_at..payload_at + PROBE_LEN],
                Kind::Data,
                config.stream_id,
                lane,
            );
        }
        Ok(Sender {
            deadline_ns: config.duration_s.map(|d| (d * 1e9) as u64),
            config,
            lane,
            shared,
            offset_ns,
            cpu: None,
            affinity: None,
            waiting: Vec::new(),
            running: Vec::new(),
            done: Vec::new(),
            data_done: false,
            output,
            frame_len,
            payload_at,
            buffers,
            schedule,
            requested_fps,
            next_due_ns: 0,
            held: None,
            start_ns: 0,
            start_realtime_ns: 0,
            last_send_ns: 0,
            frames_sent: 0,
            end_probes_sent: 0,
            max_lag_ns: 0,
            wake_margin: WakeMargin::default(),
            spin_ns: 0,
            kernel_refusals: 0,
            port_unreachable: 0,
            unsent_due: 0,
            gso_segments,
            finished: false,
            tx_stamping,
            gaps: Gaps::new(),
            timestamps,
        })
    }

    fn slots_exhausted(&self) -> bool {
        self.config
            .count
            .is_some_and(|c| self.shared.next_seq.load(Ordering::Relaxed) >= c)
            || self
                .deadline_ns
                .is_some_and(|d| self.requested_fps.is_some() && self.next_due_ns >= d)
    }

    /// Sequence numbers the stream used (all lanes).
    fn sequence_count(&self) -> u64 {
        self.shared
            .next_seq
            .load(Ordering::Relaxed)
            .min(self.config.count.unwrap_or(u64::MAX))
    }

    /// The next sequence number of the stream, `None` once `count` are used.
    fn take_seq(&self) -> Option<u64> {
        let seq = self.shared.next_seq.fetch_add(1, Ordering::Relaxed);
        self.config.count.is_none_or(|c| seq < c).then_some(seq)
    }

    fn next_due(&mut self) -> u64 {
        self.schedule.next_due_ns() + self.offset_ns
    }

    /// Lane 0, first step: pins itself and starts lanes 1..N on their threads, pinned, with
    /// the same start time.
    fn start_lanes(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let cpus = allowed_cpus();
        if let Some(&cpu) = cpus.first() {
            self.affinity = pin_to(cpu).ok();
            self.cpu = self.affinity.map(|_| cpu);
        }
        for mut lane in std::mem::take(&mut self.waiting) {
            let cpu = (!cpus.is_empty()).then(|| cpus[usize::from(lane.lane) % cpus.len()]);
            let (start_ns, start_realtime_ns) = (self.start_ns, self.start_realtime_ns);
            self.running.push(std::thread::spawn(move || {
                lane.cpu = cpu.filter(|&c| pin_to(c).is_ok());
                lane.start_ns = start_ns;
                lane.start_realtime_ns = start_realtime_ns;
                lane.next_due_ns = lane.next_due();
                while !lane.shared.stop.load(Ordering::Relaxed) {
                    match lane.step(50_000_000) {
                        Ok(true) => break,
                        Ok(false) => {}
                        Err(e) => {
                            lane.shared.stop.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                }
                Ok(lane)
            }));
        }
    }

    /// Lane 0: waits until `step_end` (monotonic ns) for the other lanes to finish; true once
    /// all have (their reports then in `done`).
    ///
    /// # Errors
    /// The first error a lane ended with.
    fn join_lanes(&mut self, step_end: u64) -> io::Result<bool> {
        while self.running.iter().any(|h| !h.is_finished()) {
            if sys::monotonic_ns() >= step_end {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for handle in std::mem::take(&mut self.running) {
            let lane = handle
                .join()
                .map_err(|_| io::Error::other("a sender thread panicked"))??;
            self.done.push(lane);
        }
        Ok(true)
    }

    /// Lane 0: puts back the caller's CPU affinity.
    fn unpin(&mut self) {
        if let Some(set) = self.affinity.take() {
            // Best effort: the run is over either way.
            let _ = set.apply();
        }
    }

    /// Sends for at most `max_ns` of wall time; returns true once everything (end probes
    /// included) has been sent.
    ///
    /// # Errors
    /// The OS error of a failed send.
    pub fn step(&mut self, max_ns: u64) -> io::Result<bool> {
        if self.finished {
            return Ok(true);
        }
        if self.start_ns == 0 {
            self.start_ns = sys::monotonic_ns();
            self.start_realtime_ns = sys::realtime_ns();
            self.next_due_ns = self.next_due();
            self.start_lanes();
        }
        let step_end = sys::monotonic_ns() + max_ns;
        let impaired = !self.config.impair.is_empty();
        // An impaired slot can put up to three frames in the batch (a duplicate, a held swap).
        let room = if impaired { 3 } else { 1 };
        let batch = self.config.batch.max(room);
        loop {
            let now_abs = sys::monotonic_ns();
            let now = now_abs - self.start_ns;
            let past_deadline = self
                .deadline_ns
                .is_some_and(|d| now >= d + self.catch_up_ns(d));
            let stopped = self.shared.stop.load(Ordering::Relaxed);
            if self.data_done || past_deadline || stopped || self.slots_exhausted() {
                if !self.data_done {
                    self.count_unsent_due();
                    if let Some(seq) = self.held.take() {
                        self.send_seqs(&[seq])?;
                    }
                    self.read_last_tx_stamps()?;
                    self.data_done = true;
                }
                if !self.join_lanes(step_end)? {
                    return Ok(false);
                }
                self.send_end_probes()?;
                self.unpin();
                self.finished = true;
                return Ok(true);
            }
            if now_abs >= step_end {
                return Ok(false);
            }
            if self.next_due_ns > now {
                self.spin_ns += self
                    .wake_margin
                    .wait_until(self.start_ns + self.next_due_ns.min(now + (step_end - now_abs)));
                continue;
            }
            self.max_lag_ns = self.max_lag_ns.max(now - self.next_due_ns);
            let mut seqs = [0u64; sys::MAX_BATCH];
            let mut n = 0;
            while n + room <= batch && self.next_due_ns <= now && !self.slots_exhausted() {
                let Some(seq) = self.take_seq() else { break };
                self.next_due_ns = self.next_due();
                if !impaired {
                    seqs[n] = seq;
                    n += 1;
                    continue;
                }
                let imp = &self.config.impair;
                if imp.swap.contains(&seq) {
                    self.held = Some(seq);
                    continue;
                }
                if !imp.drop.contains(&seq) {
                    seqs[n] = seq;
                    n += 1;
                    if imp.duplicate.contains(&seq) {
                        seqs[n] = seq;
                        n += 1;
                    }
                }
                if let Some(h) = self.held.take() {
                    seqs[n] = h;
                    n += 1;
                }
            }
            self.send_seqs(&seqs[..n])?;
        }
    }

    /// Writes `seqs` and the current time into the batch buffers and sends them all.
    fn send_seqs(&mut self, seqs: &[u64]) -> io::Result<()> {
        if seqs.is_empty() {
            return Ok(());
        }
        let now = sys::realtime_ns();
        for (i, &seq) in seqs.iter().enumerate() {
            let at = i * self.frame_len + self.payload_at;
            Probe::emit_seq_time(&mut self.buffers[at..at + PROBE_LEN], seq, now);
        }
        if let Some(stamping) = &mut self.tx_stamping {
            for id in self.frames_sent..self.frames_sent + seqs.len() as u64 {
                stamping.payload_ns[id as usize % PAYLOAD_TIMES] = now;
            }
        }
        self.send_all(seqs.len())?;
        self.frames_sent += seqs.len() as u64;
        self.shared.sent[usize::from(self.lane)].fetch_add(seqs.len() as u64, Ordering::Relaxed);
        if self.tx_stamping.is_some() {
            self.read_tx_stamps()?;
        } else {
            for _ in seqs {
                self.gaps.record(now);
            }
        }
        Ok(())
    }

    /// Takes the TX stamps queued so far into the gaps (a missing stamp number breaks the run:
    /// no gap across it). Returns how many were read.
    fn read_tx_stamps(&mut self) -> io::Result<u64> {
        let (Some(stamping), Output::Socket(fd)) = (&mut self.tx_stamping, &self.output) else {
            return Ok(0);
        };
        let mut read = 0;
        loop {
            stamping.stamps.clear();
            if timestamping::read_tx_stamps(fd, stamping.source, &mut stamping.stamps)? == 0 {
                return Ok(read);
            }
            for stamp in &stamping.stamps {
                if stamp.id != stamping.next_id {
                    self.gaps.restart();
                }
                self.gaps.record(stamp.time_ns);
                if stamping.source == Source::Software {
                    let payload = stamping.payload_ns[stamp.id as usize % PAYLOAD_TIMES];
                    stamping
                        .after_payload
                        .record(stamp.time_ns.saturating_sub(payload));
                }
                stamping.next_id = stamp.id.wrapping_add(1);
                stamping.received += 1;
                read += 1;
            }
        }
    }

    /// Waits a little for the stamps of the last frames sent (before the end probes).
    fn read_last_tx_stamps(&mut self) -> io::Result<()> {
        let until = sys::monotonic_ns() + LAST_STAMPS_WAIT_NS;
        while self
            .tx_stamping
            .as_ref()
            .is_some_and(|s| s.received < self.frames_sent)
            && sys::monotonic_ns() < until
        {
            if self.read_tx_stamps()? == 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        Ok(())
    }

    fn send_all(&mut self, count: usize) -> io::Result<()> {
        let len = self.frame_len;
        let mut done = 0;
        while done < count {
            let result = match &self.output {
                Output::Socket(fd) if self.gso_segments > 0 => {
                    let take = self.gso_segments.min(count - done);
                    sys::send_bytes(fd, &self.buffers[done * len..(done + take) * len])
                        .map(|_| take)
                }
                _ => self
                    .output
                    .send(&mut self.buffers[done * len..], len, count - done),
            };
            match result {
                Ok(n) => done += n,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    self.port_unreachable += 1
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN)) => {
                    self.kernel_refusals += 1;
                    std::thread::yield_now();
                }
                Err(e)
                    if self.gso_segments > 0
                        && matches!(
                            e.raw_os_error(),
                            Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
                        ) =>
                {
                    self.gso_segments = 0;
                }
                Err(e) => return Err(e),
            }
        }
        self.last_send_ns = sys::monotonic_ns();
        Ok(())
    }

    fn send_end_probes(&mut self) -> io::Result<()> {
        let count = self.config.end_probes as usize;
        if count == 0 {
            return Ok(());
        }
        let mut end = vec![0u8; self.frame_len];
        end.copy_from_slice(&self.buffers[..self.frame_len]);
        let at = self.payload_at;
        Probe::emit_header(
            &mut end[at..at + PROBE_LEN],
            Kind::End,
            self.config.stream_id,
            self.lane,
        );
        Probe::emit_seq_time(
            &mut end[at..at + PROBE_LEN],
            self.sequence_count(),
            sys::realtime_ns(),
        );
        let mut frames = end.repeat(count);
        let mut done = 0;
        while done < count {
            match self.output.send(
                &mut frames[done * self.frame_len..],
                self.frame_len,
                count - done,
            ) {
                Ok(n) => {
                    done += n;
                    self.end_probes_sent += n as u64;
                }
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR)
                            | Some(libc::ENOBUFS)
                            | Some(libc::EAGAIN)
                            | Some(libc::ECONNREFUSED)
                    ) =>
                {
                    std::thread::yield_now()
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// What was sent so far (final once [`Sender::step`] returned true).
    /// Multi-queue: merges the lanes that have finished (all of them once the run has).
    pub fn report(&self) -> SenderReport {
        let size = self.config.frame_size;
        let lanes: Vec<&Sender> = std::iter::once(self).chain(&self.done).collect();
        let last_send_ns = lanes.iter().map(|l| l.last_send_ns).max().unwrap_or(0);
        let elapsed_ns = match (self.deadline_ns, self.finished) {
            (Some(d), true) => d,
            _ => {
                last_send_ns.saturating_sub(self.start_ns)
                    + self.requested_fps.map_or(0, |f| (1e9 / f) as u64)
            }
        };
        let elapsed_s = elapsed_ns.max(1) as f64 / 1e9;
        let frames_sent: u64 = self
            .shared
            .sent
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .sum();
        let achieved_fps = frames_sent as f64 / elapsed_s;
        let sequence_count = self.sequence_count();
        let unsent_due = lanes
            .iter()
            .map(|l| l.unsent_due)
            .sum::<u64>()
            .min(self.config.count.map_or(u64::MAX, |c| c - sequence_count));
        let max_lag_ns = lanes.iter().map(|l| l.max_lag_ns).max().unwrap_or(0);
        let mut gaps = self.gaps.clone();
        for lane in &self.done {
            gaps.merge(&lane.gaps);
        }
        let lane_count = self.shared.sent.len() as f64;
        let lag_limit = LAG_TOLERANCE * elapsed_s * 1e9;
        let shortfall_reason = match self.requested_fps {
            None => None,
            Some(_) if unsent_due > 0 => Some(format!("{unsent_due} frames due before the end were never sent")),
            Some(req) if self.finished && (max_lag_ns as f64) > lag_limit.max(1e6) => Some(format!(
                "frames fell up to {:.3} ms behind schedule (requested {:.0} frames/s, achieved {:.0})",
                max_lag_ns as f64 / 1e6,
                req,
                achieved_fps
            )),
            _ => None,
        };
        SenderReport {
            mode: self.config.mode,
            frame_size: size.bytes(),
            udp_payload: size.udp_payload(),
            stream_id: self.config.stream_id,
            requested_fps: self.requested_fps,
            frames_sent,
            end_probes_sent: self.end_probes_sent,
            sequence_count,
            elapsed_s,
            achieved_fps,
            achieved_l1_bps: achieved_fps * size.l1_bits() as f64,
            achieved_l2_bps: achieved_fps * size.l2_bits() as f64,
            unsent_due,
            max_lag_ns,
            spin_s: lanes.iter().map(|l| l.spin_ns).sum::<u64>() as f64 / 1e9,
            kernel_refusals: lanes.iter().map(|l| l.kernel_refusals).sum(),
            port_unreachable: self.port_unreachable,
            shortfall: shortfall_reason.is_some(),
            shortfall_reason,
            start_realtime_ns: self.start_realtime_ns,
            impaired: !self.config.impair.is_empty(),
            gso: self.gso_segments > 0,
            xsk_bind: match &self.output {
                Output::Xsk(xsk) => Some(xsk.bind_mode()),
                Output::Socket(_) => None,
            },
            queues: (self.config.mode == Mode::Xdp).then(|| {
                let cpus = std::iter::once(self.cpu)
                    .chain(self.done.iter().map(|l| l.cpu))
                    .chain(std::iter::repeat(None));
                self.shared
                    .sent
                    .iter()
                    .zip(cpus)
                    .enumerate()
                    .map(|(q, (sent, cpu))| QueueSent {
                        queue: q as u32,
                        frames_sent: sent.load(Ordering::Relaxed),
                        cpu,
                    })
                    .collect()
            }),
            timestamps: self.timestamps.clone(),
            tx_stamps: self.tx_stamping.as_ref().map_or(0, |s| s.received),
            tx_stamp_after_payload_ns: self
                .tx_stamping
                .as_ref()
                .and_then(|s| s.after_payload.summary()),
            gaps: gaps.report(self.requested_fps.map(|f| 1e9 * lane_count / f)),
        }
    }

    /// How long after the deadline a paced sender may still send frames that were due before
    /// it (a late start of the last batch is lag, not a shortfall; anything beyond is unsent).
    fn catch_up_ns(&self, deadline_ns: u64) -> u64 {
        match self.requested_fps {
            Some(_) => ((deadline_ns as f64 * LAG_TOLERANCE) as u64).max(1_000_000),
            None => 0,
        }
    }

    /// Counts the frames still due before the deadline when sending stops (paced runs).
    fn count_unsent_due(&mut self) {
        let (Some(deadline), Some(_)) = (self.deadline_ns, self.requested_fps) else {
            return;
        };
        let limit = self.config.count.unwrap_or(u64::MAX);
        while self.next_due_ns < deadline && self.sequence_count() + self.unsent_due < limit {
            self.unsent_due += 1;
            self.next_due_ns = self.next_due();
        }
    }
}

/// The TX stamps the sender asks its socket for, and the report's `timestamps`: the
/// interface's hardware stamps where ethtool says it has them, else the kernel's software stamps,
/// in UDP and raw modes at a paced rate; otherwise (xdp mode, GSO, unpaced: stamping every frame
/// would cost what the run measures) none, the gaps then come from the send calls' times.
fn open_tx_stamping(
    config: &SenderConfig,
    output: &Output,
    paced: bool,
    gso: bool,
) -> io::Result<(Option<TxStamping>, Timestamps)> {
    let interface = match (config.mode, output) {
        (Mode::Udp, Output::Socket(fd)) => sys::local_address(fd)
            .ok()
            .and_then(sys::interface_with_address),
        _ => config.interface.clone(),
    };
    let capability = interface
        .as_deref()
        .and_then(|name| Capability::of_interface(name).ok());
    let realtime = "CLOCK_REALTIME".to_string();
    let mut timestamps = Timestamps {
        tx: Source::Payload,
        rx: None,
        clock: realtime.clone(),
        gaps: Source::Payload,
        gaps_clock: realtime,
        interface: interface.clone(),
        hardware: timestamping::hardware_statement(
            interface.as_deref(),
            capability.as_ref(),
            false,
        ),
    };
    let Output::Socket(fd) = output else {
        return Ok((None, timestamps));
    };
    if !paced || gso {
        return Ok((None, timestamps));
    }
    let mut source = capability.map_or(Source::Software, |c| c.tx_source());
    if source == Source::Payload {
        return Ok((None, timestamps));
    }
    let mut hardware = None;
    if source == Source::Hardware {
        let name = interface.as_deref().unwrap_or_default();
        match HardwareStamping::enable(name, true) {
            Ok(h) => hardware = Some(h),
            Err(e) => {
                source = Source::Software;
                timestamps.hardware = format!("{}; but {e}: software stamps", timestamps.hardware);
            }
        }
    }
    timestamping::enable_on_socket(fd, source, false)?;
    if source == Source::Hardware {
        timestamps.hardware =
            timestamping::hardware_statement(interface.as_deref(), capability.as_ref(), true);
    }
    let clock = capability.map_or("CLOCK_REALTIME".into(), |c| c.clock_of(source));
    timestamps = Timestamps {
        tx: source,
        clock: clock.clone(),
        gaps: source,
        gaps_clock: clock,
        ..timestamps
    };
    let stamping = TxStamping {
        source,
        _hardware: hardware,
        next_id: 0,
        received: 0,
        stamps: Vec::with_capacity(sys::MAX_BATCH),
        payload_ns: vec![0; PAYLOAD_TIMES],
        after_payload: Histogram::new(),
    };
    Ok((Some(stamping), timestamps))
}

impl Drop for Sender {
    /// Ends the other lanes (Ctrl-C, an error) and puts back the caller's CPU affinity.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for handle in self.running.drain(..) {
            let _ = handle.join();
        }
        self.unpin();
    }
}

/// The CPUs this process may run on, in order (none if the kernel does not say).
fn allowed_cpus() -> Vec<usize> {
    sys::CpuAffinity::current()
        .map(|set| set.cpus())
        .unwrap_or_default()
}

/// Pins the calling thread to `cpu`; returns the affinity it had.
fn pin_to(cpu: usize) -> io::Result<sys::CpuAffinity> {
    let before = sys::CpuAffinity::current()?;
    sys::CpuAffinity::only(cpu)?.apply()?;
    Ok(before)
}

/// How long before a frame's due time the sender stops sleeping and spins to it. It follows
/// how late this machine wakes from a sleep (tens of us on bare metal; 100-130 us on a 2-core
/// VM whose idle CPU must be woken), so that the spin, not the wake-up, decides when a frame
/// leaves: with a fixed 60 us, 27-36 % of the gaps of a 5 k frames/s stream came out below half
/// the nominal one on such a VM (a late frame, then an on-time one).
#[derive(Debug, Clone, Copy)]
struct WakeMargin(u64);

impl Default for WakeMargin {
    fn default() -> Self {
        WakeMargin(Self::MIN_NS)
    }
}

impl WakeMargin {
    const MIN_NS: u64 = 60_000;
    const MAX_NS: u64 = 1_000_000;

    /// Sleeps until the margin before `target_ns` (CLOCK_MONOTONIC), learns from how late it
    /// woke, then spins to the target; returns the ns it spun.
    fn wait_until(&mut self, target_ns: u64) -> u64 {
        let now = sys::monotonic_ns();
        if target_ns > now + self.0 {
            let wake = target_ns - self.0;
            std::thread::sleep(std::time::Duration::from_nanos(wake - now));
            self.learn(sys::monotonic_ns().saturating_sub(wake));
        }
        let spin_from = sys::monotonic_ns();
        let mut at = spin_from;
        while at < target_ns {
            std::hint::spin_loop();
            at = sys::monotonic_ns();
        }
        at - spin_from
    }

    /// A wake-up `late_ns` after the planned time: one later than the margin allows widens it
    /// at once (to 1.5x the lateness, at most MAX_NS); a prompt one narrows it by 1/64 (at
    /// least MIN_NS).
    fn learn(&mut self, late_ns: u64) {
        let wanted = late_ns + late_ns / 2;
        self.0 = if wanted > self.0 {
            wanted.min(Self::MAX_NS)
        } else {
            (self.0 - self.0 / 64).max(Self::MIN_NS)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_margin_widens_at_a_late_wake_up_and_narrows_slowly_when_prompt() {
        let mut m = WakeMargin::default();
        assert_eq!(m.0, WakeMargin::MIN_NS);
        m.learn(10_000);
        assert_eq!(m.0, WakeMargin::MIN_NS, "never below the minimum");
        m.learn(120_000);
        assert_eq!(m.0, 180_000, "1.5x a wake-up 120 us late");
        m.learn(5_000_000);
        assert_eq!(
            m.0,
            WakeMargin::MAX_NS,
            "a preempted sleep widens it to the cap only"
        );
        m.learn(0);
        assert_eq!(m.0, WakeMargin::MAX_NS - WakeMargin::MAX_NS / 64);
        for _ in 0..1000 {
            m.learn(0);
        }
        assert_eq!(m.0, WakeMargin::MIN_NS);
    }

    /// The error for a valid base configuration with `overrides` (a JSON object) applied.
    fn error(overrides: &str) -> String {
        let mut config: serde_json::Value = serde_json::from_str(
            r#"{"mode":"udp","destination":"198.18.0.2","port":9,"frame_size":64,"count":1,
                "rate":{"frames_per_sec":1000},"pattern":{"kind":"constant"}}"#,
        )
        .unwrap();
        let overrides: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(overrides).unwrap();
        for (key, value) in overrides {
            if value.is_null() {
                config.as_object_mut().unwrap().remove(&key);
            } else {
                config[key] = value;
            }
        }
        Sender::from_json(&config.to_string())
            .err()
            .expect("configuration should be refused")
            .to_string()
    }

    #[test]
    fn bad_sender_settings_are_named_before_any_socket_opens() {
        assert!(error(r#"{"batch":0}"#).contains("batch 0 is out of range (1..=64)"));
        assert!(error(r#"{"count":null}"#).contains("neither a duration nor a count"));
        assert!(error(r#"{"count":0}"#).contains("count 0 is not valid"));
        assert!(error(r#"{"duration_s":-1.0}"#).contains("duration -1 s is not valid"));
        assert!(error(r#"{"end_probes":101}"#).contains("end_probes 101 is out of range (0..=100)"));
        assert!(error(r#"{"frame_size":"huge"}"#).contains("frame size \"huge\" is not valid"));
        assert!(error(r#"{"mode":"raw"}"#).contains("raw mode needs an interface"));
        assert!(error(r#"{"mode":"xdp"}"#).contains("xdp mode needs an interface"));
        assert!(
            error(r#"{"rate":{"l1_bits_per_sec":-5.0}}"#).contains("rate -5 L1 bit/s is not valid")
        );
        assert!(error(r#"{"pattern":{"kind":"bursts","frames":0}}"#).contains("burst of 0 frames"));
    }
}
