"""An attacker on one member path in the simulator (issue 35; docs/security-sim.md): the scenario
vocabulary (a link's `attacks`), its validation messages, and what 802.1CB's recovery
algorithms make of the attacks (7.4.3.4 vector, 7.4.3.5 match, as crates/frer implements them).

The scenario: talker t -> sw1 -> {A, B} -> sw2 -> listener l, 1 Gbit/s links, sequence
generation at sw1, sequence recovery at sw2 (history 32); the stream sends 1518-byte frames at
100 Mbit/s (L1: about 8,127 frames/s) for 100 ms; the attacker sits on link A and sends towards
sw2 at 1000 frames/s from 10 ms to 90 ms (80 frames), below the stream's rate, so that two of its
frames never take the same number.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from frerlab import sim
from frerlab.cli import main
from frerlab.errors import UsageError


def scenario(*attacks: dict, algorithm: str = "vector", take_no_sequence: bool = False) -> dict:
    """The dual-path scenario with `attacks` on link A."""
    links = [{"name": name, "a": a, "b": b, "rate": "1Gbps"}
             for name, a, b in (("up", "t", "sw1"), ("A", "sw1", "sw2"), ("B", "sw1", "sw2"), ("down", "sw2", "l"))]
    links[1]["attacks"] = list(attacks)
    return {
        "name": "attacked", "duration": "100ms",
        "nodes": {"t": {"kind": "host"}, "sw1": {"kind": "switch"}, "sw2": {"kind": "switch"}, "l": {"kind": "host"}},
        "links": links,
        "streams": [{
            "name": "s", "talker": "t", "listener": "l", "rate": "100Mbps", "rate_layer": "l1", "frame_size": 1518,
            "paths": [["up", "A", "down"], ["up", "B", "down"]],
            "frer": {"sequence_generation": "sw1",
                     "sequence_recovery": [{"node": "sw2", "algorithm": algorithm, "history_length": 32,
                                            "take_no_sequence": take_no_sequence}]},
        }],
    }


def attack(kind: str, **fields: object) -> dict:
    """An attack on stream s towards sw2 from 10 ms to 90 ms, at 1000 frames/s unless given."""
    sending = {} if kind == "strip_tag" else {"rate": 1000}
    return {"kind": kind, "stream": "s", "direction": "sw2", "start": "10ms", "end": "90ms", **sending, **fields}


def outcome(result: sim.SimResult) -> tuple[tuple[int, int, int], int, int, dict]:
    """(lost, duplicates, forged_delivered), the attacker's frames, the frames sent, and the
    recovery function's counters."""
    s = result.streams.iloc[0]
    frames = int(result.attacks.iloc[0]["frames"])
    return (int(s.lost), int(s.duplicates), int(s.forged_delivered)), frames, int(s.sent), result.frer.iloc[0].to_dict()


@pytest.mark.parametrize("offset", [2, 4, 31])
def test_vector_inject_inside_the_window_costs_one_genuine_frame_per_forged_frame(offset: int) -> None:
    # The forged number passes first (0 < delta < history length); both genuine copies with
    # that number are duplicates later.
    harm, injected, sent, frer = outcome(sim.run(scenario(attack("inject", offset=offset))))
    assert injected == 80
    assert harm == (injected, 0, injected)
    assert (frer["passed_packets"], frer["discarded_packets"], frer["rogue_packets"]) == (sent, sent + injected, 0)


@pytest.mark.parametrize("offset", [33, 1000, 40_000])
def test_vector_inject_far_ahead_is_rogue_and_costs_nothing(offset: int) -> None:
    harm, injected, sent, frer = outcome(sim.run(scenario(attack("inject", offset=offset))))
    assert harm == (0, 0, 0)
    assert (frer["rogue_packets"], frer["discarded_packets"], frer["passed_packets"]) == (injected, sent, sent)


