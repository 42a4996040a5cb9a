"""Bad input to the data plane, testbed and YAML-reading commands: every case is refused with
exit code 2 and a message naming the bad value (never a traceback, never a line of the file),
destructive commands touch nothing outside frerlab's state directories, and property tests
over configuration fields and command-line numbers find no input that ends otherwise.

Every command runs as the real `frerlab` CLI with its state directories in a sandbox
(tests/badinput.py); the rows of another area live in tests/test_bad_inputs_sim_traffic.py.
"""

from __future__ import annotations

import json
import os
import string
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from badinput import SECRET, assert_refused, run_cli
from conftest import NEEDS_BPF
from frerlab.dataplane.config import MAX_ENTRIES, parse_config
from frerlab.errors import UsageError
from frerlab.names import check_name, inside
from frerlab.testbed import bed, failover
from frerlab.yamlfile import MAX_FILE_BYTES, load

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "seed000_control.yaml"

TALKER = {"name": "bad-in", "ports": ["t0a", "t0b"],
          "stream-identity": [{"index": 1, "handle": 1, "in-facing": {"input-port": ["t0a"]},
                               "ip-stream-identification": {"ip-destination": "198.18.0.2"}}],
          "sequence-generation": [{"index": 1, "stream": [1]}],
          "stream-forwarding": [{"stream": 1, "output-port": ["t0b", "t0a"]}]}


def talker(**changes) -> dict:
    return {**TALKER, **changes}


def identity(index: int) -> dict:
    """An IP identity of a shape of its own (its VLAN rule and the fields it compares), so none is
    hashed: each is left to the data plane's ordered scan."""
    tagged, vlan = [("all", 0), ("all", 5), ("tagged", 0), ("tagged", 5), ("priority", 0)][index % 5]
    ip = {"ip-destination": "198.18.0.2", "tagged": tagged, "vlan": vlan}
    for bit, extra in enumerate([{"dscp": 46}, {"destination-mac": "02:00:00:00:00:02"}, {"next-protocol": "udp"}]):
        if index // 5 >> bit & 1:
            ip.update(extra)
    return {"index": index, "handle": index, "out-facing": {"input-port": ["t0a"]}, "ip-stream-identification": ip}


