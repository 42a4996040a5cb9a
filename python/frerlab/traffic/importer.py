"""`frerlab import`: old result files into `TrafficRecord`s, the format recognised from the
content (not the file name): iperf3 `--json` or the iperf3 client's text output, sockperf text
output or `--full-log` CSV, and frerlab's own raw sender/receiver reports."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from frerlab.errors import UsageError
from frerlab.names import shown
from frerlab.traffic import gen
from frerlab.traffic.record import TrafficRecord
from frerlab.traffic.tools import iperf3, sockperf
from frerlab.traffic.tools.base import ParseError
from frerlab.yamlfile import describe_error


def _from_json(doc: object, text: str, source: str) -> list[TrafficRecord]:
    if isinstance(doc, dict) and "start" in doc and "end" in doc:
        return iperf3.parse(text, source=source)
    if isinstance(doc, dict) and "streams" in doc and "ignored" in doc:
        return gen.receiver_records(doc, interval_s=_interval_of(doc), source=source)
    if isinstance(doc, dict) and "achieved_fps" in doc:
        return [gen.sender_record(doc, source=source)]
    raise ParseError("JSON, but neither iperf3 --json output nor a frerlab gen report")


def _check_numbers(value: object, where: str = "") -> None:
    """Raises ParseError naming the first number in a JSON document that no tool writes: not
    finite, or beyond 2^64 in size."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_numbers(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_numbers(item, f"{where}.{i}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) < 2**64:
        raise ParseError(f"{where}: {shown(value)} is out of range (a finite number below 2^64)")


def _interval_of(report: dict) -> float:
    for stream in report["streams"]:
        starts = [i["start_ns"] for i in stream["intervals"]]
        if len(starts) > 1:
            return (starts[1] - starts[0]) / 1e9
    return 1.0


def import_file(path: Path) -> list[TrafficRecord]:
    """Records from one result file; raises UsageError naming the file if it is unreadable, of
    no known format, or holds values no tool writes (negative counts, numbers beyond 2^64 or
    not finite)."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    source = str(path)
    try:
        stripped = text.lstrip()
        if stripped.startswith("{"):
            doc = json.loads(text)
            _check_numbers(doc)
            return _from_json(doc, text, source)
        if "sockperf" in text or "txTime(sec)" in text:
            return sockperf.parse_file(path)
        if iperf3.looks_like_text(text):
            return iperf3.parse_text(text, source=source)
    except ValidationError as err:  # a value out of range: negative, too large, not finite
        raise UsageError(describe_error(err, source)) from None
    except (ParseError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: {err}") from None
    except KeyError as err:
        raise UsageError(f"{path}: field {err.args[0]!r} is missing (the file is not complete tool output)") from None
    except (TypeError, ValueError, IndexError, AttributeError, OverflowError, ZeroDivisionError) as err:
        raise UsageError(f"{path}: a value is not of the kind the tool writes ({err})") from None
    raise UsageError(
        f"{path}: format not recognised (known: iperf3 --json or client text output, sockperf output or "
        "--full-log, frerlab gen reports)"
    )
