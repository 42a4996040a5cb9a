"""What the testbed's nodes run: the data plane configuration of talker, sw1, sw2 and
listener for a mode and a placement, in the data plane's own vocabulary (NodeConfig).

Both directions are protected alike, so replies, TCP ACKs and iperf3's control connection
survive a cut path. For each direction a stream (every IPv4 frame to the far host) is
numbered and replicated at one node and eliminated at another:

    talker -> listener: replicated at --replicate-at (talker | sw1),
                        eliminated at --eliminate-at (sw2 | listener)
    listener -> talker: the mirror image (replicated where the other is eliminated).

The copy on path a carries VLAN 10, the copy on path b VLAN 20 (active destination MAC and
VLAN identification at the replicating node, 802.1CB 6.6), so a switch between a replicating
host and the paths (or between the paths and an eliminating host) forwards each copy by its
VLAN alone, as a bridge with static VLAN entries would. The eliminating node restores VLAN 0
(a priority tag, which hosts accept as untagged). In `control` mode the switches only bridge
host port and path a: the seeds' control group, no FRER.
"""

from __future__ import annotations

from dataclasses import dataclass

from frerlab.dataplane.config import LOCAL, NodeConfig

TALKER_IP, LISTENER_IP = "198.18.0.1", "198.18.0.2"
TALKER_MAC, LISTENER_MAC = "02:fe:00:00:00:01", "02:fe:00:00:00:02"
#: Host interface, switch port to the host, switch ports to paths a and b (the seeds' numbering:
#: SW1 replicates port 4 to ports 1 and 2).
HOST_PORT, SWITCH_HOST_PORT, PATH_PORTS = "eth0", "p4", {"a": "p1", "b": "p2"}
PATH_VLANS = {"a": 10, "b": 20}
MODES = ("frer", "control")
REPLICATE_AT = ("talker", "sw1")
ELIMINATE_AT = ("sw2", "listener")


@dataclass(frozen=True)
class Recovery:
    """The sequence recovery settings of both eliminating nodes, and the policing of each
    path's copies before them (802.1Qci: a stream filter per path port with a flow meter of
    `police_bps` bit/s of SDU and `police_burst` octets; None: no policing).

    `take_no_sequence` (802.1CB 10.4.1.6): every recovery function of the stream passes its
    frames without an R-TAG; `individual_recovery` (7.5) puts an individual recovery function on
    each path port, with the same algorithm, history length and take-no-sequence and frerlab's
    default reset timeout for it, in front of the sequence recovery function of the compound
    stream."""

    algorithm: str = "vector"
    history_length: int = 32
    reset_timeout_ms: int = 1000
    take_no_sequence: bool = False
    individual_recovery: bool = False
    latent_difference: int = 100
    latent_period_ms: int = 1000
    police_bps: int | None = None
    police_burst: int = 10_000


@dataclass(frozen=True)
class _Direction:
    handle: int
    dst_ip: str
    dst_mac: str
    chain: tuple[str, str, str, str]  # source host, near switch, far switch, destination host
    replicate: str
    eliminate: str


def _directions(replicate_at: str, eliminate_at: str) -> list[_Direction]:
    return [
        _Direction(1, LISTENER_IP, LISTENER_MAC, ("talker", "sw1", "sw2", "listener"), replicate_at, eliminate_at),
        _Direction(2, TALKER_IP, TALKER_MAC, ("listener", "sw2", "sw1", "talker"), eliminate_at, replicate_at),
    ]


class _Builder:
    """Collects one node's configuration lists, numbering their indices."""

    def __init__(self, name: str, ports: list[str]) -> None:
        self.data: dict = {"name": name, "ports": ports, "stream-identity": [], "sequence-generation": [],
                           "sequence-recovery": [], "stream-split": [], "stream-forwarding": [],
                           "stream-filter": [], "flow-meter": []}

    def identity(self, handle: int, placement: dict, kind: str, params: dict) -> None:
        ids = self.data["stream-identity"]
        ids.append({"index": len(ids) + 1, "handle": handle, **placement, kind: params})

    def add(self, kind: str, entry: dict) -> None:
        entries = self.data[kind]
        if kind in ("sequence-generation", "sequence-recovery"):
            entry = {"index": len(entries) + 1, **entry}
        entries.append(entry)


def _active(dst_mac: str, vid: int) -> dict:
    return {"down": {"destination-mac": dst_mac, "vlan": vid}, "up": {"destination-mac": dst_mac, "vlan": 0}}


def _member(d: _Direction, path: str) -> int:
    return d.handle * 10 + (1 if path == "a" else 2)


