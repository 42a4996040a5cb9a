"""One trial of frerlab's generator across the system under test, with what makes it valid.

A trial offers `rate_fps` frames/s of one frame size for a duration, counts what the generator
really sent and what the listener received, and records why its loss figure may not be the
device's (RFC 2544 section 26 counts frames the DUT lost; the seeds counted whatever went
missing):

- `generator_shortfall`: the generator sent fewer than offered * (1 - tolerance) frames (or
  itself reports falling behind): the offered load never existed. Invalid.
- `sender_host_drops`: the talker's own egress queue dropped frames: lost before the DUT.
  Invalid.
- `receiver_socket_drops`: the listener's socket overflowed: lost after the DUT. Invalid.
- `sender_cpu_saturated` / `receiver_cpu_saturated`: a generator process kept a core busy
  (at least CPU_SATURATED of its wall time, not counting the sender's spinning to its frames'
  due times, which is pacing); `host_cpu_saturated`: all cores were (from /proc/stat over the
  trial, the same spinning not counted). Warnings: the numbers may be the hosts', not the DUT's.

A trial spoiled only by a passing fault of the tester itself (the generator fell behind its
schedule but still sent every offered frame, or the listener's socket overflowed) is run
again, up to ATTEMPTS times in all (the throughput searches retry invalid trials their own
way, frerlab.bench.search): on a shared machine such faults come and go with the
scheduler, and RFC 2544 counts only what the DUT lost. A generator that cannot reach the rate
at all is not retried. The earlier attempts' raw reports stay in `attempt-N/` beside the last
one, and `attempts` says how many were run.

Counters are read only after the traffic stopped and the listener saw the end of the stream
and lingered (`stream_across`), so frames in flight are not counted as lost. Raw reports are
written by the tools into the trial's directory before anything is derived from them.

Where the target runs FRER (a testbed in frer mode), a trial also keeps what FRER itself saw,
next to the loss: `frer`, what each recovery function counted during the trial (its IEEE
802.1CB clause-10 counters read before and after, differenced) with its configuration, as
`frer_difference` describes. The counters see every frame of the protected stream: the
end-of-stream probes, and any background load sent beside the measured stream.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from frerlab.bench.target import Target
from frerlab.traffic.across import stream_across
from frerlab.files import write_atomic
from frerlab.processes import end
from frerlab.traffic.tools.base import wait_for_udp_port

#: Fraction of wall time above which a process or the host counts as CPU-saturated.
CPU_SATURATED = 0.95
#: The listener stops this long after the last frame when no end-of-stream probe arrives (a
#: full queue at the end of a trial drops them like any frame).
IDLE_S = 1.0
#: Runs of a trial spoiled only by a passing fault of the tester (see the module doc).
ATTEMPTS = 3
#: The flags of such faults.
TRANSIENT_FLAGS = frozenset({"generator_shortfall", "receiver_socket_drops"})
@dataclass(frozen=True)
class Flag:
    """Why a trial's figures may not be the DUT's: a name, the evidence, and whether the trial
    is invalid (must not be counted as the DUT's loss) or only suspect."""

    name: str
    detail: str
    invalidates: bool


@dataclass
class TrialOutcome:
    """What one trial counted, and its flags."""

    frame_size: int
    rate_fps: float
    duration_s: float
    offered: int
    sent: int
    received: int
    duplicates: int
    reordered: int
    latency_ns: dict | None
    drops_by_link: dict[str, int]
    sender_cpu: float
    receiver_cpu: float
    host_cpu: float
    #: The receiver's `timestamps`: which stamps and clock the latency came from.
    timestamps: dict | None = None
    #: What FRER's recovery functions counted during the trial (`frer_difference`); None where
    #: the target runs none.
    frer: dict | None = None
    flags: list[Flag] = field(default_factory=list)
    attempts: int = 1

    @property
    def lost(self) -> int:
        return max(0, self.sent - self.received)

    @property
    def loss_ratio(self) -> float:
        return self.lost / self.sent if self.sent else 0.0

    @property
    def valid(self) -> bool:
        return not any(f.invalidates for f in self.flags)

    @property
    def spoiled_by_tester(self) -> bool:
        """Invalid only through a passing fault of the tester (see the module doc): worth another attempt."""
        invalid = {f.name for f in self.flags if f.invalidates}
        return bool(invalid) and invalid <= TRANSIENT_FLAGS and (
            "generator_shortfall" not in invalid or self.sent >= self.offered)

    def record(self) -> dict:
        """Plain data for result files (`frer` only where FRER runs)."""
        record = {**asdict(self), "lost": self.lost, "loss_ratio": self.loss_ratio, "valid": self.valid}
        if self.frer is None:
            del record["frer"]
        return record


def cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def host_busy(before: tuple[int, int], after: tuple[int, int], spin_s: float) -> float:
    """The share of all CPUs' time that was busy between two cpu_busy() readings, without the
    sender's spinning to its frames' due times (pacing, not load)."""
    spin = spin_s * os.sysconf("SC_CLK_TCK")
    return max(after[0] - before[0] - spin, 0) / max(1, after[1] - before[1])


def generator_trial(target: Target, frame_size: int, rate_fps: float, duration_s: float, out_dir: Path,
                    send_tolerance: float = 0.001, burst: int | None = None,
                    bin_frames: int | None = None, attempts: int = ATTEMPTS) -> TrialOutcome:
    """Runs one trial of `rate_fps` for `duration_s`, or (`burst`) one burst of that many
    frames sent as fast as the generator can; raw reports go to `out_dir` (send.json,
    recv.json, with per-`bin_frames` sequence bins if given), then trial.json. A trial spoiled
    by the tester is run again, `attempts` runs in all (see the module doc; a caller that
    retries invalid trials itself, as the throughput searches do, asks for 1)."""
    attempt = 1
    while True:
        outcome = _attempt(target, frame_size, rate_fps, duration_s, out_dir, send_tolerance, burst, bin_frames)
        outcome.attempts = attempt
        write_atomic(out_dir / "trial.json", json.dumps(outcome.record(), indent=1))
        if attempt >= attempts or not outcome.spoiled_by_tester:
            return outcome
        kept = out_dir / f"attempt-{attempt}"
        kept.mkdir()
        for name in ("send.json", "recv.json", "trial.json"):
            (out_dir / name).rename(kept / name)
        attempt += 1


def _attempt(target: Target, frame_size: int, rate_fps: float, duration_s: float, out_dir: Path,
             send_tolerance: float, burst: int | None, bin_frames: int | None) -> TrialOutcome:
    """One run of the trial of `generator_trial`; its raw reports are in `out_dir`."""
    before, frer_before, busy0 = target.drops(), target.frer_counters(), cpu_busy()
    pace = ["--max-rate", "--count", str(burst)] if burst else ["--rate-fps", f"{rate_fps:.6g}", "--duration",
                                                                  f"{duration_s:g}"]
    bins = ["--interval-frames", str(bin_frames)] if bin_frames else []
    send_mode, recv_mode = target.generator_args()
    reports = stream_across(target.prefix("talker"), target.prefix("listener"), target.listener_ip,
                            [*pace, "--frame-size", str(frame_size), *send_mode], out_dir, timeout_s=duration_s + 30,
                            recv_args=["--idle", str(IDLE_S), *bins, *recv_mode], frerlab=target.frerlab)
    after, frer_after, busy1 = target.drops(), target.frer_counters(), cpu_busy()
    sender, receiver = reports.sender, reports.receiver
    streams = receiver["streams"]
    stream = streams[0] if streams else None
    offered = burst or round(rate_fps * duration_s)
    outcome = TrialOutcome(
        frame_size=frame_size, rate_fps=rate_fps, duration_s=duration_s, offered=offered,
        sent=sender["frames_sent"], received=stream["unique"] if stream else 0,
        duplicates=stream["duplicates"] if stream else 0, reordered=stream["reordered"] if stream else 0,
        latency_ns=stream.get("latency_ns") if stream else None, timestamps=receiver.get("timestamps"),
        drops_by_link={k: after[k] - before[k] for k in after if after[k] != before[k]},
        frer=frer_difference(frer_before, frer_after),
        sender_cpu=sender["cpu"]["utilization"], receiver_cpu=receiver["cpu"]["utilization"],
        host_cpu=host_busy(busy0, busy1, sender["cpu"].get("spin_s", 0.0)))
    outcome.flags = flags(outcome, sender, receiver, send_tolerance, target.talker_egress)
    return outcome


def frer_difference(before: dict | None, after: dict | None) -> dict | None:
    """What each recovery function counted between two Target.frer_counters() readings: the
    same shape, role -> stream handle -> function -> {"config": ..., "counters": ...}, with
    `config` as it stands (algorithm, history_length, reset_timeout_ms, take_no_sequence) and
    every counter the difference (passed_packets, discarded_packets, lost_packets, ...). None
    where the target runs no FRER."""
    if before is None or after is None:
        return None
    return {role: {handle: {name: {"config": function["config"],
                                   "counters": {k: v - before[role][handle][name]["counters"][k]
                                                for k, v in function["counters"].items()}}
                            for name, function in functions.items()}
                   for handle, functions in handles.items()}
            for role, handles in after.items()}


def flags(t: TrialOutcome, sender: dict, receiver: dict, send_tolerance: float, talker_egress: str) -> list[Flag]:
    """The validity flags of a trial (see the module doc); `talker_egress` names the talker's
    own egress in `t.drops_by_link`."""
    found = []
    short = (t.offered - t.sent) / t.offered if t.offered else 0.0
    if short > send_tolerance or sender.get("shortfall"):
        reason = sender.get("shortfall_reason") or "fewer frames than offered"
        found.append(Flag("generator_shortfall", f"sent {t.sent} of {t.offered} offered frames ({short:.3%} short; "
                                                 f"tolerance {send_tolerance:.3%}): {reason}", True))
    host = t.drops_by_link.get(talker_egress, 0)
    if host:
        found.append(Flag("sender_host_drops", f"the talker's own egress queue dropped {host} frames "
                                               "(offered beyond its link: lost before the DUT)", True))
    socket_drops = receiver.get("socket_drops") or 0
    if socket_drops:
        found.append(Flag("receiver_socket_drops", f"the listener's socket dropped {socket_drops} frames "
                                                   "(lost after the DUT)", True))
    for who, value in (("sender", t.sender_cpu), ("receiver", t.receiver_cpu)):
        if value >= CPU_SATURATED:
            found.append(Flag(f"{who}_cpu_saturated", f"the {who} process used {value:.0%} of a core", False))
    if t.host_cpu >= CPU_SATURATED:
        found.append(Flag("host_cpu_saturated", f"all CPUs were {t.host_cpu:.0%} busy during the trial", False))
    return found


#: UDP port of background load (the measured stream uses stream_across's 5555).
BACKGROUND_PORT = 5556


class Background:
    """Background load while something else is measured: frerlab's generator sending
    `rate_fps` frames/s for `duration_s` from talker to listener, into a receiver of its own on
    BACKGROUND_PORT (so no ICMP errors come back). Both raw reports are written to `out_dir`
    (bg-send.json, bg-recv.json) when the `with` block ends; `reports()` reads them."""

    def __init__(self, target: Target, frame_size: int, rate_fps: float, duration_s: float, out_dir: Path,
                 stream_id: int = 1) -> None:
        self.out_dir = out_dir
        self.recv_argv = [*target.prefix("listener"), *target.frerlab, "gen", "recv", "--port", str(BACKGROUND_PORT),
                          "--duration", f"{duration_s + 30:g}", "--linger", "0.3", "--idle", str(IDLE_S),
                          "--report-json"]
        self.send_argv = [*target.prefix("talker"), *target.frerlab, "gen", "send", "--dst", target.listener_ip,
                          "--port", str(BACKGROUND_PORT), "--rate-fps", f"{rate_fps:.6g}", "--duration",
                          f"{duration_s:g}", "--frame-size", str(frame_size), "--stream-id", str(stream_id),
                          "--report-json"]
        self.listener = target.prefix("listener")
        self.processes: dict[str, subprocess.Popen] = {}

    def __enter__(self) -> Background:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.processes["recv"] = subprocess.Popen(self.recv_argv, stdout=subprocess.PIPE,
                                                      stderr=subprocess.DEVNULL, text=True)
            wait_for_udp_port(self.listener, BACKGROUND_PORT)
            self.processes["send"] = subprocess.Popen(self.send_argv, stdout=subprocess.PIPE,
                                                      stderr=subprocess.DEVNULL, text=True)
        except BaseException:
            self.stop(at_once=True)
            raise
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.stop(at_once=exc_type is not None)

    def stop(self, at_once: bool) -> None:
        """Waits for the sender to finish and the receiver to see the end (`at_once`: does not
        wait), writing their reports; kills what remains."""
        for name in ("send", "recv"):
            proc = self.processes.get(name)
            if proc is None:
                continue
            try:
                out, _ = proc.communicate(timeout=0.1 if at_once else 60)
            except subprocess.TimeoutExpired:
                end(proc)
                continue
            if out.strip():
                write_atomic(self.out_dir / f"bg-{name}.json", out)

    def reports(self) -> tuple[dict, dict]:
        """The background stream's raw sender and receiver reports."""
        return (json.loads((self.out_dir / "bg-send.json").read_text()),
                json.loads((self.out_dir / "bg-recv.json").read_text()))
