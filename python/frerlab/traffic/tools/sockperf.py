"""sockperf driver and parsers: ping-pong, under-load and throughput summaries, and the
per-message CSV of `--full-log`.

What sockperf's numbers mean: latency is RTT/2 unless `--full-rtt` (the summary then says
`avg-rtt` and the log column `rtt(usec)`); records label it `rtt_half` or `rtt`. The summary
statistics cover the `[Valid Duration]` (warm-up excluded). In under-load mode the server
replies to one message in `--reply-every` (default 100), so "received" replies are far fewer than
sent messages by design: loss is sockperf's own `# dropped messages` (sequence gaps in the
replies), never sent - received. Throughput mode's "MBps" and "Mbps" are 2^20-based: payload
bit/s = MBps * 1048576 * 8. A `--full-log` has one row per observation its summary counts; one
with fewer rows (a truncated log) is read with a warning naming both counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frerlab.traffic.record import UDP_OVERHEAD, Interval, Latency, Timestamps, TrafficRecord
from frerlab.traffic.tools.base import Background, ParseError, Tool, run, wait_for_udp_port

TOOL = Tool("sockperf", "sockperf", "sockperf")
TESTS = ("ping-pong", "under-load", "throughput")
MEBI = 1024 * 1024

_ANSI = re.compile(r"\x1b?\[[0-9;]+m")
_NUM = r"([-+]?\d+(?:\.\d+)?)"


def _clean(text: str) -> str:
    return _ANSI.sub("", text)


def client_command(
    test: str, server_ip: str, *, port: int = 11111, duration_s: float = 10.0, frame_size: int = 64,
    mps: int | None = None, full_rtt: bool = False, full_log: str | None = None, tcp: bool = False,
) -> list[str]:
    """The sockperf client command line; `frame_size` becomes `-m` (frame - 46 for UDP)."""
    if test not in TESTS:
        raise ValueError(f"sockperf test {test!r} is not valid (one of {', '.join(TESTS)})")
    argv = [TOOL.executable, test, "-i", server_ip, "-p", str(port), "-t", f"{duration_s:g}",
            "-m", str(frame_size - UDP_OVERHEAD)]
    if tcp:
        argv.append("--tcp")
    if mps is not None:
        argv.append(f"--mps={mps}")
    if full_rtt:
        argv.append("--full-rtt")
    if full_log:
        argv += ["--full-log", full_log]
    return argv


def run_client(
    test: str, server_ip: str, *, client_prefix: Sequence[str] = (), server_prefix: Sequence[str] = (),
    port: int = 11111, duration_s: float = 10.0, frame_size: int = 64, mps: int | None = None,
    full_rtt: bool = False, full_log: str | None = None,
) -> tuple[str, str]:
    """Runs a sockperf server and one client test; returns the client's raw output and its
    command line (the source `parse` names), unread, so a caller can keep it before reading it."""
    TOOL.require()
    argv = [*client_prefix, *client_command(
        test, server_ip, port=port, duration_s=duration_s, frame_size=frame_size, mps=mps,
        full_rtt=full_rtt, full_log=full_log,
    )]
    with Background([*server_prefix, TOOL.executable, "server", "-i", server_ip, "-p", str(port)]):
        wait_for_udp_port(server_prefix, port)
        return run(argv, timeout_s=duration_s + 30).stdout, " ".join(argv)


def run_test(test: str, server_ip: str, *, frame_size: int = 64, **client: Any) -> tuple[str, list[TrafficRecord]]:
    """`run_client`, then its output read: the raw output and the records (ParseError if the
    output is not sockperf's)."""
    raw, source = run_client(test, server_ip, frame_size=frame_size, **client)
    return raw, parse(raw, source=source, test=test, payload_size=frame_size - UDP_OVERHEAD)


def _find(pattern: str, text: str) -> re.Match | None:
    return re.search(pattern, text)


def parse(
    text: str, source: str | None = None, test: str | None = None, payload_size: int | None = None,
) -> list[TrafficRecord]:
    """Records from sockperf's client output (also a saved stdout file). `test` and
    `payload_size` fill in what the output does not say; without `test`, a latency run whose
    replies are under half the messages sent is taken as under-load."""
    where = source or "sockperf output"
    text = _clean(text)
    protocol = "tcp" if re.search(r"PORT\s*=\s*\d+\s*#\s*TCP", text) else "udp"
    size_match = _find(r"--msg-size=(\d+)", text)
    if payload_size is None and size_match:
        payload_size = int(size_match.group(1))
    frame = payload_size + UDP_OVERHEAD if payload_size is not None and protocol == "udp" else None

    rate = _find(r"Message Rate is (\d+) \[msg/sec\]", text)
    if rate:
        total = _find(rf"Total of (\d+) messages sent in {_NUM} sec", text)
        band = _find(rf"BandWidth is {_NUM} MBps", text)
        fps = float(rate.group(1))
        payload_bps = float(band.group(1)) * MEBI * 8 if band else None
        if payload_size is None and payload_bps:
            payload_size = round(payload_bps / 8 / fps)
            frame = payload_size + UDP_OVERHEAD if protocol == "udp" else None
        return [TrafficRecord(
            tool="sockperf", test="throughput", source=source, frame_size=frame, payload_size=payload_size,
            duration_s=float(total.group(2)) if total else None, sent=int(total.group(1)) if total else None,
            frames_per_s=fps, payload_bps=payload_bps,
            warnings=["send side only: sockperf throughput mode does not count what arrived"],
        ).with_rates()]

    valid = _find(r"\[Valid Duration\] RunTime=" + _NUM + r" sec; SentMessages=(\d+); ReceivedMessages=(\d+)", text)
    avg = _find(r"avg-(latency|rtt)=" + _NUM + r" \(std-dev=" + _NUM + r"\)", text)
    if not valid or not avg:
        raise ParseError(
            f"{where}: not sockperf output (expected a '[Valid Duration]' line and 'avg-latency=' or "
            "'avg-rtt=', or 'Message Rate is' for throughput)"
        )
    seconds, sent, received = float(valid.group(1)), int(valid.group(2)), int(valid.group(3))
    counts = _find(r"# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)", text)
    dropped, duplicated, out_of_order = (int(g) for g in counts.groups()) if counts else (None, None, None)
    observations = _find(r"Total (\d+) observations", text)
    percentiles = {
        f"{float(p):g}": float(v) for p, v in re.findall(r"percentile\s+" + _NUM + r"\s*=\s*" + _NUM, text)
    }
    minimum = _find(r"<MIN> observation\s*=\s*" + _NUM, text)
    maximum = _find(r"<MAX> observation\s*=\s*" + _NUM, text)
    if test is None:
        test = "under-load" if received < sent / 2 else "ping-pong"
    warnings = []
    if test == "under-load":
        warnings.append(
            "under-load: the server replies to one message in --reply-every, so received < sent is by "
            "design; loss is sockperf's dropped-message count"
        )
    return [TrafficRecord(
        tool="sockperf", test=test, source=source, frame_size=frame, payload_size=payload_size,
        duration_s=seconds, sent=sent, received=received, lost=dropped,
        loss_percent=dropped / (received + dropped) * 100.0 if dropped is not None and received + dropped else None,
        duplicates=duplicated, reordered=out_of_order,
        latency=Latency(
            kind="rtt" if avg.group(1) == "rtt" else "rtt_half",
            samples=int(observations.group(1)) if observations else None,
            min_us=float(minimum.group(1)) if minimum else None,
            max_us=float(maximum.group(1)) if maximum else None,
            mean_us=float(avg.group(2)), stddev_us=float(avg.group(3)),
            percentiles_us=percentiles, timestamps=TIMESTAMPS,
        ),
        warnings=warnings,
    )]


#: sockperf times each message on the client with its own clock reads around a round trip.
TIMESTAMPS = Timestamps(tx="userspace", rx="userspace", clock="the sockperf client's clock (a round trip)")


def _percentile(sorted_values: list[float], p: float) -> float:
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def _latency(values: list[float], kind: str) -> Latency:
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered)
    return Latency(
        kind=kind, samples=len(ordered), min_us=ordered[0], max_us=ordered[-1], mean_us=mean,
        stddev_us=math.sqrt(sum((v - mean) ** 2 for v in ordered) / len(ordered)),
        percentiles_us={f"{p:g}": _percentile(ordered, p) for p in (50, 90, 95, 99, 99.9, 99.99, 99.999)},
        timestamps=TIMESTAMPS,
    )


