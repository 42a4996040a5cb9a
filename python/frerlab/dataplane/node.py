"""One FRER node of the eBPF data plane: bpf/frer.o loaded and pinned under
/run/frerlab/bpf/<name>, configured through its maps, and attached with tc (clsact ingress,
direct action) to the node's ports inside its network namespace.

    with Node("sw1", netns="ns-sw1", ports=["to-talker", "path-a", "path-b"]) as sw1:
        sw1.add_stream(0, ingress=["to-talker"], generate=True, encode=True,
                       outputs=["path-a", "path-b"])
        sw1.attach()

Everything the node creates (pins, clsact qdiscs) is removed by `close()`, also after a
failure half-way; `remove_leftovers(name)` clears what a killed run left.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from frerlab.dataplane import bpfsys, layout

OBJECT = Path(__file__).resolve().parents[3] / "bpf" / "build" / "frer.o"
PIN_ROOT = bpfsys.BPFFS
MAP_SIZES = {  # map name: (key size, value size), as in bpf/frer_common.h
    "settings": (4, layout.SETTINGS.size),
    "port_of_ifindex": (4, 4),
    "ifindex_of_port": (4, 4),
    "identities": (4, layout.IDENTITY.size),
    "streams": (4, layout.STREAM_SIZE),
    "rcvy": (4, layout.RCVY.size),
}


def open_maps(pin_dir: Path) -> dict[str, bpfsys.Map]:
    """The maps of MAP_SIZES of a frer.o pinned at `pin_dir`, opened."""
    return {name: bpfsys.Map(pin_dir / "maps" / name, key_size, value_size)
            for name, (key_size, value_size) in MAP_SIZES.items()}


def _run(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise bpfsys.BpfError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result.stdout


def tc_in(netns: str | None, *args: str) -> list[str]:
    """A tc command run in `netns` (None: the current namespace) with tc's -n option."""
    return ["tc", *(["-n", netns] if netns else []), *args]


def attach_ingress(netns: str | None, port: str, prog: Path) -> None:
    """Attaches pinned program `prog` to `port`'s clsact ingress, in direct-action mode."""
    _run(tc_in(netns, "qdisc", "add", "dev", port, "clsact"))
    try:
        _run(tc_in(netns, "filter", "add", "dev", port, "ingress", "bpf", "da", "pinned", str(prog)))
    except bpfsys.BpfError:
        detach(netns, port)
        raise


def detach(netns: str | None, port: str) -> None:
    """Removes `port`'s clsact qdisc and every filter on it; quiet if it is gone already."""
    subprocess.run(tc_in(netns, "qdisc", "del", "dev", port, "clsact"), capture_output=True)


def ifindex(netns: str | None, port: str) -> int:
    """The interface index of `port` in `netns`."""
    (link,) = json.loads(_run(["ip", *(["-n", netns] if netns else []), "-j", "link", "show", "dev", port]))
    return link["ifindex"]


def remove_leftovers(name: str) -> None:
    """Unpins what a node called `name` left behind (its qdiscs go with its namespace)."""
    bpfsys.unpin(PIN_ROOT / name)


class Node:
    """A FRER node on the ports `ports` of namespace `netns` (None: the current one)."""

    def __init__(self, name: str, netns: str | None, ports: list[str]) -> None:
        if not 0 < len(ports) <= layout.MAX_PORTS:
            raise ValueError(f"{len(ports)} ports is out of range (1..={layout.MAX_PORTS})")
        self.name, self.netns, self.ports = name, netns, list(ports)
        self.pin_dir = PIN_ROOT / name
        self.maps: dict[str, bpfsys.Map] = {}
        self.attached: list[str] = []
        self.n_identities = 0

    def ifindex(self, port: str) -> int:
        """The interface index of `port` in the node's namespace."""
        if port not in self.ports:
            raise ValueError(f"port {port!r} is not one of this node's ports ({', '.join(self.ports)})")
        return ifindex(self.netns, port)

    def __enter__(self) -> Node:
        if self.pin_dir.exists():
            raise bpfsys.BpfError(f"data plane {self.name!r} is already loaded ({self.pin_dir}); "
                                  "remove it first (remove_leftovers) or pick another name")
        try:
            bpfsys.load_and_pin(OBJECT, self.pin_dir)
            self.maps = open_maps(self.pin_dir)
            for index, port in enumerate(self.ports):
                ifindex = self.ifindex(port)
                self.maps["port_of_ifindex"].update(layout.key(ifindex), layout.key(index))
                self.maps["ifindex_of_port"].update(layout.key(index), layout.key(ifindex))
            self.maps["settings"].update(layout.key(0), layout.settings(0))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_stream(self, stream: int, ingress: list[str], outputs: list[str],
                   generate: bool = False, encode: bool = False,
                   recovery: layout.RecoveryConfig | None = None) -> None:
        """Stream `stream` is every frame received on the `ingress` ports; it is numbered
        (`generate`), passed through sequence recovery (`recovery`), sent with an R-TAG
        (`encode`, else any R-TAG is removed) and copied to each of `outputs`."""
        mask = 0
        for port in ingress:
            self.ifindex(port)
            mask |= 1 << self.ports.index(port)
        outs = [layout.output(self.ifindex(p), 0, self.ports.index(p)) for p in outputs]
        flags = ((layout.STREAM_GENERATE if generate else 0) | (layout.STREAM_ENCODE if encode else 0)
                 | (layout.STREAM_RECOVER if recovery else 0))
        self.maps["streams"].update(layout.key(stream), layout.stream(flags, outs))
        if recovery:
            self.maps["rcvy"].update(layout.key(stream * layout.RCVY_PER_STREAM), recovery.pack())
        self.maps["identities"].update(layout.key(self.n_identities), layout.match_all_identity(stream, mask))
        self.n_identities += 1
        self.maps["settings"].update(layout.key(0), layout.settings(self.n_identities))

    def attach(self) -> None:
        """Attaches frer_ingress to every port (clsact ingress, direct action)."""
        prog = self.pin_dir / "frer_ingress"
        for port in self.ports:
            attach_ingress(self.netns, port, prog)
            self.attached.append(port)

    def recovery_counters(self, stream: int) -> dict[str, int]:
        """The clause-10 counters of the stream's sequence recovery function."""
        return layout.rcvy_counters(self.maps["rcvy"].lookup(layout.key(stream * layout.RCVY_PER_STREAM)))

    def close(self) -> None:
        """Detaches and unpins everything; safe to call twice and after a failure."""
        for port in self.attached:
            detach(self.netns, port)
        self.attached.clear()
        for m in self.maps.values():
            m.close()
        self.maps.clear()
        remove_leftovers(self.name)
