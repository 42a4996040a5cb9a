"""One attack (frerlab.attack.spec) by a device on a member path of a testbed while a measured
stream flows talker -> listener, and the harm it did.

The run, on a testbed that is up in frer mode:
1. checks that the attack fits the testbed (the history window, the reset timeout) and the
   stream (it ends before the stream does); asks the eliminating node for a management reset
   of the stream's recovery function (frerSeqRcvyReset, 802.1CB 10.4.1.4), so every run starts
   from the state a stream meets after an idle time longer than the reset timeout (it counts
   one reset);
2. starts the injector (frerlab.attack.injector) in the attacked path's namespace and, once it
   records, the stream (frerlab gen send/recv, frerlab.traffic.across: numbered probes, per
   sequence-range accounting at the listener, `--interval`);
3. at the attack's `start` after the stream's first frame at the listener, says "go"; for
   inject-after-reset it first makes the outage: the attacked path withholds the stream's
   frames (its element cuts the forward direction) while the other path fails (cut too),
   for `outage` seconds, then "go", and once the injector has sent its first frame the other
   path and then the attacked one come back (so the frames lost to the outage are exactly those
   the other path's element dropped);
4. collects, raw first: meta.json; send.json and recv.json (the tools' reports); inject.json
   (the injector's report and what the run did, with their monotonic times: the injector's,
   the run's and the kernel's data plane clock are one clock); counters.json (`testbed status`
   before and after: links, path elements, every data plane's counters and latent error
   findings); then result.json, the harm derived from them alone (`analyse`).

The harm. The listener counts the genuine stream (the generator's stream id) and, apart, the
forged frames (frerlab.attack.frames.FORGED_STREAM_ID; a forged frame's probe carries the
number of the genuine frame that would carry its R-TAG number, so per sequence range the
genuine frames lost and the forged frames delivered line up). A replayed, babbled or stripped
frame keeps its recorded payload, so one delivered is a duplicate of the genuine stream.
`lost_to_attack` is the genuine frames lost less those lost to the outage the run made. The
recovery counters are those of the stream's sequence recovery at the eliminating node; the
latent error detector (7.4.4) is read twice: the alarms its monitor raised during the run, and
the drift of passed x (paths - 1) - discarded over the run, which it compares with its
difference threshold (against a base it takes every reset period, so a drift of an earlier run
still counts there). Recovery: from the receiver's sequence bins (`--interval-frames`, one bin
per `--interval` of the send schedule), the end of the last bin that lost or duplicated a
genuine frame, less the stream time of the attack's last frame.
"""

from __future__ import annotations

import json
import platform
import queue
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from frerlab import __version__
from frerlab.attack import frames, spec
from frerlab.dataplane import control
from frerlab.errors import ToolFailed, UsageError
from frerlab.files import write_atomic
from frerlab.frer import COUNTER_NAMES
from frerlab.testbed import bed, failover, plan
from frerlab.traffic.across import stream_across

#: The stream's UDP port and its handle in the testbed's plan.
PORT = 5555
STREAM = failover.STREAM
#: The interfaces of a path's namespace (bed.LINKS): from sw1, and towards sw2.
RECORD_IF, SEND_IF = "in", "out"
#: Seconds the listener waits after the last frame before it ends (beyond any silence the attack makes).
IDLE_S = 1.0
#: Seconds of the stream a replay's recording is not counted on (the recording starts with the
#: stream, the start counts from its first frame at the listener).
RECORD_MARGIN_S = 0.1
#: Longest stream, seconds.
MAX_DURATION_S = 3600
#: Counters of the eliminating node's port that show frames of no stream (left to the kernel).
PORT_COUNTERS = ("frames", "rcvy_passed", "rcvy_discarded", "bridged", "to_stack", "seq_enc_errored", "malformed")


@dataclass(frozen=True)
class Stream:
    """The measured stream talker -> listener."""

    rate_fps: int = 2000
    frame_size: int = 256
    duration_s: float = 5.0
    interval_s: float = 0.1

    def check(self) -> None:
        """UsageError naming the first bad value and what would be valid."""
        if not 10 <= self.rate_fps <= 100_000:
            raise UsageError(f"stream rate {self.rate_fps} frames/s is out of range (10..100000)")
        if not 64 <= self.frame_size <= 1518:
            raise UsageError(f"frame size {self.frame_size} is out of range (64..1518 bytes)")
        if not 1 <= self.duration_s <= MAX_DURATION_S:
            raise UsageError(f"duration {self.duration_s:g} s is out of range (1..{MAX_DURATION_S} s)")
        if not 0.01 <= self.interval_s <= self.duration_s:
            raise UsageError(f"interval {self.interval_s:g} s is out of range (0.01..duration {self.duration_s:g} s)")

    def bin_frames(self) -> int:
        """Sequence numbers per bin: the frames due in `interval_s`."""
        return max(1, round(self.rate_fps * self.interval_s))


