"""Defences against the attacks of frerlab.attack, measured on a real testbed (vector recovery,
the short reset timeout of tests/test_attack.py): the rogue-rate guard (`frerlab dataplane guard`,
control.guard) raises no alarm for rogue frames an attacker sends beyond the window, and with
--reset bounds the lock-out a forged frame right after a reset causes to about the guard's
period, where without it every genuine frame is rogue until a reset timeout after the
attacker's last frame."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_attack import RESET_TIMEOUT_MS, SETS, STREAM, needs_bpf

from frerlab.attack import run, spec
from frerlab.cli import main
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
def test_the_guard_with_reset_bounds_the_lock_out_after_a_reset_to_its_period(tb, tmp_path):
    bare, _ = attack_under_guard(tb, tmp_path / "bare", "inject-after-reset", reset=False)
    guarded, findings = attack_under_guard(tb, tmp_path / "guarded", "inject-after-reset", reset=True)
    locked = bare["listener"]["lost_to_attack"]
    assert locked >= STREAM.rate_fps * RESET_TIMEOUT_MS / 1000, run.summary(bare)  # at least a reset timeout
    (finding,) = findings
    assert finding["alarms"] >= 1 and finding["resets"] == finding["alarms"], findings
    # locked out for at most the period the alarm is raised in and the next (detection), then the
    # reset's next frame, a genuine one, sets the window again
    bound = 2 * PERIOD_S * STREAM.rate_fps + 20
    assert guarded["listener"]["lost_to_attack"] <= bound < locked / 2, (run.summary(guarded), locked)
    # only the forged frame that took the window is delivered: after the reset the window is the
    # stream's again and the later forged frames, far ahead of it, are rogue
    assert guarded["listener"]["forged"] == 1, run.summary(guarded)


def test_the_guard_s_bad_input_is_one_clear_error(capsys):
    assert main(["dataplane", "guard", "--name", "nosuch", "--rogue-threshold", "5"]) == 2
    assert "no data plane named 'nosuch' is up" in capsys.readouterr().err
    assert main(["dataplane", "guard", "--name", "x", "--rogue-threshold", "5", "--duration", "0"]) == 2
    assert "--duration 0.0 is out of range" in capsys.readouterr().err
