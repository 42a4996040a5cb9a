"""The memory of the data plane's nodes when several are built and removed in a row, in the
order the suite builds them: nodes of few streams, then 64k-stream nodes. A 64k-stream node's
configuration writes about 200,000 per-CPU counter entries (stream_port_stats); while that map
was a hash allocating each entry as it was written, the kernel took it from a cache refilled
with per-CPU memory it may not populate on the spot, and the 64k-stream test failed with ENOMEM
or not depending on what ran before it. Every per-stream map is now an array allocated whole
when the node loads: the first test checks that it is, the second builds the nodes in the order
that failed, the third applies a second configuration over a first."""

from __future__ import annotations

import os

import pytest
from conftest import NEEDS_BPF

from frerlab.bpfsys import possible_cpus
from frerlab.dataplane import layout
from frerlab.dataplane.node import ARRAY_STREAMS, Node
from frerlab.dataplane.twopath import PATH_A, PATH_B, SWITCH_PORTS, spread_config
from frerlab.netns import Namespaces
from frerlab.testbed.plan import SWITCH_HOST_PORT

pytestmark = NEEDS_BPF

PORTS = SWITCH_PORTS["sw2"]  # spread_config("sw2"): recovers each stream from paths a and b, sends on p4


@pytest.fixture(scope="module")
def ports():
    """A namespace holding PORTS (veths: path a's port - path b's, p4 - l0)."""
    with Namespaces(f"frm{os.getpid()}") as net:
        net.add("x")
        net.link("x", PATH_A, "x", PATH_B)
        net.link("x", SWITCH_HOST_PORT, "x", "l0")
        yield net.ns["x"]


@pytest.fixture(scope="module")
def plans():
    """sw2's compiled configuration for ARRAY_STREAMS streams and for 64k."""
    return {n: spread_config("sw2", n, 32, f"mem{n}").plan for n in (ARRAY_STREAMS, layout.MAX_STREAMS)}


def test_a_64k_stream_node_allocates_its_per_cpu_counters_when_it_loads(ports):
    with Node(f"frerlab-test-{os.getpid()}-prealloc", ports, PORTS, streams=layout.MAX_STREAMS) as node:
        stats = node.maps["stream_port_stats"]
        assert (stats.kind, stats.max_entries) == ("percpu_array", layout.MAX_STREAMS * len(PORTS))
        assert stats.memlock >= stats.max_entries * layout.STREAM_PORT_STATS.size * possible_cpus()


def test_64k_streams_configure_after_nodes_built_and_removed_before(ports, plans):
    for turn, streams in enumerate([ARRAY_STREAMS, layout.MAX_STREAMS, ARRAY_STREAMS, layout.MAX_STREAMS]):
        with Node(f"frerlab-test-{os.getpid()}-order{turn}", ports, PORTS, streams=streams) as node:
            node.apply(plans[streams])
            last = streams - 1
            assert node.recovery_counters(last)["passed_packets"] == 0
            assert node.stream_port_counters(last, PORTS.index(SWITCH_HOST_PORT))["output"] == 0
            pin_dir = node.pin_dir
        assert not pin_dir.exists()


def test_a_second_configuration_leaves_nothing_of_the_first(ports, plans):
    few = spread_config("sw2", 10, 32, "mem10").plan
    with Node(f"frerlab-test-{os.getpid()}-again", ports, PORTS, streams=ARRAY_STREAMS) as node:
        node.apply(plans[ARRAY_STREAMS])
        assert len(node.maps["identity_hash"].lookup_batch()[0]) == len(plans[ARRAY_STREAMS].hashed) * layout.ID_KEY.size
        node.apply(few)
        hashed, _ = node.maps["identity_hash"].lookup_batch()
        assert sorted(hashed[i:i + layout.ID_KEY.size] for i in range(0, len(hashed), layout.ID_KEY.size)) \
            == sorted(few.hashed)
        outputs = [layout.STREAM_HEAD.unpack_from(node.maps["streams"].lookup(layout.key(s)))[1]
                   for s in (9, 10, ARRAY_STREAMS - 1)]
        assert outputs == [1, 0, 0], "streams past the second configuration's have no outputs"
        assert node.rcvy_index(9) == 9
