"""A topology brought up in network namespaces: one namespace per node, each link a veth pair
named after the link on both ends, through an impairment element of its own (frerlab.impair,
in a namespace of the link's) so that it can lose frames, be cut or delayed at run time; every
node's egress shaped to its link's rate and queue; every node with something to do running
frerlab's eBPF data plane with the configuration frerlab.net.dataplane derives from the same
NodeFunctions the simulator scenario and the switch exports are made of.

Names: a network `NAME` (`--name`, default "net") lives in namespaces `n-NAME-NODE` and
`n-NAME--LINK` (two dashes: no node name starts with one); its data planes and impairment
elements have those names too. End station k (file order) has address 198.18.0.0 + k + 1
(frerlab.net.dataplane.addresses) and MAC 02:fe:00:00:HH:LL with HHLL = k + 1 on every link
it has; it holds a static neighbour entry for every other end station (no ARP: the bridges
forward only their streams' frames) and a route to each: out of the first link its streams to
that station leave by, else its first link. Its TSO, GSO and GRO are off (a FRER node numbers
wire frames) and reverse-path filtering too (an end station that recovers its own stream
receives it on several links). Links carry R-tagged frames: their MTU is LINK_MTU, the end
stations' routes IP_MTU.

A link's delay is emulated by the element's delay line when it is at least MIN_DELAY (a veth hop
through a token bucket costs tens of microseconds already); loss is set on the element (both
directions, as the topology means it); faults are not: they happen at their times during a run
(`frerlab crosscheck`), or by hand with `impair`.

The state file is written before anything is made, so `down` also removes what a killed `up`
left.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from frerlab.dataplane import control
from frerlab.dataplane.config import NodeConfig, parse_config
from frerlab.errors import UsageError
from frerlab.files import write_atomic
from frerlab.impair import PathImpairment
from frerlab.impair import remove_leftovers as remove_element_leftovers
from frerlab.impair.path import recorded_state as recorded_element_state
from frerlab.names import MAX_NAME, RUN_DIR, check_name, inside, name_problem, pydantic_name
from frerlab.net.dataplane import STREAM_PORT_BASE, addresses, node_documents
from frerlab.net.nodes import node_functions
from frerlab.net.topology import Topology, parse_topology
from frerlab.netns import Namespaces, delete, exists, ip, veth
from frerlab.statefiles import StateModel, read_state as read_state_file, remove_if_empty
from frerlab.testbed.bed import IP_MTU, LINK_MTU, WIRE_EXTRA, WIRE_MIN

STATE_DIR = RUN_DIR / "net"
DEFAULT_NAME = "net"
#: Longest network name: its namespaces are `n-NAME-NODE`, and a node name has up to 40
#: characters of its own (the names that do not fit are refused by `up`, naming them).
MAX_NETWORK_NAME = 12
#: The egress queue of a link with no `queue` in the file ("unlimited"), in bytes.
UNLIMITED_QUEUE = 1 << 30
#: Shortest link delay emulated, in picoseconds (100 us).
MIN_DELAY = 100 * 10**6
#: An impairment element's two ends inside its link's namespace: `a` faces the link's node a.
END_A, END_B = "a", "b"


def mac(k: int) -> str:
    """End station k's MAC address (k from 0, file order)."""
    return f"02:fe:00:00:{(k + 1) >> 8:02x}:{(k + 1) & 0xFF:02x}"


def state_path(name: str) -> Path:
    """The state file of network `name`; UsageError for a name that is not valid."""
    return inside(STATE_DIR, check_name(name, "network", MAX_NETWORK_NAME), ".json")


def prefix(name: str) -> str:
    """What the namespaces, data planes and elements of network `name` are named after."""
    return f"n-{name}"


def node_namespace(name: str, node: str) -> str:
    return f"{prefix(name)}-{node}"


def link_namespace(name: str, link: str) -> str:
    return f"{prefix(name)}--{link}"


def running() -> list[str]:
    """Names of the networks that are up (or left by a killed `up`)."""
    if not STATE_DIR.is_dir():
        return []
    return sorted(p.stem for p in STATE_DIR.glob("*.json") if not p.is_symlink()
                  and name_problem(p.stem, "network", MAX_NETWORK_NAME) is None)


_Name = pydantic_name("name")


class _State(StateModel):
    """What `up` writes to a network's state file."""

    name: _Name
    topology: str
    #: The topology's data (the file with its --set overrides applied).
    data: dict
    hook: str
    namespaces: dict[str, _Name]
    elements: dict[str, _Name]
    dataplanes: dict[str, _Name]
    addresses: dict[str, str]
    ports: dict[str, int]
    started: float


