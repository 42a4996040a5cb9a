"""Damaged state files, YANG data missing a mandatory choice, simulator recovery placements that
would discard every frame, and sweep grids past their bound: each is refused with one clear
error (exit 2) naming the file and the field, the node or the numbers, never a traceback and
never a line of a file that is not what it claims to be.

State files (a testbed's, a data plane's and its latent error findings, an impairment
element's) are damaged every way table-driven here and read by their readers directly; at least
one row per verb that reads them runs the real CLI with its state directories in a sandbox
(tests/badinput.py). `down --all` removes the valid ones and names the damaged ones.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path

import pytest
import yaml

from badinput import SECRET, assert_refused, run_cli
from frerlab.cli import main
from frerlab.dataplane import control
from frerlab.errors import UsageError
from frerlab.impair import path as impair_path
from frerlab.sim import api
from frerlab.sim.sweeps import MAX_SWEEP_POINTS, MAX_SWEEP_VALUES, _count_values, grid_points
from frerlab.testbed import bed
from frerlab.statefiles import remove_if_empty

ROOT = Path(__file__).resolve().parents[1]
LINK_FAILURE = ROOT / "scenarios" / "link_failure.yaml"

ROLES = ("talker", "sw1", "sw2", "listener", "a", "b")
TESTBED = {"name": "tb1", "settings": {"name": "tb1", "mode": "frer", "rate": "100Mbps", "queue_limit": "64KiB",
                                       "replicate_at": "sw1", "eliminate_at": "sw2", "history_length": 32,
                                       "path_rate": None, "rate_bps": 100_000_000, "path_rate_bps": 100_000_000,
                                       "queue_limit_bytes": 65536},
           "namespaces": {r: f"tb-tb1-{r}" for r in ROLES}, "dataplanes": {"sw1": "tb-tb1-sw1", "sw2": "tb-tb1-sw2"},
           "paths": {"a": "tb-tb1-path-a", "b": "tb-tb1-path-b"}, "started": 1.5}
DATAPLANE = {"name": "dp1", "netns": None, "attached": [], "config": {}, "monitor_pid": None,
             "interfaces": {"offloads": {"eth0": ["tx-udp_tnl-segmentation"]}, "mtu": {"eth0": [1500, 1506]},
                            "gso_max_segs": {}}, "started": 1.5, "hooks": {}, "hook_note": None}
CLEAN = {"down": False, "loss": 0.0, "gilbert_elliott": None, "delay_ms": 0.0, "jitter_ms": 0.0, "reorder": 0.0,
         "duplicate": 0.0}
IMPAIR = {"netns": "ns1", "end_a": "in", "end_b": "out", "delay_limit": 100_000,
          "settings": {"forward": dict(CLEAN), "reverse": dict(CLEAN)}}
LATENT = {"updated": 1.5, "functions": [{"stream": 1, "paths": 2, "difference_threshold": 10, "active": False,
                                         "alarms": 0, "last": None, "latent_error_resets": 0}]}


def _changed(state: dict, dotted: str, value: object) -> dict:
    state = copy.deepcopy(state)
    *parents, last = dotted.split(".")
    node = state
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return state


#: Per kind of state file: its valid content, its path under a run directory, and its reader.
KINDS = {
    "testbed": (TESTBED, "testbed/tb1.json", lambda: bed.read_state("tb1")),
    "dataplane": (DATAPLANE, "dataplane/dp1.json", lambda: control.read_state("dp1")),
    "latent": (LATENT, "dataplane/dp1.latent.json", lambda: control.read_latent("dp1")),
    "impair": (IMPAIR, "impair/el1/state.json", lambda: impair_path.recorded_state("el1")),
}

#: Damage every state file can take -> (content, or "fifo"/"symlink"; text the error must hold).
DAMAGE = {
    "not JSON": (b"{not json", "not valid JSON at line 1, column 2"),
    "empty": (b"", "not valid JSON at line 1, column 1"),
    "binary": (bytes(range(256)), "it is not UTF-8 text"),
    "secret text": ("\n".join(SECRET).encode(), "not valid JSON at line 1"),
    "a list": (b"[1, 2]", "the top level: should be a JSON object"),
    "missing keys": (b"{}", "Field required"),
    "NaN": (b'{"name": NaN}', "NaN is not a number JSON allows"),
    "400 digits": (b'{"name": 1' + b"9" * 400 + b"}", "an integer of 401 digits"),
    "deep nesting": (b"[" * 100_000, "nested too deeply"),
    "fifo": ("fifo", "is not a regular file (a device, FIFO or socket)"),
    "symlink out": ("symlink", "leads outside"),  # or refused by name (names.inside): see below
}

#: (kind, field, bad value, text the error must hold besides the field).
WRONG_FIELDS = [
    ("testbed", "settings.history_length", "32", "Input should be a valid integer"),
    ("testbed", "settings.mode", "fast", "Input should be 'frer' or 'control'"),
    ("testbed", "namespaces.talker", "../../etc", "is not valid"),
    ("testbed", "started", True, "Input should be a valid number"),
    ("dataplane", "monitor_pid", "12", "Input should be a valid integer"),
    ("dataplane", "attached", [1], "Input should be a valid string"),
    ("dataplane", "interfaces.mtu.eth0", [1500], "List should have at least 2 items"),
    ("dataplane", "netns", "-x", "is not valid"),
    ("latent", "functions.0.active", "yes", "Input should be a valid boolean"),
    ("latent", "functions.0.last", {"condition": 3}, "Input should be a valid string"),
    ("impair", "settings.forward.loss", "0.1", "Input should be a valid number"),
    ("impair", "settings.forward.loss", 2.0, "loss 2.0 is out of range"),
    ("impair", "settings.reverse.jitter_ms", 5.0, "jitter_ms 5.0 is out of range"),
    ("impair", "delay_limit", 0, "Input should be greater than or equal to 1"),
]


@pytest.fixture
def run_dir(tmp_path, monkeypatch) -> Path:
    """A run directory the readers called here use (FRERLAB_RUN_DIR for the CLI)."""
    run = tmp_path / "run"
    monkeypatch.setattr(bed, "STATE_DIR", run / "testbed")
    monkeypatch.setattr(control, "STATE_DIR", run / "dataplane")
    monkeypatch.setattr(impair_path, "STATE_ROOT", run / "impair")
    return run


def _plant(run: Path, relative: str, content: bytes | str) -> Path:
    """Writes `content` (or makes a FIFO, or a symlink to a secret file outside `run`) at `relative`."""
    path = run / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == "fifo":
        os.mkfifo(path)
    elif content == "symlink":
        secret = run.parent / "secret"
        secret.write_text("\n".join(SECRET))
        path.symlink_to(secret)
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_state_file_is_refused_naming_the_file(run_dir, kind, damage):
    _, relative, read = KINDS[kind]
    content, expected = DAMAGE[damage]
    path = _plant(run_dir, relative, content)
    with pytest.raises(UsageError) as err:
        read()
    message = str(err.value)
    if damage == "symlink out" and kind != "impair":  # the name leads there: refused by names.inside
        path, expected = path.parent, f"{path.stem.split('.')[0]!r} does not name an entry of"
    assert str(path) in message and expected in message, message
    assert all(line[:20] not in message for line in SECRET), message


@pytest.mark.parametrize("kind, field, value, expected", WRONG_FIELDS,
                         ids=[f"{k}-{f}-{v!r}" for k, f, v, _ in WRONG_FIELDS])
def test_a_state_file_with_a_wrong_field_is_refused_naming_it(run_dir, kind, field, value, expected):
    valid, relative, read = KINDS[kind]
    path = _plant(run_dir, relative, json.dumps(valid).encode())
    assert read() == valid, "the valid state is read back as written"
    path.write_text(json.dumps(_changed(valid, field, value)))
    with pytest.raises(UsageError) as err:
        read()
    message = str(err.value)
    shown_field = field.rsplit(".", 1)[0] if kind == "impair" and expected.endswith("out of range") else field
    assert str(path) in message and shown_field in message and expected in message, message


#: Every verb that reads a damaged state file, run as the real CLI: (argv, kind of the damaged file).
VERBS = [
    (["testbed", "status", "--name", "tb1"], "testbed"),
    (["testbed", "down", "--name", "tb1"], "testbed"),
    (["testbed", "exec", "--name", "tb1", "talker", "--", "true"], "testbed"),
    (["testbed", "impair", "--name", "tb1", "a", "--down"], "testbed"),
    (["dataplane", "down", "--name", "dp1"], "dataplane"),
    (["dataplane", "stats", "--name", "dp1"], "dataplane"),
    (["dataplane", "monitor", "--name", "dp1", "--duration", "1"], "dataplane"),
    (["dataplane", "status", "--name", "dp1"], "dataplane"),
    (["dataplane", "reset", "--name", "dp1"], "dataplane"),
]


@pytest.mark.parametrize("argv, kind", VERBS, ids=[" ".join(argv[:2]) for argv, _ in VERBS])
@pytest.mark.parametrize("damage", ["a list", "fifo"])
def test_every_verb_refuses_a_damaged_state_file_and_keeps_it(tmp_path, argv, kind, damage):
    run = tmp_path / "run"
    _, relative, _ = KINDS[kind]
    path = _plant(run, relative, DAMAGE[damage][0])
    assert_refused(argv, [str(path), DAMAGE[damage][1]], run, never=SECRET)
    assert os.path.lexists(path), "a refused command removes nothing"


def test_impair_and_down_refuse_a_damaged_impairment_or_data_plane_of_a_testbed(tmp_path):
    """The testbed's own state is valid; what it reads next is not: refused, nothing removed."""
    run = tmp_path / "run"
    _plant(run, "testbed/tb1.json", json.dumps(TESTBED).encode())
    element = _plant(run, "impair/tb-tb1-path-a/state.json", json.dumps(_changed(IMPAIR, "end_a", 5)).encode())
    (run / "bpf" / "tb-tb1-path-a").mkdir(parents=True)
    assert_refused(["testbed", "impair", "--name", "tb1", "a", "--down"], [str(element), "end_a"], run)
    assert_refused(["testbed", "down", "--name", "tb1"], [str(element), "end_a"], run)
    element.unlink()
    dataplane = _plant(run, "dataplane/tb-tb1-sw2.json", b"[]")
    assert_refused(["testbed", "down", "--name", "tb1"], [str(dataplane), "the top level: should be a JSON object"], run)
    assert (run / "testbed" / "tb1.json").exists() and (run / "bpf" / "tb-tb1-path-a").exists()


