"""The fail-operational test (seed 001, section 6.2: cut a path under load, lose nothing) as
one run on a testbed: a stream from talker to listener at a given rate; path a cut at t1 and
restored, path b cut at t2 and restored; the listener's per-interval accounting (frerlab gen
recv), the data plane counters, and a verdict.

Times count from the stream's first frame at the listener. With FRER nothing may be lost or
duplicated; the control group (path a only) loses what is sent while path a is down. A
result directory holds meta.json, the raw reports of both ends (written by the tools
themselves, first) and result.json (derived from them).
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from frerlab import __version__
from frerlab.errors import UsageError
from frerlab.frer import COUNTER_NAMES
from frerlab.netns import link_info
from frerlab.testbed import bed, plan
from frerlab.traffic.across import stream_across
from frerlab.traffic.record import write_atomic


@dataclass(frozen=True)
class Schedule:
    """The stream and the cuts, in seconds from the first frame at the listener."""

    rate_fps: int = 5000
    frame_size: int = 512
    duration_s: float = 6.0
    cut_a: tuple[float, float] = (1.5, 3.0)
    cut_b: tuple[float, float] = (4.0, 5.0)
    interval_s: float = 0.25

    def check(self) -> None:
        """UsageError naming the first bad value and what would be valid."""
        if not 1 <= self.rate_fps <= 1_000_000:
            raise UsageError(f"rate {self.rate_fps} frames/s is out of range (1..1000000)")
        if not 64 <= self.frame_size <= 1518:
            raise UsageError(f"frame size {self.frame_size} is out of range (64..1518 bytes)")
        if not 0.05 <= self.interval_s <= self.duration_s:
            raise UsageError(f"interval {self.interval_s} s is out of range (0.05..duration {self.duration_s} s)")
        events = [0.0, *self.cut_a, *self.cut_b, self.duration_s]
        if any(b <= a for a, b in zip(events, events[1:])):
            raise UsageError(f"cuts a {self.cut_a} and b {self.cut_b} must come one after the other, "
                             f"inside the stream (0 < cut < restore < next cut < restore < {self.duration_s} s)")

    def events(self) -> list[tuple[float, str, bool]]:
        """(time, path, up) in order."""
        return [(self.cut_a[0], "a", False), (self.cut_a[1], "a", True),
                (self.cut_b[0], "b", False), (self.cut_b[1], "b", True)]

    def phases(self) -> list[tuple[str, float, float]]:
        """(label, start, end) of the five phases."""
        edges = [0.0, *self.cut_a, *self.cut_b, self.duration_s]
        labels = ["both paths", "path a cut", "both paths", "path b cut", "both paths"]
        return [(label, edges[i], edges[i + 1]) for i, label in enumerate(labels)]


def run(tb_name: str, schedule: Schedule, out_dir: Path) -> dict:
    """Runs the test on testbed `tb_name`; writes and returns the result."""
    schedule.check()
    state = bed.read_state(tb_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"test": "failover", "frerlab": __version__, "kernel": platform.release(), "host": platform.node(),
            "testbed": state["settings"], "schedule": asdict(schedule), "start": time.time()}
    write_atomic(out_dir / "meta.json", json.dumps(meta, indent=1))
    happened: list[dict] = []
    listener = state["namespaces"]["listener"]

    def listener_rx() -> int:
        return link_info(listener, plan.HOST_PORT)["stats64"]["rx"]["packets"]

    baseline = listener_rx()

    def cut_and_restore() -> None:
        deadline = time.monotonic() + 30
        while listener_rx() == baseline:
            if time.monotonic() > deadline:
                raise RuntimeError("no frame reached the listener within 30 s")
            time.sleep(0.002)
        t0 = time.monotonic()
        for at, path, up in schedule.events():
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            bed.impair(tb_name, path, down=not up)
            happened.append({"t_s": round(time.monotonic() - t0, 4), "path": path, "up": up})

    try:
        reports = stream_across(bed.prefix(tb_name, "talker"), bed.prefix(tb_name, "listener"), plan.LISTENER_IP,
                                ["--rate-fps", str(schedule.rate_fps), "--frame-size", str(schedule.frame_size),
                                 "--duration", str(schedule.duration_s + 0.5)],
                                out_dir, recv_args=["--interval", str(schedule.interval_s)], during=cut_and_restore,
                                timeout_s=schedule.duration_s + 60)
    finally:
        for path in ("a", "b"):  # never leave a path cut
            bed.impair(tb_name, path, down=False)
    counters = {role: _recovery_totals(bed.status_dataplane(tb_name, role))
                for role in state["dataplanes"]}
    result = analyse(reports.stream(), reports.sender, schedule, state["settings"]["mode"], happened, counters)
    result["meta"] = meta
    write_atomic(out_dir / "result.json", json.dumps(result, indent=1))
    return result


def _recovery_totals(snapshot: dict) -> dict:
    """Per stream handle: the sequence recovery counters (passed, discarded, lost, ...)."""
    out = {}
    for st in snapshot["streams"]:
        for r in st["recovery"]:
            if r["function"] == "sequence":
                out[str(st["handle"])] = {k: r[k] for k in COUNTER_NAMES}
    return out


def analyse(stream: dict, sender: dict, schedule: Schedule, mode: str, happened: list[dict],
            counters: dict) -> dict:
    """The per-interval and per-phase table and the verdict, from the raw reports."""
    fps = sender["achieved_fps"] or schedule.rate_fps
    intervals = [{"t_s": round(i["start_ns"] / 1e9, 3), "sent": round(fps * schedule.interval_s),
                  "received": i["received"], "lost": i["lost"], "duplicates": i["duplicates"]}
                 for i in stream["intervals"]]
    phases = []
    for label, start, end in schedule.phases():
        inside = [i for i in intervals if start <= i["t_s"] + schedule.interval_s / 2 < end]
        phases.append({"phase": label, "from_s": start, "to_s": end,
                       "sent": round(fps * (end - start)),
                       **{k: sum(i[k] for i in inside) for k in ("received", "lost", "duplicates")}})
    cut_a_frames = round(fps * (schedule.cut_a[1] - schedule.cut_a[0]))
    lost, dups = stream["lost"], stream["duplicates"]
    if mode == "frer":
        passed = lost == 0 and dups == 0
        verdict = ("PASS: fail-operational, nothing lost or duplicated while either path was cut" if passed else
                   f"FAIL: {lost} lost and {dups} duplicated with FRER")
    else:
        passed = lost >= cut_a_frames // 2
        verdict = (f"as expected for the control group: {lost} frames lost, about the {cut_a_frames} sent while "
                   "path a was cut" if passed else
                   f"UNEXPECTED: the control group lost only {lost} frames of the {cut_a_frames} sent into the cut")
    return {"mode": mode, "sent": sender["frames_sent"], "expected": stream["expected"], "received": stream["unique"],
            "lost": lost, "duplicates": dups, "events": happened, "phases": phases, "intervals": intervals,
            "dataplane_recovery": counters, "verdict_met": passed, "verdict": verdict}


def summary(result: dict) -> str:
    """A readable summary: totals, the phase table and the verdict."""
    lines = [f"{result['mode']}: sent {result['expected']}, received {result['received']}, "
             f"lost {result['lost']}, duplicated {result['duplicates']}",
             f"  {'phase':<12}{'from s':>8}{'to s':>7}{'sent':>8}{'received':>10}{'lost':>7}{'dup':>6}"]
    for p in result["phases"]:
        lines.append(f"  {p['phase']:<12}{p['from_s']:>8.2f}{p['to_s']:>7.2f}{p['sent']:>8}"
                     f"{p['received']:>10}{p['lost']:>7}{p['duplicates']:>6}")
    lines.append(f"  {result['verdict']}")
    return "\n".join(lines)
