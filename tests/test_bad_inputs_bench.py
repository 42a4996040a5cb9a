"""Bad input to benchmark campaigns and the hosts they run on (issue 27): campaign values of
the wrong kind, plans beyond their bound, a results directory damaged before `--resume` (or an
import directory before `frerlab import` adds to it), a `bench show` summary that is not one,
hosts files naming bad key or known_hosts files. Every
row is refused with exit 2 and a message naming the field or file, never a traceback, never a
line of a file that is not what it claims to be, and nothing is created.

Each class has at least one row through the real CLI (tests/badinput.py); the other rows call
the function the CLI calls, which is what they test and much faster.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from badinput import SECRET, assert_refused
from frerlab.bench.imported import import_into
from frerlab.bench.campaign import MAX_CAMPAIGN_BYTES, MAX_UNITS, parse_campaign, plan, plan_text, read_campaign
from frerlab.bench.results import ResultsDir
from frerlab.errors import UsageError
from frerlab.remote.hosts import read_hosts

#: What no message may show: the secret lines, a piece of one, a traceback.
NEVER = [*SECRET, "SecretSalt", "Traceback"]

CAMPAIGN = {"name": "bad-bench", "system": {"rate": "100Mbps", "modes": ["frer"]},
            "steps": [{"kind": "loss_vs_load", "frame_sizes": [64], "loads": [50], "trial_s": 1, "repetitions": 2}]}


def campaign(path: str, value) -> dict:
    """CAMPAIGN with the value at dotted `path` (list indices as numbers) replaced."""
    data = copy.deepcopy(CAMPAIGN)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = data
    for p in parents:
        node = node[p]
    node[last] = value
    return data


def refused(call, *expected: str) -> str:
    """Runs `call()`, asserts it raises UsageError whose message holds every `expected` text and
    no line of SECRET; returns the message."""
    with pytest.raises(UsageError) as err:
        call()
    message = str(err.value)
    for text in expected:
        assert text in message, f"{text!r} not in {message!r}"
    for text in NEVER:
        assert text not in message
    return message


def listing(directory: Path) -> list[str]:
    """Every path below `directory`: what a refused command must leave as it was."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


# --- campaign values of the wrong kind: refused by field path, never coerced -------------------

VALUE_ROWS = [
    ("steps.0.repetitions", True, "steps.0.loss_vs_load.repetitions: Input should be a valid integer (got True)"),
    ("steps.0.repetitions", "3", "steps.0.loss_vs_load.repetitions: Input should be a valid integer (got '3')"),
    ("steps.0.trial_s", True, "steps.0.loss_vs_load.trial_s: Input should be a valid number (got True)"),
    ("steps.0.trial_s", "10", "steps.0.loss_vs_load.trial_s: Input should be a valid number (got '10')"),
    ("steps.0.frame_sizes", [64.5], "steps.0.loss_vs_load.frame_sizes.0: Input should be a valid integer"),
    ("steps.0.frame_sizes", [64.0], "steps.0.loss_vs_load.frame_sizes.0: Input should be a valid integer (got 64.0)"),
    ("steps.0.loads", ["fast"], "steps.0.loss_vs_load.loads.0: Input should be a valid number (got 'fast')"),
    ("steps.0", {"kind": "latency", "duration_s": True},
     "steps.0.latency.duration_s: Input should be a valid number (got True)"),
    ("steps.0", {"kind": "failover", "cut_a": [True, 3.0]}, "steps.0.failover.cut_a.0: Input should be a valid number"),
    ("steps.0", {"kind": "throughput", "search": {"kind": "binary", "iterations": "10"}},
     "steps.0.throughput.search.binary.iterations: Input should be a valid integer (got '10')"),
    ("system.history_length", True, "system.testbed.history_length: Input should be a valid integer (got True)"),
    ("system.impair", {"a": {"gilbert_elliott": 5}}, "system.testbed: impair.a:"),
]


@pytest.mark.parametrize("path, value, expected", VALUE_ROWS, ids=[f"{r[0]}={r[1]!r}" for r in VALUE_ROWS])
def test_a_campaign_value_of_the_wrong_kind_is_refused_by_its_field_path(path, value, expected):
    refused(lambda: parse_campaign(campaign(path, value), "c.yaml"), f"c.yaml: {expected}")


