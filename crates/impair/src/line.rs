//! The delay line process: for each direction it reads the frames bpf/impair.c hands to the
//! direction's input device (an AF_PACKET socket taking every EtherType, which sees each frame
//! before the device's tc program discards it), holds them in a [`DelayQueue`], and sends each
//! one out of the direction's output device (AF_PACKET) at its due time.
//!
//! Time is CLOCK_REALTIME in ns, the clock of the kernel's receive timestamps, so a frame's
//! delay counts from its arrival in the path namespace, not from when this process read it.
//! One thread sleeps in `ppoll` until the next due time or the next frame, with a timer slack
//! of 1 ns.
//!
//! Control is by signal and files in the state directory, so any process can reconfigure a
//! running line: SIGHUP re-reads [`SETTINGS_FILE`], SIGUSR1 writes [`STATUS_FILE`] (the
//! counters; it is also written after each reload and at exit), SIGTERM / SIGINT end the run
//! (frames still held are dropped). The line also ends, with an error, when an input device
//! disappears (its namespace was deleted).

use crate::delay::{Admission, DelayConfig, DelayQueue};
use frerlab_traffic::sys;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The settings file in the state directory: `{"generation": N, "directions": {NAME: DelayConfig}}`.
pub const SETTINGS_FILE: &str = "delayline-settings.json";
/// The status file in the state directory (see [`Status`]).
pub const STATUS_FILE: &str = "delayline-status.json";
/// Frames held at most, over all directions, unless the spec says otherwise.
pub const DEFAULT_LIMIT: usize = 100_000;
/// Largest frame read (a 64 KiB GSO packet fits).
const FRAME_CAPACITY: usize = 65_536;
/// Socket buffers asked for: room for 10 ms of 1518-byte frames at 10 Gbit/s.
const SOCKET_BUFFER: i32 = 16 << 20;
/// `PACKET_IGNORE_OUTGOING` from linux/if_packet.h (not in the libc crate).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// What a delay line serves, given once at start (JSON).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineSpec {
    /// Where the settings and status files are.
    pub state_dir: PathBuf,
    /// The directions, each with its own input and output device.
    pub directions: Vec<DirectionSpec>,
    /// Frames held at most, over all directions; more are dropped and counted.
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// Seed of the delay draws (default: from the clock).
    #[serde(default)]
    pub seed: Option<u64>,
}

/// One direction of a delay line.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    /// The name the settings and status files use for it.
    pub name: String,
    /// The device bpf/impair.c hands this direction's frames to.
    pub input: String,
    /// The device the frames leave by.
    pub output: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    generation: u64,
    directions: BTreeMap<String, DelayConfig>,
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DirectionCounters {
    /// Frames read from the input device.
    pub received: u64,
    /// Frames sent out of the output device.
    pub sent: u64,
    /// Frames due at once (the reorder draw).
    pub early: u64,
    /// Frames dropped because the line held its limit.
    pub overflow: u64,
    /// Frames the output device refused (too long, no buffer).
    pub send_errors: u64,
    /// Frames the input socket dropped before they were read (the line's own overload).
    pub socket_drops: u64,
    /// Frames held now.
    pub held: u64,
}

/// The status file's content.
#[derive(Debug, Serialize)]
pub struct Status {
    /// This process.
    pub pid: u32,
    /// Generation of the settings in effect.
    pub generation: u64,
    /// Why the last reload failed (the settings in effect stay as they were).
    pub error: Option<String>,
    /// Whether the line is still running (false in the file written at exit).
    pub running: bool,
    /// Counters per direction name.
    pub directions: BTreeMap<String, DirectionCounters>,
    /// The settings in effect per direction name.
    pub settings: BTreeMap<String, DelayConfig>,
}

struct Direction {
    spec: DirectionSpec,
    input: OwnedFd,
    output: OwnedFd,
    config: DelayConfig,
    counters: DirectionCounters,
}

fn check(ret: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if ret < 0 {
        let err = io::Error::last_os_error();
        Err(io::Error::new(err.kind(), format!("{what}: {err}")))
    } else {
        Ok(ret)
    }
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) }, "fcntl")?;
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) }, "fcntl").map(drop)
}

