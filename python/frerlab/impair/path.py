"""One impairable path: bpf/impair.c on the two veth ends of a path namespace, plus the
delay-line process (crates/impair) for directions with delay, jitter or reordering.

    with PathImpairment("ns-path-a", "in", "out", name="tb-path-a") as path:
        path.set("both", loss=0.05)
        path.set("forward", delay_ms=5, jitter_ms=1)
        path.set(down=True)
        path.counters()["forward"]["dropped_down"]

A frame entering end a leaves by end b ("forward"), and the other way round ("reverse").
The kernel programs decide down, loss (Bernoulli, then Gilbert-Elliott) and duplication for
every frame; a direction with a delay sends its frames through a veth pair the element adds
to the namespace, read by the delay line, which sends each one out of the far end at its due
time. So every loss decision is taken once, in one place, whichever way a frame travels.

State lives in three places, all named after the element: pins under
/run/frerlab/bpf/<name>, the namespace's clsact qdiscs and delay-line veth pair, and
/run/frerlab/impair/<name> (state.json, the delay line's spec, control socket and log).
`close()` removes all of it, also after a failure half-way or Ctrl-C; `remove_leftovers(name)`
does the same for a run that was killed. `PathImpairment.reopen(name)` controls an element
another process set up (the testbed's `impair` command).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from frerlab import bpfsys, processes
from frerlab.bpfsys import attach_ingress, detach, ifindex, possible_cpus
from frerlab.errors import ToolFailed, UsageError
from frerlab.names import MAX_IFNAME, RUN_DIR, pydantic_name
from frerlab.statefiles import StateModel, remove_if_empty
from frerlab.statefiles import read_state as read_state_file
from frerlab.netns import exists as netns_exists
from frerlab.netns import ip, veth
from frerlab.files import shape_error, write_atomic

OBJECT = Path(__file__).resolve().parents[3] / "bpf" / "build" / "impair.o"
PIN_ROOT = bpfsys.BPFFS
#: Where each element keeps its state directory.
STATE_ROOT = RUN_DIR / "impair"
#: Directions in map order: forward enters at end a, reverse at end b.
DIRECTIONS = ("forward", "reverse")
#: Longest delay (and jitter) accepted, as crates/impair's MAX_DELAY_NS.
MAX_DELAY_MS = 10_000.0
#: Files in the state directory; CONTROL_SOCKET as crates/impair/src/line.rs names it.
SPEC_FILE, CONTROL_SOCKET, STATE_FILE, LOG_FILE = "delayline-spec.json", "delayline.sock", "state.json", "delayline.log"
#: How long to wait for the delay line to start, and for an answer to a request.
READY_TIMEOUT_S, REQUEST_TIMEOUT_S = 10.0, 5.0

# bpf/impair.c: struct impair_config, struct impair_stats (per CPU), struct impair_chain.
_CONFIG = struct.Struct("<IIII6Q")
_STATS = struct.Struct("<8Q")
_STATS_FIELDS = ("frames_in", "forwarded", "delayed", "dropped_down", "dropped_loss", "dropped_burst",
                 "duplicated", "redirect_errors")
_CHAIN_SIZE = 8
_DOWN, _BURST, _DELAY_LINE = 1, 2, 4
_ONE = 1 << 32  # probability 1 as a threshold on a 32-bit random number


def _probability(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise UsageError(f"{name} {value!r} is out of range (0..=1)")
    return float(value)


def _threshold(p: float) -> int:
    return round(p * _ONE)


@dataclass(frozen=True)
class GilbertElliott:
    """Burst loss: a two-state Markov chain stepped once per frame; a frame is lost with the
    loss probability of the state it meets, then the chain moves."""

    p_good_to_bad: float
    p_bad_to_good: float
    loss_good: float = 0.0
    loss_bad: float = 1.0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _probability(f"gilbert_elliott.{field.name}", getattr(self, field.name))
        if self.p_good_to_bad > 0 and self.p_bad_to_good == 0:
            raise UsageError("gilbert_elliott.p_bad_to_good 0 is out of range (0<..=1 when "
                             f"p_good_to_bad is {self.p_good_to_bad}: the bad state would never end)")

    def stationary_bad(self) -> float:
        """The long-run share of frames that meet the bad state."""
        total = self.p_good_to_bad + self.p_bad_to_good
        return self.p_good_to_bad / total if total else 0.0

    def stationary_loss(self) -> float:
        """The long-run loss rate."""
        bad = self.stationary_bad()
        return (1 - bad) * self.loss_good + bad * self.loss_bad

    def mean_bad_run(self) -> float:
        """Mean number of consecutive frames in the bad state (the mean burst length when
        loss_bad is 1 and loss_good 0)."""
        return 1 / self.p_bad_to_good if self.p_bad_to_good else float("inf")


@dataclass(frozen=True)
class Impairment:
    """What one direction does to its frames; the defaults do nothing."""

    down: bool = False
    loss: float = 0.0
    gilbert_elliott: GilbertElliott | None = None
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    reorder: float = 0.0
    duplicate: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.down, bool):
            raise UsageError(f"down {self.down!r} is not valid (True or False)")
        _probability("loss", self.loss)
        _probability("duplicate", self.duplicate)
        _probability("reorder", self.reorder)
        if self.gilbert_elliott is not None and not isinstance(self.gilbert_elliott, GilbertElliott):
            raise UsageError(f"gilbert_elliott {self.gilbert_elliott!r} is not valid (a GilbertElliott, "
                             "a dict of its fields, or None)")
        for name, value, high in (("delay_ms", self.delay_ms, MAX_DELAY_MS), ("jitter_ms", self.jitter_ms, None)):
            limit = self.delay_ms if high is None else high
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= limit:
                where = f"0..={limit:g}" if high is not None else f"0..=delay_ms, here {limit:g}"
                raise UsageError(f"{name} {value!r} is out of range ({where})")
        if self.reorder > 0 and self.delay_ms == 0:
            raise UsageError(f"reorder {self.reorder} needs delay_ms above 0 (frames sent at once "
                             "overtake only delayed ones)")

    @property
    def delayed(self) -> bool:
        """True when this direction goes through the delay line."""
        return self.delay_ms > 0

    def delay_line_settings(self) -> dict[str, Any]:
        """The delay line's view (crates/impair's DelayConfig)."""
        return {"delay_ns": round(self.delay_ms * 1e6), "jitter_ns": round(self.jitter_ms * 1e6),
                "reorder": self.reorder}

    def to_dict(self) -> dict[str, Any]:
        """A plain record (for status output and the state file)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Impairment:
        """The inverse of `to_dict`."""
        ge = record.get("gilbert_elliott")
        return cls(**{**record, "gilbert_elliott": GilbertElliott(**ge) if ge else None})


