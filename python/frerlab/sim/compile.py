"""The scenario compiler: a validated Scenario (frerlab.sim.schema) becomes the index-based spec
the Rust simulator runs. Names become indices (nodes, egress ports: one per link direction),
quantities are already canonical (bit/s, bytes, picoseconds), each stream's paths become a tree
of hops that parts where the frame is copied, and the congestion section is spread over the
switch ports and streams it applies to; PAUSE asked to be lossless gets its thresholds
(frerlab.sim.lossless). A name that does not resolve or a path that is broken
is a ValueError naming it; Scenario's validation calls compile_spec, so a file that validates
compiles. A link's attacks go to the port that sends towards their `direction`, their times and
rates become the engine's (`every`, picoseconds between two frames); a stream filter's link
becomes the port that sends over it towards the filter's node. Also the helpers that read the same structure: port names, a stream's line rate.
"""

from __future__ import annotations

from typing import Any

from frerlab.sim import lossless
from frerlab.sim.schema import (CLASSES, Attack, BcnNetwork, Egress, Exponential, FecnNetwork, Inject, Link, OnOff,
                                Pause, QcnNetwork, Recovery, Scenario, Stream, StreamFilter, StripTag, UniformSize)
from frerlab.units import time_text


def _known(kind: str, name: str, known: Any) -> str:
    return f"{kind} {name!r} is not defined (defined: {', '.join(sorted(known))})"


def port_name(link: str, src: str, dst: str) -> str:
    """The name of the egress port that sends over `link` from `src` to `dst`, as the results
    name it."""
    return f"{link}:{src}->{dst}"


def compile_spec(sc: Scenario) -> dict[str, Any]:
    """The Rust simulator's spec (indices and canonical units) for a validated scenario.

    Raises ValueError naming the first unknown name or broken path.
    """
    node_index = {name: i for i, name in enumerate(sc.nodes)}
    links = {}
    for link in sc.links:
        if link.name in links:
            raise ValueError(f"link name {link.name!r} is used twice")
        for end in (link.a, link.b):
            if end not in node_index:
                raise ValueError(f"link {link.name}: " + _known("node", end, node_index))
        for toward in {c.toward for c in link.rate_changes} - {None}:
            if toward not in (link.a, link.b):
                raise ValueError(f"link {link.name}: rate_changes toward {toward!r} is not one of its ends "
                                 f"({link.a}, {link.b})")
        for end in (link.a, link.b):
            times = [c.at for c in link.rate_changes if c.toward in (None, end)]
            if times != sorted(set(times)):
                raise ValueError(f"link {link.name}: rate_changes toward {end} must be in increasing time")
        links[link.name] = link
    ports, port_index = [], {}
    for link in sc.links:
        for src, dst in ((link.a, link.b), (link.b, link.a)):
            port_index[(link.name, src)] = len(ports)
            # The reverse direction is the other port of the same link: the next or the last one.
            reverse = len(ports) + (1 if src == link.a else -1)
            pause = link.pause or sc.nodes[dst].pause
            ports.append({
                "name": port_name(link.name, src, dst),
                "from": node_index[src], "to": node_index[dst], "rate": link.rate,
                "delay": link.delay, "overhead": link.overhead,
                "queue_limits": link.egress.limits(),
                "idle_slopes": [link.egress.cbs.get(c) for c in CLASSES],
                "gate_control": None if link.egress.gates is None else {
                    "base_time": link.egress.gates.base_time,
                    "entries": [[sum(1 << c for c in set(e.open)), e.duration] for e in link.egress.gates.entries],
                },
                "failures": [[f.down, f.up] for f in link.failures],
                "loss": {"model": "none"} if link.loss is None else link.loss.model_dump(),
                "pause": None if pause is None else _pause(pause, reverse),
                **_congestion_point(link.egress, sc.congestion if sc.nodes[src].kind == "switch" else None),
                "rate_changes": [[c.at, c.rate] for c in link.rate_changes if c.toward in (None, dst)],
                "attacks": [],
            })
    streams = [_compile_stream(s, node_index, links, port_index) for s in sc.streams]
    for link in sc.links:
        for number, attack in enumerate(link.attacks):
            port, spec_attack = _compile_attack(sc, link, number, attack, streams, port_index)
            ports[port]["attacks"].append(spec_attack)
    if sc.congestion is not None:
        for spec in streams:
            if not any(name in spec for name in ("qcn", "bcn", "fecn")):
                spec[sc.congestion.mechanism] = sc.congestion.regulator.model_dump()
    names = [s.name for s in sc.streams]
    if len(set(names)) != len(names):
        raise ValueError(f"stream names must be unique: {names}")
    spec = {
        "seed": sc.seed, "duration": sc.duration, "warmup": sc.warmup, "interval": sc.interval,
        "trace": sc.trace,
        "nodes": [{"name": name, "processing_delay": n.processing_delay, "shared_buffer": n.buffer.shared,
                   "cell": n.buffer.cell} for name, n in sc.nodes.items()],
        "ports": ports, "streams": streams,
    }
    lossless.derive(spec)
    return spec


