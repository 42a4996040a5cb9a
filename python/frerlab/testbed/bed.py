"""The seeds' testbed in network namespaces: host `talker` (198.18.0.1) - switch `sw1` - paths
`a` and `b` - switch `sw2` - host `listener` (198.18.0.2).

Each path is a namespace of its own holding the impairment element (frerlab.impair), so it
can be cut, made lossy, delayed, reordered or duplicated at run time. Every interface's egress
is shaped with a token bucket (TBF) at the testbed's rate; switch ports and paths queue up to
`queue_limit` bytes (tail drop: the variable the seeds blame for their numbers), hosts up to
HOST_QUEUE bytes (a NIC's transmit queue). The switches and, by placement, the hosts run
frerlab's eBPF data plane with the configurations of frerlab.testbed.plan. Static neighbour
entries and IPv6 off, so no ARP or ND frames.

`build` makes the topology (namespaces, links, MTUs, the hosts' addresses, routes and static
neighbours): for the testbed with LINKS, and with DIRECT_LINKS (each path a plain veth from
sw1 to sw2, nothing between) for the data plane's benchmark, frerlab.dataplane.twopath.

Links that carry R-tagged frames (the paths, and a host's link when the host runs FRER) have
an MTU of LINK_MTU, room for a full 1500-byte IP packet plus its R-TAG; the others IP_MTU, so
`frerlab dataplane up` finds every MTU right and changes none. The hosts send 1500-byte
packets (their route MTU). A FRER node refuses GSO packets (many frames in one skb) and turns
off what builds them on its own ports, but the host feeding it decides what crosses the link:
the hosts' TSO, GSO and GRO are off, so they send wire frames. Checksum offload stays on, as on
real hosts: the data plane keeps the checksum metadata of what it forwards right.

A testbed lives across commands (`frerlab testbed up`, then `impair`, `exec`, `status`,
`down`): its state file is written before anything is created, so `down` also removes what a
killed `up` left. `with Testbed(...) as tb:` brings one up and always takes it down.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from frerlab.dataplane import control
from frerlab.errors import ToolFailed, UsageError
from frerlab.impair import PathImpairment
from frerlab.impair.path import recorded_state as recorded_path_state
from frerlab.impair import remove_leftovers as remove_path_leftovers
from frerlab.names import MAX_IFNAME, RUN_DIR, check_name, inside, name_problem, pydantic_name
from frerlab.statefiles import StateModel, remove_if_empty
from frerlab.statefiles import read_state as read_state_file
from frerlab.netns import Namespaces, delete, exists, link_info
from frerlab.units import L1_OVERHEAD_BYTES, MIN_FRAME_BYTES, rate_bps, size_bytes
from frerlab.testbed import plan
from frerlab.files import write_atomic

STATE_DIR = RUN_DIR / "testbed"
HOSTS = ("talker", "sw1", "sw2", "listener")
PATHS = ("a", "b")
#: MTU of a link that carries R-tagged frames: a full 1500-byte IP packet plus its R-TAG (hosts
#: still send 1500-byte packets: their route MTU is IP_MTU); and of the other links.
LINK_MTU, IP_MTU = 1506, 1500
#: Transmit queue of a host interface, in bytes (about 1000 full-size frames).
HOST_QUEUE = 1_500_000
#: What a frame costs an Ethernet link beyond the bytes a veth carries (its FCS, preamble, start
#: delimiter and inter-frame gap), and the least it costs (a 64-byte frame): the token buckets
#: charge these, so a link at `rate` carries the frames/s of real Ethernet at every size.
WIRE_EXTRA = 4 + L1_OVERHEAD_BYTES
WIRE_MIN = MIN_FRAME_BYTES + L1_OVERHEAD_BYTES
DEFAULT_NAME = "frerlab"
DEFAULT_RATE = "100Mbps"
DEFAULT_QUEUE_LIMIT = "64KiB"
ALGORITHMS = ("vector", "match")
#: Longest reset timeout of the eliminating nodes: an hour.
MAX_RESET_TIMEOUT_MS = 3_600_000
#: Longest testbed name: the limit from when its veths were made under the temporary names
#: `tb-<name>a`, which had to fit an interface name, kept so that `up` accepts the same names.
MAX_NAME = MAX_IFNAME - len("tb-a")


@dataclass(frozen=True)
class Link:
    """A veth pair: (role, interface) at each end; each end's egress is shaped."""

    a: tuple[str, str]
    b: tuple[str, str]


