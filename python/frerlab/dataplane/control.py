"""Bringing a configured data plane up and down across commands, and reading it.

`up` loads bpf/frer.o as a Node named after the configuration (with bpf/frer_xdp.o where the
configuration's `hook` takes XDP: frerlab.dataplane.hooks), writes the compiled configuration
into its maps, attaches it and leaves it running after the command ends. Before
that it makes the ports fit (frerlab.dataplane.interfaces: offloads that merge frames or defer
segmentation off, MTUs that take R-tagged frames) and says what it changed. What it needs to
find and remove the data plane later (namespace, ports, configuration, what it changed on the
ports, the latent error monitor's pid) is written to a state file first, so `down` also clears
what a crashed `up` left half-way, and puts the ports' settings back. `snapshot` reads every
counter into one plain record, which the stats views (frerlab.dataplane.stats) and the latent
error monitor work from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from frerlab.dataplane import hooks, interfaces, layout
from frerlab.dataplane.compiler import NodePlan, RecoveryPlan
from frerlab.dataplane.config import NodeConfig, parse_config
from frerlab.dataplane.node import OBJECT, XDP_OBJECT, CounterTables, Node, filter_records, pin_path
from frerlab import bpfsys, processes
from frerlab.errors import UsageError
from frerlab.frer import LatentErrorDetector
from frerlab.names import MAX_IFNAME, RUN_DIR, check_name, inside, name_problem, pydantic_name
from frerlab.statefiles import StateModel, remove_if_empty
from frerlab.statefiles import read_state as read_state_file
from frerlab.netns import Namespaces
from frerlab.netns import delete as netns_delete
from frerlab.netns import exists as netns_exists
from frerlab.netns import links as netns_links
from frerlab.files import write_atomic

#: Where `up` records each running data plane (outside the BPF filesystem, which holds only
#: BPF objects).
STATE_DIR = RUN_DIR / "dataplane"
#: `probe`'s throwaway namespace is PROBE_PREFIX + its process id + "-clsact".
PROBE_PREFIX = "frerlab-probe-"
NETNS_DIR = "/run/netns"


def state_path(name: str) -> Path:
    """The state file of data plane `name`; UsageError for a name that is not valid."""
    return inside(STATE_DIR, check_name(name, "data plane"), ".json")


def latent_path(name: str) -> Path:
    """The latent error monitor's latest findings (written atomically by the monitor)."""
    return inside(STATE_DIR, check_name(name, "data plane"), ".latent.json")


def log_path(name: str) -> Path:
    """The latent error monitor's output."""
    return inside(STATE_DIR, check_name(name, "data plane"), ".log")


_Port = pydantic_name("port", MAX_IFNAME)
#: What a port had before `up` changed it, and what `up` set: [before, after].
_Change = Annotated[list[int], Field(min_length=2, max_length=2)]


class _Interfaces(StateModel):
    """What `up` changed on the ports (interfaces.Survey.record)."""

    offloads: dict[_Port, list[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]]] = {}
    mtu: dict[_Port, _Change] = {}
    gso_max_segs: dict[_Port, _Change] = {}


class _State(StateModel):
    """What `up` writes to a data plane's state file (`config` is checked by parse_config
    where it is used)."""

    name: pydantic_name("data plane")
    netns: pydantic_name("network namespace") | None
    attached: list[_Port]
    config: dict[str, Any]
    monitor_pid: Annotated[int, Field(ge=1)] | None
    interfaces: _Interfaces = _Interfaces()
    started: float = 0.0
    hooks: dict[_Port, str] = {}
    hook_note: str | None = None


class _Alarm(StateModel):
    condition: str
    difference: float
    at_s: float


class _Finding(StateModel):
    """One recovery function's latent error findings (`monitor`)."""

    stream: int
    active: bool
    alarms: int
    difference_threshold: int
    latent_error_resets: int
    last: _Alarm | None


class _Latent(StateModel):
    """What the latent error monitor writes after every poll."""

    updated: float
    functions: list[_Finding]


def recorded_state(name: str) -> dict | None:
    """The state of data plane `name` if `up` recorded one, else None; UsageError naming the
    file and the field of a damaged one."""
    path = state_path(name)
    if not os.path.lexists(path):
        return None
    return read_state_file(path, f"state file of data plane {name!r}", _State, STATE_DIR)