def _compile_attack(sc: Scenario, link: Link, number: int, attack: Attack, streams: list[dict],
                    port_index: dict) -> tuple[int, dict[str, Any]]:
    """The port an attack acts on (the link's direction towards its `direction`) and its spec."""
    owner = f"link {link.name}: attack {number} ({attack.kind})"
    if attack.direction not in (link.a, link.b):
        raise ValueError(f"{owner}: direction {attack.direction!r} is not one of the link's ends ({link.a}, {link.b})")
    port = port_index[(link.name, link.b if attack.direction == link.a else link.a)]
    names = [s["name"] for s in streams]
    if attack.stream not in names:
        raise ValueError(f"{owner}: " + _known("stream", attack.stream, names))
    index = names.index(attack.stream)
    if not any(hop["port"] == port for hop in streams[index]["hops"]):
        crossing = [s["name"] for s in streams if any(hop["port"] == port for hop in s["hops"])]
        raise ValueError(f"{owner}: stream {attack.stream!r} does not cross the link towards {attack.direction!r} "
                         f"(streams that do: {', '.join(crossing) or 'none'})")
    end = sc.duration if attack.end is None else attack.end
    if not attack.start < end <= sc.duration:
        raise ValueError(f"{owner}: start {time_text(attack.start)} and end {time_text(end)} are out of range "
                         f"(start < end <= the duration {time_text(sc.duration)})")
    spec: dict[str, Any] = {"stream": index, "start": attack.start, "end": end, "every": None, "count": None,
                            "identity": None, "action": attack.model_dump(include={"kind", "offset", "age"})}
    if isinstance(attack, Inject) and attack.identity is not None:
        if attack.identity not in names or attack.identity == attack.stream:
            others = [n for n in names if n != attack.stream]
            raise ValueError(f"{owner}: identity {attack.identity!r} is not another stream "
                             f"(other streams: {', '.join(others) or 'none'})")
        spec["identity"] = names.index(attack.identity)
    if not isinstance(attack, StripTag):
        if attack.count is not None:
            spec["every"], spec["count"] = (end - attack.start) // attack.count, attack.count
            if spec["every"] == 0:
                raise ValueError(f"{owner}: count {attack.count} is more than one frame per picosecond of "
                                 f"[start, end) ({time_text(end - attack.start)})")
        else:
            spec["every"] = max(1, round(10**12 / attack.rate))
    return port, spec


def _pause(pause: Pause, reverse: int) -> dict[str, Any]:
    """A link direction's PAUSE; `lossless` leaves its thresholds to frerlab.sim.lossless."""
    if pause.lossless:
        return {"reverse": reverse, "quanta": pause.quanta, "lossless": True}
    xoff, xon = pause.thresholds()
    return {"reverse": reverse, "xoff": xoff, "xon": xon, "quanta": pause.quanta}


