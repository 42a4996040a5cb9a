"""mausezahn driver: a send-only generator, paired with frerlab's receiver to count loss.

mausezahn writes raw frames on an interface (`-a`/`-b` are MAC addresses, not sizes; `-d` is
the gap between frames in microseconds, on top of its own per-frame cost, so it falls short of
the requested rate — the seeds' 246 Mbit/s ceiling was this). The driver gives every frame a
frerlab probe payload of one fixed stream id (mausezahn cannot number frames), so the receiver
counts arrivals exactly but cannot tell duplicates or reordering; latency is not measured.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from frerlab.traffic.record import UDP_OVERHEAD, TrafficRecord, loss_percent
from frerlab.traffic.tools.base import Background, ParseError, Tool, run, wait_for_udp_port

TOOL = Tool("mausezahn", "mausezahn", "netsniff-ng")
PROBE_MAGIC = 0xFB
PROBE_DATA = ord("D")


def probe_payload_hex(frame_size: int, stream_id: int) -> str:
    """The UDP payload (frame - 46 bytes) as mausezahn hex: a frerlab data probe of
    `stream_id` with sequence number and time 0, zero-padded."""
    payload = bytearray(frame_size - UDP_OVERHEAD)
    payload[0:4] = bytes([PROBE_MAGIC, PROBE_DATA]) + stream_id.to_bytes(2, "big")
    return ":".join(f"{b:02x}" for b in payload)


def command(
    interface: str, *, count: int, frame_size: int, src_ip: str, dst_ip: str, dst_mac: str,
    port: int = 5555, frames_per_s: float | None = None, stream_id: int = 0xA11,
) -> list[str]:
    """The mausezahn command line for `count` UDP frames of `frame_size` (FCS included)."""
    delay_us = "0" if frames_per_s is None else f"{1e6 / frames_per_s:.0f}"
    return [
        TOOL.executable, interface, "-c", str(count), "-d", delay_us, "-A", src_ip, "-B", dst_ip,
        "-b", dst_mac, "-t", "udp", f"sp={port},dp={port},p={probe_payload_hex(frame_size, stream_id)}",
    ]


def parse_announcement(text: str) -> dict:
    """mausezahn's one status line ("Mausezahn will send N frames... T seconds (R packets per
    second)"): what it *planned*, not what it achieved."""
    match = re.search(r"will send (\d+) frames\.\.\.\s*([\d.]+) seconds \((\d+) packets per second\)", text)
    if not match:
        raise ParseError(f"not mausezahn output (no 'Mausezahn will send N frames' line): {text.strip()[:200]!r}")
    return {"frames": int(match.group(1)), "seconds": float(match.group(2)), "packets_per_s": int(match.group(3))}


def run_paired(
    interface: str, *, count: int, frame_size: int, src_ip: str, dst_ip: str, dst_mac: str,
    sender_prefix: Sequence[str] = (), receiver_prefix: Sequence[str] = (), port: int = 5555,
    frames_per_s: float | None = None, stream_id: int = 0xA11, receive_timeout_s: float = 30.0,
) -> tuple[str, dict, list[TrafficRecord]]:
    """Sends with mausezahn while `frerlab gen recv` listens on the far side; returns
    mausezahn's output, the receiver's raw report and one record (sent from mausezahn's count,
    received from the receiver's arrivals, achieved rate from the first and last arrival)."""
    TOOL.require()
    argv = [*sender_prefix, *command(
        interface, count=count, frame_size=frame_size, src_ip=src_ip, dst_ip=dst_ip, dst_mac=dst_mac,
        port=port, frames_per_s=frames_per_s, stream_id=stream_id,
    )]
    with tempfile.TemporaryDirectory(prefix="frl-mz-") as tmp:
        raw_path = Path(tmp) / "recv.json"
        receiver = [*receiver_prefix, sys.executable, "-m", "frerlab.cli", "gen", "recv", "--port", str(port),
                    "--duration", f"{receive_timeout_s:g}", "--idle", "1", "--output", str(raw_path)]
        with Background(receiver) as rx:
            wait_for_udp_port(receiver_prefix, port)
            done = run(argv, timeout_s=receive_timeout_s)
            rx.process.wait(timeout=receive_timeout_s + 5)
        report = json.loads(raw_path.read_text()) if raw_path.exists() else {"streams": []}
    output = done.stdout + done.stderr
    announced = parse_announcement(output)
    streams = [s for s in report["streams"] if s["stream_id"] == stream_id]
    arrivals = sum(s["arrivals"] for s in streams)
    first = min((s["first_arrival_ns"] for s in streams), default=None)
    last = max((s["last_arrival_ns"] for s in streams), default=None)
    span_s = (last - first) / 1e9 if first is not None and last is not None and last > first else None
    achieved = (arrivals - 1) / span_s if span_s else None
    warnings = ["mausezahn cannot number frames: duplicates and reordering are not measured"]
    if frames_per_s is not None and achieved is not None and achieved < 0.99 * frames_per_s:
        warnings.append(f"generator shortfall: requested {frames_per_s:.0f} frames/s, mausezahn achieved {achieved:.0f}")
    record = TrafficRecord(
        tool="mausezahn", test="send-only+frerlab-recv", source=" ".join(argv), stream_id=stream_id,
        frame_size=frame_size, payload_size=frame_size - UDP_OVERHEAD, duration_s=span_s,
        sent=announced["frames"], received=arrivals, lost=announced["frames"] - arrivals,
        loss_percent=loss_percent(announced["frames"], announced["frames"] - arrivals),
        frames_per_s=achieved, warnings=warnings,
    ).with_rates()
    return output, report, [record]
