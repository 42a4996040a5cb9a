"""Network namespaces and veth links for frerlab's emulated topologies, named with a per-run
prefix so parallel runs cannot collide, and removed as a whole by `close()` (also after a
failure half-way). Hosts get IPv6 off and loopback up; links are veth pairs. The one place
frerlab (and its tests and benchmarks) makes or deletes a namespace or a veth pair: the
testbed's topology is built on it in frerlab.testbed.bed.

    with Namespaces("frt1234") as net:
        net.add("tal", "lis")
        net.link("tal", "t0", "lis", "l0")
        net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0")
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

from frerlab.errors import ToolFailed


def ip(*args: str, netns: str | None = None) -> str:
    """Runs `ip ARGS` (in network namespace `netns`: `ip -n NETNS ARGS`); its output.
    ToolFailed with ip's message on failure."""
    argv = [*(["-n", netns] if netns else []), *args]
    result = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if result.returncode != 0:
        raise ToolFailed(f"ip {' '.join(argv)} failed: {result.stderr.strip()}")
    return result.stdout


def exists(netns: str) -> bool:
    """Whether network namespace `netns` exists (as `ip netns add` makes them)."""
    return Path("/run/netns", netns).exists()


def veth(a_netns: str | None, a_if: str, b_netns: str | None, b_if: str, mtu: int = 1500,
         queues: int | None = None, up: bool = True) -> None:
    """A veth pair with `mtu` and `queues` transmit and receive queues (None: the kernel's
    default), both ends up unless `up` is False: `a_if` in network namespace `a_netns`, `b_if` in
    `b_netns` (None: the caller's). ToolFailed with ip's message on failure (a name taken where
    its end would live)."""
    if b_netns is None and a_netns is not None:  # made from here, the peer sent to a_netns
        a_netns, a_if, b_netns, b_if = b_netns, b_if, a_netns, a_if
    # `ip -n A link add` looks the first name up in A, where it will live, not in the caller's
    # namespace; the peer's is looked up in its own
    end = ("mtu", str(mtu), *(("numtxqueues", str(queues), "numrxqueues", str(queues)) if queues else ()))
    # names given with `name` and `dev`: a port may be called `up` or `down`
    ip("link", "add", "name", a_if, *end, "type", "veth", "peer", "name", b_if, *end,
       *(["netns", b_netns] if b_netns else []), netns=a_netns)
    if up:
        ip("link", "set", "dev", a_if, "up", netns=a_netns)
        ip("link", "set", "dev", b_if, "up", netns=b_netns)


def delete(netns: str) -> None:
    """Deletes network namespace `netns` (and with it the veths with an end in it), if it exists."""
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def links(netns: str | None, ifname: str | None = None) -> list[dict]:
    """`ip -j -s -d link show` of every interface of `netns` (None: the current namespace), or
    of `ifname`: flags, address, mtu, max_mtu, gso_max_segs, `stats64` rx/tx counters, ..."""
    return json.loads(ip("-j", "-s", "-d", "link", "show", *(["dev", ifname] if ifname else []), netns=netns))


def link_info(netns: str | None, ifname: str) -> dict:
    """`links` of one interface."""
    (info,) = links(netns, ifname)
    return info


class Namespaces:
    """A set of namespaces `<prefix>-<role>` and the links between them."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.ns: dict[str, str] = {}

    def __enter__(self) -> Namespaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, *roles: str) -> None:
        """Creates one namespace per role: IPv6 off, loopback up."""
        for role in roles:
            name = f"{self.prefix}-{role}"
            ip("netns", "add", name)
            self.ns[role] = name
            ip("netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            ip("-n", name, "link", "set", "lo", "up")

    def link(self, a: str, a_if: str, b: str, b_if: str, mtu: int = 1500, queues: int | None = None) -> None:
        """A veth pair (`veth`): `a_if` in role a's namespace, `b_if` in role b's (which may be
        the same), both up."""
        veth(self.ns[a], a_if, self.ns[b], b_if, mtu, queues)

    def mac(self, role: str, ifname: str) -> str:
        """The MAC address of `ifname` in role's namespace."""
        return link_info(self.ns[role], ifname)["address"]

    def run(self, role: str, *argv: str) -> str:
        """Runs a command inside role's namespace; its stdout."""
        return subprocess.run(self.exec(role, list(argv)), check=True, capture_output=True, text=True).stdout

    def exec(self, role: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run in role's namespace."""
        return ["ip", "netns", "exec", self.ns[role], *argv]

    def close(self) -> None:
        """Deletes every namespace (and with it its veths); safe to call twice."""
        for name in self.ns.values():
            delete(name)
        self.ns.clear()


_CLONE_NEWNET = 0x40000000


@contextmanager
def entered(netns: str | None):
    """The calling thread inside network namespace `netns` (None: where it is), back in its own
    afterwards: for what the kernel resolves in the caller's namespace, such as the ifindex
    of a device map entry or of an XDP test run."""
    if netns is None:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(Path("/run/netns", netns), os.O_RDONLY)
        try:
            if libc.setns(target, _CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), f"entering network namespace {netns}")
        finally:
            os.close(target)
        try:
            yield
        finally:
            libc.setns(own, _CLONE_NEWNET)
    finally:
        os.close(own)
