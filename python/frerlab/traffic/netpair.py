"""Two network namespaces joined by a veth pair, for tests, fixture capture and benchmarks.

Names carry a per-run prefix (`frl-<pid>-<n>`) so parallel runs cannot collide; everything is
removed on exit from the `with` block, also after an error or Ctrl-C. Addresses come from the
RFC 2544 benchmarking range 198.18.0.0/15.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass

from frerlab.errors import UsageError

_counter = itertools.count()


def _ip(*args: str) -> str:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def namespaces_available() -> str | None:
    """None if namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs the ip command (Debian package iproute2)"
    return None


@dataclass
class NetPair:
    """Namespaces `a` and `b`, veth `a_if` (198.18.<subnet>.1/24) <-> `b_if` (.2/24), each end
    with `queues` TX and RX queues."""

    subnet: int = 0
    mtu: int = 1500
    queues: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.subnet <= 255:
            raise UsageError(f"subnet {self.subnet} is out of range (0..=255)")
        if not 1 <= self.queues <= 64:
            raise UsageError(f"queues {self.queues} is out of range (1..=64)")
        prefix = f"frl-{os.getpid()}-{next(_counter)}"
        self.a, self.b = f"{prefix}-a", f"{prefix}-b"
        self.a_if, self.b_if = f"{prefix}a"[-15:], f"{prefix}b"[-15:]
        self.a_ip, self.b_ip = f"198.18.{self.subnet}.1", f"198.18.{self.subnet}.2"

    def __enter__(self) -> NetPair:
        try:
            _ip("netns", "add", self.a)
            _ip("netns", "add", self.b)
            q = ("numtxqueues", str(self.queues), "numrxqueues", str(self.queues))
            _ip("link", "add", self.a_if, *q, "netns", self.a, "type", "veth", "peer", "name", self.b_if, *q,
                "netns", self.b)
            for ns, dev, addr in ((self.a, self.a_if, self.a_ip), (self.b, self.b_if, self.b_ip)):
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", ns, "link", "set", dev, "mtu", str(self.mtu), "up")
                _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Deletes both namespaces (and with them the veth pair); safe to call twice."""
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def mac(self, side: str) -> str:
        """MAC address of the veth end in namespace `side` ('a' or 'b')."""
        ns, dev = (self.a, self.a_if) if side == "a" else (self.b, self.b_if)
        return _ip("-n", ns, "-br", "link", "show", dev).split()[2]

    def cmd(self, side: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run in namespace `side` ('a' or 'b')."""
        return ["ip", "netns", "exec", self.a if side == "a" else self.b, *argv]

    def rx_packets(self, side: str) -> int:
        """Packets received so far by the veth end in namespace `side`."""
        ns, dev = (self.a, self.a_if) if side == "a" else (self.b, self.b_if)
        out = subprocess.run(
            self.cmd(side, ["cat", f"/sys/class/net/{dev}/statistics/rx_packets"]),
            capture_output=True, text=True, check=True,
        )
        return int(out.stdout)