@pytest.mark.parametrize("area, valid, damaged_name", [
    ("testbed", TESTBED, "tb2"), ("dataplane", DATAPLANE, "dp2")])
def test_down_all_removes_the_valid_ones_and_names_the_damaged_ones(tmp_path, area, valid, damaged_name):
    run = tmp_path / "run"
    good = _plant(run, f"{area}/good.json", json.dumps({**valid, "name": "good"}).encode())
    damaged = _plant(run, f"{area}/{damaged_name}.json", b"\x00\xff")
    fifo = _plant(run, f"{area}/pipe.json", "fifo")
    result = run_cli([area, "down", "--all"], run)
    assert "Traceback" not in result.stderr and result.returncode == 2, result.stderr
    assert "good removed" in result.stdout, result.stdout
    assert "2 " in result.stderr and str(damaged) in result.stderr and str(fifo) in result.stderr, result.stderr
    assert not good.exists() and damaged.exists() and os.path.lexists(fifo)


# ---- YANG: a mandatory choice without any of its cases ----

CHOICE = """module tiny-sid {
  yang-version 1.1;
  namespace "urn:example:tiny-sid";
  prefix ts;
  revision 2026-01-01;
  list stream-identity {
    key "index";
    leaf index { type uint32; }
    choice identification {
      mandatory true;
      container null-stream-identification { leaf vlan { type uint16; } }
      container ip-stream-identification { leaf dscp { type uint8; } }
    }
  }
}
"""


