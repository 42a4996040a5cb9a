"""The FRER functions of each node of a topology, one NodeFunctions object per node: which
streams it talks, numbers, forwards (out of which links, with or without the R-TAG) and
listens to, and its recovery functions, in the vocabulary of the IEEE YANG modules
(ieee802-dot1cb-frer: sequence-generation, sequence-recovery with algorithm, history-length,
reset-timeout, individual-recovery, latent-error-detection-parameters; sequence-identification
active on a port: frames leave it with an R-TAG, 802.1CB 7.6).

These objects are the one description of what each node does: the simulator scenario is built
from them (frerlab.net.sim), and so are meant to be the namespace network's data plane
configurations and the per-switch YANG and LAN966x exports (a link's name is the interface
name on both of its ends). Built from the streams' plans (frerlab.net.plan).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from frerlab.net.plan import StreamPlan
from frerlab.net.topology import LatentErrorDetection, Topology, exact_time


@dataclass(frozen=True)
class RecoveryFunction:
    """One recovery function of a stream at a node (802.1CB 7.4.2 / 7.5)."""

    stream: str
    #: Links whose received frames of the stream it sees (an individual recovery function: its
    #: member stream's link); empty: every frame of the stream at the node.
    ingress: tuple[str, ...]
    individual_recovery: bool
    #: Passed frames leave with their R-TAG (a relay that recovers, then replicates again).
    keep_tag: bool
    algorithm: str
    history_length: int
    #: Picoseconds, "never", or None for frerlab's default (100 ms; 1 ms individual).
    reset_timeout: int | str | None
    latent_error_detection: LatentErrorDetection | None = None


@dataclass(frozen=True)
class Forwarding:
    """Where a node sends the stream's frames that arrive by `ingress`: more than one output
    replicates, none delivers them to this host (the listener)."""

    stream: str
    output: tuple[str, ...]
    #: Whether they leave with an R-TAG (sequence-identification active on those links).
    tagged: bool
    #: The links these frames arrive by; empty: the frames this host sends (the talker). A relay
    #: on several member paths (the end-to-end ladder's middle switches) sends each member on
    #: along its own path: one Forwarding per member.
    ingress: tuple[str, ...] = ()


@dataclass
class NodeFunctions:
    """Everything FRER (and the stream forwarding around it) asks of one node."""

    name: str
    kind: str
    #: Its links, in file order (its ports).
    links: list[str]
    talks: list[str] = field(default_factory=list)
    listens: list[str] = field(default_factory=list)
    #: Streams numbered here (before they are replicated).
    generation: list[str] = field(default_factory=list)
    #: In the order they run on a frame: individual recovery before sequence recovery.
    recovery: list[RecoveryFunction] = field(default_factory=list)
    forwarding: list[Forwarding] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        """Plain data (lists, dicts, numbers, strings), e.g. to print as YAML."""
        data = asdict(self)
        for r, function in zip(data["recovery"], self.recovery):
            r["ingress"] = list(r["ingress"])
            if isinstance(r["reset_timeout"], int):
                r["reset_timeout"] = exact_time(r["reset_timeout"])
            latent = function.latent_error_detection
            if latent is None:
                del r["latent_error_detection"]
            else:
                r["latent_error_detection"] = {"difference": latent.difference, "period": exact_time(latent.period),
                                               "paths": latent.paths, "reset_period": exact_time(latent.reset_period)}
        for f in data["forwarding"]:
            f["output"] = list(f["output"])
        return data


def node_functions(topo: Topology) -> dict[str, NodeFunctions]:
    """Every node's functions, in the file's node order."""
    nodes = {name: NodeFunctions(name, node.kind, [link.name for link in topo.links if name in (link.a, link.b)])
             for name, node in topo.nodes.items()}
    for s in topo.streams:
        plan: StreamPlan = topo.plans[s.name]
        nodes[plan.talker].talks.append(s.name)
        nodes[plan.listener].listens.append(s.name)
        if plan.generation is not None:
            nodes[plan.generation].generation.append(s.name)
        for i, node in enumerate(plan.recovery):
            last = i == len(plan.recovery) - 1
            incoming = plan.stages[i + 1]
            frer = s.frer
            if frer.individual_recovery:
                members = sorted({seg[-1] for seg in incoming if seg}, key=nodes[node].links.index)
                for link in members:
                    nodes[node].recovery.append(RecoveryFunction(
                        s.name, (link,), True, False, frer.algorithm, frer.history_length, None))
            latent = frer.latent_error_detection
            if latent is not None and latent.paths is None:
                latent = latent.model_copy(update={"paths": max(2, len(incoming))})
            nodes[node].recovery.append(RecoveryFunction(
                s.name, (), False, not last, frer.algorithm, frer.history_length, frer.reset_timeout, latent))
        _forwarding(topo, plan, nodes)
    return nodes


def _forwarding(topo: Topology, plan: StreamPlan, nodes: dict[str, NodeFunctions]) -> None:
    """Each node's Forwarding entries for the stream, from its stages: the links a copy arriving
    by each link goes on by (at a stage's first node, every arrival from the stage before goes on
    to all of the stage's first links), the arrivals with the same outputs in one entry."""
    ends = {link.name: (link.a, link.b) for link in topo.links}
    onward: dict[tuple[str, str | None], list[str]] = {}  # (node, arrival link or None) -> outputs
    arriving: dict[str, list[str]] = {}  # boundary node -> the last links of the stage before
    tagged: dict[str, bool] = {}
    for i, stage in enumerate(plan.stages):
        numbered = plan.generation is not None and 0 < i < len(plan.stages) - 1
        for segment in stage:
            at, previous = plan.boundaries[i], None
            for link in segment:
                links = onward.setdefault((at, previous), [])
                if link not in links:
                    links.append(link)
                tagged[at] = numbered
                a, b = ends[link]
                at, previous = (b if at == a else a), link
            if previous is not None and previous not in arriving.setdefault(at, []):
                arriving[at].append(previous)
    for node, links in arriving.items():  # a boundary: its arrivals take its stage's first links
        for link in links:
            onward.setdefault((node, link), onward.get((node, None), []))
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (node, arrival), outputs in onward.items():
        if arrival is None and node != plan.talker:
            continue  # a boundary's stage outputs, taken by its arrivals above
        groups.setdefault((node, tuple(outputs)), []).extend([arrival] if arrival else [])
    for (node, outputs), ingress in groups.items():
        order = nodes[node].links
        nodes[node].forwarding.append(Forwarding(plan.stream, outputs, tagged.get(node, False),
                                                 tuple(sorted(ingress, key=order.index))))
