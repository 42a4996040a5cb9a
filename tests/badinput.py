"""The bad-input harness: runs the real `frerlab` command as a subprocess, with every state
directory (FRERLAB_RUN_DIR) in a sandbox, and checks that a bad input is refused cleanly: the
expected exit code (2: usage error), a message naming the bad value, no traceback.

    from badinput import assert_refused
    assert_refused(["dataplane", "down", "--name", "../x"], ["'../x' is not valid"], run_dir=tmp_path)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "frerlab.cli"]


def run_cli(argv: list[str], run_dir: Path, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`frerlab ARGV` with its state directories under `run_dir`; its exit code and output."""
    env = {**os.environ, "FRERLAB_RUN_DIR": str(run_dir)}
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def assert_refused(argv: list[str], expected: list[str], run_dir: Path, code: int = 2,
                   cwd: Path | None = None, never: list[str] = ()) -> str:
    """Runs `frerlab ARGV` and asserts it exits with `code`, its error output contains every
    text of `expected` (the bad value, what is valid) and none of `never`, and nothing
    printed a traceback. Returns the error output."""
    result = run_cli(argv, run_dir, cwd)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, f"frerlab {argv} printed a traceback:\n{output}"
    assert result.returncode == code, f"frerlab {argv} exited {result.returncode}, not {code}:\n{output}"
    for text in expected:
        assert text in result.stderr, f"frerlab {argv}: {text!r} not in its message:\n{result.stderr}"
    for text in never:
        assert text not in output, f"frerlab {argv} printed {text!r}:\n{output}"
    return result.stderr