@pytest.mark.parametrize("identity, expected", [
    ({"index": 1}, "/tiny-sid:stream-identity[index=1]: missing-data: the mandatory choice identification has none "
                   "of its cases"),
    ({"index": 2, "bogus": 1}, "/tiny-sid:stream-identity[index=2]/bogus: no node of the loaded modules has this name "
                               "(RawMemberError)"),
])
def test_yang_validate_of_a_missing_mandatory_choice_is_one_clear_error(tmp_path, capsys, identity, expected):
    (tmp_path / "yang").mkdir()
    (tmp_path / "yang" / "tiny-sid.yang").write_text(CHOICE)
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"tiny-sid:stream-identity": [identity]}))
    assert main(["config", "validate", str(data), "--yang-dir", str(tmp_path / "yang")]) == 2
    err = capsys.readouterr().err
    assert expected in err and str(data) in err and err.count("\n") == 1 and "Traceback" not in err, err
    data.write_text(json.dumps({"tiny-sid:stream-identity": [{"index": 1, "ip-stream-identification": {}}]}))
    assert main(["config", "validate", str(data), "--yang-dir", str(tmp_path / "yang")]) == 0


# ---- the simulator: a recovery function every frame reaches without a sequence number ----

def _scenario(**frer) -> dict:
    data = yaml.safe_load(LINK_FAILURE.read_text())
    data["streams"][0]["frer"].update(frer)
    return data


