"""The simulator against the testbed: one scenario (a stream, its FRER configuration, a cut of
each path and Bernoulli loss on either) run in both worlds, and each metric of both side by
side with the tolerance within which they must agree.

The scenario file is small YAML, validated here (`load_scenario`). The testbed run is the
fail-over test (`frerlab.testbed.failover`: sw1 replicates, sw2 eliminates, path a then path b
cut while the stream flows) on a temporary testbed that is always taken down, with the loss set
on the paths first; the simulator runs the same topology, stream, recovery and impairments
(`sim_scenario`). Raw results are written first (DIR/sim, DIR/testbed), then
DIR/comparison.json and DIR/comparison.txt, which `compare` derives from them alone.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from frerlab.errors import UsageError
from frerlab.files import write_atomic
from frerlab.names import pydantic_name
from frerlab.yamlfile import read_mapping, validate

#: The testbed's recovery at sw2 (frerlab.testbed.plan.Recovery): vector, reset timeout 1 s.
ALGORITHM, RESET_TIMEOUT_MS = "vector", 1000
#: How much later than the schedule a cut or restore can take effect on the testbed (the
#: listener's first frame is polled every 2 ms, the impairment is changed by a process call):
#: each of the four edges moves this many seconds of frames from one path count to the other.
EDGE_SLACK_S = 0.025
#: A random count (Bernoulli loss) may differ between the worlds by this many standard
#: deviations of the difference of two such counts.
SIGMAS = 4
#: The failover stream runs this much longer than its schedule (frerlab.testbed.failover.run).
TAIL_S = 0.5
#: Latency percentiles shown (informational: the simulator's links are wires, the testbed's
#: are veths through software shapers and schedulers).
LATENCY = ((50.0, "p50"), (99.0, "p99"), (100.0, "max"))
SHAPE = "a crosscheck scenario is a mapping with name, stream, paths, link, frer (docs/crosscheck.md)"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamSpec(_Model):
    """The stream: frames per second, Ethernet frame bytes, seconds of its schedule."""

    rate_fps: int = Field(2000, ge=1, le=100_000)
    frame_size: int = Field(512, ge=64, le=1518)
    duration: float = Field(3.0, ge=1, le=60)


class PathSpec(_Model):
    """One path's impairments: a cut [down, up] in seconds from the stream's start, and the
    probability each frame sw1 sends into it is lost."""

    cut: tuple[float, float]
    loss: float = Field(0.0, ge=0, le=0.5)


class Paths(_Model):
    a: PathSpec
    b: PathSpec


class LinkSpec(_Model):
    """The rate of every link (the testbed's --rate)."""

    rate: str = "100Mbps"


class FrerSpec(_Model):
    """sw2's sequence recovery (vector, reset timeout 1000 ms: the testbed's)."""

    history_length: int = Field(32, ge=2, le=1024)


class CrossScenario(_Model):
    """A whole crosscheck file."""

    name: pydantic_name("scenario")
    description: str = ""
    seed: int = Field(1, ge=0, lt=2**63)
    stream: StreamSpec = StreamSpec()
    paths: Paths
    link: LinkSpec = LinkSpec()
    frer: FrerSpec = FrerSpec()

    def schedule(self):
        """The fail-over test's schedule of this scenario (validated: UsageError naming it)."""
        from frerlab.testbed.failover import Schedule

        s = Schedule(self.stream.rate_fps, self.stream.frame_size, self.stream.duration, self.paths.a.cut,
                     self.paths.b.cut, interval_s=min(0.25, self.stream.duration))
        s.check()
        return s

    def frames(self) -> int:
        """Data frames the stream sends (its schedule plus the fail-over test's tail)."""
        return round(self.stream.rate_fps * (self.stream.duration + TAIL_S))


def parse_scenario(data: object, source: str) -> CrossScenario:
    """A validated scenario; UsageError naming the bad field and what would be valid."""
    from frerlab.testbed import bed

    sc = validate(CrossScenario, data, source, SHAPE)
    for where, check in (("paths", sc.schedule),
                         ("link", bed.Settings(name="xc", rate=sc.link.rate, history_length=sc.frer.history_length).check)):
        try:
            check()
        except UsageError as err:
            raise UsageError(f"{source}: {where}: {err}") from None
    return sc


def load_scenario(path: str | Path) -> CrossScenario:
    """Reads and validates a crosscheck YAML file."""
    return parse_scenario(read_mapping(path, "crosscheck scenario", SHAPE), str(path))


def sim_scenario(sc: CrossScenario) -> dict[str, Any]:
    """The simulator scenario of `sc`: talker - sw1 - links a, b - sw2 - listener."""
    def path_link(name: str, spec: PathSpec) -> dict:
        link = {"name": name, "a": "sw1", "b": "sw2", "rate": sc.link.rate, "delay": "1us",
                "failures": [{"down": f"{spec.cut[0]}s", "up": f"{spec.cut[1]}s"}]}
        if spec.loss:
            link["loss"] = {"model": "bernoulli", "p": spec.loss}
        return link

    return {
        "name": sc.name, "description": sc.description, "seed": sc.seed,
        "duration": f"{sc.stream.duration + TAIL_S + 1}s", "interval": "250ms",
        "nodes": {"talker": {"kind": "host"}, "sw1": {"kind": "switch"}, "sw2": {"kind": "switch"},
                  "listener": {"kind": "host"}},
        "links": [{"name": "talker-sw1", "a": "talker", "b": "sw1", "rate": sc.link.rate, "delay": "1us"},
                  path_link("a", sc.paths.a), path_link("b", sc.paths.b),
                  {"name": "sw2-listener", "a": "sw2", "b": "listener", "rate": sc.link.rate, "delay": "1us"}],
        "streams": [{
            "name": "stream", "talker": "talker", "listener": "listener", "frame_size": sc.stream.frame_size,
            "rate": f"{sc.stream.rate_fps * sc.stream.frame_size * 8}bps", "count": sc.frames(),
            "paths": [["talker-sw1", "a", "sw2-listener"], ["talker-sw1", "b", "sw2-listener"]],
            "frer": {"sequence_generation": "sw1", "sequence_recovery": [{
                "node": "sw2", "algorithm": ALGORITHM, "history_length": sc.frer.history_length,
                "reset_timeout": f"{RESET_TIMEOUT_MS}ms"}]},
        }],
    }


def run_sim(sc: CrossScenario, out: Path) -> None:
    """Runs the simulator side; writes its raw results to `out`."""
    from frerlab import sim

    sim.run(sim_scenario(sc)).save(out)


def run_testbed(sc: CrossScenario, out: Path) -> None:
    """Runs the testbed side on a temporary testbed (always taken down, also on Ctrl-C);
    writes its raw results to `out`."""
    from frerlab.testbed import bed, failover

    settings = bed.Settings(name=f"xc{os.getpid() % 10**7}", rate=sc.link.rate,
                            history_length=sc.frer.history_length)
    bed.up(settings)
    try:
        for name, spec in (("a", sc.paths.a), ("b", sc.paths.b)):
            if spec.loss:
                bed.impair(settings.name, name, direction="forward", loss=spec.loss)
        failover.run(settings.name, sc.schedule(), out)
    finally:
        bed.down(settings.name)


def _latency(summary: dict | None, percentile: float) -> float | None:
    if not summary:
        return None
    return next((v for p, v in summary["percentiles"] if p == percentile), None)


def _sim_metrics(out: Path) -> dict[str, Any]:
    report = json.loads((out / "report.json").read_text())
    (stream,) = report["streams"]
    (rec,) = [r for r in report["frer"] if r["node"] == "sw2"]
    latency = {f"latency_{label}_us": None if (v := stream.get(f"latency_{label}_ns")) is None else v / 1000
               for _, label in LATENCY}
    return {"sent": stream["sent"], "delivered": stream["received"], "lost": stream["lost"],
            "duplicates": stream["duplicates"], "eliminated": rec["discarded_packets"], **latency}


def _testbed_metrics(out: Path) -> dict[str, Any]:
    result = json.loads((out / "result.json").read_text())
    (stream,) = json.loads((out / "recv.json").read_text())["streams"]
    latency = {f"latency_{label}_us": None if (v := _latency(stream.get("latency_ns"), p)) is None else v / 1000
               for p, label in LATENCY}
    return {"sent": result["sent"], "delivered": result["received"], "lost": result["lost"],
            "duplicates": result["duplicates"], "eliminated": result["elimination"]["discarded"],
            "end_probes": result["end_probes_sent"], **latency}


def tolerances(sc: CrossScenario, end_probes: int) -> dict[str, tuple[int | None, str]]:
    """Per metric: how far the two worlds may differ (None: not compared) and why."""
    timing = math.ceil(sc.stream.rate_fps * EDGE_SLACK_S * 4)
    p = sc.paths.a.loss + sc.paths.b.loss
    random = math.ceil(SIGMAS * math.sqrt(2 * sc.frames() * p))
    edges = f"{timing} (4 cut edges x {EDGE_SLACK_S * 1000:g} ms of frames)"
    noise = f" + {random} ({SIGMAS} sigma of two Bernoulli counts)" if random else ""
    # the cuts never overlap (Schedule.check): a frame is lost only to loss on the path left up
    lost = (math.ceil(timing * p) + random,
            f"{edges} x {p:g} (the loss on the path left up){noise}" if p else
            "0 (the cuts do not overlap and no path loses frames: FRER loses nothing)")
    return {
        "sent": (1, "1 (the pacing's rounding)"),
        "delivered": lost,
        "lost": lost,
        "duplicates": (0, "0 (neither world may pass a duplicate)"),
        "eliminated": (timing + random + end_probes,
                       f"{edges}{noise} + {end_probes} (the testbed's end-of-stream probes, eliminated too)"),
        **{f"latency_{label}_us": (None, "not compared: the simulator's links are wires, the testbed's are "
                                         "veths through software shapers") for _, label in LATENCY},
    }


def compare(sc: CrossScenario, out: Path) -> dict[str, Any]:
    """The comparison of the raw results in `out`/sim and `out`/testbed, per metric."""
    sim_m, tb_m = _sim_metrics(out / "sim"), _testbed_metrics(out / "testbed")
    rows = []
    for metric, (tol, why) in tolerances(sc, tb_m["end_probes"]).items():
        a, b = sim_m[metric], tb_m[metric]
        agrees = None if tol is None or a is None or b is None else abs(a - b) <= tol
        rows.append({"metric": metric, "sim": a, "testbed": b, "tolerance": tol, "tolerance_why": why,
                     "agrees": agrees})
    return {"scenario": sc.name, "rows": rows,
            "agree": all(r["agrees"] is not False for r in rows)}


def table(comparison: dict[str, Any]) -> str:
    """The comparison as a text table."""
    def cell(v: Any) -> str:
        return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)

    lines = [f"crosscheck {comparison['scenario']}: simulator vs testbed",
             f"  {'metric':<18}{'sim':>10}{'testbed':>10}{'tolerance':>11}  agrees"]
    for r in comparison["rows"]:
        verdict = {True: "yes", False: "NO", None: "n/a"}[r["agrees"]]
        lines.append(f"  {r['metric']:<18}{cell(r['sim']):>10}{cell(r['testbed']):>10}"
                     f"{cell(r['tolerance']):>11}  {verdict}")
    lines += ["  tolerances:"] + [f"    {r['metric']}: {r['tolerance_why']}" for r in comparison["rows"]
                                  if r["tolerance"] is not None]
    lines.append("  the counts agree" if comparison["agree"] else "  the counts DO NOT agree")
    return "\n".join(lines)


def run(sc: CrossScenario, out: Path) -> dict[str, Any]:
    """Runs both worlds (raw results first), then writes and returns the comparison."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "scenario.json", sc.model_dump_json(indent=1))
    run_sim(sc, out / "sim")
    run_testbed(sc, out / "testbed")
    comparison = compare(sc, out)
    write_atomic(out / "comparison.json", json.dumps(comparison, indent=1))
    write_atomic(out / "comparison.txt", table(comparison) + "\n")
    return comparison
