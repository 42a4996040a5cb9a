"""The reliability of a topology's streams, predicted: for each stream the probability that a
frame is delivered, and for each link direction the expected number of copies it carries.

The model: every link works for a frame or not, independently of every other link and frame,
with probability q = (1 - p) (1 - u) prod(1 - p_b f_b), where p is its Bernoulli loss, u the
fraction of the stream's sending time its cuts cover and f_b that of each loss burst of
probability p_b (`faults="independent"`: a cut is unavailability over the run); or, with
`faults="schedule"`, the faults at the times they happen: the stream's sending time cut where
any fault of its links starts or ends, each piece with its links down or lossier, the results
weighted by the pieces' lengths (exact for faults at known times, where the independent model
treats two cuts that overlap in time as if they did not). No queueing loss, recovery windows
(history length, reset timeout) large enough for any path's lateness, and only the faults of
the file.

A frame is delivered when one of its routes (frerlab.net.plan: one segment of every stage) has
every link working. No link is in two stages (every route is a simple path, and a link in two
stages would be twice on some route), so this is the product over the stages of the
probability that one of a stage's segments works, each computed by series-parallel reduction
(links common to every segment in series, segments in link-disjoint groups in parallel, and
factoring on a link where the segments form no series-parallel structure:
R = q R(link works) + (1 - q) R(link fails)). A link's expected copies per frame sent: over every segment crossing it, the
probability that the frame reaches the segment's stage (the stages before it each delivered)
times that the links of the segment before it work; a recovery node passes one copy whatever
number arrive. Exact enumeration over every state of the links (2^n, n at most
MAX_ENUMERATED_LINKS) is the reference the tests hold the reduction to (`method="exact"`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from frerlab.errors import UsageError
from frerlab.net.plan import Segment, StreamPlan
from frerlab.net.topology import MAX_ENUMERATED_LINKS, Burst, Stream, Topology

Routes = Iterable[Iterable[str]]
LinkQ = dict[str, float]
#: Bytes the R-TAG adds to a numbered frame (802.1CB 7.8), as the simulator counts it.
RTAG_BYTES = 6
FAULT_MODELS = ("independent", "schedule")
METHODS = ("reduction", "exact")


def reliability(routes: Routes, q: LinkQ) -> float:
    """The probability that at least one route has every link working (series-parallel
    reduction, factoring where the routes are not series-parallel)."""
    return _reduce(frozenset(frozenset(r) for r in routes), q, {})


def _reduce(routes: frozenset[frozenset[str]], q: LinkQ, memo: dict) -> float:
    if not routes:
        return 0.0
    if frozenset() in routes:
        return 1.0
    if routes in memo:
        return memo[routes]
    minimal = frozenset(r for r in routes if not any(o < r for o in routes))  # a longer route adds nothing
    common = frozenset.intersection(*minimal)
    if common:
        value = math.prod(q[link] for link in common) * _reduce(frozenset(r - common for r in minimal), q, memo)
    elif len(groups := _groups(minimal)) > 1:
        value = 1 - math.prod(1 - _reduce(g, q, memo) for g in groups)
    else:
        counts = Counter(link for r in minimal for link in r)
        pivot = max(sorted(counts), key=counts.__getitem__)
        works = frozenset(r - {pivot} for r in minimal)
        fails = frozenset(r for r in minimal if pivot not in r)
        value = q[pivot] * _reduce(works, q, memo) + (1 - q[pivot]) * _reduce(fails, q, memo)
    memo[routes] = value
    return value


def _groups(routes: frozenset[frozenset[str]]) -> list[frozenset[frozenset[str]]]:
    """The routes in groups that share no link with each other (parallel branches)."""
    groups: list[tuple[set[str], set[frozenset[str]]]] = []
    for r in sorted(routes, key=sorted):
        touching = [g for g in groups if g[0] & r]
        links, members = set(r), {r}
        for g in touching:
            links |= g[0]
            members |= g[1]
            groups.remove(g)
        groups.append((links, members))
    return [frozenset(members) for _, members in groups]


def exact_reliability(routes: Routes, q: LinkQ) -> float:
    """The same probability by enumerating every state of the routes' links (the reference)."""
    routes = [tuple(r) for r in routes]
    return float(_Enumeration(sorted({link for r in routes for link in r}), q).any_up(routes).sum())


