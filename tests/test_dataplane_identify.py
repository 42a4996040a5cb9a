"""Stream identification in the eBPF data plane against the Rust core, differentially: random
identity tables (null, source MAC + VLAN, active destination MAC + VLAN with each `tagged`
rule and a priority that must not matter, IP over IPv4 and IPv6 with addresses, DSCP,
protocol and ports) and a random port PVID are written once as a data plane configuration
(compiled by frerlab.dataplane.compiler into frer_identity entries and settings) and once into
the core's StreamIdentifier; random frames (untagged, one or two VLAN tags of any PCP, VID 0
or the PVID among them, with or without an R-TAG, IPv4, IPv6, fragments, ARP) then go through
frer_ingress with BPF_PROG_TEST_RUN. The stream the program counted each frame for must be
the one the core identifies for a frame received on a port with that PVID, or none for both.
The tables mix hashed and scanned identities (compiler._place_identities), and a fixed table
checks the order between the two on both hooks: the first identity that matches wins."""

from __future__ import annotations

import ipaddress
import random

import pytest
from conftest import IFINDEX_BASE, NEEDS_BPF

from frerlab.dataplane import layout
from frerlab.dataplane.compiler import compile_node
from frerlab.dataplane.config import parse_config
from frerlab.dataplane.node import percpu_sum, write_identities, write_port
from frerlab.frer import StreamIdentifier, push_rtag

pytestmark = NEEDS_BPF

MACS = ["02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"]
VIDS = [0, 1, 10, 20]
PVIDS = [1, 10, 20]
V4 = ["198.18.0.1", "198.18.0.2", "198.19.0.9"]
V6 = ["2001:db8::1", "2001:db8::2"]
PORTS = [5001, 5555, 319]
PROTOCOLS = {"udp": 17, "tcp": 6, "sctp": 132}


def random_identity(rng: random.Random, index: int, handle: int) -> tuple[dict, tuple]:
    """(the identity in the configuration vocabulary, the same as a core call)."""
    kind = rng.choice(["null", "smac", "dmac", "ip", "ip"])
    tagged = rng.choice(["tagged", "priority", "all"])
    vid = 0 if tagged == "priority" else rng.choice(VIDS)
    base = {"index": index, "handle": handle, "out-facing": {"input-port": ["p0"]}}
    if kind == "null":
        mac = rng.choice(MACS)
        return ({**base, "null-stream-identification": {"destination-mac": mac, "tagged": tagged, "vlan": vid}},
                ("add_null", (handle, mac, tagged, vid), {}))
    if kind == "smac":
        mac = rng.choice(MACS)
        return ({**base, "smac-vlan-stream-identification": {"source-mac": mac, "tagged": tagged, "vlan": vid}},
                ("add_source_mac_vlan", (handle, mac, tagged, vid), {}))
    if kind == "dmac":
        down = {"destination-mac": rng.choice(MACS), "tagged": tagged, "vlan": vid,
                "priority": rng.choice([None, 0, 5])}
        up = {"destination-mac": rng.choice(MACS), "vlan": 0}
        core = {"mac": down["destination-mac"], "tagged": tagged, "vid": vid, "priority": down["priority"]}
        return ({**base, "dmac-vlan-stream-identification": {"down": down, "up": up}},
                ("add_active_dest_mac_vlan", (handle, core, {"mac": up["destination-mac"], "vid": 0}), {}))
    addresses = rng.choice([V4, V6])
    src = rng.choice(addresses + ["0.0.0.0"])
    dst = rng.choice(addresses + ["0.0.0.0"])
    if ipaddress.ip_address(src).version != ipaddress.ip_address(dst).version and \
            not ipaddress.ip_address(src).is_unspecified:
        dst = "::" if ":" in src else "0.0.0.0"
    proto = rng.choice(["none", "udp", "tcp", "sctp"])
    sport = 0 if proto == "none" else rng.choice([0, *PORTS])
    dport = 0 if proto == "none" else rng.choice([0, *PORTS])
    dscp = rng.choice([64, 64, 0, 46])
    dmac = rng.choice([None, None, *MACS])
    ip = {"tagged": tagged, "vlan": vid, "ip-source": src, "ip-destination": dst, "dscp": dscp,
          "next-protocol": proto, "source-port": sport, "destination-port": dport}
    if dmac:
        ip["destination-mac"] = dmac
    return ({**base, "ip-stream-identification": ip},
            ("add_ip", (handle,), dict(dst_mac=dmac, tagged=tagged, vid=vid, src_ip=src, dst_ip=dst, dscp=dscp,
                                       next_protocol=proto, src_port=sport, dst_port=dport)))


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def random_frame(rng: random.Random) -> bytes:
    l2 = mac(rng.choice(MACS)) + mac(rng.choice(MACS))
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        tci = (rng.randrange(8) << 13) | rng.choice(VIDS)
        l2 += rng.choice([b"\x81\x00", b"\x88\xa8"]) + tci.to_bytes(2, "big")
    kind = rng.choice(["v4", "v4", "v6", "arp"])
    if kind == "arp":
        frame = l2 + b"\x08\x06" + bytes(28)
    else:
        proto = rng.choice([*PROTOCOLS.values(), 1])
        l4 = rng.choice(PORTS).to_bytes(2, "big") + rng.choice(PORTS).to_bytes(2, "big") + bytes(16)
        dscp = rng.choice([0, 46, 10])
        if kind == "v4":
            src, dst = (ipaddress.ip_address(rng.choice(V4)).packed for _ in range(2))
            fragment = rng.choice([0, 0, 0, 185])  # a non-first fragment carries no ports
            header = (bytes([0x45, dscp << 2]) + (20 + len(l4)).to_bytes(2, "big") + bytes(2)
                      + fragment.to_bytes(2, "big") + bytes([64, proto]) + bytes(2) + src + dst)
            frame = l2 + b"\x08\x00" + header + l4
        else:
            src, dst = (ipaddress.ip_address(rng.choice(V6)).packed for _ in range(2))
            header = (((6 << 28) | (dscp << 22)).to_bytes(4, "big") + len(l4).to_bytes(2, "big")
                      + bytes([proto, 64]) + src + dst)
            frame = l2 + b"\x86\xdd" + header + l4
    frame = frame.ljust(60, b"\0")
    if rng.random() < 0.3:
        frame = push_rtag(frame, rng.randrange(65536))
        if rng.random() < 0.2:  # reserved != 0: ignored, still identified
            at = frame.index(b"\xf1\xc1", 12) + 2
            frame = frame[:at] + b"\x00\x07" + frame[at + 2:]
    return frame


