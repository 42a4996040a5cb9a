"""iperf3 driver and parser (TCP and UDP, `--json`, `--udp-counters-64bit`; the client's text
output too, as older result files hold it).

Sizes and rates the way iperf3 counts them: `-l` is the UDP payload (frame - 46 for an untagged
IPv4 frame) and `-b` counts payload bits, so a frame rate f at frame size F becomes
`-b f * (F - 46) * 8`. Loss comes from the receiver's counts that iperf3 reports back to the
client (`lost_packets`); `jitter_ms` is RFC 3550's smoothed estimate, not a latency, and iperf3
measures no latency at all. TCP retransmits are the sender's, per interval and in total.

The text output names no `-l`: the UDP payload per datagram is derived from the bytes and
datagrams sent (transfer / datagrams), where the transfer as printed (KBytes, MBytes: 1024-based,
3 significant digits) leaves one whole size; otherwise it stays unknown and a warning says so.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from frerlab.traffic.record import UDP_OVERHEAD, Interval, TrafficRecord, loss_percent
from frerlab.traffic.tools.base import Background, ParseError, Tool, ToolFailed
from frerlab.units import rate_bps

TOOL = Tool("iperf3", "iperf3", "iperf3")
# The one-shot server needs a moment to listen; the client is retried while refused.
CONNECT_ATTEMPTS = 30


def client_command(
    server_ip: str, *, port: int = 5201, duration_s: float = 10.0, udp: bool = True,
    frame_size: int | None = None, frames_per_s: float | None = None,
) -> list[str]:
    """The iperf3 client command line; for UDP, `frame_size` and `frames_per_s` are converted
    to iperf3's payload length and payload bit rate (no rate: unlimited, `-b 0`)."""
    argv = [TOOL.executable, "-c", server_ip, "-p", str(port), "-t", f"{duration_s:g}", "--json"]
    if not udp:
        return argv
    argv += ["-u", "--udp-counters-64bit"]
    payload = (frame_size or 1518) - UDP_OVERHEAD
    argv += ["-l", str(payload)]
    argv += ["-b", "0" if frames_per_s is None else f"{frames_per_s * payload * 8:.0f}"]
    return argv


def run_test(
    server_ip: str, *, client_prefix: Sequence[str] = (), server_prefix: Sequence[str] = (),
    port: int = 5201, duration_s: float = 10.0, udp: bool = True,
    frame_size: int | None = None, frames_per_s: float | None = None,
) -> tuple[str, list[TrafficRecord]]:
    """Runs one iperf3 test (a one-shot server, then the client); returns the client's raw
    JSON and the records parsed from it."""
    TOOL.require()
    argv = [*client_prefix, *client_command(
        server_ip, port=port, duration_s=duration_s, udp=udp, frame_size=frame_size, frames_per_s=frames_per_s,
    )]
    with Background([*server_prefix, TOOL.executable, "-s", "-1", "-p", str(port)]):
        for _ in range(CONNECT_ATTEMPTS):
            done = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 30)
            if "unable to connect" not in done.stdout + done.stderr:
                break
            time.sleep(0.1)
    if done.returncode != 0:
        raise ToolFailed(f"{' '.join(argv)} exited with status {done.returncode}: {(done.stdout + done.stderr)[-500:]}")
    return done.stdout, parse(done.stdout, source=" ".join(argv))


