"""Each stream of a topology resolved into its FRER plan: member paths (given, the shortest, or
every link-disjoint path, found by a min-cost flow), the sequence generation node, the sequence
recovery nodes, the stages between them and the routes a frame's copies can take.

A stream's frames go from the talker to the generation node as one frame (the prefix), are
numbered and replicated there, and at each recovery node the first copy of every number is
passed and, except at the last one, replicated again onto the member paths of the next stage
(802.1CB: a relay system may recover and forward the frame with its R-TAG, to be split again).
So the member paths are cut at the generation and the recovery nodes into stages, each a set
of distinct segments, and the routes are every combination of one segment per stage: with
end-to-end recovery the member paths themselves, with recovery at every stage of a ladder of
k stages of two paths 2^k of them. After the last recovery node the frame is one again (the
suffix). A frame is delivered when one route has every link working, which is what
frerlab.net.analyse computes, and the routes are the paths of the simulator scenario
(frerlab.net.sim).

Every error names the stream and the bad value, and what would be valid.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

from frerlab.net.topology import MAX_ROUTES, Stream, Topology

Segment = tuple[str, ...]


@dataclass(frozen=True)
class StreamPlan:
    """Where a stream's frames go and where FRER acts on them."""

    stream: str
    talker: str
    listener: str
    #: The member paths, each a tuple of link names from talker to listener.
    member_paths: tuple[Segment, ...]
    #: The sequence generation node, or None without FRER.
    generation: str | None
    #: The sequence recovery nodes in path order; all but the last pass frames on with their R-TAG.
    recovery: tuple[str, ...]
    #: talker, generation, every recovery node, listener (talker and listener alone without FRER).
    boundaries: tuple[str, ...]
    #: Stage i: the distinct segments from boundaries[i] to boundaries[i + 1] (the first and the
    #: last, before the generation and after the last recovery, have one, which may be empty).
    stages: tuple[tuple[Segment, ...], ...]

    @property
    def routes(self) -> tuple[Segment, ...]:
        """Every route a copy can take: one segment of each stage, in order."""
        return tuple(sum(combo, ()) for combo in itertools.product(*self.stages))

    @property
    def route_count(self) -> int:
        """How many routes (the product of the stages' segment counts)."""
        count = 1
        for stage in self.stages:
            count *= len(stage)
        return count