REFUSED_PLACEMENTS = [
    ("before the generation", [{"node": "talker"}], "sequence_recovery at 'talker' would discard every frame"),
    ("after another recovery", [{"node": "sw2"}, {"node": "listener"}],
     "sequence_recovery at 'listener' would discard every frame"),
    ("on an ingress before the generation", [{"node": "sw1", "ingress": "talker-sw1"}],
     "sequence_recovery at 'sw1' (ingress talker-sw1) would discard every frame"),
]
#: The rows above with the generation at sw2 (the third: without it, sw1 numbers first).
GENERATION = {"before the generation": "sw1", "after another recovery": "sw1", "on an ingress before the generation": "sw2"}
ACCEPTED_PLACEMENTS = [
    ("after the generation", [{"node": "sw2"}]),
    ("at the generation node", [{"node": "sw1"}]),
    ("on an ingress into the generation node", [{"node": "sw1", "ingress": "talker-sw1"}]),
    ("before, taking frames without a sequence number", [{"node": "talker", "take_no_sequence": True}]),
    ("individual recovery, then recovery", [{"node": "sw2", "ingress": "A", "individual_recovery": True},
                                            {"node": "listener"}]),
]


@pytest.mark.parametrize("placement, recovery, expected", REFUSED_PLACEMENTS, ids=[r[0] for r in REFUSED_PLACEMENTS])
def test_check_refuses_a_recovery_that_would_discard_every_frame(placement, recovery, expected):
    with pytest.raises(UsageError, match="would discard every frame") as err:
        api.check(_scenario(sequence_generation=GENERATION[placement], sequence_recovery=recovery))
    assert expected in str(err.value) and "take_no_sequence: true" in str(err.value)


@pytest.mark.parametrize("placement, recovery", ACCEPTED_PLACEMENTS, ids=[r[0] for r in ACCEPTED_PLACEMENTS])
def test_check_accepts_a_recovery_that_gets_numbered_frames(placement, recovery):
    api.check(_scenario(sequence_recovery=recovery))


@pytest.mark.parametrize("verb", ["check", "run"])
def test_sim_check_and_run_refuse_the_same_placement(tmp_path, verb):
    path = tmp_path / "talker-recovery.yaml"
    path.write_text(yaml.safe_dump(_scenario(sequence_recovery=[{"node": "talker"}])))
    assert_refused(["sim", verb, str(path)], [str(path), REFUSED_PLACEMENTS[0][2]], tmp_path / "run")


