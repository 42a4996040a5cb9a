//! The receiver: takes probe frames from a UDP socket (`recvmmsg`) or an AF_PACKET socket,
//! timestamps each in the kernel (`SO_TIMESTAMPING` software receive stamps, CLOCK_REALTIME)
//! and feeds the per-stream [`StreamAccounting`]; or, in xdp mode, takes them off an AF_XDP
//! socket's RX ring (an XDP program redirects the probe port's frames there), timed in user
//! space as the ring is read, since AF_XDP carries no kernel timestamp. With `queues` N, xdp
//! mode opens one AF_XDP socket per RX queue 0..N-1 (the XDP program sends each frame to its
//! queue's socket) and one thread reads all N rings, so every frame goes through one
//! accounting per stream: the report is one, with the frames taken from each queue beside it.
//!
//! Latency is always computed from one consistent pair on one clock: the probe's send time
//! (the sender's CLOCK_REALTIME) and the CLOCK_REALTIME receive stamp. Where the interface has
//! hardware receive stamps (ethtool), they are asked for too and time the inter-arrival gaps
//! (both ends of a gap on the NIC's clock); they are never paired with the probe's send time,
//! which is on another clock. The report's `timestamps` says which stamps were used.
//!
//! Work is done in [`Receiver::step`] slices so a caller can check for Ctrl-C between them.
//! The run ends after `duration_s`, `linger_s` after every stream seen has sent its
//! end-of-stream probe, or `idle_s` without traffic, whichever comes first.
//!
//! Why over 600 lines: the UDP, AF_PACKET and AF_XDP receive loops feed one accounting and one
//! report, and share the timestamp handling between them.

use crate::accounting::{StreamAccounting, StreamReport};
use crate::frame::{FCS_LEN, MAX_FRAME, UDP_OVERHEAD};
use crate::gaps::{GapReport, Gaps};
use crate::histogram::{Histogram, Summary};
use crate::packet;
use crate::payload::{Kind, Probe};
use crate::sys;
use crate::timestamping::{self, Capability, HardwareStamping, Source, Timestamps};
use crate::xdp_redirect::{self, AttachMode, Redirect};
use crate::xsk::{self, BindMode, XskSocket};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::time::Duration;

pub use crate::sender::Mode;

/// Largest message of coalesced (GRO) or not yet segmented (GSO) UDP datagrams.
const COALESCED_MAX: usize = 65_536;
/// Room for a raw capture's virtio-net and Ethernet headers.
const RAW_HEADERS_MAX: usize = 10 + 14;

fn default_interval() -> f64 {
    1.0
}

fn default_linger() -> f64 {
    0.5
}

/// Where to listen and when to stop.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverConfig {
    /// UDP socket or AF_PACKET on an interface.
    pub mode: Mode,
    /// UDP port the probes are sent to.
    pub port: u16,
    /// Local address to bind (UDP mode; default any).
    #[serde(default)]
    pub bind: Option<Ipv4Addr>,
    /// Interface to listen on (raw and xdp modes).
    #[serde(default)]
    pub interface: Option<String>,
    /// Stop after this many seconds (default: only on end of stream).
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Per-interval series period in seconds.
    #[serde(default = "default_interval")]
    pub interval_s: f64,
    /// Also count per range of this many sequence numbers (`seq_bins` in the report).
    #[serde(default)]
    pub interval_frames: Option<u64>,
    /// Seconds to keep listening for stragglers after the last end-of-stream probe.
    #[serde(default = "default_linger")]
    pub linger_s: f64,
    /// Stop after this many seconds without a probe, once one has arrived (for senders that
    /// send no end-of-stream probe).
    #[serde(default)]
    pub idle_s: Option<f64>,
    /// UDP mode: accept datagrams coalesced by UDP GRO (each still accounted on its own).
    #[serde(default = "default_gro")]
    pub gro: bool,
    /// xdp mode: read RX queues 0..queues of the interface (1..=the queues it has).
    #[serde(default = "default_queues")]
    pub queues: u32,
}

fn default_gro() -> bool {
    true
}

fn default_queues() -> u32 {
    1
}