def parse(text: str, source: str | None = None) -> list[TrafficRecord]:
    """Records from iperf3 `--json` client output (TCP or UDP): one record for the whole test."""
    where = source or "iperf3 output"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ParseError(f"{where}: not iperf3 JSON ({err})") from None
    if not isinstance(doc, dict) or "start" not in doc or "end" not in doc:
        raise ParseError(f"{where}: not iperf3 --json output (no 'start' and 'end' objects)")
    if doc.get("error"):
        raise ParseError(f"{where}: iperf3 reported an error: {doc['error']}")
    start, end = doc["start"], doc["end"]
    test = start.get("test_start", {})
    protocol = test.get("protocol", "TCP").lower()
    payload = test.get("blksize")
    intervals = [
        Interval(
            start_s=i["sum"]["start"], duration_s=i["sum"]["seconds"],
            frames=i["sum"].get("packets"), payload_bps=i["sum"]["bits_per_second"],
            retransmits=i["sum"].get("retransmits"),
        )
        for i in doc.get("intervals", [])
    ]
    warnings = []
    if test.get("reverse"):
        warnings.append("reverse mode (-R): the server sent, the client received")
    if protocol == "udp":
        # iperf3 >= 3.11 reports both sides; older versions only "sum" (the receiver's view).
        sent_side, received_side = end.get("sum_sent", end["sum"]), end.get("sum_received", end["sum"])
        sent, lost = sent_side.get("packets"), received_side.get("lost_packets")
        seconds = received_side.get("seconds") or test.get("duration")
        if lost is not None and lost < 0:
            warnings.append(f"iperf3 reported {lost} lost packets (negative: its counters disagree); "
                            "loss is left unknown")
            lost = None
        received = sent - lost if sent is not None and lost is not None else None
        reordered = sum(st["udp"].get("out_of_order", 0) for st in end.get("streams", []) if "udp" in st)
        return [TrafficRecord(
            tool="iperf3", test="udp", source=source, frame_size=_frame_size(payload), payload_size=payload,
            duration_s=seconds, sent=sent, received=received, lost=lost,
            loss_percent=loss_percent(sent, lost), reordered=reordered,
            frames_per_s=received / seconds if received is not None and seconds else None,
            jitter_ms=received_side.get("jitter_ms"), intervals=intervals, warnings=warnings,
        ).with_rates()]
    received = end.get("sum_received", {})
    sent = end.get("sum_sent", {})
    if not received and not sent:
        raise ParseError(f"{where}: iperf3 TCP output without 'sum_sent' or 'sum_received' in 'end'")
    return [TrafficRecord(
        tool="iperf3", test="tcp", source=source, payload_size=None,
        duration_s=received.get("seconds") or sent.get("seconds"), retransmits=sent.get("retransmits"),
        payload_bps=received.get("bits_per_second"), intervals=intervals, warnings=warnings,
    )]


def _frame_size(payload: int | None) -> int | None:
    """The untagged IPv4 frame (FCS included) of a UDP datagram of `payload` bytes (iperf3's -l)."""
    return payload + UDP_OVERHEAD if payload else None


# One line of iperf3's text report: "[  5]   0.00-10.00  sec  1.10 GBytes   941 Mbits/sec ..." and,
# in the summary, the rest of the line and "sender" or "receiver" at its end.
_TEXT_LINE = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\]\s+(?P<start>[\d.]+)-(?P<end>[\d.]+)\s+sec\s+"
    r"(?P<transfer>[\d.]+)\s+(?P<transfer_unit>[KMGT]?)Bytes\s+"
    r"(?P<rate>[\d.]+)\s+(?P<unit>[KMGT]?)bits/sec(?P<rest>.*?)\s*(?P<side>sender|receiver)?\s*$"
)
_UDP_REST = re.compile(r"(?P<jitter>[\d.]+)\s+ms\s+(?P<lost>-?\d+)/(?P<total>\d+)\s+\(")
# iperf3 prints a transfer in bytes of 1024-based units (unit_snprintf's 'A' format)
_TRANSFER_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def looks_like_text(text: str) -> bool:
    """Whether `text` is iperf3's client text output with its sender/receiver summary."""
    return any((m := _TEXT_LINE.match(line)) and m["side"] for line in text.splitlines())


def _text_rate(line: re.Match) -> int:
    """The rate of a text line in bit/s; ParseError if it is not one."""
    try:
        return rate_bps(line["rate"] + line["unit"], "iperf3 rate")
    except ValueError as err:
        raise ParseError(str(err)) from None


def _leading_count(rest: str) -> int | None:
    """The first word after a line's rate as a whole number (a UDP interval's datagrams, a TCP
    line's retransmits), None if it is not one."""
    words = rest.split()
    return int(words[0]) if words and words[0].isdigit() else None


def _payload_bounds(line: re.Match, datagrams: int) -> tuple[int, int]:
    """The whole UDP payload sizes (bytes per datagram) that agree with a line's transfer, as
    printed (rounded to its last digit), carried in `datagrams` datagrams."""
    printed = Fraction(line["transfer"])
    half_digit = Fraction(1, 2 * 10 ** len(line["transfer"].partition(".")[2]))
    unit = _TRANSFER_UNIT[line["transfer_unit"]]
    return (math.ceil((printed - half_digit) * unit / datagrams),
            math.floor((printed + half_digit) * unit / datagrams))


