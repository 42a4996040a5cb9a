"""The bad-input harness: runs the `frerlab` command's main() in the test's own process with every
state directory in a sandbox, and checks that a bad input is refused cleanly: the expected exit
code (2: usage error), a message naming the bad value, no traceback (an exception escaping
main() is what the command would print as one, and fails the test the same way).

    from badinput import assert_refused
    assert_refused(["dataplane", "down", "--name", "../x"], ["'../x' is not valid"], run_dir=tmp_path)

In-process runs start no Python and import nothing per case. What a run could leave behind is
put back afterwards: the state directories, the environment, the current directory, Python's
signal handlers, the root logger's handlers. frerlab's modules compute their state directories
from names.RUN_DIR when imported, so the sandbox moves each of them (STATE_PATHS; a test checks
that no other module keeps one). `run_entry_point` runs the installed `frerlab` command as a
subprocess, for the few tests of the real entry point.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from frerlab import bpfsys, names
from frerlab.cli import main
from frerlab.dataplane import control, node
from frerlab.impair import path as impair_path
from frerlab.net import namespaces as net_namespaces
from frerlab.testbed import bed

#: Lines of a file that is not a configuration (shaped like /etc/shadow); no error may show them.
SECRET = ["root:$y$j9T$SecretSaltSecret$HashHashHashHashHashHashHashHashHash:19700:0:99999:7:::",
          "daemon:*:19700:0:99999:7:::",
          "api-token: 5f0e8b1c2d3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c",
          "name: a-secret-value-much-longer-than-any-token-frerlab-shows"]
#: The installed `frerlab` command (the project's entry point) in the interpreter's environment.
ENTRY_POINT = Path(sys.executable).with_name("frerlab")
#: Every module global holding a state directory: (module, global, its path below RUN_DIR).
STATE_PATHS = [
    *((module, "RUN_DIR", ".") for module in (names, bpfsys, impair_path, control, bed, net_namespaces)),
    (bpfsys, "BPFFS", "bpf"),
    (node, "PIN_ROOT", "bpf"),
    (impair_path, "PIN_ROOT", "bpf"),
    (impair_path, "STATE_ROOT", "impair"),
    (control, "STATE_DIR", "dataplane"),
    (bed, "STATE_DIR", "testbed"),
    (net_namespaces, "STATE_DIR", "net"),
]


class _Hung(BaseException):
    """Raised in a run that takes longer than its timeout (main() catches no BaseException)."""


def _raise_hung(signum, frame) -> None:
    raise _Hung


@contextmanager
def sandbox(run_dir: Path, cwd: Path | None = None) -> Iterator[None]:
    """Every state directory under `run_dir` (FRERLAB_RUN_DIR too, for child processes) and `cwd`
    (default: unchanged) the current directory; on the way out these, the environment, Python's
    signal handlers and the root logger's handlers are as they were."""
    handlers = {s: signal.getsignal(s) for s in signal.valid_signals()}
    environment = dict(os.environ)
    root_logger = logging.getLogger()
    log_handlers, log_level = root_logger.handlers[:], root_logger.level
    with pytest.MonkeyPatch.context() as patch:
        for module, name, below in STATE_PATHS:
            patch.setattr(module, name, run_dir / below)
        patch.setenv("FRERLAB_RUN_DIR", str(run_dir))
        if cwd is not None:
            patch.chdir(cwd)
        try:
            yield
        finally:
            for number, handler in handlers.items():
                if handler is not None and signal.getsignal(number) is not handler:
                    signal.signal(number, handler)
            os.environ.clear()
            os.environ.update(environment)
            root_logger.handlers[:], root_logger.level = log_handlers, log_level


@contextmanager
def _captured_fd(fd: int) -> Iterator[io.BufferedRandom]:
    """What is written to file descriptor `fd` (by child processes, native code) goes to the
    temporary file yielded."""
    with tempfile.TemporaryFile() as file:
        saved = os.dup(fd)
        os.dup2(file.fileno(), fd)
        try:
            yield file
        finally:
            os.dup2(saved, fd)
            os.close(saved)


def run_cli(argv: list[str], run_dir: Path, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`frerlab ARGV` run in this process by frerlab.cli.main, with its state directories under
    `run_dir` and `cwd` as the current directory: its exit code and output (an exception
    escaping main() as the traceback Python would print, exit code 1)."""
    sys.stdout.flush()
    sys.stderr.flush()
    out, err = io.StringIO(), io.StringIO()
    with sandbox(run_dir, cwd), _captured_fd(1) as fd_out, _captured_fd(2) as fd_err:
        with redirect_stdout(out), redirect_stderr(err):
            signal.signal(signal.SIGALRM, _raise_hung)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's usage errors, --help, --version
                code = exit_.code
            except _Hung:
                raise AssertionError(f"frerlab {argv} still ran after {timeout} s") from None
            except Exception:
                traceback.print_exc()
                code = 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        fd_out.seek(0)
        fd_err.seek(0)
        stdout = out.getvalue() + fd_out.read().decode(errors="replace")
        stderr = err.getvalue() + fd_err.read().decode(errors="replace")
    return subprocess.CompletedProcess(["frerlab", *argv], code or 0, stdout, stderr)


def run_entry_point(argv: list[str], run_dir: Path, cwd: Path | None = None,
                    timeout: float = 120) -> subprocess.CompletedProcess:
    """`frerlab ARGV` run as the installed command in a process of its own, with its state
    directories under `run_dir`: its exit code and output."""
    env = {**os.environ, "FRERLAB_RUN_DIR": str(run_dir)}
    return subprocess.run([str(ENTRY_POINT), *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=timeout)


def assert_refused(argv: list[str], expected: list[str], run_dir: Path, code: int = 2,
                   cwd: Path | None = None, never: list[str] = ()) -> str:
    """Runs `frerlab ARGV` (in this process) and asserts it exits with `code`, its error output
    contains every text of `expected` (the bad value, what is valid) and none of `never`, and
    nothing printed a traceback. Returns the error output."""
    result = run_cli(argv, run_dir, cwd)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, f"frerlab {argv} printed a traceback:\n{output}"
    assert result.returncode == code, f"frerlab {argv} exited {result.returncode}, not {code}:\n{output}"
    for text in expected:
        assert text in result.stderr, f"frerlab {argv}: {text!r} not in its message:\n{result.stderr}"
    for text in never:
        assert text not in output, f"frerlab {argv} printed {text!r}:\n{output}"
    return result.stderr