def _directions(direction: str) -> tuple[str, ...]:
    if direction == "both":
        return DIRECTIONS
    if direction not in DIRECTIONS:
        raise UsageError(f"direction {direction!r} is not valid ({', '.join(DIRECTIONS)} or both)")
    return (direction,)


def _delay_devices(name: str) -> tuple[str, str]:
    """The delay line's veth pair: forward frames are sent into the first and read from the
    second, reverse frames the other way round."""
    tag = f"fi{zlib.crc32(name.encode()):08x}"
    return f"{tag}x", f"{tag}y"


class _RecordedGilbertElliott(StateModel):
    p_good_to_bad: float
    p_bad_to_good: float
    loss_good: float
    loss_bad: float


class _RecordedImpairment(StateModel):
    """`Impairment.to_dict()` (its ranges are checked by Impairment itself)."""

    down: bool
    loss: float
    gilbert_elliott: _RecordedGilbertElliott | None
    delay_ms: float
    jitter_ms: float
    reorder: float
    duplicate: float


class _RecordedSettings(StateModel):
    forward: _RecordedImpairment
    reverse: _RecordedImpairment


class _State(StateModel):
    """What `_save_state` writes."""

    netns: pydantic_name("network namespace")
    end_a: pydantic_name("port", MAX_IFNAME)
    end_b: pydantic_name("port", MAX_IFNAME)
    delay_limit: Annotated[int, Field(ge=1)]
    settings: _RecordedSettings


def _state_file(name: str) -> tuple[Path, str]:
    return STATE_ROOT / name / STATE_FILE, f"state file of impairment {name!r}"


def recorded_state(name: str) -> dict | None:
    """The state of element `name` if one was recorded, else None; UsageError naming the file
    and the field of a damaged one."""
    path, what = _state_file(name)
    if not os.path.lexists(path):
        return None
    state = read_state_file(path, what, _State, STATE_ROOT)
    for d in DIRECTIONS:
        try:
            Impairment.from_dict(state["settings"][d])
        except UsageError as err:
            raise shape_error(path, what, f"settings.{d}: {err}") from None
    return state