class Graph:
    """The topology's links as an undirected multigraph, in file order."""

    def __init__(self, topo: Topology) -> None:
        self.ends = {link.name: (link.a, link.b) for link in topo.links}
        self.adjacent: dict[str, list[tuple[str, str]]] = {name: [] for name in topo.nodes}
        for link in topo.links:
            self.adjacent[link.a].append((link.name, link.b))
            self.adjacent[link.b].append((link.name, link.a))

    def far(self, link: str, node: str) -> str:
        """The other end of `link` from `node`."""
        a, b = self.ends[link]
        return b if node == a else a

    def walk(self, start: str, path: Segment) -> list[str]:
        """The nodes `path` visits from `start`; ValueError naming a link that is not
        defined or does not touch the node the path has reached."""
        nodes = [start]
        for link in path:
            if link not in self.ends:
                raise ValueError(f"link {link!r} is not defined (defined: {', '.join(sorted(self.ends))})")
            if nodes[-1] not in self.ends[link]:
                raise ValueError(f"link {link} does not touch {nodes[-1]!r} (it joins {' and '.join(self.ends[link])})")
            nodes.append(self.far(link, nodes[-1]))
        return nodes

    def shortest(self, start: str, goal: str, avoid: set[str] = frozenset()) -> Segment | None:
        """The fewest links from `start` to `goal` not through nodes in `avoid` (the first
        found, in file order), or None."""
        came: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue and goal not in came:
            node = queue.popleft()
            for link, other in self.adjacent[node]:
                if other not in came and other not in avoid:
                    came[other] = (node, link)
                    queue.append(other)
        if goal not in came:
            return None
        path, at = [], goal
        while (step := came[at]) is not None:
            at, link = step
            path.append(link)
        return tuple(path[::-1])

    def disjoint(self, start: str, goal: str, avoid: set[str]) -> list[Segment]:
        """The most link-disjoint paths from `start` to `goal` (not through nodes in `avoid`),
        with the fewest links in all: a min-cost flow of unit capacities, augmented along
        shortest paths (Bellman-Ford over the residual arcs, whose costs may be negative)."""
        # arcs: [from, to, capacity, cost, link, index of the reverse arc]
        arcs: list[list] = []
        out: dict[str, list[int]] = {node: [] for node in self.adjacent}
        for link, (a, b) in self.ends.items():
            if a in avoid or b in avoid:
                continue
            for u, v in ((a, b), (b, a)):
                out[u].append(len(arcs))
                arcs.append([u, v, 1, 1, link, len(arcs) + 1])
                out[v].append(len(arcs))
                arcs.append([v, u, 0, -1, link, len(arcs) - 1])
        while True:
            dist, via = {start: 0}, {}
            for _ in range(len(out)):
                changed = False
                for node in list(dist):
                    for i in out[node]:
                        _, v, cap, cost, _, _ = arcs[i]
                        if cap > 0 and dist[node] + cost < dist.get(v, 1 << 30):
                            dist[v], via[v], changed = dist[node] + cost, i, True
                if not changed:
                    break
            if goal not in dist:
                break
            at = goal
            while at != start:
                i = via[at]
                arcs[i][2] -= 1
                arcs[arcs[i][5]][2] += 1
                at = arcs[i][0]
        used = {}  # (from, link) -> to, for each arc of the flow (net of both directions)
        for i in range(0, len(arcs), 2):
            u, v, cap, _, link, _ = arcs[i]
            if cap == 0:
                used[(u, link)] = v
        for (u, link), v in list(used.items()):
            if used.get((v, link)) == u:  # flow both ways on one link cancels
                del used[(u, link)], used[(v, link)]
        paths = []
        while any(u == start for u, _ in used):
            at, path = start, []
            while at != goal:
                u, link = next(key for key in used if key[0] == at)
                at = used.pop((u, link))
                path.append(link)
            paths.append(tuple(path))
        return sorted(paths, key=len)


def plan_streams(topo: Topology) -> dict[str, StreamPlan]:
    """Every stream's plan, after checking the links and faults; ValueError naming the first
    bad name or path."""
    seen: set[str] = set()
    for link in topo.links:
        if link.name in seen:
            raise ValueError(f"link name {link.name!r} is used twice")
        seen.add(link.name)
        for end in (link.a, link.b):
            if end not in topo.nodes:
                raise ValueError(f"link {link.name}: {_undefined('node', end, topo.nodes)}")
        if link.a == link.b:
            raise ValueError(f"link {link.name}: joins {link.a!r} to itself (a and b must differ)")
    for fault in topo.faults:
        if fault.link not in seen:
            kind = "cut" if hasattr(fault, "cut") else "burst"
            raise ValueError(f"faults: {kind} {_undefined('link', fault.link, seen)}")
    names = [s.name for s in topo.streams]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"stream name {twice[0]!r} is used twice (stream names must be unique)")
    graph = Graph(topo)
    return {s.name: _plan(topo, graph, s) for s in topo.streams}


def _undefined(kind: str, name: object, known) -> str:
    return f"{kind} {name!r} is not defined (defined: {', '.join(sorted(known))})"


