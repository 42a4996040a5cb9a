"""The interfaces a data plane attaches to, made fit for it: `frerlab dataplane up` runs
`survey` (what must change; refuses what cannot) and `apply`, `down` runs `restore`.

- Offloads. The tc programs run before the kernel segments a GSO packet (many frames in one
  skb) and after GRO/LRO merged received frames into one: the data plane would number or
  eliminate such a packet as one frame, so it refuses them (per-port counter `gso_refused`).
  `up` turns off the features that build them on every port it attaches to, as far as ethtool
  lets it: receive merging (GRO, LRO, hardware GRO, GRO lists, UDP GRO forwarding) and
  deferred segmentation (GSO, TSO and the other `*-segmentation` features, GSO lists), so every
  frame the programs see and every frame leaving a port is one wire frame. On a port where
  the host's own frames are identified (tc egress: a talker end-station), a TCP socket builds
  GSO packets whatever the device's features (Linux 6.x); only the device's `gso_max_segs 1`
  makes it send one segment per skb, so `up` sets that there. An upstream host's TSO is beyond
  a node's control: the host sending into a FRER node must turn it off itself.
- MTU. A port carrying R-tagged frames needs room for the 6-byte tag on a full-size packet:
  the MTU of the node's ports without R-tagged frames (or 1500 if all have them) plus 6. Ports
  with R-tagged frames are the output ports of streams that leave with an R-TAG and the input
  ports of streams numbered elsewhere. `up` raises a smaller MTU, or refuses naming the port,
  its MTU and the MTU needed, if the device cannot take it. The host's own packets on a
  talker end-station's port are sized by its routes: `up` warns about routes without an MTU
  that leaves room for the tag.

What `up` changed is recorded in the data plane's state file before it is changed; `restore`
puts back each value that is still as `up` left it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field

from frerlab.dataplane import layout
from frerlab.dataplane.compiler import NodePlan
from frerlab.dataplane.config import LOCAL
from frerlab.errors import ToolFailed, UsageError
from frerlab.netns import ip, link_info

#: Length of an R-TAG (802.1CB 7.8), in bytes.
RTAG_LEN = 6
#: The IP MTU taken when every port of a node carries R-tagged frames (Ethernet's payload).
IP_MTU = 1500
#: ethtool features that merge received frames into one skb.
MERGING = ("generic-receive-offload", "large-receive-offload", "rx-gro-hw", "rx-gro-list",
           "rx-udp-gro-forwarding")
#: ethtool features that hand the device (or the kernel after tc) unsegmented packets, besides
#: every `*-segmentation` feature.
DEFERRING = ("generic-segmentation-offload", "tx-gso-list")


def _in(netns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", netns, *argv] if netns else argv


def _run(argv: list[str]) -> str:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise ToolFailed(result.stderr.strip() or f"{' '.join(argv)} exited {result.returncode}")
    return result.stdout


def features(netns: str | None, port: str) -> dict[str, dict]:
    """`ethtool -k` of `port`: feature name -> {active, fixed}. (The text form: older ethtools
    have no --json for -k.)"""
    out = {}
    for line in _run(_in(netns, ["ethtool", "-k", port])).splitlines()[1:]:
        name, _, value = line.strip().partition(": ")
        if value:
            out[name] = {"active": value.startswith("on"), "fixed": "[fixed]" in value}
    return out


def offending(feats: dict[str, dict]) -> list[str]:
    """The features of MERGING and DEFERRING (and every `*-segmentation`) that are on and can
    be turned off."""
    return [name for name, f in feats.items()
            if (name in MERGING or name in DEFERRING or name.endswith("-segmentation"))
            and f.get("active") and f.get("fixed") is False]


def tagged_ports(plan: NodePlan) -> list[str]:
    """The ports R-tagged frames leave by (outputs of encoded streams) or arrive on (inputs of
    streams numbered elsewhere), in port order."""
    tagged = set()
    for stream, (flags, outputs) in enumerate(plan.streams):
        if flags & layout.STREAM_ENCODE:
            tagged.update(o.port for o in outputs if o.port != LOCAL)
        if not flags & layout.STREAM_GENERATE:
            for ident in plan.identities:
                if ident.stream == stream and ident.direction == layout.DIR_INGRESS:
                    tagged.update(p for i, p in enumerate(plan.ports) if ident.port_mask >> i & 1)
    return [p for p in plan.ports if p in tagged]


@dataclass
class Survey:
    """What `up` will change on the interfaces (the record the state file keeps) and what it
    cannot change but the user should know."""

    offloads: dict[str, list[str]] = field(default_factory=dict)      # port -> features to turn off
    mtu: dict[str, list[int]] = field(default_factory=dict)           # port -> [before, after]
    gso_max_segs: dict[str, list[int]] = field(default_factory=dict)  # port -> [before, after]
    why_mtu: str = ""
    warnings: list[str] = field(default_factory=list)

    def record(self) -> dict:
        return {"offloads": self.offloads, "mtu": self.mtu, "gso_max_segs": self.gso_max_segs}


def survey(netns: str | None, plan: NodePlan, attached: list[str]) -> Survey:
    """What `attached` (the ports that get a program) and the ports with R-tagged frames need;
    UsageError naming a port whose device cannot take the MTU it needs. Changes nothing."""
    out = Survey()
    links = {p: link_info(netns, p) for p in plan.ports}
    for port in attached:
        if off := offending(features(netns, port)):
            out.offloads[port] = off
    for port in plan.egress_ports:
        if links[port].get("gso_max_segs", 1) > 1:
            out.gso_max_segs[port] = [links[port]["gso_max_segs"], 1]
    tagged = tagged_ports(plan)
    untagged = [p for p in plan.ports if p not in tagged]
    base = max((links[p]["mtu"] for p in untagged), default=IP_MTU)
    needed = base + RTAG_LEN
    out.why_mtu = (f"the MTU of {', '.join(untagged)} ({base})" if untagged else f"{base}-byte packets"
                   ) + f" plus the {RTAG_LEN}-byte R-TAG"
    for port in tagged:
        mtu, max_mtu = links[port]["mtu"], links[port].get("max_mtu")
        if mtu >= needed:
            continue
        if max_mtu is not None and max_mtu < needed:
            raise UsageError(f"port {port}: MTU {mtu} is too small for its R-tagged frames, which need "
                             f"{needed} ({out.why_mtu}), and {port} takes at most {max_mtu}; use a port "
                             f"that takes {needed}" + (f", or lower the MTU of {', '.join(untagged)} to "
                                                       f"{max_mtu - RTAG_LEN}" if untagged else ""))
        out.mtu[port] = [mtu, needed]
    for port in plan.egress_ports:
        if port in tagged:
            out.warnings += _route_warnings(netns, port, out.mtu.get(port, [0, links[port]["mtu"]])[1])
    return out


def _route_warnings(netns: str | None, port: str, mtu: int) -> list[str]:
    """Routes out of `port` that let the host send packets too large to take an R-TAG."""
    room = mtu - RTAG_LEN
    routes = json.loads(ip("-j", "route", "show", "dev", port, netns=netns) or "[]")
    warnings = []
    for r in routes:
        route_mtu = next((m["mtu"] for m in r.get("metrics", []) if "mtu" in m), None)
        if route_mtu is None or route_mtu > room:
            sent = route_mtu or mtu
            warnings.append(f"{port}: route {r['dst']} lets this host send {sent}-byte packets, which do "
                            f"not fit the MTU {mtu} with an R-TAG; give it `mtu {room}` (ip route change "
                            f"{r['dst']} dev {port} ... mtu {room})")
    return warnings


def apply(netns: str | None, survey: Survey) -> list[str]:
    """Makes the changes of `survey`; returns one line per port saying what changed (and what
    ethtool would not change). UsageError naming the port if an MTU cannot be set."""
    lines = []
    for port, (before, after) in survey.mtu.items():
        try:
            ip("link", "set", "dev", port, "mtu", str(after), netns=netns)
        except ToolFailed as err:
            raise UsageError(f"port {port}: MTU {before} is too small for its R-tagged frames, which "
                             f"need {after} ({survey.why_mtu}), and setting it failed: {err}") from None
        lines.append(f"{port}: MTU {before} -> {after} for R-tagged frames: {survey.why_mtu}")
    for port, (before, after) in survey.gso_max_segs.items():
        ip("link", "set", "dev", port, "gso_max_segs", str(after), netns=netns)
        lines.append(f"{port}: gso_max_segs {before} -> {after} (the host's TCP sends one segment per packet)")
    for port, names in survey.offloads.items():
        subprocess.run(_in(netns, ["ethtool", "-K", port, *[w for n in names for w in (n, "off")]]),
                       capture_output=True)
        still = set(offending(features(netns, port)))
        done = [n for n in names if n not in still]
        if done:
            lines.append(f"{port}: offloads off: {_short(done)}")
        if still & set(names):
            lines.append(f"{port}: WARNING: ethtool left on {_short([n for n in names if n in still])}; "
                         "packets it merges or leaves unsegmented are refused (gso_refused)")
    return lines + [f"WARNING: {w}" for w in survey.warnings]


def _short(names: list[str]) -> str:
    """Feature names with the tx-*-segmentation ones folded: tx-{tcp,udp}-segmentation."""
    seg = [n.removeprefix("tx-").removesuffix("-segmentation") for n in names
           if n.startswith("tx-") and n.endswith("-segmentation")]
    rest = [n for n in names if not (n.startswith("tx-") and n.endswith("-segmentation"))]
    return ", ".join(rest + ([f"tx-{{{','.join(seg)}}}-segmentation"] if seg else []))


def restore(netns: str | None, record: dict) -> None:
    """Puts back what `apply` changed (a `Survey.record()`), where it is still as `apply` left
    it; quiet about interfaces that are gone."""
    for port, names in record.get("offloads", {}).items():
        subprocess.run(_in(netns, ["ethtool", "-K", port, *[w for n in names for w in (n, "on")]]),
                       capture_output=True)
    for key, attribute in (("gso_max_segs", "gso_max_segs"), ("mtu", "mtu")):
        for port, (before, after) in record.get(key, {}).items():
            try:
                if link_info(netns, port).get(attribute) == after:
                    ip("link", "set", "dev", port, attribute, str(before), netns=netns)
            except (ToolFailed, ValueError):
                continue
