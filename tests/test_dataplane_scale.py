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
from frerlab.bpfsys import possible_cpus
from frerlab.dataplane import layout
from frerlab.dataplane.twopath import TwoPath

pytestmark = NEEDS_BPF

STREAMS = layout.MAX_STREAMS
#: The most memory one node's maps may take with 64k streams (about 1 KiB per stream), and
#: with none configured besides the per-CPU counters a node on hash maps preallocates.
MAX_NODE_BYTES, MAX_EMPTY_NODE_BYTES = 96 << 20, 16 << 20
#: The most a preallocated stream_port_stats entry takes besides its per-CPU values (the
#: element and its share of the hash buckets).
MAX_ENTRY_OVERHEAD = 128


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
def test_an_empty_node_takes_a_few_megabytes(shape):
    with _pinned(f"frerlab-test-{os.getpid()}-empty-{shape}", SHAPES[shape]) as (pin_dir, _, _):
        sizes = map_bytes(pin_dir)
    print(f"empty frer.o, {shape} maps: {sum(sizes.values()) / 2**20:.1f} MiB: {sizes}")
    if shape == "hash":
        entries = SHAPES[shape]["stream_port_stats"][1]
        per_entry = layout.STREAM_PORT_STATS.size * possible_cpus() + MAX_ENTRY_OVERHEAD
        assert sizes.pop("stream_port_stats") < entries * per_entry
    assert sum(sizes.values()) < MAX_EMPTY_NODE_BYTES


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