def read_state(name: str) -> dict:
    """The state of network `name`; UsageError naming the ones that are up otherwise, or the
    file and the field of a damaged state file."""
    path = state_path(name)
    if not os.path.lexists(path):
        raise UsageError(f"no network named {name!r} is up (up: {', '.join(running()) or 'none'}); "
                         "`frerlab net up TOPOLOGY` brings one up")
    return read_state_file(path, f"state file of network {name!r}", _State, STATE_DIR)


def topology(state: dict) -> Topology:
    """The validated topology a network was brought up with."""
    return parse_topology(state["data"], state["topology"])


def _names(name: str, topo: Topology) -> dict:
    """Every namespace, element and data plane name of the network; UsageError naming a node or
    link whose name makes one too long."""
    names = {"namespaces": {node: node_namespace(name, node) for node in topo.nodes},
             "elements": {link.name: link_namespace(name, link.name) for link in topo.links}}
    for kind, which in (("node", "namespaces"), ("link", "elements")):
        for item, full in names[which].items():
            if len(full) > MAX_NAME:
                raise UsageError(f"{kind} {item!r}: its namespace {full!r} would have {len(full)} characters "
                                 f"(at most {MAX_NAME}); give the {kind} a shorter name or the network a "
                                 f"shorter --name")
    return names


def configs(name: str, topo: Topology, hook: str, by_address: bool = False) -> dict[str, NodeConfig]:
    """Each node's data plane configuration as the network loads it (named after its namespace;
    `by_address`: frerlab.net.dataplane.node_documents')."""
    out = {}
    for node, document in node_documents(topo, by_address).items():
        document = {**document, "name": node_namespace(name, node), "hook": hook}
        out[node] = parse_config(document, f"node {node} of the topology")
    return out


def routes(topo: Topology) -> dict[str, dict[str, str]]:
    """End station -> (other end station -> the link its route leaves by): the first link its
    streams to that station leave by; UsageError if two of them leave by different links."""
    functions = node_functions(topo)
    chosen: dict[tuple[str, str], tuple[str, str]] = {}  # (talker, listener) -> (link, the stream that chose it)
    for s in topo.streams:
        plan = topo.plans[s.name]
        (forward,) = [f for f in functions[plan.talker].forwarding if f.stream == s.name]
        link, first = chosen.setdefault((plan.talker, plan.listener), (forward.output[0], s.name))
        if link != forward.output[0]:
            raise UsageError(f"streams {first} and {s.name} both go from {plan.talker} to {plan.listener} but "
                             f"leave by different links ({link}, {forward.output[0]}): "
                             "a namespace network routes by destination; give them the same first link")
    routed: dict[str, dict[str, str]] = {}
    for (talker, listener), (link, _) in chosen.items():
        routed.setdefault(talker, {})[listener] = link
    return routed


def up(topo: Topology, data: dict, source: str, name: str = DEFAULT_NAME, hook: str = "tc",
       by_address: bool = False) -> dict:
    """Brings topology `topo` (whose file data with overrides is `data`) up as network `name`
    (`by_address`: its streams identified by their listener's address alone, any UDP port); on
    any failure removes what it made and re-raises. Returns its state."""
    check_name(name, "network", MAX_NETWORK_NAME)
    names = _names(name, topo)
    node_configs = configs(name, topo, hook, by_address)
    route_links = routes(topo)
    control.probe(None)
    if state_path(name).exists():
        raise UsageError(f"network {name!r} is up already; `frerlab net down --name {name}` first")
    taken = [ns for ns in (*names["namespaces"].values(), *names["elements"].values()) if exists(ns)]
    if taken:  # not this network's: undoing a failed `up` would delete them
        raise UsageError(f"network namespace {taken[0]} exists already, not made by network {name!r}; "
                         "remove it or give the network another --name")
    address = addresses(topo)
    state = {"name": name, "topology": source, "data": data, "hook": hook, **names,
             "dataplanes": {node: cfg.name for node, cfg in node_configs.items()}, "addresses": address,
             "ports": {s.name: STREAM_PORT_BASE + i for i, s in enumerate(topo.streams)}, "started": time.time()}
    write_atomic(state_path(name), json.dumps(state, indent=1))  # first: `down` can undo a crash
    try:
        _build(name, topo, names, address, route_links)
        for node, cfg in node_configs.items():
            control.up(cfg, names["namespaces"][node])
    except BaseException:
        down(name)
        raise
    return state


