"""A topology as a simulator scenario (the vocabulary of frerlab.sim.schema), and its run.

End stations become hosts and bridges switches; a link keeps its name, rate, delay, queue (the
egress queue_limit of both directions) and Bernoulli loss; a cut becomes a failure of its link,
and so does a loss burst of p 1 (the simulator has no time-limited random loss: a burst of
p < 1 is refused here and taken by `net analyse` only). Each stream's paths are its routes
(frerlab.net.plan) and its FRER functions those of the nodes (frerlab.net.nodes): the
generation node, then at each recovery node the individual recovery functions and the
sequence recovery function, which keeps the R-TAG (`keep_tag`) everywhere but at the last.
Quantities are written exactly, with the largest unit that keeps them whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from frerlab.errors import UsageError
from frerlab.net.nodes import node_functions
from frerlab.net.topology import Burst, Topology, exact_rate, exact_time
from frerlab.units import time_text

#: Intervals of the simulator's time series per run.
SERIES_INTERVALS = 10


def scenario_data(topo: Topology) -> dict[str, Any]:
    """The simulator scenario of `topo`, as plain data a scenario file holds. Raises
    UsageError for a loss burst the simulator cannot run (p < 1)."""
    failures: dict[str, list[dict[str, str]]] = {}
    for fault in topo.faults:
        if isinstance(fault, Burst) and fault.p < 1:
            raise UsageError(f"{topo.name}: burst on {fault.burst} from {time_text(fault.start)} with p {fault.p:g}: "
                             "the simulator has no time-limited random loss; net sim takes bursts of p 1 (every "
                             "frame lost, as a cut), net analyse any p")
        down, up = (fault.down, fault.up) if not isinstance(fault, Burst) else (fault.start, fault.end)
        failures.setdefault(fault.link, []).append({"down": exact_time(down), "up": exact_time(up)})
    links = []
    for link in topo.links:
        entry: dict[str, Any] = {"name": link.name, "a": link.a, "b": link.b, "rate": exact_rate(link.rate)}
        if link.delay:
            entry["delay"] = exact_time(link.delay)
        if link.queue is not None:
            entry["egress"] = {"queue_limit": link.queue}
        if link.p > 0:
            entry["loss"] = {"model": "bernoulli", "p": link.p}
        if link.name in failures:
            entry["failures"] = sorted(failures[link.name], key=lambda f: f["down"])
        links.append(entry)
    functions = node_functions(topo)
    streams = []
    for s in topo.streams:
        plan = topo.plans[s.name]
        entry = {"name": s.name, "talker": s.talker, "listener": s.listener, "pcp": s.pcp,
                 "frame_size": s.frame_size, "rate": exact_rate(s.rate), "rate_layer": "l2",
                 "paths": [list(r) for r in plan.routes]}
        if s.start:
            entry["start"] = exact_time(s.start)
        if s.count is not None:
            entry["count"] = s.count
        if plan.generation is not None:
            recovery = []
            for node in plan.recovery:
                for r in functions[node].recovery:
                    if r.stream != s.name:
                        continue
                    item: dict[str, Any] = {"node": node, "algorithm": r.algorithm, "history_length": r.history_length}
                    if r.ingress:
                        item["ingress"] = r.ingress[0]
                    if r.individual_recovery:
                        item["individual_recovery"] = True
                    if r.reset_timeout is not None:
                        item["reset_timeout"] = (r.reset_timeout if isinstance(r.reset_timeout, str)
                                                 else exact_time(r.reset_timeout))
                    if r.keep_tag:
                        item["keep_tag"] = True
                    recovery.append(item)
            entry["frer"] = {"sequence_generation": plan.generation, "sequence_recovery": recovery}
        streams.append(entry)
    return {
        "name": topo.name,
        "description": topo.description or f"compiled from the topology {topo.name} by frerlab net",
        "seed": topo.seed, "duration": exact_time(topo.duration),
        "interval": exact_time(max(1, topo.duration // SERIES_INTERVALS)),
        "nodes": {name: {"kind": "host" if node.kind == "end_station" else "switch",
                         **({"processing_delay": exact_time(node.processing_delay)} if node.processing_delay else {})}
                  for name, node in topo.nodes.items()},
        "links": links, "streams": streams,
    }


def run(topo: Topology, allow_long: bool = False):
    """Runs the topology's scenario; the frerlab.sim.api.SimResult."""
    from frerlab.sim import api

    return api.run(scenario_data(topo), allow_long=allow_long)


def summary(topo: Topology, result, prediction: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One record per stream: sent, delivered (distinct frames), lost, duplicates, the
    delivered fraction and, with `prediction` (frerlab.net.analyse.analyse), the predicted one."""
    rows = []
    for rec in result.streams.to_dict("records"):
        row = {"stream": rec["stream"], "sent": int(rec["sent"]), "delivered": int(rec["received"]),
               "lost": int(rec["lost"]), "duplicates": int(rec["duplicates"]),
               "delivered_ratio": rec["received"] / rec["sent"] if rec["sent"] else None}
        if prediction is not None:
            row["predicted_ratio"] = prediction["streams"][rec["stream"]]["delivery"]
        rows.append(row)
    return rows


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, each mapping of scalars and each list of scalars on one line."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def flat(value: Any) -> bool:
        items = value.values() if isinstance(value, dict) else value
        return all(not isinstance(v, (dict, list)) for v in items)

    Dumper.add_representer(dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(),
                                                                  flow_style=flat(v)))
    Dumper.add_representer(list, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=flat(v)))
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, width=120)


def write_inputs(source: str, data: dict[str, Any], topo: Topology, out: Path) -> None:
    """Keeps the topology as run (`data`: the file's, overrides applied; `source` says where it
    came from) and the compiled scenario beside a run's results."""
    from frerlab.files import write_atomic

    write_atomic(out / "topology.yaml", f"# {' '.join(source.splitlines())}\n" + dump_yaml(data))
    write_atomic(out / "scenario.yaml", dump_yaml(scenario_data(topo)))