def test_a_campaign_value_of_the_wrong_kind_is_refused_by_the_cli(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(campaign("steps.0.repetitions", True)))
    assert_refused(["bench", "run", "c.yaml", "--dry-run"],
                   ["c.yaml: steps.0.loss_vs_load.repetitions: Input should be a valid integer (got True)"],
                   tmp_path / "run", cwd=tmp_path, never=NEVER)
    assert listing(tmp_path) == ["c.yaml"]


# --- bounded work: the plan's units, counted before any is built; the file's size -------------

def test_a_plan_above_the_bound_is_refused_naming_its_total_and_the_bound():
    too_many = campaign("steps.0.frame_sizes", list(range(64, 64 + 101)))
    too_many["steps"][0]["loads"] = list(range(1, 51))  # 101 x 50 x 2 repetitions
    refused(lambda: parse_campaign(too_many, "c.yaml"), "the plan holds 10100 units", f"more than {MAX_UNITS}")


@pytest.mark.timing
def test_a_plan_of_a_billion_points_is_refused_without_building_them():
    huge = campaign("steps.0", {"kind": "latency", "frame_sizes": [64] * 40_000, "loads": [0.0] * 40_000})
    started = time.monotonic()
    refused(lambda: parse_campaign(huge, "c.yaml"), "the plan holds 3200000000 units")
    assert time.monotonic() - started < 5, "the units were built before they were counted"