# ---- sweep grids: bounded in points and in values to check, before anything is built ----

def _base() -> dict:
    data = yaml.safe_load(LINK_FAILURE.read_text())
    data.pop("sweep", None)
    return data


GRIDS = [
    ("points", {"seed": list(range(200)), "streams.udp.count": list(range(1, 101))}, None,
     f"sweep of 20,000 points is out of range (at most {MAX_SWEEP_POINTS:,} runs)"),
    ("values", {"seed": list(range(100)), "streams.udp.count": list(range(1, 101))}, _base(),
     f"sweep of 10,000 points over a scenario and grid of 78 values is 780,000 values to check, out of range "
     f"(at most {MAX_SWEEP_VALUES:,}"),
    ("large values", {"seed": list(range(10)), "links": [[{"name": f"l{i}"} for i in range(2000)]]}, _base(),
     "sweep of 10 points over a scenario and grid of 4,078 values is 40,780 values"),
]


@pytest.mark.parametrize("what, grid, scenario, expected", GRIDS, ids=[g[0] for g in GRIDS])
def test_a_grid_past_its_bound_is_refused_naming_the_total_and_the_bound(what, grid, scenario, expected):
    if what == "large values":  # within the bound: 40,780 values
        assert len(grid_points(grid, scenario)) == 10
        grid = {**grid, "seed": list(range(20))}
        expected = "sweep of 20 points over a scenario and grid of 4,078 values is 81,560 values to check"
    started = time.process_time()
    with pytest.raises(UsageError) as err:
        grid_points(grid, scenario)
    assert expected in str(err.value), str(err.value)
    assert time.process_time() - started < 0.5, "refused before the points are made"


def test_a_grid_file_cannot_bypass_the_bound(tmp_path):
    """`sim sweep` of a grid file: refused before anything is built or written."""
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"scenario": str(LINK_FAILURE),
                                    "grid": {"seed": list(range(100)), "streams.udp.count": list(range(1, 101))}}))
    out = tmp_path / "out"
    assert_refused(["sim", "sweep", str(grid), "-o", str(out)],
                   ["sweep of 10,000 points", "780,000 values to check", f"at most {MAX_SWEEP_VALUES:,}"],
                   tmp_path / "run")
    assert not out.exists()


def test_checking_the_largest_accepted_sweep_is_quick(tmp_path, capsys):
    """A sweep just within the bound over the largest shipped scenario: every point validated
    and costed in well under 2 s of CPU."""
    from frerlab.sim.cli import cmd_check

    data = yaml.safe_load((ROOT / "scenarios" / "hotspot" / "bcn.yaml").read_text())
    data.pop("sweep", None)
    points = MAX_SWEEP_VALUES // (_count_values(data) + 1)  # the grid adds 1 value (a seed) per point
    assert len(grid_points({"seed": list(range(points))}, data)) == points
    data["sweep"] = {"seed": list(range(points))}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    started = time.process_time()
    assert cmd_check(argparse.Namespace(scenario=path, allow_long=True, json=False)) == 0
    assert time.process_time() - started < 2.0
    assert f"{points} runs" in capsys.readouterr().out


def test_an_emptied_state_directory_goes_and_run_dir_with_it_unless_another_run_is_there(tmp_path):
    run = tmp_path / "run"
    (run / "testbed").mkdir(parents=True)
    (run / "dataplane").mkdir()
    (run / "dataplane" / "other.json").write_text("{}")
    remove_if_empty(run / "testbed")
    assert not (run / "testbed").exists() and (run / "dataplane" / "other.json").exists()
    remove_if_empty(run / "dataplane")  # not empty: another run's file stays, and so does RUN_DIR
    assert (run / "dataplane" / "other.json").exists()
    (run / "dataplane" / "other.json").unlink()
    remove_if_empty(run / "dataplane")
    assert not run.exists() and tmp_path.exists()