def test_a_replay_passes_match_recovery_and_vector_recovery_discards_it() -> None:
    replay = attack("replay", age=10)
    harm, replayed, sent, frer = outcome(sim.run(scenario(replay, algorithm="match")))
    assert harm == (0, 0, replayed)  # every replayed frame reached the listener
    assert (frer["passed_packets"], frer["out_of_order_packets"]) == (sent + replayed, 2 * replayed)
    harm, replayed, sent, frer = outcome(sim.run(scenario(replay)))
    assert harm == (0, 0, 0)
    assert frer["discarded_packets"] == sent + replayed


def test_a_stripped_path_is_tagless_at_recovery_and_the_other_path_carries_the_stream() -> None:
    harm, stripped, sent, frer = outcome(sim.run(scenario(attack("strip_tag"))))
    assert stripped > 600  # every frame over A from 10 ms to 90 ms
    assert harm == (0, 0, 0)
    assert (frer["tagless_packets"], frer["passed_packets"], frer["discarded_packets"]) == (stripped, sent, sent - stripped)
    harm, stripped, _, _ = outcome(sim.run(scenario(attack("strip_tag"), take_no_sequence=True)))
    assert harm == (0, stripped, 0)  # take-no-sequence passes them: each one a duplicate


def test_a_count_of_frames_is_spread_over_the_attack_and_babble_is_discarded_by_vector() -> None:
    harm, babbled, sent, frer = outcome(sim.run(scenario(attack("babble", rate=None, count=25))))
    assert babbled == 25
    assert harm == (0, 0, 0)
    assert frer["discarded_packets"] == sent + babbled


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "forge"}, r"does not match any of the expected tags: 'inject', 'replay', 'babble', 'strip_tag'"),
    ({"offset": None}, r"links\.1\.attacks\.0\.inject\.offset: .*[Ff]ield required"),
    ({"offset": 65536}, r"offset: .*less than 65536"),
    ({"kind": "replay", "offset": None, "age": 0}, r"age: .*greater than or equal to 1"),
    ({"count": 5}, r"inject: give rate \(frames/s\) or count \(frames\), one of the two"),
    ({"kind": "strip_tag", "offset": None}, r"links\.1\.attacks\.0\.strip_tag: unknown field 'rate'"),
    ({"direction": "l"}, r"link A: attack 0 \(inject\): direction 'l' is not one of the link's ends \(sw1, sw2\)"),
    ({"stream": "video"}, r"link A: attack 0 \(inject\): stream 'video' is not defined \(defined: s\)"),
    ({"end": "1s"}, r"start 10ms and end 1s are out of range \(start < end <= the duration 100ms\)"),
    ({"rate": "lots"}, r"inject\.rate: .*'lots'"),
])
def test_a_bad_attack_is_named_with_what_would_be_valid(change: dict, message: str) -> None:
    bad = {key: value for key, value in {**attack("inject", offset=4), **change}.items() if value is not None}
    with pytest.raises(UsageError, match=message):
        sim.check(scenario(bad))


def test_an_attack_on_a_direction_the_stream_does_not_take_names_the_streams_that_do() -> None:
    with pytest.raises(UsageError, match=r"stream 's' does not cross the link towards 'sw1' \(streams that do: none\)"):
        sim.check(scenario(attack("babble", direction="sw1")))


def test_the_cost_estimate_counts_the_attackers_frames() -> None:
    _, cost = sim.check(scenario(attack("babble", rate=1000)))
    _, quiet = sim.check(scenario())
    assert cost.events - quiet.events == 80 * 6  # 80 frames, each at most (hops + 1) events: 5 hops in the tree
    with pytest.raises(UsageError, match="events"):
        sim.check(scenario(attack("babble", rate="10G")))


