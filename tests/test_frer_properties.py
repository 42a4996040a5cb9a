"""Hypothesis properties of the Python API against the vectors' reference model."""

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from frerlab.frer import SequenceRecovery, pop_rtag, push_rtag

sys.path.insert(0, str(Path(__file__).parent / "vectors"))
from generate import ReferenceRecovery  # noqa: E402

params = st.fixed_dictionaries({
    "algorithm": st.sampled_from(["vector", "match"]),
    "history_length": st.integers(2, 1024),
    "reset_timeout_ns": st.one_of(st.none(), st.integers(1, 3_000)),
    "individual_recovery": st.booleans(),
    "take_no_sequence": st.booleans(),
})
packets = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 80), st.integers(0, 65535)),
                             st.integers(0, 1_000)), max_size=300)


@settings(max_examples=150, deadline=None)
@given(params, packets)
def test_core_agrees_with_the_reference_on_arbitrary_input(p, pkts):
    core, ref = SequenceRecovery(**p), ReferenceRecovery(**p)
    now = 0
    for seq, gap in pkts:
        now += gap
        core.receive(seq, now)
        assert core.last_verdict == ref.receive(seq, now)
    assert dict(core.counters) == ref.counters


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=14, max_size=200), st.integers(0, 65535),
       st.sampled_from([b"", b"\x81\x00\x20\x07", b"\x88\xa8\x00\x01\x81\x00\x00\x02"]))
def test_push_then_pop_restores_the_frame(body, seq, vlans):
    frame = body[:12] + vlans + b"\x08\x00" + body[12:]
    assert pop_rtag(push_rtag(frame, seq)) == (seq, frame)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=80))
def test_pop_rtag_never_crashes_on_arbitrary_bytes(data):
    try:
        seq, frame = pop_rtag(data)
    except ValueError:
        return
    assert 0 <= seq <= 65535 and len(frame) == len(data) - 6