def read_state(name: str) -> dict:
    """The state of running data plane `name`; UsageError naming the running ones otherwise,
    or naming the file and the field of a damaged state file."""
    state = recorded_state(name)
    if state is None:
        running = ", ".join(running_names()) or "none"
        raise UsageError(f"no data plane named {name!r} is up (running: {running})")
    return state


def running_names() -> list[str]:
    """Names of the data planes `up` has recorded."""
    if not STATE_DIR.is_dir():
        return []
    return sorted(p.stem for p in STATE_DIR.glob("*.json") if not p.name.endswith(".latent.json")
                  and not p.is_symlink() and name_problem(p.stem, "data plane") is None)


def probe(netns: str | None) -> None:
    """Checks what the data plane needs before touching anything; UsageError saying what is
    missing and how to get it."""
    if os.geteuid() != 0:
        raise UsageError("the data plane needs root (BPF programs and tc filters)")
    for tool, package in (("ip", "iproute2"), ("ethtool", "ethtool")):
        if shutil.which(tool) is None:
            raise UsageError(f"{tool} is not installed (apt-get install {package})")
    for obj in (OBJECT, XDP_OBJECT):
        if not obj.exists():
            raise UsageError(f"{obj} is not built (run `make bpf`, which needs clang)")
    if not Path("/sys/kernel/btf/vmlinux").exists():
        raise UsageError("the kernel has no BTF (/sys/kernel/btf/vmlinux): bpf_spin_lock in the "
                         "recovery maps needs CONFIG_DEBUG_INFO_BTF=y")
    if netns is not None and not netns_exists(netns):
        raise UsageError(f"network namespace {netns!r} does not exist (ip netns list shows those that do)")
    # the clsact qdisc, on a dummy-free device: lo of a throwaway namespace
    remove_stale_probes()
    with Namespaces(f"{PROBE_PREFIX}{os.getpid()}") as net:
        net.add("clsact")
        try:
            bpfsys.add_clsact(net.ns["clsact"], "lo")
        except bpfsys.BpfError as err:
            raise UsageError(f"the kernel has no clsact qdisc (CONFIG_NET_SCH_INGRESS): {err}") from None


def remove_stale_probes() -> list[str]:
    """Deletes the throwaway namespaces of `probe` whose process has ended (a run killed while it
    probed leaves one: nothing else knows its name); returns their names."""
    names = os.listdir(NETNS_DIR) if os.path.isdir(NETNS_DIR) else []
    stale = [ns for ns in names if ns.startswith(PROBE_PREFIX) and _probe_pid(ns) is not None
             and not processes.alive(_probe_pid(ns))]
    for ns in stale:
        netns_delete(ns)
    return stale


def _probe_pid(namespace: str) -> int | None:
    """The process id in a probe namespace's name; None if it holds none."""
    pid = namespace[len(PROBE_PREFIX):].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _check_ports(netns: str | None, ports: list[str]) -> None:
    """UsageError naming a port that is no interface of `netns` (None: the current one)."""
    names = [link["ifname"] for link in netns_links(netns)]
    for port in ports:
        if port not in names:
            where = f"network namespace {netns!r}" if netns else "this network namespace"
            raise UsageError(f"port {port!r} is no interface of {where} (interfaces: {', '.join(names)})")


def up(cfg: NodeConfig, netns: str | None = None, monitor: bool = True) -> dict:
    """Loads, configures and attaches the data plane of `cfg` (in `netns`, else the file's);
    starts the latent error monitor if a recovery function asks for one. Returns its state."""
    netns = cfg.netns if netns is None else check_name(netns, "network namespace")
    probe(netns)
    plan = cfg.plan
    _check_ports(netns, plan.ports)
    name = cfg.name
    if state_path(name).exists() or pin_path(name).exists():
        raise UsageError(f"a data plane named {name!r} is up already; `frerlab dataplane down "
                         f"--name {name}` first, or give this one another name")
    attached = sorted(set(plan.ingress_ports) | set(plan.egress_ports))
    xdp, hook_note = hooks.choose(cfg.hook, plan, netns)
    ports = interfaces.survey(netns, plan, attached)  # refuses an MTU it cannot set, changing nothing
    state = {"name": name, "netns": netns, "attached": attached,
             "config": cfg.model_dump(mode="json", by_alias=False), "monitor_pid": None,
             "interfaces": ports.record(), "started": time.time(), "hooks": {}, "hook_note": hook_note}
    write_atomic(state_path(name), json.dumps(state, indent=1))  # first: `down` can undo a crash
    node = Node(name, netns, plan.ports, xdp=bool(xdp), streams=max(len(plan.streams), 1))
    try:
        state["changes"] = interfaces.apply(netns, ports)
        node.__enter__()
        node.apply(plan)
        node.attach(plan.ingress_ports, plan.egress_ports, xdp=xdp)
        state["hooks"] = dict(node.hooks)
        state["stream_maps"] = {"kind": node.maps["streams"].kind, "capacity": node.capacity}
        if monitor and any(r.latent for r in plan.recoveries):
            state["monitor_pid"] = _start_monitor(name)
        write_atomic(state_path(name), json.dumps(state, indent=1))
    except BaseException:
        node.close()
        down(name)
        raise
    node.release()
    return state


