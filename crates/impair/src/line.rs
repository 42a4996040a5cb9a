//! The delay line process: for each direction it reads the frames bpf/impair.c hands to the
//! direction's input device (an AF_PACKET socket taking every EtherType, which sees each frame
//! before the device's tc program discards it), holds them in a [`DelayQueue`], and sends each
//! one out of the direction's output device (AF_PACKET) at its due time.
//!
//! Both sockets use `PACKET_VNET_HDR`: each frame is read with the virtio-net header that
//! describes its checksum and segmentation state and sent with it unchanged, so a frame whose
//! UDP/TCP checksum the sender left to offload (CHECKSUM_PARTIAL, usual on veth) gets it
//! completed on the way out, and a GSO packet leaves as the same GSO packet.
//!
//! Each frame leaves with the VLAN tag it arrived with: the input socket reports a tag kept in
//! the skb's metadata (`PACKET_AUXDATA`), and the line writes it back into the frame's bytes
//! before holding it ([`crate::tag`]). Tags already in the bytes stay as they are.
//!
//! Time is CLOCK_REALTIME in ns, the clock of the kernel's receive timestamps, so a frame's
//! delay counts from its arrival in the path namespace, not from when this process read it.
//! One thread sleeps in `ppoll` until the next due time, the next frame or the next request,
//! with a timer slack of 1 ns.
//!
//! Control is a Unix stream socket, [`CONTROL_SOCKET`] in the state directory, so any process
//! in any network namespace can reconfigure a running line: one JSON request per connection
//! (`"status"`, `"stop"`, or `{"set": {DIRECTION: DelayConfig}}`), answered by one [`Reply`].
//! Frames still held at stop are dropped. The line also ends, with an error, when an input
//! device disappears (its namespace was deleted).

use crate::delay::{Admission, DelayConfig, DelayQueue};
use crate::tag::{put_tagged, VlanTag};
use frerlab_traffic::sys;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

/// The control socket's file name in the state directory.
pub const CONTROL_SOCKET: &str = "delayline.sock";
/// Frames held at most, over all directions, unless the spec says otherwise.
pub const DEFAULT_LIMIT: usize = 100_000;
/// Largest frame read (a 64 KiB GSO packet fits).
const FRAME_CAPACITY: usize = 65_536;
/// Socket buffers asked for: room for 10 ms of 1518-byte frames at 10 Gbit/s.
const SOCKET_BUFFER: i32 = 16 << 20;
/// Longest request accepted, and how long a client may take to send it or read the reply.
const REQUEST_LIMIT: u64 = 1 << 16;
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1);
/// SCHED_FIFO priority of the line: low among real-time tasks (1..=99), above every normal one.
const REALTIME_PRIORITY: libc::c_int = 10;

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// What a delay line serves, given once at start (JSON).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineSpec {
    /// Where the control socket is made.
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
    /// The name requests and replies use for it.
    pub name: String,
    /// The device bpf/impair.c hands this direction's frames to.
    pub input: String,
    /// The device the frames leave by.
    pub output: String,
}

/// A request on the control socket.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Report counters and settings.
    Status,
    /// Stop the line (after the reply).
    Stop,
    /// New delays for the directions named; directions not named get no delay.
    Set(BTreeMap<String, DelayConfig>),
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
    /// Frames whose VLAN tag came in the skb's metadata and was written back into the bytes.
    pub tagged: u64,
    /// Frames held now.
    pub held: u64,
}

/// The answer to every request.
#[derive(Debug, Serialize)]
pub struct Reply {
    /// This process.
    pub pid: u32,
    /// Why the request was refused (nothing changed then), or None.
    pub error: Option<String>,
    /// False in the reply to `stop`.
    pub running: bool,
    /// Whether the line runs with real-time scheduling (see [`run`]).
    pub realtime: bool,
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

/// An AF_PACKET socket receiving every frame that arrives at device `index` (not the ones it
/// sends), each behind its virtio-net header, non-blocking, with receive timestamps, drop
/// counts and VLAN metadata.
fn input_socket(name: &str, index: i32) -> io::Result<OwnedFd> {
    let fd = sys::packet_socket(index, libc::ETH_P_ALL as u16)
        .map_err(|e| io::Error::new(e.kind(), format!("reading device {name:?}: {e}")))?;
    sys::ignore_outgoing(&fd)?;
    sys::enable_vnet_header(&fd)?;
    sys::enable_auxdata(&fd)?;
    sys::set_buffers(&fd, SOCKET_BUFFER);
    sys::enable_receive_timestamps(&fd)?;
    sys::prepare_receive(&fd, Duration::from_secs(1))?;
    sys::set_nonblocking(&fd)?;
    Ok(fd)
}

impl Direction {
    fn open(spec: &DirectionSpec) -> io::Result<Direction> {
        let input = input_socket(&spec.input, sys::interface_index(&spec.input)?)?;
        let output = sys::packet_socket(sys::interface_index(&spec.output)?, 0)?;
        sys::enable_vnet_header(&output)?;
        sys::set_buffers(&output, SOCKET_BUFFER);
        sys::set_nonblocking(&output)?;
        Ok(Direction {
            spec: spec.clone(),
            input,
            output,
            config: DelayConfig::default(),
            counters: DirectionCounters::default(),
        })
    }
}

struct Line {
    directions: Vec<Direction>,
    queue: DelayQueue,
    realtime: bool,
}

impl Line {
    /// Answers one request; true in the second place when the line must stop.
    fn handle(&mut self, text: &str) -> (Reply, bool) {
        let (error, stop) = match serde_json::from_str::<Request>(text.trim()) {
            Ok(Request::Status) => (None, false),
            Ok(Request::Stop) => (None, true),
            Ok(Request::Set(settings)) => (self.apply(&settings).err().map(|e| e.to_string()), false),
            Err(e) => (Some(format!("request {:?} is not valid ({e}): expected \"status\", \"stop\" or {{\"set\": {{DIRECTION: {{delay_ns, jitter_ns, reorder}}}}}}", text.trim())), false),
        };
        let reply = Reply {
            pid: std::process::id(),
            error,
            running: !stop,
            realtime: self.realtime,
            directions: self
                .directions
                .iter()
                .map(|d| (d.spec.name.clone(), d.counters))
                .collect(),
            settings: self
                .directions
                .iter()
                .map(|d| (d.spec.name.clone(), d.config))
                .collect(),
        };
        (reply, stop)
    }

