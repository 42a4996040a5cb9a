"""`frerlab dataplane up|stats|down` with the example configurations in configs/dataplane/,
across namespace topologies: the seeds' relays (SW1 replicates with an active per-path MAC and
VLAN on path b, SW2 eliminates and restores them), and end-stations with two NICs (the talker
replicates on egress, the listener runs individual and sequence recovery on ingress). Every
frame must arrive exactly once, the counters must prove how, the latent error monitor must
raise its alarm when a path dies, and `down` must leave nothing behind, also after a crash."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, ROOT

from frerlab.dataplane import control, stats
from frerlab.dataplane.config import load_config, parse_config
from frerlab.dataplane.node import ARRAY_STREAMS, PIN_ROOT
from frerlab.errors import UsageError
from frerlab.netns import Namespaces
from frerlab.traffic.across import stream_across

pytestmark = NEEDS_BPF
CONFIGS = ROOT / "configs" / "dataplane"
CLI = [sys.executable, "-m", "frerlab.cli"]
LISTENER_MAC = "02:fe:00:00:00:02"  # the `up` MAC of the relays' active identity


def prefix() -> str:
    return f"frc{os.getpid()}x{time.monotonic_ns() % 100000}"


def config(file: str, **changes):
    """An example configuration with some fields changed, validated (and compiled) again."""
    return parse_config({**load_config(CONFIGS / file).model_dump(), **changes})


def send_stream(net: Namespaces, talker: str, listener: str, count: int, rate: str = "10k") -> dict:
    """frerlab gen send from talker to 198.18.0.2 while gen recv listens; the one stream's report."""
    with tempfile.TemporaryDirectory() as tmp:
        return stream_across(net.exec(talker, []), net.exec(listener, []), "198.18.0.2",
                             ["--rate-fps", rate, "--count", str(count)], Path(tmp)).stream()


@pytest.fixture(params=["tc", "auto", "xdp"])
def relays(request):
    """talker - sw1 - paths a, b - sw2 - listener, with sw1 and sw2 up from the example
    configurations through the control API, both with the configuration's `hook` set to the
    param; everything removed afterwards. Under "auto" both take tc (every port is a veth);
    under "xdp" both run native XDP, sw1 rewriting path b's copies as they leave."""
    hook = {} if request.param == "tc" else {"hook": request.param}
    with relay_topology(hook, sw1_changes=hook) as topology:
        yield topology


@contextmanager
def relay_topology(sw2_changes: dict | None = None, sw1_changes: dict | None = None):
    """The relays' topology, the switches' configurations changed by `sw1_changes` and
    `sw2_changes` (config fields)."""
    names = []
    with Namespaces(prefix()) as net:
        net.add("tal", "sw1", "sw2", "lis")
        net.link("tal", "t0", "sw1", "up")
        net.link("sw1", "pa", "sw2", "pa", mtu=1506)
        net.link("sw1", "pb", "sw2", "pb", mtu=1510)  # room for the R-TAG and the VLAN tag
        net.link("sw2", "down", "lis", "l0")
        net.run("lis", "ip", "link", "set", "l0", "address", LISTENER_MAC)
        net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0")
        net.run("lis", "ip", "addr", "add", "198.18.0.2/24", "dev", "l0")
        net.run("tal", "ip", "neigh", "replace", "198.18.0.2", "lladdr", LISTENER_MAC, "dev", "t0", "nud", "permanent")
        if (sw1_changes or {}).get("hook") == "xdp":  # native XDP's neighbours (docs/dataplane.md)
            net.run("tal", "ethtool", "-K", "t0", "tx", "off")  # the talker's checksums computed
            net.run("lis", "ethtool", "-K", "l0", "gro", "on")  # frames redirected to it delivered
        try:
            for role, file in (("sw1", "sw1-replicate.yaml"), ("sw2", "sw2-eliminate.yaml")):
                changes = (sw2_changes if role == "sw2" else sw1_changes) or {}
                cfg = config(file, name=f"{net.prefix}-{role}", **changes)
                names.append(cfg.name)
                control.up(cfg, net.ns[role])
            yield net, names
        finally:
            for name in names:
                control.down(name)


