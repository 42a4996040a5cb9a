"""`frerlab import`: old result files into `TrafficRecord`s, the format recognised from the
content (not the file name): iperf3 `--json`, sockperf text output or `--full-log` CSV, and
frerlab's own raw sender/receiver reports."""

from __future__ import annotations

import json
from pathlib import Path

from frerlab.errors import UsageError
from frerlab.traffic import gen
from frerlab.traffic.record import TrafficRecord
from frerlab.traffic.tools import iperf3, sockperf
from frerlab.traffic.tools.base import ParseError


def _from_json(doc: object, text: str, source: str) -> list[TrafficRecord]:
    if isinstance(doc, dict) and "start" in doc and "end" in doc:
        return iperf3.parse(text, source=source)
    if isinstance(doc, dict) and "streams" in doc and "ignored" in doc:
        return gen.receiver_records(doc, interval_s=_interval_of(doc), source=source)
    if isinstance(doc, dict) and "achieved_fps" in doc:
        return [gen.sender_record(doc, source=source)]
    raise ParseError(f"{source}: JSON, but neither iperf3 --json output nor a frerlab gen report")


def _interval_of(report: dict) -> float:
    for stream in report["streams"]:
        starts = [i["start_ns"] for i in stream["intervals"]]
        if len(starts) > 1:
            return (starts[1] - starts[0]) / 1e9
    return 1.0


def import_file(path: Path) -> list[TrafficRecord]:
    """Records from one result file; raises UsageError naming the file if it is unreadable or
    of no known format."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    source = str(path)
    try:
        stripped = text.lstrip()
        if stripped.startswith("{"):
            return _from_json(json.loads(text), text, source)
        if "sockperf" in text or "txTime(sec)" in text:
            return sockperf.parse_file(path)
    except (ParseError, json.JSONDecodeError) as err:
        raise UsageError(f"{path}: {err}") from None
    raise UsageError(
        f"{path}: format not recognised (known: iperf3 --json output, sockperf output or --full-log, "
        "frerlab gen reports)"
    )
