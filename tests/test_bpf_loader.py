"""frerlab's loader (crates/bpf through frerlab.bpfsys): a program the verifier refuses
is named with the verifier's words, a file that is no BPF object is named, nothing stays
pinned after a failed load; a port that has a clsact qdisc is refused; a test run returns what
the program does; a node's per-stream maps are arrays or hash maps by its stream count, and
a shape naming a map or type that does not exist is refused by name; copies rewritten per port
get a device map that runs frer_xdp_copy, and keep a generic-XDP port on tc; and `dataplane down`, or a failure half-way through `up`, leaves no filter,
no qdisc, no XDP program and no pins behind."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, ROOT

from frerlab import bpfsys
from frerlab.dataplane import control, layout
from frerlab.dataplane.compiler import NodePlan, OutputPlan, RecoveryPlan
from frerlab.dataplane.config import load_config, parse_config
from frerlab.dataplane.node import ARRAY_STREAMS, CLOCK_MONOTONIC_COARSE, COARSE_TIMEOUT_TICKS, OBJECT, PIN_ROOT, Node
from frerlab.netns import Namespaces, entered, link_info

pytestmark = NEEDS_BPF

#: A verifier-refused tc program (reads the frame without a bounds check), and two that set
#: the first byte of the frame to 0xab and give a verdict by its 13th byte.
PROGRAMS_C = r"""
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int unchecked_read(struct __sk_buff *skb)
{
	return *(__u8 *)(long)skb->data;
}

SEC("tc")
int mark_tc(struct __sk_buff *skb)
{
	__u8 *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;

	if (data + 14 > end)
		return TC_ACT_OK;
	data[0] = 0xab;
	return data[12] == 0x88 ? TC_ACT_SHOT : TC_ACT_OK;
}