def test_relays_deliver_each_frame_once_with_active_identification_on_path_b(relays):
    net, (sw1, sw2) = relays
    status = control.status(sw2), control.status(sw1)
    received = {p["received"] for s in status for p in s["ports"]}
    assert received == ({"xdp native"} if status[0]["hook"] == "xdp" else {"tc"})
    assert [s["stream_maps"] for s in status] == [{"kind": "array", "capacity": ARRAY_STREAMS}] * 2
    if status[0]["hook"] == "auto":
        assert all("veth" in s["note"] for s in status)
    stream = send_stream(net, "tal", "lis", 3000)
    assert (stream["expected"], stream["unique"], stream["lost"], stream["duplicates"]) == (3000, 3000, 0, 0)
    s1, s2 = control.snapshot(sw1), control.snapshot(sw2)
    (st1,) = s1["streams"]
    assert st1["generation"]["generated"] >= 3000
    out = {p["port"]: p["output"] for p in st1["ports"]}
    assert out["pa"] == out["pb"] == st1["generation"]["generated"], "one copy per path"
    (st2,) = s2["streams"]
    (rcvy,) = st2["recovery"]
    assert rcvy["passed_packets"] == rcvy["discarded_packets"] == st1["generation"]["generated"]
    assert rcvy["lost_packets"] == rcvy["rogue_packets"] == 0
    inputs = {p["port"]: p["input"] for p in st2["ports"]}
    assert inputs["pa"] == inputs["pb"] == rcvy["passed_packets"], \
        "path b's copies were identified by the MAC and VLAN sw1 gave them"


@pytest.mark.parametrize("placement, duplicates", [(["down"], 0), (["pa"], 3000)])
def test_sequence_recovery_on_a_port_sees_only_that_ports_frames(placement, duplicates):
    """On the output port it eliminates across both paths; on path a's input port it sees only
    path a's copies, so path b's go through unchecked (802.1CB 10.4.1.2: per port)."""
    sw2 = load_config(CONFIGS / "sw2-eliminate.yaml")
    (rec,) = sw2.sequence_recovery
    moved = rec.model_copy(update={"port": placement, "latent_error_detection": False})
    with relay_topology({"sequence_recovery": [moved]}) as (net, (_, sw2_name)), tempfile.TemporaryDirectory() as tmp:
        reports = stream_across(net.exec("tal", []), net.exec("lis", []), "198.18.0.2",
                                ["--rate-fps", "10k", "--count", "3000"], Path(tmp))
        (st,) = control.snapshot(sw2_name)["streams"]
    stream = reports.stream()
    assert (stream["unique"], stream["duplicates"]) == (3000, duplicates)
    on_wire = reports.sender["frames_sent"] + reports.sender["end_probes_sent"]
    (rcvy,) = st["recovery"]
    assert (rcvy["function"], rcvy["port"], rcvy["passed_packets"]) == ("sequence", placement[0], on_wire)
    assert rcvy["discarded_packets"] == (0 if duplicates else on_wire)


def test_stats_views_carry_the_standard_counter_names(relays):
    net, (_, sw2) = relays
    send_stream(net, "tal", "lis", 500)
    snap = control.snapshot(sw2)
    text = stats.prometheus(snap)
    passed = snap["streams"][0]["recovery"][0]["passed_packets"]
    assert f'frer_cps_seq_rcvy_passed_packets_total{{node="{sw2}",stream="1",function="sequence"}} {passed}' in text
    assert "# HELP frer_cps_seq_rcvy_passed_packets_total frerCpsSeqRcvyPassedPackets" in text
    assert "# TYPE frer_cp_seq_rcvy_discard_packets_total counter" in text
    inputs = {p["port"]: p["input"] for p in snap["streams"][0]["ports"]}
    assert (f'tsn_cps_sid_input_packets_total{{node="{sw2}",stream="1",port="pb",direction="out-facing"}} '
            f'{inputs["pb"]}') in text
    assert f'tsn_cps_sid_input_packets_total{{node="{sw2}",stream="1",port="pb",direction="in-facing"}} 0' in text
    cli = subprocess.run([*CLI, "dataplane", "stats", "--name", sw2, "--json"], capture_output=True, text=True,
                         check=True)
    assert json.loads(cli.stdout)["streams"][0]["recovery"][0]["passed_packets"] >= passed
    table = subprocess.run([*CLI, "dataplane", "stats", "--name", sw2], capture_output=True, text=True, check=True)
    assert "sequence recovery (vector, history 32)" in table.stdout


