"""The fail-operational test (seed 001, section 6.2: cut a path under load, lose nothing) as
one run on a testbed: a stream from talker to listener at a given rate; path a cut at t1 and
restored, path b cut at t2 and restored; the listener's per-interval accounting (frerlab gen
recv), the data plane counters, and a verdict.

Times count from the stream's first frame at the listener. With FRER nothing may be lost or
duplicated; the control group (path a only) loses what is sent while path a is down. A
result directory holds meta.json, the raw reports of both ends, the testbed's status before
and after the stream (counters.json) and tcpdump's captures at the talker, on both paths and at
the listener (frerlab.testbed.timeline), all written first, then timeline.json (frames per ms
sent, on each path and after elimination, the cuts marked) and result.json (derived from them;
its `timeline` names the timeline's file).

Every count is exact. The listener counts per range of sequence numbers (`gen recv
--interval-frames`); the generator paces exactly, so each range is a slice of the send schedule
and a phase holds the frames due in it: per phase sent = received + lost, and the phases sum
to the stream's totals (a loss is counted in the phase its frames were due, not where the gap
was seen). From the counters, per path: frames sw1 sent into it = frames it delivered to sw2 +
frames dropped on it (the path element's drops, the queue and link drops of both its links);
and after elimination (FRER): frames the recovery passed = frames the talker put on the wire
(data + end-of-stream probes) - frames lost on both paths (those that never reached the
listener).
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
from frerlab.testbed import bed, plan, timeline
from frerlab.traffic.across import stream_across
from frerlab.files import write_atomic


#: Longest failover stream, in seconds.
MAX_DURATION_S = 3600
#: The plan's handle of the stream talker -> listener.
STREAM = 1
#: The stream's UDP port.
PORT = 5555
#: The path element's drop counters (frerlab.impair).
ELEMENT_DROPS = ("dropped_down", "dropped_loss", "dropped_burst", "redirect_errors")


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
        if not 1 <= self.duration_s <= MAX_DURATION_S:
            raise UsageError(f"duration {self.duration_s} s is out of range (1..{MAX_DURATION_S} s)")
        if not 0.05 <= self.interval_s <= self.duration_s:
            raise UsageError(f"interval {self.interval_s} s is out of range (0.05..duration {self.duration_s} s)")
        events = [0.0, *self.cut_a, *self.cut_b, self.duration_s]
        if not all(b > a for a, b in zip(events, events[1:])):  # also false for NaN
            raise UsageError(f"cuts a {self.cut_a} and b {self.cut_b} must come one after the other, "
                             f"inside the stream (0 < cut < restore < next cut < restore < {self.duration_s} s)")

    def bin_frames(self) -> int:
        """Sequence numbers per interval: the frames due in `interval_s`."""
        return max(1, round(self.rate_fps * self.interval_s))

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
    baseline = bed.received(listener)
    before = bed.status(tb_name)  # the testbed may have carried traffic before: count the difference

    def cut_and_restore() -> None:
        t0 = bed.first_frame(listener, baseline)
        for at, path, up in schedule.events():
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            called = time.time_ns()  # the captures' clock (CLOCK_REALTIME)
            bed.impair(tb_name, path, down=not up)
            happened.append({"t_s": round(time.monotonic() - t0, 4), "path": path, "up": up,
                             "called_ns": called, "returned_ns": time.time_ns()})

    try:
        with timeline.capturing(tb_name, out_dir) as captured:
            reports = stream_across(bed.prefix(tb_name, "talker"), bed.prefix(tb_name, "listener"), plan.LISTENER_IP,
                                    ["--rate-fps", str(schedule.rate_fps), "--frame-size", str(schedule.frame_size),
                                     "--duration", str(schedule.duration_s + 0.5)],
                                    out_dir, recv_args=["--interval", str(schedule.interval_s),
                                                        "--interval-frames", str(schedule.bin_frames())],
                                    port=PORT, during=cut_and_restore, timeout_s=schedule.duration_s + 60)
    finally:
        for path in ("a", "b"):  # never leave a path cut
            bed.impair(tb_name, path, down=False)
    counters = {"before": before, "after": bed.status(tb_name)}
    write_atomic(out_dir / "counters.json", json.dumps(counters, indent=1))
    settings = state["settings"]
    timeline.derive(out_dir, captured, happened, PORT, settings)
    result = analyse(reports.stream(), reports.sender, schedule, settings, happened, counters)
    result["meta"] = meta
    result["timeline"] = "timeline.json"
    write_atomic(out_dir / "result.json", json.dumps(result, indent=1))
    return result


def recovery_totals(snapshot: dict) -> dict:
    """Per stream handle: the sequence recovery counters (passed, discarded, lost, ...)."""
    out = {}
    for st in snapshot["streams"]:
        for r in st["recovery"]:
            if r["function"] == "sequence":
                out[str(st["handle"])] = {k: r[k] for k in COUNTER_NAMES}
    return out


def _port_total(snapshot: dict, port: str, counter: str) -> int:
    """A per stream and port counter of `port`, summed over the node's streams."""
    return sum(p[counter] for st in snapshot["streams"] for p in st["ports"] if p["port"] == port)