LINKS = (
    Link(("talker", plan.HOST_PORT), ("sw1", plan.SWITCH_HOST_PORT)),
    Link(("sw1", plan.PATH_PORTS["a"]), ("a", "in")),
    Link(("a", "out"), ("sw2", plan.PATH_PORTS["a"])),
    Link(("sw1", plan.PATH_PORTS["b"]), ("b", "in")),
    Link(("b", "out"), ("sw2", plan.PATH_PORTS["b"])),
    Link(("sw2", plan.SWITCH_HOST_PORT), ("listener", plan.HOST_PORT)),
)
#: The same hosts and switches with each path a plain veth from sw1 to sw2 (no namespace, no
#: impairment element between): the data plane benchmark's topology.
DIRECT_LINKS = (
    LINKS[0],
    Link(("sw1", plan.PATH_PORTS["a"]), ("sw2", plan.PATH_PORTS["a"])),
    Link(("sw1", plan.PATH_PORTS["b"]), ("sw2", plan.PATH_PORTS["b"])),
    LINKS[-1],
)
ADDRESSES = {"talker": (plan.TALKER_IP, plan.TALKER_MAC), "listener": (plan.LISTENER_IP, plan.LISTENER_MAC)}


@dataclass
class Settings:
    """What a testbed is built with (validated by `check`)."""

    name: str = DEFAULT_NAME
    mode: str = "frer"
    rate: str = DEFAULT_RATE
    queue_limit: str = DEFAULT_QUEUE_LIMIT
    replicate_at: str = "sw1"
    eliminate_at: str = "sw2"
    history_length: int = 32
    #: The sequence recovery algorithm of both eliminating nodes (802.1CB 7.4.3.4 vector,
    #: 7.4.3.5 match) and their reset timeout (frerSeqRcvyResetMSec).
    algorithm: str = "vector"
    reset_timeout_ms: int = 1000
    #: 802.1CB 10.4.1.6 and 7.5 (plan.Recovery says how the testbed places them).
    take_no_sequence: bool = False
    individual_recovery: bool = False
    #: Policing of each path's copies at the eliminating switches (802.1Qci): a rate of SDU
    #: bit/s and a burst (None: none).
    police_rate: str | None = None
    police_burst: str = "10KB"
    #: Rate of the links into, through and out of the paths (sw1 - a/b - sw2); None: `rate`.
    #: Below `rate` it makes the paths the bottleneck of known capacity (a DUT whose
    #: throughput is known, for testing the benchmarks).
    path_rate: str | None = None
    rate_bps: int = field(init=False, default=0)
    path_rate_bps: int = field(init=False, default=0)
    queue_limit_bytes: int = field(init=False, default=0)

    def check(self) -> None:
        """Validates every field; UsageError naming the bad value and what would be valid."""
        check_name(self.name, "testbed", MAX_NAME)
        if not 2 <= self.history_length <= 1024:
            raise UsageError(f"history length {self.history_length} is out of range (2..1024)")
        if self.algorithm not in ALGORITHMS:
            raise UsageError(f"algorithm {self.algorithm!r} is not valid ({' or '.join(ALGORITHMS)})")
        if not 1 <= self.reset_timeout_ms <= MAX_RESET_TIMEOUT_MS:
            raise UsageError(f"reset timeout {self.reset_timeout_ms} ms is out of range (1..{MAX_RESET_TIMEOUT_MS} ms)")
        try:
            self.rate_bps = rate_bps(self.rate)
        except ValueError as err:
            raise UsageError(f"rate: {err}") from None
        try:
            self.queue_limit_bytes = size_bytes(self.queue_limit)
        except ValueError as err:
            raise UsageError(f"queue limit: {err}") from None
        try:
            plan.node_configs(self.mode, self.replicate_at, self.eliminate_at, self.recovery())
        except ValueError as err:
            raise UsageError(str(err)) from None
        if not 1_000_000 <= self.rate_bps <= 10_000_000_000:
            raise UsageError(f"rate {self.rate} is out of range (1Mbps..10Gbps)")
        try:
            self.path_rate_bps = self.rate_bps if self.path_rate is None else rate_bps(self.path_rate)
        except ValueError as err:
            raise UsageError(f"path rate: {err}") from None
        if not 1_000_000 <= self.path_rate_bps <= self.rate_bps:
            raise UsageError(f"path rate {self.path_rate} is out of range (1Mbps..rate {self.rate})")
        if not 2 * LINK_MTU <= self.queue_limit_bytes <= 1 << 30:
            raise UsageError(f"queue limit {self.queue_limit} is out of range "
                             f"({2 * LINK_MTU} bytes..1GiB: at least two full frames)")

    def recovery(self) -> plan.Recovery:
        """The sequence recovery settings of the eliminating nodes, and their policing
        (UsageError for a rate or burst that is not one)."""
        try:
            police = None if self.police_rate is None else rate_bps(self.police_rate)
            burst = size_bytes(self.police_burst)
        except ValueError as err:
            raise UsageError(f"policing: {err}") from None
        return plan.Recovery(algorithm=self.algorithm, history_length=self.history_length,
                             reset_timeout_ms=self.reset_timeout_ms, take_no_sequence=self.take_no_sequence,
                             individual_recovery=self.individual_recovery, police_bps=police, police_burst=burst)