def _start_monitor(name: str) -> int:
    log = log_path(name).open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "frerlab.cli", "dataplane", "monitor", "--name", name,
                             "--quiet"], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    return proc.pid


def down(name: str) -> bool:
    """Removes data plane `name`: its monitor, tc qdiscs, pins and state; also what a crashed
    run left (its probe's namespace among them). Returns whether anything was there. A damaged
    state file is refused (UsageError naming the file and the field) before anything is removed."""
    path, pins = state_path(name), pin_path(name)
    state = recorded_state(name)  # a damaged one: refused, nothing removed
    found = state is not None or pins.exists()
    remove_stale_probes()
    if state is not None:
        pid = state.get("monitor_pid")
        if pid and {b"monitor", os.fsencode(name)} <= set(processes.command_line(pid)):
            processes.stop([pid])
        netns = state.get("netns")
        if netns is None or netns_exists(netns):
            for port in state.get("attached", []):
                bpfsys.detach(netns, port)
            interfaces.restore(netns, state.get("interfaces", {}))
    bpfsys.unpin(pins)
    for leftover in (path, latent_path(name), log_path(name)):
        leftover.unlink(missing_ok=True)
    remove_if_empty(STATE_DIR)
    return found


def status(name: str) -> dict:
    """What runs data plane `name`: its configured hook, per attached port the hook of the
    frames it receives (tc, xdp native or xdp generic; frames the host sends are always tc's),
    under `auto` why tc was taken, and what holds the per-stream state (arrays,
    node.map_shapes) for how many streams."""
    state = read_state(name)
    plan = parse_config(state["config"], f"state of {name}").plan
    return {"name": name, "netns": state["netns"], "hook": state["config"].get("hook", "tc"),
            "note": state.get("hook_note"), "stream_maps": state.get("stream_maps"),
            "ports": [{"port": port, "received": state.get("hooks", {}).get(port) if port in plan.ingress_ports
                       else None, "sent": "tc" if port in plan.egress_ports else None}
                      for port in state["attached"]]}


def _running(name: str) -> tuple[dict, NodePlan, Node]:
    """Running data plane `name`: its state, its compiled configuration, and the node with its
    maps open (the caller releases it)."""
    state = read_state(name)
    plan = parse_config(state["config"], f"state of {name}").plan
    return state, plan, Node.loaded(name, state["netns"], plan.ports)


def snapshot(name: str) -> dict:
    """Every counter of running data plane `name` as one plain record: per stream (by handle)
    its generation and recovery functions, per port and stream, per port; and the latent
    error monitor's findings if it runs."""
    state, plan, node = _running(name)
    try:
        tables = CounterTables(node)
        streams = []
        recoveries: dict[int, list] = {}
        for r in plan.recoveries:
            recoveries.setdefault(r.stream, []).append(r)
        for stream, handle in enumerate(plan.handles):
            flags = plan.streams[stream][0]
            record = {"handle": handle, "generation": None, "recovery": [], "ports": []}
            if flags & layout.STREAM_GENERATE:
                record["generation"] = tables.generation_counters(stream)
            for r in recoveries.get(stream, []):
                raw = tables.recovery_state(stream, r.instance)
                record["recovery"].append({
                    "function": r.function, "port": r.port_label, "algorithm": r.config.algorithm,
                    "history_length": r.config.history_length,
                    **layout.rcvy_counters(raw), **lockout(r.config, layout.rcvy_times(raw))})
            for index, port in enumerate(plan.ports):
                counters = tables.stream_port_counters(stream, index)
                if any(counters.values()):
                    record["ports"].append({"port": port, **counters})
            streams.append(record)
        ports = [{"port": port, **node.port_counters(index)} for index, port in enumerate(plan.ports)]
    finally:
        node.release()
    return {"name": name, "netns": state["netns"], "time": time.time(), "cpus": bpfsys.possible_cpus(),
            "streams": streams, "ports": ports, "filters": filter_records(plan, tables.filter_counters),
            "latent": read_latent(name)}