def parse_full_log(text: str, source: str | None = None, interval_s: float = 1.0) -> list[TrafficRecord]:
    """A record from a `--full-log` file: latency statistics computed from every message's
    latency column, and a per-interval series by transmit time; a warning if the log holds
    fewer rows than the observations its summary counts."""
    where = source or "sockperf full log"
    text = _clean(text)
    header = _find(r"packet, txTime\(sec\), rxTime\(sec\), (latency|rtt)\(usec\)", text)
    if not header:
        raise ParseError(f"{where}: not a sockperf --full-log file (no 'packet, txTime(sec), rxTime(sec), ...' header)")
    kind = "rtt" if header.group(1) == "rtt" else "rtt_half"
    rows = []
    for line in text[header.end():].splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            rows.append((int(parts[0]), float(parts[1]), float(parts[3])))
    if not rows:
        raise ParseError(f"{where}: the --full-log file has a header but no message rows")
    warnings = []
    observations = _find(r"Total (\d+) observations", text)
    if observations and len(rows) < int(observations.group(1)):
        warnings.append(f"the --full-log holds {len(rows)} message rows but its summary counts "
                        f"{observations.group(1)} observations: the log is truncated, and the statistics are of "
                        f"its {len(rows)} rows only")
    size = _find(r"--msg-size=(\d+)", text)
    payload = int(size.group(1)) if size else None
    t0 = rows[0][1]
    buckets: dict[int, list[float]] = {}
    for _, tx, lat in rows:
        buckets.setdefault(int((tx - t0) // interval_s), []).append(lat)
    span = rows[-1][1] - t0
    return [TrafficRecord(
        tool="sockperf", test="ping-pong-log", source=source,
        frame_size=payload + UDP_OVERHEAD if payload is not None else None, payload_size=payload,
        duration_s=span, received=len(rows),
        frames_per_s=(len(rows) - 1) / span if span > 0 else None,
        latency=_latency([r[2] for r in rows], kind),
        intervals=[
            Interval(start_s=k * interval_s, duration_s=interval_s, frames=len(v), latency=_latency(v, kind))
            for k, v in sorted(buckets.items())
        ],
        warnings=warnings,
    ).with_rates()]


def parse_file(path: Path) -> list[TrafficRecord]:
    """Records from a saved sockperf output or `--full-log` file."""
    text = Path(path).read_text(errors="replace")
    if "txTime(sec)" in text:
        return parse_full_log(text, source=str(path))
    return parse(text, source=str(path))