SEC("xdp")
int mark_xdp(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;

	if (data + 14 > end)
		return XDP_PASS;
	data[0] = 0xab;
	return data[12] == 0x88 ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"""


def build(tmp_path: Path, source: str) -> Path:
    c = tmp_path / "programs.c"
    c.write_text(source)
    arch_include = f"/usr/include/{os.uname().machine}-linux-gnu"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", f"-I{arch_include}", "-c", str(c),
                    "-o", str(c.with_suffix(".o"))], check=True)
    return c.with_suffix(".o")


def prefix() -> str:
    return f"frl{os.getpid()}x{time.monotonic_ns() % 100000}"


def test_a_refused_program_is_named_with_the_verifier_s_words(tmp_path):
    obj = build(tmp_path, PROGRAMS_C)
    pin_dir = bpfsys.BPFFS / prefix()
    with pytest.raises(bpfsys.BpfError) as refused:
        bpfsys.load_and_pin(obj, pin_dir)
    message = str(refused.value)
    assert f"loading program unchecked_read of {obj} failed" in message
    assert "invalid access to packet" in message  # the verifier's own words
    assert not pin_dir.exists()


def test_a_file_that_is_no_bpf_object_is_named(tmp_path):
    bogus = tmp_path / "not-an-object.o"
    bogus.write_bytes(b"\x7fELF but not really")
    for obj in (bogus, tmp_path / "missing.o"):
        with pytest.raises(bpfsys.BpfError, match=f"opening BPF object {obj}"):
            bpfsys.load_and_pin(obj, bpfsys.BPFFS / prefix())


def test_a_test_run_returns_what_the_program_does(tmp_path):
    obj = build(tmp_path, PROGRAMS_C.replace("return *(__u8 *)(long)skb->data;", "return TC_ACT_OK;"))
    pin_dir = bpfsys.BPFFS / prefix()
    frame = bytes(12) + b"\x88\xf1" + bytes(46)
    bpfsys.load_and_pin(obj, pin_dir)
    try:
        assert sorted(p.name for p in pin_dir.iterdir()) == ["maps", "mark_tc", "mark_xdp", "unchecked_read"]
        with bpfsys.Program(pin_dir / "mark_tc") as tc:
            assert not tc.xdp
            verdict, out, duration_ns = tc.test_run(frame, repeat=10)
            assert (verdict, out) == (2, b"\xab" + frame[1:])  # TC_ACT_SHOT
            assert duration_ns >= 0
            assert tc.test_run(bytes(14))[:2] == (0, b"\xab" + bytes(13))  # TC_ACT_OK
        with Namespaces(prefix()) as net, bpfsys.Program(pin_dir / "mark_xdp") as xdp:
            net.add("x")
            with entered(net.ns["x"]):
                verdict, out, _ = xdp.test_run(frame, ingress_ifindex=1)  # lo of that namespace
            assert xdp.xdp and (verdict, out) == (1, b"\xab" + frame[1:])  # XDP_DROP
    finally:
        bpfsys.unpin(pin_dir)


def test_the_jit_line_table_maps_machine_code_to_the_source_lines(tmp_path):
    obj = build(tmp_path, PROGRAMS_C.replace("return *(__u8 *)(long)skb->data;", "return TC_ACT_OK;"))
    pin_dir = bpfsys.BPFFS / prefix()
    bpfsys.load_and_pin(obj, pin_dir)
    try:
        with bpfsys.Program(pin_dir / "mark_xdp") as xdp:
            lines = xdp.jited_lines()
    finally:
        bpfsys.unpin(pin_dir)
    addresses = [address for address, *_ in lines]
    assert addresses == sorted(addresses) and addresses[0] > 0
    source = (tmp_path / "programs.c").read_text().splitlines()
    for _, file, number, text in lines:
        assert file.endswith("programs.c") and source[number - 1] == text
    numbers = {number for _, _, number, _ in lines}
    xdp_from, xdp_to = source.index("int mark_xdp(struct xdp_md *ctx)"), source.index('char _license[] SEC("license") = "GPL";')
    assert source.index("\tdata[0] = 0xab;", xdp_from) + 1 in numbers
    assert min(numbers) >= xdp_from + 1 and max(numbers) < xdp_to  # mark_xdp's lines only


PER_STREAM_MAPS = ("streams", "seqgen", "rcvy", "rcvy_reset_requests", "stream_port_stats")


@pytest.mark.parametrize("streams", [1, ARRAY_STREAMS, ARRAY_STREAMS + 1, layout.MAX_STREAMS])
def test_a_node_keeps_its_streams_in_arrays_sized_to_them(streams):
    with Namespaces(prefix()) as net:
        net.add("x")
        net.link("x", "pa", "x", "pb")
        with Node(f"{net.prefix}-n", net.ns["x"], ["pa", "pb"], xdp=True, streams=streams) as node:
            kinds = {name: node.maps[name].kind for name in PER_STREAM_MAPS}
            assert kinds == {"streams": "array", "seqgen": "array", "rcvy": "array",
                             "rcvy_reset_requests": "array", "stream_port_stats": "percpu_array"}
            room = max(streams, ARRAY_STREAMS)
            assert node.capacity == room
            assert node.maps["stream_port_stats"].max_entries == room * 2  # its two ports
            # every instance of every stream while that fits layout.MAX_RCVY, else one each
            assert node.maps["rcvy"].max_entries == (room * layout.RCVY_PER_STREAM if streams <= 3000 else room)
            recovery = layout.RecoveryConfig()
            node.add_stream(node.capacity - 1, ingress=["pa"], outputs=["pb"], generate=True, encode=True,
                            recovery=recovery)
            assert node.generation_counters(node.capacity - 1) == {"generated": 0, "resets": 0}
            assert node.rcvy_index(node.capacity - 1) == 0  # the first recovery function added
            with pytest.raises(ValueError, match=f"{node.capacity + 1} streams do not fit data plane "
                                                 f"'{net.prefix}-n': it was loaded for at most {node.capacity}"):
                node.add_stream(node.capacity, ingress=["pa"], outputs=["pb"])
    with pytest.raises(ValueError, match=r"streams 0 is out of range \(1..=65536\)"):
        Node("n", None, ["a"], streams=0)


def test_recovery_functions_beyond_the_node_s_rcvy_entries_are_refused_naming_both():
    """4,096 streams each with a recovery function on port 15 (instance 16) take 17 entries
    each, 69,632: a node of 4,096 streams has 65,536 (layout.MAX_RCVY)."""
    streams = 4096
    plan = NodePlan(ports=["pa", "pb"], handles=list(range(streams)),
                    streams=[(layout.STREAM_RECOVER, [OutputPlan("pb", 1)])] * streams,
                    recovery_ports=[0] * streams, individual_feeds=[{}] * streams,
                    recoveries=[RecoveryPlan(s, 16, s, layout.RecoveryConfig()) for s in range(streams)])
    with Namespaces(prefix()) as net:
        net.add("x")
        net.link("x", "pa", "x", "pb")
        with Node(f"{net.prefix}-rc", net.ns["x"], ["pa", "pb"], streams=streams) as node:
            with pytest.raises(ValueError, match=f"take 69632 entries of rcvy .* '{net.prefix}-rc' has 65536"):
                node.apply(plan)


def test_a_stream_runs_on_the_coarse_clock_only_where_a_tick_cannot_matter():
    """A reset timeout of at least COARSE_TIMEOUT_TICKS ticks of the coarse clock (1 s at HZ
    250), or none, puts the stream on that clock; a shorter one keeps the precise clock."""
    tick_ns = time.clock_getres(CLOCK_MONOTONIC_COARSE) * 1e9
    long_enough = int(COARSE_TIMEOUT_TICKS * tick_ns)
    timeouts = {0: long_enough, 1: long_enough - 1, 2: 100_000_000, 3: None}
    with Namespaces(prefix()) as net:
        net.add("x")
        net.link("x", "pa", "x", "pb")
        with Node(f"{net.prefix}-clk", net.ns["x"], ["pa", "pb"]) as node:
            for stream, timeout in timeouts.items():
                node.add_stream(stream, ingress=["pa"], outputs=["pb"],
                                recovery=layout.RecoveryConfig(reset_timeout_ns=timeout))
            coarse = [bool(layout.STREAM_HEAD.unpack_from(node.maps["streams"].lookup(layout.key(s)))[0]
                           & layout.STREAM_COARSE_CLOCK) for s in timeouts]
    assert coarse == [True, False, tick_ns * COARSE_TIMEOUT_TICKS <= 100_000_000, True]


def test_copies_rewritten_per_port_get_frer_xdp_copy_and_no_generic_xdp():
    """sw1-replicate rewrites path b's copies only: its stream's device map runs frer_xdp_copy
    on every port (the map holds the program's id), a stream copied alike shares no map with
    it and runs nothing; a port asked for generic XDP stays on tc."""
    cfg = load_config(ROOT / "configs" / "dataplane" / "sw1-replicate.yaml")
    with Namespaces(prefix()) as net:
        net.add("sw")
        net.link("sw", "up", "sw", "pa")
        net.link("sw", "pb", "sw", "x")
        with Node(f"{net.prefix}-pc", net.ns["sw"], cfg.plan.ports, xdp=True) as node:
            node.apply(cfg.plan)
            node.add_stream(1, ingress=["pa"], outputs=["pa", "pb"])
            ((flags, _),) = cfg.plan.streams
            assert layout.STREAM_HEAD.unpack_from(node.maps["streams"].lookup(layout.key(0)))[0] == \
                flags | layout.STREAM_PER_COPY
            ifindexes = sorted(node.ifindex(p) for p in ("pa", "pb"))
            assert node.copy_sets == {(tuple(ifindexes), True): 0, (tuple(ifindexes), False): 1}
            with bpfsys.Program(node.pin_dir / "xdp" / "frer_xdp_copy") as prog:
                prog_id = program_id(prog)
            for index, expected in ((0, prog_id), (1, 0)):
                with bpfsys.Map(node.pin_dir / "xdp" / f"copies{index}") as copies:
                    values = [layout.DEVMAP_VAL.unpack(copies.lookup(layout.key(i))) for i in ifindexes]
                assert values == [(i, expected) for i in ifindexes], f"copies{index}"
            node.attach(["up", "pa"], xdp={"up": "native", "pa": "generic"})
            assert node.hooks == {"up": "xdp native", "pa": "tc"}
            assert "xdp" in attachments(net, "sw", "up") and "frer_ingress" in attachments(net, "sw", "pa")


def program_id(prog: bpfsys.Program) -> int:
    """The kernel's id of an open program (/proc/self/fdinfo), as a device map reports it."""
    fdinfo = Path(f"/proc/self/fdinfo/{prog.fd}").read_text()
    return int(next(line.split()[1] for line in fdinfo.splitlines() if line.startswith("prog_id:")))


def test_a_shape_naming_no_map_or_no_type_is_refused_and_nothing_stays_pinned():
    pin_dir = bpfsys.BPFFS / prefix()
    with pytest.raises(ValueError, match=f"map \"nope\" is not in BPF object {OBJECT}"):
        bpfsys.load_and_pin(OBJECT, pin_dir, shapes={"nope": ("array", 4)})
    with pytest.raises(ValueError, match='map type "arry" is not one libbpf knows .*percpu_array'):
        bpfsys.load_and_pin(OBJECT, pin_dir, shapes={"streams": ("arry", 4)})
    assert not pin_dir.exists()


def test_a_port_with_a_clsact_qdisc_is_refused(tmp_path):
    with Namespaces(prefix()) as net:
        net.add("x")
        ns = net.ns["x"]
        subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "clsact"], check=True)
        with pytest.raises(bpfsys.BpfError, match="port lo in network namespace .* already has a clsact qdisc") as refused:
            bpfsys.add_clsact(ns, "lo")
        assert refused.value.errno == errno.EEXIST
        with pytest.raises(bpfsys.BpfError, match="no interface nope in network namespace"):
            bpfsys.add_clsact(ns, "nope")
        bpfsys.detach(ns, "lo")
        assert "clsact" not in net.run("x", "tc", "qdisc", "show", "dev", "lo")
        bpfsys.detach(ns, "lo")  # quiet where it is gone


