"""GSO, checksum offload and MTU in the eBPF data plane (issue 11, item 4), across namespace
topologies: talker - sw1 (numbers, replicates) - paths a, b - sw2 (eliminates, removes the
R-TAG) - listener, brought up with `control.up`, and a talker end-station replicating on its
own egress.

- MTU: `up` raises the MTU of the ports that carry R-tagged frames on links left at 1500,
  so full-size (1500-byte IP) frames cross generation and elimination exactly once, and
  `down` puts the MTUs back; a port that cannot take the MTU is refused before anything
  changes.
- Checksums: popping the R-TAG keeps a CHECKSUM_PARTIAL skb's checksum offsets right, so
  iperf3 TCP and UDP delivered out of a port that checksums in software (`tx off`) arrive
  with no checksum errors.
- skb->protocol after the pop is the EtherType after the tag, and VLAN tags in front of the
  R-TAG (in skb metadata or in the frame) are kept.
- GSO: super-packets from an upstream host with TSO are refused and counted (gso_refused),
  never numbered as one frame; a talker end-station's own TCP is numbered segment by
  segment (`up` sets gso_max_segs 1 on its port).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import NEEDS_BPF

from frerlab.dataplane import control, interfaces, layout, stats
from frerlab.dataplane.config import parse_config
from frerlab.dataplane.node import Node
from frerlab.errors import UsageError
from frerlab.netns import Namespaces
from frerlab.traffic.across import stream_across
from frerlab.traffic.tools import iperf3

pytestmark = NEEDS_BPF
LISTENER_IP, LISTENER_MAC = "198.18.0.2", "02:fe:00:00:00:02"
TO_LISTENER = {"ip-stream-identification": {"ip-destination": LISTENER_IP}}


def prefix() -> str:
    return f"fo{os.getpid()}x{time.monotonic_ns() % 100000}"


def relay_configs(prefix: str):
    """sw1 numbers everything to the listener and copies it onto pa and pb; sw2 eliminates and
    sends it on to the listener without its R-TAG. Other frames (ACKs) cross on path a."""
    sw1 = parse_config({
        "name": f"{prefix}-sw1", "ports": ["up", "pa", "pb"], "bridge-ports": ["up", "pa"],
        "stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["up"]}, **TO_LISTENER}],
        "sequence-generation": [{"index": 1, "stream": [1]}],
        "stream-forwarding": [{"stream": 1, "output-port": ["pa", "pb"]}]})
    sw2 = parse_config({
        "name": f"{prefix}-sw2", "ports": ["pa", "pb", "down"], "bridge-ports": ["pa", "down"],
        "stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["pa", "pb"]}, **TO_LISTENER}],
        "sequence-recovery": [{"index": 1, "stream": [1], "history-length": 256}],
        "stream-forwarding": [{"stream": 1, "output-port": ["down"]}]})
    return sw1, sw2


@contextmanager
def relays(talker_offloads: tuple[str, ...] = ("tso", "off", "gso", "off"), path_mtu: int = 1500,
           down_offloads: tuple[str, ...] = ()):
    """The relay topology with every host link at 1500 and the paths at `path_mtu`; the
    talker's ethtool -K settings (by default what a host feeding a FRER node needs) and sw2's
    port to the listener's. Yields (net, {role: state of `up`}); everything removed after."""
    states = {}
    with Namespaces(prefix()) as net:
        net.add("tal", "sw1", "sw2", "lis")
        net.link("tal", "t0", "sw1", "up")
        net.link("sw1", "pa", "sw2", "pa", mtu=path_mtu)
        net.link("sw1", "pb", "sw2", "pb", mtu=path_mtu)
        net.link("sw2", "down", "lis", "l0")
        net.run("lis", "ip", "link", "set", "l0", "address", LISTENER_MAC)
        net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0")
        net.run("lis", "ip", "addr", "add", f"{LISTENER_IP}/24", "dev", "l0")
        net.run("tal", "ip", "neigh", "replace", LISTENER_IP, "lladdr", LISTENER_MAC, "dev", "t0", "nud", "permanent")
        net.run("lis", "ip", "neigh", "replace", "198.18.0.1", "lladdr", net.mac("tal", "t0"), "dev", "l0",
                "nud", "permanent")
        if talker_offloads:
            net.run("tal", "ethtool", "-K", "t0", *talker_offloads)
        if down_offloads:
            net.run("sw2", "ethtool", "-K", "down", *down_offloads)
        sw1, sw2 = relay_configs(net.prefix)
        try:
            for role, cfg in (("sw1", sw1), ("sw2", sw2)):
                states[role] = control.up(cfg, net.ns[role], monitor=False)
            yield net, states
        finally:
            for state in states.values():
                control.down(state["name"])


