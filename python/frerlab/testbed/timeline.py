"""The fail-over run's timeline: the stream's data frames per millisecond as the talker sent
them, on path a, on path b and after elimination, with the cuts and restores, measured by
capturing with tcpdump inside the testbed's namespaces while the stream runs
(frerlab.testbed.failover).

Where it captures. On each path: the path namespace's `out` interface, outgoing (the link
toward sw2). The impairment element sits on the tc ingress of `in` and redirects to `out`, and
a capture on `in` sees every frame before that hook, the ones a cut drops too; `out` shows only
what the path really carried to sw2, after the cut and every other impairment, and after its
queue (a capture on egress sees the frame as it leaves). After elimination: the listener's
`eth0`, incoming. When sw2 eliminates (or in the control group), that link carries what the
elimination passed, so every data frame on it counts, a duplicate that got through included.
When the listener eliminates, `eth0` carries both copies before its data plane (a capture sees
frames before tc ingress), so there the first copy of each sequence number counts: what its
recovery should pass, not a measurement of it. Sent: the talker's `eth0`, outgoing (after its
data plane, so when the talker replicates, the first copy of each sequence number counts). The
sent series tells the host from the network: on a busy machine the generator falls behind its
schedule now and then (its report's `max_lag_ns`) and catches up, and a millisecond the talker
sent nothing in is empty everywhere downstream without anything being lost.

What counts. A data frame of the stream: Ethernet, any VLAN tags, an R-TAG or none, IPv4 to
the listener, UDP to the stream's port, a probe payload (frerlab gen: magic 0xFB, kind 'D').
End-of-stream probes, the reverse direction and anything else are not counted. In the control
group path b carries nothing: its series is all zeros, captured like the others. `complete`
says every tcpdump wrote every frame its socket took (captured = received by filter) and the
kernel dropped none; else a series may miss frames. tcpdump runs in immediate mode: without it
the frames of the last, unfinished ring block (up to its 1 s timeout) are lost when it stops.

When. Every timestamp is the kernel's CLOCK_REALTIME (tcpdump, nanoseconds), and so are the
times the fail-over run took around each cut and restore. t = 0 (`start_ns`) is the stream's
first data frame at the listener, as everywhere in the fail-over run. Bin k holds the frames
seen from k to k + 1 ms; a frame seen at the talker or on a path before t = 0 (the first
frames' transit to the listener, well under a millisecond) counts in bin 0. Each cut and
restore is an event with `t_ms`, when the run asked the path element for it, and `done_ms`,
when that call returned: the change took effect in between (the call takes some ms; its
kernel part comes near the end). The pcap files are written into the run's directory by
tcpdump itself (raw first); timeline.json is derived from them afterwards.
"""

from __future__ import annotations

import json
import os
import re
import select
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from frerlab.errors import ToolFailed
from frerlab.files import write_atomic
from frerlab.pcap import read_pcap
from frerlab.testbed import bed, plan
from frerlab.traffic.tools.base import Background, Tool

TCPDUMP = Tool("tcpdump", "tcpdump", "tcpdump")
#: Bytes kept of each frame: Ethernet, two VLAN tags, an R-TAG, IPv4 with options, UDP and the
#: probe (14 + 8 + 6 + 60 + 8 + 18 = 114).
SNAPLEN = 128
BIN_MS = 1
#: series -> (host, interface, direction, file)
POINTS = {"sent": ("talker", plan.HOST_PORT, "out", "talker.pcap"),
          "path_a": ("a", "out", "out", "path_a.pcap"),
          "path_b": ("b", "out", "out", "path_b.pcap"),
          "after_elimination": ("listener", plan.HOST_PORT, "in", "listener.pcap")}
TIME_ORIGIN = "the stream's first data frame at the listener (t = 0 as everywhere in the fail-over run)"
_VLAN_TPIDS = (0x8100, 0x88A8)
_RTAG, _IPV4, _UDP = 0xF1C1, 0x0800, 17
_PROBE_DATA = bytes([0xFB, ord("D")])
_LISTENER_IP = bytes(int(b) for b in plan.LISTENER_IP.split("."))


