"""The shared 802.1CB vectors replayed through the eBPF data plane, each hook in turn (tc:
bpf/frer.c's frer_ingress; XDP: bpf/frer_xdp.c's frer_xdp) with BPF_PROG_TEST_RUN: each event is a crafted Ethernet/IPv4/UDP frame,
R-tagged with the event's number (or untagged), arriving on the event's port at the event's
time (the program's clock is fixed per event through its settings map). Every pass/drop
verdict and the final clause-10 counters must equal the vector's, as for the Rust core."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, configure_recovery_listener

from frerlab import bpfsys
from frerlab.dataplane import layout
from frerlab.frer import push_rtag

VECTORS = sorted((Path(__file__).parent / "vectors").glob("*.json"))
pytestmark = NEEDS_BPF

FRAME = (bytes.fromhex("020000000002" "020000000001" "0800"
                       "4500002e00000000401100 00c6120001c6120002".replace(" ", ""))
         + bytes.fromhex("138913890012 0000".replace(" ", "")) + bytes(18))


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_ebpf_replays_vector(hook_runner, path):
    vector = json.loads(path.read_text())
    maps = hook_runner.maps
    configure_recovery_listener(maps, layout.RecoveryConfig(**vector["recovery"]), ifindexes=hook_runner.ifindexes)
    tagged = {}
    for i, event in enumerate(vector["events"]):
        if event.get("op") == "reset":
            current = maps["rcvy"].lookup(layout.key(0))
            maps["rcvy"].update(layout.key(0), layout.rcvy_reset(current), bpfsys.BPF_F_LOCK)
            continue
        seq = event["seq"]
        if seq not in tagged:
            tagged[seq] = FRAME if seq is None else push_rtag(FRAME, seq)
        maps["settings"].update(layout.key(0), layout.settings(1, fixed_now_ns=event["t_ns"]))
        verdict, out = hook_runner.run(tagged[seq], event["port"])
        expect_pass = event["expect"] == "pass"
        # tc: a passed R-tagged frame goes up once more through the port (its EtherType restored)
        passed = hook_runner.passed_untagged if seq is None else hook_runner.passed
        assert verdict == (passed if expect_pass else hook_runner.dropped), f"event {i}: {event}"
        if expect_pass:
            assert out == FRAME, "a passed frame leaves without its R-TAG"
    assert layout.rcvy_counters(maps["rcvy"].lookup(layout.key(0))) == vector["counters"]
