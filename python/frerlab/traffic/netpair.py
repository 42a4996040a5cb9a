"""Two network namespaces joined by a veth pair (made by frerlab.netns), for tests, fixture
capture and benchmarks.

Names carry a per-run prefix (`frl-<pid>-<n>`) so parallel runs cannot collide; everything is
removed on exit from the `with` block, also after an error or Ctrl-C. Both namespaces have
IPv6 off and loopback up; addresses come from the RFC 2544 benchmarking range 198.18.0.0/15.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass

from frerlab.errors import UsageError
from frerlab.netns import Namespaces, link_info

_counter = itertools.count()


def namespaces_available() -> str | None:
    """None if namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs the ip command (Debian package iproute2)"
    return None


@dataclass
class NetPair:
    """Namespaces `a` and `b` (frerlab.netns.Namespaces), veth `a_if` (198.18.<subnet>.1/24) <->
    `b_if` (.2/24), each end with `queues` TX and RX queues."""

    subnet: int = 0
    mtu: int = 1500
    queues: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.subnet <= 255:
            raise UsageError(f"subnet {self.subnet} is out of range (0..=255)")
        if not 1 <= self.queues <= 64:
            raise UsageError(f"queues {self.queues} is out of range (1..=64)")
        prefix = f"frl-{os.getpid()}-{next(_counter)}"
        self._net = Namespaces(prefix)
        self.a, self.b = f"{prefix}-a", f"{prefix}-b"
        self.a_if, self.b_if = f"{prefix}a"[-15:], f"{prefix}b"[-15:]
        self.a_ip, self.b_ip = f"198.18.{self.subnet}.1", f"198.18.{self.subnet}.2"

    def __enter__(self) -> NetPair:
        try:
            self._net.add("a", "b")
            self._net.link("a", self.a_if, "b", self.b_if, mtu=self.mtu, queues=self.queues)
            for side in ("a", "b"):
                self._net.run(side, "ip", "addr", "add", f"{self._ip(side)}/24", "dev", self._dev(side))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Deletes both namespaces (and with them the veth pair); safe to call twice."""
        self._net.close()

    def _dev(self, side: str) -> str:
        return self.a_if if side == "a" else self.b_if

    def _ip(self, side: str) -> str:
        return self.a_ip if side == "a" else self.b_ip

    def mac(self, side: str) -> str:
        """MAC address of the veth end in namespace `side` ('a' or 'b')."""
        return self._net.mac(side, self._dev(side))

    def cmd(self, side: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run in namespace `side` ('a' or 'b')."""
        return self._net.exec(side, argv)

    def rx_packets(self, side: str) -> int:
        """Packets received so far by the veth end in namespace `side`."""
        return link_info(self._net.ns[side], self._dev(side))["stats64"]["rx"]["packets"]