/// Frames taken from one queue's AF_XDP socket (probes or not).
#[derive(Debug, Clone, Serialize)]
pub struct QueueFrames {
    /// RX queue index.
    pub queue: u32,
    /// Frames read from its ring.
    pub frames: u64,
}

/// One stream's measurements plus the frame sizes seen.
#[derive(Debug, Clone, Serialize)]
pub struct StreamResult {
    /// Stream id from the probes.
    pub stream_id: u16,
    /// Smallest frame size seen (bytes, FCS included).
    pub frame_size_min: u32,
    /// Largest frame size seen (bytes, FCS included).
    pub frame_size_max: u32,
    /// Accounting results.
    #[serde(flatten)]
    pub report: StreamReport,
    /// Distribution of the gaps between data arrivals (duplicates included), against their
    /// mean (the achieved rate); `None` before two arrivals.
    pub gaps: Option<GapReport>,
}

/// What the receiver measured.
#[derive(Debug, Clone, Serialize)]
pub struct ReceiverReport {
    /// UDP or raw.
    pub mode: Mode,
    /// Messages that were not probes for this port (ignored).
    pub ignored: u64,
    /// Datagrams the receive socket dropped for lack of buffer space (the receiver's own
    /// loss, not the network's): the socket's own counter, or failing that the last count the
    /// kernel attached to a datagram; None if neither could be read.
    pub socket_drops: Option<u32>,
    /// Messages without a kernel timestamp (timed by the receiver's clock instead).
    pub untimestamped: u64,
    /// CLOCK_REALTIME ns when listening began.
    pub start_realtime_ns: u64,
    /// Seconds spent listening.
    pub elapsed_s: f64,
    /// Per-stream results, by stream id.
    pub streams: Vec<StreamResult>,
    /// xdp mode: how the kernel moved frames into the socket's memory.
    pub xsk_bind: Option<BindMode>,
    /// xdp mode: how the redirecting XDP program was attached.
    pub xdp_attach: Option<AttachMode>,
    /// xdp mode: the RX queues read (one AF_XDP socket each) and the frames each gave.
    pub queues: Option<Vec<QueueFrames>>,
    /// Which stamps and clock the latency (`tx`, `rx`, `clock`) and the gaps come from.
    pub timestamps: Timestamps,
    /// Per probe with a kernel receive stamp: the receiver's CLOCK_REALTIME when it handled the
    /// frame's batch minus that stamp (ns): the error a latency timed in user space (as xdp
    /// mode's) carries on the receive side.
    pub read_after_rx_stamp_ns: Option<Summary>,
}

/// Where frames come from.
enum Input {
    Socket(OwnedFd),
    /// The AF_XDP sockets of queues 0..N-1, the XDP program that feeds them (detached when
    /// dropped), and the frames taken from each.
    Xsk(Vec<XskSocket>, Redirect, Vec<u64>),
}

struct Stream {
    accounting: StreamAccounting,
    gaps: Gaps,
    frame_size_min: u32,
    frame_size_max: u32,
}

/// A running receiver.
pub struct Receiver {
    config: ReceiverConfig,
    input: Input,
    timestamps: Timestamps,
    /// Keeps the interface's hardware receive stamping on while listening.
    _hardware: Option<HardwareStamping>,
    batch: sys::RecvBatch,
    streams: BTreeMap<u16, Stream>,
    ignored: u64,
    socket_drops: Option<u32>,
    untimestamped: u64,
    read_after_rx_stamp: Histogram,
    start_ns: u64,
    start_realtime_ns: u64,
    all_ended_at_ns: Option<u64>,
    last_probe_at_ns: Option<u64>,
    finished_at_ns: Option<u64>,
}