def _delay_line_pids(state_dir: Path) -> list[int]:
    """Processes running the delay line of `state_dir` (found by their command line, so a
    line whose starter died without writing anything down is found too)."""
    pids = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    return [pid for pid in pids if {b"frerlab.impair.delayline", os.fsencode(state_dir)}
            <= set(processes.command_line(pid))]


class DelayLineDown(ToolFailed):
    """The delay-line process does not answer (it died or was never started)."""


def _request(state_dir: Path, request: Any, timeout_s: float = REQUEST_TIMEOUT_S) -> dict:
    """Sends one request to the delay line of `state_dir`; returns its reply."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout_s)
            conn.connect(str(state_dir / CONTROL_SOCKET))
            conn.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)
    except (OSError, json.JSONDecodeError) as err:
        raise DelayLineDown(f"the delay line of {state_dir} does not answer ({err})") from err


def remove_leftovers(name: str) -> None:
    """Removes everything an element called `name` left: its delay-line process, the qdiscs
    on its ends and its veth pair (if the namespace still exists), its pins, its state
    directory. Quiet about what is gone already; safe to call at any time. A damaged state
    file is refused (UsageError naming it) before anything is removed."""
    state_dir = STATE_ROOT / name
    state = recorded_state(name) or {}  # a damaged one: refused, nothing removed
    try:
        _request(state_dir, "stop", timeout_s=1.0)
    except DelayLineDown:
        pass
    processes.stop(_delay_line_pids(state_dir))
    netns = state.get("netns")
    if netns and netns_exists(netns):
        for dev in (state.get("end_a"), state.get("end_b"), *_delay_devices(name)):
            if dev:
                detach(netns, dev)
        subprocess.run(["ip", "-n", netns, "link", "del", _delay_devices(name)[0]], capture_output=True)
    bpfsys.unpin(PIN_ROOT / name)
    shutil.rmtree(state_dir, ignore_errors=True)
    remove_if_empty(STATE_ROOT)


class PathImpairment:
    """The impairment element between `end_a` and `end_b` of namespace `netns`; `name`
    names its pins and state (unique per host; the testbed uses e.g. "<testbed>-path-a").
    `with` (or `attach()`) sets it up; frames pass unimpaired until `set()`."""

    def __init__(self, netns: str, end_a: str, end_b: str, name: str, delay_limit: int = 100_000) -> None:
        if not name or "/" in name or name.startswith("."):
            raise UsageError(f"name {name!r} is not valid (a non-empty file name, no '/')")
        if end_a == end_b:
            raise UsageError(f"end_a and end_b are both {end_a!r} (two different interfaces)")
        if not isinstance(delay_limit, int) or delay_limit < 1:
            raise UsageError(f"delay_limit {delay_limit!r} is out of range (1..)")
        self.netns, self.end_a, self.end_b, self.name = netns, end_a, end_b, name
        self.delay_limit = delay_limit
        self.pin_dir = PIN_ROOT / name
        self.state_dir = STATE_ROOT / name
        self.maps: dict[str, bpfsys.Map] = {}
        self.settings = {d: Impairment() for d in DIRECTIONS}
        self._ifindex: dict[str, int] = {}
        self._process: subprocess.Popen | None = None

    # -- setting up and removing -------------------------------------------------------

    def __enter__(self) -> PathImpairment:
        self.attach()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def attach(self) -> None:
        """Adds the delay line's veth pair, loads and configures the programs, starts the
        delay line and attaches the programs to both ends. Removes what it did on failure."""
        if self.state_dir.exists() or self.pin_dir.exists():
            raise UsageError(f"impairment {self.name!r} exists already ({self.state_dir}); remove it "
                             "first (remove_leftovers) or pick another name")
        if not OBJECT.exists():
            raise UsageError(f"{OBJECT} is not built (make -C bpf)")
        if not netns_exists(self.netns):
            raise UsageError(f"network namespace {self.netns!r} does not exist")
        try:
            self.state_dir.mkdir(parents=True)
            self._save_state()
            self._add_delay_devices()
            bpfsys.load_and_pin(OBJECT, self.pin_dir)
            self._open_maps()
            for dev in (*_delay_devices(self.name), self.end_a, self.end_b):
                self._ifindex[dev] = ifindex(self.netns, dev)
            for direction in DIRECTIONS:
                self._write_config(direction, self.settings[direction])
            for dev in _delay_devices(self.name):
                attach_ingress(self.netns, dev, self.pin_dir / "impair_sink")
            self._start_delay_line()
            attach_ingress(self.netns, self.end_a, self.pin_dir / "impair_forward")
            attach_ingress(self.netns, self.end_b, self.pin_dir / "impair_reverse")
        except BaseException:
            self.close()
            raise

    def _add_delay_devices(self) -> None:
        x, y = _delay_devices(self.name)
        # Room for any frame a path carries, GSO packets included; up once IPv6 is off.
        veth(self.netns, x, self.netns, y, mtu=65535, up=False)
        for dev in (x, y):
            subprocess.run(["ip", "netns", "exec", self.netns, "sysctl", "-qw",
                            f"net.ipv6.conf.{dev}.disable_ipv6=1"], capture_output=True, check=True)
            ip("-n", self.netns, "link", "set", dev, "arp", "off", "multicast", "off", "up")

    def _open_maps(self) -> None:
        maps = self.pin_dir / "maps"
        self.maps = {
            "impair_config": bpfsys.Map(maps / "impair_config", 4, _CONFIG.size),
            "impair_stats": bpfsys.Map(maps / "impair_stats", 4, _STATS.size * possible_cpus()),
            "impair_chain": bpfsys.Map(maps / "impair_chain", 4, _CHAIN_SIZE),
        }

    def _save_state(self) -> None:
        write_atomic(self.state_dir / STATE_FILE, json.dumps({
            "netns": self.netns, "end_a": self.end_a, "end_b": self.end_b, "delay_limit": self.delay_limit,
            "settings": {d: self.settings[d].to_dict() for d in DIRECTIONS}}, indent=1))

    def _start_delay_line(self) -> None:
        x, y = _delay_devices(self.name)
        spec = {"state_dir": str(self.state_dir), "limit": self.delay_limit, "directions": [
            {"name": "forward", "input": y, "output": self.end_b},
            {"name": "reverse", "input": x, "output": self.end_a}]}
        write_atomic(self.state_dir / SPEC_FILE, json.dumps(spec, indent=1))
        with open(self.state_dir / LOG_FILE, "ab") as log:
            # A session of its own: the line outlives the process that started it (the testbed
            # command) and a Ctrl-C meant for that process; close() or remove_leftovers() ends it.
            argv = ["ip", "netns", "exec", self.netns, sys.executable, "-m", "frerlab.impair.delayline",
                    str(self.state_dir)]
            self._process = proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                    start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if (self.state_dir / CONTROL_SOCKET).exists() and self.delay_line_running():
                return
            time.sleep(0.02)
        raise ToolFailed(f"the delay line of {self.name!r} did not start: {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            lines = (self.state_dir / LOG_FILE).read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return "(no log)"
        return " | ".join(lines[-5:]) or "(empty log)"

    def release(self) -> None:
        """Closes this handle's map descriptors and leaves the element in place (for a
        process that only reconfigured or read it)."""
        for m in self.maps.values():
            m.close()
        self.maps.clear()

    def close(self) -> None:
        """Stops the delay line, detaches the programs, removes the veth pair, the pins and
        the state directory; safe to call twice and after a failure half-way."""
        self.release()
        remove_leftovers(self.name)
        if self._process is not None:
            self._process.wait()  # stopped by remove_leftovers; reaped here
            self._process = None

    @classmethod
    def reopen(cls, name: str) -> PathImpairment:
        """The element `name` that another process set up, to reconfigure, read or close."""
        state = recorded_state(name)
        if state is None or not (PIN_ROOT / name).exists():
            raise UsageError(f"impairment {name!r} is not set up (no {STATE_ROOT / name / STATE_FILE})")
        self = cls(state["netns"], state["end_a"], state["end_b"], name, state["delay_limit"])
        self.settings = {d: Impairment.from_dict(state["settings"][d]) for d in DIRECTIONS}
        self._open_maps()
        for dev in (*_delay_devices(name), self.end_a, self.end_b):
            self._ifindex[dev] = ifindex(self.netns, dev)
        return self

    # -- configuring -------------------------------------------------------------------

    def set(self, direction: str = "both", **changes: Any) -> None:
        """Changes the named impairments of `direction` ("forward": end a to end b,
        "reverse", or "both"); the others stay as they are. Keywords: down, loss,
        gilbert_elliott (GilbertElliott, dict of its fields, or None), delay_ms, jitter_ms,
        reorder, duplicate. Everything is validated before anything changes."""
        directions = _directions(direction)
        if "gilbert_elliott" in changes and isinstance(changes["gilbert_elliott"], dict):
            try:
                changes["gilbert_elliott"] = GilbertElliott(**changes["gilbert_elliott"])
            except TypeError as err:
                raise UsageError(f"gilbert_elliott {changes['gilbert_elliott']!r} is not valid "
                                 "(fields p_good_to_bad, p_bad_to_good, loss_good, loss_bad)") from err
        unknown = set(changes) - {f.name for f in dataclasses.fields(Impairment)}
        if unknown:
            raise UsageError(f"impairment {sorted(unknown)[0]!r} is not known "
                             f"({', '.join(f.name for f in dataclasses.fields(Impairment))})")
        new = dict(self.settings)
        for d in directions:
            new[d] = dataclasses.replace(self.settings[d], **changes)
        self._apply(new)

    def clear(self, direction: str = "both") -> None:
        """Takes every impairment off `direction`."""
        new = dict(self.settings)
        for d in _directions(direction):
            new[d] = Impairment()
        self._apply(new)

    def _apply(self, new: dict[str, Impairment]) -> None:
        # Before frames go to the delay line it must hold the new delays; frames going direct
        # again get the kernel's change first, so those still in flight to the line meet the
        # old delay. In-between settings: new delays where the new ones delay, else the old.
        between = {d: new[d] if new[d].delayed else self.settings[d] for d in DIRECTIONS}
        self._send_delay_settings(between)
        for d in DIRECTIONS:
            self._write_config(d, new[d], reset_chain=new[d].gilbert_elliott != self.settings[d].gilbert_elliott)
        self.settings = new
        self._send_delay_settings(new)
        self._save_state()

    def _write_config(self, direction: str, imp: Impairment, reset_chain: bool = False) -> None:
        x, y = _delay_devices(self.name)
        out, delay_dev = (self.end_b, x) if direction == "forward" else (self.end_a, y)
        ge = imp.gilbert_elliott or GilbertElliott(0.0, 0.0, 0.0, 0.0)
        flags = (_DOWN if imp.down else 0) | (_BURST if imp.gilbert_elliott else 0) | \
            (_DELAY_LINE if imp.delayed else 0)
        key = struct.pack("<I", DIRECTIONS.index(direction))
        if reset_chain:
            self.maps["impair_chain"].update(key, bytes(_CHAIN_SIZE))
        self.maps["impair_config"].update(key, _CONFIG.pack(
            flags, self._ifindex[out], self._ifindex[delay_dev], 0, _threshold(imp.loss), _threshold(imp.duplicate),
            _threshold(ge.p_good_to_bad), _threshold(ge.p_bad_to_good), _threshold(ge.loss_good),
            _threshold(ge.loss_bad)))

    def _send_delay_settings(self, settings: dict[str, Impairment]) -> None:
        reply = self._request({"set": {d: settings[d].delay_line_settings() for d in DIRECTIONS}})
        if reply.get("error"):
            raise ToolFailed(f"the delay line of {self.name!r} refused its settings: {reply['error']}")

    # -- reading -----------------------------------------------------------------------

    def _request(self, request: Any) -> dict:
        try:
            return _request(self.state_dir, request)
        except DelayLineDown as err:
            raise DelayLineDown(f"{err}; its log: {self._log_tail()}") from None

    def delay_line_running(self) -> bool:
        """True while the delay-line process answers."""
        try:
            _request(self.state_dir, "status", timeout_s=1.0)
        except DelayLineDown:
            return False
        return True

    def counters(self) -> dict[str, dict[str, Any]]:
        """Per direction: the kernel's 64-bit counters (frames_in, forwarded, delayed,
        dropped_down, dropped_loss, dropped_burst, duplicated, redirect_errors) summed over
        CPUs, and under "delay_line" the delay line's (received, sent, early, overflow,
        send_errors, socket_drops, held, tagged; empty if the line is down)."""
        try:
            status = _request(self.state_dir, "status")
        except DelayLineDown:
            status = {}
        out: dict[str, dict[str, Any]] = {}
        for index, direction in enumerate(DIRECTIONS):
            raw = self.maps["impair_stats"].lookup(struct.pack("<I", index))
            sums = [sum(col) for col in zip(*_STATS.iter_unpack(raw))]
            out[direction] = dict(zip(_STATS_FIELDS, sums))
            out[direction]["delay_line"] = status.get("directions", {}).get(direction, {})
        return out

    def describe(self) -> dict[str, Any]:
        """The element as a record: namespace, ends, and each direction's impairments."""
        return {"name": self.name, "netns": self.netns, "end_a": self.end_a, "end_b": self.end_b,
                "delay_line_running": self.delay_line_running(),
                "settings": {d: self.settings[d].to_dict() for d in DIRECTIONS}}