def test_right_after_a_reset_a_forged_number_far_ahead_makes_genuine_frames_rogue_until_the_next() -> None:
    # The stream is cut from 20 ms to 30 ms, longer than the 5 ms reset timeout: the one forged
    # frame (1000 ahead, at 29 ms) is the first after the reset and sets the window (TakeAny);
    # every genuine frame is rogue until the timer, reloaded by that pass, runs out at 34 ms.
    def cut(*attacks: dict) -> dict:
        data = scenario(*attacks)
        data["links"][0]["failures"] = [{"down": "20ms", "up": "30ms"}]
        data["streams"][0]["frer"]["sequence_recovery"][0]["reset_timeout"] = "5ms"
        return data

    outage = int(sim.run(cut()).streams.iloc[0].lost)
    forged = attack("inject", offset=1000, start="29ms", end="30ms", rate=None, count=1)
    (lost, duplicates, delivered), _, _, frer = outcome(sim.run(cut(forged)))
    harm = lost - outage
    assert abs(harm - 4 * 100e6 / (1538 * 8) / 1000) <= 1  # 4 ms of the stream
    assert (frer["rogue_packets"], frer["resets"], delivered, duplicates) == (2 * harm, 2, 1, 0)


# ---- Every attack against every defence, through `frerlab sim run` (docs/security-sim.md, "Defences").

ATTACKED = Path(__file__).resolve().parent.parent / "scenarios" / "attacked_dual_path.yaml"
ON_A = {"stream": "s", "direction": "sw2", "start": "10ms", "end": "90ms"}


def on_a(**fields: object) -> list[dict]:
    """One attack on link A towards sw2, from 10 ms to 90 ms at 1000 frames/s unless given."""
    return [{**ON_A, "rate": 1000, **fields}]


# The --set fields of each attack (the scenario's stream o is there for foreign-identity).
ATTACKS = {
    "inject-ahead": {"links.A.attacks": on_a(kind="inject", offset=4)},
    "inject-far": {"links.A.attacks": on_a(kind="inject", offset=1000)},
    "inject-after-reset": {"links.A.attacks": on_a(kind="inject", offset=1000, rate=None, count=1, start="29ms",
                                                   end="30ms"),
                           "links.up.failures": [{"down": "20ms", "up": "30ms"}],
                           "streams.s.frer.sequence_recovery.0.reset_timeout": "5ms"},
    "replay": {"links.A.attacks": on_a(kind="replay", age=10)},
    "replay-old": {"links.A.attacks": on_a(kind="replay", age=40)},
    "replay-across-wrap": {"links.A.attacks": on_a(kind="replay", age=65536 - 8, start="500ms", end="580ms"),
                           "duration": "600ms", "streams.s.frame_size": 64},
    "babble": {"links.A.attacks": on_a(kind="babble", rate="10k")},
    "strip-tag": {"links.A.attacks": [{**ON_A, "kind": "strip_tag"}]},
    "foreign-identity": {"links.A.attacks": on_a(kind="inject", offset=4, identity="o")},
}
POLICE_RATE, POLICE_BURST, GUARD_PERIOD_S = 110e6, 3004, 1e-3
POLICE = {"streams.s.frer.stream_filters": [{"node": "sw2", "link": "A", "rate": "110Mbps", "burst": POLICE_BURST}]}
GUARD = {"streams.s.frer.sequence_recovery.0.guard": {"threshold": 4, "period": "1ms", "reset": True}}
# "recommended": both at once, the simulator's form of frerlab.attack.recommended (vector recovery only).
DEFENCES = {"none": {}, "police": POLICE, "guard": GUARD, "recommended": {**POLICE, **GUARD}}
CELLS = [(algorithm, defence) for algorithm in ("vector", "match") for defence in DEFENCES
         if defence != "recommended" or algorithm == "vector"]