impl Receiver {
    /// [`Receiver::new`] from a JSON object of [`ReceiverConfig`].
    ///
    /// # Errors
    /// `InvalidInput` for JSON that is not a valid configuration, else as [`Receiver::new`].
    pub fn from_json(config: &str) -> io::Result<Receiver> {
        let config = serde_json::from_str(config).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad receiver configuration: {e}"),
            )
        })?;
        Receiver::new(config)
    }

    /// [`Receiver::report`] as a JSON object.
    pub fn report_json(&self) -> String {
        serde_json::to_string(&self.report()).expect("reports are plain data")
    }

    /// Validates `config` and opens the socket (listening starts now).
    ///
    /// # Errors
    /// `InvalidInput` naming the bad value, or the OS error of opening the socket.
    pub fn new(config: ReceiverConfig) -> io::Result<Receiver> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        if !(config.interval_s.is_finite() && config.interval_s >= 0.001) {
            return Err(invalid(format!(
                "interval {} s is out of range (0.001 s or more)",
                config.interval_s
            )));
        }
        if config.interval_frames == Some(0) {
            return Err(invalid(
                "interval_frames 0 is out of range (1 or more sequence numbers per bin)".into(),
            ));
        }
        if !(config.linger_s.is_finite() && (0.0..=60.0).contains(&config.linger_s)) {
            return Err(invalid(format!(
                "linger {} s is out of range (0..=60 s)",
                config.linger_s
            )));
        }
        for (name, value) in [("duration", config.duration_s), ("idle", config.idle_s)] {
            if let Some(d) = value {
                if !(d.is_finite() && d > 0.0) {
                    return Err(invalid(format!(
                        "{name} {d} s is not valid (a positive number of seconds)"
                    )));
                }
            }
        }
        if config.mode != Mode::Xdp && config.queues != 1 {
            return Err(invalid(format!(
                "queues {} is for xdp mode only",
                config.queues
            )));
        }
        let socket = match config.mode {
            Mode::Udp => sys::udp_socket(
                (config.bind.unwrap_or(Ipv4Addr::UNSPECIFIED), config.port),
                None,
            )?,
            Mode::Raw => {
                let name = config
                    .interface
                    .as_deref()
                    .ok_or_else(|| invalid("raw mode needs an interface".into()))?;
                let fd = sys::packet_socket(sys::interface_index(name)?, libc::ETH_P_IP as u16)?;
                sys::enable_vnet_header(&fd)?;
                fd
            }
            Mode::Xdp => {
                let name = config
                    .interface
                    .as_deref()
                    .ok_or_else(|| invalid("xdp mode needs an interface".into()))?;
                let index = sys::interface_index(name)? as u32;
                let has = sys::interface_queues(name, false)?;
                let most = has.min(xdp_redirect::MAX_QUEUES);
                if !(1..=most).contains(&config.queues) {
                    return Err(invalid(format!(
                        "queues {} is out of range for {name} (1..={most}: it has {has} RX queues)",
                        config.queues
                    )));
                }
                let mut redirect = Redirect::load(config.port)?;
                let mut sockets = Vec::new();
                for queue in 0..config.queues {
                    let xsk = XskSocket::open(index, queue, true)?;
                    redirect.insert(queue, xsk.fd())?;
                    sockets.push(xsk);
                }
                redirect.attach(index, name)?;
                let capability = Capability::of_interface(name).ok();
                let userspace = Timestamps {
                    tx: Source::Payload,
                    rx: Some(Source::Userspace),
                    clock: "CLOCK_REALTIME".into(),
                    gaps: Source::Userspace,
                    gaps_clock: "CLOCK_REALTIME".into(),
                    interface: Some(name.into()),
                    hardware: format!(
                        "{}; AF_XDP gives no receive stamp: frames are timed when the RX ring is read",
                        timestamping::hardware_statement(Some(name), capability.as_ref(), false)
                    ),
                };
                let counts = vec![0; sockets.len()];
                return Ok(Receiver::with_input(
                    config,
                    Input::Xsk(sockets, redirect, counts),
                    0,
                    userspace,
                    None,
                ));
            }
        };
        let (timestamps, hardware) = open_rx_stamping(&config, &socket)?;
        let gro = config.gro && config.mode == Mode::Udp && sys::enable_udp_gro(&socket).is_ok();
        let capacity = match config.mode {
            Mode::Udp if gro => COALESCED_MAX,
            Mode::Udp => MAX_FRAME as usize,
            _ => COALESCED_MAX + RAW_HEADERS_MAX,
        };
        sys::set_buffers(&socket, 32 << 20);
        sys::prepare_receive(&socket, Duration::from_millis(20))?;
        Ok(Receiver::with_input(
            config,
            Input::Socket(socket),
            capacity,
            timestamps,
            hardware,
        ))
    }

    fn with_input(
        config: ReceiverConfig,
        input: Input,
        capacity: usize,
        timestamps: Timestamps,
        hardware: Option<HardwareStamping>,
    ) -> Receiver {
        Receiver {
            config,
            input,
            timestamps,
            _hardware: hardware,
            batch: sys::RecvBatch::new(capacity),
            streams: BTreeMap::new(),
            ignored: 0,
            socket_drops: None,
            untimestamped: 0,
            read_after_rx_stamp: Histogram::new(),
            start_ns: sys::monotonic_ns(),
            start_realtime_ns: sys::realtime_ns(),
            all_ended_at_ns: None,
            last_probe_at_ns: None,
            finished_at_ns: None,
        }
    }

    fn done(&self, now: u64) -> bool {
        let elapsed = now - self.start_ns;
        self.config
            .duration_s
            .is_some_and(|d| elapsed as f64 >= d * 1e9)
            || self
                .all_ended_at_ns
                .is_some_and(|t| (now - t) as f64 >= self.config.linger_s * 1e9)
            || self
                .config
                .idle_s
                .zip(self.last_probe_at_ns)
                .is_some_and(|(idle, t)| (now - t) as f64 >= idle * 1e9)
    }

    /// Receives for at most `max_ns`; returns true once the run has ended.
    ///
    /// # Errors
    /// The OS error of a failed receive.
    pub fn step(&mut self, max_ns: u64) -> io::Result<bool> {
        if self.finished_at_ns.is_some() {
            return Ok(true);
        }
        let step_end = sys::monotonic_ns() + max_ns;
        loop {
            let now = sys::monotonic_ns();
            if self.done(now) {
                self.finished_at_ns = Some(now);
                return Ok(true);
            }
            if now >= step_end {
                return Ok(false);
            }
            let n = match &mut self.input {
                Input::Socket(fd) => {
                    let n = self.batch.receive(fd)?;
                    let read_ns = sys::realtime_ns();
                    for i in 0..n {
                        self.take(i, read_ns);
                    }
                    n
                }
                Input::Xsk(sockets, _, counts) => {
                    let port = self.config.port;
                    let mut probes = Vec::with_capacity(64);
                    xsk::wait_any(sockets, 20)?;
                    let mut n = 0;
                    for (xsk, count) in sockets.iter_mut().zip(counts.iter_mut()) {
                        let taken = xsk.take(|frame| probes.push(frame_probe(frame, port)));
                        *count += taken as u64;
                        n += taken;
                    }
                    let recv_ns = sys::realtime_ns();
                    self.untimestamped += n as u64;
                    for probe in probes {
                        match probe {
                            Some((probe, frame_size)) => {
                                self.account(probe, frame_size, recv_ns, recv_ns)
                            }
                            None => self.ignored += 1,
                        }
                    }
                    n
                }
            };
            if n > 0 && self.config.idle_s.is_some() {
                self.last_probe_at_ns = Some(sys::monotonic_ns());
            }
        }
    }

    fn take(&mut self, i: usize, read_ns: u64) {
        let (meta, bytes) = self.batch.message(i);
        if let Some(stamp) = meta.time_ns {
            self.read_after_rx_stamp
                .record(read_ns.saturating_sub(stamp));
        }
        if let Some(d) = meta.drops {
            self.socket_drops = Some(d);
        }
        let recv_ns = meta.time_ns.unwrap_or_else(|| {
            self.untimestamped += 1;
            sys::realtime_ns()
        });
        let gap_ns = if self.timestamps.gaps == Source::Hardware {
            meta.hw_time_ns
        } else {
            Some(recv_ns)
        };
        let mut probes = [None; sys::MAX_GSO_SEGMENTS];
        let found = match self.config.mode {
            Mode::Udp => split_probes(bytes, meta.segment, &mut probes),
            Mode::Raw | Mode::Xdp => raw_probes(bytes, self.config.port, &mut probes),
        };
        for probe in probes.iter().take(found) {
            match *probe {
                Some((probe, frame_size)) => {
                    self.account_stamped(probe, frame_size, recv_ns, gap_ns)
                }
                None => self.ignored += 1,
            }
        }
    }

    /// As [`Receiver::account`], for a frame whose gap stamp may be missing (a hardware stamp
    /// the NIC did not take: the run of gaps restarts after it).
    fn account_stamped(
        &mut self,
        probe: Probe,
        frame_size: u32,
        recv_ns: u64,
        gap_ns: Option<u64>,
    ) {
        match gap_ns {
            Some(gap_ns) => self.account(probe, frame_size, recv_ns, gap_ns),
            None => {
                self.account(probe, frame_size, recv_ns, 0);
                if let Some(stream) = self.streams.get_mut(&probe.stream_id) {
                    stream.gaps.restart();
                }
            }
        }
    }

    /// Accounts one probe received at `recv_ns` (CLOCK_REALTIME, the latency's clock), and a
    /// data frame's arrival at `gap_ns` on the gaps' clock.
    fn account(&mut self, probe: Probe, frame_size: u32, recv_ns: u64, gap_ns: u64) {
        let interval_ns = (self.config.interval_s * 1e9) as u64;
        let bin_frames = self.config.interval_frames;
        let stream = self.streams.entry(probe.stream_id).or_insert_with(|| {
            let accounting = StreamAccounting::new(interval_ns);
            Stream {
                accounting: match bin_frames {
                    Some(n) => accounting.with_seq_bins(n),
                    None => accounting,
                },
                frame_size_min: u32::MAX,
                frame_size_max: 0,
                gaps: Gaps::new(),
            }
        });
        match probe.kind {
            Kind::Data => {
                stream.frame_size_min = stream.frame_size_min.min(frame_size);
                stream.frame_size_max = stream.frame_size_max.max(frame_size);
                let send_ns = probe.send_time_ns(recv_ns).max(0) as u64;
                stream
                    .accounting
                    .record_lane(probe.lane, probe.seq, send_ns, recv_ns);
                stream.gaps.record(gap_ns);
            }
            Kind::End => {
                stream.accounting.record_end(probe.seq, recv_ns);
                if self.streams.values().all(|s| s.accounting.end_seen()) {
                    self.all_ended_at_ns.get_or_insert(sys::monotonic_ns());
                }
            }
        }
    }

    /// The measurements so far (final once [`Receiver::step`] returned true).
    pub fn report(&self) -> ReceiverReport {
        let end = self.finished_at_ns.unwrap_or_else(sys::monotonic_ns);
        let (socket_drops, xsk_bind, xdp_attach, queues) = match &self.input {
            Input::Socket(fd) => (
                sys::socket_drops(fd).ok().max(self.socket_drops),
                None,
                None,
                None,
            ),
            Input::Xsk(sockets, redirect, counts) => {
                let drops: Option<u64> = sockets.iter().map(|x| x.drops().ok()).sum();
                let queues = counts
                    .iter()
                    .enumerate()
                    .map(|(q, &frames)| QueueFrames {
                        queue: q as u32,
                        frames,
                    })
                    .collect();
                (
                    drops.map(|d| d.min(u64::from(u32::MAX)) as u32),
                    Some(sockets[0].bind_mode()),
                    redirect.attach_mode(),
                    Some(queues),
                )
            }
        };
        ReceiverReport {
            mode: self.config.mode,
            ignored: self.ignored,
            socket_drops,
            xsk_bind,
            xdp_attach,
            queues,
            timestamps: self.timestamps.clone(),
            read_after_rx_stamp_ns: self.read_after_rx_stamp.summary(),
            untimestamped: self.untimestamped,
            start_realtime_ns: self.start_realtime_ns,
            elapsed_s: (end - self.start_ns) as f64 / 1e9,
            streams: self
                .streams
                .iter()
                .map(|(&id, s)| StreamResult {
                    stream_id: id,
                    frame_size_min: if s.frame_size_max == 0 {
                        0
                    } else {
                        s.frame_size_min
                    },
                    frame_size_max: s.frame_size_max,
                    report: s.accounting.report(),
                    gaps: s.gaps.report(None),
                })
                .collect(),
        }
    }
}

