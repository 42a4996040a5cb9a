"""The fail-over run's timeline (frerlab.testbed.timeline), on real testbeds with real tcpdump:
with FRER each path is empty inside its own cut while the frames after elimination never stop
(but where the talker itself sent nothing) and add up to what the listener counted; in the
control group the frames after elimination stop while path a is cut and path b carries
nothing. No tcpdump is left running, also when the run fails or is interrupted."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, interruptible, processes_naming

from frerlab.errors import ToolFailed
from frerlab.pcap import read_pcap
from frerlab.testbed import bed, failover, timeline

pytestmark = NEEDS_BPF
CLI = [sys.executable, "-m", "frerlab.cli"]
SCHEDULE = failover.Schedule(rate_fps=2000, frame_size=256, duration_s=3.0, cut_a=(0.5, 1.5), cut_b=(2.0, 2.5))
CAPTURES = {"talker.pcap", "path_a.pcap", "path_b.pcap", "listener.pcap"}


def name(tag: str) -> str:
    return f"t{os.getpid() % 100000}{tag}"


def tcpdumps(out: Path) -> list[str]:
    """The tcpdump processes writing into `out` (a directory of the test's own)."""
    return processes_naming("tcpdump", str(out))


def first_times(capture: Path) -> dict[int, int]:
    """Sequence number -> time (ns) of its first data frame in `capture`."""
    times: dict[int, int] = {}
    for t_ns, frame in read_pcap(capture):
        seq = timeline.data_seq(frame, failover.PORT)
        if seq is not None:
            times.setdefault(seq, t_ns)
    return times


def cut_bins(tl: dict, path: str) -> slice:
    """The bins surely inside path `path`'s cut (from the cut call's return to the restore
    call's start), less one bin of slack at each edge."""
    (cut,) = [e for e in tl["events"] if e["what"] == f"cut {path}"]
    (restore,) = [e for e in tl["events"] if e["what"] == f"restore {path}"]
    return slice(math.ceil(cut["done_ms"]) + 1, math.floor(restore["t_ms"]) - 1)


def run(tb: bed.Testbed, out: Path) -> tuple[dict, dict]:
    result = failover.run(tb.name, SCHEDULE, out)
    assert tcpdumps(out) == []
    assert result["timeline"] == "timeline.json"
    tl = json.loads((out / result["timeline"]).read_text())
    assert CAPTURES <= {p.name for p in out.iterdir()}
    raw = max((out / f).stat().st_mtime_ns for f in CAPTURES)
    assert raw <= (out / "timeline.json").stat().st_mtime_ns <= (out / "result.json").stat().st_mtime_ns, \
        "raw captures first, then the timeline, then the result"
    series = tl["series"]
    assert tl["bin_ms"] == 1 and set(series) == {"sent", "path_a", "path_b", "after_elimination"}
    assert len({len(s) for s in series.values()}) == 1 and len(series["sent"]) >= 3000
    assert [e["what"] for e in tl["events"]] == ["cut a", "restore a", "cut b", "restore b"]
    for e, (at, _, _) in zip(tl["events"], SCHEDULE.events()):
        assert at * 1000 <= e["t_ms"] < e["done_ms"] <= at * 1000 + 100, e
    assert series["after_elimination"][0] > 0, "t = 0 is the first data frame at the listener"
    assert sum(series["sent"]) == result["sent"], "the talker's capture holds every data frame it sent"
    assert sum(series["after_elimination"]) == result["received"] + result["duplicates"], \
        "after elimination adds up to what the listener counted"
    assert tl["complete"] and all(c["tcpdump"]["dropped_by_kernel"] == 0 for c in tl["captures"].values())
    return result, tl


@pytest.mark.timing
def test_frer_timeline_each_path_empty_in_its_cut_and_the_stream_never_stops(frer_bed, tmp_path):
    result, tl = run(frer_bed, tmp_path)
    series = tl["series"]
    assert result["lost"] == 0 and result["duplicates"] == 0, failover.summary(result)
    paths = {p["path"]: p for p in result["paths"]}
    for path in ("a", "b"):
        s = series[f"path_{path}"]
        inside = cut_bins(tl, path)
        assert inside.stop - inside.start >= (400 if path == "a" else 200)
        assert s[inside] == [0] * (inside.stop - inside.start), f"path {path} carried frames while cut"
        assert sum(s[:inside.start]) > 0 and sum(s[inside.stop:]) > 0, f"path {path} carried frames before and after"
        assert sum(s) == paths[path]["delivered"] - result["end_probes_sent"], \
            "the path's capture = the data frames it delivered to sw2 (its counters)"
    assert sum(series["path_a"]) + sum(series["path_b"]) > sum(series["after_elimination"]), "both carried copies"
    # After elimination is never empty between the first and the last data frame, but where
    # the talker itself paused (2 shared cores: the generator falls behind now and then and
    # catches up). Per frame from the raw captures, with T the longest transit from talker to
    # listener: a run of empty ms bins [a, b) means the talker sent nothing in [a, b - T), since
    # such a frame would have arrived inside the run. T is far below a cut (a frame held back
    # by a cut would take hundreds of ms); on a slow machine it can pass 1 ms.
    sent_at, arrived = first_times(tmp_path / "talker.pcap"), first_times(tmp_path / "listener.pcap")
    assert sent_at.keys() == arrived.keys()
    longest = max(arrived[seq] - sent_at[seq] for seq in sent_at)
    assert longest < 10_000_000, f"a frame took {longest} ns from talker to listener: held back by a cut?"
    after, start = series["after_elimination"], tl["start_ns"]
    last = max(k for k, n in enumerate(after) if n)
    empty = [k for k in range(last) if after[k] == 0]
    runs: list[list[int]] = []  # the maximal runs [a, b) of empty bins
    for k in empty:
        if runs and runs[-1][1] == k:
            runs[-1][1] = k + 1
        else:
            runs.append([k, k + 1])
    sent_in_empty = [((a, b), (t - start) / 1e6) for t in sent_at.values() for a, b in runs
                     if start + a * 1_000_000 <= t < start + b * 1_000_000 - longest]
    assert sent_in_empty == [], f"after elimination was empty while the talker sent (longest transit {longest} ns)"
    assert len(empty) < 0.02 * last, f"the talker paused in {len(empty)} of {last} ms"


def test_control_timeline_stops_while_path_a_is_cut(control_bed, tmp_path):
    result, tl = run(control_bed, tmp_path)
    series = tl["series"]
    inside = cut_bins(tl, "a")
    for name_ in ("path_a", "after_elimination"):
        assert series[name_][inside] == [0] * (inside.stop - inside.start), f"{name_} not empty in the cut"
    assert sum(series["path_b"]) == 0 and "all zeros" in tl["counted"], "path b carries nothing in control mode"
    assert sum(series["path_a"]) == sum(series["after_elimination"]) == result["received"]
    assert 0.9 * 2000 <= result["lost"] <= 1.1 * 2000, failover.summary(result)


def test_a_failing_run_leaves_no_tcpdump_and_keeps_the_captures(control_bed, tmp_path):
    """Something else holds the stream's port at the listener: `gen recv` fails after the
    captures started and the stream ran. The run raises; every tcpdump is stopped and waited
    for, the raw captures stay, nothing is derived, no path is left cut."""
    blocker = subprocess.Popen([*control_bed.prefix("listener"), sys.executable, "-c",
                                "import socket, time\n"
                                f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('', {failover.PORT}))\n"
                                "print('bound', flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        assert blocker.stdout.readline().strip() == "bound"
        with pytest.raises(ToolFailed, match="gen recv failed"):
            failover.run(control_bed.name, SCHEDULE, tmp_path)
    finally:
        blocker.kill()
        blocker.wait()
    assert tcpdumps(tmp_path) == []
    assert CAPTURES <= {p.name for p in tmp_path.iterdir()} and not (tmp_path / "timeline.json").exists()
    assert timeline.data_times(tmp_path / "talker.pcap", failover.PORT), "the talker's capture holds the stream"
    assert not any(p["settings"]["forward"]["down"] for p in control_bed.status()["paths"].values())


def test_ctrl_c_during_the_stream_leaves_no_tcpdump_and_no_testbed(tmp_path):
    tb_name = name("ti")
    with interruptible([*CLI, "failover", "--name", tb_name, "--rate-fps", "2000", "--duration", "3",
                        "--cut-a", "0.5,1.5", "--cut-b", "2,2.5", "--output", str(tmp_path)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as run_:
        deadline = time.monotonic() + 60
        while len(tcpdumps(tmp_path)) < len(CAPTURES):
            assert run_.poll() is None and time.monotonic() < deadline, "the captures did not start"
            time.sleep(0.05)
        time.sleep(1.0)  # into the stream
        run_.send_signal(signal.SIGINT)  # to frerlab only: it must stop its captures itself
        _, err = run_.communicate(timeout=60)
    assert run_.returncode == 130, err
    assert tcpdumps(tmp_path) == []
    assert tb_name not in bed.running() and not any(ns.startswith(f"tb-{tb_name}-") for ns in os.listdir("/run/netns"))
    assert not (tmp_path / "timeline.json").exists()
