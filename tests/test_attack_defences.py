"""Defences against the attacks of frerlab.attack, measured on a real testbed (vector recovery,
the short reset timeout of tests/test_attack.py): the rogue-rate guard (`frerlab dataplane guard`,
control.guard) raises no alarm for rogue frames an attacker sends beyond the window, resets no
function that still passes frames beside a babbler (which a reset would hand the window), and
with --reset bounds the lock-out a forged frame right after a reset causes to a few of the
guard's periods, where without it every genuine frame is rogue until a reset timeout after the
attacker's last frame; the suite tables each attack without and with the guard."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from test_attack import RESET_TIMEOUT_MS, SETS, STREAM, needs_bpf

from frerlab.attack import run, spec, suite
from frerlab.cli import main
from frerlab.errors import UsageError
from frerlab.testbed import bed

CLI = [sys.executable, "-m", "frerlab.cli"]
#: The guard's period and threshold: 20 rogue frames in 50 ms (400/s) is far above what an
#: attacker beyond the window sends here (50/s) and far below a locked-out stream (2000/s).
PERIOD_S, THRESHOLD = 0.05, 20


@pytest.fixture(scope="module")
def tb():
    with bed.Testbed(name=f"dfn{os.getpid() % 100000}", algorithm="vector", reset_timeout_ms=RESET_TIMEOUT_MS) as t:
        yield t


def attack_under_guard(tb: bed.Testbed, out, name: str, reset: bool) -> tuple[dict, list[dict]]:
    """Runs attack `name` while `dataplane guard` watches sw2: the attack's result and the
    guard's findings."""
    sw2 = bed.read_state(tb.name)["dataplanes"]["sw2"]
    argv = [*CLI, "dataplane", "guard", "--name", sw2, "--rogue-threshold", str(THRESHOLD), "--period",
            str(PERIOD_S), "--duration", str(STREAM.duration_s + 8), "--json", *(["--reset"] if reset else [])]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as guard:
        try:
            result = run.run(tb.name, spec.attack(name, SETS.get(name, {})), "a", STREAM, out)
        finally:
            guard.terminate()
        stdout, stderr = guard.communicate(timeout=30)
    assert stdout, stderr
    return result, json.loads(stdout)


@needs_bpf
def test_the_guard_stays_silent_for_rogue_frames_beyond_the_window(tb, tmp_path):
    r, findings = attack_under_guard(tb, tmp_path, "inject-far", reset=True)
    assert r["recovery"]["rogue_packets"] == 40 and r["listener"]["lost"] == 0, run.summary(r)
    assert [f["alarms"] for f in findings] == [0] and findings[0]["most_rogue"] <= THRESHOLD, findings


@needs_bpf
def test_the_guard_does_not_reset_a_stream_that_still_passes_frames_beside_a_babbler(tb, tmp_path):
    r, findings = attack_under_guard(tb, tmp_path, "babble", reset=True)
    (finding,) = findings
    assert finding["alarms"] >= 1 and finding["locked_out"] == finding["resets"] == 0, findings
    assert (r["listener"]["lost"], r["listener"]["duplicates"]) == (0, 0), run.summary(r)


@needs_bpf
def test_the_guard_with_reset_bounds_the_lock_out_after_a_reset_to_its_period(tb, tmp_path):
    bare, _ = attack_under_guard(tb, tmp_path / "bare", "inject-after-reset", reset=False)
    guarded, findings = attack_under_guard(tb, tmp_path / "guarded", "inject-after-reset", reset=True)
    locked = bare["listener"]["lost_to_attack"]
    assert locked >= STREAM.rate_fps * RESET_TIMEOUT_MS / 1000, run.summary(bare)  # at least a reset timeout
    (finding,) = findings
    assert finding["resets"] >= 1 and finding["resets"] == finding["locked_out"] <= finding["alarms"], findings
    # each delivered forged frame took the window once: the first after the outage's reset, and
    # (rarely) a later one that happened to be the next frame after a guard's reset; every other
    # forged frame is far ahead of the stream's window, rogue
    forged = guarded["listener"]["forged"]
    assert 1 <= forged <= 1 + finding["resets"], (findings, run.summary(guarded))
    # each taking costs at most the period the window is taken in (frames still passed: no
    # reset), the next one (nothing passed: reset) and the poll's lateness; then the reset's next
    # frame, a genuine one, sets the window again
    lost = guarded["listener"]["lost_to_attack"]
    assert lost <= 3 * PERIOD_S * STREAM.rate_fps * forged + 20 and lost < locked / 2, (run.summary(guarded), locked)


def test_the_guard_s_bad_input_is_one_clear_error(capsys):
    assert main(["dataplane", "guard", "--name", "nosuch", "--rogue-threshold", "5"]) == 2
    assert "no data plane named 'nosuch' is up" in capsys.readouterr().err
    assert main(["dataplane", "guard", "--name", "x", "--rogue-threshold", "5", "--duration", "0"]) == 2
    assert "--duration 0.0 is out of range" in capsys.readouterr().err