def reset_timeout_s(settings: dict) -> float:
    """The eliminating node's reset timeout, seconds (older testbeds recorded none: the default)."""
    return settings.get("reset_timeout_ms", bed.Settings.reset_timeout_ms) / 1000


def check_fits(a: spec.Attack, path: str, settings: dict, stream: Stream, tb_name: str) -> None:
    """UsageError unless attack `a` on `path` fits testbed `tb_name` (its `settings`) and the
    stream: FRER mode; an `ahead` inside the history window for inject-ahead and
    foreign-identity, outside it for inject-far and inject-after-reset; an outage longer than
    the reset timeout; for replay, `age` frames recorded before its start; the attack's end
    before the stream's."""
    if settings["mode"] != "frer":
        raise UsageError(f"testbed {tb_name!r} runs in {settings['mode']} mode: no FRER to attack "
                         "(frerlab testbed up --mode frer)")
    if path not in bed.PATHS:
        raise UsageError(f"path {path!r} is not valid ({' or '.join(bed.PATHS)})")
    hl = settings["history_length"]
    inside, outside = f"1..{hl - 1}", f"{hl}..{spec.SEQ_SPACE - hl}"
    where = f"the history window of testbed {tb_name!r} (history length {hl})"
    if a.kind in ("inject-ahead", "foreign-identity") and not a.ahead < hl:
        raise UsageError(f"{a.kind}: ahead {a.ahead} is outside {where}: {inside} is inside "
                         "(inject-far sends beyond it)")
    if a.kind in ("inject-far", "inject-after-reset") and not hl <= a.ahead <= spec.SEQ_SPACE - hl:
        raise UsageError(f"{a.kind}: ahead {a.ahead} is not far outside {where}: {outside} is "
                         "(inject-ahead sends inside it)")
    timeout = reset_timeout_s(settings)
    if a.kind == "inject-after-reset" and not a.outage > timeout:
        raise UsageError(f"inject-after-reset: outage {a.outage:g} s is not longer than the reset timeout of "
                         f"testbed {tb_name!r} ({timeout:g} s): no reset would follow it")
    earliest = a.age / stream.rate_fps + RECORD_MARGIN_S if a.kind == "replay" else 0.0
    if a.start < earliest:
        raise UsageError(f"replay: age {a.age} needs {a.age} frames recorded before the attack's start: at "
                         f"{stream.rate_fps} frames/s start it at {earliest:.4g} s or later (it is {a.start:g} s), "
                         "or run a faster stream (--rate-fps)")
    end = a.end_s()
    if not end < stream.duration_s:
        raise UsageError(f"the attack ends {end:g} s into the stream, not before the stream does "
                         f"({stream.duration_s:g} s): lower its start, count or duration, or run a longer "
                         "stream (--duration)")


def injector_plan(a: spec.Attack, path: str, timeout_s: float) -> dict:
    """What the injector is told (frerlab.attack.injector): the attack, its interfaces, the
    stream's identity, and for foreign-identity the identity its frames carry instead."""
    readdress = None
    if a.kind == "foreign-identity":
        other = next(p for p in bed.PATHS if p != path)
        readdress = ({"dst_mac": plan.TALKER_MAC, "vid": None} if a.identity == "reverse"
                     else {"dst_mac": None, "vid": plan.PATH_VLANS[other]})
    return {"attack": a.model_dump(), "record": RECORD_IF, "send": SEND_IF, "dst_mac": plan.LISTENER_MAC,
            "port": PORT, "ring": max(spec.RING, getattr(a, "age", 0) + 1), "timeout_s": timeout_s,
            "readdress": readdress}


