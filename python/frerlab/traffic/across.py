"""One measured stream between two places (namespaces, or this host): `frerlab gen recv` starts
where the listener is, `frerlab gen send` where the talker is, something may happen while the
stream flows (a path cut, say), and both raw reports come back. They come back on the tools'
stdout (so the two ends may be other hosts) and are written into `out_dir` before anything
reads them (raw results first), so nothing is lost if the caller fails afterwards.

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
from frerlab.files import write_atomic
from frerlab.processes import end
from frerlab.traffic.tools.base import wait_for_receiver

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
                  during: Callable[[], None] | None = None, timeout_s: float = 60.0,
                  frerlab: Sequence[str] = CLI) -> StreamReports:
    """Runs the stream; `talker` and `listener` are command prefixes (e.g. `ip netns exec NS`,
    or frerlab.remote.exec for a host over SSH) and `frerlab` the command that runs frerlab
    there. The tools print their raw reports on stdout, which are written into `out_dir`
    (send.json, recv.json) before anything reads them, so the hosts need no shared files.
    `recv_args` may choose the receiver's `--mode` (and `--interface`): the stream starts once
    that receiver is ready. Raises ToolFailed with the tool's message if either end fails."""
    out_dir.mkdir(parents=True, exist_ok=True)
    recv = subprocess.Popen([*listener, *frerlab, "gen", "recv", "--port", str(port), "--duration", str(timeout_s),
                             "--linger", "0.5", "--report-json", *recv_args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    send = None
    try:
        options = dict(zip(recv_args, recv_args[1:]))
        wait_for_receiver(list(listener), port, options.get("--mode", "udp"), options.get("--interface"))
        send = subprocess.Popen([*talker, *frerlab, "gen", "send", "--dst", dst, "--port", str(port),
                                 "--report-json", *send_args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if during:
            during()
        sent, send_err = send.communicate(timeout=timeout_s)
        if send.returncode not in (0, EXIT_SHORTFALL):
            raise ToolFailed(f"gen send failed: {send_err.strip()}")
        received, recv_err = recv.communicate(timeout=timeout_s)
        if recv.returncode != 0:
            raise ToolFailed(f"gen recv failed: {recv_err.strip()}")
    finally:
        for proc in (send, recv):
            if proc and proc.poll() is None:
                end(proc)
    reports = {}
    for name, text in (("send", sent), ("recv", received)):
        write_atomic(out_dir / f"{name}.json", text)
        reports[name] = json.loads(text)
    return StreamReports(reports["send"], reports["recv"])