class Capture:
    """tcpdump on one interface of a testbed host, writing a nanosecond pcap; capturing once
    the constructor returns."""

    def __init__(self, tb_name: str, host: str, interface: str, direction: str, file: Path,
                 timeout_s: float = 10.0, own_group: bool = False) -> None:
        argv = [*bed.prefix(tb_name, host), TCPDUMP.require(), "-i", interface, "-Q", direction, "-s", str(SNAPLEN),
                "-B", "4096", "--immediate-mode", "-U", "-n", "-Z", "root", "--time-stamp-precision=nano", "-w", str(file)]
        self.where = f"{host} {interface}"
        self.tool = Background(argv, own_group=own_group)
        self.said = b""
        try:
            self._wait_listening(timeout_s)
        except BaseException:
            self.tool.stop()
            raise

    def _wait_listening(self, timeout_s: float) -> None:
        """Back once tcpdump says it listens (its capture is open); ToolFailed if it ends or
        stays silent. Reads stderr's descriptor directly, so `stop` still gets the rest."""
        fd = self.tool.process.stderr.fileno()
        deadline = time.monotonic() + timeout_s
        while b"listening on" not in self.said:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolFailed(f"tcpdump on {self.where} did not start capturing within {timeout_s:g} s")
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    status = self.tool.process.wait()
                    raise ToolFailed(f"tcpdump on {self.where} exited with status {status}: "
                                     f"{self.said.decode(errors='replace').strip()}")
                self.said += chunk

    def stop(self) -> dict:
        """Stops tcpdump (SIGTERM: it completes the file; SIGKILL after 3 s) and waits for it;
        its own counts (None where it printed none). ToolFailed if it had ended before: the
        capture is incomplete."""
        ended = self.tool.process.poll()
        said = self.said.decode(errors="replace") + self.tool.stop()
        if ended is not None:
            raise ToolFailed(f"tcpdump on {self.where} ended during the capture (status {ended}): "
                             f"{said.strip()[-300:]}")
        counts = {}
        for key, words in (("captured", "captured"), ("received_by_filter", "received by filter"),
                           ("dropped_by_kernel", "dropped by kernel")):
            found = re.search(rf"(\d+) packets? {words}", said)
            counts[key] = int(found.group(1)) if found else None
        return counts