/// Turns on the receive stamps of a UDP or raw socket and says which are used: the kernel's
/// software stamp (CLOCK_REALTIME) for latency always; the NIC's where the interface (raw mode's
/// `interface`, or the one holding UDP mode's `bind` address) has hardware receive stamps
/// (ethtool), for the gaps.
fn open_rx_stamping(
    config: &ReceiverConfig,
    socket: &OwnedFd,
) -> io::Result<(Timestamps, Option<HardwareStamping>)> {
    let interface = match config.mode {
        Mode::Udp => config.bind.and_then(sys::interface_with_address),
        _ => config.interface.clone(),
    };
    let capability = interface
        .as_deref()
        .and_then(|name| Capability::of_interface(name).ok());
    let mut statement =
        timestamping::hardware_statement(interface.as_deref(), capability.as_ref(), false);
    if interface.is_none() {
        statement =
            "no interface known (UDP receiver not bound to an address, --bind): software stamps"
                .into();
    }
    let mut hardware = None;
    if let (Some(name), Some(cap)) = (interface.as_deref(), capability.as_ref()) {
        if cap.rx_source() == Source::Hardware {
            match HardwareStamping::enable(name, false) {
                Ok(h) => {
                    hardware = Some(h);
                    statement = format!(
                        "{}: the NIC's receive stamps time the gaps; latency pairs the probe's send time with the kernel's \
                         CLOCK_REALTIME stamp (the NIC's clock is not the sender's)",
                        timestamping::hardware_statement(Some(name), Some(cap), true)
                    );
                }
                Err(e) => statement = format!("{statement}; but {e}: software stamps"),
            }
        }
    }
    let gaps = if hardware.is_some() {
        Source::Hardware
    } else {
        Source::Software
    };
    timestamping::enable_on_socket(socket, gaps, true)?;
    let gaps_clock = capability
        .filter(|_| hardware.is_some())
        .map_or("CLOCK_REALTIME".into(), |c| c.clock_of(gaps));
    let timestamps = Timestamps {
        tx: Source::Payload,
        rx: Some(Source::Software),
        clock: "CLOCK_REALTIME".into(),
        gaps,
        gaps_clock,
        interface,
        hardware: statement,
    };
    Ok((timestamps, hardware))
}