# The stream's frames/s (1518-byte frames, 100 Mbit/s at L1), and what the cut of inject-after-reset costs alone.
FRAMES_PER_S, OUTAGE_LOST = 100e6 / (1538 * 8), 81
# attack: per algorithm, {defence: (lost, duplicates, forged delivered, rogue, red, guard alarms, guard resets)};
# a defence not named has the figures of "none" with nothing red and no alarm. inject-after-reset's loss
# includes the 81 frames of the outage; not_identified is 80 for foreign-identity under every defence.
FIGURES = {
    "inject-ahead": {"vector": {"none": (80, 0, 80, 0, 0, 0, 0)}, "match": {"none": (0, 0, 80, 0, 0, 0, 0)}},
    "inject-far": {"vector": {"none": (0, 0, 0, 80, 0, 0, 0)}, "match": {"none": (0, 0, 80, 0, 0, 0, 0)}},
    "inject-after-reset": {"vector": {"none": (114, 0, 1, 66, 0, 0, 0), "guard": (89, 0, 1, 16, 0, 1, 1),
                                      "recommended": (89, 0, 1, 16, 0, 1, 1)},
                           "match": {"none": (81, 0, 1, 0, 0, 0, 0)}},
    "replay": {"vector": {"none": (0, 0, 0, 0, 0, 0, 0)}, "match": {"none": (0, 0, 80, 0, 0, 0, 0)}},
    "replay-old": {"vector": {"none": (0, 0, 0, 80, 0, 0, 0)}, "match": {"none": (0, 0, 80, 0, 0, 0, 0)}},
    "replay-across-wrap": {"vector": {"none": (80, 0, 80, 0, 0, 0, 0)}, "match": {"none": (0, 0, 80, 0, 0, 0, 0)}},
    "babble": {"vector": {"none": (0, 0, 0, 0, 0, 0, 0), "police": (0, 0, 0, 0, 717, 0, 0),
                          "recommended": (0, 0, 0, 0, 717, 0, 0)},
               "match": {"none": (0, 0, 160, 0, 0, 0, 0), "police": (0, 0, 11, 0, 717, 0, 0)}},
    "strip-tag": {"vector": {"none": (0, 0, 0, 0, 0, 0, 0)}, "match": {"none": (0, 0, 0, 0, 0, 0, 0)}},
    "foreign-identity": {"vector": {"none": (0, 0, 0, 0, 0, 0, 0)}, "match": {"none": (0, 0, 0, 0, 0, 0, 0)}},
}

# The harm the recommended configuration states for each attack (docs/security.md, "The recommended
# configuration"; frerlab.attack.recommended.stated), adapted to the simulator: (genuine frames lost
# per forged frame delivered, whether the attack's frames may be delivered); never a duplicate. A
# forged number inside the window, and a replay one wrap later, costs the genuine frame with that
# number and delivers the forged one (the simulator counts the stale replay as forged, the testbed's
# probe payload as a duplicate). A lock-out after a reset lasts at most three guard periods per forged
# frame that takes the window; the simulator's guard looks exactly every period, so it needs none of
# the testbed's slack (GUARD_SLACK) for a late poll. Everything else costs nothing.
LOCKED_OUT_PER_FORGED = math.ceil(3 * GUARD_PERIOD_S * FRAMES_PER_S)
STATED = {
    "inject-ahead": (1, True),
    "inject-far": (0, False),
    "inject-after-reset": (LOCKED_OUT_PER_FORGED, True),
    "replay": (0, False),
    "replay-old": (0, False),
    "replay-across-wrap": (1, True),
    "babble": (0, False),
    "strip-tag": (0, False),
    "foreign-identity": (0, False),
}


def run_cli(tmp_path: Path, fields: dict) -> dict:
    """`frerlab sim run` of the attacked scenario with `fields` set; its report.json."""
    sets = [arg for name, value in fields.items() for arg in ("--set", f"{name}={json.dumps(value)}")]
    assert main(["sim", "run", str(ATTACKED), *sets, "-o", str(tmp_path)]) == 0
    return json.loads((tmp_path / "report.json").read_text())