def read_latent(name: str) -> dict | None:
    """The latent error monitor's latest findings for data plane `name`, None if it wrote none;
    UsageError naming the file and the field of a damaged file."""
    path = latent_path(name)
    if not os.path.lexists(path):
        return None
    return read_state_file(path, f"latent error findings of data plane {name!r}", _Latent, STATE_DIR)


def reset(name: str, handle: int | None = None, port: str | None = None) -> list[dict]:
    """Management reset (frerSeqRcvyReset, 802.1CB 10.4.1.4) of the recovery functions of
    running data plane `name`, all of them or those of stream `handle` and/or on `port`: each
    resets when its next packet arrives. Returns the functions asked to reset; UsageError when
    none matches."""
    _, plan, node = _running(name)
    try:
        chosen = [r for r in plan.recoveries
                  if (handle is None or r.handle == handle) and (port is None or port in r.ports)]
        if not chosen:
            wanted = " ".join([*([f"of stream {handle}"] if handle is not None else []),
                               *([f"on port {port}"] if port is not None else [])])
            known = ", ".join(f"stream {r.handle}" + (f" on {r.port_label}" if r.ports else "")
                              for r in plan.recoveries) or "none"
            raise UsageError(f"data plane {name!r} has no recovery function {wanted} (it has: {known})")
        for r in chosen:
            _request_reset(node, r)
    finally:
        node.release()
    return [{"stream": r.handle, "function": r.function, "port": r.port_label} for r in chosen]


def _request_reset(node: Node, r: RecoveryPlan) -> None:
    """Asks recovery function `r` for a management reset: the next packet resets it."""
    requests = node.maps["rcvy_reset_requests"]
    key = layout.key(node.rcvy_index(r.stream, r.instance))
    count = layout.U32.unpack(requests.lookup(key))[0]
    requests.update(key, layout.U32.pack((count + 1) % 2**32))


#: Longest period of `guard`, in seconds.
MAX_GUARD_PERIOD_S = 60.0


def guard(name: str, threshold: int, on_alarm, period_s: float = 1.0, reset: bool = False,
          stop=lambda: False) -> list[dict]:
    """A rogue-rate alarm over every recovery function of running data plane `name` (frerlab's
    defence, docs/security.md): every `period_s` it reads each function's rogue and passed
    counters (frerCpsSeqRcvyRoguePackets, -PassedPackets, 802.1CB clause 10); a function that
    counted more than `threshold` rogue frames in the period raises an alarm (`on_alarm(finding)`).
    If it also passed nothing in that period the stream is locked out (a forged frame right
    after a reset dragged the window away, and every genuine frame is rogue until the reset
    timeout), and with `reset` the function is given a management reset (frerSeqRcvyReset,
    10.4.1.4) so that its next frame sets its window again. A function that still passes frames
    is not reset: the rogue frames are then an attacker's (a babbling path) beside a working
    stream, and a reset would let the attacker's next frame take the window. Runs until `stop()`
    is true or the data plane goes down; returns one finding per function (alarms, those locked
    out, the most rogue frames in a period, the resets it asked for)."""
    if not 0 < period_s <= MAX_GUARD_PERIOD_S:
        raise UsageError(f"period {period_s} s is out of range (0 < seconds <= {MAX_GUARD_PERIOD_S:g})")
    if not 0 <= threshold < 2**63:
        raise UsageError(f"rogue threshold {threshold} is out of range (0.. rogue frames per period)")
    _, plan, node = _running(name)
    try:
        if not plan.recoveries:
            raise UsageError(f"data plane {name!r} has no recovery function to guard")
        findings = [{"stream": r.handle, "function": r.function, "port": r.port_label, "threshold": threshold,
                     "period_s": period_s, "alarms": 0, "locked_out": 0, "most_rogue": 0, "resets": 0}
                    for r in plan.recoveries]

        def counts(r: RecoveryPlan) -> tuple[int, int]:
            c = node.recovery_counters(r.stream, r.instance)
            return c["rogue_packets"], c["passed_packets"]

        last = [counts(r) for r in plan.recoveries]
        start = time.monotonic()
        while not stop() and state_path(name).exists():
            time.sleep(period_s)
            for i, r in enumerate(plan.recoveries):
                now = counts(r)
                rogue, passed = now[0] - last[i][0], now[1] - last[i][1]
                last[i] = now
                finding = findings[i]
                finding["most_rogue"] = max(finding["most_rogue"], rogue)
                if rogue > threshold:
                    finding["alarms"] += 1
                    locked_out = passed == 0
                    finding["locked_out"] += locked_out
                    if reset and locked_out:
                        _request_reset(node, r)
                        finding["resets"] += 1
                    on_alarm({**finding, "rogue": rogue, "passed": passed, "at_s": round(time.monotonic() - start, 3)})
    finally:
        node.release()
    return findings