#: File name -> content (text, bytes, or a dict dumped as YAML) of the bad files the rows use.
FILES = {
    "binary.yaml": bytes(range(256)) * 4,
    "big.yaml": "# padding\n" * (MAX_FILE_BYTES // 10 + 1),
    "duplicate.yaml": "name: x\nports: [a]\nports: [b]\n",
    "secret": "\n".join(SECRET) + "\n",
    "list.yaml": "- ports\n- name\n",
    "syntax.yaml": "ports: [a, b\nname: x\n",
    "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
    "deep.yaml": "[" * 50_000,
    "long-key.yaml": f"ports: [a]\n{'k' * 200}: 1\n",
    "long-value.yaml": yaml.safe_dump(talker(netns="n" * 200)),
    "name-dotdot.yaml": yaml.safe_dump(talker(name="..")),
    "name-slash.yaml": yaml.safe_dump(talker(name="../../x")),
    "netns.yaml": yaml.safe_dump(talker(netns="../../etc")),
    "port-local.yaml": yaml.safe_dump(talker(ports=["local", "t0b"])),
    "port-dash.yaml": yaml.safe_dump(talker(ports=["-t0a", "t0b"])),
    "port-long.yaml": yaml.safe_dump(talker(ports=["abcdefghijklmnop", "t0b"])),
    "too-many.yaml": yaml.safe_dump(talker(**{
        "stream-identity": [*TALKER["stream-identity"], *(identity(i) for i in range(2, 35))],
        "stream-forwarding": [*TALKER["stream-forwarding"], *({"stream": i, "output-port": ["t0b"]} for i in range(2, 35))]})),
    "too-many-streams.yaml": yaml.safe_dump(talker(**{"sequence-generation": [
        {"index": 1, "stream": list(range(MAX_ENTRIES + 1))}]})),
    "talker-drops.yaml": yaml.safe_dump(talker(**{
        "sequence-generation": [], "sequence-recovery": [{"index": 1, "stream": [1]}],
        "stream-forwarding": [{"stream": 1, "output-port": ["t0a"]}]})),
    "unknown-port.yaml": yaml.safe_dump(talker(ports=["nosuchif0"], **{
        "stream-identity": [{**TALKER["stream-identity"][0], "in-facing": {"input-port": ["nosuchif0"]}}],
        "stream-forwarding": [{"stream": 1, "output-port": ["nosuchif0"]}]})),
    "valid.yaml": yaml.safe_dump(TALKER),
    "long-number.yaml": "ports: [" + "1" * 5000 + "]\n",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A directory with FILES, a directory `dir.yaml` and `config.yaml`, a symlink to `secret`."""
    d = tmp_path_factory.mktemp("bad-files")
    for name, content in FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (d / "dir.yaml").mkdir()
    (d / "config.yaml").symlink_to(d / "secret")
    return d


#: How the YAML-reading commands are given a file.
READERS = {"dataplane up": ["dataplane", "up", "--config"], "sim check": ["sim", "check"],
           "sim run": ["sim", "run"]}

#: (file, texts the message must contain) refused alike by every command reading YAML; a
#: file that is no YAML mapping at all gets one line.
FILE_ROWS = [
    ("dir.yaml", ["dir.yaml' is a directory, not a YAML file"]),
    ("binary.yaml", ["binary.yaml' is not a text file"]),
    ("big.yaml", [f"above the limit of {MAX_FILE_BYTES} bytes"]),
    ("duplicate.yaml", ["line 3, column 1: key 'ports' is given twice (first on line 2)"]),
    ("syntax.yaml", ["syntax.yaml: not valid YAML at line 2"]),
    ("bomb.yaml", ["more than 100000 values"]),
    ("deep.yaml", ["deep.yaml: nested too deeply"]),
    ("missing.yaml", ["missing.yaml' does not exist"]),
    ("long-key.yaml", ["unknown field", "1 key(s) not shown"]),
    ("long-number.yaml", ["long-number.yaml: not valid YAML at line 1, column 9: a number of 5000 characters is too long"]),
]
#: Files that are YAML mappings: refused field by field, none of their text shown.
MAPPING_FILES = ("long-key.yaml",)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("file, expected", FILE_ROWS, ids=[r[0] for r in FILE_ROWS])
def test_a_bad_yaml_file_is_refused_in_one_clear_message(files, tmp_path, reader, file, expected):
    message = assert_refused([*READERS[reader], str(files / file)], expected, tmp_path / "run",
                             never=[*SECRET, "k" * 33, "SecretSalt"])
    assert file in MAPPING_FILES or len(message.splitlines()) == 1, f"one clear line, not:\n{message}"


@pytest.mark.parametrize("reader", READERS)
def test_a_symlink_to_a_secret_file_is_refused_without_showing_a_line(files, tmp_path, reader):
    message = assert_refused([*READERS[reader], str(files / "config.yaml")],
                             ["config.yaml: ", "key(s) not shown (not field names)"],
                             tmp_path / "run", never=[*SECRET, "SecretSalt", "a-secret-value", "5f0e8b1c"])
    assert "'api-token'" in message, "a key that looks like a field name is named"


#: (file, texts the message must contain): configurations `dataplane up` refuses.
CONFIG_ROWS = [
    ("list.yaml", ["a data plane configuration is a mapping with ports"]),
    ("name-dotdot.yaml", ["name: data plane name '..' is not valid: use 1-40 letters, digits, '_', '-'"]),
    ("name-slash.yaml", ["data plane name '../../x' is not valid"]),
    ("netns.yaml", ["netns: network namespace name '../../etc' is not valid"]),
    ("port-local.yaml", ["ports.0: port name 'local' is reserved by frerlab"]),
    ("port-dash.yaml", ["ports.0: port name '-t0a' is not valid: use 1-15 letters"]),
    ("port-long.yaml", ["port name 'abcdefghijklmnop' is not valid: use 1-15"]),
    ("too-many.yaml", ["34 identities to scan is out of range (0..=32, FRER_MAX_IDENTITIES)"]),
    ("too-many-streams.yaml", [f"sequence-generation.0.stream: List should have at most {MAX_ENTRIES} items"]),
    ("talker-drops.yaml", ["sequence-recovery of stream 1 would discard every frame this host sends on t0a",
                           "add sequence-generation for stream 1, or take-no-sequence: true"]),
    ("long-value.yaml", ["netns: network namespace name (a text of 200 characters) is not valid"]),
    pytest.param("unknown-port.yaml", ["port 'nosuchif0' is no interface of this network namespace"],
                 marks=NEEDS_BPF),
]


@pytest.mark.parametrize("file, expected", CONFIG_ROWS)
def test_a_bad_configuration_is_refused_naming_the_value(files, tmp_path, file, expected):
    assert_refused(["dataplane", "up", "--config", str(files / file)], expected, tmp_path / "run",
                   never=["n" * 60])
    assert not (tmp_path / "run").exists(), "nothing is made before the configuration is checked"


def test_no_line_of_a_real_secret_file_is_printed(tmp_path):
    """/etc/shadow given as the configuration: refused without printing any of its lines."""
    shadow = Path("/etc/shadow")
    if not os.access(shadow, os.R_OK):
        pytest.skip("/etc/shadow is not readable here")
    lines = [line for line in shadow.read_text().splitlines() if len(line) > 12]
    for argv in (["dataplane", "up", "--config", str(shadow)], ["sim", "check", str(shadow)]):
        assert_refused(argv, [str(shadow)], tmp_path / "run", never=lines)


NAME_ROWS = [
    (["dataplane", "down", "--name", "../../x"], ["data plane name '../../x' is not valid"]),
    (["dataplane", "down", "--name", ""], ["data plane name '' is not valid"]),
    (["dataplane", "down", "--name", "."], ["data plane name '.' is not valid"]),
    (["dataplane", "down", "--name", ".."], ["data plane name '..' is not valid"]),
    (["dataplane", "down", "--name=-x"], ["data plane name '-x' is not valid"]),
    (["dataplane", "down", "--name", "a" * 41], ["(not starting with '-')", "use 1-40 letters"]),
    (["dataplane", "stats", "--name", "/"], ["data plane name '/' is not valid"]),
    (["dataplane", "stats", "--name", "/etc/passwd"], ["data plane name '/etc/passwd' is not valid"]),
    (["dataplane", "monitor", "--name", "a/b"], ["data plane name 'a/b' is not valid"]),
    (["dataplane", "stats", "--name", "nothing-up"], ["no data plane named 'nothing-up' is up (running: none)"]),
    (["dataplane", "up", "--config", "{files}/valid.yaml", "--netns", "../../etc"],
     ["network namespace name '../../etc' is not valid"]),
    (["dataplane", "monitor", "--duration", "-1"], ["--duration -1.0 is out of range (> 0 seconds, finite)"]),
    (["dataplane", "monitor", "--duration", "nan"], ["--duration nan is out of range"]),
    (["dataplane", "monitor", "--interval", "0"], ["--interval 0.0 is out of range (0 < seconds <= 3600)"]),
    (["dataplane", "monitor", "--interval", "1e300"], ["--interval 1e+300 is out of range"]),
    (["testbed", "up", "--name", "abcdefghijkl"], ["testbed name 'abcdefghijkl' is not valid: use 1-11 letters"]),
    (["testbed", "up", "--history-length", "-1"], ["history length -1 is out of range (2..1024)"]),
    (["testbed", "up", "--queue-limit", "abc"], ["queue limit: size 'abc' is not valid"]),
    (["testbed", "down", "--name", "../x"], ["testbed name '../x' is not valid"]),
    (["testbed", "down", "--name", ".."], ["testbed name '..' is not valid"]),
    (["testbed", "status", "--name", ""], ["testbed name '' is not valid"]),
    (["testbed", "impair", "--name", ".", "a", "--down"], ["testbed name '.' is not valid"]),
    (["testbed", "exec", "--name", "/", "talker", "--", "true"], ["testbed name '/' is not valid"]),
    (["testbed", "status", "--name", "nothing-up"], ["no testbed named 'nothing-up' is up"]),
    (["failover", "--name", "../x"], ["testbed name '../x' is not valid"]),
    (["failover", "--output", "{files}/valid.yaml"], ["--output", "valid.yaml' exists and is not a directory"]),
    (["failover", "--output", "/proc/frerlab-results"], ["--output '/proc/frerlab-results' is inside /proc"]),
    (["failover", "--duration", "inf"], ["duration inf s is out of range (1..3600 s)"]),
    (["failover", "--duration", "-1"], ["duration -1.0 s is out of range"]),
    (["failover", "--cut-a", "nan,nan"], ["cuts a (nan, nan) and b (4.0, 5.0) must come one after the other"]),
    (["sim", "run", "{scenario}", "-o", "{files}/valid.yaml"], ["-o/--output", "valid.yaml' exists and is not a directory"]),
    (["sim", "run", "{scenario}", "-o", "/proc/frerlab-results"], ["-o/--output '/proc/frerlab-results' is inside /proc"]),
    (["gen", "recv", "--output", "{files}/dir.yaml", "--duration", "1"], ["--output", "dir.yaml' is a directory"]),
    (["gen", "recv", "--output", "/proc/self/frerlab", "--duration", "1"], ["--output '/proc/self/frerlab'"]),
    (["gen", "recv", "--port", "0", "--duration", "1"], ["--port 0 is out of range (1..=65535)"]),
    (["gen", "send", "--dst", "198.18.0.2", "--port", "0", "--rate-fps", "10", "--count", "1"],
     ["--port 0 is out of range (1..=65535)"]),
    (["gen", "send", "--dst", "198.18.0.2", "--rate-fps", "10", "--count", "1", "--output", "{files}/dir.yaml"],
     ["dir.yaml' is a directory: give a file name"]),
    (["import", "--output", "{files}/dir.yaml", "{files}/valid.yaml"], ["dir.yaml' is a directory: give a file name"]),
]


@pytest.mark.parametrize("argv, expected", NAME_ROWS, ids=[" ".join(r[0])[:60] for r in NAME_ROWS])
def test_a_bad_name_or_number_on_the_command_line_is_refused(files, tmp_path, argv, expected):
    argv = [a.replace("{files}", str(files)).replace("{scenario}", str(SCENARIO)) for a in argv]
    assert_refused(argv, expected, tmp_path / "run")


# ---- path traversal: destructive commands against a sandboxed state directory ----

@pytest.fixture
def sandbox(tmp_path):
    """A state directory tmp/run holding another data plane's and testbed's state and pins
    (which `down` of another name must leave alone), and canaries beside it where the old
    path arithmetic led: tmp/x (run/bpf/../../x), tmp/x.json (run/dataplane/../../x.json)."""
    run = tmp_path / "run"
    keep = [run / "dataplane" / "other.json", run / "bpf" / "other" / "maps" / "m",
            run / "testbed" / "other.json", tmp_path / "x" / "precious", tmp_path / "x.json",
            tmp_path / "canary" / "precious"]
    for path in keep:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    (run / "dataplane" / "other.json").write_text(json.dumps(
        {"name": "other", "netns": None, "attached": [], "config": {}, "monitor_pid": None}))
    (run / "dataplane" / "planted.json").symlink_to(tmp_path / "x.json")
    (run / "bpf" / "planted").symlink_to(tmp_path / "canary")
    return run, keep


@pytest.mark.parametrize("argv", [
    ["dataplane", "down", "--name", "../../x"], ["dataplane", "down", "--name", ""],
    ["dataplane", "down", "--name", "."], ["dataplane", "down", "--name", ".."],
    ["dataplane", "down", "--name", "../../canary"], ["dataplane", "down", "--name", "{tmp}/canary"],
    ["dataplane", "down", "--name", "planted"],
    ["testbed", "down", "--name", "../../x"], ["testbed", "down", "--name", ""],
    ["testbed", "down", "--name", ".."], ["testbed", "down", "--name", "{tmp}/canary"],
], ids=lambda argv: " ".join(argv))
def test_down_with_a_traversing_name_refuses_and_removes_nothing(sandbox, tmp_path, argv):
    run, keep = sandbox
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    message = assert_refused(argv, ["is not valid" if argv[-1] != "planted" else "does not name an entry of"],
                             run)
    assert argv[-1] in message or "planted" in message
    for path in keep:
        assert path.exists(), f"{path} was removed by frerlab {argv}"
    assert (run / "dataplane" / "planted.json").is_symlink() and (run / "bpf" / "planted").is_symlink()


def test_down_all_removes_only_valid_names_inside_the_state_directory(sandbox, tmp_path):
    """`dataplane down --all` takes its names from the state directory: a planted state file
    (a symlink, or a name that is not valid) is skipped, the valid one removed, the canaries kept."""
    run, keep = sandbox
    (run / "dataplane" / "..json").write_text("{}")
    result = run_cli(["dataplane", "down", "--all"], run)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout.splitlines() == ["data plane other removed"]
    assert not (run / "dataplane" / "other.json").exists() and not (run / "bpf" / "other").exists()
    assert (run / "dataplane" / "..json").exists()
    for path in keep[2:]:
        assert path.exists(), f"{path} was removed by `dataplane down --all`"


def test_a_damaged_state_file_is_refused_by_stats_and_down_and_a_stale_pid_is_not_signalled(tmp_path):
    """A state file `up` never wrote whole (a full disk, a crash of the machine): stats and down
    say so in one line and remove nothing (tests/test_bad_inputs_state.py has every damage);
    down does not signal the process whose pid a state file names unless that is the data
    plane's latent error monitor (a pid can belong to anything by then)."""
    run = tmp_path / "run"
    (run / "dataplane").mkdir(parents=True)
    (run / "dataplane" / "torn.json").write_text('{"name": "torn", "netns": null, "att')
    for verb in ("stats", "down"):
        assert_refused(["dataplane", verb, "--name", "torn"], ["state file of data plane 'torn'", "cannot be read"], run)
    assert (run / "dataplane" / "torn.json").exists()
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        (run / "dataplane" / "stale.json").write_text(json.dumps(
            {"name": "stale", "netns": None, "attached": [], "config": {}, "monitor_pid": bystander.pid}))
        down = run_cli(["dataplane", "down", "--name", "stale"], run)
        assert down.returncode == 0, down.stderr
        assert bystander.poll() is None, "down killed a process that was not its monitor"
    finally:
        bystander.kill()
        bystander.wait()


def test_inside_refuses_every_path_that_leaves_its_directory(tmp_path):
    (tmp_path / "link").symlink_to("/etc")
    for name, suffix in (("../x", ".json"), ("/etc", ".json"), ("a/../../b", ".json"), ("..", ""), (".", ""),
                         ("", ""), ("link", "")):
        with pytest.raises(UsageError, match="does not name an entry of"):
            inside(tmp_path, name, suffix)
    assert inside(tmp_path, "dp1", ".json") == tmp_path / "dp1.json"


# ---- property tests: a clear error or a valid result, never anything else ----

@given(st.text(max_size=60))
def test_a_name_is_accepted_only_as_one_harmless_path_component(tmp_path_factory, value):
    try:
        name = check_name(value, "data plane")
    except UsageError as err:
        assert str(err).startswith("data plane name ") and "is not valid" in str(err)
        return
    assert name == value and not name.startswith(("-", ".")) and "/" not in name and len(name) <= 40
    d = tmp_path_factory.getbasetemp()
    assert inside(d, name, ".json").parent == d


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | st.floats()
    | st.text(max_size=80),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=20), children, max_size=4),
    max_leaves=12)
