"""The shared 802.1CB vectors replayed through the eBPF data plane (bpf/frer.c, program
frer_ingress) with BPF_PROG_TEST_RUN: each event is a crafted Ethernet/IPv4/UDP frame,
R-tagged with the event's number (or untagged), arriving on the event's port at the event's
time (the program's clock is fixed per event through its settings map). Every pass/drop
verdict and the final clause-10 counters must equal the vector's, as for the Rust core."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from frerlab.dataplane import bpfsys, layout
from frerlab.frer import push_rtag

ROOT = Path(__file__).resolve().parent.parent
VECTORS = sorted((ROOT / "tests" / "vectors").glob("*.json"))
IFINDEX_BASE = 100  # ingress ifindex of port p is IFINDEX_BASE + p

missing = [tool for tool in ("clang", "bpftool") if shutil.which(tool) is None]
pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="loading BPF programs needs root"),
    pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}"),
]

FRAME = (bytes.fromhex("020000000002" "020000000001" "0800"
                       "4500002e00000000401100 00c6120001c6120002".replace(" ", ""))
         + bytes.fromhex("138913890012 0000".replace(" ", "")) + bytes(18))


@pytest.fixture(scope="module")
def dataplane(tmp_path_factory):
    """frer.o loaded and pinned under a per-run directory, removed afterwards."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "bpf")], check=True)
    pin_dir = bpfsys.BPFFS / f"frerlab-test-{os.getpid()}"
    bpfsys.load_and_pin(ROOT / "bpf" / "build" / "frer.o", pin_dir)
    try:
        yield pin_dir
    finally:
        bpfsys.unpin(pin_dir)


def open_maps(pin_dir: Path) -> dict[str, bpfsys.Map]:
    maps = pin_dir / "maps"
    return {
        "settings": bpfsys.Map(maps / "settings", 4, layout.SETTINGS.size),
        "port_of_ifindex": bpfsys.Map(maps / "port_of_ifindex", 4, 4),
        "identities": bpfsys.Map(maps / "identities", 4, layout.IDENTITY.size),
        "streams": bpfsys.Map(maps / "streams", 4, layout.STREAM_SIZE),
        "rcvy": bpfsys.Map(maps / "rcvy", 4, layout.RCVY.size),
    }


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_ebpf_replays_vector(dataplane, path):
    vector = json.loads(path.read_text())
    maps = open_maps(dataplane)
    prog = bpfsys.Program(dataplane / "frer_ingress")
    try:
        for port in range(4):
            maps["port_of_ifindex"].update(layout.key(IFINDEX_BASE + port), layout.key(port))
        maps["identities"].update(layout.key(0), layout.match_all_identity(0, 0xFFFF))
        maps["streams"].update(layout.key(0), layout.stream(
            layout.STREAM_RECOVER, [layout.output(flags=layout.OUT_LOCAL)]))
        maps["rcvy"].update(layout.key(0), layout.RecoveryConfig(**vector["recovery"]).pack())
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
            verdict, out = prog.test_run(tagged[seq], IFINDEX_BASE + event["port"])
            expect_pass = event["expect"] == "pass"
            assert verdict == (layout.TC_ACT_OK if expect_pass else layout.TC_ACT_SHOT), \
                f"event {i}: {event}"
            if expect_pass:
                assert out == FRAME, "a passed frame leaves without its R-TAG"
        counters = layout.rcvy_counters(maps["rcvy"].lookup(layout.key(0)))
        assert counters == vector["counters"]
    finally:
        prog.close()
        for m in maps.values():
            m.close()