#: How long a member stream without a reset timeout may see only rogue packets before it is
#: reported locked out.
LOCKOUT_WITHOUT_TIMEOUT_NS = 1_000_000_000


def lockout(config: layout.RecoveryConfig, times: dict[str, int]) -> dict:
    """Whether an individual recovery function has locked its member stream out: it has seen
    only rogue packets for longer than its reset timeout (which would have fired, had the
    rogues not reloaded it: 802.1CB 7.4.3.4), and still sees them. `rogue_only_s` is how long."""
    rogue_only_ns = max(0, times["last_rogue_ns"] - times["last_pass_ns"])
    window = config.reset_timeout_ns or LOCKOUT_WITHOUT_TIMEOUT_NS
    recent = time.monotonic_ns() - times["last_rogue_ns"] <= window
    return {"rogue_only_s": round(rogue_only_ns / 1e9, 6),
            "locked_out": config.individual_recovery and rogue_only_ns > window and recent}


def monitor(name: str, on_alarm, interval_s: float | None = None, stop=lambda: False) -> None:
    """Latent error detection (802.1CB 7.4.4) over the counters of every recovery function of
    `name` that has latent-error-detection: polls them, runs frerlab.frer.LatentErrorDetector,
    writes the findings to latent_path(name) after every poll and calls `on_alarm(finding)`
    when a test signals an error. Runs until `stop()` is true or the data plane goes down."""
    state, plan, node = _running(name)
    try:
        watched = []  # (recovery function, its detector, its findings)
        for r in plan.recoveries:
            if r.latent:
                c = node.recovery_counters(r.stream, r.instance)
                detector = LatentErrorDetector(
                    r.latent.difference, r.latent.period * 1_000_000, r.latent.paths,
                    r.latent.reset_period * 1_000_000, start_ns=0, passed_packets=c["passed_packets"],
                    discarded_packets=c["discarded_packets"])
                watched.append((r, detector, {"stream": r.handle, "paths": r.latent.paths,
                                              "difference_threshold": r.latent.difference, "active": False,
                                              "alarms": 0, "last": None, "latent_error_resets": 0}))
        if not watched:
            raise UsageError(f"data plane {name!r} has no sequence-recovery with latent-error-detection")
        interval_s = interval_s or min(r.latent.period for r, _, _ in watched) / 4000
        start = time.monotonic_ns()
        while not stop() and state_path(name).exists():
            now = time.monotonic_ns() - start
            for r, detector, finding in watched:
                c = node.recovery_counters(r.stream, r.instance)
                error = detector.poll(now, c["passed_packets"], c["discarded_packets"])
                finding["latent_error_resets"] = detector.latent_error_resets
                if error is not None:
                    finding.update(alarms=finding["alarms"] + 1,
                                   last={"condition": error.condition, "difference": error.difference,
                                         "at_s": round(error.at_ns / 1e9, 3)})
                    on_alarm(finding)
                # an alarm stands until a test passes: one period after the last one that fired
                finding["active"] = (finding["last"] is not None
                                     and now - finding["last"]["at_s"] * 1e9 <= r.latent.period * 1_000_000)
            write_atomic(latent_path(name), json.dumps({"updated": time.time(),
                                                         "functions": [finding for _, _, finding in watched]}))
            time.sleep(interval_s)
    finally:
        node.release()