def udp_stream(net: Namespaces, talker: str, listener: str, count: int, size: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return stream_across(net.exec(talker, []), net.exec(listener, []), LISTENER_IP,
                             ["--rate-fps", "5k", "--count", str(count), "--frame-size", str(size)],
                             Path(tmp)).stream()


def snmp(net: Namespaces, role: str) -> dict[str, int]:
    """/proc/net/snmp of role's namespace: 'Tcp.InCsumErrors' -> value, ..."""
    rows = [line.split() for line in net.run(role, "cat", "/proc/net/snmp").splitlines()]
    out = {}
    for head, values in zip(rows[::2], rows[1::2]):
        out.update({f"{head[0][:-1]}.{k}": int(v) for k, v in zip(head[1:], values[1:])})
    return out


def port(snap: dict, name: str) -> dict:
    return next(p for p in snap["ports"] if p["port"] == name)


def test_full_mtu_udp_crosses_generation_and_elimination_on_links_left_at_1500():
    with relays() as (net, states):
        stream = udp_stream(net, "tal", "lis", 2000, 1518)  # 1500-byte IP packets
        changes = {role: state["changes"] for role, state in states.items()}
        mtus = {(role, p): json.loads(net.run(role, "ip", "-j", "link", "show", "dev", p))[0]["mtu"]
                for role in ("sw1", "sw2") for p in ("pa", "pb")}
        offloaded = "generic-segmentation-offload: off" in net.run("sw1", "ethtool", "-k", "up")
        for state in states.values():
            control.down(state["name"])
        after = {(role, p): json.loads(net.run(role, "ip", "-j", "link", "show", "dev", p))[0]["mtu"]
                 for role in ("sw1", "sw2") for p in ("pa", "pb")}
        restored = "generic-segmentation-offload: on" in net.run("sw1", "ethtool", "-k", "up")
    assert (stream["expected"], stream["unique"], stream["lost"], stream["duplicates"]) == (2000, 2000, 0, 0)
    assert set(mtus.values()) == {1506}, mtus
    for role in ("sw1", "sw2"):
        for p in ("pa", "pb"):
            assert f"{p}: MTU 1500 -> 1506 for R-tagged frames" in "\n".join(changes[role]), changes[role]
    assert offloaded and "up: offloads off: generic-segmentation-offload" in "\n".join(changes["sw1"])
    assert set(after.values()) == {1500} and restored, f"down puts the MTUs and offloads back: {after}"


@pytest.mark.timing
def test_tcp_and_udp_through_frer_have_no_checksum_errors_where_checksums_are_done_in_software():
    """The talker leaves checksums to offload (CHECKSUM_PARTIAL all the way to sw2); sw2's port
    to the listener has tx checksumming off, so the kernel computes them at csum_start, which
    must still point at the L4 header after the R-TAG came off."""
    with relays(path_mtu=1506, down_offloads=("tx", "off")) as (net, states):
        before = snmp(net, "lis")
        _, (tcp,) = iperf3.run_test(LISTENER_IP, udp=False, duration_s=2, client_prefix=net.exec("tal", []),
                                    server_prefix=net.exec("lis", []))
        stream = udp_stream(net, "tal", "lis", 2000, 1518)
        after = snmp(net, "lis")
        sw2 = control.snapshot(states["sw2"]["name"])
    errors = {k: after[k] - before[k] for k in ("Tcp.InCsumErrors", "Udp.InCsumErrors", "Ip.InHdrErrors")}
    assert errors == dict.fromkeys(errors, 0), errors
    assert tcp.payload_bps > 10e6, f"iperf3 TCP delivered {tcp.payload_bps / 1e6:.1f} Mbit/s"
    assert (stream["unique"], stream["lost"], stream["duplicates"]) == (2000, 0, 0)
    (rcvy,) = sw2["streams"][0]["recovery"]
    assert rcvy["passed_packets"] > 2000 and port(sw2, "pa")["tx_errors"] == 0


def test_gso_packets_from_a_host_with_tso_are_refused_never_numbered_as_one_frame():
    """A talker with TSO on hands sw1 TCP super-packets: sw1 refuses and counts them; nothing
    numbered reaches sw2 as more than one frame (on main, sw2 failed to pop them)."""
    with relays(talker_offloads=()) as (net, states):
        server = subprocess.Popen(net.exec("lis", [sys.executable, "-c", textwrap.dedent("""
            import socket
            s = socket.create_server(("198.18.0.2", 5201)); s.settimeout(5)
            c, _ = s.accept(); c.settimeout(3)
            try:
                while c.recv(1 << 16): pass
            except OSError: pass""")]))
        time.sleep(0.3)
        subprocess.run(net.exec("tal", [sys.executable, "-c", textwrap.dedent("""
            import socket
            s = socket.create_connection(("198.18.0.2", 5201), timeout=2)
            try: s.sendall(bytes(4 << 20))
            except OSError: pass""")]), timeout=30)
        server.wait(timeout=30)
        sw1, sw2 = (control.snapshot(states[role]["name"]) for role in ("sw1", "sw2"))
    assert port(sw1, "up")["gso_refused"] > 0
    assert all(p["tx_errors"] == 0 for p in sw2["ports"]), sw2["ports"]
    table, prom = stats.table(sw1), stats.prometheus(sw1)
    header = next(line for line in table.splitlines() if line.startswith("port "))
    assert header.split()[-1] == "gso-refused", header
    assert f'frerlab_port_gso_refused_packets_total{{node="{sw1["name"]}",port="up"}} ' \
           f'{port(sw1, "up")["gso_refused"]}' in prom


@pytest.mark.timing
def test_talker_end_station_numbers_its_own_tcp_segment_by_segment():
    """A talker replicating on its own egress sees its TCP before the kernel segments it;
    `up` sets gso_max_segs 1 on the port so TCP sends one segment per skb, and warns about the
    route that would let the host send packets too large for an R-TAG."""
    with Namespaces(prefix()) as net:
        net.add("tal", "lis")
        net.link("tal", "t0a", "lis", "l0a")
        net.link("tal", "t0b", "lis", "l0b")
        net.run("lis", "ip", "link", "set", "l0a", "address", LISTENER_MAC)
        net.run("lis", "ip", "link", "set", "l0b", "address", LISTENER_MAC)
        net.run("lis", "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.l0b.rp_filter=0")
        net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0a")
        net.run("lis", "ip", "addr", "add", f"{LISTENER_IP}/24", "dev", "l0a")
        net.run("tal", "ip", "neigh", "replace", LISTENER_IP, "lladdr", LISTENER_MAC, "dev", "t0a", "nud", "permanent")
        net.run("lis", "ip", "neigh", "replace", "198.18.0.1", "lladdr", net.mac("tal", "t0a"), "dev", "l0a",
                "nud", "permanent")
        talker = parse_config({
            "name": f"{net.prefix}-tal", "ports": ["t0a", "t0b"],
            "stream-identity": [{"index": 1, "handle": 1, "in-facing": {"input-port": ["t0a"]}, **TO_LISTENER}],
            "sequence-generation": [{"index": 1, "stream": [1]}],
            "stream-forwarding": [{"stream": 1, "output-port": ["t0b", "t0a"]}]})
        listener = parse_config({
            "name": f"{net.prefix}-lis", "ports": ["l0a", "l0b"],
            "stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["l0a", "l0b"]},
                                 **TO_LISTENER}],
            "sequence-recovery": [{"index": 1, "stream": [1], "history-length": 256}],
            "stream-forwarding": [{"stream": 1, "output-port": ["local"]}]})
        try:
            tal_state = control.up(talker, net.ns["tal"], monitor=False)
            control.up(listener, net.ns["lis"], monitor=False)
            # what the warning says: the host's own packets must leave room for the R-TAG
            net.run("tal", "ip", "route", "change", "198.18.0.0/24", "dev", "t0a", "mtu", "1500")
            _, (tcp,) = iperf3.run_test(LISTENER_IP, udp=False, duration_s=2, client_prefix=net.exec("tal", []),
                                        server_prefix=net.exec("lis", []))
            tal, lis = control.snapshot(talker.name), control.snapshot(listener.name)
            segs = json.loads(net.run("tal", "ip", "-j", "-d", "link", "show", "dev", "t0a"))[0]["gso_max_segs"]
        finally:
            control.down(talker.name)
            control.down(listener.name)
        segs_after = json.loads(net.run("tal", "ip", "-j", "-d", "link", "show", "dev", "t0a"))[0]["gso_max_segs"]
    (rcvy,) = lis["streams"][0]["recovery"]
    assert tcp.payload_bps > 10e6, f"iperf3 TCP delivered {tcp.payload_bps / 1e6:.1f} Mbit/s"
    assert rcvy["passed_packets"] > 1000 and rcvy["discarded_packets"] >= 0.9 * rcvy["passed_packets"], \
        f"each segment was numbered on its own and arrived once per path: {rcvy}"
    assert port(tal, "t0a")["gso_refused"] == 0
    changes = "\n".join(tal_state["changes"])
    assert "t0a: gso_max_segs 65535 -> 1" in changes and "WARNING: t0a: route 198.18.0.0/24" in changes, changes
    assert segs == 1 and segs_after == 65535


