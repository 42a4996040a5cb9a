"""`frerlab net sim` on the shipped networks (networks/*.yaml): each delivers every frame once
without loss and puts on each link the copies the analysis expects; with Bernoulli loss on
every link each stream's delivered fraction lies within the binomial interval of the
prediction, and the ladder with recovery at every stage delivers more than the same ladder
recovering end to end, as the formulas say. The simulator's seed fixes every run, so each
check is deterministic; the loss and frame counts keep the whole file under a few seconds.
Also the verbs: --json, -o, the compiled scenario read back by the scenario schema, errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from conftest import binomial_bounds
from frerlab.cli import main
from frerlab.net import sim
from frerlab.net.analyse import analyse
from frerlab.net.topology import parse_topology
from frerlab.sim.schema import parse_scenario

NETWORKS = Path(__file__).resolve().parent.parent / "networks"
SHIPPED = sorted(p.stem for p in NETWORKS.glob("*.yaml"))
STAGE_LINKS = ["sw0-a1", "a1-sw1", "sw0-b1", "b1-sw1", "sw1-a2", "a2-sw2", "sw1-b2", "b2-sw2",
               "sw2-a3", "a3-sw3", "sw2-b3", "b3-sw3"]


def network(name: str, loss: float | dict[str, float] = 0.0, count: int | None = None):
    """A shipped network, every link (or the named ones) with Bernoulli loss, each stream
    limited to `count` frames."""
    data = yaml.safe_load((NETWORKS / f"{name}.yaml").read_text())
    for link in data["links"]:
        link["loss"] = loss.get(link["name"], 0.0) if isinstance(loss, dict) else loss
    for s in data["streams"]:
        if count is not None:
            s["count"] = count
    return parse_topology(copy.deepcopy(data), name)


def test_the_shipped_networks_are_the_five_the_docs_describe():
    assert SHIPPED == ["ladder_end_to_end", "ladder_per_stage", "ring", "seed_two_path", "shared_bottleneck"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_network_delivers_every_frame_once_with_the_predicted_copies(name):
    topo = network(name)
    result = sim.run(topo)
    prediction = analyse(topo, faults="schedule")
    for row in sim.summary(topo, result, prediction):
        assert row["sent"] > 1000
        assert (row["delivered"], row["lost"], row["duplicates"]) == (row["sent"], 0, 0), row
        assert row["predicted_ratio"] == 1.0
    # Every copy the analysis expects is sent (tx_frames), to the frame: with no random loss,
    # copies per frame times frames sent.
    sent = {row["stream"]: row["sent"] for row in sim.summary(topo, result)}
    expected: dict[str, float] = {}
    for row in prediction["links"]:
        port = f"{row['link']}:{row['from']}->{row['to']}"
        expected[port] = expected.get(port, 0.0) + row["copies_per_frame"] * sent[row["stream"]]
    measured = result.ports.groupby("port")["tx_frames"].sum().to_dict()
    assert set(measured) == set(expected)
    for port, frames in measured.items():
        assert frames == pytest.approx(expected[port], abs=1 + 0.002 * frames), port  # a cut's edges: one frame


@pytest.mark.parametrize("name", SHIPPED)
def test_every_recovery_function_passes_each_frame_once_and_discards_the_other_copies(name):
    topo = network(name)
    result = sim.run(topo)
    frer = result.frer
    sent = dict(zip(result.streams["stream"], result.streams["sent"]))
    for row in frer.to_dict("records"):
        assert row["passed_packets"] == sent[row["stream"]]
        assert row["tagless_packets"] == row["rogue_packets"] == 0
    stages = {s: len(topo.plans[s].recovery) for s in sent}
    assert len(frer) == sum(stages.values())
    assert list(frer["keep_tag"]) == [i < stages[s] - 1 for s in sent for i in range(stages[s])]


@pytest.mark.parametrize("name, p", [("seed_two_path", 0.2), ("ladder_per_stage", 0.1), ("ladder_end_to_end", 0.1),
                                     ("ring", 0.1), ("shared_bottleneck", 0.1)])
def test_with_bernoulli_loss_the_delivered_fraction_is_within_the_binomial_interval_of_the_prediction(name, p):
    topo = network(name, p, count=20_000)
    result = sim.run(topo)
    prediction = analyse(topo, faults="schedule")
    for row in sim.summary(topo, result, prediction):
        n, predicted = row["sent"], row["predicted_ratio"]
        assert n >= 5_000 and row["duplicates"] == 0
        assert n == analyse(topo)["streams"][row["stream"]]["frames"]
        low, high = binomial_bounds(n, predicted)
        assert low <= row["delivered_ratio"] <= high, (row, low, high)
        assert predicted < 1 - 0.01  # the loss is large enough to be measured


def test_the_ladder_recovering_at_every_stage_loses_less_than_end_to_end_as_predicted():
    loss = dict.fromkeys(STAGE_LINKS, 0.1)
    ratios = {}
    for name in ("ladder_per_stage", "ladder_end_to_end"):
        topo = network(name, loss, count=20_000)
        (row,) = sim.summary(topo, sim.run(topo), analyse(topo))
        low, high = binomial_bounds(row["sent"], row["predicted_ratio"])
        assert low <= row["delivered_ratio"] <= high, row
        ratios[name] = (row["delivered_ratio"], low, high)
    q = 0.9
    assert ratios["ladder_per_stage"][0] > ratios["ladder_end_to_end"][0]
    # The intervals are far apart: 0.8956 against 0.7805.
    assert ratios["ladder_per_stage"][1] > ratios["ladder_end_to_end"][2]
    assert (1 - (1 - q * q) ** 2) ** 3 == pytest.approx(0.8956, abs=1e-4)
    assert 1 - (1 - q ** 6) ** 2 == pytest.approx(0.7805, abs=1e-4)


def test_a_middle_stage_link_carries_one_copy_whenever_the_stage_before_delivered():
    """Recovery at sw1 passes one copy per frame and replicates it onto sw1-a2 and sw1-b2."""
    topo = network("ladder_per_stage", dict.fromkeys(STAGE_LINKS, 0.1), count=20_000)
    result = sim.run(topo)
    expected = next(r["copies_per_frame"] for r in analyse(topo)["links"] if r["link"] == "sw1-a2")
    frames = int(result.ports.set_index("port").loc["sw1-a2:sw1->a2", "tx_frames"])
    low, high = binomial_bounds(20_000, expected)
    assert low <= frames / 20_000 <= high


def run_json(capsys, argv: list[str]):
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_net_verbs_print_json_and_write_their_results(capsys, tmp_path):
    ladder = str(NETWORKS / "ladder_per_stage.yaml")
    analysed = run_json(capsys, ["net", "analyse", ladder, "--set", "links.sw1-a2.loss=0.5"])
    assert analysed["streams"]["control"]["delivery"] == pytest.approx(1 - 0.5 * 0)
    ran = run_json(capsys, ["net", "sim", ladder, "-o", str(tmp_path / "run"), "--set", "streams.control.count=1000"])
    assert ran["streams"][0]["delivered"] == 1000 and len(ran["frer"]) == 3
    for name in ("topology.yaml", "scenario.yaml", "prediction.json", "report.json", "frer.csv", "streams.csv"):
        assert (tmp_path / "run" / name).is_file(), name
    scenario = run_json(capsys, ["net", "scenario", ladder, "-o", str(tmp_path / "ladder.yaml")])
    assert scenario["scenario"] == yaml.safe_load((tmp_path / "ladder.yaml").read_text())
    nodes = run_json(capsys, ["net", "nodes", ladder])
    sw1 = next(n for n in nodes if n["name"] == "sw1")
    assert [(r["stream"], r["keep_tag"]) for r in sw1["recovery"]] == [("control", True)]
    assert sw1["forwarding"] == [{"stream": "control", "output": ["sw1-a2", "sw1-b2"], "tagged": True,
                                  "ingress": ["a1-sw1", "b1-sw1"]}]


@pytest.mark.parametrize("name", SHIPPED)
def test_the_compiled_scenario_is_a_valid_scenario_file_with_the_same_run(name, tmp_path, capsys):
    out = tmp_path / f"{name}.yaml"
    assert main(["net", "scenario", str(NETWORKS / f"{name}.yaml"), "-o", str(out)]) == 0
    data = yaml.safe_load(out.read_text())
    assert data == sim.scenario_data(network(name))
    sc = parse_scenario(data, str(out))
    assert [s.name for s in sc.streams] == [s.name for s in network(name).streams]


def test_a_loss_burst_the_simulator_cannot_run_is_refused_naming_it(tmp_path, capsys):
    data = yaml.safe_load((NETWORKS / "seed_two_path.yaml").read_text())
    data["faults"] = [{"burst": "A", "start": "100ms", "end": "200ms", "p": 0.5}]
    path = tmp_path / "burst.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["net", "sim", str(path)]) == 2
    err = capsys.readouterr().err
    assert "burst on A" in err and "p 0.5" in err and "net analyse" in err and err.count("\n") == 1
    assert main(["net", "analyse", str(path)]) == 0
    assert "delivery" in capsys.readouterr().out
    data["faults"][0]["p"] = 1
    path.write_text(yaml.safe_dump(data))
    assert main(["net", "scenario", str(path), "--json"]) == 0
    scenario = json.loads(capsys.readouterr().out)["scenario"]
    assert next(link for link in scenario["links"] if link["name"] == "A")["failures"] == [{"down": "100ms", "up": "200ms"}]


def test_net_sweep_writes_the_table_and_the_figure_and_agrees_with_the_prediction(tmp_path, capsys):
    ladders = [str(NETWORKS / f"{name}.yaml") for name in ("ladder_per_stage", "ladder_end_to_end")]
    out = tmp_path / "sweep"
    swept = run_json(capsys, ["net", "sweep", *ladders, "--loss", "0.05,0.1", "--links", ",".join(STAGE_LINKS),
                              "--set", "streams.control.count=20000", "-o", str(out)])
    rows = swept["rows"]
    assert [(r["topology"], r["p"]) for r in rows] == [
        ("ladder-per-stage", 0.05), ("ladder-per-stage", 0.1), ("ladder-end-to-end", 0.05), ("ladder-end-to-end", 0.1)]
    assert all(r["within_prediction"] and r["sent"] == 20_000 for r in rows)
    assert all(r["loss_low"] < r["loss_ratio"] < r["loss_high"] for r in rows)
    assert rows[1]["predicted_loss"] < rows[3]["predicted_loss"]
    for name in ("sweep.csv", "loss.svg", "loss.png"):
        assert (out / name).stat().st_size > 0
    assert "<svg" in (out / "loss.svg").read_text()


@pytest.mark.parametrize("argv, expected", [
    (["--loss", "1.5"], "--loss 1.5 is out of range (0..1)"),
    (["--loss", "lots"], "--loss 'lots' is not a probability"),
    (["--loss", "0.1", "--links", "A,Z"], "--links 'Z' is not a link of it"),
])
def test_net_sweep_refuses_a_bad_option_naming_it(tmp_path, capsys, argv, expected):
    assert main(["net", "sweep", str(NETWORKS / "seed_two_path.yaml"), *argv, "-o", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1