def attachments(net: Namespaces, role: str, port: str) -> str:
    """What is attached to `port`: its tc filters (either hook), qdiscs and XDP program."""
    text = "".join(net.run(role, "tc", "filter", "show", "dev", port, hook) for hook in ("ingress", "egress"))
    text += net.run(role, "tc", "qdisc", "show", "dev", port)
    return text + (" xdp" if "xdp" in link_info(net.ns[role], port) else "")


def test_down_and_a_failed_up_leave_nothing_attached_or_pinned():
    with Namespaces(prefix()) as net:
        cfg = parse_config({**load_config(ROOT / "configs" / "dataplane" / "sw1-replicate.yaml").model_dump(),
                            "name": f"{net.prefix}-up"})
        try:
            down_and_failed_up(net, cfg)
        finally:
            control.down(cfg.name)


def down_and_failed_up(net: Namespaces, cfg) -> None:
    """The test's body, in namespaces of `net`: `up` of `cfg` and `down`, a node with XDP
    closed, and an `up` that fails half-way."""
    net.add("sw")
    net.link("sw", "up", "sw", "pa")
    net.link("sw", "pb", "sw", "x")
    control.up(cfg, net.ns["sw"], monitor=False)
    assert "frer_ingress" in attachments(net, "sw", "up") and (PIN_ROOT / cfg.name).exists()
    control.down(cfg.name)
    for port in ("up", "pa", "pb"):
        assert not {"clsact", "bpf", "xdp"} & set(attachments(net, "sw", port).split())
    assert not (PIN_ROOT / cfg.name).exists()

    # XDP too: a node attached with XDP on one port and tc on another, then closed
    with Node(f"{net.prefix}-xdp", net.ns["sw"], ["up", "pa"], xdp=True) as node:
        node.attach(xdp={"up": "generic"})
        assert node.hooks == {"up": "xdp generic", "pa": "tc"}
        assert "xdp" in attachments(net, "sw", "up") and "frer_ingress" in attachments(net, "sw", "pa")
        with pytest.raises(bpfsys.BpfError, match="has an XDP program already") as busy:
            bpfsys.attach_xdp(net.ns["sw"], "up", node.pin_dir / "xdp" / "frer_xdp", "native")
        assert busy.value.errno == errno.EBUSY
    for port in ("up", "pa"):
        assert not {"clsact", "bpf", "xdp"} & set(attachments(net, "sw", port).split())
    assert not node.pin_dir.exists()

    # a failure half-way: pa already has a clsact qdisc, so `up` stops after attaching `up`
    net.run("sw", "tc", "qdisc", "add", "dev", "pa", "clsact")
    with pytest.raises(bpfsys.BpfError, match="port pa in network namespace .* already has a clsact qdisc"):
        control.up(cfg, net.ns["sw"], monitor=False)
    assert not {"clsact", "bpf", "xdp"} & set(attachments(net, "sw", "up").split())
    assert not (PIN_ROOT / cfg.name).exists() and cfg.name not in control.running_names()