def state_path(name: str) -> Path:
    """The state file of testbed `name`; UsageError for a name that is not valid."""
    return inside(STATE_DIR, check_name(name, "testbed", MAX_NAME), ".json")


def _prefix(name: str) -> str:
    """What every namespace, data plane and path element of testbed `name` is named after."""
    return f"tb-{name}"


def namespaces(name: str) -> Namespaces:
    """The testbed's namespaces (existing or to be made): `tb-<name>-<role>`."""
    return Namespaces(_prefix(name))


def _dataplane_name(name: str, role: str) -> str:
    return f"{_prefix(name)}-{role}"


def _path_name(name: str, path: str) -> str:
    return f"{_prefix(name)}-path-{path}"


def running() -> list[str]:
    """Names of the testbeds that are up (or left by a killed run)."""
    return sorted(p.stem for p in STATE_DIR.glob("*.json") if not p.is_symlink()
                  and name_problem(p.stem, "testbed", MAX_NAME) is None) if STATE_DIR.is_dir() else []


_Name = pydantic_name("network namespace")


class _RecordedSettings(StateModel):
    """`Settings` as `up` records them."""

    mode: Literal[plan.MODES]
    rate: str
    queue_limit: str
    replicate_at: str
    eliminate_at: str
    history_length: int
    algorithm: Literal[ALGORITHMS] = "vector"
    reset_timeout_ms: int = 1000
    take_no_sequence: bool = False
    individual_recovery: bool = False
    police_rate: str | None = None
    police_burst: str = "10KB"
    path_rate: str | None = None
    rate_bps: int
    path_rate_bps: int = 0
    queue_limit_bytes: int


class _Roles(StateModel):
    """A name per host and path of the testbed."""

    talker: _Name
    sw1: _Name
    sw2: _Name
    listener: _Name
    a: _Name
    b: _Name