@pytest.mark.timing
def test_the_largest_plan_accepted_is_planned_and_printed_quickly():
    largest = campaign("steps.0.frame_sizes", list(range(64, 164)))
    largest["steps"][0]["loads"] = list(range(1, 51))  # 100 x 50 x 2 = MAX_UNITS
    started = time.monotonic()
    c = parse_campaign(largest)
    units = plan(c)
    assert len(units) == MAX_UNITS and plan_text(c, units).count("\n") == 2
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("row", ["units", "bytes"])
def test_a_plan_or_file_beyond_the_bound_is_refused_by_the_cli(tmp_path, row):
    if row == "units":
        data = campaign("steps.0.frame_sizes", list(range(64, 64 + 101)))
        data["steps"][0]["loads"] = list(range(1, 51))
        expected = ["c.yaml: the plan holds 10100 units", f"more than {MAX_UNITS}"]
    else:
        data = campaign("steps.0.frame_sizes", [64] * (MAX_CAMPAIGN_BYTES // 4))
        expected = [f"above the limit of {MAX_CAMPAIGN_BYTES} bytes for a campaign"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    assert_refused(["bench", "run", "c.yaml", "--out", "out"], expected, tmp_path / "run", cwd=tmp_path, never=NEVER)
    assert listing(tmp_path) == ["c.yaml"]


# --- a results directory damaged before --resume ----------------------------------------------

UNIT = "loss_vs_load/frer/frame_size=64,load=50/r1"


@pytest.fixture
def results(tmp_path) -> tuple[Path, ResultsDir]:
    """A campaign file and its results directory `out` with unit r1 done; the campaign's ResultsDir."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(CAMPAIGN))
    (tmp_path / "secret").write_text("\n".join(SECRET) + "\n")
    c, text = read_campaign(tmp_path / "c.yaml")
    out = ResultsDir(tmp_path / "out", c, text)
    out.open(resume=False)
    unit = plan(c)[0]
    out.start_unit(unit)
    out.finish_unit(unit, {"metrics": {"loss_percent": 0.0}, "flags": [], "valid": True, "detail": {}})
    return tmp_path, ResultsDir(tmp_path / "out", c, text)


def damage(tmp: Path, file: str, content: str) -> Path:
    """Replaces file `file` of results directory `tmp/out` with `content`: a text, or "DIR",
    "FIFO", "MISSING", or "SECRET-LINK" (a symlink to the secret file `tmp/secret`); its path."""
    path = tmp / "out" / file
    path.unlink()
    if content == "DIR":
        path.mkdir()
    elif content == "FIFO":
        os.mkfifo(path)
    elif content == "SECRET-LINK":
        path.symlink_to(tmp / "secret")
    elif content != "MISSING":
        path.write_text(content)
    return path


#: What a damaged metadata.json holds -> what the message says of it.
METADATA_ROWS = [
    ("not json", "cannot be read (not valid JSON at line 1, column 1)"),
    ('{"fingerprint": NaN}', "cannot be read (NaN is not a number JSON allows)"),
    ('{"campaign": "bad-bench"}', "is damaged: it must be a mapping holding the campaign's fingerprint"),
    ("[1, 2]", "is damaged: it must be a mapping holding the campaign's fingerprint"),
    ("[" * 100_000, "cannot be read (it is nested too deeply)"),
    ('{"fingerprint": ' + "1" * 400 + "}", "cannot be read (an integer of 400 digits (at most 40))"),
    ('{"fingerprint": "x", "runs": {}}', "is damaged: its `runs` must be a list"),
    ("DIR", "is a directory"),
    ("FIFO", "is not a regular file"),
    ("SECRET-LINK", "leads outside"),
]


def _id(row) -> str:
    return row[0][:20]


@pytest.mark.parametrize("content, expected", METADATA_ROWS, ids=map(_id, METADATA_ROWS))
def test_resume_refuses_a_damaged_metadata_file_naming_it(results, content, expected):
    tmp, out = results
    if content == '{"fingerprint": "x", "runs": {}}':
        content = json.dumps({**json.loads((tmp / "out" / "metadata.json").read_text()), "runs": {}})
    meta = damage(tmp, "metadata.json", content)
    before = listing(tmp)
    refused(lambda: out.open(resume=True), f"results metadata '{meta}'", expected)
    assert listing(tmp) == before


#: What a damaged units/**/result.json holds -> what the message says of it.
RESULT_ROWS = [
    ("{", "cannot be read (not valid JSON"),
    ("[]", f"is damaged: it must be a mapping whose `unit` is unit {UNIT}"),
    ('{"unit": {"id": "tcp/frer/duration_s=10/r1"}}', f"is damaged: it must be a mapping whose `unit` is unit {UNIT}"),
    ("VALID-TEXT", "is damaged: its `valid` must be true or false"),
    ("METRIC-TEXT", "is damaged: its `metrics` must be a mapping of names to numbers"),
    ("FLAGS", "is damaged: its `flags` must be a list of mappings, each with a `name`"),
    ('{"x": Infinity}', "cannot be read (Infinity is not a number JSON allows)"),
    ("DIR", "is a directory"),
    ("SECRET-LINK", "leads outside"),
]


@pytest.mark.parametrize("content, expected", RESULT_ROWS, ids=map(_id, RESULT_ROWS))
def test_resume_refuses_a_damaged_unit_result_naming_it(results, content, expected):
    tmp, out = results
    stored = json.loads((tmp / "out" / "units" / UNIT / "result.json").read_text())
    changed = {"VALID-TEXT": {"valid": "yes"}, "METRIC-TEXT": {"metrics": {"loss_percent": "none"}},
               "FLAGS": {"flags": [{"detail": "x"}]}}
    if content in changed:
        content = json.dumps({**stored, **changed[content]})
    path = damage(tmp, f"units/{UNIT}/result.json", content)
    before = listing(tmp)
    refused(lambda: out.open(resume=True), f"unit result '{path}'", expected)
    assert listing(tmp) == before


def test_resume_refuses_a_results_directory_without_its_campaign_file(results):
    tmp, out = results
    damage(tmp, "campaign.yaml", "MISSING")
    refused(lambda: out.open(resume=True), f"campaign file of the results '{tmp / 'out' / 'campaign.yaml'}' does not exist")


@pytest.mark.parametrize("file, content, expected", [
    ("metadata.json", "[" * 100_000, "results metadata 'out/metadata.json' cannot be read (it is nested too deeply)"),
    (f"units/{UNIT}/result.json", "SECRET-LINK", f"unit result 'out/units/{UNIT}/result.json' leads outside"),
], ids=["metadata", "result"])
def test_resume_of_a_damaged_results_directory_is_refused_by_the_cli(results, file, content, expected):
    tmp, _ = results
    damage(tmp, file, content)
    before = listing(tmp)
    assert_refused(["bench", "run", "c.yaml", "--out", "out", "--resume"], [expected], tmp / "run", cwd=tmp,
                   never=NEVER)
    assert listing(tmp) == before


@pytest.mark.parametrize("content, expected", [
    ("not json", "results summary 'out/summary.json' cannot be read (not valid JSON"),
    ('{"groups": [1], "comparisons": []}', "results summary 'out/summary.json' is damaged"),
    ("SECRET-LINK", "results summary 'out/summary.json' leads outside"),
], ids=["not-json", "groups", "secret-link"])
def test_bench_show_refuses_a_damaged_summary(results, content, expected):
    tmp, out = results
    out.write_summary()
    damage(tmp, "summary.json", content)
    assert_refused(["bench", "show", "out"], [expected], tmp / "run", cwd=tmp, never=NEVER)


# --- hosts files: the key and known_hosts files they name; strict values ----------------------

@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Path:
    """A directory of key files: a private key `id`, its `id.pub`, an encrypted key `locked`,
    an empty file, a secret file, a directory and a FIFO."""
    d = tmp_path_factory.mktemp("keys")
    for name, passphrase in (("id", ""), ("locked", "a passphrase")):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(d / name)], check=True)
    (d / "empty").write_text("")
    (d / "secret").write_text("\n".join(SECRET) + "\n")
    (d / "dir").mkdir()
    os.mkfifo(d / "fifo")
    return d


def hosts_file(directory: Path, **talker) -> Path:
    """A hosts file in `directory` whose talker has the fields `talker` (listener: no key)."""
    path = directory / "hosts.yaml"
    path.write_text(yaml.safe_dump({"talker": {"host": "192.0.2.10", "interface": "eth0", **talker},
                                    "listener": {"host": "192.0.2.11"}}))
    return path


NOT_A_KEY = "is not a private key frerlab can use"
#: (talker's fields, with KEYS for the key directory) -> what the message says.
HOSTS_ROWS = [
    ({"key": "KEYS/id.pub"}, f"talker: key file 'KEYS/id.pub' {NOT_A_KEY}"),
    ({"key": "KEYS/empty"}, f"talker: key file 'KEYS/empty' {NOT_A_KEY}"),
    ({"key": "KEYS/secret"}, f"talker: key file 'KEYS/secret' {NOT_A_KEY}"),
    ({"key": "KEYS/locked"}, f"talker: key file 'KEYS/locked' {NOT_A_KEY} (an OpenSSH or PEM private key without"),
    ({"key": "KEYS/no-such-key"}, "talker: key file 'KEYS/no-such-key' does not exist"),
    ({"key": "KEYS/dir"}, "talker: key file 'KEYS/dir' is a directory"),
    ({"key": "KEYS/fifo"}, "talker: key file 'KEYS/fifo' is not a regular file"),
    ({"key": "/dev/null"}, "talker: key file '/dev/null' is not a regular file"),
    ({"jump": {"host": "bastion", "key": "KEYS/secret"}}, f"talker: key file 'KEYS/secret' {NOT_A_KEY}"),
    ({"known_hosts": "KEYS/secret"}, "talker: known_hosts file 'KEYS/secret' is not a known_hosts file"),
    ({"known_hosts": "KEYS/id"}, "talker: known_hosts file 'KEYS/id' is not a known_hosts file"),
    ({"known_hosts": "KEYS/no-such-file"}, "talker: known_hosts file 'KEYS/no-such-file' does not exist"),
    ({"port": "22"}, "talker.port: Input should be a valid integer (got '22')"),
    ({"port": True}, "talker.port: Input should be a valid integer (got True)"),
    ({"connect_timeout_s": "5"}, "talker.connect_timeout_s: Input should be a valid number (got '5')"),
]


def _with_keys(value, keys: Path):
    if isinstance(value, dict):
        return {k: _with_keys(v, keys) for k, v in value.items()}
    return value.replace("KEYS", str(keys)) if isinstance(value, str) else value


@pytest.mark.parametrize("talker, expected", HOSTS_ROWS, ids=[json.dumps(r[0]) for r in HOSTS_ROWS])
def test_a_hosts_file_with_a_bad_key_file_or_value_is_refused_naming_it(keys, tmp_path, talker, expected):
    path = hosts_file(tmp_path, **_with_keys(talker, keys))
    refused(lambda: read_hosts(path), f"{path}: ", _with_keys(expected, keys))


def test_a_relative_key_file_is_relative_to_the_hosts_file(keys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hosts = read_hosts(hosts_file(keys, key="id", known_hosts="none"))
    assert hosts.talker.key == keys / "id"


@pytest.mark.parametrize("row", ["secret", "missing"])
def test_a_hosts_file_with_a_bad_key_file_is_refused_by_the_cli(keys, tmp_path, row):
    hosts = hosts_file(tmp_path, key=str(keys / ("secret" if row == "secret" else "no-such-key")))
    (tmp_path / "sw.sh").write_text("true\n")
    assert_refused(["hosts", "push", str(hosts), str(tmp_path / "sw.sh"), "--dry-run"],
                   [str(keys / ("secret" if row == "secret" else "no-such-key"))], tmp_path / "run", never=NEVER)


# --- a campaign's `hosts:` file: relative to the campaign file, a regular file, read first ------

def hosts_campaign(directory: Path, hosts: str) -> Path:
    path = directory / "c.yaml"
    path.write_text(yaml.safe_dump({
        "name": "on-hosts", "steps": [{"kind": "tcp", "durations_s": [1]}],
        "system": {"kind": "hosts", "hosts": hosts, "mode": "control", "rate": "1Gbps",
                   "listener_address": "192.0.2.11"}}))
    return path


@pytest.mark.parametrize("hosts, expected", [
    ("no-such-hosts.yaml", "hosts file 'CAMPAIGN/no-such-hosts.yaml' does not exist"),
    ("dir", "hosts file 'CAMPAIGN/dir' is a directory"),
    ("fifo", "hosts file 'CAMPAIGN/fifo' is not a regular file"),
    ("/dev/zero", "hosts file '/dev/zero' is not a regular file"),
    ("bad-key.yaml", "CAMPAIGN/bad-key.yaml: talker: key file 'KEYS/secret' is not a private key"),
], ids=["missing", "directory", "fifo", "device", "bad-key"])
def test_a_campaigns_hosts_file_is_read_relative_to_it_before_anything_is_made(keys, tmp_path, hosts, expected):
    d = tmp_path / "campaign"
    d.mkdir()
    (d / "dir").mkdir()
    os.mkfifo(d / "fifo")
    hosts_file(d, key=str(keys / "secret")).rename(d / "bad-key.yaml")
    hosts_campaign(d, hosts)
    (tmp_path / "elsewhere").mkdir()
    expected = expected.replace("CAMPAIGN", str(Path("..") / "campaign")).replace("KEYS", str(keys))
    assert_refused(["bench", "run", "../campaign/c.yaml", "--out", "out"], [expected], tmp_path / "run",
                   cwd=tmp_path / "elsewhere", never=NEVER)
    assert listing(tmp_path / "elsewhere") == []


# --- `frerlab import` into a damaged import directory -------------------------------------------

IPERF3 = Path(__file__).resolve().parent / "fixtures" / "tools" / "iperf3_udp_64B.json"


@pytest.fixture
def imported(tmp_path) -> Path:
    """An import directory `tmp/out` holding one imported unit; the secret file beside it."""
    (tmp_path / "secret").write_text("\n".join(SECRET) + "\n")
    import_into(tmp_path / "out", [IPERF3], "frer")
    return tmp_path


#: What a damaged file of an import directory holds -> what the message says of it.
IMPORT_ROWS = [
    ("metadata.json", "[1, 2]", "results metadata", "is damaged: it must be a mapping"),
    ("metadata.json", '{"kind": "import"}', "results metadata", "is damaged: its `imported` must be a list"),
    ("metadata.json", '{"kind": "import", "imported": NaN}', "results metadata", "NaN is not a number JSON allows"),
    ("metadata.json", "SECRET-LINK", "results metadata", "leads outside"),
    ("RESULT", "{", "unit result", "cannot be read (not valid JSON"),
    ("RESULT", '{"unit": 5}', "unit result", "is damaged: it must be a mapping whose `unit` is a mapping with an `id`"),
    ("RESULT", "FIFO", "unit result", "is not a regular file"),
]


@pytest.mark.parametrize("file, content, what, expected", IMPORT_ROWS, ids=[f"{r[0]}-{r[1][:12]}" for r in IMPORT_ROWS])
def test_importing_into_a_damaged_import_directory_is_refused_naming_the_file(imported, file, content, what, expected):
    if file == "RESULT":
        (file,) = [str(p.relative_to(imported / "out")) for p in (imported / "out" / "units").rglob("result.json")]
    path = damage(imported, file, content)
    refused(lambda: import_into(imported / "out", [IPERF3], "frer"), f"{what} '{path}'", expected)


def test_importing_into_a_damaged_import_directory_is_refused_by_the_cli(imported):
    damage(imported, "metadata.json", "SECRET-LINK")
    assert_refused(["import", "--results", "out", "--mode", "frer", str(IPERF3)],
                   ["results metadata 'out/metadata.json' leads outside"], imported / "run", cwd=imported, never=NEVER)