def _link_end(status: dict, host: str, interface: str) -> dict:
    (end,) = [e for link in status["links"] for e in link["ends"] if (e["host"], e["interface"]) == (host, interface)]
    return end


def _path_counters(status: dict, mode: str) -> dict[str, dict[str, int]]:
    """Per path that carries the stream (FRER: a and b, control: a), the running counters of
    `path_accounting` (see there)."""
    sw1, sw2 = status["dataplanes"]["sw1"], status["dataplanes"]["sw2"]
    out = {}
    for path in (("a", "b") if mode == "frer" else ("a",)):
        port = plan.PATH_PORTS[path]
        if mode == "frer":
            into, delivered = _port_total(sw1, port, "output"), _port_total(sw2, port, "input")
        else:
            (host_port,) = [p for p in sw1["ports"] if p["port"] == plan.SWITCH_HOST_PORT]
            (path_port,) = [p for p in sw2["ports"] if p["port"] == port]
            into, delivered = host_port["bridged"], path_port["bridged"]
        element = status["paths"][path]["counters"]["forward"]
        out[path] = {"into": into, "delivered": delivered, "duplicated": element["duplicated"],
                     **{k: element[k] for k in ELEMENT_DROPS},
                     "queue_in": _link_end(status, "sw1", port)["tx_dropped"],
                     "queue_out": _link_end(status, path, "out")["tx_dropped"]}
    return out


def path_accounting(counters: dict, mode: str) -> list[dict]:
    """Per path that carries the stream, between the `before` and `after` testbed status of
    `counters`: frames sw1 sent into it, frames it delivered to sw2, and what it dropped: its
    element's drops in the forward direction (sw1 to sw2) and the queue and link drops of sw1's
    port (`queue_in`) and of the path's exit (`queue_out`). `exact`: into + duplicated ==
    delivered + dropped. FRER counts the stream's frames (per stream and port counters summed
    over the node's streams: original or member streams, whatever the placement); the control
    group's switches only bridge, so there it is the frames sw1 bridged from the talker's port
    (its one other bridge port is path a) and sw2 bridged from path a."""
    before, after = _path_counters(counters["before"], mode), _path_counters(counters["after"], mode)
    rows = []
    for path, now in after.items():
        d = {k: v - before[path][k] for k, v in now.items()}
        drops = {"element": {k: d[k] for k in ELEMENT_DROPS}, "queue_in": d["queue_in"], "queue_out": d["queue_out"]}
        dropped = sum(drops["element"].values()) + d["queue_in"] + d["queue_out"]
        rows.append({"path": path, "into": d["into"], "delivered": d["delivered"], "dropped": dropped,
                     "duplicated": d["duplicated"], "drops": drops,
                     "exact": d["into"] + d["duplicated"] == d["delivered"] + dropped})
    return rows


def elimination_accounting(counters: dict, settings: dict, sender: dict, stream: dict) -> dict | None:
    """FRER: the eliminating node's sequence recovery of the stream (between the `before` and
    `after` status of `counters`) against the talker's frames. `on_wire` = data frames +
    end-of-stream probes sent; `lost_on_both_paths` = those that never reached the listener
    (data frames lost + end probes that did not arrive); `exact`: passed == on_wire -
    lost_on_both_paths + duplicates (a duplicate the recovery let through reaches the listener
    too). None for the control group (no elimination)."""
    if settings["mode"] != "frer":
        return None
    node = settings["eliminate_at"]
    before, after = (recovery_totals(counters[when]["dataplanes"][node])[str(STREAM)] for when in ("before", "after"))
    passed, discarded = (after[k] - before[k] for k in ("passed_packets", "discarded_packets"))
    data, probes = sender["frames_sent"], sender["end_probes_sent"]
    lost_both = stream["lost"] + probes - stream["end_probes"]
    return {"node": node, "passed": passed, "discarded": discarded, "data_sent": data,
            "end_probes_sent": probes, "on_wire": data + probes, "lost_on_both_paths": lost_both,
            "duplicates": stream["duplicates"],
            "exact": passed == data + probes - lost_both + stream["duplicates"]}


