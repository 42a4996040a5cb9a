"""The suite's own helpers (conftest): a child started with `interruptible` stops on Ctrl-C
(SIGINT) also when the suite itself runs with SIGINT ignored, as a shell starts a background job."""

from __future__ import annotations

import signal
import subprocess
import sys

from conftest import interruptible

WAITS = [sys.executable, "-c", "import time; print('waiting', flush=True); time.sleep(60)"]


def test_an_interruptible_child_stops_on_sigint_when_the_suite_ignores_it():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `setsid bash .ci/run &` starts the suite
    try:
        with interruptible(WAITS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
            assert child.stdout.readline() == "waiting\n"
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=10)
    finally:
        signal.signal(signal.SIGINT, before)
    assert child.returncode == -signal.SIGINT and "KeyboardInterrupt" in err, err