class Injector:
    """The injector process, its JSON lines read as they come."""

    def __init__(self, netns: str, plan_: dict) -> None:
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-m", "frerlab.attack.injector", json.dumps(plan_)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _said(self) -> str:
        """What the ended injector wrote on stderr (its last lines)."""
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "(still running)"
        return self.process.stderr.read().strip()[-500:] or f"exit status {self.process.returncode}"

    def wait_for(self, event: str, timeout_s: float) -> dict:
        """The injector's next record of `event`; ToolFailed if it ends or stays silent."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise ToolFailed(f"the injector said no {event!r} within {timeout_s:g} s") from None
            if line is None:
                raise ToolFailed(f"the injector ended before saying {event!r}: {self._said()}")
            record = json.loads(line)
            if record["event"] == event:
                return record

    def go(self) -> None:
        """Starts the attack now."""
        try:
            self.process.stdin.write("go\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise ToolFailed(f"the injector ended before the attack: {self._said()}") from None

    def finish(self, timeout_s: float = 10.0) -> dict:
        """Tells the injector the run is done (its stdin closes) and returns its report."""
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass  # it ended already; its report is in the lines read
        report = self.wait_for("report", timeout_s)
        self.process.wait(timeout=timeout_s)
        return report

    def stop(self) -> None:
        """Ends the process if it still runs (SIGTERM, SIGKILL after 5 s) and waits for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(timeout=5)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                pipe.close()
            except BrokenPipeError:
                pass


def _sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.monotonic()))


def run(tb_name: str, a: spec.Attack, path: str, stream: Stream, out_dir: Path) -> dict:
    """Runs attack `a` on `path` of testbed `tb_name` while `stream` flows; writes the raw
    results and result.json into `out_dir` and returns the result."""
    stream.check()
    state = bed.read_state(tb_name)
    settings = state["settings"]
    check_fits(a, path, settings, stream, tb_name)
    node = settings["eliminate_at"]
    other = next(p for p in bed.PATHS if p != path)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"test": "attack", "frerlab": __version__, "kernel": platform.release(), "host": platform.node(),
            "testbed": tb_name, "settings": settings, "attack": a.model_dump(), "path": path,
            "stream": asdict(stream), "start": time.time()}
    write_atomic(out_dir / "meta.json", json.dumps(meta, indent=1))
    timeout = reset_timeout_s(settings)
    after_reset = a.kind == "inject-after-reset"
    silence = a.outage + timeout if after_reset else 0.0
    run_s = stream.duration_s + silence + 60
    listener = state["namespaces"]["listener"]
    control.reset(state["dataplanes"][node], handle=STREAM)
    before = bed.status(tb_name)
    baseline = bed.received(listener)
    done: list[dict] = []

    def act(what: str, step) -> None:
        called = time.monotonic()
        step()
        done.append({"what": what, "called": called, "returned": time.monotonic()})

    def cut(p: str, down: bool) -> None:
        act(f"{'cut' if down else 'restore'} {p}", lambda: bed.impair(tb_name, p, "forward", down=down))

    injector = Injector(state["namespaces"][path], injector_plan(a, path, run_s))
    try:
        injector.wait_for("ready", 10)

        def attack() -> None:
            t0 = bed.first_frame(listener, baseline)
            done.append({"what": "first frame at the listener", "called": t0, "returned": t0})
            _sleep_until(t0 + a.start)
            if after_reset:
                cut(path, True)
                cut(other, True)
                _sleep_until(done[-1]["returned"] + a.outage)
                act("go", injector.go)
                injector.wait_for("first", 5)
                cut(other, False)
                cut(path, False)
            else:
                act("go", injector.go)

        reports = stream_across(bed.prefix(tb_name, "talker"), bed.prefix(tb_name, "listener"), plan.LISTENER_IP,
                                ["--rate-fps", str(stream.rate_fps), "--frame-size", str(stream.frame_size),
                                 "--duration", str(stream.duration_s)], out_dir,
                                recv_args=["--interval", str(stream.interval_s),
                                           "--interval-frames", str(stream.bin_frames()),
                                           "--idle", str(IDLE_S + silence)],
                                port=PORT, during=attack, timeout_s=run_s)
        injected = injector.finish()
    finally:
        injector.stop()
        if after_reset:  # never leave a path cut
            for p in bed.PATHS:
                bed.impair(tb_name, p, "forward", down=False)
    write_atomic(out_dir / "inject.json", json.dumps({"injector": injected, "run": done}, indent=1))
    counters = {"before": before, "after": bed.status(tb_name)}
    write_atomic(out_dir / "counters.json", json.dumps(counters, indent=1))
    result = analyse(a, path, stream, settings, reports.sender, reports.receiver, injected, done, counters)
    result["meta"] = meta
    write_atomic(out_dir / "result.json", json.dumps(result, indent=1))
    return result


def _delta(before: dict, after: dict, keys) -> dict[str, int]:
    return {k: after[k] - before[k] for k in keys}


def _port(snapshot: dict, port: str) -> dict:
    (found,) = [p for p in snapshot["ports"] if p["port"] == port]
    return found


def _individual(snapshot: dict, port: str) -> dict | None:
    """The clause-10 counters of the stream's individual recovery function on `port` (None: none)."""
    (stream,) = [st for st in snapshot["streams"] if st["handle"] == STREAM]
    found = [r for r in stream["recovery"] if r["function"] == "individual" and r["port"] == port]
    return {k: found[0][k] for k in COUNTER_NAMES} if found else None


