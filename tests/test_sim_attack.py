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

import pytest

from frerlab import sim
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
