"""frerlab's recommended configuration (frerlab.attack.recommended: vector recovery, the
rogue-rate guard with reset, each path policed) against every attack of the catalog on a real
testbed: each run holds to the harm stated for it, and `attack suite --recommended` says so in
its table and its exit status."""

from __future__ import annotations

import json
import os

from test_attack import needs_bpf

from frerlab.attack import recommended, run, spec
from frerlab.cli import main
from frerlab.testbed import bed

#: The catalog's attacks all end by 2.6 s (replay-wrap gets a stream of its own length).
STREAM = run.Stream(rate_fps=2000, frame_size=256, duration_s=3, interval_s=0.1)


def test_the_stated_harm_is_what_the_configuration_cannot_stop_and_a_row_beyond_it_fails():
    ahead, far, wrap = spec.attack("inject-ahead"), spec.attack("inject-far"), spec.attack("replay-wrap")
    assert recommended.stated(ahead, STREAM) == {"lost": 40, "duplicates": 0, "forged": 40}
    assert recommended.stated(far, STREAM) == {"lost": 0, "duplicates": 0, "forged": 0}
    assert recommended.stated(wrap, STREAM) == {"lost": 40, "duplicates": 40, "forged": 0}
    reset = recommended.stated(spec.attack("inject-after-reset"), STREAM)
    assert reset["lost_per_forged"] == 300  # three guard periods of 50 ms at 2000 frames/s
    row = {"lost_to_attack": 40, "duplicates": 0, "forged": 40}
    assert recommended.bound(ahead, STREAM, row) == {"stated": "lost <= 40, duplicates <= 0, forged <= 40",
                                                     "holds": True}
    assert not recommended.bound(far, STREAM, row)["holds"]
    after_reset = spec.attack("inject-after-reset")
    assert recommended.bound(after_reset, STREAM, {"lost_to_attack": 320, "duplicates": 0, "forged": 1})["holds"]
    assert not recommended.bound(after_reset, STREAM, {"lost_to_attack": 321, "duplicates": 0, "forged": 1})["holds"]
    # the meter: the stream's SDU on a path (2000 x 240 octets x 8 = 3.84 Mbit/s) and 10 % more
    assert recommended.police_rate(STREAM) == "4224000"


def test_recommended_refuses_an_option_it_sets_itself(tmp_path, capsys):
    assert main(["attack", "suite", "--recommended", "--algorithms", "match", "-o", str(tmp_path / "s")]) == 2
    assert "--recommended sets --algorithms itself; leave it out" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


@needs_bpf
def test_the_recommended_configuration_survives_every_attack_with_the_harm_it_states(tmp_path, capsys):
    out = tmp_path / "suite"
    assert main(["attack", "suite", "--recommended", "--duration", str(STREAM.duration_s), "-o", str(out),
                 "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    groups = {g["attack"]: g for g in table["groups"]}
    assert set(groups) == set(spec.catalog()), groups
    assert {(g["algorithm"], g["defence"]) for g in groups.values()} == {("vector", "guard+police")}
    assert all(g["holds"] for g in groups.values()), [g for g in groups.values() if not g["holds"]]
    assert table["testbed"] == {**recommended.TESTBED, "police_burst": "24000"}  # 50 ms of 3.84 Mbit/s
    assert table["police"] == recommended.police_rate(STREAM)
    # what it cannot stop, measured: a forged number inside the window costs a genuine frame,
    # and so does a replay one wrap later, whose stale payload the listener gets
    assert groups["inject-ahead"]["lost_to_attack"][0] >= 36, groups["inject-ahead"]
    assert groups["replay-wrap"]["duplicates"] == groups["replay-wrap"]["lost_to_attack"], groups["replay-wrap"]
    (wrap,) = [r for r in table["runs"] if r["attack"] == "replay-wrap"]
    assert wrap["stream_s"] == 36  # lengthened past the attack's end: 34 s + 0.78 s, a whole second more
    # the rest: not a genuine frame lost, nothing delivered beyond the stream
    for name in ("inject-far", "replay", "strip-tag", "babble", "foreign-identity"):
        g = groups[name]
        assert (g["lost_to_attack"], g["duplicates"], g["forged"]) == ([0, 0], [0, 0], [0, 0]), g
    assert groups["inject-after-reset"]["lost_to_attack"][1] <= 300 * groups["inject-after-reset"]["forged"][1] + 20
    assert "| stated harm | holds |" in (out / "suite.md").read_text()
    assert f"as{os.getpid() % 100000}vp" not in bed.running()  # its testbed is down