/// An AF_PACKET socket receiving every frame that arrives at device `index` (not the ones it
/// sends), non-blocking, with receive timestamps and drop counts.
fn input_socket(name: &str, index: i32) -> io::Result<OwnedFd> {
    let protocol = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain syscall; the descriptor is owned by the OwnedFd.
    let raw = check(
        unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, i32::from(protocol)) },
        "cannot open an AF_PACKET socket (needs CAP_NET_RAW)",
    )?;
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let one: libc::c_int = 1;
    // SAFETY: `one` lives for the call and its size is passed.
    check(
        unsafe {
            libc::setsockopt(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &one as *const _ as *const libc::c_void, size_of::<libc::c_int>() as u32)
        },
        "PACKET_IGNORE_OUTGOING",
    )?;
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol;
    sll.sll_ifindex = index;
    // SAFETY: `sll` is a valid sockaddr_ll of the length given.
    check(
        unsafe { libc::bind(raw, &sll as *const _ as *const libc::sockaddr, size_of::<libc::sockaddr_ll>() as u32) },
        &format!("cannot bind an AF_PACKET socket to {name:?}"),
    )?;
    sys::set_buffers(&fd, SOCKET_BUFFER);
    sys::prepare_receive(&fd, Duration::from_secs(1))?;
    set_nonblocking(&fd)?;
    Ok(fd)
}

impl Direction {
    fn open(spec: &DirectionSpec) -> io::Result<Direction> {
        let input = input_socket(&spec.input, sys::interface_index(&spec.input)?)?;
        let output = sys::packet_socket(sys::interface_index(&spec.output)?, false)?;
        sys::set_buffers(&output, SOCKET_BUFFER);
        set_nonblocking(&output)?;
        Ok(Direction { spec: spec.clone(), input, output, config: DelayConfig::default(), counters: DirectionCounters::default() })
    }
}

/// SIGHUP, SIGUSR1, SIGTERM and SIGINT, blocked and read from a signalfd; the old mask comes
/// back when this is dropped.
struct Signals {
    fd: OwnedFd,
    old: libc::sigset_t,
}

const SIGNALS: [libc::c_int; 4] = [libc::SIGHUP, libc::SIGUSR1, libc::SIGTERM, libc::SIGINT];

impl Signals {
    fn new() -> io::Result<Signals> {
        // SAFETY: sigset operations on local sets; signalfd returns a descriptor we own.
        unsafe {
            let mut set: libc::sigset_t = zeroed();
            let mut old: libc::sigset_t = zeroed();
            libc::sigemptyset(&mut set);
            for s in SIGNALS {
                libc::sigaddset(&mut set, s);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) != 0 {
                return Err(io::Error::last_os_error());
            }
            let raw = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if raw < 0 {
                let err = io::Error::last_os_error();
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                return Err(err);
            }
            Ok(Signals { fd: OwnedFd::from_raw_fd(raw), old })
        }
    }