def _build(name: str, topo: Topology, names: dict, address: dict[str, str], route_links: dict[str, dict[str, str]]) -> None:
    """The namespaces, links, elements, shaping and the end stations' addresses and routes."""
    spaces, elements = names["namespaces"], names["elements"]
    net = Namespaces(prefix(name))
    net.add(*topo.nodes, *(f"-{link.name}" for link in topo.links))
    stations = [node for node, spec in topo.nodes.items() if spec.kind == "end_station"]
    for station in stations:  # before its links are made: they take the defaults
        net.run(station, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")
    for link in topo.links:
        middle = elements[link.name]
        veth(spaces[link.a], link.name, middle, END_A, mtu=LINK_MTU)
        veth(middle, END_B, spaces[link.b], link.name, mtu=LINK_MTU)
        element = PathImpairment(middle, END_A, END_B, middle)
        element.attach()
        try:
            changes = {}
            if link.p:
                changes["loss"] = link.p
            if link.delay >= MIN_DELAY:
                changes["delay_ms"] = link.delay / 1e9
            if changes:
                element.set("both", **changes)
        finally:
            element.release()
        queue = UNLIMITED_QUEUE if link.queue is None else link.queue
        for node in (link.a, link.b):
            _shape(spaces[node], link.name, link.rate, queue)
    for k, station in enumerate(stations):
        ns = spaces[station]
        links = [link.name for link in topo.links if station in (link.a, link.b)]
        for link in links:
            ip("-n", ns, "link", "set", "dev", link, "address", mac(k))
            net.run(station, "ethtool", "-K", link, "tso", "off", "gso", "off", "gro", "off")
        ip("-n", ns, "addr", "add", f"{address[station]}/32", "dev", links[0])
        for j, other in enumerate(stations):
            if other == station:
                continue
            out = route_links.get(station, {}).get(other, links[0])
            ip("-n", ns, "route", "replace", f"{address[other]}/32", "dev", out, "src", address[station],
               "mtu", str(IP_MTU))
            for link in links:
                ip("-n", ns, "neigh", "replace", address[other], "lladdr", mac(j), "dev", link, "nud", "permanent")


def _shape(ns: str, ifname: str, rate: int, queue: int) -> None:
    """A token bucket on `ifname`'s egress: `rate` bit/s charged for the wire's bytes, `queue`
    bytes of tail-drop queue."""
    burst = max(2 * LINK_MTU + 64, rate // 8 // 1000)  # at least 1 ms of traffic
    subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", f"{rate}bit",
                    "burst", str(burst), "limit", str(max(queue, 2 * LINK_MTU)), "overhead", str(WIRE_EXTRA),
                    "mpu", str(WIRE_MIN)], check=True, capture_output=True)


def down(name: str) -> bool:
    """Removes network `name` and everything it made; idempotent. Returns whether anything of it
    was there. A damaged state file (the network's, its data planes', its elements') is refused
    (UsageError naming it) before anything is removed."""
    path = state_path(name)
    if not os.path.lexists(path):
        return False
    state = read_state(name)
    for dataplane in state["dataplanes"].values():
        control.recorded_state(dataplane)
    for element in state["elements"].values():
        recorded_element_state(element)
    for dataplane in state["dataplanes"].values():
        control.down(dataplane)
    for element in state["elements"].values():
        remove_element_leftovers(element)
    for ns in (*state["namespaces"].values(), *state["elements"].values()):
        if exists(ns):
            delete(ns)
    path.unlink(missing_ok=True)
    remove_if_empty(STATE_DIR)
    return True


def exec_argv(name: str, node: str, argv: list[str]) -> list[str]:
    """`argv` wrapped to run inside `node`'s namespace of network `name`."""
    spaces = read_state(name)["namespaces"]
    if node not in spaces:
        raise UsageError(f"node {node!r} is not in network {name!r} ({', '.join(spaces)})")
    if not argv:
        raise UsageError("no command given (frerlab net exec NODE -- CMD ...)")
    return ["ip", "netns", "exec", spaces[node], *argv]


def impair(name: str, link: str, clear: bool = False, **changes) -> dict:
    """Changes link `link`'s impairments (both directions) at run time; returns its element's
    new description."""
    elements = read_state(name)["elements"]
    if link not in elements:
        raise UsageError(f"link {link!r} is not in network {name!r} ({', '.join(elements)})")
    element = PathImpairment.reopen(elements[link])
    try:
        if clear:
            element.clear("both")
        if changes:
            element.set("both", **changes)
        return element.describe()
    finally:
        element.release()


def status(name: str) -> dict:
    """The network as one record: per node its namespace, address and data plane counters; per
    link its element's settings and counters."""
    state = read_state(name)
    nodes = {node: {"netns": ns, "address": state["addresses"].get(node),
                    "dataplane": control.snapshot(state["dataplanes"][node]) if node in state["dataplanes"] else None}
             for node, ns in state["namespaces"].items()}
    links = {}
    for link, element_name in state["elements"].items():
        element = PathImpairment.reopen(element_name)
        try:
            links[link] = {**element.describe(), "counters": element.counters()}
        finally:
            element.release()
    return {"name": name, "topology": state["topology"], "nodes": nodes, "links": links}
