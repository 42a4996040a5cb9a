"""`frerlab capture`: records a testbed's ports while any run goes on (a fail-over run, a
benchmark, iperf3 by hand), until a duration has passed or Ctrl-C (or SIGTERM), with the fail-over
timeline's capture machinery (frerlab.testbed.timeline.capturing): tcpdump inside the testbed's
namespaces at the talker's port (outgoing), each path's link toward sw2 (outgoing) and the
listener's port (incoming), nanosecond pcap, SNAPLEN bytes of each frame. Every tcpdump is stopped
and waited for however the capture ends.

Beside the pcap files it writes capture.json, the manifest `frerlab verify` reads: the points
(file, host, interface, direction, tcpdump's counts), where the testbed's settings put an
R-TAG (the paths with FRER; the talker's port when the talker replicates), which points carry
the replicas, and which one is after elimination (the listener's port when sw2 eliminates; none
when the listener eliminates: its port is captured before its data plane, both copies on it).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from frerlab.files import write_atomic
from frerlab.testbed import bed, timeline

#: Longest capture with a duration, in seconds (without one it runs until Ctrl-C).
MAX_DURATION_S = 24 * 3600


def expectations(settings: dict) -> tuple[dict[str, bool], dict]:
    """Per point of timeline.POINTS whether frames of the testbed's stream carry an R-TAG
    there, and the roles: {"paths": [...], "after_elimination": point or None}."""
    frer = settings["mode"] == "frer"
    rtag = {"sent": frer and settings["replicate_at"] == "talker", "path_a": frer, "path_b": frer,
            "after_elimination": frer and settings["eliminate_at"] == "listener"}
    after = None if frer and settings["eliminate_at"] == "listener" else "after_elimination"
    return rtag, {"paths": ["path_a", "path_b"], "after_elimination": after}


class _Stop(KeyboardInterrupt):
    """SIGTERM or SIGHUP during the capture: handled as a Ctrl-C."""


def _stop(signum: int, _frame) -> None:
    raise _Stop(signal.Signals(signum).name)


def record(tb_name: str, out_dir: Path, duration_s: float | None = None, started=None) -> dict:
    """Captures testbed `tb_name`'s ports into `out_dir` for `duration_s` (None: until Ctrl-C,
    SIGTERM or SIGHUP); writes capture.json and returns it. `started` is called once every
    tcpdump captures."""
    state = bed.read_state(tb_name)
    rtag, roles = expectations(state["settings"])
    out_dir.mkdir(parents=True, exist_ok=True)
    handlers = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    stopped_by = "duration"
    try:
        with timeline.capturing(tb_name, out_dir, own_group=True) as captured:
            started_ns = time.time_ns()
            if started:
                started()
            try:
                if duration_s is None:
                    while True:
                        time.sleep(3600)
                time.sleep(duration_s)
            except KeyboardInterrupt as sig:
                stopped_by = str(sig) if isinstance(sig, _Stop) else "Ctrl-C"
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    manifest = {"testbed": tb_name, "settings": state["settings"], "started_ns": started_ns,
                "stopped_ns": time.time_ns(), "stopped_by": stopped_by,
                "points": {name: {**c, "rtag_expected": rtag[name]} for name, c in captured.items()},
                "roles": roles,
                # not timeline.complete: its captured == received by filter fails whenever frames flow the
                # other way (libpcap counts them before applying -Q), and any run may send replies
                "complete": all(c["tcpdump"]["captured"] is not None and c["tcpdump"]["dropped_by_kernel"] == 0
                                for c in captured.values())}
    write_atomic(out_dir / "capture.json", json.dumps(manifest, indent=1))
    return manifest
