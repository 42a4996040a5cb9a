"""frerlab.units, the one grammar of rates, frame rates, counts, sizes and durations: the forms
it accepts (table-driven), its refusals and their messages, and the command-line options that
take it (`gen send --rate-l1`, `testbed up --rate`), parsed in-process without sending or root."""

from __future__ import annotations

import subprocess
import sys

import pytest

from frerlab import units
from frerlab.cli import build_parser, main
from frerlab.errors import UsageError
from frerlab.testbed import cli as testbed_cli
from frerlab.traffic import gen

#: (parser, input, value): every form the grammar accepts.
ACCEPTED = [
    (units.rate_bps, "1G", 10**9),
    (units.rate_bps, "1g", 10**9),
    (units.rate_bps, "1Gbps", 10**9),
    (units.rate_bps, "1 Gbit/s", 10**9),
    (units.rate_bps, "1e9", 10**9),
    (units.rate_bps, 10**9, 10**9),
    (units.rate_bps, 1e9, 10**9),
    (units.rate_bps, "500 Mbit/s", 5 * 10**8),
    (units.rate_bps, "500mbps", 5 * 10**8),
    (units.rate_bps, "1.5G", 15 * 10**8),
    (units.rate_bps, "100k", 10**5),
    (units.rate_bps, "100 kbps", 10**5),
    (units.rate_bps, "10T", 10**13),
    (units.rate_bps, "1000bps", 1000),
    (units.rate_bps, " 7 bit/s ", 7),
    (units.frame_rate, "100k", 1e5),
    (units.frame_rate, "1.5", 1.5),
    (units.frame_rate, "1Mfps", 1e6),
    (units.frame_rate, "20 frames/s", 20.0),
    (units.frame_rate, 5000, 5000.0),
    (units.count, "100k", 100_000),
    (units.count, "1e6", 10**6),
    (units.count, "1.5k", 1500),
    (units.count, 42, 42),
    (units.size_bytes, "1518", 1518),
    (units.size_bytes, "1518B", 1518),
    (units.size_bytes, "64KB", 64_000),
    (units.size_bytes, "64k", 64_000),
    (units.size_bytes, "160KiB", 160 * 1024),
    (units.size_bytes, "2 MiB", 2 * 2**20),
    (units.size_bytes, "1TiB", 2**40),
    (units.size_bytes, 9216, 9216),
    (units.time_ps, "10ms", 10**10),
    (units.time_ps, "1.5us", 1_500_000),
    (units.time_ps, "100ns", 100_000),
    (units.time_ps, "2s", 2 * 10**12),
    (units.time_ps, "2", 2 * 10**12),
    (units.time_ps, 0.001, 10**9),
    (units.time_ps, "7ps", 7),
    (units.time_ps, "1e6s", 10**18),
]

#: (parser, input, texts the ValueError's message contains).
REFUSED = [
    (units.rate_bps, "3 furlong", ["rate '3 furlong' has an unknown unit 'furlong'", "e.g. 1Gbps"]),
    (units.rate_bps, "fast", ["rate 'fast' is not valid (e.g. 1Gbps"]),
    (units.rate_bps, "-5", ["rate '-5' is not valid"]),
    (units.rate_bps, -5, ["rate -5 is negative"]),
    (units.rate_bps, "1e400", ["rate '1e400' is not a finite number"]),
    (units.rate_bps, "11T", ["rate '11T' is out of range (at most 10Tbps)"]),
    (units.rate_bps, "1GiB", ["unknown unit 'gib'"]),
    (units.rate_bps, True, ["rate True is not valid"]),
    (units.rate_bps, None, ["rate None is not valid"]),
    (units.frame_rate, "2e10", ["frame rate '2e10' is out of range (at most 1e10 frames/s)"]),
    (units.frame_rate, "1Gbps", ["unknown unit 'gbps'"]),
    (units.count, "1.5", ["count '1.5' is not a whole number"]),
    (units.count, "2e12", ["count '2e12' is out of range (at most 1e12)"]),
    (units.size_bytes, "2TiB", ["size '2TiB' is out of range (at most 1TiB)"]),
    (units.size_bytes, "10ms", ["size '10ms' has an unknown unit 'ms'"]),
    (units.time_ps, "2e6s", ["time '2e6s' is out of range (at most 1e6s)"]),
    (units.time_ps, "1Gbps", ["time '1Gbps' has an unknown unit 'gbps'", "e.g. 1s, 10ms"]),
    (units.time_ps, float("nan"), ["time nan is not a finite number"]),
]