def test_latent_error_alarm_when_path_b_dies(relays):
    net, (_, sw2) = relays
    net.run("sw1", "ip", "link", "set", "pb", "down")
    send_stream(net, "tal", "lis", 3000, rate="2k")  # 1.5 s: three latent error periods
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        latent = control.snapshot(sw2)["latent"]
        if latent and latent["functions"][0]["alarms"]:
            break
        time.sleep(0.1)
    finding = control.snapshot(sw2)["latent"]["functions"][0]
    assert finding["alarms"] >= 1 and finding["last"]["condition"] == "missing-copies"
    table = subprocess.run([*CLI, "dataplane", "stats", "--name", sw2], capture_output=True, text=True).stdout
    alarms = re.search(r"latent error detection, stream 1: (ERROR|ok) \((\d+) alarms", table)
    assert alarms and int(alarms.group(2)) >= 1, table


@pytest.mark.parametrize("hook", ["tc", "xdp"])
def test_end_stations_replicate_on_talker_egress_and_eliminate_on_listener_ingress(hook):
    with Namespaces(prefix()) as net:
        net.add("tal", "lis")
        net.link("tal", "t0a", "lis", "l0a", mtu=1506)
        net.link("tal", "t0b", "lis", "l0b", mtu=1506)
        mac = net.mac("lis", "l0a")
        net.run("lis", "ip", "link", "set", "l0b", "address", mac)  # both NICs take the stream's DA
        net.run("lis", "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.l0b.rp_filter=0")
        net.run("tal", "ip", "addr", "add", "198.18.0.1/24", "dev", "t0a")
        net.run("lis", "ip", "addr", "add", "198.18.0.2/24", "dev", "l0a")
        net.run("tal", "ip", "neigh", "replace", "198.18.0.2", "lladdr", mac, "dev", "t0a", "nud", "permanent")
        talker = config("talker-two-nics.yaml", name=f"{net.prefix}-tal")
        listener = config("listener-two-nics.yaml", name=f"{net.prefix}-lis", hook=hook)
        try:
            control.up(talker, net.ns["tal"])
            control.up(listener, net.ns["lis"])
            stream = send_stream(net, "tal", "lis", 3000)
            snap = control.snapshot(listener.name)
            sent = control.snapshot(talker.name)
            hooks = {p["port"]: p["received"] for p in control.status(listener.name)["ports"]}
        finally:
            control.down(talker.name)
            control.down(listener.name)
    assert (stream["expected"], stream["unique"], stream["lost"], stream["duplicates"]) == (3000, 3000, 0, 0)
    (tal,) = sent["streams"]
    numbered = tal["generation"]["generated"]
    counters = {p["port"]: p for p in tal["ports"]}
    assert (counters["t0a"]["input"], counters["t0a"]["input_sent"]) == (0, numbered), \
        "the host's frames are identified in-facing, as sent, not as received"
    assert counters["t0a"]["output"] == counters["t0b"]["output"] == numbered
    (st,) = snap["streams"]
    lis = {p["port"]: p for p in st["ports"]}
    assert lis["l0a"]["output"] == 0, "frames handed to this host are not copies sent out of a port"
    ports = {p["port"]: p for p in snap["ports"]}
    by_fn = {(r["function"], r["port"]): r for r in st["recovery"]}
    for port in ("l0a", "l0b"):
        individual = by_fn[("individual", port)]
        assert individual["passed_packets"] >= 3000 and individual["discarded_packets"] == 0, \
            "one copy per number on each path: nothing for individual recovery to drop"
    compound = by_fn[("sequence", None)]
    assert compound["passed_packets"] == compound["discarded_packets"] == by_fn[("individual", "l0a")]["passed_packets"]
    if hook == "tc":
        assert ports["l0a"]["reinjected"] + ports["l0b"]["reinjected"] == compound["passed_packets"], \
            "every passed frame came up once more, without its R-TAG, and was counted"
    else:
        assert hooks == {"l0a": "xdp native", "l0b": "xdp native"}
        assert ports["l0a"]["reinjected"] + ports["l0b"]["reinjected"] == 0, "XDP hands frames up once"