    fn apply(&mut self, settings: &BTreeMap<String, DelayConfig>) -> io::Result<()> {
        for (name, config) in settings {
            if !self.directions.iter().any(|d| &d.spec.name == name) {
                let known: Vec<_> = self
                    .directions
                    .iter()
                    .map(|d| d.spec.name.as_str())
                    .collect();
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "direction {name:?} is not one of this line's ({})",
                        known.join(", ")
                    ),
                ));
            }
            config
                .validate()
                .map_err(|e| io::Error::new(e.kind(), format!("direction {name}: {e}")))?;
        }
        for d in &mut self.directions {
            d.config = settings.get(&d.spec.name).copied().unwrap_or_default();
        }
        Ok(())
    }

    /// Serves one client of the control socket; true when it asked the line to stop.
    fn serve(&mut self, stream: UnixStream) -> bool {
        let _ = stream.set_read_timeout(Some(CLIENT_TIMEOUT));
        let _ = stream.set_write_timeout(Some(CLIENT_TIMEOUT));
        let mut line = String::new();
        let Ok(reader) = stream.try_clone() else {
            return false;
        };
        if BufReader::new(reader.take(REQUEST_LIMIT))
            .read_line(&mut line)
            .is_err()
        {
            return false;
        }
        let (reply, stop) = self.handle(&line);
        let mut text = serde_json::to_string(&reply).unwrap_or_default();
        text.push('\n');
        let _ = (&stream).write_all(text.as_bytes());
        stop
    }

    /// Sends every frame due now.
    fn release(&mut self) {
        let Line {
            directions, queue, ..
        } = self;
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
            io::Error::new(
                e.kind(),
                format!("reading the delay line's input {:?}: {e}", d.spec.input),
            )
        })?;
        let now = sys::realtime_ns();
        for i in 0..n {
            let (meta, frame) = batch.message(i);
            if let Some(drops) = meta.drops {
                d.counters.socket_drops = u64::from(drops);
            }
            d.counters.received += 1;
            let arrival = meta.time_ns.map_or(now, |t| t.min(now));
            let tag = meta.vlan.map(|(tpid, tci)| VlanTag { tpid, tci });
            let admission = self
                .queue
                .admit_with(dir, &d.config, arrival, |copy| put_tagged(frame, tag, copy));
            if admission != Admission::Overflow && tag.is_some() {
                d.counters.tagged += 1;
            }
            match admission {
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

/// Wakes up on time: a timer slack of 1 ns, and, where permitted (CAP_SYS_NICE), real-time
/// scheduling (SCHED_FIFO at [`REALTIME_PRIORITY`]), so the line is not queued behind busy
/// processes; the kernel's real-time throttling still leaves the others 5 % of each CPU.
/// Returns whether real-time scheduling is on.
fn wake_on_time() -> bool {
    // SAFETY: prctl and sched_setscheduler with plain arguments, for this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        let param = libc::sched_param {
            sched_priority: REALTIME_PRIORITY,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}

/// Runs the delay line described by `spec` in this process's network namespace until a
/// `stop` request (or a signal that ends the process).
///
/// # Errors
/// When a device is missing, a socket cannot be opened or bound, or an input device
/// disappears.
pub fn run(spec: &LineSpec) -> io::Result<()> {
    if spec.directions.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a delay line needs at least one direction",
        ));
    }
    if spec.limit == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "limit 0 is out of range (1..)",
        ));
    }
    let realtime = wake_on_time();
    let directions = spec
        .directions
        .iter()
        .map(Direction::open)
        .collect::<io::Result<Vec<_>>>()?;
    let seed = spec
        .seed
        .unwrap_or_else(|| sys::realtime_ns() ^ u64::from(std::process::id()));
    let mut line = Line {
        directions,
        queue: DelayQueue::new(spec.limit, seed),
        realtime,
    };
    let control_path = spec.state_dir.join(CONTROL_SOCKET);
    let _ = std::fs::remove_file(&control_path);
    let control = UnixListener::bind(&control_path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot make the control socket {}: {e}",
                control_path.display()
            ),
        )
    })?;
    control.set_nonblocking(true)?;
    let mut batch = sys::RecvBatch::new(FRAME_CAPACITY);
    loop {
        line.release();
        let timeout = line
            .queue
            .next_due()
            .map(|due| due.saturating_sub(sys::realtime_ns()));
        if timeout == Some(0) {
            continue;
        }
        let mut fds: Vec<libc::pollfd> = std::iter::once(control.as_raw_fd())
            .chain(line.directions.iter().map(|d| d.input.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ts = timeout.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as _,
            tv_nsec: (ns % 1_000_000_000) as _,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `fds` is a live array of the length given; `ts_ptr` is null or points at `ts`.
        let ready = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                ts_ptr,
                std::ptr::null(),
            )
        };
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        for dir in 0..line.directions.len() {
            if fds[dir + 1].revents != 0 {
                line.receive(dir, &mut batch)?;
            }
        }
        if fds[0].revents != 0 {
            while let Ok((stream, _)) = control.accept() {
                if line.serve(stream) {
                    let _ = std::fs::remove_file(&control_path);
                    return Ok(());
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
    let spec: LineSpec = serde_json::from_str(spec_json).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("delay line spec: {e}"))
    })?;
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
        assert!(serde_json::from_str::<LineSpec>(
            r#"{"state_dir": "/x", "directions": [], "limt": 3}"#
        )
        .is_err());
    }

    #[test]
    fn run_rejects_an_empty_spec_and_a_missing_device() {
        let err = run_json(r#"{"state_dir": "/tmp", "directions": []}"#).unwrap_err();
        assert!(err.to_string().contains("at least one direction"));
        let err = run_json(r#"{"state_dir": "/tmp", "directions": [{"name": "f", "input": "no-such-dev0", "output": "lo"}]}"#)
            .unwrap_err();
        assert!(err.to_string().contains("no-such-dev0"), "{err}");
    }

    fn line() -> Line {
        let null = || -> OwnedFd { std::fs::File::open("/dev/null").unwrap().into() };
        let direction = |name: &str| Direction {
            spec: DirectionSpec {
                name: name.into(),
                input: "i".into(),
                output: "o".into(),
            },
            input: null(),
            output: null(),
            config: DelayConfig::default(),
            counters: DirectionCounters::default(),
        };
        Line {
            directions: vec![direction("forward"), direction("reverse")],
            queue: DelayQueue::new(10, 1),
            realtime: false,
        }
    }

    #[test]
    fn requests_set_report_and_stop() {
        let mut line = line();
        let (reply, stop) =
            line.handle(r#"{"set": {"forward": {"delay_ns": 5000000, "jitter_ns": 1000}}}"#);
        assert_eq!((reply.error, stop, reply.running), (None, false, true));
        assert_eq!(
            reply.settings["forward"],
            DelayConfig {
                delay_ns: 5_000_000,
                jitter_ns: 1000,
                reorder: 0.0
            }
        );
        assert_eq!(
            reply.settings["reverse"],
            DelayConfig::default(),
            "directions not named get no delay"
        );
        let (reply, stop) = line.handle("\"status\"\n");
        assert_eq!((reply.error, stop), (None, false));
        assert_eq!(reply.settings["forward"].delay_ns, 5_000_000);
        assert_eq!(reply.directions["reverse"].received, 0);
        let (reply, stop) = line.handle("\"stop\"");
        assert!(stop && !reply.running);
    }

    #[test]
    fn refused_requests_change_nothing_and_say_why() {
        let mut line = line();
        line.handle(r#"{"set": {"forward": {"delay_ns": 7}}}"#);
        let (reply, _) = line.handle(r#"{"set": {"sideways": {}}}"#);
        assert_eq!(
            reply.error.as_deref(),
            Some(r#"direction "sideways" is not one of this line's (forward, reverse)"#)
        );
        let (reply, _) = line.handle(r#"{"set": {"forward": {"delay_ns": 1, "jitter_ns": 2}}}"#);
        assert_eq!(
            reply.error.as_deref(),
            Some("direction forward: jitter_ns 2 is out of range (0..=delay_ns, here 1)")
        );
        let (reply, stop) = line.handle("reload");
        assert!(
            !stop
                && reply
                    .error
                    .unwrap()
                    .starts_with("request \"reload\" is not valid")
        );
        assert_eq!(reply.settings["forward"].delay_ns, 7);
    }
}