def _congestion_point(egress: Egress, network: QcnNetwork | BcnNetwork | FecnNetwork | None) -> dict[str, Any]:
    """The port's congestion points: its egress's own, else the network's (for a switch's port)."""
    points = {name: getattr(egress, name) for name in ("qcn", "bcn", "fecn")}
    if network is not None and not any(points.values()):
        points[network.mechanism] = network.point
    return {name: None if point is None else point.model_dump() for name, point in points.items()}


def shortest_path(s: Stream, links: dict) -> list[str]:
    """The fewest links from the talker to the listener (the first found, in file order)."""
    came_from: dict[str, tuple[str, str] | None] = {s.talker: None}
    frontier = [s.talker]
    while frontier and s.listener not in came_from:
        reached = []
        for node in frontier:
            for link in links.values():
                if node in (link.a, link.b):
                    other = link.b if node == link.a else link.a
                    if other not in came_from:
                        came_from[other] = (node, link.name)
                        reached.append(other)
        frontier = reached
    if s.listener not in came_from:
        raise ValueError(f"stream {s.name}: no path from {s.talker!r} to {s.listener!r}")
    path, at = [], s.listener
    while (step := came_from[at]) is not None:
        at, link_name = step
        path.append(link_name)
    return path[::-1]


def mean_frame_bytes(frame_size: int | Exponential | UniformSize) -> float:
    """The mean frame size of a stream's frame_size setting."""
    if isinstance(frame_size, Exponential):
        return frame_size.mean
    if isinstance(frame_size, UniformSize):
        return (frame_size.min + frame_size.max) / 2
    return frame_size


def talker_line_rate(sc: Scenario, stream: str) -> float:
    """The highest rate (bit/s, in the stream's rate_layer) at which its talker can put its
    frames on the wire: the line rate of the first link of its paths (the slowest, where the
    paths start on different links) at its mean frame size, less that link's per-frame
    overhead at L2. A higher `rate` is not offered to the network but queued in the talker."""
    s = next((x for x in sc.streams if x.name == stream), None)
    if s is None:
        raise ValueError(_known("stream", stream, [x.name for x in sc.streams]))
    links = {link.name: link for link in sc.links}
    frame = mean_frame_bytes(s.frame_size)
    first = [links[path[0]] for path in s.paths or [shortest_path(s, links)] if path[0] in links]
    if not first:
        raise ValueError(f"stream {s.name}: no link leaves its talker {s.talker!r}")
    return min(link.rate if s.rate_layer == "l1" else link.rate * frame / (frame + link.overhead) for link in first)