class _Paths(StateModel):
    a: _Name
    b: _Name


class _State(StateModel):
    """What `up` writes to a testbed's state file."""

    name: _Name
    settings: _RecordedSettings
    namespaces: _Roles
    dataplanes: dict[Literal[HOSTS], _Name]
    paths: _Paths
    started: float


def read_state(name: str) -> dict:
    """The state of testbed `name`; UsageError naming the ones that are up otherwise, or naming
    the file and the field of a damaged state file."""
    path = state_path(name)
    if not os.path.lexists(path):
        raise UsageError(f"no testbed named {name!r} is up (up: {', '.join(running()) or 'none'}); "
                         "`frerlab testbed up` makes one")
    return read_state_file(path, f"state file of testbed {name!r}", _State, STATE_DIR)


def up(settings: Settings) -> dict:
    """Builds the testbed; on any failure removes what it made and re-raises."""
    settings.check()
    control.probe(None)
    name = settings.name
    if state_path(name).exists():
        raise UsageError(f"testbed {name!r} is up already; `frerlab testbed down --name {name}` first")
    configs = plan.node_configs(settings.mode, settings.replicate_at, settings.eliminate_at, settings.recovery(),
                                prefix=_prefix(name))
    net = namespaces(name)
    state = {"name": name, "settings": {k: v for k, v in asdict(settings).items()},
             "namespaces": {role: f"{net.prefix}-{role}" for role in (*HOSTS, *PATHS)},
             "dataplanes": {role: cfg.name for role, cfg in configs.items()},
             "paths": {p: _path_name(name, p) for p in PATHS}, "started": time.time()}
    taken = [ns for ns in state["namespaces"].values() if exists(ns)]
    if taken:  # not this testbed's: undoing a failed `up` would delete them
        raise UsageError(f"network namespace {taken[0]} exists already, not made by testbed {name!r}; "
                         "remove it or give the testbed another --name")
    write_atomic(state_path(name), json.dumps(state, indent=1))  # first: `down` can undo a crash
    try:
        build(net, LINKS, lambda link: _link_mtu(link, settings.mode, configs))
        for role in ADDRESSES:
            # a host feeding a FRER node sends wire frames: one sequence number each
            net.run(role, "ethtool", "-K", plan.HOST_PORT, "tso", "off", "gso", "off", "gro", "off")
        for link in LINKS:
            for role, ifname in (link.a, link.b):
                _shape(net, link, role, ifname, settings)
        for path in PATHS:
            element = PathImpairment(net.ns[path], "in", "out", _path_name(name, path))
            element.attach()
            element.release()
        for role, cfg in configs.items():
            control.up(cfg, net.ns[role])
    except BaseException:
        down(name)
        raise
    return state


def build(net: Namespaces, links: tuple[Link, ...], mtu: Callable[[Link], int]) -> None:
    """In `net`: a namespace per role `links` joins (talker, sw1, sw2, listener, and with LINKS
    paths a and b), the links (each with the MTU `mtu` gives it), and on talker and listener
    their MAC, address, route (IP_MTU) and a static neighbour entry for each other."""
    net.add(*dict.fromkeys(role for link in links for role, _ in (link.a, link.b)))
    for link in links:
        net.link(*link.a, *link.b, mtu=mtu(link))
    port = plan.HOST_PORT
    for role, (address, mac) in ADDRESSES.items():
        other_ip, other_mac = ADDRESSES["listener" if role == "talker" else "talker"]
        net.run(role, "ip", "link", "set", port, "address", mac)
        net.run(role, "ip", "addr", "add", f"{address}/24", "dev", port)
        net.run(role, "ip", "route", "replace", "198.18.0.0/24", "dev", port, "src", address, "mtu", str(IP_MTU))
        net.run(role, "ip", "neigh", "replace", other_ip, "lladdr", other_mac, "dev", port, "nud", "permanent")