FIELDS = st.sampled_from(["name", "netns", "ports", "bridge-ports", "stream-identity", "sequence-generation",
                          "sequence-recovery", "sequence-identification", "stream-split", "stream-forwarding",
                          "unknown"])


def _assert_no_long_input_text(message: str, data: object) -> None:
    """No text of the input longer than a token (32 characters) appears in `message`."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend([*item.keys(), *item.values()])
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and len(item) > 32:
            assert item not in message and repr(item) not in message


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FIELDS, VALUES, st.sampled_from(["replace", "in-identity", "in-recovery"]))
def test_any_config_field_value_gives_a_clear_error_or_a_valid_config(field, value, where):
    data = talker()
    if where == "replace":
        data[field] = value
    elif where == "in-identity":
        data["stream-identity"] = [{**identity(1), field: value}]
    else:
        data["sequence-recovery"] = [{"index": 1, "stream": [1], field: value}]
    try:
        parse_config(data, "cfg.yaml")
    except UsageError as err:
        assert all(line.startswith("cfg.yaml: ") for line in str(err).splitlines())
        _assert_no_long_input_text(str(err), value)


_ONE_LINE = string.printable.replace("\r", "").replace("\n", "")
#: Text on one line, often longer than what an error may show of a file (32 characters).
TEXT = st.text(alphabet=_ONE_LINE, max_size=60) | st.text(alphabet=_ONE_LINE, min_size=33, max_size=60)
LINES = st.lists(TEXT | st.builds("{}: {}".format, FIELDS | TEXT, TEXT) | st.builds("  - {}".format, TEXT),
                 max_size=8)


@settings(max_examples=300, deadline=None)
@given(LINES)
def test_any_yaml_text_gives_a_clear_error_and_never_shows_a_line(lines):
    text = "\n".join(lines)
    try:
        parse_config(load(text, "cfg.yaml"), "cfg.yaml")
    except UsageError as err:
        for line in lines:
            if len(line.strip()) > 32:
                assert line.strip() not in str(err)


NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**6, 10**6)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["--duration", "--interval"]), NUMBERS)
def test_monitor_numbers_give_a_clear_error_or_reach_the_data_plane(tmp_path_factory, option, value):
    run = tmp_path_factory.mktemp("run")
    result = run_cli(["dataplane", "monitor", "--name", "none-up", option, str(value)], run)
    assert "Traceback" not in result.stderr and result.returncode == 2, result.stderr
    assert option in result.stderr or "no data plane named 'none-up' is up" in result.stderr


@settings(max_examples=300, deadline=None)
@given(st.integers(-10, 2_000_000), st.integers(-10, 10_000), NUMBERS, st.tuples(NUMBERS, NUMBERS),
       st.tuples(NUMBERS, NUMBERS), NUMBERS)
def test_failover_numbers_give_a_clear_error_or_a_runnable_schedule(rate, size, duration, cut_a, cut_b, interval):
    schedule = failover.Schedule(rate, size, duration, cut_a, cut_b, interval)
    try:
        schedule.check()
    except UsageError as err:
        assert "out of range" in str(err) or "must come one after the other" in str(err)
        return
    times = [0, *cut_a, *cut_b, duration]
    assert all(b > a for a, b in zip(times, times[1:])) and duration <= failover.MAX_DURATION_S


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=20), st.integers(-10, 5000), st.text(max_size=12), st.text(max_size=12))
def test_testbed_settings_give_a_clear_error_or_valid_settings(name, history, rate, queue):
    settings_ = bed.Settings(name=name, history_length=history, rate=rate or "100Mbps", queue_limit=queue or "64KiB")
    try:
        settings_.check()
    except UsageError:
        return
    assert check_name(name, "testbed", bed.MAX_NAME) == name and 2 <= history <= 1024
