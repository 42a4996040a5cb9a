"""The Python face `frerlab.frer` works exactly as documented, with clear errors."""

import pytest

from frerlab.frer import (COUNTER_NAMES, LatentErrorDetector, SequenceDecoder,
                          SequenceGenerator, SequenceRecovery, pop_rtag, push_rtag)

ETH = bytes.fromhex("020000000002" "020000000001")
IPV4_PAYLOAD = b"\x08\x00" + bytes(46)


def test_recovery_signature_defaults_and_counters():
    rcvy = SequenceRecovery(algorithm="vector", history_length=32, reset_timeout_ns=None,
                            individual_recovery=False, take_no_sequence=False)
    assert [rcvy.receive(s, now_ns=0) for s in (0, 0, 2, 1, 1)] == [True, False, True, True, False]
    assert rcvy.receive(None, 0) is False
    counters = rcvy.counters
    assert set(COUNTER_NAMES) <= set(counters)
    assert counters == {"passed_packets": 3, "discarded_packets": 2, "out_of_order_packets": 2,
                        "rogue_packets": 0, "lost_packets": 0, "tagless_packets": 1, "resets": 0}
    rcvy.reset()
    assert rcvy.counters["resets"] == 1
    assert rcvy.receive(40_000, 1) is True, "after a reset any number is taken"


def test_match_algorithm_and_take_no_sequence():
    rcvy = SequenceRecovery(algorithm="match", take_no_sequence=True)
    assert [rcvy.receive(s, 0) for s in (65535, 0, 0, None)] == [True, True, False, True]
    assert rcvy.counters["out_of_order_packets"] == 0


def test_timeout_counts_from_the_last_reload():
    rcvy = SequenceRecovery(history_length=8, reset_timeout_ns=1_000)
    assert rcvy.receive(5, 0)
    assert not rcvy.receive(5, 999)
    assert rcvy.receive(5, 1_000), "the deadline is 0 + 1000; the duplicate at 999 did not reload"
    rcvy.advance(10_000)
    assert rcvy.counters["resets"] == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"history_length": 1}, "history_length 1 is out of range (2..=1024)"),
    ({"history_length": 1025}, "history_length 1025 is out of range (2..=1024)"),
    ({"history_length": -5}, "history_length -5 is out of range (2..=1024)"),
    ({"reset_timeout_ns": 0}, "reset_timeout_ns 0 is out of range"),
    ({"algorithm": "vectr"}, 'algorithm "vectr" is not valid ("vector" or "match")'),
])
def test_bad_arguments_name_the_value_and_the_range(kwargs, message):
    with pytest.raises(ValueError, match=None) as err:
        SequenceRecovery(**kwargs)
    assert message in str(err.value)


def test_bad_sequence_number_and_time():
    rcvy = SequenceRecovery(history_length=4)
    with pytest.raises(ValueError, match=r"seq 65536 is out of range \(0..=65535\)"):
        rcvy.receive(65536, 0)
    with pytest.raises(ValueError, match=r"now_ns -1 is out of range"):
        rcvy.receive(1, -1)
    with pytest.raises(TypeError, match="seq must be an int"):
        rcvy.receive("7", 0)


def test_generator_starts_at_zero_wraps_and_resets():
    gen = SequenceGenerator()
    assert [gen.next() for _ in range(3)] == [0, 1, 2]
    for _ in range(65533):
        gen.next()
    assert gen.next() == 0
    gen.reset()
    assert (gen.next(), gen.resets) == (0, 1)


@pytest.mark.parametrize("vlans", [b"", b"\x81\x00\x00\x05", b"\x88\xa8\x00\x10\x81\x00\x20\x05"])
def test_push_pop_round_trip_after_vlan_tags(vlans):
    frame = ETH + vlans + IPV4_PAYLOAD
    tagged = push_rtag(frame, 0xBEEF)
    at = 12 + len(vlans)
    assert tagged[at:at + 6] == bytes.fromhex("f1c10000beef")
    assert tagged[at + 6:at + 8] == b"\x08\x00"
    assert len(tagged) == len(frame) + 6
    assert pop_rtag(tagged) == (0xBEEF, frame)


def test_pop_rtag_errors_are_clear():
    with pytest.raises(ValueError, match="0xf1c1|0xF1C1"):
        pop_rtag(ETH + IPV4_PAYLOAD)
    with pytest.raises(ValueError):
        pop_rtag(ETH[:10])
    with pytest.raises(ValueError):
        push_rtag(push_rtag(ETH + IPV4_PAYLOAD, 1), 2)


def test_latent_error_detector_reports_a_dead_path():
    det = LatentErrorDetector(difference=10, period_ns=1_000, paths=2, reset_period_ns=100_000)
    assert det.poll(1_000, passed_packets=100, discarded_packets=100) is None
    err = det.poll(2_000, passed_packets=200, discarded_packets=120)
    assert (err.condition, err.difference, err.at_ns) == ("missing-copies", -80, 2_000)
    with pytest.raises(ValueError, match=r"paths 1 is out of range \(2..=1024\)"):
        LatentErrorDetector(difference=1, paths=1)


def test_decoder_counts_encoding_errors_not_runts_or_untagged_frames():
    dec = SequenceDecoder()
    frame = ETH + IPV4_PAYLOAD
    assert dec.decode(push_rtag(frame, 300)) == 300
    assert dec.decode(frame) is None
    with pytest.raises(ValueError):
        dec.decode(ETH[:8])
    assert dec.seq_enc_errored_packets == 0
    with pytest.raises(ValueError):
        dec.decode(ETH + bytes.fromhex("f1c100"))
    assert dec.seq_enc_errored_packets == 1


def test_reserved_bits_of_a_received_rtag_are_ignored():
    """802.1CB 7.8: the reserved field is sent as 0 and ignored on receipt."""
    odd = ETH + bytes.fromhex("f1c180020007") + IPV4_PAYLOAD
    assert pop_rtag(odd) == (7, ETH + IPV4_PAYLOAD)
    dec = SequenceDecoder()
    assert dec.decode(odd) == 7 and dec.seq_enc_errored_packets == 0