class _Enumeration:
    """Every state of `links` (bit i: link i works) with its probability, as numpy vectors."""

    def __init__(self, links: list[str], q: LinkQ) -> None:
        import numpy as np

        if len(links) > MAX_ENUMERATED_LINKS:
            raise UsageError(f"exact enumeration over {len(links)} links is out of range (at most "
                             f"{MAX_ENUMERATED_LINKS}: 2^n states); use the reduction")
        self.np, self.index = np, {link: i for i, link in enumerate(links)}
        self.states = np.arange(1 << len(links), dtype=np.int64)
        self.prob = np.ones(len(self.states))
        for i, link in enumerate(links):
            self.prob *= np.where((self.states >> i) & 1, q[link], 1 - q[link])

    def up(self, links: Iterable[str]):
        """Whether every link of `links` works, per state."""
        mask = sum(1 << self.index[link] for link in set(links))
        return (self.states & mask) == mask

    def any_up(self, routes: list[Segment]):
        """The probability of each state in which one of `routes` works, else 0."""
        ok = self.np.zeros(len(self.states), dtype=bool)
        for r in routes:
            ok |= self.up(r)
        return self.np.where(ok, self.prob, 0.0)


def delivery(plan: StreamPlan, q: LinkQ, method: str = "reduction") -> float:
    """The probability that a frame of the stream is delivered."""
    if method == "exact":
        return exact_reliability(plan.routes, q)
    return math.prod(reliability(stage, q) for stage in plan.stages)


def _crossings(plan: StreamPlan, ends: dict[str, tuple[str, str]]) -> Iterable[tuple[int, Segment, int, str, str]]:
    """(stage, segment, position, link, sending node) for every link of every segment."""
    for k, stage in enumerate(plan.stages):
        for segment in stage:
            at = plan.boundaries[k]
            for j, link in enumerate(segment):
                yield k, segment, j, link, at
                a, b = ends[link]
                at = b if at == a else a


def copies(plan: StreamPlan, q: LinkQ, ends: dict[str, tuple[str, str]], method: str = "reduction"
           ) -> dict[tuple[str, str], float]:
    """Expected copies of a frame sent over each (link, sending node)."""
    out: dict[tuple[str, str], float] = {}
    if method == "exact":
        links = sorted({link for stage in plan.stages for seg in stage for link in seg})
        enum = _Enumeration(links, q)
        stage_ok = []
        for stage in plan.stages:
            ok = enum.np.zeros(len(enum.states), dtype=bool)
            for seg in stage:
                ok |= enum.up(seg)
            stage_ok.append(ok)
        for k, segment, j, link, at in _crossings(plan, ends):
            reach = enum.up(segment[:j])
            for ok in stage_ok[:k]:
                reach = reach & ok
            out[(link, at)] = out.get((link, at), 0.0) + float(enum.prob[reach].sum())
        return out
    stage_r = [reliability(stage, q) for stage in plan.stages]
    for k, segment, j, link, at in _crossings(plan, ends):
        value = math.prod(stage_r[:k]) * math.prod(q[x] for x in segment[:j])
        out[(link, at)] = out.get((link, at), 0.0) + value
    return out