/// The probes in one UDP payload that may join several datagrams of `segment` bytes each
/// (UDP GRO, or a GSO packet not yet cut), with their frame sizes; returns how many entries
/// of `out` it filled (`None` entries: not a probe).
fn split_probes(
    payload: &[u8],
    segment: Option<usize>,
    out: &mut [Option<(Probe, u32)>; sys::MAX_GSO_SEGMENTS],
) -> usize {
    let segment = segment
        .filter(|&s| s > 0 && payload.len() > s)
        .unwrap_or(payload.len().max(1));
    out[0] = None;
    let mut n = 0;
    for chunk in payload.chunks(segment).take(out.len()) {
        out[n] = Probe::parse(chunk).map(|p| (p, chunk.len() as u32 + UDP_OVERHEAD));
        n += 1;
    }
    n.max(1)
}

/// The probes in one raw capture (after its virtio-net header): one per frame, or one per
/// segment of a UDP GSO packet that a local sender handed to a veth unsegmented (the segments
/// become separate frames only where they are cut).
fn raw_probes(
    bytes: &[u8],
    port: u16,
    out: &mut [Option<(Probe, u32)>; sys::MAX_GSO_SEGMENTS],
) -> usize {
    let frame_and_payload = sys::split_vnet_header(bytes).and_then(|(gso, frame)| {
        packet::udp_payload(frame, port).map(|payload| (gso, frame, payload))
    });
    match frame_and_payload {
        None => {
            out[0] = None;
            1
        }
        Some((Some(segment), _, payload)) => split_probes(payload, Some(segment), out),
        Some((None, frame, _)) => {
            out[0] = frame_probe(frame, port);
            1
        }
    }
}

