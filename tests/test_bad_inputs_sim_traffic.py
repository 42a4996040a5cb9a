"""Bad input to the simulator (`sim check`, `sim run`, `sim zero-loss`), the traffic generator
(`gen send`, `gen recv`), `import` and the Python FRER API: every case is refused with exit
code 2 (or the named exception) and a message naming the bad value, never a traceback; what
`sim check` accepts, `sim run` starts; a run past the cost limits needs --allow-long.

The commands run as the real `frerlab` CLI (tests/badinput.py). Property tests (hypothesis)
over scenario fields and generator numbers find no input that ends otherwise than in a clear
error or a valid run.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from badinput import assert_refused, run_cli
from frerlab import frer, sim
from frerlab.cli import main
from frerlab.errors import UsageError
from frerlab.yamlfile import set_field

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "tools"

#: talker -> sw -> listener at 1 Gbit/s, one stream at 100 Mbit/s for 20 ms (about 8 k events).
BASE = {
    "name": "bad-in", "duration": "20ms", "interval": "1ms",
    "nodes": {"t": {"kind": "host"}, "sw": {"kind": "switch"}, "l": {"kind": "host"}},
    "links": [{"name": "up", "a": "t", "b": "sw", "rate": "1Gbps"},
              {"name": "down", "a": "sw", "b": "l", "rate": "1Gbps"}],
    "streams": [{"name": "s", "talker": "t", "listener": "l", "rate": "100Mbps", "frame_size": 1518,
                 "paths": [["up", "down"]]}],
}


def scenario(**changes: object) -> dict:
    """BASE with dotted fields changed (e.g. `**{"streams.0.rate": "1e400bps"}`)."""
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        set_field(data, dotted, value)
    return data


#: (id, scenario, texts the message must contain): refused by `sim check` and `sim run` alike.
SCENARIO_ROWS = [
    ("interval-1ps", scenario(interval="1ps"),
     ["interval 1ps makes 20,000,000,000 intervals of the duration 20ms (at most 1,000,000"]),
    ("duration-1e6s", scenario(duration="1e6s"), ["interval 1ms makes 1,000,000,000 intervals of the duration 1e+06s"]),
    ("events-past-limit", scenario(duration="1e5s", interval="1s"),
     ["the run would take 2,470,355,733 events (limit 1,000,000,000)", "--allow-long"]),
    ("trace-past-limit", scenario(duration="100s", interval="100ms", trace=True),
     ["trace rows (limit 2,000,000)", "--allow-long"]),
    ("rate-1e400", scenario(**{"streams.0.rate": "1e400bps"}), ["rate '1e400bps' is not a finite number"]),
    ("rate-1e30", scenario(**{"streams.0.rate": 1e30}), ["rate 1e+30 is out of range (at most 10Tbps)"]),
    ("rate-10-to-400", scenario(**{"links.0.rate": 10**400}), ["rate <a 401-digit number> is out of range"]),
    ("duration-1e30", scenario(duration=1e30), ["duration: time 1e+30 is out of range (at most 1e6s)"]),
    ("duration-inf", scenario(duration=float("inf")), ["duration: time inf is not a finite number"]),
    ("delay-2s", scenario(**{"links.0.delay": "2s"}), ["links.0.delay: time 2s is out of range (at most 1s)"]),
    ("frame-10", scenario(**{"streams.0.frame_size": 10}), ["frame_size.fixed: Input should be greater than or equal to 64 (got 10)"]),
    ("frame-10000", scenario(**{"streams.0.frame_size": 10000}), ["less than or equal to 9216 (got 10000)"]),
    ("frame-uniform-1", scenario(**{"streams.0.frame_size": {"dist": "uniform", "min": 1, "max": 100}}),
     ["frame_size.uniform.min: Input should be greater than or equal to 64 (got 1)"]),
    ("frame-exp-inf", scenario(**{"streams.0.frame_size": {"dist": "exponential", "mean": float("inf")}}),
     ["frame_size.exponential.mean: Input should be less than or equal to 9216"]),
    ("warmup-after-end", scenario(warmup="30ms"), ["warmup 30ms is not before the end of the duration 20ms"]),
    ("start-after-end", scenario(**{"streams.0.start": "1s"}), ["stream s: start 1s is not before the end of the duration 20ms"]),
    ("idle-slope-above-rate", scenario(**{"links.1.egress": {"cbs": {0: "2Gbps"}}}),
     ["idleSlope 2000000000 bit/s of class 0 is out of range (1..=1000000000 bit/s, the link rate)"]),
    ("sweep-empty-list", scenario(sweep={"streams.s.rate": []}), ["sweep.streams.s.rate: List should have at least 1 item"]),
    ("sweep-unknown-field", scenario(sweep={"streams.nope.rate": ["1Mbps"]}),
     ["sweep point {'streams.nope.rate': '1Mbps'}: field 'streams.nope.rate': no list item 'nope'"]),
    ("sweep-bad-value", scenario(sweep={"streams.s.rate": ["10Mbps", "fast"]}),
     ["sweep point {'streams.s.rate': 'fast'}", "rate 'fast' is not valid"]),
    ("sweep-1e30", scenario(sweep={"streams.s.count": [10, 1e30]}),
     ["sweep point {'streams.s.count': 1e+30}", "streams.0.count: count 1e+30 is out of range (at most 1e12)"]),
    ("sweep-too-many", scenario(sweep={"seed": list(range(200)), "streams.s.count": list(range(1, 101))}),
     ["sweep of 20,000 points is out of range (at most 10,000 runs)"]),
]


@pytest.fixture
def write(tmp_path: Path):
    def write_scenario(data: dict, name: str = "bad.yaml") -> str:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data))
        return str(path)
    return write_scenario


@pytest.mark.parametrize("verb", ["check", "run"])
@pytest.mark.parametrize("data, expected", [r[1:] for r in SCENARIO_ROWS], ids=[r[0] for r in SCENARIO_ROWS])
def test_a_bad_scenario_is_refused_by_check_and_run_naming_the_value(write, tmp_path, verb, data, expected):
    assert_refused(["sim", verb, write(data)], expected, tmp_path / "run")


def test_check_prints_the_cost_estimate_and_allow_long_lifts_the_limit(write, tmp_path):
    path = write(scenario(duration="1e5s", interval="1s"))
    result = run_cli(["sim", "check", path, "--allow-long"], tmp_path / "run")
    assert result.returncode == 0, result.stderr
    # series rows: (1 stream + 4 egress ports: two links, both directions) x 100,001 intervals
    assert "about 2,470,355,733 events, 500,005 series rows" in result.stdout
    # 100 Mbit/s of 1518-byte frames is 8,235 frames/s; 20 ms: 165 frames, 3 events each.
    result = run_cli(["sim", "check", write(BASE)], tmp_path / "run")
    assert "about 495 events, 105 series rows" in result.stdout


#: (id, argv after `frerlab`, texts the message must contain); {s} is a valid scenario file.
CLI_ROWS = [
    ("zero-loss-low-fast", ["sim", "zero-loss", "{s}", "--stream", "s", "--low", "fast"],
     ["--low: rate 'fast' is not valid (e.g. 1Gbps"]),
    ("zero-loss-high-1e400", ["sim", "zero-loss", "{s}", "--stream", "s", "--high", "1e400"],
     ["--high: rate '1e400' is not a finite number"]),
    ("zero-loss-low-above-high", ["sim", "zero-loss", "{s}", "--stream", "s", "--low", "2Gbps"],
     ["needs 0 < low < high", "low 2000000000 bit/s, high 1000000000 bit/s"]),
    ("set-not-yaml", ["sim", "run", "{s}", "--set", "x=[1"], ["--set 'x=[1': the value is not a YAML"]),
    ("set-rate-1e400", ["sim", "run", "{s}", "--set", "streams.s.rate=1e400bps"], ["rate '1e400bps' is not a finite"]),
    ("jobs-0", ["sim", "run", "{s}", "--jobs", "0"], ["--jobs 0 is out of range (1..1024 processes)"]),
    ("send-rate-l1-1", ["gen", "send", "--dst", "127.0.0.1", "--rate-l1", "1", "--count", "2"],
     ["--rate-l1 '1' (0.00149 frames/s of 64-byte frames) is out of range: 1..1e+10 frames/s, at least 672 bit/s"]),
    ("send-rate-fps-1e30", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1e30", "--count", "2"],
     ["--rate-fps '1e30' is out of range (at most 1e10 frames/s)"]),
    ("send-rate-l2-1e14", ["gen", "send", "--dst", "127.0.0.1", "--rate-l2", "1e14", "--count", "2"],
     ["--rate-l2 '1e14' is out of range (at most 10Tbps)"]),
    ("send-frame-10", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--frame-size", "10"],
     ["--frame-size 10 is out of range (64..9216 bytes"]),
    ("send-frame-10000", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--frame-size", "10000"],
     ["--frame-size 10000 is out of range (64..9216 bytes"]),
    ("send-frame-word", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--frame-size", "big"],
     ["--frame-size 'big' is not valid (bytes 64..9216, or min, max, jumbo)"]),
    ("send-count-a-week", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1", "--count", "1000000000"],
     ["--count 1000000000 at 1 frames/s takes 1e+09 s, more than a week"]),
    ("send-count-huge", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "1" + "0" * 30],
     ["--count '1" + "0" * 30 + "' is out of range (at most 1e12)"]),
    ("send-duration-nan", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--duration", "nan"],
     ["--duration nan is out of range (more than 0 s, at most 604800 s)"]),
    ("send-duration-1e30", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--duration", "1e30"],
     ["--duration 1e+30 is out of range"]),
    ("send-seed-negative", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--seed", "-1"],
     ["--seed -1 is out of range (0..18446744073709551615)"]),
    ("send-batch-0", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--batch", "0"],
     ["--batch 0 is out of range (1..64 frames per call)"]),
    ("send-raw-unknown-interface", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2",
                                    "--mode", "raw", "--interface", "nosuchif0"],
     ["--interface 'nosuchif0' does not exist in this network namespace (interfaces: ", "lo"]),
    ("send-raw-no-interface", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--mode", "raw"],
     ["--mode raw needs --interface NAME"]),
    ("send-udp-interface", ["gen", "send", "--dst", "127.0.0.1", "--rate-fps", "1k", "--count", "2", "--interface", "lo"],
     ["--interface 'lo' is for --mode raw or xdp only"]),
    ("recv-bind-not-here", ["gen", "recv", "--bind", "192.0.2.77", "--duration", "1"],
     ["--bind 192.0.2.77 is not an address of this host"]),
    ("recv-bind-not-an-address", ["gen", "recv", "--bind", "nope", "--duration", "1"],
     ["--bind 'nope' is not an IPv4 address"]),
    ("recv-raw-unknown-interface", ["gen", "recv", "--mode", "raw", "--interface", "nosuchif0", "--duration", "1"],
     ["--interface 'nosuchif0' does not exist"]),
    ("recv-interval-1e300", ["gen", "recv", "--interval", "1e300", "--duration", "1"],
     ["--interval 1e+300 is out of range (more than 0 s, at most 86400 s)"]),
    ("recv-duration-inf", ["gen", "recv", "--duration", "inf"], ["--duration inf is out of range"]),
]


@pytest.mark.parametrize("argv, expected", [r[1:] for r in CLI_ROWS], ids=[r[0] for r in CLI_ROWS])
def test_a_bad_command_line_is_refused_naming_the_value(write, tmp_path, argv, expected):
    valid = write(BASE, "valid.yaml")
    assert_refused([a.replace("{s}", valid) for a in argv], expected, tmp_path / "run")


def _iperf3(**end_sum: object) -> str:
    doc = json.loads((FIXTURES / "iperf3_udp_64B.json").read_text())
    doc["end"]["sum_sent"].update(end_sum)
    return json.dumps(doc)


def _gen_recv(**stream: object) -> str:
    doc = json.loads((FIXTURES / "frerlab_gen_recv_128B.json").read_text())
    doc["streams"][0].update(stream)
    return json.dumps(doc)


#: (id, file content, texts the message must contain): refused by `frerlab import`.
IMPORT_ROWS = [
    ("iperf3-negative-packets", _iperf3(packets=-5), ["sent: Input should be greater than or equal to 0 (got -5)"]),
    ("iperf3-10-to-400", _iperf3(packets="HUGE").replace('"HUGE"', "1" + "0" * 400),
     ["end.sum_sent.packets: <a 401-digit number> is out of range (a finite number below 2^64)"]),
    ("iperf3-inf", _iperf3(seconds="INF").replace('"INF"', "1e400"), ["end.sum_sent.seconds: inf is out of range"]),
    ("iperf3-udp-no-end-sum", json.dumps({"start": {"test_start": {"protocol": "UDP"}}, "end": {}}),
     ["field 'sum' is missing"]),
    ("iperf3-tcp-empty-end", json.dumps({"start": {}, "end": {}}), ["iperf3 TCP output without 'sum_sent' or"]),
    ("gen-negative-lost", _gen_recv(lost=-3), ["lost: Input should be greater than or equal to 0 (got -3)"]),
    ("gen-streams-not-a-list", json.dumps({"streams": 5, "ignored": 0}), ["a value is not of the kind the tool writes"]),
    ("sockperf-huge", (FIXTURES / "sockperf_underload_64B.txt").read_text().replace(
        "[Valid Duration] RunTime=2.500 sec; SentMessages=12501", "[Valid Duration] RunTime=2.500 sec; SentMessages=1" + "0" * 30),
     ["sent: Input should be less than 18446744073709551616 (got <a 31-digit number>)"]),
]


@pytest.mark.parametrize("content, expected", [r[1:] for r in IMPORT_ROWS], ids=[r[0] for r in IMPORT_ROWS])
def test_a_bad_result_file_is_refused_by_import_naming_the_value(tmp_path, request, content, expected):
    path = tmp_path / f"{request.node.callspec.id}.txt"
    path.write_text(content)
    assert_refused(["import", str(path)], [str(path), *expected], tmp_path / "run")


#: (id, call, exception, message): the Python FRER API refuses arguments of the wrong kind.
API_ROWS = [
    ("bool-as-string", lambda: frer.SequenceRecovery(individual_recovery="false"), TypeError,
     "individual_recovery must be True or False, not str ('false')"),
    ("take-no-sequence-int", lambda: frer.SequenceRecovery(take_no_sequence=1), TypeError,
     "take_no_sequence must be True or False, not int (1)"),
    ("push-rtag-on-int", lambda: frer.push_rtag(5, 1), TypeError, "frame must be bytes, not int (5)"),
    ("pop-rtag-on-str", lambda: frer.pop_rtag("frame"), TypeError, "frame must be bytes, not str ('frame')"),
    ("decode-on-list", lambda: frer.SequenceDecoder().decode([1, 2]), TypeError, "frame must be bytes, not list"),
]


@pytest.mark.parametrize("call, exception, message", [r[1:] for r in API_ROWS], ids=[r[0] for r in API_ROWS])
def test_the_python_api_refuses_arguments_of_the_wrong_kind(call, exception, message):
    with pytest.raises(exception) as err:
        call()
    assert message in str(err.value)


@pytest.mark.parametrize("step", ["receive", "advance"])
def test_time_running_backwards_in_recovery_is_refused(step):
    rcvy = frer.SequenceRecovery(reset_timeout_ns=1000)
    rcvy.receive(1, now_ns=5000)
    with pytest.raises(ValueError, match=r"now_ns 100 is before the previous call's 5000: time cannot run backwards"):
        rcvy.receive(2, now_ns=100) if step == "receive" else rcvy.advance(100)
    assert rcvy.receive(2, now_ns=5000), "equal times are fine, and the refused call changed nothing"


def test_time_running_backwards_in_latent_error_detection_is_refused():
    detector = frer.LatentErrorDetector(difference=5, start_ns=1000)
    with pytest.raises(ValueError, match=r"now_ns 999 is before the previous call's 1000"):
        detector.poll(999, 0, 0)
    detector.poll(3_000_000_000, 10, 10)
    with pytest.raises(ValueError, match=r"now_ns 2000000000 is before the previous call's 3000000000"):
        detector.poll(2_000_000_000, 10, 10)


# Values a user might type into a scenario field or an option: numbers of every size and sign,
# non-finite floats, unit strings good and bad.
NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30), st.integers(min_value=10**300, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.builds(lambda n, u: f"{n}{u}", st.one_of(st.integers(-5, 10**25), st.floats(allow_nan=True)),
              st.sampled_from(["", "ps", "ns", "us", "ms", "s", "bps", "Mbps", "Gbps", "Tbps", "KiB", "MB", "x"])),
)
FIELDS = ["duration", "interval", "warmup", "seed", "links.0.rate", "links.0.delay", "links.0.overhead",
          "nodes.sw.processing_delay", "nodes.sw.buffer.shared", "streams.0.rate", "streams.0.frame_size",
          "streams.0.count", "streams.0.start", "streams.0.pcp", "links.1.egress.queue_limit"]


def test_a_queue_that_drains_long_after_the_duration_keeps_the_series_within_it():
    """A 1 kbit/s link drains its queue for about 2,000 s of simulated time after the 20 ms
    scenario: the frames count in the totals, the series stop at the duration. (The series
    used to follow the drain, one row per interval: the run took more memory than the machine
    had and was killed.)"""
    result = sim.run(scenario(**{"links.0.rate": "1kbps"}))
    stream = result.streams.iloc[0]
    assert stream.received > 0 and stream.latency_max_ns > 1e12
    intervals = 21  # those holding 0 to 20 ms, 1 ms each
    assert len(result.series) <= intervals and result.series.time_s.max() <= 0.020
    assert result.port_series.groupby("port").size().max() <= intervals


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(st.sampled_from(FIELDS), NUMBERS, min_size=1, max_size=3))
def test_property_any_scenario_field_gives_a_clear_error_or_a_valid_run(changes):
    data = scenario(**changes)
    try:
        _, cost = sim.api.check(data)
    except UsageError as err:
        assert str(err) and "Traceback" not in str(err)
        return
    if cost.events <= 200_000:  # keeps the test short; the bound itself is tested above
        assert not sim.run(data).streams.empty


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rate=st.one_of(st.sampled_from(["1", "1e30", "1e400", "-5", "0", "nan", "10k", "2M"]),
                      st.floats(allow_nan=True, allow_infinity=True).map(str)),
       option=st.sampled_from(["--rate-l1", "--rate-l2", "--rate-fps"]),
       frame=st.one_of(st.integers(-10, 20_000).map(str), st.sampled_from(["min", "max", "jumbo", "x", "1e3"])),
       count=st.integers(-5, 10**20).map(str))
def test_property_generator_numbers_give_a_clear_error_or_a_valid_run(rate, option, frame, count):
    """In-process `gen send` to loopback (nobody listens) for at most 20 ms: it runs (0, or 3
    for a shortfall) exactly when every number is within the documented bounds, else exit 2."""
    argv = ["gen", "send", "--dst", "127.0.0.1", "--port", "9", option, rate, "--frame-size", frame,
            "--count", count, "--duration", "0.02"]
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse refusing a value it parses itself
        code = exit_.code
    assert code in (0, 2, 3), f"frerlab {argv} exited {code}"
    assert (code != 2) == _within_bounds(option, rate, frame, int(count)), f"frerlab {argv} exited {code}"


def _within_bounds(option: str, rate: str, frame: str, count: int) -> bool:
    """The documented bounds (docs/errors.md), written out independently of the code."""
    try:
        size = float(frame)
    except ValueError:
        size = {"min": 64, "max": 1518, "jumbo": 9018}.get(frame, 0)
    scale = {"k": 1e3, "M": 1e6}.get(rate[-1:], 1)
    try:
        value = float(rate[:-1] if scale > 1 else rate) * scale
    except ValueError:
        return False
    if rate.lstrip().startswith(("-", "+")) or not math.isfinite(value):
        return False  # the grammar has no sign, nor nan or inf
    bits = {"--rate-l1": (size + 20) * 8, "--rate-l2": size * 8, "--rate-fps": 1}[option]
    if bits > 1:
        if value > 1e13:
            return False
        value = round(value)  # a rate in bit/s is a whole number of bit/s
    return 64 <= size <= 9216 and 1 <= count <= 10**12 and 1 <= value / bits <= 1e10
