"""64k streams through the eBPF data plane, on tc and on XDP: the two-path topology
(frerlab.dataplane.twopath) with 65,536 streams, each identified by its UDP ports (hashed IP
stream identities compiled from a generated configuration), numbered and replicated at sw1,
recovered at sw2. The talker's frames are spread over every stream in turn, twice round; every
frame must reach the listener exactly once, every stream's recovery function must have passed
one copy and discarded the other of each of its frames, and what the maps take is reported
(the memlock of each map's descriptor, which counts what a map allocated)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, SHAPES, _pinned

from frerlab import bpfsys
from frerlab.dataplane import layout
from frerlab.dataplane.twopath import TwoPath

pytestmark = NEEDS_BPF

STREAMS = layout.MAX_STREAMS
#: The most memory one node's maps may take with 64k streams (about 1 KiB per stream).
MAX_NODE_BYTES = 96 << 20
#: What the kernel may charge a map beyond its elements' values (its header, page rounding).
MAX_MAP_OVERHEAD = 64 << 10


def map_bytes(pin_dir: Path) -> dict[str, int]:
    """The memory charged to every map pinned under `pin_dir` (frer.o's, and frer_xdp.o's own,
    which pins none of the maps it reuses), by name."""
    sizes = {}
    for path in sorted(pin_dir.rglob("*")):
        if path.is_file() and (path.parent.name == "maps" or path.name.startswith("copies")):
            with bpfsys.Map(path) as m:
                sizes[path.name] = m.memlock
    return sizes


@pytest.mark.parametrize("shape", SHAPES)
def test_an_empty_node_takes_what_its_arrays_hold(shape):
    """Every per-stream array is allocated whole when the node loads, and takes its entries'
    values (every CPU's for a per-CPU array) and little more."""
    with _pinned(f"frerlab-test-{os.getpid()}-empty-{shape}", SHAPES[shape]) as (pin_dir, maps, _):
        sizes = map_bytes(pin_dir)
        # the kernel keeps each CPU's value in 8-byte units, and a per-CPU array a pointer to
        # each entry's values
        values = {name: (-(-maps[name].value_size // 8) * 8 + (8 if kind == "percpu_array" else 0)) * entries
                  for name, (kind, entries) in SHAPES[shape].items()}
    print(f"empty frer.o, {shape} maps: {sum(sizes.values()) / 2**20:.1f} MiB: {sizes}")
    for name, size in values.items():
        assert size <= sizes[name] <= size + MAX_MAP_OVERHEAD, name


@pytest.mark.parametrize("mode", ["frer", "xdp-frer"])
def test_64k_streams_each_frame_once_and_every_stream_recovered(mode):
    with TwoPath(mode, streams=STREAMS) as net:
        stream = net.stream(["--rate-fps", "50k", "--count", str(2 * STREAMS)], timeout_s=120)
        assert (stream["unique"], stream["lost"], stream["duplicates"]) == (2 * STREAMS, 0, 0)
        generated = [net.sw1.generation_counters(s)["generated"] for s in range(STREAMS)]
        recovered = [net.sw2.recovery_counters(s) for s in range(STREAMS)]
        passed = [c["passed_packets"] for c in recovered]
        assert min(generated) >= 2, "every stream took frames of both rounds"
        assert passed == generated, "sw2 passed each stream's frames once"
        assert [c["discarded_packets"] for c in recovered] == generated, "and discarded the other copy"
        assert sum(c["rogue_packets"] + c["lost_packets"] for c in recovered) == 0
        for node in (net.sw1, net.sw2):
            sizes = map_bytes(node.pin_dir)
            print(f"{mode} {node.name}: {sum(sizes.values()) / 2**20:.1f} MiB: {sizes}")
            assert sum(sizes.values()) < MAX_NODE_BYTES
        pins = [net.sw1.pin_dir, net.sw2.pin_dir]
        namespaces = list(net.ns.values())
    assert not any(p.exists() for p in pins)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in listed.split() for ns in namespaces)
    assert not any(p.name.startswith(net.prefix) for p in bpfsys.BPFFS.glob("*")) if bpfsys.BPFFS.exists() else True