    /// The signals received since the last call.
    fn pending(&self) -> Vec<libc::c_int> {
        let mut out = Vec::new();
        loop {
            let mut info: libc::signalfd_siginfo = unsafe { zeroed() };
            let size = size_of::<libc::signalfd_siginfo>();
            // SAFETY: reads one siginfo into `info`, of the size given.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), &mut info as *mut _ as *mut libc::c_void, size) };
            if n != size as isize {
                return out;
            }
            out.push(info.ssi_signo as libc::c_int);
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in new().
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

struct Line {
    state_dir: PathBuf,
    directions: Vec<Direction>,
    queue: DelayQueue,
    generation: u64,
    error: Option<String>,
}

impl Line {
    fn reload(&mut self) {
        let path = self.state_dir.join(SETTINGS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                self.error = Some(format!("cannot read {}: {e}", path.display()));
                return;
            }
        };
        match self.apply(&text) {
            Ok(generation) => {
                self.generation = generation;
                self.error = None;
            }
            Err(e) => self.error = Some(format!("{}: {e}", path.display())),
        }
    }

    fn apply(&mut self, text: &str) -> io::Result<u64> {
        let settings: Settings = serde_json::from_str(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        for (name, config) in &settings.directions {
            if !self.directions.iter().any(|d| &d.spec.name == name) {
                let known: Vec<_> = self.directions.iter().map(|d| d.spec.name.as_str()).collect();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("direction {name:?} is not one of this line's ({})", known.join(", ")),
                ));
            }
            config.validate().map_err(|e| io::Error::new(e.kind(), format!("direction {name}: {e}")))?;
        }
        for d in &mut self.directions {
            d.config = settings.directions.get(&d.spec.name).copied().unwrap_or_default();
        }
        Ok(settings.generation)
    }

    fn write_status(&self, running: bool) -> io::Result<()> {
        let status = Status {
            pid: std::process::id(),
            generation: self.generation,
            error: self.error.clone(),
            running,
            directions: self.directions.iter().map(|d| (d.spec.name.clone(), d.counters)).collect(),
            settings: self.directions.iter().map(|d| (d.spec.name.clone(), d.config)).collect(),
        };
        let text = serde_json::to_string_pretty(&status).map_err(io::Error::other)?;
        write_atomically(&self.state_dir.join(STATUS_FILE), &text)
    }

    /// Sends every frame due now.
    fn release(&mut self) {
        let Line { directions, queue, .. } = self;
        queue.release_due(sys::realtime_ns(), |dir, frame| {
            let d = &mut directions[dir];
            d.counters.held -= 1;
            match sys::send_bytes(&d.output, frame) {
                Ok(_) => d.counters.sent += 1,
                Err(_) => d.counters.send_errors += 1,
            }
        });
    }

    /// Reads what is queued on direction `dir`'s input (one batch).
    fn receive(&mut self, dir: usize, batch: &mut sys::RecvBatch) -> io::Result<()> {
        let d = &mut self.directions[dir];
        let n = batch.receive(&d.input).map_err(|e| {
            io::Error::new(e.kind(), format!("reading the delay line's input {:?}: {e}", d.spec.input))
        })?;
        let now = sys::realtime_ns();
        for i in 0..n {
            let (meta, frame) = batch.message(i);
            if let Some(drops) = meta.drops {
                d.counters.socket_drops = u64::from(drops);
            }
            d.counters.received += 1;
            let arrival = meta.time_ns.map_or(now, |t| t.min(now));
            match self.queue.admit(dir, &d.config, arrival, frame) {
                Admission::Held => d.counters.held += 1,
                Admission::Early => {
                    d.counters.held += 1;
                    d.counters.early += 1;
                }
                Admission::Overflow => d.counters.overflow += 1,
            }
        }
        Ok(())
    }
}

fn set_timer_slack_1ns() {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Runs the delay line described by `spec` in this process's network namespace until SIGTERM
/// or SIGINT.
///
/// # Errors
/// When a device is missing, a socket cannot be opened, an input device disappears, or the
/// state directory cannot be written.
pub fn run(spec: &LineSpec) -> io::Result<()> {
    if spec.directions.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a delay line needs at least one direction"));
    }
    if spec.limit == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "limit 0 is out of range (1..)"));
    }
    set_timer_slack_1ns();
    let signals = Signals::new()?;
    let directions = spec.directions.iter().map(Direction::open).collect::<io::Result<Vec<_>>>()?;
    let seed = spec.seed.unwrap_or_else(|| sys::realtime_ns() ^ u64::from(std::process::id()));
    let mut line =
        Line { state_dir: spec.state_dir.clone(), directions, queue: DelayQueue::new(spec.limit, seed), generation: 0, error: None };
    line.reload();
    line.write_status(true)?;
    let mut batch = sys::RecvBatch::new(FRAME_CAPACITY);
    loop {
        line.release();
        let timeout = line.queue.next_due().map(|due| due.saturating_sub(sys::realtime_ns()));
        if timeout == Some(0) {
            continue;
        }
        let mut fds: Vec<libc::pollfd> = std::iter::once(&signals.fd)
            .chain(line.directions.iter().map(|d| &d.input))
            .map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        let ts = timeout.map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `fds` is a live array of the length given; `ts_ptr` is null or points at `ts`.
        let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ts_ptr, std::ptr::null()) };
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if fds[0].revents != 0 {
            let mut stop = false;
            for signal in signals.pending() {
                match signal {
                    libc::SIGHUP => line.reload(),
                    libc::SIGTERM | libc::SIGINT => stop = true,
                    _ => {}
                }
            }
            if stop {
                line.queue.clear();
                for d in &mut line.directions {
                    d.counters.held = 0;
                }
                return line.write_status(false);
            }
            line.write_status(true)?;
        }
        for dir in 0..line.directions.len() {
            if fds[dir + 1].revents != 0 {
                if let Err(e) = line.receive(dir, &mut batch) {
                    line.error = Some(e.to_string());
                    let _ = line.write_status(false);
                    return Err(e);
                }
            }
        }
    }
}

