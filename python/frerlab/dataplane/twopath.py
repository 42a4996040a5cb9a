"""The data plane's own harness for exercising and measuring it: the testbed's topology
(frerlab.testbed.bed.build) with each path a plain veth from sw1 to sw2 (DIRECT_LINKS: no path
namespace, no impairment, no shaping), talker (198.18.0.1) - sw1 - paths a (port p1) and b
(p2) - sw2 - listener (198.18.0.2), the switches' host ports p4; one direction (talker to
listener). What this module adds is what each benchmark mode loads on it.

mode "frer": sw1 numbers and replicates onto both paths, sw2 eliminates and removes the R-TAG
(frerlab's eBPF data plane). The baselines are plain tc redirects with no FRER
(bpf/redirect.c): "plain" uses path a only; "plain-dual" moves as many frames as "frer" (sw1
copies every frame onto both paths, sw2 forwards path a's and drops path b's). "xdp-frer",
"xdp-plain" and "xdp-plain-dual" are "frer", "plain" and "plain-dual" in native XDP
(bpf/frer_xdp.c; xdp_plain_redirect, and xdp_plain_copy's one broadcast redirect onto both
paths as frer_xdp sends a stream's copies); the
listener's port then runs xdp_pass, because a frame redirected into a veth in native mode is
delivered only to a peer with an XDP program, and the talker computes its checksums (tx
offload off), because a redirected XDP frame has no skb to carry a partial checksum.

With `streams` > 1 the talker's flow is spread over that many streams by its UDP ports
(bpf/redirect.c spread_ports on the talker's egress: frame k gets the ports of stream k mod
streams, `stream_ports`) and gathered again at the listener (unspread_ports on its ingress), in
every mode alike; "frer" and "xdp-frer" then identify each stream by its ports (IP stream
identification, compiled from a generated configuration), number it at sw1 and recover it at
sw2 on its own, so the state of every stream is touched in turn. `room` loads the FRER nodes
for more streams than they carry (frerlab.dataplane.node.map_shapes: larger arrays, one
recovery entry per stream from 3,856 on), to measure what the maps cost alone. `rewrite_b` has sw1 write path b's
copies' destination MAC (the listener's own, so the listener takes either copy): the copies
then differ per port, as with active stream identification on one path, and XDP rewrites each
as it leaves (frer_xdp_copy), to measure what that costs.
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

from frerlab import bpfsys
from frerlab.bpfsys import add_clsact, attach_ingress, attach_tc, attach_xdp, detach, ifindex
from frerlab.dataplane import layout
from frerlab.dataplane.config import NodeConfig, parse_config
from frerlab.dataplane.node import Node
from frerlab.netns import Namespaces, entered, ip, link_info
from frerlab.testbed import bed
from frerlab.testbed.plan import HOST_PORT, LISTENER_IP, LISTENER_MAC, PATH_PORTS, SWITCH_HOST_PORT
from frerlab.traffic.across import stream_across

REDIRECT_OBJECT = Path(__file__).resolve().parents[3] / "bpf" / "build" / "redirect.o"
PATH_A, PATH_B = PATH_PORTS["a"], PATH_PORTS["b"]
#: Each switch's ports in the order of its node's port numbers.
SWITCH_PORTS = {"sw1": [SWITCH_HOST_PORT, PATH_A, PATH_B], "sw2": [PATH_A, PATH_B, SWITCH_HOST_PORT]}
_ids = itertools.count()
MODES = ("frer", "plain", "plain-dual", "xdp-frer", "xdp-plain", "xdp-plain-dual")
#: bpf/redirect.c struct spread: n, next, sport, dport, restore, pad.
SPREAD = struct.Struct("<IIHHHH")
#: The first source and destination ports of the spread streams; the receiver's port.
SPREAD_SPORT, SPREAD_DPORT, RECEIVER_PORT = 20000, 30000, 5555


def stream_ports(stream: int) -> tuple[int, int]:
    """(source, destination) UDP ports of spread stream `stream` (0..65535)."""
    return SPREAD_SPORT + stream // 256, SPREAD_DPORT + stream % 256


def spread_configs(streams: int, history_length: int, name: str) -> tuple[NodeConfig, NodeConfig]:
    """The configurations of sw1 and sw2 (spread_config) for `streams` streams."""
    return tuple(spread_config(role, streams, history_length, name) for role in ("sw1", "sw2"))


def spread_config(role: str, streams: int, history_length: int, name: str) -> NodeConfig:
    """The configuration of sw1 (numbers and replicates each stream) or sw2 (recovers each,
    removing the R-TAG) for `streams` streams identified by their UDP ports."""
    def identities(ports: list[str]) -> list[dict]:
        return [{"index": s, "handle": s, "out-facing": {"input-port": ports},
                 "ip-stream-identification": {"next-protocol": "udp", "source-port": stream_ports(s)[0],
                                              "destination-port": stream_ports(s)[1]}} for s in range(streams)]
    handles = list(range(streams))
    if role == "sw1":
        return parse_config({"name": f"{name}-sw1", "ports": SWITCH_PORTS["sw1"],
                             "stream-identity": identities([SWITCH_HOST_PORT]),
                             "sequence-generation": [{"index": 0, "stream": handles}],
                             "stream-forwarding": [{"stream": s, "output-port": [PATH_A, PATH_B]} for s in handles]})
    return parse_config({"name": f"{name}-sw2", "ports": SWITCH_PORTS["sw2"],
                         "stream-identity": identities([PATH_A, PATH_B]),
                         "sequence-recovery": [{"index": 0, "stream": handles, "history-length": history_length,
                                                "reset-timeout": 1000}],
                         "stream-forwarding": [{"stream": s, "output-port": [SWITCH_HOST_PORT]} for s in handles]})


class TwoPath:
    """The topology; `with TwoPath("frer") as net:` builds it, leaving removes everything."""

    def __init__(self, mode: str, history_length: int = 32, streams: int = 1, room: int | None = None,
                 rewrite_b: bool = False) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not valid ({', '.join(MODES)})")
        if not 1 <= streams <= layout.MAX_STREAMS:
            raise ValueError(f"streams {streams} is out of range (1..={layout.MAX_STREAMS})")
        room = streams if room is None else room
        if not streams <= room <= layout.MAX_STREAMS:
            raise ValueError(f"room {room} is out of range ({streams}..={layout.MAX_STREAMS}: at least the streams)")
        if rewrite_b and (mode not in ("frer", "xdp-frer") or streams > 1):
            raise ValueError(f"rewrite_b is for one stream in mode frer or xdp-frer, not {streams} in {mode}")
        self.mode, self.history_length, self.streams, self.room = mode, history_length, streams, room
        self.rewrite_b = rewrite_b
        self.net = Namespaces(f"frd{os.getpid()}x{next(_ids)}")
        self.prefix, self.ns = self.net.prefix, self.net.ns
        self.sw1: Node | None = None
        self.sw2: Node | None = None
        #: the programs each switch runs, pinned (role: paths), for their run-time statistics
        self.programs: dict[str, list[Path]] = {"sw1": [], "sw2": []}
        self._plain_pins: list[Path] = []
        self._plain_ports: list[tuple[str, str]] = []

    def __enter__(self) -> TwoPath:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build(self) -> None:
        # paths carry R-tagged frames in every mode, the hosts' links none
        bed.build(self.net, bed.DIRECT_LINKS, lambda link: bed.LINK_MTU if bed.is_path_link(link) else bed.IP_MTU)
        xdp = self.mode.startswith("xdp")
        if xdp:
            self._plain("listener", {HOST_PORT: ("xdp_pass", None)}, xdp=True)
            # a redirected XDP frame leaves its skb's checksum offload behind: the talker
            # must send complete checksums
            self.net.run("talker", "ethtool", "-K", HOST_PORT, "tx", "off")
        if self.streams > 1:
            self._spread()
        if self.mode in ("frer", "xdp-frer"):
            self.sw1 = Node(f"{self.prefix}-sw1", self.ns["sw1"], SWITCH_PORTS["sw1"], xdp=xdp,
                            streams=self.room).__enter__()
            self.sw2 = Node(f"{self.prefix}-sw2", self.ns["sw2"], SWITCH_PORTS["sw2"], xdp=xdp,
                            streams=self.room).__enter__()
            if self.streams > 1:
                sw1, sw2 = spread_configs(self.streams, self.history_length, self.prefix)
                self.sw1.apply(sw1.plan)
                self.sw2.apply(sw2.plan)
            else:
                dmacs = {PATH_B: bytes.fromhex(LISTENER_MAC.replace(":", ""))} if self.rewrite_b else None
                self.sw1.add_stream(0, ingress=[SWITCH_HOST_PORT], outputs=[PATH_A, PATH_B], generate=True,
                                    encode=True, dmacs=dmacs)
                self.sw2.add_stream(0, ingress=[PATH_A, PATH_B], outputs=[SWITCH_HOST_PORT],
                                    recovery=layout.RecoveryConfig(history_length=self.history_length,
                                                                   reset_timeout_ns=1_000_000_000))
            for role, node in (("sw1", self.sw1), ("sw2", self.sw2)):
                node.attach(xdp={port: "native" for port in node.ports} if xdp else None)
                self.programs[role].append(node.pin_dir / ("xdp/frer_xdp" if xdp else "frer_ingress"))
            if xdp and self.rewrite_b:  # run by the device map on each copy, after frer_xdp
                self.programs["sw1"].append(self.sw1.pin_dir / "xdp" / "frer_xdp_copy")
        elif self.mode == "xdp-plain":
            self._plain("sw1", {SWITCH_HOST_PORT: ("xdp_plain_redirect", PATH_A)}, xdp=True)
            self._plain("sw2", {PATH_A: ("xdp_plain_redirect", SWITCH_HOST_PORT)}, xdp=True)
        elif self.mode == "xdp-plain-dual":
            self._plain("sw1", {SWITCH_HOST_PORT: ("xdp_plain_copy", None)}, copy={SWITCH_HOST_PORT: [PATH_A, PATH_B]},
                        xdp=True)
            self._plain("sw2", {PATH_A: ("xdp_plain_redirect", SWITCH_HOST_PORT), PATH_B: ("xdp_plain_drop", None)},
                        xdp=True)
        elif self.mode == "plain":
            self._plain("sw1", {SWITCH_HOST_PORT: ("plain_redirect", PATH_A)})
            self._plain("sw2", {PATH_A: ("plain_redirect", SWITCH_HOST_PORT)})
        else:
            self._plain("sw1", {SWITCH_HOST_PORT: ("plain_copy", PATH_B)}, copy={SWITCH_HOST_PORT: [PATH_A]})
            self._plain("sw2", {PATH_A: ("plain_redirect", SWITCH_HOST_PORT), PATH_B: ("plain_drop", None)})

    def _spread(self) -> None:
        """spread_ports on the talker's egress, unspread_ports on the listener's ingress."""
        for role, port, program, hook in (("talker", HOST_PORT, "spread_ports", "egress"),
                                          ("listener", HOST_PORT, "unspread_ports", "ingress")):
            netns = self.ns[role]
            pin_dir = bpfsys.BPFFS / f"{self.prefix}-{role}-spread"
            bpfsys.load_and_pin(REDIRECT_OBJECT, pin_dir)
            self._plain_pins.append(pin_dir)
            with bpfsys.Map(pin_dir / "maps" / "spread", 4, SPREAD.size) as spread:
                spread.update(layout.key(0), SPREAD.pack(self.streams, 0, SPREAD_SPORT, SPREAD_DPORT,
                                                         RECEIVER_PORT, 0))
            self._plain_ports.append((netns, port))
            add_clsact(netns, port)
            attach_tc(netns, port, pin_dir / program, hook)

    def _plain(self, role: str, ports: dict[str, tuple[str, str | None]],
               copy: dict[str, list[str]] | None = None, xdp: bool = False) -> None:
        """Loads bpf/redirect.o for `role`; `ports` maps each input port to (program, output
        port), `copy` an input port to the ports that get a copy (tc: the one that gets it
        before the redirect; XDP: every port of the broadcast); `xdp`: the programs are XDP
        ones, attached native."""
        netns = self.ns[role]
        pin_dir = bpfsys.BPFFS / f"{self.prefix}-{role}"
        bpfsys.load_and_pin(REDIRECT_OBJECT, pin_dir)
        self._plain_pins.append(pin_dir)
        with bpfsys.Map(pin_dir / "maps" / "redirect_to", 4, 4) as redirect_to, \
                bpfsys.Map(pin_dir / "maps" / "copy_to", 4, 4) as copy_to, \
                bpfsys.Map(pin_dir / "maps" / "xdp_copy_ports", 4, 4) as copy_ports:
            for port_in, (_, port_out) in ports.items():
                if port_out:
                    redirect_to.update(layout.key(ifindex(netns, port_in)), layout.key(ifindex(netns, port_out)))
            for port_in, copies in (copy or {}).items():
                if not xdp:
                    (port_copy,) = copies
                    copy_to.update(layout.key(ifindex(netns, port_in)), layout.key(ifindex(netns, port_copy)))
                    continue
                # a device map takes its devices from the updating thread's namespace
                with entered(netns):
                    for port_copy in copies:
                        copy_ports.update(layout.key(ifindex(netns, port_copy)), layout.key(ifindex(netns, port_copy)))
        for port_in, (program, _) in ports.items():
            self._plain_ports.append((netns, port_in))
            if xdp:
                attach_xdp(netns, port_in, pin_dir / program, "native")
            else:
                attach_ingress(netns, port_in, pin_dir / program)
            if role != "listener":
                self.programs[role].append(pin_dir / program)

    def exec(self, role: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run in the namespace of `role` (talker, sw1, sw2, listener)."""
        return self.net.exec(role, argv)

    def stream(self, send_args: list[str], during: Callable[[], None] | None = None,
               timeout_s: float = 60.0) -> dict:
        """Sends a stream talker -> listener with `frerlab gen send SEND_ARGS` (rate, count or
        duration, frame size) while `frerlab gen recv` listens; `during` runs while it flows.
        Returns the receiver's report of the stream (lost, duplicates, latency, ...)."""
        with tempfile.TemporaryDirectory(prefix="frerlab-twopath-") as tmp:
            reports = stream_across(self.exec("talker", []), self.exec("listener", []), LISTENER_IP, send_args,
                                    Path(tmp), during=during, timeout_s=timeout_s)
        return reports.stream()

    def listener_rx_frames(self) -> int:
        """Frames the listener's interface has received so far."""
        return link_info(self.ns["listener"], HOST_PORT)["stats64"]["rx"]["packets"]

    def set_path(self, path: str, up: bool) -> None:
        """Cuts (`up=False`) or restores path `path` ('a' or 'b') at sw1."""
        ip("-n", self.ns["sw1"], "link", "set", PATH_PORTS[path], "up" if up else "down")

    def close(self) -> None:
        """Removes nodes, pins and namespaces; safe to call twice."""
        for node in (self.sw1, self.sw2):
            if node:
                node.close()
        for netns, port in self._plain_ports:
            detach(netns, port)
        self._plain_ports.clear()
        for pin_dir in self._plain_pins:
            bpfsys.unpin(pin_dir)
        self._plain_pins.clear()
        self.net.close()