def _plan(topo: Topology, graph: Graph, s: Stream) -> StreamPlan:
    where = f"stream {s.name}"
    for role, name in (("talker", s.talker), ("listener", s.listener)):
        if name not in topo.nodes:
            raise ValueError(f"{where}: {role} {_undefined('node', name, topo.nodes)}")
    if s.talker == s.listener:
        raise ValueError(f"{where}: talker and listener are both {s.talker!r} (they must differ)")
    frer = s.frer
    generation = None if frer is None else frer.generation
    if generation is not None and generation not in topo.nodes:
        raise ValueError(f"{where}: frer.generation {_undefined('node', generation, topo.nodes)}")
    if generation == s.listener:
        raise ValueError(f"{where}: frer.generation is the listener {s.listener!r}: nothing would be replicated "
                         "(valid: the talker or a node on the way)")
    paths = _member_paths(graph, s, generation)
    walks = [graph.walk(s.talker, p) for p in paths]
    if frer is None:
        return StreamPlan(s.name, s.talker, s.listener, paths, None, (), (s.talker, s.listener), ((paths[0],),))
    if generation is None:
        generation = _parting_node(paths, walks)
    for path, nodes in zip(paths, walks):
        if generation not in nodes:
            raise ValueError(f"{where}: frer.generation {generation!r} is not on member path {list(path)} "
                             "(the generation node must be on every member path)")
    prefixes = {path[:nodes.index(generation)] for path, nodes in zip(paths, walks)}
    if len(prefixes) > 1:
        raise ValueError(f"{where}: the member paths reach the generation node {generation!r} over different links "
                         f"({' and '.join(str(list(p)) for p in sorted(prefixes))}); before it the frame is not yet "
                         "replicated: they must share their links up to it")
    after = [nodes[nodes.index(generation) + 1:] for nodes in walks]
    common = [n for n in after[0] if all(n in rest for rest in after[1:])]
    for rest in after[1:]:
        order = [n for n in rest if n in common]
        if order != common:
            raise ValueError(f"{where}: the member paths cross the nodes {', '.join(common)} in different orders "
                             f"({' -> '.join(common)} and {' -> '.join(order)}): stages need one order")
    merge = next(n for n in common if len({p[nodes.index(n):] for p, nodes in zip(paths, walks)}) == 1)
    recovery = _recovery_nodes(where, frer.recovery, generation, common, merge, topo)
    boundaries = (s.talker, generation, *recovery, s.listener)
    stages: list[list[Segment]] = [[] for _ in range(len(boundaries) - 1)]
    for path, nodes in zip(paths, walks):
        cuts = [0] + [nodes.index(b) for b in boundaries[1:-1]] + [len(path)]
        for i in range(len(stages)):
            segment = path[cuts[i]:cuts[i + 1]]
            if segment not in stages[i]:
                stages[i].append(segment)
    if len(stages[-1]) > 1:
        raise ValueError(f"{where}: the member paths part again after the last recovery node {recovery[-1]!r}, so "
                         f"the listener would get duplicates; recover where they merge at last ({merge!r})")
    plan = StreamPlan(s.name, s.talker, s.listener, paths, generation, recovery, boundaries,
                      tuple(tuple(stage) for stage in stages))
    if plan.route_count > MAX_ROUTES:
        raise ValueError(f"{where}: {plan.route_count} routes (the product of the stages' member paths, "
                         f"{' x '.join(str(len(st)) for st in stages)}) is out of range (at most {MAX_ROUTES})")
    if len(recovery) > 1:
        for route in plan.routes:
            nodes = graph.walk(s.talker, route)
            if len(set(nodes)) < len(nodes):
                twice = next(n for n in nodes if nodes.count(n) > 1)
                raise ValueError(f"{where}: recovery at {', '.join(recovery)} makes route {list(route)}, which visits "
                                 f"{twice!r} twice; recover at fewer nodes")
    return plan


def _parting_node(paths: tuple[Segment, ...], walks: list[list[str]]) -> str:
    """The node where the member paths part (the end of the links they all share from the
    talker); the talker for a single path."""
    if len(paths) == 1:
        return walks[0][0]
    shared = 0
    while all(len(p) > shared and p[shared] == paths[0][shared] for p in paths):
        shared += 1
    return walks[0][shared]