/// [`run`] with the spec given as JSON.
///
/// # Errors
/// As [`run`], and `InvalidInput` for a spec that does not parse.
pub fn run_json(spec_json: &str) -> io::Result<()> {
    let spec: LineSpec = serde_json::from_str(spec_json)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("delay line spec: {e}")))?;
    run(&spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parses_with_defaults_and_rejects_unknown_fields() {
        let spec: LineSpec = serde_json::from_str(
            r#"{"state_dir": "/tmp/x", "directions": [{"name": "forward", "input": "i0", "output": "o0"}]}"#,
        )
        .unwrap();
        assert_eq!(spec.limit, DEFAULT_LIMIT);
        assert_eq!(spec.directions[0].output, "o0");
        assert!(serde_json::from_str::<LineSpec>(r#"{"state_dir": "/x", "directions": [], "limt": 3}"#).is_err());
    }

    #[test]
    fn run_rejects_an_empty_spec_and_a_missing_device() {
        let err = run_json(r#"{"state_dir": "/tmp", "directions": []}"#).unwrap_err();
        assert!(err.to_string().contains("at least one direction"));
        let err = run_json(
            r#"{"state_dir": "/tmp", "directions": [{"name": "f", "input": "no-such-dev0", "output": "lo"}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("no-such-dev0"), "{err}");
    }

    #[test]
    fn settings_of_an_unknown_direction_or_out_of_range_are_refused() {
        let dir = std::env::temp_dir().join(format!("frerlab-impair-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = DirectionSpec { name: "forward".into(), input: "lo".into(), output: "lo".into() };
        let direction = Direction {
            spec,
            input: std::fs::File::open("/dev/null").unwrap().into(),
            output: std::fs::File::open("/dev/null").unwrap().into(),
            config: DelayConfig::default(),
            counters: DirectionCounters::default(),
        };
        let mut line = Line { state_dir: dir.clone(), directions: vec![direction], queue: DelayQueue::new(10, 1), generation: 0, error: None };
        std::fs::write(dir.join(SETTINGS_FILE), r#"{"generation": 4, "directions": {"forward": {"delay_ns": 5000000}}}"#).unwrap();
        line.reload();
        assert_eq!((line.generation, line.error.as_deref(), line.directions[0].config.delay_ns), (4, None, 5_000_000));
        std::fs::write(dir.join(SETTINGS_FILE), r#"{"generation": 5, "directions": {"sideways": {}}}"#).unwrap();
        line.reload();
        assert_eq!(line.generation, 4, "a refused reload keeps the settings in effect");
        assert!(line.error.as_deref().unwrap().contains(r#"direction "sideways" is not one of this line's (forward)"#));
        std::fs::write(dir.join(SETTINGS_FILE), r#"{"generation": 6, "directions": {"forward": {"delay_ns": 1, "jitter_ns": 2}}}"#).unwrap();
        line.reload();
        assert!(line.error.as_deref().unwrap().contains("direction forward: jitter_ns 2 is out of range"));
        assert_eq!(line.directions[0].config.delay_ns, 5_000_000);
        line.write_status(true).unwrap();
        let status: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(STATUS_FILE)).unwrap()).unwrap();
        assert_eq!(status["generation"], 4);
        assert_eq!(status["settings"]["forward"]["delay_ns"], 5_000_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