/// The probe of one Ethernet frame (IPv4/UDP to `port`) and the frame's size with FCS.
fn frame_probe(frame: &[u8], port: u16) -> Option<(Probe, u32)> {
    Probe::parse(packet::udp_payload(frame, port)?).map(|p| (p, frame.len() as u32 + FCS_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{emit_headers, Addresses};
    use crate::payload::PROBE_LEN;

    fn frame_with_probes(seqs: &[u64]) -> Vec<u8> {
        let mut frame = vec![0u8; packet::HEADERS_LEN + seqs.len() * PROBE_LEN];
        let a = Addresses {
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_mac: [2, 0, 0, 0, 0, 1],
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip: Ipv4Addr::new(198, 18, 0, 2),
            src_port: 9,
            dst_port: 5555,
        };
        emit_headers(&mut frame, &a);
        for (i, &seq) in seqs.iter().enumerate() {
            let at = packet::HEADERS_LEN + i * PROBE_LEN;
            Probe::emit_header(&mut frame[at..at + PROBE_LEN], Kind::Data, 3, 0);
            Probe::emit_seq_time(&mut frame[at..at + PROBE_LEN], seq, 0);
        }
        frame
    }

    fn with_vnet_header(gso_type: u8, gso_size: u16, frame: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0u8; 10];
        bytes[1] = gso_type;
        bytes[4..6].copy_from_slice(&gso_size.to_ne_bytes());
        bytes.extend_from_slice(frame);
        bytes
    }

    #[test]
    fn an_unsegmented_udp_gso_capture_counts_per_segment() {
        let bytes = with_vnet_header(5, PROBE_LEN as u16, &frame_with_probes(&[7, 8, 9]));
        let mut out = [None; sys::MAX_GSO_SEGMENTS];
        assert_eq!(raw_probes(&bytes, 5555, &mut out), 3);
        let seqs: Vec<(u64, u32)> = out[..3]
            .iter()
            .map(|p| p.map(|(p, size)| (p.seq, size)).unwrap())
            .collect();
        assert_eq!(seqs, [(7, 64), (8, 64), (9, 64)]);
    }

    #[test]
    fn a_plain_capture_is_one_probe_and_other_ports_are_ignored() {
        let bytes = with_vnet_header(0, 0, &frame_with_probes(&[4]));
        let mut out = [None; sys::MAX_GSO_SEGMENTS];
        assert_eq!(raw_probes(&bytes, 5555, &mut out), 1);
        assert_eq!(
            out[0].map(|(p, size)| (p.seq, p.stream_id, size)),
            Some((4, 3, 60 + 4))
        );
        assert_eq!(raw_probes(&bytes, 5556, &mut out), 1);
        assert!(out[0].is_none());
        assert_eq!(raw_probes(&bytes[..5], 5555, &mut out), 1);
        assert!(out[0].is_none());
    }

    #[test]
    fn coalesced_udp_datagrams_are_accounted_one_by_one() {
        let frame = frame_with_probes(&[1, 2, 3]);
        let mut payload = frame[packet::HEADERS_LEN..].to_vec();
        payload.extend_from_slice(&[0xFB, b'D']);
        let mut out = [None; sys::MAX_GSO_SEGMENTS];
        assert_eq!(split_probes(&payload, Some(PROBE_LEN), &mut out), 4);
        let seqs: Vec<Option<u64>> = out[..4].iter().map(|p| p.map(|(p, _)| p.seq)).collect();
        assert_eq!(
            seqs,
            [Some(1), Some(2), Some(3), None],
            "a short tail is not a probe"
        );
        assert_eq!(split_probes(&payload[..PROBE_LEN], None, &mut out), 1);
        assert_eq!(out[0].map(|(p, size)| (p.seq, size)), Some((1, 64)));
        assert_eq!(split_probes(&[], None, &mut out), 1);
        assert!(out[0].is_none());
    }

    #[test]
    fn bad_receiver_settings_are_named() {
        let err = |json: &str| Receiver::from_json(json).err().unwrap().to_string();
        assert!(err(r#"{"mode":"udp","port":0,"interval_s":0}"#)
            .contains("interval 0 s is out of range (0.001 s or more)"));
        assert!(err(r#"{"mode":"udp","port":0,"interval_frames":0}"#)
            .contains("interval_frames 0 is out of range (1 or more"));
        assert!(err(r#"{"mode":"udp","port":0,"linger_s":100}"#)
            .contains("linger 100 s is out of range (0..=60 s)"));
        assert!(err(r#"{"mode":"raw","port":0}"#).contains("raw mode needs an interface"));
        assert!(err(r#"{"mode":"tcp","port":0}"#).contains("unknown variant `tcp`"));
        assert!(
            err(r#"{"mode":"udp","port":0,"queues":2}"#).contains("queues 2 is for xdp mode only")
        );
    }
}