def sending_window(topo: Topology, s: Stream) -> tuple[int, int]:
    """When the stream sends, in picoseconds: from its start to its last frame or the end."""
    end = topo.duration
    if s.count is not None:
        end = min(end, s.start + math.ceil(s.count / s.frames_per_second * 1e12))
    return s.start, end


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def link_pieces(topo: Topology, s: Stream, faults: str = "independent") -> list[tuple[float, LinkQ]]:
    """The links' probabilities of working for the stream's frames: one (1.0, q) for the
    independent model, or (weight, q) for each piece of the sending time between fault times."""
    start, end = sending_window(topo, s)
    length = end - start
    base = {link.name: 1 - link.p for link in topo.links}
    if faults == "independent":
        q = dict(base)
        for name in q:
            cuts = sorted((f.down, f.up) for f in topo.faults if f.link == name and not isinstance(f, Burst))
            covered, reach = 0, start
            for down, up in cuts:  # the union of the cuts, within the window
                down, up = max(down, reach), min(up, end)
                if up > down:
                    covered += up - down
                    reach = up
            q[name] *= 1 - covered / length
            for f in topo.faults:
                if f.link == name and isinstance(f, Burst):
                    q[name] *= 1 - f.p * _overlap(f.start, f.end, start, end) / length
        return [(1.0, q)]
    times = sorted({start, end} | {t for f in topo.faults
                                   for t in ((f.start, f.end) if isinstance(f, Burst) else (f.down, f.up))
                                   if start < t < end})
    pieces = []
    for t0, t1 in zip(times, times[1:]):
        q = dict(base)
        for f in topo.faults:
            lo, hi = (f.start, f.end) if isinstance(f, Burst) else (f.down, f.up)
            if lo <= t0 and t1 <= hi:
                q[f.link] *= 1 - f.p if isinstance(f, Burst) else 0.0
        pieces.append(((t1 - t0) / length, q))
    return pieces


def _weighted(pieces: list[tuple[float, LinkQ]], value: Callable[[LinkQ], Any]) -> Any:
    """The pieces' weighted mean of `value(q)` (a number, or a dict of numbers)."""
    total: Any = None
    for weight, q in pieces:
        v = value(q)
        if isinstance(v, dict):
            total = total or {}
            for key, x in v.items():
                total[key] = total.get(key, 0.0) + weight * x
        else:
            total = (total or 0.0) + weight * v
    return total


def expected_frames(topo: Topology, s: Stream) -> int:
    """About how many frames the stream sends in a run."""
    start, end = sending_window(topo, s)
    frames = math.ceil((end - start) / 1e12 * s.frames_per_second)
    return frames if s.count is None else min(frames, s.count)


def analyse(topo: Topology, method: str = "reduction", faults: str = "independent") -> dict[str, Any]:
    """Every stream's delivery probability, every link direction's expected copies of each
    stream (`links`) and the expected load of all streams on it (`ports`: L2 bit/s, R-TAGs
    included, and the fraction of the link's rate)."""
    if method not in METHODS:
        raise UsageError(f"method {method!r} is not valid ({', '.join(METHODS)})")
    if faults not in FAULT_MODELS:
        raise UsageError(f"faults model {faults!r} is not valid ({', '.join(FAULT_MODELS)})")
    ends = {link.name: (link.a, link.b) for link in topo.links}
    streams, links = {}, []
    for s in topo.streams:
        plan = topo.plans[s.name]
        pieces = link_pieces(topo, s, faults)
        p_delivered = _weighted(pieces, partial(delivery, plan, method=method))
        frames = expected_frames(topo, s)
        streams[s.name] = {
            "delivery": p_delivered, "loss": 1 - p_delivered, "frames": frames,
            "expected_lost": frames * (1 - p_delivered), "routes": plan.route_count,
            "member_paths": len(plan.member_paths), "generation": plan.generation, "recovery": list(plan.recovery),
        }
        load = _weighted(pieces, partial(copies, plan, ends=ends, method=method))
        tagged = {(link, at): 0 < k < len(plan.stages) - 1 and plan.generation is not None
                  for k, _, _, link, at in _crossings(plan, ends)}
        for (link, at), n in load.items():
            to = ends[link][1] if at == ends[link][0] else ends[link][0]
            size = s.frame_size + (RTAG_BYTES if tagged[(link, at)] else 0)
            links.append({"stream": s.name, "link": link, "from": at, "to": to, "copies_per_frame": n,
                          "copies_per_delivered": n / p_delivered if p_delivered > 0 else None,
                          "load_bps": n * s.frames_per_second * size * 8})
    ports: dict[tuple[str, str], dict[str, Any]] = {}
    for row in links:
        port = ports.setdefault((row["link"], row["from"]), {"link": row["link"], "from": row["from"], "to": row["to"],
                                                             "load_bps": 0.0, "rate_bps": topo.link(row["link"]).rate})
        port["load_bps"] += row["load_bps"]
    for port in ports.values():
        port["utilisation"] = port["load_bps"] / port["rate_bps"]
    return {"topology": topo.name, "method": method, "faults": faults, "streams": streams, "links": links,
            "ports": list(ports.values())}