@pytest.mark.parametrize("seed", range(6))
def test_ebpf_identifies_like_the_core(frer_fresh, seed):
    rng = random.Random(seed)
    _, maps, prog = frer_fresh
    pvid = rng.choice(PVIDS)
    entries, core = [], StreamIdentifier()
    for index in range(rng.randrange(6, 14)):
        entry, (method, args, kwargs) = random_identity(rng, index, handle=rng.randrange(1, 6))
        entries.append(entry)
        getattr(core, method)(*args, **kwargs)
    handles = sorted({e["handle"] for e in entries})
    cfg = parse_config({"ports": ["p0"], "port-settings": [{"port": "p0", "pvid": pvid}],
                        "stream-identity": entries,
                        "stream-forwarding": [{"stream": h, "output-port": ["local"]} for h in handles]})
    plan = compile_node(cfg)
    assert plan.shapes and plan.scanned, "the table has hashed and scanned identities"
    write_port(maps, IFINDEX_BASE, 0)
    for stream, (flags, _) in enumerate(plan.streams):
        maps["streams"].update(layout.key(stream), layout.stream(flags, [layout.output(flags=layout.OUT_LOCAL)]))
    write_identities(maps, plan)
    maps["settings"].update(layout.key(0), layout.settings(len(plan.scanned), pvids=plan.pvids, shapes=plan.shapes))

    def counted() -> list[int]:
        """Per stream: frames identified on port 0 (input, or an encoding error)."""
        totals = []
        for stream in range(len(handles)):
            fields = percpu_sum(maps, "stream_port_stats", stream * layout.MAX_PORTS)
            totals.append(fields[0] + fields[2])
        return totals

    matched = 0
    before = counted()
    for n in range(400):
        frame = random_frame(rng)
        prog.test_run(frame, IFINDEX_BASE)
        after = counted()
        hits = [handles[s] for s, (a, b) in enumerate(zip(after, before)) if a != b]
        before = after
        expected = core.identify(frame, pvid=pvid)
        assert hits == ([] if expected is None else [expected]), \
            f"frame {n} {frame.hex()} at PVID {pvid}: eBPF {hits}, core {expected}; identities {entries}"
        matched += expected is not None
    assert matched > 20, "the random frames exercise the identities"


