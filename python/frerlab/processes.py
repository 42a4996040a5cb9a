"""Stopping the background processes frerlab starts (latent error monitors, delay lines, tools
it reads the output of), also those another frerlab process started: SIGTERM, SIGKILL after a
grace period, and back only once each one is gone. SIGTERM first matters: a command run on a
remote host through frerlab.remote.exec stops the remote command on SIGTERM, while SIGKILL
would leave it running there."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """True while `pid` runs. A zombie has ended; one that is a child of this process is
    reaped on the way."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not a child of this process
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def command_line(pid: int) -> list[bytes]:
    """The argv of process `pid`; empty when it is gone. Check it before stopping a process
    whose pid was written down earlier: the pid may belong to another process by now."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def stop(pids: list[int], timeout_s: float = 3.0) -> None:
    """Stops every process of `pids` (SIGTERM, then SIGKILL after `timeout_s`) and waits until
    it is gone; quiet about processes that ended already."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            while alive(pid) and time.monotonic() < deadline + 1.0:
                time.sleep(0.01)


def end(process: subprocess.Popen, timeout_s: float = 5.0) -> tuple[str | None, str | None]:
    """Stops child `process` if it still runs (SIGTERM, then SIGKILL after `timeout_s`) and
    returns what it printed on its pipes (stdout, stderr; None where it has no pipe)."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()