def _link_mtu(link: Link, mode: str, configs: dict) -> int:
    """LINK_MTU for a link that carries R-tagged frames (a path, or the link of a host that
    runs FRER), else IP_MTU."""
    roles = (link.a[0], link.b[0])
    tagged = mode == "frer" and any(role in PATHS or (role in ADDRESSES and role in configs) for role in roles)
    return LINK_MTU if tagged else IP_MTU


def _shape(net: Namespaces, link: Link, role: str, ifname: str, settings: Settings) -> None:
    limit = HOST_QUEUE if role in ADDRESSES else settings.queue_limit_bytes
    rate = settings.path_rate_bps if is_path_link(link) else settings.rate_bps
    burst = max(2 * LINK_MTU + 64, rate // 8 // 1000)  # at least 1 ms of traffic
    net.run(role, "tc", "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", f"{rate}bit",
            "burst", str(burst), "limit", str(limit), "overhead", str(WIRE_EXTRA), "mpu", str(WIRE_MIN))


def is_path_link(link: Link) -> bool:
    """A link into or out of a path, or (DIRECT_LINKS) a path itself: no host at either end."""
    return link.a[0] not in ADDRESSES and link.b[0] not in ADDRESSES


def down(name: str) -> bool:
    """Removes testbed `name` and everything it made; idempotent. Returns whether anything of
    it was there. A damaged state file (the testbed's, its data planes', its paths') is refused
    (UsageError naming it) before anything is removed."""
    path = state_path(name)
    found = os.path.lexists(path)
    if found:
        read_state(name)  # a damaged state file: refused, nothing removed
    for role in HOSTS:  # so are damaged state files of its data planes and paths
        control.recorded_state(_dataplane_name(name, role))
    for p in PATHS:
        recorded_path_state(_path_name(name, p))
    for role in HOSTS:
        found |= control.down(_dataplane_name(name, role))
    for p in PATHS:
        remove_path_leftovers(_path_name(name, p))
    net = namespaces(name)
    for role in (*HOSTS, *PATHS):
        ns = f"{net.prefix}-{role}"
        if exists(ns):
            found = True
            delete(ns)
    path.unlink(missing_ok=True)
    remove_if_empty(STATE_DIR)
    return found


def prefix(name: str, host: str) -> list[str]:
    """The command prefix that runs a command inside `host`'s namespace of testbed `name`."""
    state = read_state(name)
    if host not in state["namespaces"]:
        raise UsageError(f"host {host!r} is not in the testbed ({', '.join(state['namespaces'])})")
    return ["ip", "netns", "exec", state["namespaces"][host]]


def exec_argv(name: str, host: str, argv: list[str]) -> list[str]:
    """`argv` wrapped to run inside `host`'s namespace of testbed `name`."""
    if not argv:
        raise UsageError("no command given (frerlab testbed exec HOST -- CMD ...)")
    return [*prefix(name, host), *argv]


def impair(name: str, path: str, direction: str = "both", clear: bool = False, **changes) -> dict:
    """Changes path `path`'s impairments at run time; returns its new description."""
    read_state(name)
    if path not in PATHS:
        raise UsageError(f"path {path!r} is not valid ({' or '.join(PATHS)})")
    element = PathImpairment.reopen(_path_name(name, path))
    try:
        if clear:
            element.clear(direction)
        if changes:
            element.set(direction, **changes)
        return element.describe()
    finally:
        element.release()


def status(name: str) -> dict:
    """Hosts, addresses, links (rates, queue limits, counters), path impairments (settings and
    counters) and every data plane's counters, as one record."""
    state = read_state(name)
    settings = state["settings"]
    ns = state["namespaces"]
    hosts = [{"host": role, "netns": ns[role], "address": ADDRESSES.get(role, (None, None))[0],
              "mac": ADDRESSES.get(role, (None, None))[1],
              "dataplane": state["dataplanes"].get(role)} for role in (*HOSTS, *PATHS)]
    links = []
    for link in LINKS:
        ends = []
        for role, ifname in (link.a, link.b):
            info = link_info(ns[role], ifname)
            ends.append({"host": role, "interface": ifname, "up": "UP" in info["flags"],
                         "queue_limit_bytes": HOST_QUEUE if role in ADDRESSES else settings["queue_limit_bytes"],
                         "tx_packets": info["stats64"]["tx"]["packets"],
                         "rx_packets": info["stats64"]["rx"]["packets"],
                         "tx_dropped": info["stats64"]["tx"]["dropped"] + qdisc_drops(ns[role], ifname)})
        path_rate = settings.get("path_rate_bps") or settings["rate_bps"]
        links.append({"rate_bps": path_rate if is_path_link(link) else settings["rate_bps"], "ends": ends})
    paths = {}
    for p, element_name in state["paths"].items():
        element = PathImpairment.reopen(element_name)
        try:
            paths[p] = {**element.describe(), "counters": element.counters()}
        finally:
            element.release()
    dataplanes = {role: status_dataplane(name, role) for role in state["dataplanes"]}
    return {"name": name, "settings": settings, "hosts": hosts, "links": links, "paths": paths,
            "dataplanes": dataplanes}


def status_dataplane(name: str, role: str) -> dict:
    """Every counter of the data plane of `role` (control.snapshot)."""
    dataplanes = read_state(name)["dataplanes"]
    if role not in dataplanes:
        raise UsageError(f"{role!r} runs no data plane in testbed {name!r} ({', '.join(dataplanes)} do)")
    return control.snapshot(dataplanes[role])


def received(netns: str, ifname: str = plan.HOST_PORT) -> int:
    """Frames interface `ifname` (default a host's) of namespace `netns` has received."""
    return link_info(netns, ifname)["stats64"]["rx"]["packets"]


def first_frame(netns: str, baseline: int, timeout_s: float = 30.0) -> float:
    """Waits until the host interface of `netns` has received more than `baseline` frames (a
    count from `received`): when it saw that (time.monotonic). ToolFailed after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while received(netns) == baseline:
        if time.monotonic() > deadline:
            raise ToolFailed(f"no frame reached {netns} within {timeout_s:g} s")
        time.sleep(0.002)
    return time.monotonic()


def qdisc_drops(netns: str, ifname: str) -> int:
    """Frames the token bucket on `ifname` has dropped."""
    qdiscs = json.loads(subprocess.run(["tc", "-n", netns, "-j", "-s", "qdisc", "show", "dev", ifname],
                                       capture_output=True, text=True).stdout or "[]")
    return sum(q.get("drops", 0) for q in qdiscs if q.get("kind") == "tbf")


class Testbed:
    """`with Testbed(mode="frer") as tb:` brings a testbed up and always takes it down."""

    def __init__(self, **settings) -> None:
        self.settings = Settings(**settings)
        self.name = self.settings.name

    def __enter__(self) -> Testbed:
        up(self.settings)
        return self

    def __exit__(self, *exc: object) -> None:
        down(self.name)

    def prefix(self, host: str) -> list[str]:
        """The command prefix that runs a command in `host`'s namespace."""
        return prefix(self.name, host)

    def exec(self, host: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run in `host`'s namespace."""
        return exec_argv(self.name, host, argv)

    def run(self, host: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Runs a command in `host`'s namespace to completion (text output captured)."""
        return subprocess.run(self.exec(host, list(argv)), capture_output=True, text=True, timeout=timeout)

    def impair(self, path: str, direction: str = "both", clear: bool = False, **changes) -> dict:
        """Changes a path's impairments (see frerlab.impair.PathImpairment.set)."""
        return impair(self.name, path, direction, clear, **changes)

    def status(self) -> dict:
        """The testbed as one record (see `status`)."""
        return status(self.name)
