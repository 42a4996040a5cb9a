"""One measured stream between two places (namespaces, or this host): `frerlab gen recv` starts
where the listener is, `frerlab gen send` where the talker is, something may happen while the
stream flows (a path cut, say), and both raw reports come back. The reports are written by
the tools themselves into `out_dir` (raw results first), so nothing is lost if the caller
fails afterwards.

    reports = stream_across(tb.exec_prefix("talker"), tb.exec_prefix("listener"), "198.18.0.2",
                            ["--rate-fps", "10k", "--count", "3000"], out_dir)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from frerlab.errors import EXIT_SHORTFALL, ToolFailed
from frerlab.traffic.tools.base import wait_for_udp_port

CLI = [sys.executable, "-m", "frerlab.cli"]


@dataclass(frozen=True)
class StreamReports:
    """The raw reports of both ends, as the tools wrote them."""

    sender: dict
    receiver: dict

    def stream(self) -> dict:
        """The receiver's accounting of the one stream it saw."""
        streams = self.receiver["streams"]
        if len(streams) != 1:
            raise RuntimeError(f"the listener saw {len(streams)} streams (expected 1)")
        return streams[0]


def stream_across(talker: Sequence[str], listener: Sequence[str], dst: str, send_args: list[str],
                  out_dir: Path, recv_args: Sequence[str] = (), port: int = 5555,
                  during: Callable[[], None] | None = None, timeout_s: float = 60.0) -> StreamReports:
    """Runs the stream; `talker` and `listener` are command prefixes (e.g. `ip netns exec NS`).
    Raises ToolFailed with the sender's message if it fails."""
    out_dir.mkdir(parents=True, exist_ok=True)
    recv_out, send_out = out_dir / "recv.json", out_dir / "send.json"
    recv = subprocess.Popen([*listener, *CLI, "gen", "recv", "--port", str(port), "--duration", str(timeout_s),
                             "--linger", "0.5", "--output", str(recv_out), *recv_args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    send = None
    try:
        wait_for_udp_port(list(listener), port)
        send = subprocess.Popen([*talker, *CLI, "gen", "send", "--dst", dst, "--port", str(port),
                                 "--output", str(send_out), *send_args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if during:
            during()
        if send.wait(timeout=timeout_s) not in (0, EXIT_SHORTFALL):
            raise ToolFailed(f"gen send failed: {send.stderr.read().strip()}")
        if recv.wait(timeout=timeout_s) != 0:
            raise ToolFailed(f"gen recv failed: {recv.stderr.read().strip()}")
    finally:
        for proc in (send, recv):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
    return StreamReports(json.loads(send_out.read_text()), json.loads(recv_out.read_text()))