@pytest.mark.parametrize(("algorithm", "defence"), CELLS)
@pytest.mark.parametrize("attack_name", list(ATTACKS))
def test_each_defence_against_each_attack(tmp_path: Path, attack_name: str, algorithm: str, defence: str) -> None:
    fields = {**ATTACKS[attack_name], **DEFENCES[defence], "streams.s.frer.sequence_recovery.0.algorithm": algorithm}
    report = run_cli(tmp_path, fields)
    s, f = report["streams"][0], report["frer"][0]
    red = report["filters"][0]["red_frames"] if report["filters"] else 0
    figures = FIGURES[attack_name][algorithm]
    assert (s["lost"], s["duplicates"], s["forged_delivered"], f["rogue_packets"], red, f["guard_alarms"],
            f["guard_resets"]) == figures.get(defence, figures["none"])
    not_identified = sum(p["drop_not_identified"] for p in report["ports"])
    assert not_identified == (80 if attack_name == "foreign-identity" else 0)
    if POLICE.keys() <= DEFENCES[defence].keys():
        # What reaches recovery over A is within the meter: rate x time + burst.
        passing = report["filters"][0]["passing_octets"]
        assert passing <= POLICE_RATE / 8 * report["run"]["simulated_seconds"] + POLICE_BURST
    if GUARD.keys() <= DEFENCES[defence].keys() and attack_name == "inject-after-reset" and algorithm == "vector":
        # The lock-out ends within about two periods: at most two periods' frames lost to it.
        assert s["lost"] - OUTAGE_LOST <= 2 * GUARD_PERIOD_S * FRAMES_PER_S
    if defence == "recommended":
        lost_per_forged, may_deliver = STATED[attack_name]
        lost_to_attack = s["lost"] - (OUTAGE_LOST if attack_name == "inject-after-reset" else 0)
        assert lost_to_attack <= lost_per_forged * s["forged_delivered"]
        assert s["duplicates"] == 0
        assert s["forged_delivered"] <= (report["attacks"][0]["frames"] if may_deliver else 0)


@pytest.mark.parametrize(("change", "message"), [
    ({"link": "C"}, r"stream s: stream_filters 0: link 'C' is not one the stream arrives at 'sw2' over "
                    r"\(it arrives over: A, B\)"),
    ({"node": "t", "link": None}, r"stream_filters 0: no frame of the stream arrives at 't' \(it arrives at: l, sw1, "
                                  r"sw2\)"),
    ({"burst": None}, r"stream filter at sw2: rate 110000000 and burst None: give both \(a flow meter\) or neither"),
    ({"burst": 0}, r"burst: .*greater than or equal to 1"),
    ({"max_sdu": 0}, r"max_sdu: .*greater than or equal to 1"),
    ({"node": "x"}, r"stream_filters 0: node 'x' is not defined"),
])
def test_a_bad_stream_filter_is_named_with_what_would_be_valid(change: dict, message: str) -> None:
    data = scenario()
    good = {"node": "sw2", "link": "A", "rate": "110Mbps", "burst": 3004}
    data["streams"][0]["frer"]["stream_filters"] = [{k: v for k, v in {**good, **change}.items() if v is not None}]
    with pytest.raises(UsageError, match=message):
        sim.check(data)


@pytest.mark.parametrize(("guard", "message"), [
    ({"threshold": 4, "period": "0s"}, r"guard\.period: .*greater than 0"),
    ({"threshold": -1, "period": "1ms"}, r"guard\.threshold: .*greater than or equal to 0"),
    ({"threshold": 4, "period": "120s"}, r"time 120s is out of range \(at most 60s\)"),
])
def test_a_bad_guard_is_named_with_what_would_be_valid(guard: dict, message: str) -> None:
    data = scenario()
    data["streams"][0]["frer"]["sequence_recovery"][0]["guard"] = guard
    with pytest.raises(UsageError, match=message):
        sim.check(data)


def test_a_foreign_identity_must_be_another_stream() -> None:
    with pytest.raises(UsageError, match=r"identity 's' is not another stream \(other streams: none\)"):
        sim.check(scenario(attack("inject", offset=4, identity="s")))