def _udp_payload(sent_lines: list[tuple[re.Match, int]]) -> tuple[int | None, str | None]:
    """The UDP payload per datagram (iperf3's -l: payload, not the L2 frame) from lines pairing
    the bytes sent with the datagrams sent; or None and a warning saying why it is unknown."""
    bounds = [_payload_bounds(line, datagrams) for line, datagrams in sent_lines if datagrams]
    if bounds:
        low, high = max(b[0] for b in bounds), min(b[1] for b in bounds)
        if low == high:
            return low, None
        why = (f"transfer / datagrams allows {low}..{high} bytes at the precision iperf3 prints" if low < high else
               f"by transfer / datagrams one line needs at least {low} bytes and another at most {high}")
    else:
        why = "no line gives the bytes sent in one or more datagrams"
    return None, f"the UDP payload per datagram is unknown ({why}), so the frame size is unknown too"


def parse_text(text: str, source: str | None = None) -> list[TrafficRecord]:
    """One record from iperf3's client text output (TCP or UDP; the `[SUM]` lines when -P ran
    several streams). iperf3 prints rates to 3 significant digits, so the figures are only that
    precise; the record says so in its warnings. A UDP record's payload and frame size are
    transfer / datagrams where that leaves one whole size (else a warning)."""
    where = source or "iperf3 output"
    lines = [m for m in map(_TEXT_LINE.match, text.splitlines()) if m]
    several = any(m["id"] == "SUM" for m in lines)
    lines = [m for m in lines if several == (m["id"] == "SUM")]
    summary = {m["side"]: m for m in lines if m["side"]}
    if not summary:
        raise ParseError(f"{where}: iperf3 text output without its sender/receiver summary lines")
    received = summary.get("receiver") or summary["sender"]
    udp = _UDP_REST.search(received["rest"])
    # a UDP interval line ends in its datagram count; a TCP one in retransmits and window
    intervals = [
        Interval(start_s=float(m["start"]), duration_s=float(m["end"]) - float(m["start"]),
                 frames=_leading_count(m["rest"]) if udp else None,
                 retransmits=None if udp else _leading_count(m["rest"]), payload_bps=_text_rate(m))
        for m in lines if not m["side"]
    ]
    warnings = ["iperf3 text output: rates are as printed, to 3 significant digits"]
    seconds = float(received["end"]) - float(received["start"])
    rate = _text_rate(received)
    if udp is None:
        retransmits = _leading_count(summary["sender"]["rest"]) if "sender" in summary else None
        return [TrafficRecord(tool="iperf3", test="tcp", source=source, duration_s=seconds, payload_bps=rate,
                              retransmits=retransmits, intervals=intervals, warnings=warnings)]
    sender = _UDP_REST.search(summary["sender"]["rest"]) if "sender" in summary else None
    sent, lost = int((sender or udp)["total"]), int(udp["lost"])
    # the client's interval lines (a receiver's, with -R, count no datagrams sent) and the sender
    # summary pair the bytes sent with the datagrams sent
    sent_lines = [(m, n) for m in lines if not m["side"] and (n := _leading_count(m["rest"])) is not None]
    if sender:
        sent_lines.append((summary["sender"], sent))
    payload, unknown = _udp_payload(sent_lines)
    if unknown:
        warnings.append(unknown)
    if lost < 0:
        warnings.append(f"iperf3 reported {lost} lost packets (negative: its counters disagree); loss is left unknown")
    known = lost if lost >= 0 else None
    return [TrafficRecord(
        tool="iperf3", test="udp", source=source, frame_size=_frame_size(payload), payload_size=payload,
        duration_s=seconds, sent=sent,
        received=sent - known if known is not None else None, lost=known, loss_percent=loss_percent(sent, known),
        payload_bps=rate, jitter_ms=float(udp["jitter"]), intervals=intervals, warnings=warnings,
    )]


def parse_file(path: Path) -> list[TrafficRecord]:
    """Records from an iperf3 JSON file (frerlab.traffic.importer tells the formats apart)."""
    return parse(Path(path).read_text(), source=str(path))
