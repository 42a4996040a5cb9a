"""Benchmark campaigns without a testbed: the campaign file's validation, the plan and its
dry run, the validity flags of a trial, and the summary's statistics and comparisons."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from frerlab.bench import stats
from frerlab.bench.campaign import TRIAL_OVERHEAD_S, Campaign, fingerprint, parse_campaign, plan, plan_text, read_campaign
from frerlab.bench.cli import resume_command
from frerlab.bench.results import summarize, summary_csv
from frerlab.bench.search import GeneratorShortfall, TrialResult, binary_search
from frerlab.bench.steps.recovery import spoiled_by_tester as recovery_spoiled_by_tester
from frerlab.bench.trial import Flag, TrialOutcome, flags
from frerlab.errors import UsageError

CLI = [sys.executable, "-m", "frerlab.cli"]


def campaign(**steps_and_system):
    data = {"name": "t", "steps": steps_and_system.pop("steps", [{"kind": "tcp"}])}
    data.update(steps_and_system)
    return parse_campaign(data, "t.yaml")


@pytest.mark.parametrize("data, message", [
    ({"name": "t", "steps": [{"kind": "tcpx"}]}, "steps.0: Input tag 'tcpx'"),
    ({"name": "t", "steps": [{"kind": "tcp", "durations_s": [0]}]}, "steps.0.tcp.durations_s.0"),
    ({"name": "t", "steps": [{"kind": "loss_vs_load", "loads": [-5]}]}, "steps.0.loss_vs_load.loads.0"),
    ({"name": "t", "steps": [{"kind": "throughput", "frame_sizes": [63]}]}, "steps.0.throughput.frame_sizes.0"),
    ({"name": "t", "steps": [{"kind": "throughput", "min_load": 50, "max_load": 40}]}, "min_load 50.0 must be below"),
    ({"name": "t", "steps": [{"kind": "throughput", "search": {"kind": "binary", "iterations": 0}}]},
     "search.binary.iterations"),
    ({"name": "t", "system": {"rate": "1kbps"}, "steps": [{"kind": "tcp"}]}, "rate 1kbps is out of range"),
    ({"name": "t", "system": {"rate": "20Mbps", "path_rate": "30Mbps"}, "steps": [{"kind": "tcp"}]},
     "path rate 30Mbps is out of range"),
    ({"name": "t", "system": {"modes": ["frer", "frer"]}, "steps": [{"kind": "tcp"}]}, "names a mode twice"),
    ({"name": "t", "steps": [{"kind": "tcp"}, {"kind": "tcp", "name": "tcp-1"}, {"kind": "tcp"}]},
     "step name 'tcp-1' is given twice"),
    ({"name": "../x", "steps": [{"kind": "tcp"}]}, "campaign name"),
    ({"name": "t", "steps": []}, "steps"),
    ({"name": "t", "steps": [{"kind": "tcp", "bogus": 1}]}, "bogus"),
    ({"name": "t", "steps": [{"kind": "failover", "cut_a": [2, 1]}]}, "cuts a (2.0, 1.0) and b (4.0, 5.0) must come"),
    ({"name": "t", "system": {"impair": {"c": {"loss": 0.1}}}, "steps": [{"kind": "tcp"}]}, "system.testbed.impair.c"),
    ({"name": "t", "system": {"impair": {"a": {"los": 0.1}}}, "steps": [{"kind": "tcp"}]},
     "impair.a: 'los' is not an impairment (down, loss,"),
    ({"name": "t", "system": {"impair": {"a": {"loss": 1.5}}}, "steps": [{"kind": "tcp"}]},
     "impair.a: loss 1.5 is out of range (0..=1)"),
])
def test_a_bad_campaign_is_refused_naming_the_field(data, message):
    with pytest.raises(UsageError) as err:
        parse_campaign(data, "c.yaml")
    assert message in str(err.value) and str(err.value).startswith("c.yaml")


def test_the_plan_runs_mode_by_mode_with_repetitions_innermost_and_ids_unique():
    c = campaign(steps=[{"kind": "tcp", "durations_s": [1, 2], "repetitions": 2},
                        {"kind": "loss_vs_load", "modes": ["frer"], "frame_sizes": [512], "loads": [50],
                         "trial_s": 3}])
    units = plan(c)
    assert [(u.mode, u.step, u.params, u.repetition) for u in units] == [
        ("frer", "tcp", {"duration_s": 1.0}, 1), ("frer", "tcp", {"duration_s": 1.0}, 2),
        ("frer", "tcp", {"duration_s": 2.0}, 1), ("frer", "tcp", {"duration_s": 2.0}, 2),
        ("frer", "loss_vs_load", {"frame_size": 512, "load": 50.0}, 1),
        ("control", "tcp", {"duration_s": 1.0}, 1), ("control", "tcp", {"duration_s": 1.0}, 2),
        ("control", "tcp", {"duration_s": 2.0}, 1), ("control", "tcp", {"duration_s": 2.0}, 2)]
    assert len({u.id for u in units}) == len(units)
    assert units[4].estimate_s == 3 + TRIAL_OVERHEAD_S
    assert units[0].id == "tcp/frer/duration_s=1/r1"


def test_the_seed_campaign_is_the_seeds_methodology():
    c, _ = read_campaign(ROOT / "campaigns" / "seed-methodology.yaml")
    steps = {s.kind: s for s in c.steps}
    assert steps["tcp"].durations_s == [10, 30, 60] and steps["tcp"].repetitions == 3
    t = steps["throughput"]
    assert t.frame_sizes == [64, 128, 256, 512, 1024, 1280, 1518]
    assert (t.search.kind, t.search.iterations, t.search.trial_s, t.search.loss_threshold) == ("binary", 10, 30, 1e-5)
    assert (t.min_load, t.max_load) == (0, 100)
    lat = steps["latency"]
    assert (lat.tools, lat.duration_s, lat.repetitions, lat.verdict.percentile, lat.verdict.limit_us) == \
        (["sockperf"], 60, 3, 99.9, 300)
    loss = steps["loss_vs_load"]
    assert loss.loads == [50, 60, 70, 80, 90, 95, 98, 100, 102, 105, 110] and loss.frame_sizes == [64, 512, 1518]
    assert (loss.trial_s, loss.repetitions) == (10, 3)
    sweep = steps["threshold_sweep"]
    assert (sweep.coarse.trial_s, sweep.fine.trial_s, sweep.verify.trial_s, sweep.ultra_fine.trial_s) == (5, 10, 30, 10)


def test_the_small_frame_campaign_is_the_seed_campaign_at_a_lower_rate_and_nothing_else():
    small, _ = read_campaign(ROOT / "campaigns" / "seed-small-frames.yaml")
    seed, _ = read_campaign(ROOT / "campaigns" / "seed-methodology.yaml")
    assert small.system.rate_bps == 5_000_000
    assert small.system.model_dump() == {**seed.system.model_dump(), "rate": small.system.rate}
    seed_steps = {s.kind: s.model_dump() for s in seed.steps}
    varied = {"name", "frame_sizes", "loads"}
    for step in small.steps:
        mine = step.model_dump()
        # every other parameter (search, trial length, repetitions, loads' meaning) is the seed campaign's
        assert {k: v for k, v in mine.items() if k not in varied} == \
            {k: v for k, v in seed_steps[step.kind].items() if k not in varied}
        assert set(mine["frame_sizes"]) <= set(seed_steps[step.kind]["frame_sizes"])
        assert set(mine.get("loads", [])) <= set(seed_steps[step.kind].get("loads", []))


def test_the_methodology_experiment_runs_the_seeds_two_procedures_on_one_network():
    c, _ = read_campaign(ROOT / "campaigns" / "methodology-experiment.yaml")
    assert c.system.modes == ["control"] and c.system.impair == {"a": {"loss": 1e-5}}
    search, sweep = c.steps
    assert (search.kind, search.frame_sizes, search.repetitions) == ("throughput", [1518], 3)
    assert (search.search.kind, search.search.iterations, search.search.trial_s, search.search.loss_threshold) == \
        ("binary", 10, 30, 1e-5)
    assert (sweep.kind, sweep.frame_size, sweep.repetitions) == ("threshold_sweep", 1518, 3)
    assert {p.trial_s for p in (sweep.coarse, sweep.fine, sweep.verify, sweep.ultra_fine)} == {5}


def test_the_fingerprint_is_the_meaning_not_the_writing_and_ignores_defaults():
    data = yaml.safe_load((ROOT / "campaigns" / "quick.yaml").read_text())
    base = fingerprint(parse_campaign(data))
    spelled_out = copy.deepcopy(data)
    spelled_out["steps"][0]["repetitions"] = 2  # as before
    spelled_out["system"]["replicate_at"] = "sw1"  # the default, written out
    assert fingerprint(parse_campaign(spelled_out)) == base
    changed = copy.deepcopy(data)
    changed["steps"][0]["durations_s"] = [3]
    assert fingerprint(parse_campaign(changed)) != base
    # a later schema with one more field (at its default) reads the same file the same
    later = type("LaterCampaign", (Campaign,), {"__annotations__": {"new_knob": int}, "new_knob": 0})
    assert fingerprint(later.model_validate(data)) == base


def test_dry_run_prints_the_plan_and_its_duration_and_runs_nothing():
    done = subprocess.run([*CLI, "bench", "run", str(ROOT / "campaigns" / "seed-methodology.yaml"), "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    c, _ = read_campaign(ROOT / "campaigns" / "seed-methodology.yaml")
    units = plan(c)
    assert done.stdout.startswith(f"campaign seed-methodology: {len(units)} units")
    # seven frame sizes x 10 iterations x 30 s of binary search alone, per mode: over 35 minutes
    assert "frer    throughput           7 points x 1 rep." in done.stdout
    assert "total (estimate" in done.stdout.splitlines()[-1] and " h " in done.stdout.splitlines()[-1]
    assert plan_text(c, units) == done.stdout.strip()


def test_the_quick_campaign_is_estimated_under_three_minutes():
    c, _ = read_campaign(ROOT / "campaigns" / "quick.yaml")
    from frerlab.bench.campaign import total_estimate_s
    assert total_estimate_s(c, plan(c)) < 180
    assert {s.kind for s in c.steps} == {"tcp", "throughput", "latency", "loss_vs_load", "back_to_back", "recovery",
                                        "failover", "threshold_sweep"}


def test_a_bad_campaign_file_is_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("name: t\nsteps:\n  - kind: loss_vs_load\n    loads: [50, many]\n")
    done = subprocess.run([*CLI, "bench", "run", str(bad), "--dry-run"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "steps.0.loss_vs_load.loads.1" in done.stderr


def outcome(**changes) -> TrialOutcome:
    base = dict(frame_size=512, rate_fps=1000.0, duration_s=1.0, offered=1000, sent=1000, received=1000,
                duplicates=0, reordered=0, latency_ns=None, drops_by_link={}, sender_cpu=0.3, receiver_cpu=0.1,
                host_cpu=0.4)
    return TrialOutcome(**{**base, **changes})


@pytest.mark.parametrize("changes, sender, receiver, expected", [
    ({}, {}, {}, []),
    ({"sent": 990}, {}, {}, [("generator_shortfall", True)]),
    ({"sent": 1000}, {"shortfall": True, "shortfall_reason": "lagged 3 ms"}, {}, [("generator_shortfall", True)]),
    ({"drops_by_link": {"talker:eth0": 7, "sw1:pa": 3}}, {}, {}, [("sender_host_drops", True)]),
    ({"drops_by_link": {"sw1:pa": 3}}, {}, {}, []),
    ({}, {}, {"socket_drops": 12}, [("receiver_socket_drops", True)]),
    ({"sender_cpu": 0.97}, {}, {}, [("sender_cpu_saturated", False)]),
    ({"receiver_cpu": 0.99}, {}, {}, [("receiver_cpu_saturated", False)]),
    ({"host_cpu": 0.96}, {}, {}, [("host_cpu_saturated", False)]),
])
def test_each_validity_flag_is_raised_by_its_evidence_alone(changes, sender, receiver, expected):
    t = outcome(**changes)
    t.flags = flags(t, sender, receiver, send_tolerance=0.001, talker_egress="talker:eth0")
    assert [(f.name, f.invalidates) for f in t.flags] == expected
    assert t.valid == (not any(invalid for _, invalid in expected))


def test_a_search_retries_invalid_trials_and_never_counts_them_as_loss():
    calls = []

    def trial(rate, duration):
        calls.append(rate)
        # every second trial is lost at the sending host: invalid, whatever it lost
        if len(calls) % 2:
            return TrialResult(100, 100, 40, duration, invalid="the talker's queue dropped 60 frames")
        return TrialResult(100, 100, 100 if rate <= 50 else 90, duration)

    found = binary_search(trial, 0, 100, iterations=4, trial_duration_s=1, loss_threshold=0)
    assert [t.valid for t in found.trials] == [False, True] * 4
    assert found.goals[0].rate == 50.0

    with pytest.raises(GeneratorShortfall, match="was invalid, the last because the talker's queue"):
        binary_search(lambda r, d: TrialResult(100, 100, 0, d, invalid="the talker's queue dropped 100 frames"),
                      0, 100, iterations=2, trial_duration_s=1)


def unit_result(step, mode, params, rep, metrics, valid=True, flag_names=()):
    return {"unit": {"step": step, "kind": step, "mode": mode, "params": params, "repetition": rep},
            "metrics": metrics, "valid": valid, "detail": {},
            "flags": [{"name": n, "detail": "", "invalidates": not valid} for n in flag_names]}


def test_the_summary_gives_every_metric_its_statistics_from_valid_units_only():
    results = [unit_result("tcp", "frer", {"duration_s": 10}, r, {"throughput_mbps": v})
               for r, v in enumerate([94.0, 95.0, 96.0], 1)]
    results.append(unit_result("tcp", "frer", {"duration_s": 10}, 4, {"throughput_mbps": 10.0}, valid=False,
                               flag_names=["generator_shortfall"]))
    results += [unit_result("tcp", "control", {"duration_s": 10}, r, {"throughput_mbps": v})
                for r, v in enumerate([97.0, 98.0, 99.5], 1)]
    summary = summarize(results)
    frer = summary["groups"][0]
    assert (frer["units"], frer["valid_units"], frer["flags"]) == (4, 3, {"generator_shortfall": 1})
    m = frer["metrics"]["throughput_mbps"]
    assert m["n"] == 3 and m["mean"] == pytest.approx(95.0) and m["std"] == pytest.approx(1.0)
    half = stats.summarize([94.0, 95.0, 96.0]).half_width
    assert (m["ci_low"], m["ci_high"]) == pytest.approx((95 - half, 95 + half))
    assert m["cv"] == pytest.approx(1 / 95)
    (comparison,) = summary["comparisons"]
    expected = stats.welch([94.0, 95.0, 96.0], [97.0, 98.0, 99.5])
    assert comparison["difference"] == pytest.approx(95 - 98.1666667)
    assert (comparison["t"], comparison["p"], comparison["hedges_g"]) == pytest.approx(
        (expected.t, expected.p, expected.hedges_g))
    assert comparison["significant"] and comparison["effect"] == "large"
    rows = summary_csv(summary).splitlines()
    assert rows[0].startswith("step,mode,params,metric,n,mean,std,cv,ci_low,ci_high")
    assert rows[1].startswith("tcp,frer,duration_s=10,throughput_mbps,3,95.0,1.0,")
    assert rows[1].endswith(",4,3,generator_shortfall:1")


def test_one_valid_repetition_has_no_interval_and_no_comparison():
    summary = summarize([unit_result("x", "frer", {}, 1, {"m": 5.0}), unit_result("x", "control", {}, 1, {"m": 6.0})])
    m = summary["groups"][0]["metrics"]["m"]
    assert m["n"] == 1 and m["std"] is None and m["ci_low"] is None and "interval unknown" in m["text"]
    assert summary["comparisons"] == []
    assert not any(isinstance(v, float) and math.isnan(v) for v in m.values())
    json.dumps(summary, allow_nan=False)


def test_an_interrupted_run_names_the_command_that_completes_it():
    assert resume_command(Path("c.yaml"), Path("r1"), None) == "frerlab bench run c.yaml -o r1 --resume"
    assert resume_command(Path("c.yaml"), Path("r1"), ["tcp", "latency"]) == \
        "frerlab bench run c.yaml -o r1 --resume --steps tcp,latency", "resume keeps to the steps it had"


@pytest.mark.parametrize("changes, background, again", [
    ({}, {}, False),                                                    # valid: nothing to redo
    ({}, {"shortfall": True, "unsent_due": 0}, True),                   # the overload lagged, all sent
    ({}, {"shortfall": True, "unsent_due": 40}, False),                 # the overload rate cannot be reached
    ({"flags": [Flag("receiver_socket_drops", "", True)]}, {}, True),  # the listener's socket, once
    ({"flags": [Flag("sender_host_drops", "", True)]}, {}, False),      # lost before the DUT: not passing
    ({"flags": [Flag("sender_host_drops", "", True)]}, {"shortfall": True, "unsent_due": 0}, False),
])
def test_a_recovery_trial_is_redone_only_when_the_tester_spoiled_it_in_passing(changes, background, again):
    assert recovery_spoiled_by_tester(outcome(**changes), background) == again