#: A fixed table whose identities overlap across the hashed and the scanned ones, in the
#: node's order (handle = position + 1): the ip ones (0, 3) and the null ones (1, 2, 5) share
#: their shapes and are hashed; the source MAC ones (4, 6), each of a shape of its own, are
#: scanned. 5 repeats 1's matcher: it never wins.
ORDERED = [
    {"ip-stream-identification": {"ip-destination": "198.18.0.2", "next-protocol": "udp", "destination-port": 5000}},
    {"null-stream-identification": {"destination-mac": MACS[0]}},
    {"null-stream-identification": {"destination-mac": MACS[1]}},
    {"ip-stream-identification": {"ip-destination": "198.18.0.2", "next-protocol": "udp", "destination-port": 5001}},
    {"smac-vlan-stream-identification": {"source-mac": MACS[2], "tagged": "all", "vlan": 0}},
    {"null-stream-identification": {"destination-mac": MACS[0]}},
    {"smac-vlan-stream-identification": {"source-mac": MACS[1], "tagged": "tagged", "vlan": 0}},
]


def udp_frame(dmac: str, smac: str, dport: int, vid: int | None = None) -> bytes:
    tag = b"" if vid is None else b"\x81\x00" + vid.to_bytes(2, "big")
    header = (bytes([0x45, 0]) + (28).to_bytes(2, "big") + bytes(4) + bytes([64, 17]) + bytes(2)
              + ipaddress.ip_address("198.18.0.1").packed + ipaddress.ip_address("198.18.0.2").packed)
    udp = (4000).to_bytes(2, "big") + dport.to_bytes(2, "big") + (8).to_bytes(2, "big") + bytes(2)
    return (mac(dmac) + mac(smac) + tag + b"\x08\x00" + header + udp).ljust(60, b"\0")


#: (frame, the handle the first matching identity gives): each pair of a hashed and a scanned
#: or two hashed identities of different shapes decided by position.
ORDER_CASES = [
    (udp_frame(MACS[0], MACS[1], 5000), 1),  # hashed ip (0) before hashed null (1)
    (udp_frame(MACS[0], MACS[1], 5001), 2),  # hashed null (1) before hashed ip (3)
    (udp_frame(MACS[1], MACS[2], 5001), 3),  # hashed null (2) before hashed ip (3), scanned smac (4)
    (udp_frame("02:00:00:00:00:09", MACS[2], 5001), 4),  # hashed ip (3) before scanned smac (4)
    (udp_frame("02:00:00:00:00:09", MACS[2], 7), 5),  # scanned smac (4) alone
    (udp_frame("02:00:00:00:00:09", MACS[1], 7, vid=10), 7),  # scanned smac (6) alone
    (udp_frame("02:00:00:00:00:09", MACS[1], 5000, vid=10), 1),  # hashed ip (0) before scanned smac (6)
    (udp_frame("02:00:00:00:00:09", MACS[0], 7), None),
]


def test_the_first_matching_identity_wins_hashed_or_scanned(hook_runner):
    """Fails if either path ignored the order: the hash taken before the scan, the scan before
    the hash, or one hashed shape before another, each gives another stream for some frame."""
    cfg = parse_config({"ports": ["p0"], "stream-identity": [
        {"index": i, "handle": i + 1, "out-facing": {"input-port": ["p0"]}, **kind} for i, kind in enumerate(ORDERED)],
        "stream-forwarding": [{"stream": i + 1, "output-port": ["local"]} for i in range(len(ORDERED))]})
    plan = cfg.plan
    assert [i.position for i in plan.scanned] == [4, 6] and len(plan.shapes) == 2
    maps = hook_runner.maps
    write_port(maps, hook_runner.ifindexes[0], 0)
    for stream, (flags, _) in enumerate(plan.streams):
        maps["streams"].update(layout.key(stream), layout.stream(flags, [layout.output(flags=layout.OUT_LOCAL)]))
    write_identities(maps, plan)
    maps["settings"].update(layout.key(0), layout.settings(len(plan.scanned), shapes=plan.shapes))
    core = StreamIdentifier()
    for i, kind in enumerate(ORDERED):
        ((name, params),) = kind.items()
        if name.startswith("null"):
            core.add_null(i + 1, params["destination-mac"], "all", 0)
        elif name.startswith("smac"):
            core.add_source_mac_vlan(i + 1, params["source-mac"], params["tagged"], params["vlan"])
        else:
            core.add_ip(i + 1, dst_ip=params["ip-destination"], next_protocol="udp", dst_port=params["destination-port"])

    def counted() -> list[int]:
        return [percpu_sum(maps, "stream_port_stats", s * layout.MAX_PORTS)[0] for s in range(len(ORDERED))]

    try:
        for frame, handle in ORDER_CASES:
            assert core.identify(frame) == handle, "the case agrees with the core"
            before = counted()
            hook_runner.run(frame)
            hits = [s + 1 for s, (a, b) in enumerate(zip(counted(), before)) if a != b]
            assert hits == ([] if handle is None else [handle]), f"{hook_runner.hook}: {frame.hex()}"
    finally:
        maps["settings"].update(layout.key(0), layout.settings(0))
