"""Per-stream filtering and policing (802.1Qci) in the eBPF data plane, each hook in turn (tc:
frer_ingress, XDP: frer_xdp) with BPF_PROG_TEST_RUN: configurations with `stream-filter` and
`flow-meter` entries are compiled (frerlab.dataplane.compiler) and written into the maps as
`Node.apply` does, and frames "received" on the ports at a fixed clock must pass or be dropped
as the filters say: above max-sdu-size dropped, a meter of rate R and burst B passing exactly B
octets' worth and then R's worth per time advanced, and on a listener whose member paths are
policed each on its own, a member injecting numbers ahead at a burst (the attack of
docs/security.md) harms the stream by no more than its meter lets through, while the other
path's frames all pass. Also the errors of bad configurations."""

from __future__ import annotations

import pytest
from conftest import NEEDS_BPF

from frerlab.dataplane import layout, stats
from frerlab.dataplane.compiler import compile_node
from frerlab.dataplane.config import parse_config
from frerlab.dataplane.node import Node, filter_records, write_port
from frerlab.errors import UsageError
from frerlab.frer import push_rtag

PORTS = ["p0", "p1", "p2", "p3"]
#: An Ethernet/IPv4/UDP frame to 02:00:00:00:00:02, 60 octets: its SDU (after the MACs) is 48.
FRAME = (bytes.fromhex("020000000002" "020000000001" "0800"
                       "4500002e00000000401100 00c6120001c6120002".replace(" ", ""))
         + bytes.fromhex("138913890012 0000".replace(" ", "")) + bytes(18))
SDU = len(FRAME) - 12
BASE = {"name": "psfp", "ports": PORTS,
        "stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["p0", "p1"]},
                             "null-stream-identification": {"destination-mac": "02:00:00:00:00:02"}}],
        "stream-forwarding": [{"stream": 1, "output-port": ["local"]}]}
#: A time well after any meter's last update: its bucket is full.
T0 = 10**12


class _TestNode(Node):
    """A Node on the maps of a HookRunner, its ports the runner's ifindexes (no namespace)."""

    def __init__(self, runner) -> None:
        super().__init__("psfp-test", None, PORTS)
        self.maps, self._ifindexes = runner.maps, runner.ifindexes

    def ifindex(self, port: str) -> int:
        return self._ifindexes[self.ports.index(port)]


class Configured:
    """A configuration written into a HookRunner's maps; `run` sends a frame at a fixed time."""

    def __init__(self, runner, config: dict) -> None:
        self.runner, self.plan = runner, parse_config(config).plan
        self.node = _TestNode(runner)
        for index, port in enumerate(PORTS):
            write_port(runner.maps, self.node.ifindex(port), index)
        self.node.apply(self.plan)

    def run(self, frame: bytes, port: int, now_ns: int) -> int:
        self.runner.maps["settings"].update(layout.key(0), layout.settings(
            len(self.plan.scanned), self.plan.bridge_mask, fixed_now_ns=now_ns, pvids=self.plan.pvids,
            shapes=self.plan.shapes, port_stride=len(PORTS)))
        return self.runner.run(frame, port)[0]

    def filters(self) -> dict[int, dict]:
        return {r["filter"]: r for r in filter_records(self.plan, self.node.filter_counters)}


def config(**extra) -> dict:
    return {**BASE, **extra}


