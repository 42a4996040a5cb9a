"""Benchmark campaigns on real testbeds: the quick campaign against the truth of a DUT whose
capacity is known (paths shaped below the hosts' links), the validity flags raised by real
trials (a generator asked for more than it can send, a talker offering beyond its link, a
listener that stops reading), FRER's own counters recorded beside a trial's loss, and an
interrupted campaign completed by --resume."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import NEEDS_BPF, ROOT, binomial_bounds, interruptible, processes_naming
from frerlab.bench.run import campaign_testbed
from frerlab.bench import campaign, target
from frerlab.bench.steps import Context
from frerlab.bench.steps import loss_vs_load as loss_vs_load_step
from frerlab.bench.steps import throughput as throughput_step
from frerlab.bench.trial import generator_trial
from frerlab.testbed import bed

pytestmark = NEEDS_BPF
CLI = [sys.executable, "-m", "frerlab.cli"]

#: quick.yaml's DUT: paths at 10 Mbit/s behind 20 Mbit/s host links, 32 KiB queues.
PATH_BPS, LINK_BPS, QUEUE = 10e6, 20e6, 32768
#: The tags a frame carries on a path: with FRER a VLAN tag and an R-TAG (4 + 6 bytes).
TAGS = {"frer": 4 + 6, "control": 0}


def capacity_fps(mode: str, frame: int, duration_s: float) -> float:
    """Frames/s a path forwards over a trial of `duration_s`: its rate, plus what its queue and
    its token bucket's burst (at least two 1506-byte frames, and 1 ms) absorb once."""
    wire = frame + TAGS[mode] + 20  # what the token bucket charges: the frame as on the wire
    held = frame + TAGS[mode] - 4  # what the queue limit counts: the bytes a veth carries (no FCS)
    burst = max(2 * 1506 + 64, PATH_BPS / 8 / 1000)
    return PATH_BPS / (wire * 8) + (QUEUE / held + burst / wire) / duration_s


def line_fps(frame: int) -> float:
    return LINK_BPS / ((frame + 20) * 8)


def metrics(out: Path, unit_id: str) -> dict:
    return json.loads((out / "units" / unit_id / "result.json").read_text())["metrics"]