def test_down_clears_a_crashed_up_and_is_idempotent():
    with Namespaces(prefix()) as net:
        net.add("sw")
        net.link("sw", "up", "sw", "pa")
        net.link("sw", "pb", "sw", "x")
        cfg = config("sw1-replicate.yaml", name=f"{net.prefix}-crash")
        # a crash half-way: the process dies right after attaching, before it finishes
        crash = ("import os, sys; from frerlab.dataplane import control, node; "
                 "from frerlab.dataplane.config import load_config; attach = node.Node.attach; "
                 "node.Node.attach = lambda self, *a, **k: (attach(self, *a, **k), os._exit(9)); "
                 "control.up(load_config(sys.argv[1]).model_copy(update={'name': sys.argv[2]}), sys.argv[3])")
        died = subprocess.run([sys.executable, "-c", crash, str(CONFIGS / "sw1-replicate.yaml"), cfg.name,
                               net.ns["sw"]], capture_output=True, text=True)
        assert died.returncode == 9, died.stderr
        with pytest.raises(UsageError, match="is up already"):
            control.up(cfg, net.ns["sw"])
        assert (PIN_ROOT / cfg.name).exists()
        qdiscs = net.run("sw", "tc", "qdisc", "show", "dev", "up")
        assert "clsact" in qdiscs
        down = subprocess.run([*CLI, "dataplane", "down", "--name", cfg.name], capture_output=True, text=True)
        assert down.returncode == 0 and "removed" in down.stdout
        assert not (PIN_ROOT / cfg.name).exists() and cfg.name not in control.running_names()
        assert "clsact" not in net.run("sw", "tc", "qdisc", "show", "dev", "up")
        again = subprocess.run([*CLI, "dataplane", "down", "--name", cfg.name], capture_output=True, text=True)
        assert again.returncode == 0 and "was not up" in again.stdout


def test_up_refuses_a_missing_namespace_and_a_bad_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("ports: [a]\nsequence-recovery: [{index: 1, stream: [1], history-length: 4096}]\n")
    result = subprocess.run([*CLI, "dataplane", "up", "--config", str(bad)], capture_output=True, text=True)
    assert result.returncode == 2
    assert "sequence-recovery.0.history-length" in result.stderr and "4096" in result.stderr
    result = subprocess.run([*CLI, "dataplane", "up", "--config", str(CONFIGS / "sw1-replicate.yaml"),
                             "--netns", "frerlab-no-such-ns"], capture_output=True, text=True)
    assert result.returncode == 2 and "'frerlab-no-such-ns' does not exist" in result.stderr


def test_a_policed_path_drops_its_excess_and_the_other_path_carries_the_stream():
    # path a's copies through a 400 kbit/s meter (far below the stream's ~4 Mbit/s of SDUs): most
    # are red; path b carries every frame, so the listener loses none, and the snapshot shows it
    policing = {"stream_filter": [{"index": 1, "stream": [1], "port": ["pa"], "flow-meter": 1}],
                "flow_meter": [{"index": 1, "committed-information-rate": 400_000, "committed-burst-size": 2000}]}
    with relay_topology(policing) as (net, (_, sw2)):
        stream = send_stream(net, "tal", "lis", 2000)
        (f,) = control.snapshot(sw2)["filters"]
    assert (stream["unique"], stream["duplicates"]) == (2000, 0), stream
    assert f["matching_frames"] >= 2000 and f["red_frames"] > 0.8 * f["matching_frames"], f
    assert f["passing_frames"] + f["red_frames"] == f["matching_frames"], f