def node_configs(mode: str, replicate_at: str = "sw1", eliminate_at: str = "sw2",
                 recovery: Recovery = Recovery(), prefix: str = "frerlab") -> dict[str, NodeConfig]:
    """The data plane configuration of each node that runs one (role -> NodeConfig); data plane
    names are `<prefix>-<role>`. ValueError for an unknown mode or placement."""
    for name, value, valid in (("mode", mode, MODES), ("replicate-at", replicate_at, REPLICATE_AT),
                               ("eliminate-at", eliminate_at, ELIMINATE_AT)):
        if value not in valid:
            raise ValueError(f"{name} {value!r} is not valid ({' or '.join(valid)})")
    per_path = [what for what, on in (("policing each path", recovery.police_bps is not None),
                                      ("individual recovery", recovery.individual_recovery)) if on]
    if per_path and (mode != "frer" or (replicate_at, eliminate_at) != ("sw1", "sw2")):
        raise ValueError(f"{per_path[0]} needs frer mode with both switches eliminating a direction "
                         "(--replicate-at sw1 --eliminate-at sw2): a host receives both paths on one port")
    switch_ports = [SWITCH_HOST_PORT, PATH_PORTS["a"], PATH_PORTS["b"]]
    builders = {"talker": _Builder(f"{prefix}-talker", [HOST_PORT]),
                "sw1": _Builder(f"{prefix}-sw1", switch_ports),
                "sw2": _Builder(f"{prefix}-sw2", switch_ports),
                "listener": _Builder(f"{prefix}-listener", [HOST_PORT])}
    if mode == "control":
        for sw in ("sw1", "sw2"):
            builders[sw].data["bridge-ports"] = [SWITCH_HOST_PORT, PATH_PORTS["a"]]
        return {sw: NodeConfig.model_validate(builders[sw].data) for sw in ("sw1", "sw2")}
    for d in _directions(replicate_at, eliminate_at):
        _replicate(builders[d.replicate], d, at_host=d.replicate == d.chain[0])
        _eliminate(builders[d.eliminate], d, recovery, at_host=d.eliminate == d.chain[3])
        if d.replicate == d.chain[0]:  # the near switch forwards each copy by its VLAN
            _relay(builders[d.chain[1]], d, from_paths=False)
        if d.eliminate == d.chain[3]:  # the far switch passes both copies to the host
            _relay(builders[d.chain[2]], d, from_paths=True)
    return {role: NodeConfig.model_validate(b.data) for role, b in builders.items()
            if b.data["stream-identity"]}


def _replicate(b: _Builder, d: _Direction, at_host: bool) -> None:
    """Sequence generation and one copy per path, each with its path's VLAN."""
    ip = {"ip-destination": d.dst_ip}
    if at_host:
        b.identity(d.handle, {"in-facing": {"input-port": [HOST_PORT]}}, "ip-stream-identification", ip)
        outputs = {path: HOST_PORT for path in PATH_VLANS}
    else:
        b.identity(d.handle, {"out-facing": {"input-port": [SWITCH_HOST_PORT]}}, "ip-stream-identification", ip)
        outputs = PATH_PORTS
    for path, port in outputs.items():
        b.identity(_member(d, path), {"out-facing": {"output-port": [port]}}, "dmac-vlan-stream-identification",
                   _active(d.dst_mac, PATH_VLANS[path]))
    b.add("sequence-generation", {"stream": [d.handle]})
    for port in dict.fromkeys(outputs.values()):
        members = [_member(d, path) for path, p in outputs.items() if p == port]
        b.add("stream-split", {"port": port, "input-id": [d.handle], "output-id": members})
    b.add("stream-forwarding", {"stream": d.handle, "output-port": list(dict.fromkeys(outputs.values()))})


def _eliminate(b: _Builder, d: _Direction, rec: Recovery, at_host: bool) -> None:
    """The copies of both paths are one compound stream: sequence recovery, then on to the host."""
    for path in PATH_VLANS:
        port = HOST_PORT if at_host else PATH_PORTS[path]
        b.identity(d.handle, {"out-facing": {"input-port": [port]}}, "dmac-vlan-stream-identification",
                   _active(d.dst_mac, PATH_VLANS[path]))
    if rec.individual_recovery:
        for path in PATH_VLANS:
            b.add("sequence-recovery", {"stream": [d.handle], "port": [PATH_PORTS[path]], "individual-recovery": True,
                                        "algorithm": rec.algorithm, "history-length": rec.history_length,
                                        "take-no-sequence": rec.take_no_sequence})
    b.add("sequence-recovery", {
        "stream": [d.handle], "algorithm": rec.algorithm, "history-length": rec.history_length,
        "reset-timeout": rec.reset_timeout_ms, "take-no-sequence": rec.take_no_sequence,
        "latent-error-detection": True,
        "latent-error-detection-parameters": {"difference": rec.latent_difference, "period": rec.latent_period_ms,
                                              "paths": 2, "reset-period": 30 * rec.latent_period_ms}})
    b.add("stream-forwarding", {"stream": d.handle, "output-port": [LOCAL if at_host else SWITCH_HOST_PORT]})
    if rec.police_bps is not None:
        for path in PATH_VLANS:
            b.add("stream-filter", {"index": _member(d, path), "stream": [d.handle], "port": [PATH_PORTS[path]],
                                    "flow-meter": _member(d, path)})
            b.add("flow-meter", {"index": _member(d, path), "committed-information-rate": rec.police_bps,
                                 "committed-burst-size": rec.police_burst})


def _relay(b: _Builder, d: _Direction, from_paths: bool) -> None:
    """A switch that forwards each R-tagged copy by its path VLAN (no FRER function)."""
    for path, vid in PATH_VLANS.items():
        port_in, port_out = ((PATH_PORTS[path], SWITCH_HOST_PORT) if from_paths
                             else (SWITCH_HOST_PORT, PATH_PORTS[path]))
        b.identity(_member(d, path), {"out-facing": {"input-port": [port_in]}}, "null-stream-identification",
                   {"destination-mac": d.dst_mac, "tagged": "tagged", "vlan": vid})
        b.add("stream-forwarding", {"stream": _member(d, path), "output-port": [port_out]})