@pytest.mark.timing
def test_quick_campaign_measures_the_known_dut_in_under_three_minutes(tmp_path):
    out = tmp_path / "quick"
    started = time.monotonic()
    done = subprocess.run([*CLI, "bench", "run", str(ROOT / "campaigns" / "quick.yaml"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    assert took < 180, f"the quick campaign took {took:.0f} s"
    assert campaign_testbed(out) not in bed.running()
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["runs"][-1]["ended"] == "complete" and meta["commit"] and meta["tools"]["iperf3"]
    assert (out / "campaign.yaml").read_text() == (ROOT / "campaigns" / "quick.yaml").read_text()
    results = [json.loads(p.read_text()) for p in (out / "units").rglob("result.json")]
    assert len(results) == 22 and all(r["valid"] for r in results), [r["flags"] for r in results if not r["valid"]]
    # raw outputs first: every tool's own file is there beside the result
    assert (out / "units/tcp/frer/duration_s=2/r1/iperf3.json").exists()
    assert (out / "units/latency/frer/tool=sockperf,frame_size=512,load=0/r1/sockperf.txt").exists()
    assert (out / "units/throughput/frer/frame_size=1024/r1/trials/000/send.json").exists()
    assert (out / "units/latency/frer/tool=oneway,frame_size=512,load=30/r1/bg-recv.json").exists()

    # throughput (MLR): NDR within 2 % of the truth over its 2 s final trials
    ndr = metrics(out, "throughput/frer/frame_size=1024/r1")["throughput_fps_loss_0"]
    assert ndr == pytest.approx(capacity_fps("frer", 1024, 2.0), rel=0.02)
    # loss vs load: none at 40 %; at 60 %, the control path drops the excess over its capacity;
    # FRER at most that: its two paths are shaped alike but by independent timers, so their
    # tail drops do not always hit the same frames, and the listener takes either copy (seen:
    # 9.0-12.3 % against 13.1 %)
    for mode in ("frer", "control"):
        for r in (1, 2):
            assert metrics(out, f"loss_vs_load/{mode}/frame_size=1024,load=40/r{r}")["loss_percent"] == 0
            offered = line_fps(1024) * 0.6
            expected = (1 - capacity_fps(mode, 1024, 1.0) / offered) * 100
            measured = metrics(out, f"loss_vs_load/{mode}/frame_size=1024,load=60/r{r}")["loss_percent"]
            if mode == "control":
                assert measured == pytest.approx(expected, abs=1.0), mode
            else:
                assert 0 < measured <= expected + 1.0, mode
    # threshold sweep: the verified zero-loss load is at most the truth over 2 s and within a
    # fine step (2 %) and a verify step below it
    sweep = metrics(out, "threshold_sweep/frer/frame_size=1024/r1")
    truth_load = capacity_fps("frer", 1024, 2.0) / line_fps(1024) * 100
    assert truth_load - 4.5 <= sweep["zero_loss_threshold_load"] <= truth_load
    assert sweep["loss_onset_load"] > sweep["zero_loss_threshold_load"]
    # back-to-back: the path's queue absorbs a burst arriving at twice its rate; about 2 x
    # (queue + burst) / frame, so between a quarter and the whole of twice that
    b2b = metrics(out, "back_to_back/frer/frame_size=1024/r1")["back_to_back_frames"]
    assert 15 <= b2b <= 2 * (QUEUE + 3076) / 1030
    recovery = metrics(out, "recovery/frer/frame_size=1024/r1")
    assert recovery["lost_during_overload"] > 0 and 0 <= recovery["recovery_ms"] < 100
    frer, control = metrics(out, "failover/frer/load=20/r1"), metrics(out, "failover/control/load=20/r1")
    assert (frer["lost"], frer["duplicates"], frer["passed"]) == (0, 0, 1.0)
    assert control["lost"] > 0
    for tool in ("sockperf", "oneway"):
        for load in (0, 30):
            m = metrics(out, f"latency/frer/tool={tool},frame_size=512,load={load}/r1")
            assert m["samples"] > 100 and 0 < m["min_us"] <= m["mean_us"] <= m["max_us"]
            assert m["p99_9_us"] is None and m["tsn_pass"] is None  # too few samples for P99.9
    summary = json.loads((out / "summary.json").read_text())
    assert any(c["metric"] == "throughput_mbps" and c["step"] == "tcp" for c in summary["comparisons"])
    assert "FRER vs control:" in done.stdout and "results in" in done.stdout
    # the report of what it measured: every step's figure, a fail-over timeline per mode
    report = subprocess.run([*CLI, "report", str(out), "-o", str(tmp_path / "report.html")], capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    images = {p.stem for p in (tmp_path / "report-images").glob("*.png")}
    assert {"throughput-vs-frame-size", "latency-percentiles", "loss-vs-load", "tcp-baseline"} <= images
    assert sum(name.startswith("failover-") for name in images) == 2


@pytest.fixture(scope="module")
def slow_bed():
    with bed.Testbed(name=f"bt{os.getpid() % 100000}", mode="control", rate="10Mbps") as tb:
        yield target.TestbedTarget("control", 10_000_000, testbed=tb.name)


@pytest.mark.timing
def test_a_generator_that_cannot_send_the_offered_rate_makes_the_trial_invalid(slow_bed, tmp_path):
    t = generator_trial(slow_bed, 64, 5_000_000, 0.5, tmp_path)
    assert t.sent < t.offered / 2
    assert [f.name for f in t.flags if f.invalidates] == ["generator_shortfall"] and not t.valid
    assert t.attempts == 1 and not (tmp_path / "attempt-1").exists()  # it cannot reach the rate: not run again
    assert json.loads((tmp_path / "trial.json").read_text())["valid"] is False


def test_a_campaign_system_chooses_the_generator_mode_and_an_xdp_trial_counts_every_frame(slow_bed, tmp_path):
    assert campaign.System(generator="xdp").generator == "xdp"
    with pytest.raises(ValueError, match="generator\n.*'udp', 'raw' or 'xdp'"):
        campaign.System(generator="dpdk")
    xdp = dataclasses.replace(slow_bed, generator="xdp")
    t = generator_trial(xdp, 512, xdp.fps(512, 50), 1.0, tmp_path)
    sent, received = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("send", "recv"))
    assert sent["mode"] == received["mode"] == "xdp" and received["xsk_bind"] == "copy"
    assert t.valid and t.sent == t.offered and t.received == t.sent, t.flags


@pytest.mark.timing
def test_a_talker_offering_beyond_its_link_is_flagged_as_lost_before_the_dut(slow_bed, tmp_path):
    # 300 % of the line rate for 2 s: 4 MB more than the link carries, the talker's queue holds 1.5 MB
    t = generator_trial(slow_bed, 1518, slow_bed.fps(1518, 300), 2.0, tmp_path)
    host = t.drops_by_link.get("talker:eth0", 0)
    assert host > 0 and "sender_host_drops" in [f.name for f in t.flags] and not t.valid
    assert t.attempts == 1  # the offered load's own fault: not run again
    # what the talker dropped (data frames, and maybe the 3 end-of-stream probes) is part of the
    # loss, and is not the DUT's
    assert t.lost >= host - 3


@pytest.mark.timing
def test_a_search_the_generator_cannot_finish_keeps_the_trials_it_ran(slow_bed, tmp_path):
    # the testbed claimed to be 10 Gbit/s: half its 64-byte line rate, 7.4 M frames/s, is beyond any sender here
    fast = dataclasses.replace(slow_bed, rate_bps=10_000_000_000)
    step = campaign.Throughput(kind="throughput", frame_sizes=[64],
                               search={"kind": "binary", "iterations": 2, "trial_s": 0.5})
    outcome = throughput_step.run(Context(fast, tmp_path), step, {"frame_size": 64})
    assert not outcome["valid"] and outcome["flags"][-1]["name"] == "failed" and not outcome["metrics"]
    detail = outcome["detail"]
    # the first rate's three attempts, each on disk, none counted
    assert [t["counted"] for t in detail["trials"]] == [False] * 3 and detail["total_trial_s"] == 1.5
    assert sorted(p.name for p in (tmp_path / "trials").iterdir()) == ["000", "001", "002"]
    assert detail["goals"] == [{"loss_ratio": 1e-5, "rate": None}]


@pytest.mark.timing
def test_a_link_carries_the_frames_per_second_of_ethernet_not_of_the_bytes_a_veth_carries(slow_bed, tmp_path):
    # 115 % of 10 Mbit/s Ethernet in 64-byte frames (84 bytes each on the wire) for 2 s backs the
    # talker's link up by 0.3 s; a token bucket charging only the 60 bytes a veth carries would
    # pass 140 % and queue nothing. (The backlog holds the sender's socket memory, so the sender
    # may fall behind its schedule and the trial be flagged: every frame is still sent.)
    t = generator_trial(slow_bed, 64, slow_bed.fps(64, 115), 2.0, tmp_path, attempts=1)
    assert t.sent >= t.offered and t.lost == 0, t.flags
    backlog_s = t.latency_ns["max"] / 1e9
    assert 0.22 <= backlog_s <= 0.36, f"the last frames waited {backlog_s:.3f} s"


def test_a_listener_that_stops_reading_is_flagged_as_lost_after_the_dut(slow_bed, tmp_path):
    listener_ns = bed.read_state(slow_bed.testbed)["namespaces"]["listener"]

    def pause_receiver() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            recv = processes_naming("frerlab.cli gen recv", namespace=listener_ns)
            if recv:
                time.sleep(0.8)  # the sender has started
                pids = [int(line.split()[0]) for line in recv]
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                time.sleep(8.0)
                for pid in pids:
                    os.kill(pid, signal.SIGCONT)
                return
            time.sleep(0.05)

    pauser = threading.Thread(target=pause_receiver)
    pauser.start()
    # the receiver asks for a 32 MiB socket buffer: 8 s of 13,400 small frames/s overflow it
    t = generator_trial(slow_bed, 64, slow_bed.fps(64, 90), 10.0, tmp_path)
    pauser.join()
    first = tmp_path / "attempt-1"
    assert json.loads((first / "recv.json").read_text())["socket_drops"] > 0
    flagged = json.loads((first / "trial.json").read_text())
    assert "receiver_socket_drops" in [f["name"] for f in flagged["flags"]] and not flagged["valid"]
    # a passing fault of the tester, not the DUT's loss: the trial ran again, unpaused
    assert t.attempts >= 2


def loss_vs_load_unit(tb: bed.Testbed, mode: str, out: Path) -> tuple[dict, dict]:
    """A loss_vs_load unit of 1024-byte frames at 20 % for 1 s on `tb`: its result, and the
    listener's account of the stream (recv.json). The listener must have counted every frame
    that reached it (no socket drops); a generator that fell behind its schedule on a busy
    machine, which invalidates the unit, changes nothing FRER counts."""
    system = target.TestbedTarget(mode, tb.settings.rate_bps, testbed=tb.name)
    step = campaign.LossVsLoad(kind="loss_vs_load", frame_sizes=[1024], loads=[20], trial_s=1)
    unit = loss_vs_load_step.run(Context(system, out), step, {"frame_size": 1024, "load": 20})
    assert "receiver_socket_drops" not in [f["name"] for f in unit["flags"]], unit["flags"]
    (stream,) = json.loads((out / "recv.json").read_text())["streams"]
    return unit, stream


def test_a_frer_trial_records_what_the_eliminating_node_passed_and_discarded(frer_bed, tmp_path):
    unit, stream = loss_vs_load_unit(frer_bed, "frer", tmp_path)
    assert unit["metrics"]["lost"] == 0
    frer = unit["detail"]["frer"]
    # each direction's sequence recovery, at the node that eliminates it
    assert set(frer) == {"sw1", "sw2"} and set(frer["sw2"]) == {"1"} and set(frer["sw1"]) == {"2"}
    sequence = frer["sw2"]["1"]["sequence"]
    assert sequence["config"] == {"algorithm": "vector", "history_length": 32, "reset_timeout_ms": 1000,
                                  "take_no_sequence": False}
    counters = sequence["counters"]
    # every frame the listener got passed elimination once, the 3 end-of-stream probes too;
    # the copy from the other path was discarded
    passed = unit["detail"]["received"] + stream["duplicates"] + stream["end_probes"]
    assert counters["passed_packets"] == passed and counters["discarded_packets"] == passed, counters
    assert counters["lost_packets"] == counters["rogue_packets"] == counters["tagless_packets"] == 0
    assert frer["sw1"]["2"]["sequence"]["counters"]["passed_packets"] == 0  # nothing came back


def test_a_frer_trial_with_one_lossy_path_discards_fewer_than_it_passes_and_loses_none(frer_bed, tmp_path):
    # 20 % Bernoulli loss on path a towards the listener: every frame still arrives over path b,
    # and only the frames both paths delivered leave a copy to discard
    frer_bed.impair("a", "forward", loss=0.2)
    try:
        unit, stream = loss_vs_load_unit(frer_bed, "frer", tmp_path)
    finally:
        frer_bed.impair("a", clear=True)
    assert unit["metrics"]["lost"] == 0
    counters = unit["detail"]["frer"]["sw2"]["1"]["sequence"]["counters"]
    passed = counters["passed_packets"]
    assert passed == unit["detail"]["received"] + stream["duplicates"] + stream["end_probes"]
    low, high = binomial_bounds(passed, 0.8)
    assert low <= counters["discarded_packets"] / passed <= high, counters
    assert counters["lost_packets"] == 0


def test_a_control_trial_records_no_frer_counters(control_bed, tmp_path):
    unit, _ = loss_vs_load_unit(control_bed, "control", tmp_path)
    assert "frer" not in unit["detail"]
    assert "frer" not in json.loads((tmp_path / "trial.json").read_text())


RESUMABLE = """
name: resumable
system: {modes: [control], rate: 20Mbps}
steps:
  - kind: loss_vs_load
    frame_sizes: [512]
    loads: [10, 20, 30, 40, 50]
    trial_s: 0.5
"""


def test_an_interrupted_campaign_is_consistent_and_resume_completes_it_without_redoing(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(RESUMABLE)
    out = tmp_path / "out"
    with interruptible([*CLI, "bench", "run", str(campaign), "--out", str(out)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True) as run:
        deadline = time.monotonic() + 120
        while len(list(out.rglob("result.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        stdout, _ = run.communicate(timeout=60)
    assert run.returncode == 130 and "--resume" in stdout
    assert campaign_testbed(out) not in bed.running()
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["runs"][-1]["ended"] == "interrupted"
    finished = {p: p.read_text() for p in out.rglob("result.json")}
    assert 2 <= len(finished) < 5
    assert all(json.loads(text)["valid"] for text in finished.values())
    before = {p: p.stat().st_mtime_ns for p in finished}

    other = tmp_path / "other.yaml"
    other.write_text(RESUMABLE.replace("trial_s: 0.5", "trial_s: 0.6"))
    refused = subprocess.run([*CLI, "bench", "run", str(other), "--out", str(out), "--resume"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "another campaign" in refused.stderr

    done = subprocess.run([*CLI, "bench", "run", str(campaign), "--out", str(out), "--resume"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resuming: {len(finished)} of 5 units done already" in done.stderr
    assert len(list(out.rglob("result.json"))) == 5
    assert all(p.stat().st_mtime_ns == before[p] and p.read_text() == finished[p] for p in finished)
    meta = json.loads((out / "metadata.json").read_text())
    assert [r["ended"] for r in meta["runs"]] == ["interrupted", "complete"]
    summary = json.loads((out / "summary.json").read_text())
    # Every unit counted once, the resumed ones with the rest (a unit run on a busy machine may
    # be flagged invalid, e.g. a generator shortfall: that is the flag working, not resume).
    assert len(summary["groups"]) == 5 and all(g["units"] == 1 for g in summary["groups"])
    assert sum(g["valid_units"] for g in summary["groups"]) == sum(json.loads(p.read_text())["valid"]
                                                                   for p in out.rglob("result.json"))


TWO_STEPS = """
name: two-steps
system: {modes: [control], rate: 20Mbps}
steps:
  - kind: tcp
    durations_s: [1]
  - kind: loss_vs_load
    frame_sizes: [512]
    loads: [10, 20]
    trial_s: 0.5
"""


def test_steps_runs_only_those_steps_and_resume_adds_the_others(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(TWO_STEPS)
    out = tmp_path / "out"
    refused = subprocess.run([*CLI, "bench", "run", str(campaign), "--out", str(out), "--steps", "latency"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "--steps latency: campaign 'two-steps' has no step of that kind (its steps: tcp, loss_vs_load)" in refused.stderr
    part = subprocess.run([*CLI, "bench", "run", str(campaign), "--out", str(out), "--steps", "loss_vs_load"],
                          capture_output=True, text=True, timeout=300)
    assert part.returncode == 0, part.stderr[-2000:]
    kinds = lambda: sorted(json.loads(p.read_text())["unit"]["kind"] for p in out.rglob("result.json"))  # noqa: E731
    assert kinds() == ["loss_vs_load", "loss_vs_load"]
    loss_results = {p: p.read_text() for p in out.rglob("result.json")}
    assert json.loads((out / "metadata.json").read_text())["runs"][-1]["ended"] == "partial"
    rest = subprocess.run([*CLI, "bench", "run", str(campaign), "--out", str(out), "--resume"],
                          capture_output=True, text=True, timeout=300)
    assert rest.returncode == 0, rest.stderr[-2000:]
    assert "resuming: 2 of 3 units done already" in rest.stderr
    assert kinds() == ["loss_vs_load", "loss_vs_load", "tcp"]
    assert all(p.read_text() == text for p, text in loss_results.items())
    assert [r["ended"] for r in json.loads((out / "metadata.json").read_text())["runs"]] == ["partial", "complete"]


def test_a_campaigns_path_impairment_loses_the_talkers_frames_on_that_path(tmp_path):
    # 20 % Bernoulli loss on path a's talker-to-listener direction: the control network's one
    # path, so about a fifth of the stream is lost (over ~960 frames the binomial's standard
    # deviation is 1.3 points)
    c = tmp_path / "c.yaml"
    c.write_text(json.dumps({"name": "impaired", "system": {"modes": ["control"], "rate": "20Mbps",
                                                            "impair": {"a": {"loss": 0.2}}},
                             "steps": [{"kind": "loss_vs_load", "frame_sizes": [1024], "loads": [20],
                                        "trial_s": 2}]}))
    out = tmp_path / "out"
    done = subprocess.run([*CLI, "bench", "run", str(c), "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    unit = json.loads((out / "units/loss_vs_load/control/frame_size=1024,load=20/r1/result.json").read_text())
    assert unit["valid"] and 15 <= unit["metrics"]["loss_percent"] <= 25, (unit["metrics"], unit["flags"])