def _chain_end(graph: Graph, end: str, stop: str | None = None) -> tuple[str, list[str]]:
    """Where the chain of single links from `end` into the network ends (a host on one switch
    port: that switch), not going past `stop`; and the chain's links, from `end` on."""
    node, came, links = end, None, []
    while node != stop and len(graph.adjacent[node]) - (came is not None) == 1:
        came, node = next((link, n) for link, n in graph.adjacent[node] if link != came)
        links.append(came)
    return node, links


def _member_paths(graph: Graph, s: Stream, generation: str | None) -> tuple[Segment, ...]:
    """The member paths as given, or found; ValueError naming a broken one."""
    where = f"stream {s.name}"
    choice = s.paths or ("disjoint" if s.frer is not None else "shortest")
    if choice == "shortest":
        path = graph.shortest(s.talker, s.listener)
        if path is None:
            raise ValueError(f"{where}: no path from {s.talker!r} to {s.listener!r}")
        return (path,)
    if choice == "disjoint":
        if s.frer is None:
            raise ValueError(f"{where}: paths: disjoint needs frer (a stream without it takes one path)")
        return _disjoint(graph, s, generation or _chain_end(graph, s.talker)[0])
    paths = []
    for path in choice:
        try:
            nodes = graph.walk(s.talker, tuple(path))
        except ValueError as err:
            raise ValueError(f"{where}: path {path}: {err}") from None
        if nodes[-1] != s.listener:
            raise ValueError(f"{where}: path {path} ends at {nodes[-1]!r}, not at the listener {s.listener!r}")
        if len(set(nodes)) < len(nodes):
            twice = next(n for n in nodes if nodes.count(n) > 1)
            raise ValueError(f"{where}: path {path} visits {twice!r} twice (a member path is a simple path)")
        if tuple(path) in paths:
            raise ValueError(f"{where}: path {path} is given twice")
        paths.append(tuple(path))
    return tuple(paths)


def _disjoint(graph: Graph, s: Stream, generation: str) -> tuple[Segment, ...]:
    """Every link-disjoint path between the generation node and the merge node (the listener,
    or where the listener hangs off the network by a chain of single links, the node where that
    chain starts), each with the shortest way from the talker to the generation node before
    it and the chain after it."""
    where = f"stream {s.name}"
    prefix = graph.shortest(s.talker, generation)
    if prefix is None:
        raise ValueError(f"{where}: no path from the talker {s.talker!r} to frer.generation {generation!r}")
    merge, chain = _chain_end(graph, s.listener, generation)
    suffix = chain[::-1]
    before = set(graph.walk(s.talker, prefix)[:-1]) | set(graph.walk(merge, tuple(suffix))[1:])
    found = graph.disjoint(generation, merge, before)
    if len(found) < 2:
        raise ValueError(f"{where}: paths: disjoint found {len(found)} path(s) between the generation node "
                         f"{generation!r} and {merge!r}, where they merge (FRER needs two or more): give "
                         "frer.generation where the paths part, or the paths as lists of link names")
    return tuple(prefix + p + tuple(suffix) for p in found)


def _recovery_nodes(where: str, recovery, generation: str, common: list[str], merge: str, topo: Topology) -> tuple[str, ...]:
    """The sequence recovery nodes the stream's frer.recovery asks for, in path order."""
    if recovery == "end_to_end":
        return (merge,)
    if recovery == "per_stage":
        return tuple(common[:common.index(merge) + 1])
    if not recovery:
        raise ValueError(f"{where}: frer.recovery is an empty list: give nodes, or end_to_end, or per_stage")
    for node in recovery:
        if node not in topo.nodes:
            raise ValueError(f"{where}: frer.recovery {_undefined('node', node, topo.nodes)}")
        if recovery.count(node) > 1:
            raise ValueError(f"{where}: frer.recovery names {node!r} twice")
        if node not in common:
            raise ValueError(f"{where}: frer.recovery node {node!r} is not on every member path after the generation "
                             f"node {generation!r} (valid: {', '.join(common)})")
    return tuple(sorted(recovery, key=common.index))