def _compile_stream(s: Stream, node_index: dict, links: dict, port_index: dict) -> dict[str, Any]:
    for role, name in (("talker", s.talker), ("listener", s.listener)):
        if name not in node_index:
            raise ValueError(f"stream {s.name}: {role} " + _known("node", name, node_index))
    # The paths form a tree: a shared beginning is one hop, so a frame is copied where paths
    # part. With FRER, copies are made at the sequence generation node: from there on each
    # path carries its own copy, even over a link the paths share (e.g. a talker's one NIC).
    # A recovery function that keeps the R-TAG (`keep_tag`) replicates again: it ends a
    # segment of the paths, and paths that take the same links from one such node (or the
    # generation) to the next are one member stream there, one copy; only the last segment,
    # to the listener, is one copy per path.
    split_at = s.frer.sequence_generation if s.frer else None
    hops: list[dict] = []
    children: dict[int, list[int]] = {-1: []}
    trie: dict[tuple, int] = {}
    for number, path in enumerate(s.paths or [shortest_path(s, links)]):
        at, parent, split = s.talker, -1, False
        ends = _segment_ends(s, path, links)
        for i, link_name in enumerate(path):
            link = links.get(link_name)
            if link is None:
                raise ValueError(f"stream {s.name}: path {path}: " + _known("link", link_name, links))
            if at not in (link.a, link.b):
                raise ValueError(f"stream {s.name}: path {path}: link {link_name} does not touch {at!r}")
            split = split or at == split_at
            port = port_index[(link_name, at)]
            at = link.b if at == link.a else link.a
            end = next((e for e in ends if e >= i), None)
            member = number if end is None else tuple(path[i:end + 1])
            key = (parent, port, member) if split else (parent, port)
            if key not in trie:
                trie[key] = len(hops)
                hops.append({"port": port, "next": []})
                children[len(hops) - 1] = []
                children[parent].append(len(hops) - 1)
            parent = trie[key]
        if at != s.listener:
            raise ValueError(f"stream {s.name}: path {path} ends at {at!r}, not at the listener {s.listener!r}")
    for i, hop in enumerate(hops):
        hop["next"] = children[i]
    spec: dict[str, Any] = {
        "name": s.name, "source": node_index[s.talker], "destination": node_index[s.listener],
        "class": s.pcp, "frame_size": _frame_size(s.frame_size), "pattern": _pattern(s.pattern),
        "rate": s.rate, "rate_counts_l1": s.rate_layer == "l1", "start": s.start, "count": s.count,
        "hops": hops, "first_hops": children[-1],
    }
    if s.frer is not None:
        gen = s.frer.sequence_generation
        if gen not in node_index:
            raise ValueError(f"stream {s.name}: sequence_generation " + _known("node", gen, node_index))
        _check_recovery_placement(s, s.paths or [shortest_path(s, links)], links)
        spec["generation"] = node_index[gen]
        spec["rtag_bytes"] = s.frer.rtag_bytes
        spec["recovery"] = [_compile_recovery(s.name, r, node_index, links, port_index) for r in s.frer.sequence_recovery]
        arrivals = _arrivals(s, s.paths or [shortest_path(s, links)], links)
        spec["filters"] = [_compile_filter(s.name, number, f, arrivals, node_index, links, port_index)
                           for number, f in enumerate(s.frer.stream_filters)]
    for name in ("qcn", "bcn", "fecn"):
        if getattr(s, name) is not None:
            spec[name] = getattr(s, name).model_dump()
    return spec


def _segment_ends(s: Stream, path: list[str], links: dict) -> list[int]:
    """The indices of the links of `path` over which a numbered frame arrives at a recovery
    function that keeps its R-TAG (and replicates it again)."""
    if s.frer is None or not any(r.keep_tag for r in s.frer.sequence_recovery):
        return []
    ends, at, numbered = [], s.talker, s.talker == s.frer.sequence_generation
    for i, link_name in enumerate(path):
        link = links.get(link_name)
        if link is None or at not in (link.a, link.b):
            return ends  # the caller names the broken path
        at = link.b if at == link.a else link.a
        numbered |= at == s.frer.sequence_generation
        if numbered and any(r.keep_tag and r.node == at and r.ingress in (None, link_name)
                            for r in s.frer.sequence_recovery):
            ends.append(i)
    return ends


def _check_recovery_placement(s: Stream, paths: list[list[str]], links: dict) -> None:
    """ValueError naming a sequence recovery function (without take_no_sequence) that every
    frame reaches without a sequence number, so that it would discard every one (802.1CB
    7.4.3.4): one placed before the sequence generation node on every path, or after another
    recovery function took the R-TAG off (one without individual_recovery or keep_tag). The frames are followed as the simulator moves them:
    at each node, generation first, then the recovery functions in the file's order."""
    recoveries = s.frer.sequence_recovery
    numbered_at: dict[int, bool] = {}  # recovery function -> whether a numbered frame reaches it
    for path in paths:
        at, via, numbered = s.talker, None, False
        for link_name in [None, *path]:
            if link_name is not None:
                link = links[link_name]
                at, via = (link.b if at == link.a else link.a), link_name
            numbered |= at == s.frer.sequence_generation
            for i, r in enumerate(recoveries):
                if r.node != at or r.ingress not in (None, via):
                    continue
                numbered_at[i] = numbered_at.get(i, False) or numbered
                if not numbered and not r.take_no_sequence:
                    break  # discarded here
                numbered = numbered and (r.individual_recovery or r.keep_tag)  # else the R-TAG is taken off
            else:
                continue
            break
    for i, numbered in numbered_at.items():
        r = recoveries[i]
        if not numbered and not r.take_no_sequence:
            where = f"{r.node!r}" + (f" (ingress {r.ingress})" if r.ingress else "")
            raise ValueError(f"stream {s.name}: sequence_recovery at {where} would discard every frame: none "
                             f"reaches it with a sequence number (sequence_generation at "
                             f"{s.frer.sequence_generation!r} comes after it on every path, or a recovery before "
                             "it took the R-TAG off); place it after the generation, give the recovery before it "
                             "keep_tag: true, or set take_no_sequence: true")


