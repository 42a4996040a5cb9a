"""Robustness of the eBPF data plane: random and mutilated frames run through frer_ingress
(tc) and frer_xdp (BPF_PROG_TEST_RUN) never make them misbehave. A recovery node must answer every frame with
pass-to-stack or drop; a frame whose R-TAG is cut short is dropped and counted as an encoding
error, never passed as a stream frame (a tag's reserved bits are ignored, as in the core). Frames shorter than an Ethernet
header never reach a tc program (the kernel refuses them, in BPF_PROG_TEST_RUN too), so the
shortest frames here are 14 bytes."""

from __future__ import annotations

import random

from conftest import NEEDS_BPF, configure_recovery_listener

from frerlab.dataplane import layout
from frerlab.dataplane.node import percpu_sum
from frerlab.frer import SequenceDecoder, push_rtag

pytestmark = NEEDS_BPF

BASE = bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(46)


def mutilated_frames(rng: random.Random, n: int):
    """Random bytes, short frames, VLAN stacks, R-TAGs with reserved bits set, cut R-TAGs and
    valid tagged frames."""
    for _ in range(n):
        kind = rng.randrange(6)
        if kind == 0:
            yield rng.randbytes(rng.randrange(14, 200))
        elif kind == 1:
            yield BASE[:12] + rng.choice([b"\x81\x00", b"\x88\xa8", b"\xf1\xc1"])
        elif kind == 2:
            tagged = bytearray(push_rtag(BASE, rng.randrange(65536)))
            tagged[14:16] = rng.randrange(1, 65536).to_bytes(2, "big")
            yield bytes(tagged)
        elif kind == 3:
            yield push_rtag(BASE, rng.randrange(65536))[:rng.randrange(14, 20)]
        elif kind == 4:
            tags = b"".join(rng.choice([b"\x81\x00", b"\x88\xa8", b"\xf1\xc1"]) + rng.randbytes(2)
                            for _ in range(rng.randrange(1, 4)))
            yield BASE[:12] + tags + BASE[12:rng.randrange(12, len(BASE))]
        else:
            yield push_rtag(BASE, rng.randrange(65536))


def test_random_and_mutilated_frames_are_counted_and_never_passed_as_stream_frames(hook_runner):
    maps = hook_runner.maps
    configure_recovery_listener(maps, layout.RecoveryConfig(history_length=1024), ports=1,
                                ifindexes=hook_runner.ifindexes)
    decoder, unreadable, frames = SequenceDecoder(), 0, 0
    for frame in mutilated_frames(random.Random(8021), 3000):
        frames += 1
        verdict, _ = hook_runner.run(frame)
        assert verdict in (hook_runner.passed, hook_runner.passed_untagged, hook_runner.dropped), \
            f"verdict {verdict} for {frame.hex()}"
        try:
            decoder.decode(frame)
        except ValueError:
            unreadable += 1
            assert verdict == hook_runner.dropped, f"passed an unreadable frame: {frame.hex()}"
    seen, malformed, enc_errored = percpu_sum(maps, "port_stats", 0)[:3]
    assert seen == frames
    assert malformed + enc_errored == unreadable > 0
    assert enc_errored == decoder.seq_enc_errored_packets > 0