def _latent(snapshot: dict) -> dict | None:
    """The latent error findings of the stream at a node (None where its monitor wrote none)."""
    functions = (snapshot.get("latent") or {}).get("functions", [])
    return next((f for f in functions if f["stream"] == STREAM), None)


def _bins(stream_report: dict | None) -> list[dict]:
    return stream_report["seq_bins"] if stream_report else []


def _injected(report: dict) -> dict:
    """The injector's counts, and the rate it achieved (frames/s from its first frame to its last)."""
    first, last = report.get("first"), report.get("last")
    span = last["t"] - first["t"] if first and last else 0.0
    return {**{k: report[k] for k in ("frames", "sent", "not_sent", "skipped", "recorded", "max_lag_s", "stopped")},
            "achieved_fps": round((report["sent"] - 1) / span, 1) if span > 0 else None}


def harm_timing(genuine: dict, forged: dict | None, fps: float, injected: dict) -> dict:
    """Per sequence bin (one `--interval` of the send schedule) the genuine frames sent,
    received, lost and duplicated and the forged frames delivered (whose probes name the genuine
    number they displace); the attack's span and the harm window in stream time (seconds from
    the stream's first frame); and `recovered_s`, from the attack's last frame to the end of the
    last bin that lost or duplicated a genuine frame (0 when none after it; None when that bin
    is the stream's last: not seen to recover)."""
    forged_bins = {b["first_seq"]: b["received"] for b in _bins(forged)}
    rows = [{"t_s": round(b["first_seq"] / fps, 6), "sent": b["frames"], "received": b["received"],
             "lost": b["lost"], "duplicates": b["duplicates"], "forged": forged_bins.get(b["first_seq"], 0)}
            for b in genuine["seq_bins"]]
    first, last = injected.get("first"), injected.get("last")
    span = ([round((first["genuine_probe_seq"] + 1) / fps, 6), round((last["genuine_probe_seq"] + 1) / fps, 6)]
            if first and last else None)
    harmed = [(b["first_seq"], b["frames"]) for b in genuine["seq_bins"] if b["lost"] or b["duplicates"]]
    window = ([round(harmed[0][0] / fps, 6), round(sum(harmed[-1]) / fps, 6)] if harmed else None)
    if window is None or span is None:
        recovered = 0.0
    elif sum(harmed[-1]) >= genuine["expected"]:
        recovered = None
    else:
        recovered = round(max(0.0, window[1] - span[1]), 6)
    return {"intervals": rows, "attack_s": span, "harm_s": window, "recovered_s": recovered}


