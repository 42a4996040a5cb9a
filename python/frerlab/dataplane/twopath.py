"""A minimal two-path topology in network namespaces for exercising and measuring the data
plane: talker (198.18.0.1) - sw1 - paths a and b - sw2 - listener (198.18.0.2), one direction
(talker to listener), static neighbour, IPv6 off.

mode "frer": sw1 numbers and replicates onto both paths, sw2 eliminates and removes the R-TAG
(frerlab's eBPF data plane). The baselines are plain tc redirects with no FRER
(bpf/redirect.c): "plain" uses path a only; "plain-dual" moves as many frames as "frer" (sw1
copies every frame onto both paths, sw2 forwards path a's and drops path b's). The full
testbed (shaping, impairments, both directions, `frerlab testbed`) is issue 4; this is the
data plane's own harness.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from frerlab.dataplane import bpfsys, layout
from frerlab.dataplane.node import Node, attach_ingress, detach, ifindex
from frerlab.traffic.tools.base import wait_for_udp_port

REDIRECT_OBJECT = Path(__file__).resolve().parents[3] / "bpf" / "build" / "redirect.o"
# veths: (namespace role, interface, namespace role, interface)
LINKS = [("tal", "t0", "sw1", "up"), ("sw1", "pa", "sw2", "pa"), ("sw1", "pb", "sw2", "pb"),
         ("sw2", "down", "lis", "l0")]
LISTENER_IP = "198.18.0.2"
#: MTU of the path links: room for an R-TAG (6 bytes) on a full-size frame.
PATH_MTU = 1506
_ids = itertools.count()
CLI = [sys.executable, "-m", "frerlab.cli"]
PORT = "5555"
MODES = ("frer", "plain", "plain-dual")


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


class TwoPath:
    """The topology; `with TwoPath("frer") as net:` builds it, leaving removes everything."""

    def __init__(self, mode: str, history_length: int = 32) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not valid ({', '.join(MODES)})")
        self.mode, self.history_length = mode, history_length
        self.prefix = f"frd{os.getpid()}x{next(_ids)}"
        self.ns = {role: f"{self.prefix}-{role}" for role in ("tal", "sw1", "sw2", "lis")}
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
        for name in self.ns.values():
            _ip("netns", "add", name)
            _ip("netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            _ip("-n", name, "link", "set", "lo", "up")
        for a_ns, a_if, b_ns, b_if in LINKS:
            _ip("link", "add", f"{self.prefix}a", "netns", self.ns[a_ns], "type", "veth", "peer",
                "name", f"{self.prefix}b", "netns", self.ns[b_ns])
            # Paths carry R-tagged frames, 6 bytes longer than the hosts' (as a VLAN tag would be).
            mtu = str(PATH_MTU if a_if.startswith("p") else 1500)
            _ip("-n", self.ns[a_ns], "link", "set", f"{self.prefix}a", "name", a_if, "mtu", mtu, "up")
            _ip("-n", self.ns[b_ns], "link", "set", f"{self.prefix}b", "name", b_if, "mtu", mtu, "up")
        _ip("-n", self.ns["tal"], "addr", "add", "198.18.0.1/24", "dev", "t0")
        _ip("-n", self.ns["lis"], "addr", "add", f"{LISTENER_IP}/24", "dev", "l0")
        (l0,) = json.loads(_ip("-n", self.ns["lis"], "-j", "link", "show", "dev", "l0"))
        _ip("-n", self.ns["tal"], "neigh", "replace", LISTENER_IP, "lladdr", l0["address"],
            "dev", "t0", "nud", "permanent")
        if self.mode == "frer":
            self.sw1 = Node(f"{self.prefix}-sw1", self.ns["sw1"], ["up", "pa", "pb"]).__enter__()
            self.sw1.add_stream(0, ingress=["up"], outputs=["pa", "pb"], generate=True, encode=True)
            self.sw2 = Node(f"{self.prefix}-sw2", self.ns["sw2"], ["pa", "pb", "down"]).__enter__()
            self.sw2.add_stream(0, ingress=["pa", "pb"], outputs=["down"], recovery=layout.RecoveryConfig(
                history_length=self.history_length, reset_timeout_ns=1_000_000_000))
            self.sw1.attach()
            self.sw2.attach()
            for role, node in (("sw1", self.sw1), ("sw2", self.sw2)):
                self.programs[role].append(node.pin_dir / "frer_ingress")
        elif self.mode == "plain":
            self._plain("sw1", {"up": ("plain_redirect", "pa")})
            self._plain("sw2", {"pa": ("plain_redirect", "down")})
        else:
            self._plain("sw1", {"up": ("plain_copy", "pb")}, copy={"up": "pa"})
            self._plain("sw2", {"pa": ("plain_redirect", "down"), "pb": ("plain_drop", None)})

    def _plain(self, role: str, ports: dict[str, tuple[str, str | None]],
               copy: dict[str, str] | None = None) -> None:
        """Loads bpf/redirect.o for `role`; `ports` maps each input port to (program, output
        port), `copy` an input port to the port that gets a copy first."""
        netns = self.ns[role]
        pin_dir = bpfsys.BPFFS / f"{self.prefix}-{role}"
        bpfsys.load_and_pin(REDIRECT_OBJECT, pin_dir)
        self._plain_pins.append(pin_dir)
        with bpfsys.Map(pin_dir / "maps" / "redirect_to", 4, 4) as redirect_to, \
                bpfsys.Map(pin_dir / "maps" / "copy_to", 4, 4) as copy_to:
            for port_in, (_, port_out) in ports.items():
                if port_out:
                    redirect_to.update(layout.key(ifindex(netns, port_in)), layout.key(ifindex(netns, port_out)))
            for port_in, port_copy in (copy or {}).items():
                copy_to.update(layout.key(ifindex(netns, port_in)), layout.key(ifindex(netns, port_copy)))
        for port_in, (program, _) in ports.items():
            self._plain_ports.append((netns, port_in))
            attach_ingress(netns, port_in, pin_dir / program)
            self.programs[role].append(pin_dir / program)

    def exec(self, role: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run in the namespace of `role` (tal, sw1, sw2, lis)."""
        return ["ip", "netns", "exec", self.ns[role], *argv]

    def stream(self, send_args: list[str], during: Callable[[], None] | None = None,
               timeout_s: float = 60.0) -> dict:
        """Sends a stream talker -> listener with `frerlab gen send SEND_ARGS` (rate, count or
        duration, frame size) while `frerlab gen recv` listens; `during` runs while it flows.
        Returns the receiver's report of the stream (lost, duplicates, latency, ...)."""
        with tempfile.TemporaryDirectory(prefix="frerlab-twopath-") as tmp:
            out = Path(tmp) / "recv.json"
            recv = subprocess.Popen(self.exec("lis", [*CLI, "gen", "recv", "--port", PORT, "--duration",
                                                      str(timeout_s), "--linger", "0.5", "--output", str(out)]),
                                    stdout=subprocess.DEVNULL)
            send = None
            try:
                wait_for_udp_port(self.exec("lis", []), int(PORT))
                send = subprocess.Popen(self.exec("tal", [*CLI, "gen", "send", "--dst", LISTENER_IP, "--port",
                                                          PORT, *send_args]),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if during:
                    during()
                # exit 3: the sender fell behind its pacing (a busy machine) but sent everything
                if send.wait(timeout=timeout_s) not in (0, 3):
                    raise RuntimeError(f"gen send failed: {send.stderr.read().strip()}")
                recv.wait(timeout=timeout_s)
            finally:
                for proc in (send, recv):
                    if proc:
                        proc.kill()
            streams = json.loads(out.read_text())["streams"]
        if len(streams) != 1:
            raise RuntimeError(f"the listener saw {len(streams)} streams (expected 1)")
        return streams[0]

    def listener_rx_frames(self) -> int:
        """Frames the listener's interface has received so far."""
        (link,) = json.loads(_ip("-n", self.ns["lis"], "-j", "-s", "link", "show", "dev", "l0"))
        return link["stats64"]["rx"]["packets"]

    def set_path(self, path: str, up: bool) -> None:
        """Cuts (`up=False`) or restores path `path` ('a' or 'b') at sw1."""
        _ip("-n", self.ns["sw1"], "link", "set", f"p{path}", "up" if up else "down")

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
        for name in self.ns.values():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