@pytest.mark.parametrize(("parse", "text", "value"), ACCEPTED, ids=lambda x: getattr(x, "__name__", repr(x)))
def test_the_grammar_accepts(parse, text, value) -> None:
    result = parse(text)
    assert result == value and type(result) is type(value)


@pytest.mark.parametrize(("parse", "text", "texts"), REFUSED, ids=lambda x: getattr(x, "__name__", repr(x)))
def test_the_grammar_refuses_naming_the_value_and_what_is_valid(parse, text, texts) -> None:
    with pytest.raises(ValueError) as refused:
        parse(text)
    for expected in texts:
        assert expected in str(refused.value)


def test_an_option_names_itself_in_its_usage_error() -> None:
    with pytest.raises(UsageError, match=r"--rate '1x' has an unknown unit 'x'"):
        units.option_value(units.rate_bps, "1x", "--rate")


def test_frame_sizes_take_sizes_and_names_within_the_ethernet_bounds() -> None:
    assert [units.frame_bytes(t) for t in ("64", "1518B", "1.5k", "min", "MAX", "jumbo")] == [64, 1518, 1500, 64, 1518,
                                                                                           9018]
    with pytest.raises(UsageError, match=r"--frame-size 10 is out of range \(64\.\.9216 bytes"):
        units.frame_bytes("10")
    with pytest.raises(UsageError, match=r"--frame-size 'big' is not valid \(bytes 64\.\.9216, or min, max, jumbo\)"):
        units.frame_bytes("big")


def test_generator_rates_are_bounded_in_frames_per_second_at_the_frame_size() -> None:
    # 1 Gbit/s at L1 of 64-byte frames: 1e9 / (84 * 8) frames/s.
    assert units.frames_per_second("--rate-l1", "1Gbps", 64) == pytest.approx(1e9 / 672)
    assert units.frames_per_second("--rate-l2", "1 Gbit/s", 64) == pytest.approx(1e9 / 512)
    assert units.frames_per_second("--rate-fps", "100k", 64) == 1e5
    with pytest.raises(UsageError, match=r"--rate-l1 '1' \(0.00149 frames/s of 64-byte frames\) is out of range"):
        units.frames_per_second("--rate-l1", "1", 64)


def _sent_config(monkeypatch, argv: list[str]) -> dict:
    """The generator configuration `frerlab gen send ARGV` would run, caught before it sends."""
    class Caught(Exception):
        pass

    def catch(config, progress=None):
        raise Caught(config)

    monkeypatch.setattr(gen, "run_sender", catch)
    with pytest.raises(Caught) as caught:
        main(["gen", "send", "--dst", "198.18.0.2", "--count", "10", *argv])
    return caught.value.args[0]


@pytest.mark.parametrize("rate", ["1Gbps", "1 Gbit/s", "1G", "1e9", "1000M"])
def test_gen_send_rate_l1_takes_the_one_grammar(monkeypatch, rate) -> None:
    assert _sent_config(monkeypatch, ["--rate-l1", rate])["rate"] == {"l1_bits_per_sec": 10**9}


def test_gen_send_rate_fps_and_count_take_the_one_grammar(monkeypatch) -> None:
    config = _sent_config(monkeypatch, ["--rate-fps", "100k", "--frame-size", "1518B"])
    assert (config["rate"], config["frame_size"], config["count"]) == ({"frames_per_sec": 1e5}, 1518, 10)
    assert _sent_config(monkeypatch, ["--rate-fps", "1k", "--count", "2k"])["count"] == 2000


def test_gen_send_refuses_a_bad_rate_with_exit_2(capsys) -> None:
    assert main(["gen", "send", "--dst", "198.18.0.2", "--count", "10", "--rate-l1", "1 Gfurlong"]) == 2
    assert "--rate-l1 '1 Gfurlong' has an unknown unit 'gfurlong'" in capsys.readouterr().err


@pytest.mark.parametrize("rate", ["1G", "1Gbps", "1 Gbit/s", "1e9"])
def test_testbed_up_rate_takes_the_one_grammar(rate) -> None:
    args = build_parser().parse_args(["testbed", "up", "--rate", rate, "--queue-limit", "160KiB"])
    settings = testbed_cli._settings(args)
    settings.check()
    assert (settings.rate_bps, settings.queue_limit_bytes) == (10**9, 160 * 1024)


def test_the_module_imports_nothing_heavy() -> None:
    """frerlab.units loads none of the simulator, traffic, pandas or the native module."""
    code = ("import sys, frerlab.units; print(sorted(m for m in sys.modules if m.startswith(('frerlab', 'pandas'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['frerlab', 'frerlab.errors', 'frerlab.names', 'frerlab.units']"