def analyse(a: spec.Attack, path: str, stream: Stream, settings: dict, sender: dict, receiver: dict,
            injected: dict, done: list[dict], counters: dict) -> dict:
    """The harm record from the raw results: the listener's genuine and forged counts, the
    eliminating node's recovery counters, its port counters on the attacked path, latent error
    detection, the outage's share of the loss, the timing and the verdict."""
    node = settings["eliminate_at"]
    streams = {s["stream_id"]: s for s in receiver["streams"]}
    genuine = streams.get(sender["stream_id"])
    if genuine is None:
        raise ToolFailed(f"the listener saw no frame of the stream (stream id {sender['stream_id']})")
    forged = streams.get(frames.FORGED_STREAM_ID)
    before, after = (counters[w]["dataplanes"][node] for w in ("before", "after"))
    rcvy = _delta(*(failover.recovery_totals(s)[str(STREAM)] for s in (before, after)), COUNTER_NAMES)
    port = plan.PATH_PORTS[path] if node.startswith("sw") else plan.HOST_PORT
    port_counts = _delta(_port(before, port), _port(after, port), PORT_COUNTERS)
    individual = (_delta(_individual(before, port), _individual(after, port), COUNTER_NAMES)
                  if _individual(after, port) else None)
    other = next(p for p in bed.PATHS if p != path)
    outage_lost = 0
    if a.kind == "inject-after-reset":
        element = [counters[w]["paths"][other]["counters"]["forward"]["dropped_down"] for w in ("before", "after")]
        outage_lost = element[1] - element[0]
    latent_before, latent_after = _latent(before), _latent(after)
    threshold = latent_after["difference_threshold"] if latent_after else plan.Recovery().latent_difference
    drift = rcvy["passed_packets"] * (len(bed.PATHS) - 1) - rcvy["discarded_packets"]
    # a monitor that had not written its findings yet when the run began (a testbed just up) had raised none
    latent = {"alarms": latent_after["alarms"] - (latent_before["alarms"] if latent_before else 0) if latent_after
              else None,
              "active": latent_after["active"] if latent_after else None,
              "drift": drift, "threshold": threshold, "over_threshold": abs(drift) > threshold}
    timing = harm_timing(genuine, forged, stream.rate_fps, injected)
    delivered = {"lost": genuine["lost"], "lost_to_outage": outage_lost, "lost_to_attack": genuine["lost"] - outage_lost,
                 "duplicates": genuine["duplicates"], "forged": forged["unique"] if forged else 0,
                 "forged_arrivals": forged["arrivals"] if forged else 0, "expected": genuine["expected"],
                 "received": genuine["unique"], "reordered": genuine["reordered"],
                 "other_streams": sorted(set(streams) - {sender["stream_id"], frames.FORGED_STREAM_ID})}
    # the run's management reset counts one reset: the rest are the stream's and the attack's
    signals = {"rogue": rcvy["rogue_packets"], "tagless": rcvy["tagless_packets"], "lost": rcvy["lost_packets"],
               "out-of-order": rcvy["out_of_order_packets"], "resets": rcvy["resets"] - 1,
               f"left to the kernel on {port}": port_counts["to_stack"],
               "latent error (drift over the threshold)": latent["over_threshold"],
               **{f"{name} at {port}'s individual recovery": (individual or {}).get(counter, 0)
                  for name, counter in (("rogue", "rogue_packets"), ("tagless", "tagless_packets"))}}
    result = {"attack": a.kind, "values": spec.describe(a), "path": path, "node": node,
              "algorithm": settings.get("algorithm", bed.Settings.algorithm),
              "history_length": settings["history_length"], "reset_timeout_s": reset_timeout_s(settings),
              "sent": sender["frames_sent"], "injected": _injected(injected),
              "listener": delivered, "recovery": rcvy, "individual": individual, "port": port_counts, "latent": latent,
              "detected_by": [name for name, value in signals.items() if value], **timing,
              "run": [{"what": d["what"], "t_s": round(d["called"] - done[0]["called"], 4)} for d in done]}
    result["verdict"] = verdict(result)
    return result


def verdict(r: dict) -> str:
    """One line: the harm, how soon the stream recovered, and what showed the attack."""
    d = r["listener"]
    harmed = d["lost_to_attack"] > 0 or d["duplicates"] > 0 or d["forged"] > 0
    outage = f" (+{d['lost_to_outage']} to the outage)" if d["lost_to_outage"] else ""
    recovered = ("" if not harmed else "; not recovered by the stream's end" if r["recovered_s"] is None
                 else f"; recovered {r['recovered_s']:g} s after the attack's last frame")
    shown = (f"{r['node']} showed it: {', '.join(r['detected_by'])}" if r["detected_by"]
             else f"silent: nothing at {r['node']} showed it")
    return (f"{'HARM' if harmed else 'NO HARM'}: {d['lost_to_attack']} genuine frames lost{outage}, "
            f"{d['duplicates']} duplicates and {d['forged']} forged frames delivered{recovered}; {shown}")


def summary(r: dict) -> str:
    """A readable summary of a result."""
    d, c, i = r["listener"], r["recovery"], r["injected"]
    lat = r["latent"]
    def counts(values: dict) -> str:
        return ", ".join(f"{k.removesuffix('_packets').replace('_', ' ')} {v:+d}" for k, v in values.items())

    lines = [f"{r['attack']} ({r['values']}) on path {r['path']}, {r['algorithm']} recovery at {r['node']} "
             f"(history {r['history_length']}, reset timeout {r['reset_timeout_s']:g} s)",
             f"  injector: {i['sent']} of {i['frames']} frames sent"
             + (f" at {i['achieved_fps']:g} frames/s" if i["achieved_fps"] else "")
             + f" ({i['not_sent']} found the path's queue full, "
             f"{i['skipped']} had nothing recorded to send), {i['recorded']} genuine frames recorded",
             f"  listener: {d['expected']} genuine frames sent, {d['received']} received, {d['lost']} lost, "
             f"{d['duplicates']} duplicated; {d['forged']} forged frames delivered",
             f"  {r['node']} recovery: {counts(c)}",
             *([f"  its individual recovery on path {r['path']}'s port: {counts(r['individual'])}"]
               if r.get("individual") else []),
             f"  latent error detection: drift {lat['drift']:+d} (threshold {lat['threshold']}), "
             f"alarms during the run: {lat['alarms'] if lat['alarms'] is not None else 'no monitor'}",
             f"  {r['verdict']}"]
    return "\n".join(lines)