def _arrivals(s: Stream, paths: list[list[str]], links: dict) -> dict[str, set[str]]:
    """Per node, the links over which the stream's frames arrive there (paths already checked)."""
    arrivals: dict[str, set[str]] = {}
    for path in paths:
        at = s.talker
        for link_name in path:
            link = links[link_name]
            at = link.b if at == link.a else link.a
            arrivals.setdefault(at, set()).add(link_name)
    return arrivals


def _compile_filter(stream: str, number: int, f: StreamFilter, arrivals: dict[str, set[str]], node_index: dict,
                    links: dict, port_index: dict) -> dict[str, Any]:
    """A stream filter's spec: its node's index and, for a filter over one link, the port that
    sends over it towards the node."""
    owner = f"stream {stream}: stream_filters {number}"
    if f.node not in node_index:
        raise ValueError(f"{owner}: " + _known("node", f.node, node_index))
    over = sorted(arrivals.get(f.node, ()))
    if not over:
        raise ValueError(f"{owner}: no frame of the stream arrives at {f.node!r} (it arrives at: "
                         f"{', '.join(sorted(arrivals))})")
    ingress = None
    if f.link is not None:
        if f.link not in over:
            raise ValueError(f"{owner}: link {f.link!r} is not one the stream arrives at {f.node!r} over "
                             f"(it arrives over: {', '.join(over)})")
        link = links[f.link]
        ingress = port_index[(f.link, link.b if f.node == link.a else link.a)]
    meter = None if f.rate is None else {"rate": f.rate, "burst": f.burst}
    return {"node": node_index[f.node], "ingress": ingress, "max_sdu": f.max_sdu, "meter": meter}


def _compile_recovery(stream: str, r: Recovery, node_index: dict, links: dict, port_index: dict) -> dict[str, Any]:
    if r.node not in node_index:
        raise ValueError(f"stream {stream}: sequence_recovery " + _known("node", r.node, node_index))
    ingress = None
    if r.ingress is not None:
        link = links.get(r.ingress)
        if link is None:
            raise ValueError(f"stream {stream}: sequence_recovery ingress " + _known("link", r.ingress, links))
        if r.node not in (link.a, link.b):
            raise ValueError(f"stream {stream}: ingress link {r.ingress} does not touch node {r.node!r}")
        far = link.b if r.node == link.a else link.a
        ingress = port_index[(r.ingress, far)]
    return {
        "node": node_index[r.node], "ingress": ingress, "algorithm": r.algorithm,
        "history_length": r.history_length, "reset_timeout": r.reset_timeout_ps(),
        "individual": r.individual_recovery, "take_no_sequence": r.take_no_sequence, "keep_tag": r.keep_tag,
        "guard": None if r.guard is None else r.guard.model_dump(),
    }


def _frame_size(fs: int | Exponential | UniformSize) -> dict[str, Any]:
    if isinstance(fs, int):
        return {"dist": "fixed", "bytes": fs}
    if isinstance(fs, UniformSize) and fs.min > fs.max:
        raise ValueError(f"frame_size uniform min {fs.min} is above max {fs.max}")
    return fs.model_dump()


def _pattern(p: str | OnOff) -> dict[str, Any]:
    if isinstance(p, OnOff):
        return {"kind": "on_off", "on": p.on, "off": p.off}
    return {"kind": p}
