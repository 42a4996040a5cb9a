"""Where a campaign's tools run: the talker and listener of a namespace testbed, of a topology's
network in namespaces, or real hosts over SSH. Both give the same things to the methods (frerlab.bench.steps): a command prefix per
role, the listener's address on the network under test, the command that runs frerlab there,
the line rate loads are percent of, and the drop counters of the talker's egress (to tell loss
at the sending host from the DUT's). A testbed or network in frer mode also gives FRER's own
evidence: the IEEE 802.1CB clause-10 counters of its data planes' recovery functions
(`frer_counters`).

On hosts, a command runs through `python -m frerlab.remote.exec HOSTS ROLE -- CMD` (an SSH
session of its own that stops the remote process when it is stopped), so every tool driver
that takes a command prefix runs remotely unchanged, and results come back on stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from frerlab.dataplane import control
from frerlab.dataplane.config import parse_config
from frerlab.frer import COUNTER_NAMES
from frerlab.net import namespaces
from frerlab.testbed import bed, plan
from frerlab.traffic.across import CLI
from frerlab.units import L1_OVERHEAD_BYTES

@dataclass(frozen=True)
class Target:
    """What every target has: its mode (frer or control), its line rate and the listener's address."""

    mode: str
    rate_bps: int
    listener_ip: str
    frerlab: tuple[str, ...] = tuple(CLI)
    #: Whether talker and listener clocks allow one-way latency, and why (frerlab.remote.preflight).
    one_way_clock: tuple[bool, str] = (True, "one clock: talker and listener share the host")
    #: The generator's and receiver's `--mode` in measured trials: udp, raw or xdp.
    generator: str = "udp"

    def generator_args(self) -> tuple[list[str], list[str]]:
        """The `gen send` and `gen recv` options of the measured stream's mode: none for udp, the
        only mode of a target that does not know its hosts' interfaces."""
        return [], []

    def line_rate_fps(self, frame_size: int) -> float:
        """Frames/s of the line rate at `frame_size`, preamble and gap included."""
        return self.rate_bps / ((frame_size + L1_OVERHEAD_BYTES) * 8)

    def fps(self, frame_size: int, load_percent: float) -> float:
        """Frames/s of `load_percent` of the line rate."""
        return self.line_rate_fps(frame_size) * load_percent / 100

    def prefix(self, role: str) -> list[str]:
        """The command prefix that runs a command on `role` (talker or listener)."""
        raise NotImplementedError

    def drops(self) -> dict[str, int]:
        """Frames each egress the target can see has dropped so far, `host:interface` -> count."""
        raise NotImplementedError

    @property
    def talker_egress(self) -> str:
        """The key of the talker's own egress in `drops()`."""
        raise NotImplementedError

    def frer_counters(self) -> dict | None:
        """What FRER itself has counted so far: per node that runs a data plane (role), per
        stream handle, per recovery function (`recovery_functions`), its configuration and its
        clause-10 counters; None where no FRER data plane of frerlab's runs."""
        return None


@dataclass(frozen=True)
class TestbedTarget(Target):
    """A frerlab testbed that is up (frerlab.testbed.bed)."""

    testbed: str = ""
    listener_ip: str = plan.LISTENER_IP

    def prefix(self, role: str) -> list[str]:
        return bed.prefix(self.testbed, role)

    def generator_args(self) -> tuple[list[str], list[str]]:
        """raw and xdp: the hosts' testbed port, and the listener's MAC as the destination."""
        if self.generator == "udp":
            return [], []
        mode = ["--mode", self.generator, "--interface", plan.HOST_PORT]
        return [*mode, "--dst-mac", plan.LISTENER_MAC], mode

    def drops(self) -> dict[str, int]:
        """Every shaped egress of the testbed."""
        state = bed.read_state(self.testbed)
        return {f"{role}:{ifname}": bed.qdisc_drops(state["namespaces"][role], ifname)
                for link in bed.LINKS for role, ifname in (link.a, link.b)}

    @property
    def talker_egress(self) -> str:
        return f"talker:{plan.HOST_PORT}"

    def frer_counters(self) -> dict | None:
        """The recovery functions of every data plane of the testbed (only their counters and
        configurations are read: about 5 ms); None in control mode, whose switches only bridge."""
        if self.mode != "frer":
            return None
        dataplanes = bed.read_state(self.testbed)["dataplanes"]
        return {role: recovery_functions(bed.status_dataplane(self.testbed, role),
                                         control.read_state(name)["config"])
                for role, name in dataplanes.items()}


