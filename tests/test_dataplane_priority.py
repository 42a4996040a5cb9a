"""Traffic classes through the eBPF data plane (802.1CB leaves the frame's priority to the
bridge; 802.1Q 6.9 carries it in the tag's PCP and, on a Linux host, in skb->priority, which
is what a qdisc such as mqprio, taprio or CBS classifies on). Two streams, one with PCP 2 and
one with PCP 6, cross a replicating and an eliminating node; the talker end-station pushes
the tags of two streams whose sockets set SO_PRIORITY 2 and 6. A small tc program of this
test, attached where the frames leave (and where they arrive), counts them in a kernel map by
(tag PCP, skb->priority): each class must arrive with its own priority, and no frame with
another."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, ROOT

from frerlab import bpfsys
from frerlab.dataplane import layout
from frerlab.dataplane.config import parse_config
from frerlab.dataplane.node import Node
from frerlab.netns import Namespaces

pytestmark = NEEDS_BPF
FRAMES = 200  # per class
LISTENER_IP = "198.18.0.2"
_ids = itertools.count()

#: Counts frames by (outer tag PCP, skb->priority) into counts[pcp * 9 + min(priority, 8)].
COUNTER_C = r"""
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 72);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("tc")
int count_classes(struct __sk_buff *skb)
{
	__u8 tag[4];
	__u32 pcp = 0, key;
	__u64 *n;

	if (skb->vlan_present)
		pcp = skb->vlan_tci >> 13;
	else if (!bpf_skb_load_bytes(skb, 12, tag, 4) && tag[0] == 0x81 && tag[1] == 0x00)
		pcp = tag[2] >> 5;
	key = pcp * 9 + (skb->priority < 8 ? skb->priority : 8);
	n = bpf_map_lookup_elem(&counts, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
"""

#: Sends `count` frames of each (frame hex) given, alternating, on an interface (AF_PACKET).
SEND_RAW = """
import socket, sys
ifname, count, *frames = sys.argv[1:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
for _ in range(int(count)):
    for frame in frames:
        s.send(bytes.fromhex(frame))
"""

#: Sends `count` UDP datagrams to each (port, SO_PRIORITY) given, alternating.
SEND_UDP = """
import socket, sys
dst, count, *pairs = sys.argv[1:]
sockets = []
for pair in pairs:
    port, priority = map(int, pair.split(":"))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, priority)
    sockets.append((s, port))
for _ in range(int(count)):
    for s, port in sockets:
        s.sendto(bytes(32), (dst, port))
"""


@pytest.fixture(scope="module")
def counter_object(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("counter") / "count_classes.c"
    source.write_text(COUNTER_C)
    arch_include = f"/usr/include/{os.uname().machine}-linux-gnu"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
                    f"-I{arch_include}", "-c", str(source), "-o", str(source.with_suffix(".o"))],
                   check=True)
    subprocess.run(["make", "-s", "-C", str(ROOT / "bpf")], check=True)
    return source.with_suffix(".o")


class ClassCounter:
    """The counting program, loaded once per port it watches (so each port has its map)."""

    def __init__(self, stack: ExitStack, obj: Path, prefix: str) -> None:
        self.stack, self.obj, self.prefix = stack, obj, prefix
        self.pins: dict[str, Path] = {}

    def watch(self, netns: str, port: str, hook: str, clsact: bool = True) -> None:
        pin_dir = bpfsys.BPFFS / f"{self.prefix}-count-{len(self.pins)}"
        bpfsys.load_and_pin(self.obj, pin_dir)
        self.stack.callback(bpfsys.unpin, pin_dir)
        if clsact:
            bpfsys.add_clsact(netns, port)
        bpfsys.attach_tc(netns, port, pin_dir / "count_classes", hook)
        self.pins[f"{port}/{hook}"] = pin_dir

    def counts(self, where: str) -> dict[tuple[int, int], int]:
        """{(tag PCP, skb->priority): frames} seen at `where` ("port/hook"), zeros left out."""
        with bpfsys.Map(self.pins[where] / "maps" / "counts", 4, 8) as counts:
            values = {divmod(i, 9): int.from_bytes(counts.lookup(layout.key(i)), "little")
                      for i in range(72)}
        return {k: v for k, v in values.items() if v}


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def tagged_udp(dst: str, src: str, pcp: int, vid: int) -> bytes:
    """A C-tagged IPv4/UDP frame 198.18.0.1 -> LISTENER_IP (checksums left 0)."""
    ip = (bytes([0x45, 0, 0, 28 + 18, 0, 0, 0, 0, 64, 17, 0, 0]) + bytes([198, 18, 0, 1])
          + bytes([198, 18, 0, 2]))
    udp = (4000).to_bytes(2, "big") + (5001).to_bytes(2, "big") + (8 + 18).to_bytes(2, "big") + bytes(2)
    tag = b"\x81\x00" + ((pcp << 13) | vid).to_bytes(2, "big")
    return mac(dst) + mac(src) + tag + b"\x08\x00" + ip + udp + bytes(18)


def up_node(stack: ExitStack, name: str, netns: str, cfg: dict) -> Node:
    plan = parse_config(cfg).plan
    node = stack.enter_context(Node(name, netns, plan.ports))
    node.apply(plan)
    node.attach(plan.ingress_ports, plan.egress_ports)
    return node


def null_identity(index: int, handle: int, ports: list[str], dst: str, vid: int) -> dict:
    return {"index": index, "handle": handle, "out-facing": {"input-port": ports},
            "null-stream-identification": {"destination-mac": dst, "tagged": "tagged", "vlan": vid}}


def test_two_classes_keep_their_priority_through_replication_and_elimination(counter_object):
    """sw1 numbers and copies both streams onto paths a and b, sw2 passes one copy of each
    frame to its listener port; on every port they leave by, the qdisc sees PCP 2 frames with
    priority 2 and PCP 6 frames with priority 6 (the talker's socket left them at 0)."""
    prefix = f"frq{os.getpid()}x{next(_ids)}"
    with ExitStack() as stack:
        net = stack.enter_context(Namespaces(prefix))
        net.add("tal", "sw1", "sw2", "lis")
        net.link("tal", "t0", "sw1", "up")
        net.link("sw1", "pa", "sw2", "pa", mtu=1510)
        net.link("sw1", "pb", "sw2", "pb", mtu=1510)
        net.link("sw2", "down", "lis", "l0")
        dst = net.mac("lis", "l0")
        streams = {1: 10, 2: 20}  # handle: VID
        up_node(stack, f"{prefix}-sw1", net.ns["sw1"], {
            "ports": ["up", "pa", "pb"],
            "stream-identity": [null_identity(h, h, ["up"], dst, vid) for h, vid in streams.items()],
            "sequence-generation": [{"index": 1, "stream": list(streams)}],
            "stream-forwarding": [{"stream": h, "output-port": ["pa", "pb"]} for h in streams]})
        sw2 = up_node(stack, f"{prefix}-sw2", net.ns["sw2"], {
            "ports": ["pa", "pb", "down"],
            "stream-identity": [null_identity(h, h, ["pa", "pb"], dst, vid) for h, vid in streams.items()],
            "sequence-recovery": [{"index": 1, "stream": list(streams), "history-length": 32}],
            "stream-forwarding": [{"stream": h, "output-port": ["down"]} for h in streams]})
        counter = ClassCounter(stack, counter_object, prefix)
        for role, port in (("sw1", "pa"), ("sw1", "pb"), ("sw2", "down")):
            counter.watch(net.ns[role], port, "egress")

        src = net.mac("tal", "t0")
        frames = [tagged_udp(dst, src, pcp=2, vid=10).hex(), tagged_udp(dst, src, pcp=6, vid=20).hex()]
        subprocess.run(net.exec("tal", [sys.executable, "-c", SEND_RAW, "t0", str(FRAMES), *frames]),
                       check=True)

        seen = {where: counter.counts(where) for where in ("pa/egress", "pb/egress", "down/egress")}
        passed = [sw2.recovery_counters(stream)["passed_packets"] for stream in range(2)]
    assert passed == [FRAMES, FRAMES], "sw2 eliminated to one copy per frame"
    for where, counts in seen.items():
        assert counts == {(2, 2): FRAMES, (6, 6): FRAMES}, \
            f"{where}: frames by (PCP, skb->priority) {counts}; each class must keep its priority"


def test_a_pushed_tag_takes_its_pcp_from_the_socket_priority(counter_object):
    """A talker end-station's data plane gives its two streams their path VLAN (an active
    identity out-facing, no priority configured): the tag it pushes carries the class the
    host's sockets gave the frames (SO_PRIORITY 2 and 6), and so does skb->priority."""
    prefix = f"frq{os.getpid()}x{next(_ids)}"
    with ExitStack() as stack:
        net = stack.enter_context(Namespaces(prefix))
        net.add("tal", "lis")
        net.link("tal", "t0", "lis", "l0")
        net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0")
        dst = net.mac("lis", "l0")
        net.run("tal", "ip", "neigh", "replace", LISTENER_IP, "lladdr", dst, "dev", "t0", "nud", "permanent")
        streams = {1: (5001, 10), 2: (5002, 20)}  # handle: (UDP port, VID)
        identities = []
        for handle, (port, vid) in streams.items():
            identities.append({"index": handle, "handle": handle, "in-facing": {"input-port": ["t0"]},
                               "ip-stream-identification": {"ip-destination": LISTENER_IP,
                                                            "next-protocol": "udp", "destination-port": port}})
            identities.append({"index": 10 + handle, "handle": handle, "out-facing": {"output-port": ["t0"]},
                               "dmac-vlan-stream-identification": {
                                   "down": {"destination-mac": dst, "vlan": vid},
                                   "up": {"destination-mac": dst, "tagged": "all", "vlan": 0}}})
        up_node(stack, f"{prefix}-tal", net.ns["tal"], {
            "ports": ["t0"], "stream-identity": identities,
            "sequence-generation": [{"index": 1, "stream": list(streams)}],
            "stream-forwarding": [{"stream": h, "output-port": ["t0"]} for h in streams]})
        counter = ClassCounter(stack, counter_object, prefix)
        counter.watch(net.ns["lis"], "l0", "ingress")

        subprocess.run(net.exec("tal", [sys.executable, "-c", SEND_UDP, LISTENER_IP, str(FRAMES),
                                        "5001:2", "5002:6"]), check=True)
        counts = counter.counts("l0/ingress")
    by_pcp = {pcp: sum(n for (p, _), n in counts.items() if p == pcp) for pcp in range(8)}
    assert by_pcp == {0: 0, 1: 0, 2: FRAMES, 3: 0, 4: 0, 5: 0, 6: FRAMES, 7: 0}, \
        f"frames by (tag PCP, skb->priority) at the listener: {counts}"