def phase_accounting(stream: dict, schedule: Schedule) -> tuple[list[dict], list[dict]]:
    """The listener's sequence bins as (intervals, phases). Bin k holds the frames due from
    k * bin_frames / rate s after the first frame; it belongs to the phase its middle falls in
    (the last phase takes every bin from its start on: the stream runs a little longer than the
    schedule). Per row sent = received + lost; the phases sum to the stream's totals."""
    fps = schedule.rate_fps
    intervals = [{"t_s": round(b["first_seq"] / fps, 6), "sent": b["frames"], "received": b["received"],
                  "lost": b["lost"], "duplicates": b["duplicates"]} for b in stream["seq_bins"]]
    spans = schedule.phases()
    phases = [{"phase": label, "from_s": start, "to_s": end, "sent": 0, "received": 0, "lost": 0, "duplicates": 0}
              for label, start, end in spans]
    for b in stream["seq_bins"]:
        middle = (b["first_seq"] + b["frames"] / 2) / fps
        index = sum(1 for _, start, _ in spans[1:] if start <= middle)
        for key, value in (("sent", b["frames"]), ("received", b["received"]), ("lost", b["lost"]),
                           ("duplicates", b["duplicates"])):
            phases[index][key] += value
    phases[-1]["to_s"] = max(phases[-1]["to_s"], round(stream["expected"] / fps, 6))
    return intervals, phases


def analyse(stream: dict, sender: dict, schedule: Schedule, settings: dict, happened: list[dict],
            counters: dict) -> dict:
    """The per-interval and per-phase tables, the per path and elimination accounting and the
    verdict, from the raw reports and the testbed's status before and after the stream
    (`counters`: {"before": ..., "after": ...})."""
    mode = settings["mode"]
    intervals, phases = phase_accounting(stream, schedule)
    cut_a_frames = phases[1]["sent"]
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
    recovery = {role: recovery_totals(snapshot) for role, snapshot in counters["after"]["dataplanes"].items()}
    return {"mode": mode, "sent": sender["frames_sent"], "end_probes_sent": sender["end_probes_sent"],
            "expected": stream["expected"], "received": stream["unique"], "lost": lost, "duplicates": dups,
            "events": happened, "losses_counted": "in the phase their frames were due to be sent (by sequence number), "
                                                  "not where the gap was seen",
            "phases": phases, "intervals": intervals, "paths": path_accounting(counters, mode),
            "elimination": elimination_accounting(counters, settings, sender, stream),
            "dataplane_recovery": recovery, "verdict_met": passed, "verdict": verdict}


def accounting_lines(result: dict) -> list[str]:
    """The per path and elimination accounting in words, one line each."""
    lines = []
    for p in result["paths"]:
        sign = "=" if p["exact"] else "!= (MISMATCH)"
        element = sum(p["drops"]["element"].values())
        queues = p["drops"]["queue_in"] + p["drops"]["queue_out"]
        duplicated = f" - {p['duplicated']} duplicated on it" if p["duplicated"] else ""
        lines.append(f"path {p['path']}: {p['into']} sent into it by sw1{duplicated} {sign} {p['delivered']} "
                     f"delivered to sw2 + {p['dropped']} dropped ({element} by the path, {queues} in queues)")
    e = result["elimination"]
    if e is not None:
        sign = "=" if e["exact"] else "!= (MISMATCH)"
        duplicates = f" + {e['duplicates']} duplicates" if e["duplicates"] else ""
        lines.append(f"{e['node']} passed {e['passed']} {sign} {e['data_sent']} data + {e['end_probes_sent']} "
                     f"end-of-stream probes - {e['lost_on_both_paths']} lost on both paths{duplicates} "
                     f"(discarded {e['discarded']})")
    return lines


def summary(result: dict) -> str:
    """A readable summary: totals, the phase table, the accounting and the verdict."""
    lines = [f"{result['mode']}: sent {result['expected']} (+{result['end_probes_sent']} end-of-stream probes), "
             f"received {result['received']}, lost {result['lost']}, duplicated {result['duplicates']}",
             f"  {'phase':<12}{'from s':>8}{'to s':>7}{'sent':>8}{'received':>10}{'lost':>7}{'dup':>6}"]
    for p in result["phases"]:
        lines.append(f"  {p['phase']:<12}{p['from_s']:>8.2f}{p['to_s']:>7.2f}{p['sent']:>8}"
                     f"{p['received']:>10}{p['lost']:>7}{p['duplicates']:>6}")
    lines.append(f"  (losses are counted {result['losses_counted']})")
    lines += [f"  {line}" for line in accounting_lines(result)]
    lines.append(f"  {result['verdict']}")
    return "\n".join(lines)