def test_up_refuses_a_port_whose_device_cannot_take_the_mtu(monkeypatch):
    sw1, _ = relay_configs("fo-refuse")
    links = {"up": {"mtu": 1500, "max_mtu": 9000}, "pa": {"mtu": 1500, "max_mtu": 1500},
             "pb": {"mtu": 1500, "max_mtu": 9000}}
    monkeypatch.setattr(interfaces, "link_info", lambda netns, p: links[p])
    monkeypatch.setattr(interfaces, "features", lambda netns, p: {})
    with pytest.raises(UsageError, match=r"port pa: MTU 1500 is too small .* need 1506 .* at most 1500"):
        interfaces.survey(None, sw1.plan, ["up"])
    links["pa"]["max_mtu"] = 1506
    survey = interfaces.survey(None, sw1.plan, ["up"])
    assert survey.mtu == {"pa": [1500, 1506], "pb": [1500, 1506]} and not survey.offloads


#: Run inside a namespace: collects the frames sent out of an interface for a while and prints
#: one JSON object per frame: skb->protocol as AF_PACKET reports it, and the frame with a tag
#: held in skb metadata put back in.
CAPTURE = """
import json, socket, struct, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0)); s.setsockopt(263, 8, 1); s.settimeout(0.2)  # SOL_PACKET, PACKET_AUXDATA
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        data, anc, _, addr = s.recvmsg(4096, 64)
    except socket.timeout:
        continue
    if addr[2] != socket.PACKET_OUTGOING:
        continue
    for level, kind, aux in anc:
        status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", aux[:20])
        if status & 0x10:  # TP_STATUS_VLAN_VALID
            data = data[:12] + struct.pack("!HH", tpid or 0x8100, tci) + data[12:]
    print(json.dumps({"protocol": addr[1], "frame": data.hex()}), flush=True)
"""


