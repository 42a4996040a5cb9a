"""A topology in network namespaces (frerlab.net.namespaces) and checked against the simulator
and the prediction (frerlab.crosscheck.network): every shipped network comes up, carries its
streams with each frame delivered once and agrees with both; the ladder recovering at every
stage loses less than the one recovering end to end in both worlds; `net up` names what it
made after the topology, `net down` (and an interrupted crosscheck) leaves nothing; bad input is
one clear error."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import interruptible, needs_netns

from frerlab.cli import main
from frerlab.crosscheck import network
from frerlab.dataplane import control
from frerlab.errors import UsageError
from frerlab.impair.path import STATE_ROOT as ELEMENT_STATE
from frerlab.net import namespaces
from frerlab.net.topology import read_with_overrides

NETWORKS = Path(__file__).resolve().parent.parent / "networks"
#: Each shipped network at rates this 2-core machine forwards through every namespace hop
#: without loss of its own (about 500-2500 frames/s per stream, 1 s each).
SLOW = {
    "seed_two_path": ["streams.udp.rate=20Mbps"],
    "ladder_per_stage": ["streams.control.rate=10Mbps"],
    "ladder_end_to_end": ["streams.control.rate=10Mbps"],
    "ring": ["streams.video.rate=20Mbps"],
    "shared_bottleneck": ["streams.s1.rate=4Mbps", "streams.s2.rate=4Mbps"],
}
STAGE_LINKS = ("sw0-a1", "a1-sw1", "sw0-b1", "b1-sw1", "sw1-a2", "a2-sw2", "sw1-b2", "b2-sw2",
               "sw2-a3", "a3-sw3", "sw2-b3", "b3-sw3")


def topology(name: str, *overrides: str):
    return read_with_overrides(NETWORKS / f"{name}.yaml", [*SLOW[name], *overrides])


def leftovers(prefix: str) -> list[str]:
    """Namespaces, data plane states and impairment elements whose names start with `prefix`."""
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    found = [n for n in spaces if n.startswith(prefix)]
    for directory in (control.STATE_DIR, ELEMENT_STATE):
        if directory.is_dir():
            found += [p.name for p in directory.iterdir() if p.name.startswith(prefix)]
    return found


@needs_netns
@pytest.mark.parametrize("name", sorted(SLOW))
def test_every_shipped_network_delivers_each_frame_once_as_the_simulator_and_the_prediction_say(
        name, tmp_path, capsys):
    _, topo = topology(name)
    sets = [arg for item in SLOW[name] for arg in ("--set", item)]
    status = main(["crosscheck", str(NETWORKS / f"{name}.yaml"), *sets, "-o", str(tmp_path), "--json"])
    comparison = json.loads(capsys.readouterr().out)
    assert status == 0 and comparison["agree"], network.table(comparison)
    rows = {(r["stream"], r["metric"]): r for r in comparison["rows"] if not r["node"]}
    for s in topo.streams:
        sent = rows[s.name, "sent"]["net"]
        assert sent > 400
        assert rows[s.name, "delivered"]["net"] == sent and rows[s.name, "duplicates"]["net"] == 0, s.name
    for raw in ("sim/report.json", "prediction.json", "net/dataplanes.json", "topology.yaml", "comparison.txt"):
        assert (tmp_path / raw).is_file(), raw
    assert not leftovers("n-xc")


@needs_netns
def test_the_ladder_recovering_at_every_stage_loses_less_than_end_to_end_in_both_worlds(tmp_path):
    lossy = [f"links.{link}.loss=0.1" for link in STAGE_LINKS]
    lost = {}
    for name in ("ladder_per_stage", "ladder_end_to_end"):
        data, topo = topology(name, *lossy)
        comparison = network.run(topo, data, name, tmp_path / name)
        assert comparison["agree"], network.table(comparison)
        rows = {r["metric"]: r for r in comparison["rows"] if not r["node"]}
        lost[name] = {world: (rows["lost"][world], rows["sent"][world]) for world in ("sim", "net")}
    for world in ("sim", "net"):  # per stage ~10.4 % against ~22.0 % end to end (docs/networks.md)
        (a, n), (b, m) = lost["ladder_per_stage"][world], lost["ladder_end_to_end"][world]
        spread = math.sqrt(a * (n - a) / n + b * (m - b) / m)
        assert b - a > 4 * spread, (world, a, b)


@needs_netns
def test_up_names_everything_after_the_topology_and_down_removes_it_all():
    name = f"t{time.monotonic_ns() % 10**6}"
    data, topo = topology("seed_two_path", "links.A.loss=0.25")
    state = namespaces.up(topo, data, "seed", name)
    try:
        assert state["namespaces"]["sw1"] == f"n-{name}-sw1" and state["elements"]["A"] == f"n-{name}--A"
        assert state["addresses"] == {"talker": "198.18.0.1", "listener": "198.18.0.2"}
        assert set(state["dataplanes"]) == {"sw1", "sw2"}, "plain end stations run none"
        shown = subprocess.run(namespaces.exec_argv(name, "listener", ["ip", "-j", "addr", "show", "sw2-listener"]),
                               capture_output=True, text=True, check=True).stdout
        (iface,) = json.loads(shown)
        assert iface["address"] == namespaces.mac(1) and iface["mtu"] == 1506
        assert [a["local"] for a in iface["addr_info"]] == ["198.18.0.2"]
        status = namespaces.status(name)
        assert status["links"]["A"]["settings"]["forward"]["loss"] == 0.25, "the file's loss, both directions"
        assert status["links"]["A"]["settings"]["reverse"]["loss"] == 0.25
        assert namespaces.impair(name, "B", down=True)["settings"]["forward"]["down"]
        assert namespaces.running().count(name) == 1
        with pytest.raises(UsageError, match="up already"):
            namespaces.up(topo, data, "seed", name)
    finally:
        assert namespaces.down(name)
    assert not leftovers(f"n-{name}-") and name not in namespaces.running()
    assert namespaces.down(name) is False, "idempotent"


@needs_netns
def test_an_interrupted_crosscheck_takes_its_network_down(tmp_path):
    argv = [sys.executable, "-m", "frerlab.cli", "crosscheck", str(NETWORKS / "ring.yaml"), "-o", str(tmp_path),
            "--set", "streams.video.rate=2Mbps", "--set", "duration=60s"]
    with interruptible(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        prefix = f"n-xc{proc.pid % 10**7}-"
        deadline = time.monotonic() + 60
        while not (tmp_path / "net" / "video").is_dir() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        assert leftovers(prefix), "the network is up while the stream runs"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert not leftovers(prefix)


def test_crosscheck_s_errors_for_a_topology(tmp_path, capsys):
    ring = str(NETWORKS / "ring.yaml")
    assert main(["crosscheck", ring, "--set", "faults=[{burst: r1-r2, start: 0.1, end: 0.2, p: 0.5}]",
                 "-o", str(tmp_path / "a")]) == 2
    assert "burst on r1-r2 with p 0.5: the simulator has no time-limited random loss" in capsys.readouterr().err
    scenario = Path(__file__).resolve().parent.parent / "scenarios/crosscheck/path_cut.yaml"
    assert main(["crosscheck", str(scenario), "--set", "x=1", "-o", str(tmp_path / "b")]) == 2
    assert "--set takes a topology file" in capsys.readouterr().err


def test_bad_names_and_unroutable_streams_are_one_clear_error():
    data, topo = topology("seed_two_path")
    with pytest.raises(UsageError, match="network name 'much-too-long-name'"):
        namespaces.up(topo, data, "seed", "much-too-long-name")
    long_node = "n" * 38
    data, topo = topology("seed_two_path", f"nodes.{long_node}={{kind: end_station}}")
    with pytest.raises(UsageError, match=f"node '{long_node}': its namespace 'n-net-{long_node}' would have 44"):
        namespaces.up(topo, data, "seed", "net")
    with pytest.raises(UsageError, match="no network named 'nosuch' is up"):
        namespaces.exec_argv("nosuch", "talker", ["true"])


def test_two_streams_between_the_same_stations_must_leave_by_the_same_link():
    data = {"name": "two", "duration": "1s",
            "nodes": {"t": {"kind": "end_station"}, "s1": {"kind": "bridge"}, "s2": {"kind": "bridge"},
                      "l": {"kind": "end_station"}},
            "links": [{"name": "t-s1", "a": "t", "b": "s1", "rate": "1Gbps"},
                      {"name": "t-s2", "a": "t", "b": "s2", "rate": "1Gbps"},
                      {"name": "s1-l", "a": "s1", "b": "l", "rate": "1Gbps"},
                      {"name": "s2-l", "a": "s2", "b": "l", "rate": "1Gbps"}],
            "streams": [{"name": "x", "talker": "t", "listeners": ["l"], "rate": "1Mbps", "paths": [["t-s1", "s1-l"]]},
                        {"name": "y", "talker": "t", "listeners": ["l"], "rate": "1Mbps", "paths": [["t-s2", "s2-l"]]}]}
    from frerlab.net.topology import parse_topology

    with pytest.raises(UsageError, match="streams x and y both go from t to l but leave by different links"):
        namespaces.routes(parse_topology(data, "two"))


def campaign_file(tmp_path: Path, system: dict, steps: list[dict]) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(json.dumps({"name": "on-a-network", "system": system, "steps": steps}))
    return path


def test_a_campaign_on_a_topology_is_checked_before_anything_runs(tmp_path):
    from frerlab.bench.campaign import read_campaign

    (tmp_path / "nets").mkdir()
    (tmp_path / "nets" / "seed.yaml").write_text((NETWORKS / "seed_two_path.yaml").read_text())
    step = {"kind": "loss_vs_load", "frame_sizes": [512], "loads": [50], "trial_s": 1}
    system = {"kind": "network", "topology": "nets/seed.yaml", "mode": "frer"}
    campaign, _ = read_campaign(campaign_file(tmp_path, system, [step]))
    assert campaign.system.topology_file == tmp_path / "nets/seed.yaml", "relative to the campaign file"
    for change, message in (({"mode": "control"}, "system.mode control: stream udp of nets/seed.yaml has FRER"),
                            ({"stream": "tcp"}, r"system.stream 'tcp' is not a stream of nets/seed.yaml \(udp\)"),
                            ({"set": ["links.A.rate=fast"]}, r"links\.1\.rate: rate 'fast' is not valid")):
        with pytest.raises(UsageError, match=message):
            read_campaign(campaign_file(tmp_path, {**system, **change}, [step]))
    with pytest.raises(UsageError, match="failover.*needs a testbed"):
        read_campaign(campaign_file(tmp_path, system, [{"kind": "failover"}]))
    for step, named in (({"kind": "tcp"}, "tcp"), ({"kind": "latency"}, "latency with sockperf")):
        with pytest.raises(UsageError, match=rf"step 0 \({named}\) needs a return path"):
            read_campaign(campaign_file(tmp_path, system, [step]))


@needs_netns
def test_a_campaign_runs_on_a_topology_s_network_and_finds_its_bottleneck(tmp_path):
    # talker's link 20 Mbit/s (the loads' line rate), each path 12 Mbit/s with a 16 KB queue: 50 %
    # passes, 90 % (18.3 Mbit/s of 512-byte frames, 18.2 on the paths with the R-TAG) loses about
    # a third on both paths alike, and FRER cannot recover what both lose
    rates = [f"links.{link}.rate={rate}" for link, rate in
             (("talker-sw1", "20Mbps"), ("A", "12Mbps"), ("B", "12Mbps"), ("sw2-listener", "20Mbps"))]
    system = {"kind": "network", "topology": str(NETWORKS / "seed_two_path.yaml"), "mode": "frer",
              "set": [*rates, "links.A.queue=16KB", "links.B.queue=16KB"]}
    step = {"kind": "loss_vs_load", "frame_sizes": [512], "loads": [50, 90], "trial_s": 2}
    out = tmp_path / "out"
    assert main(["bench", "run", str(campaign_file(tmp_path, system, [step])), "-o", str(out)]) == 0
    units = {json.loads(p.read_text())["unit"]["params"]["load"]: json.loads(p.read_text())
             for p in out.glob("units/loss_vs_load/frer/*/r1/result.json")}
    assert units[50]["metrics"]["loss_percent"] == 0
    assert 25 < units[90]["metrics"]["loss_percent"] < 45
    sw2 = units[50]["detail"]["frer"]["sw2"]["1"]["sequence"]["counters"]
    assert sw2["passed_packets"] >= units[50]["detail"]["sent"] and sw2["discarded_packets"] > 0, sw2
    assert not leftovers("n-bc")