@needs_bpf
def test_the_suite_tables_each_attack_under_each_defence_alone_and_together(tmp_path, capsys):
    out = tmp_path / "suite"
    assert main(["attack", "suite", "--attacks", "inject-ahead,inject-after-reset", "--algorithms", "vector",
                 "--reset-timeout", str(RESET_TIMEOUT_MS), "--guard", f"{THRESHOLD},{PERIOD_S}", "--duration", "3",
                 "--police", str(POLICE_BPS), "--police-burst", str(POLICE_BURST), "-o", str(out), "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    groups = {(g["attack"], g["defence"]): g for g in table["groups"]}
    assert set(groups) == {(a, d) for a in ("inject-ahead", "inject-after-reset")
                           for d in ("none", "guard", "police", "guard+police")}
    # 40 forged frames at 50/s are within the meter's headroom and burst: policing does not stop them
    assert groups["inject-ahead", "police"]["forged"][0] >= 30, groups["inject-ahead", "police"]
    for row in table["runs"]:  # each row is its run's result, as written
        result = json.loads((out / "vector" / row["attack"] / row["defence"] / "r1" / "result.json").read_text())
        assert row["lost_to_attack"] == result["listener"]["lost_to_attack"] and row["verdict"] == result["verdict"]
    # forged frames inside the window are not rogue: the guard neither sees nor stops them
    for defence in ("none", "guard"):
        ahead = groups["inject-ahead", defence]
        assert ahead["lost_to_attack"] == ahead["forged"] and ahead["guard_alarms"] == [0, 0], ahead
    bare = groups["inject-after-reset", "none"]
    for defence in ("guard", "guard+police"):  # policing changes nothing of a lock-out; the guard bounds it
        guarded = groups["inject-after-reset", defence]
        taken = guarded["forged"][1]  # each delivered forged frame took the window once (see above)
        assert guarded["lost_to_attack"][1] <= 3 * PERIOD_S * STREAM.rate_fps * taken + 20, guarded
        assert guarded["lost_to_attack"][1] < bare["lost_to_attack"][0] / 2, (guarded, bare)
    assert (out / "vector/inject-after-reset/guard/r1/guard.json").is_file()
    markdown = (out / "suite.md").read_text()
    assert "| vector | inject-after-reset | guard | 1 |" in markdown and (out / "suite.csv").is_file()


#: The policing rate: the stream's SDU rate on a path (2000 frames/s x 240 octets: a 256-byte
#: frame without its MACs and FCS = 3.84 Mbit/s) and 4.2 % more; a 20 kB burst (42 ms of the
#: stream: frames the generator sends late, back to back, stay green on the unattacked path).
POLICE_BPS, POLICE_BURST, SDU = 4_000_000, 20_000, 240


@needs_bpf
def test_policing_each_path_bounds_what_a_babbler_gets_past_match_recovery(tmp_path):
    with bed.Testbed(name=f"dfp{os.getpid() % 100000}", algorithm="match", reset_timeout_ms=RESET_TIMEOUT_MS,
                     police_rate=str(POLICE_BPS), police_burst=str(POLICE_BURST)) as tb:
        r = run.run(tb.name, spec.attack("babble"), "a", STREAM, tmp_path)
        (sw2,) = [f for f in bed.status_dataplane(tb.name, "sw2")["filters"] if f["ports"] == ["p1"]]
    sent = r["injected"]["sent"]
    babble = sent / r["injected"]["achieved_fps"]  # its seconds
    # the meter is colour-blind: while the babble lasts it passes at most its rate (and burst) of
    # path a's frames, babbled or genuine; with match every babbled frame past it is a duplicate
    # (unpoliced, every one of the `sent`), the genuine copies it drops come on path b
    passed = (POLICE_BURST + POLICE_BPS / 8 * babble) / SDU
    duplicates = r["listener"]["duplicates"]
    assert r["listener"]["lost"] == 0 and duplicates <= 1.1 * passed and duplicates < sent / 4, \
        (passed, run.summary(r))
    assert sw2["red_frames"] >= sent - 1.1 * passed, sw2


def test_the_suite_refuses_an_attack_that_does_not_fit_before_any_testbed_is_up(tmp_path):
    with pytest.raises(UsageError, match=re.escape("inject-ahead: ahead 8 is outside the history window of testbed")):
        suite.run_suite(tmp_path / "s", ["inject-ahead"], ["vector"], STREAM, {"history_length": 8})
    assert not [n for n in bed.running() if n.startswith(f"as{os.getpid() % 100000}")], bed.running()
    assert not (tmp_path / "s").exists()
