"""PAUSE that loses nothing inside the fabric: the headroom a receiver needs above its XOFF
threshold, thresholds derived from the receiver's egress queues and shared buffer (`pause:
{lossless: true}`), and the check that names every PAUSE configuration that cannot be lossless.

It works on the compiled spec (frerlab.sim.compile), where every stream's route is a tree of
egress ports, so it knows which link directions feed which queue. A receiver N counts, per
ingress link direction i, the buffer bytes of the frames from i still queued at N (the
simulator's model, crates/sim/src/pause.rs). That count stays at or below xoff_i + H_i, where
the headroom H_i is what can still arrive after the count crosses xoff_i: the frame that
crossed it, then for the time the PAUSE takes to act (the frame already on the reverse wire, the
64-byte PAUSE itself, the propagation delay) and the time the data already sent takes to arrive
(the propagation delay and N's processing delay) at i's rate (its fastest, where it changes), plus the frame the sender has on the
wire when the PAUSE reaches it. The simulator renews a pause halfway through its time, so the
bound holds while the receiver stays congested. An egress queue (port, class) of limit L is then
lossless when the ingresses that feed it have sum(xoff_i + H_i) <= L, and N's shared buffer S
when all of N's ingresses have sum(xoff_i + H_i) <= S; frames that enter N without PAUSE (from
a link direction without it, or from N's own talkers) are bounded by nothing. 802.1Qbb switch
guides derive their headroom the same way (cable delay both ways, a maximum frame each side, the
PAUSE frame, the response time); the thresholds against the queue a frame is held in are
frerlab's, as 802.3 leaves them to implementations.

`lossless: true` shares each queue's limit (and the shared buffer) equally among the pausing
ingresses that feed it: xoff_i = min over those of (limit / feeders - H_i), xon_i = xoff_i / 2.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from frerlab.sim.schema import Pause
from frerlab.units import MAX_FRAME_BYTES, MIN_FRAME_BYTES

#: A MAC Control (PAUSE) frame: the minimum Ethernet frame (IEEE 802.3 Annex 31B).
PAUSE_FRAME_BYTES = MIN_FRAME_BYTES
#: Bits per pause quantum (IEEE 802.3 Annex 31B).
BITS_PER_QUANTUM = 512
PS_PER_S = 10**12


def _largest_frame(stream: dict[str, Any]) -> int:
    """The largest frame of a compiled stream, its R-TAG included when it has one."""
    size = stream["frame_size"]
    largest = {"fixed": size.get("bytes"), "uniform": size.get("max")}.get(size["dist"], MAX_FRAME_BYTES)
    return largest + (stream.get("rtag_bytes", 0) if stream.get("generation") is not None else 0)


def _wire_ps(port: dict[str, Any], frame_bytes: int) -> float:
    """Picoseconds a frame of `frame_bytes` holds `port`'s wire (its per-frame overhead included);
    0 for no frame."""
    return (frame_bytes + port["overhead"]) * 8 * PS_PER_S / port["rate"] if frame_bytes else 0.0


def _buffer(node: dict[str, Any], frame_bytes: int) -> int:
    """Buffer bytes a frame takes at `node` (whole cells)."""
    cell = node["cell"]
    return -(-frame_bytes // cell) * cell


class _Fabric:
    """Who feeds what in a compiled spec: per egress queue (port, class), the ingress link
    directions (port indices; -1 for the node's own talkers) its frames arrive over; per port, its
    largest and smallest frame."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.feeders: dict[tuple[int, int], set[int]] = defaultdict(set)
        self.largest: dict[int, int] = defaultdict(int)
        self.smallest: dict[int, int] = {}
        for stream in spec["streams"]:
            hops, largest = stream["hops"], _largest_frame(stream)
            smallest = PAUSE_FRAME_BYTES if stream.get("fecn") is not None else min(
                largest, stream["frame_size"].get("min", largest))
            parent = {child: h for h, hop in enumerate(hops) for child in hop["next"]}
            for h, hop in enumerate(hops):
                port = hop["port"]
                ingress = hops[parent[h]]["port"] if h in parent else -1
                self.feeders[(port, stream["class"])].add(ingress)
                self.largest[port] = max(self.largest[port], largest)
                self.smallest[port] = min(self.smallest.get(port, largest), smallest)

    def headroom(self, ingress: int) -> int:
        """H: the buffer bytes that may still arrive over the PAUSE link direction `ingress`
        after its receiver's count crosses xoff (module docs)."""
        ports, nodes = self.spec["ports"], self.spec["nodes"]
        port = ports[ingress]
        reverse = ports[port["pause"]["reverse"]]
        receiver = nodes[port["to"]]
        largest = self.largest.get(ingress, 0)
        if largest == 0:
            return 0
        window_ps = (_wire_ps(reverse, self.largest.get(port["pause"]["reverse"], 0))
                     + _wire_ps(reverse, PAUSE_FRAME_BYTES) + 2 * port["delay"] + receiver["processing_delay"])
        fastest = max([port["rate"], *(rate for _, rate in port["rate_changes"])])
        wire_bytes = window_ps * fastest / (8 * PS_PER_S)
        # The frame size that takes the most buffer per byte of wire sets the worst case.
        smallest = self.smallest[ingress]
        per_wire_byte = max(_buffer(receiver, f) / (f + port["overhead"]) for f in (smallest, largest))
        return math.ceil(wire_bytes * per_wire_byte) + 2 * _buffer(receiver, largest)

    def pausing(self, ingress: int) -> bool:
        """Whether frames arriving over `ingress` (-1: the node's own talkers) can be paused."""
        return ingress >= 0 and self.spec["ports"][ingress]["pause"] is not None

    def queues_of(self, node: int) -> list[tuple[int, int, int | None]]:
        """The egress queues (port, class, limit) of `node` that frames enter."""
        ports = self.spec["ports"]
        return [(p, c, ports[p]["queue_limits"][c]) for (p, c) in sorted(self.feeders)
                if ports[p]["from"] == node]

    def ingresses_of(self, node: int) -> set[int]:
        """The pausing link directions into `node` that carry frames."""
        return {i for (p, _), feeders in self.feeders.items() if self.spec["ports"][p]["from"] == node
                for i in feeders if self.pausing(i)}


def derive(spec: dict[str, Any]) -> None:
    """Replaces, in a compiled spec, every port's `pause` that asks `lossless` by thresholds
    derived from its receiver's queues (module docs). ValueError naming the queue when no xoff of
    at least one frame fits."""
    fabric = _Fabric(spec)
    ports, nodes = spec["ports"], spec["nodes"]
    for i, port in enumerate(ports):
        pause = port["pause"]
        if pause is None or not pause.pop("lossless", False):
            continue
        node = port["to"]
        headroom = fabric.headroom(i)
        shares: list[tuple[float, str]] = []
        for p, c, limit in fabric.queues_of(node):
            if limit is not None and i in fabric.feeders[(p, c)]:
                feeders = [f for f in fabric.feeders[(p, c)] if fabric.pausing(f)]
                shares.append((limit / len(feeders), f"egress {ports[p]['name']} class {c} ({limit} B, "
                                                     f"{len(feeders)} pausing ingresses)"))
        shared = nodes[node]["shared_buffer"]
        if shared is not None:
            shares.append((shared / max(1, len(fabric.ingresses_of(node))),
                           f"{nodes[node]['name']}'s shared buffer ({shared} B)"))
        if not shares:
            pause["xoff"], pause["xon"] = Pause().thresholds()  # nothing to share: the defaults
            continue
        share, where = min(shares)
        xoff = int(share) - headroom
        frame = _buffer(nodes[node], max(fabric.largest.get(i, 0), PAUSE_FRAME_BYTES))
        if xoff < frame:
            raise ValueError(f"link {port['name']}: pause lossless cannot be met: {where} leaves {int(share)} B "
                             f"for this ingress, less than its headroom {headroom} B plus one frame ({frame} B); "
                             "give the queue more bytes, or fewer ingresses")
        pause["xoff"], pause["xon"] = xoff, xoff // 2


def warnings(spec: dict[str, Any]) -> list[str]:
    """Why the PAUSE configuration of a compiled spec cannot be lossless, one sentence per queue
    or buffer of a switch that runs PAUSE on some ingress, and per pause too short to be renewed
    in time; empty when it is lossless (module docs)."""
    fabric = _Fabric(spec)
    ports, nodes = spec["ports"], spec["nodes"]
    found: list[str] = []
    for i, port in enumerate(ports):
        pause = port["pause"]
        if pause is None or fabric.largest.get(i, 0) == 0:
            continue
        quanta_ps = pause["quanta"] * BITS_PER_QUANTUM * PS_PER_S / port["rate"]
        reverse = ports[pause["reverse"]]
        act_ps = (_wire_ps(reverse, fabric.largest.get(pause["reverse"], 0)) + _wire_ps(reverse, PAUSE_FRAME_BYTES)
                  + port["delay"])
        if quanta_ps / 2 < act_ps:
            found.append(f"link {port['name']}: pause quanta {pause['quanta']} last {quanta_ps / 1e6:.3f} us, "
                         f"so the renewal halfway comes later than the {act_ps / 1e6:.3f} us a PAUSE takes to act: "
                         "the sender may resume while the receiver is congested")
    for n, node in enumerate(nodes):
        paused = fabric.ingresses_of(n)
        if not paused:
            continue
        bound = {i: ports[i]["pause"]["xoff"] + fabric.headroom(i) for i in paused}
        for p, c, limit in fabric.queues_of(n):
            feeders = fabric.feeders[(p, c)]
            unpaused = sorted(ports[f]["name"] if f >= 0 else f"{node['name']}'s own talkers"
                              for f in feeders if not fabric.pausing(f))
            if limit is None or not any(fabric.pausing(f) for f in feeders):
                continue
            if unpaused:
                found.append(f"egress {ports[p]['name']} class {c}: frames from {', '.join(unpaused)} enter it "
                             "without PAUSE, so nothing bounds its queue")
                continue
            need = sum(bound[f] for f in feeders)
            if need > limit:
                found.append(f"egress {ports[p]['name']} class {c}: its {limit} B can be filled by {need} B, "
                             f"xoff plus headroom of its {len(feeders)} pausing ingresses "
                             f"({', '.join(ports[f]['name'] + f' {bound[f]} B' for f in sorted(feeders))}); "
                             "lower xoff, or use pause: {lossless: true}")
        shared = node["shared_buffer"]
        if shared is not None and sum(bound.values()) > shared:
            found.append(f"node {node['name']}: its shared buffer of {shared} B can be filled by "
                         f"{sum(bound.values())} B, xoff plus headroom of its {len(paused)} pausing ingresses")
    return found