@pytest.mark.parametrize("data, message", [
    (config(**{"stream-filter": [{"index": 1, "stream": [1], "flow-meter": 3}]}),
     "stream-filter 1: flow-meter 3 is not the index of a flow-meter entry (flow-meter indices: none)"),
    (config(**{"stream-filter": [{"index": 1, "stream": [2]}]}), "stream-filter 1: stream 2 has no stream-identity"),
    (config(**{"stream-filter": [{"index": 1, "stream": [1], "port": ["p2"]}]}),
     "stream-filter 1: stream 1 is not identified on frames received on port p2 (it is on p0, p1)"),
    (config(**{"stream-filter": [{"index": 1, "stream": [1], "port": ["px"]}]}),
     "stream-filter 1: port 'px' is not one of ports"),
    (config(**{"stream-filter": [{"index": 1, "stream": [1]}, {"index": 1, "stream": [1]}]}),
     "stream-filter: index values must be unique"),
    (config(**{"flow-meter": [{"index": 1, "committed-information-rate": 10**13, "committed-burst-size": 1}]}),
     "committed-information-rate"),
    (config(**{"flow-meter": [{"index": 1, "committed-information-rate": 1000, "committed-burst-size": 0}]}),
     "committed-burst-size"),
    (config(**{"flow-meter": [{"index": 1, "committed-information-rate": 1000}]}), "committed-burst-size"),
    (config(**{"stream-filter": [{"index": 1, "stream": [1], "max-sdu-size": -1}]}), "max-sdu-size"),
])
def test_bad_filters_are_refused_naming_the_field(data, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_config(data)


def test_filters_compile_in_index_order():
    plan = compile_node(parse_config(config(**{
        "stream-filter": [{"index": 9, "stream": [1], "max-sdu-size": 100},
                          {"index": 2, "stream": [1], "port": ["p1"], "flow-meter": 5}],
        "flow-meter": [{"index": 5, "committed-information-rate": 8000, "committed-burst-size": 100}]})))
    assert [f.index for f in plan.filters] == [2, 9]
    # p1: filter 2 (the lower index), p0: filter 9 only
    assert plan.filter_of == {(0, 1): 0, (0, 0): 1}
    assert plan.streams[0][0] & layout.STREAM_FILTERED
    assert plan.filters[0].meter == 0


def needs_bpf(test):
    """conftest.NEEDS_BPF's marks on one test (the schema tests above need no root)."""
    for mark in NEEDS_BPF:
        test = mark(test)
    return test


@needs_bpf
@pytest.mark.parametrize("tagged", [False, True], ids=["untagged", "vlan-tagged"])
def test_frames_above_max_sdu_size_are_dropped_and_counted(hook_runner, tagged):
    setup = Configured(hook_runner, config(**{"stream-filter": [{"index": 1, "stream": [1], "max-sdu-size": 100}]}))
    head = FRAME[:12] + (bytes.fromhex("81000064") if tagged else b"")
    body = FRAME[12:]
    verdicts = []
    for sdu in (48, 99, 100, 101, 1500):
        frame = head + body.ljust(sdu, b"\0")
        verdicts.append(setup.run(frame, 0, T0))
    passed, dropped = hook_runner.passed_untagged, hook_runner.dropped
    assert verdicts == [passed, passed, passed, dropped, dropped]
    # with an R-TAG the SDU is the same: the tag does not count
    assert setup.run(push_rtag(head + body.ljust(100, b"\0"), 7), 1, T0) == hook_runner.passed_untagged
    counters = setup.filters()[1]
    assert {k: counters[k] for k in layout.FILTER_COUNTERS} == {
        "matching_frames": 6, "passing_frames": 4, "passing_sdu": 4, "not_passing_sdu": 2, "red_frames": 0}


@needs_bpf
def test_meter_passes_its_burst_then_its_rate(hook_runner):
    rate, burst = 1_000_000, 10 * SDU  # bit/s, octets: ten frames
    per_frame_ns = SDU * 8 * 10**9 // rate  # 384 us
    setup = Configured(hook_runner, config(**{
        "stream-filter": [{"index": 1, "stream": [1], "flow-meter": 1}],
        "flow-meter": [{"index": 1, "committed-information-rate": rate, "committed-burst-size": burst}]}))
    passed, dropped = hook_runner.passed_untagged, hook_runner.dropped

    def burst_of(n: int, now: int) -> list[bool]:
        return [setup.run(FRAME, 0, now) == passed for _ in range(n)]

    assert burst_of(15, T0) == [True] * 10 + [False] * 5
    t = T0 + 3 * per_frame_ns  # three frames' worth
    assert burst_of(5, t) == [True] * 3 + [False] * 2
    t += per_frame_ns - 1  # 1 ns short of a frame
    assert setup.run(FRAME, 1, t) == dropped
    t += 1
    assert setup.run(FRAME, 1, t) == passed
    t += 10**9  # a long pause fills the bucket, no more
    assert burst_of(12, t) == [True] * 10 + [False] * 2
    counters = setup.filters()[1]
    assert counters["matching_frames"] == 34
    assert counters["passing_frames"] == 24
    assert counters["red_frames"] == 10
    assert counters["not_passing_sdu"] == 0
    assert counters["committed_burst_size"] == burst


def _attack(runner, policed: bool) -> tuple[int, int, Configured]:
    """A listener (vector recovery, history 32) of stream 1 over members p0 and p1; 40 frames,
    one every ms on both; after frame 10 on p1, the member injects numbers 11..41 at once. Returns
    (genuine frames delivered, forged frames delivered, the set-up)."""
    extra = {"sequence-recovery": [{"index": 1, "stream": [1], "history-length": 32, "reset-timeout": "never"}]}
    if policed:
        # each member path its own meter: 1 Mbit/s (the stream needs 384 kbit/s), a burst of two frames
        extra["stream-filter"] = [{"index": 1, "stream": [1], "port": ["p0"], "flow-meter": 1},
                                  {"index": 2, "stream": [1], "port": ["p1"], "flow-meter": 2}]
        extra["flow-meter"] = [{"index": i, "committed-information-rate": 1_000_000,
                                "committed-burst-size": 2 * SDU} for i in (1, 2)]
    setup = Configured(runner, config(**extra))
    genuine, forged = set(), 0
    for n in range(40):
        now = T0 + n * 1_000_000
        for port in (0, 1):
            if setup.run(push_rtag(FRAME, n), port, now) == runner.passed:
                genuine.add(n)
        if n == 10:
            forged += sum(setup.run(push_rtag(FRAME, m), 1, now) == runner.passed for m in range(11, 42))
    return len(genuine), forged, setup


@needs_bpf
def test_policed_member_cannot_take_the_window(hook_runner):
    # unpoliced: the 31 forged numbers all pass, and the 29 genuine frames 11..39 they name are
    # discarded as duplicates
    genuine, forged, _ = _attack(hook_runner, policed=False)
    assert (genuine, forged) == (40 - 29, 31)
    # policed: after its genuine frame 10, p1's bucket holds one frame more (one was earned back
    # in the ms since frame 9): one forged number passes, 30 are red, one genuine frame is lost
    genuine, forged, setup = _attack(hook_runner, policed=True)
    assert (genuine, forged) == (40 - 1, 1)
    filters = setup.filters()
    assert filters[1]["matching_frames"] == filters[1]["passing_frames"] == 40
    assert filters[1]["red_frames"] == 0
    assert filters[2]["matching_frames"] == 40 + 31
    assert filters[2]["red_frames"] == 30
    assert filters[2]["ports"] == ["p1"]


def test_stats_views_show_the_filters():
    ports = [{"port": "pa", **dict.fromkeys(stats.PORT_NAMES, 0)}]
    counters = {"matching_frames": 71, "passing_frames": 41, "passing_sdu": 71, "not_passing_sdu": 0,
                "red_frames": 30}
    snap = {"name": "sw2", "netns": None, "streams": [], "ports": ports, "latent": None,
            "filters": [{"filter": 2, "streams": [1], "ports": ["pb"], "max_sdu_size": 1500, "flow_meter": 2,
                         "committed_information_rate": 1_000_000, "committed_burst_size": 96, **counters}]}
    assert ("stream-filter 2 (stream 1 on pb, max-sdu-size 1500, flow-meter 2 (1000000 bit/s, burst 96 "
            "octets)): matching-frames 71, passing-frames 41, passing-sdu 71, not-passing-sdu 0, red-frames 30"
            in stats.table(snap))
    text = stats.prometheus(snap)
    assert 'psfp_red_frames_count_total{node="sw2",filter="2"} 30' in text
    assert "# HELP psfp_red_frames_count_total psfpRedFramesCount (IEEE 802.1Q 8.6.5, ieee802-dot1q-psfp)" in text