@dataclass(frozen=True)
class NetworkTarget(Target):
    """A topology's network that is up (frerlab.net.namespaces), its talker and listener the
    nodes of the campaign's stream."""

    network: str = ""
    talker: str = ""
    listener: str = ""
    #: The talker's link its stream leaves by (its egress in `drops()`).
    talker_link: str = ""

    def prefix(self, role: str) -> list[str]:
        node = {"talker": self.talker, "listener": self.listener}[role]
        return ["ip", "netns", "exec", namespaces.read_state(self.network)["namespaces"][node]]

    def drops(self) -> dict[str, int]:
        """Every shaped egress of the network: each node's end of each link."""
        state = namespaces.read_state(self.network)
        return {f"{node}:{link.name}": bed.qdisc_drops(state["namespaces"][node], link.name)
                for link in namespaces.topology(state).links for node in (link.a, link.b)}

    @property
    def talker_egress(self) -> str:
        return f"{self.talker}:{self.talker_link}"

    def frer_counters(self) -> dict | None:
        """The recovery functions of every data plane of the network; None in control mode."""
        if self.mode != "frer":
            return None
        dataplanes = namespaces.read_state(self.network)["dataplanes"]
        return {node: recovery_functions(control.snapshot(name), control.read_state(name)["config"])
                for node, name in dataplanes.items()}


@dataclass(frozen=True)
class HostsTarget(Target):
    """Real hosts over SSH, as named in a hosts file (frerlab.remote.hosts)."""

    hosts_file: Path = Path()
    talker_interface: str = ""

    def prefix(self, role: str) -> list[str]:
        return [sys.executable, "-m", "frerlab.remote.exec", str(self.hosts_file), role, "--"]

    def drops(self) -> dict[str, int]:
        """The talker's interface: what its root queueing discipline dropped."""
        done = subprocess.run([*self.prefix("talker"), "tc", "-s", "-j", "qdisc", "show", "dev",
                               self.talker_interface], capture_output=True, text=True, timeout=60)
        qdiscs = json.loads(done.stdout or "[]") if done.returncode == 0 else []
        return {self.talker_egress: sum(q.get("drops", 0) for q in qdiscs if q.get("root"))}

    @property
    def talker_egress(self) -> str:
        return f"talker:{self.talker_interface}"

    def frer_counters(self) -> dict | None:
        """None: the hosts' network is the system under test, with no data plane of frerlab's
        to read."""
        return None


def recovery_functions(snapshot: dict, config: dict) -> dict[str, dict[str, dict]]:
    """Stream handle -> function -> {"config": ..., "counters": ...} of a data plane's
    recovery functions, from its counters (control.snapshot) and its recorded configuration
    (the reset timeout is only there). A function is named as the snapshot names it,
    `sequence` or `individual`, followed by its ports when it is placed on some (`sequence
    p1`); handles without one are left out. `config` holds algorithm, history_length (the
    vector algorithm's window), reset_timeout_ms (None: never) and take_no_sequence;
    `counters` the running counts of frerlab.frer.COUNTER_NAMES."""
    configs = {(r.handle, r.function, r.port_label): r.config for r in parse_config(config).plan.recoveries}
    out: dict[str, dict[str, dict]] = {}
    for stream in snapshot["streams"]:
        for r in stream["recovery"]:
            c = configs[(stream["handle"], r["function"], r["port"])]
            name = r["function"] if r["port"] is None else f"{r['function']} {r['port']}"
            out.setdefault(str(stream["handle"]), {})[name] = {
                "config": {"algorithm": c.algorithm, "history_length": c.history_length,
                           "reset_timeout_ms": None if c.reset_timeout_ns is None else c.reset_timeout_ns // 1_000_000,
                           "take_no_sequence": c.take_no_sequence},
                "counters": {k: r[k] for k in COUNTER_NAMES}}
    return out
