"""What every tool driver shares: finding the tool (and saying how to install it), running it
(optionally inside a network namespace via a command prefix), and clean shutdown of servers."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from frerlab.errors import ToolFailed, UsageError
from frerlab.processes import end


class ToolMissing(UsageError):
    """The tool is not installed; the message says how to install it."""


class ParseError(ValueError):
    """A tool's output could not be read; the message names the file and what was expected."""


@dataclass(frozen=True)
class Tool:
    """An external program and the Debian package that provides it."""

    name: str
    executable: str
    debian_package: str

    def require(self) -> str:
        """Path of the executable; raises ToolMissing with the install command if absent."""
        path = shutil.which(self.executable)
        if path is None:
            raise ToolMissing(
                f"{self.name} is not installed (no {self.executable!r} on PATH): "
                f"install it with `apt-get install {self.debian_package}` (Debian/Ubuntu)"
            )
        return path


def run(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Runs `argv` to completion, capturing text output; raises ToolFailed on a non-zero exit."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"{argv[0]} did not finish within {timeout_s:.0f} s: {' '.join(argv)}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-500:]
        raise ToolFailed(f"{' '.join(argv)} exited with status {done.returncode}: {tail}")
    return done


def wait_for_udp_port(prefix: Sequence[str], port: int, timeout_s: float = 10.0) -> None:
    """Waits until something listens on UDP `port` where `prefix` runs commands (e.g. inside a
    namespace); raises ToolFailed after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = subprocess.run([*prefix, "ss", "-Hnul", f"sport = :{port}"], capture_output=True, text=True)
        if done.stdout.strip():
            return
        time.sleep(0.05)
    raise ToolFailed(f"nothing listened on UDP port {port} within {timeout_s:.0f} s")


def wait_for_receiver(prefix: Sequence[str], port: int, mode: str = "udp", interface: str | None = None,
                      timeout_s: float = 10.0) -> None:
    """Waits until a `frerlab gen recv` of `mode` listens where `prefix` runs commands: a UDP
    socket on `port` (udp), an AF_PACKET socket (raw), or an XDP program on `interface` (xdp,
    attached as the last step of the receiver's set-up); raises ToolFailed after `timeout_s`."""
    if mode == "udp":
        wait_for_udp_port(prefix, port, timeout_s)
        return
    check = [*prefix, "ip", "-d", "link", "show", "dev", str(interface)] if mode == "xdp" else [*prefix, "ss", "-Hn0"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = subprocess.run(check, capture_output=True, text=True)
        if ("prog/xdp" in done.stdout) if mode == "xdp" else done.stdout.strip():
            return
        time.sleep(0.05)
    raise ToolFailed(f"no {mode} receiver was ready on {interface or 'any interface'} within {timeout_s:.0f} s")


class Background:
    """A server process that is stopped (terminate, then kill) when the `with` block ends."""

    def __init__(self, argv: Sequence[str], own_group: bool = False) -> None:
        """`own_group`: the process gets a process group of its own, so a Ctrl-C at the terminal
        reaches only frerlab, which then stops it."""
        self.argv = list(argv)
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        process_group=0 if own_group else None)

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> str:
        """Stops the process (if still running) and returns what it printed."""
        out, err = end(self.process, timeout_s=3)
        return (out or "") + (err or "")