def test_popped_frames_keep_their_vlan_tags_and_carry_their_own_protocol():
    macs = bytes.fromhex("020000000002020000000001")
    payloads = {0x0800: bytes.fromhex("4500002e000100004011") + bytes(36),
                0x86DD: bytes.fromhex("6000000000061140") + bytes(38),
                0x88B5: bytes(range(46))}
    tags = [[], [bytes.fromhex("8100a00a")], [bytes.fromhex("88a80064"), bytes.fromhex("8100200b")],
            [bytes.fromhex("88a80064"), bytes.fromhex("8100200b"), bytes.fromhex("8100300c")]]
    sent, expected = [], []
    for t in tags:
        for etype, payload in payloads.items():
            inner = etype.to_bytes(2, "big") + payload
            sent.append(macs + b"".join(t) + bytes.fromhex("f1c10000") + len(sent).to_bytes(2, "big") + inner)
            # skb->protocol: what follows the outer tag (held in skb metadata on receive)
            expected.append((int.from_bytes(t[1][:2], "big") if len(t) > 1 else etype, macs + b"".join(t) + inner))
    with Namespaces(prefix()) as net:
        net.add("a", "s")
        net.link("a", "a0", "s", "in")
        net.link("s", "out", "a", "a1")
        node = Node(f"{net.prefix}-s", net.ns["s"], ["in", "out"]).__enter__()
        try:
            node.add_stream(0, ingress=["in"], outputs=["out"], recovery=layout.RecoveryConfig(history_length=64))
            node.attach(["in"])
            capture = subprocess.Popen(net.exec("s", [sys.executable, "-c", CAPTURE, "out", "2"]),
                                       stdout=subprocess.PIPE, text=True)
            time.sleep(0.5)
            send = ("import socket, sys; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind(('a0', 0)); "
                    "[s.send(bytes.fromhex(h)) for h in sys.argv[1:]]")
            net.run("a", sys.executable, "-c", send, *[f.hex() for f in sent])
            out, _ = capture.communicate(timeout=20)
            counters = node.port_counters(0)
        finally:
            node.close()
    seen = [json.loads(line) for line in out.splitlines()]
    assert counters["tx_errors"] == 0 and counters["rcvy_passed"] == len(sent), counters
    assert [(f["protocol"], f["frame"]) for f in seen] == [(p, f.hex()) for p, f in expected]