@contextmanager
def capturing(tb_name: str, out_dir: Path, own_group: bool = False) -> Iterator[dict]:
    """Captures at every point of POINTS into `out_dir` while the block runs; every tcpdump is
    stopped and waited for when the block ends, however it ends. Yields a dict that then holds,
    per series, where it was captured and tcpdump's counts. `own_group`: each tcpdump in a
    process group of its own, so a Ctrl-C at the terminal stops only the caller, which then
    stops them (frerlab capture, whose normal end is a Ctrl-C)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    captured: dict[str, dict] = {}
    with ExitStack() as stack:
        for series, (host, interface, direction, file) in POINTS.items():
            capture = Capture(tb_name, host, interface, direction, out_dir / file, own_group=own_group)
            captured[series] = {"file": file, "host": host, "interface": interface, "direction": direction}
            stack.callback(lambda s=series, c=capture: captured[s].update(tcpdump=c.stop()))
        yield captured


def data_seq(frame: bytes, port: int) -> int | None:
    """The probe sequence number of a data frame of the stream (see the module's "What
    counts"), else None."""
    at = 12
    ethertype = int.from_bytes(frame[at:at + 2], "big")
    while ethertype in _VLAN_TPIDS:
        at += 4
        ethertype = int.from_bytes(frame[at:at + 2], "big")
    if ethertype == _RTAG:  # EtherType, 2 reserved bytes, sequence number, then the next EtherType
        at += 6
        ethertype = int.from_bytes(frame[at:at + 2], "big")
    ip = at + 2
    if ethertype != _IPV4 or len(frame) < ip + 20 or frame[ip + 9] != _UDP or frame[ip + 16:ip + 20] != _LISTENER_IP:
        return None
    udp = ip + (frame[ip] & 0x0F) * 4
    probe = udp + 8
    if int.from_bytes(frame[udp + 2:udp + 4], "big") != port or frame[probe:probe + 2] != _PROBE_DATA:
        return None
    if len(frame) < probe + 12:
        raise ValueError(f"a data frame of the stream was cut at {len(frame)} bytes (snap length {SNAPLEN})")
    return int.from_bytes(frame[probe + 5:probe + 12], "big")  # byte 4: the sender lane


def data_times(path: Path, port: int, first_copy_only: bool = False) -> list[int]:
    """Capture times (ns) of the stream's data frames in the pcap `path`; with
    `first_copy_only`, of the first frame of each sequence number."""
    seen: set[int] = set()
    times = []
    for t_ns, frame in read_pcap(path):
        seq = data_seq(frame, port)
        if seq is None or (first_copy_only and seq in seen):
            continue
        seen.add(seq)
        times.append(t_ns)
    return times


def derive(out_dir: Path, captured: dict, happened: list[dict], port: int, settings: dict) -> dict:
    """timeline.json from the captures in `out_dir` (`captured` from `capturing`) and the cuts
    and restores the run made (`happened`: path, up, called_ns and returned_ns, CLOCK_REALTIME)
    on a testbed built with `settings`; writes it and returns it."""
    frer = settings["mode"] == "frer"
    first_copy = {"sent": frer and settings["replicate_at"] == "talker",
                  "after_elimination": frer and settings["eliminate_at"] == "listener"}
    times = {series: data_times(out_dir / c["file"], port, first_copy_only=first_copy.get(series, False))
             for series, c in captured.items()}
    if not times["after_elimination"]:
        raise ToolFailed(f"the capture at the listener ({captured['after_elimination']['file']}) holds no data "
                         f"frame of the stream (UDP port {port})")
    start = times["after_elimination"][0]
    last = max(t for ts in times.values() for t in ts)
    bin_ns = BIN_MS * 1_000_000
    series = {}
    for name, ts in times.items():
        counts = [0] * ((last - start) // bin_ns + 1)
        for t in ts:
            counts[max(0, (t - start) // bin_ns)] += 1
        series[name] = counts
    events = [{"t_ms": round((e["called_ns"] - start) / 1e6, 3), "done_ms": round((e["returned_ns"] - start) / 1e6, 3),
               "what": f"{'restore' if e['up'] else 'cut'} {e['path']}"} for e in happened]
    where = {"sent": "leaving the talker's eth0", "after_elimination": "arriving on the listener's eth0"}
    counted = [f"{name}: {'the first copy of each sequence number' if first else 'every data frame'} {where[name]}"
               for name, first in first_copy.items()]
    timeline = {
        "bin_ms": BIN_MS, "start_ns": start, "time_origin": TIME_ORIGIN,
        "counted": f"data frames of the stream (probe kind 'D', UDP port {port}, to {plan.LISTENER_IP}; end-of-stream "
                   f"probes and other traffic left out); path_a, path_b: every data frame leaving the path toward sw2 "
                   f"(its namespace's 'out', after the impairment element); {'; '.join(counted)}"
                   + ("" if frer else "; path b carries nothing in the control group: all zeros"),
        "events": events,
        "events_note": "each change took effect between t_ms (asked for) and done_ms (the call returned), "
                       "in ms from t = 0",
        "series": series,
        "captures": {name: {**c, "data_frames": len(times[name])} for name, c in captured.items()},
        "complete": all(c["tcpdump"]["dropped_by_kernel"] == 0 and c["tcpdump"]["captured"] is not None
                        and c["tcpdump"]["captured"] == c["tcpdump"]["received_by_filter"] for c in captured.values()),
    }
    write_atomic(out_dir / "timeline.json", json.dumps(timeline))
    return timeline
