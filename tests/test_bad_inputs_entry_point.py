"""The bad-input harness itself (tests/badinput.py). The other test_bad_inputs files run the
`frerlab` command's main() in the test's process; here a few refusals also run through the
installed `frerlab` command in a process of its own (its state directory from FRERLAB_RUN_DIR,
its current directory, its exit code and error output), and must come out as in-process. The
sandbox moves every state directory a module keeps and leaves nothing changed behind it."""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import signal
import sys
from pathlib import PurePath

import pytest

import frerlab
from badinput import STATE_PATHS, run_cli, run_entry_point, sandbox
from frerlab import names

#: (id, argv, texts of the error output): refusals the installed command and main() must agree on.
ENTRY_POINT_ROWS = [
    ("no-verb", [], []),
    ("unknown-verb", ["nosuchverb"], ["invalid choice: 'nosuchverb'"]),
    ("bad-name", ["dataplane", "down", "--name", "../x"], ["data plane name '../x' is not valid"]),
    ("relative-missing-file", ["sim", "check", "missing.yaml"], ["scenario file 'missing.yaml' does not exist"]),
    ("damaged-state-file", ["dataplane", "stats", "--name", "torn"], ["run/dataplane/torn.json' cannot be read"]),
]


@pytest.mark.parametrize("argv, expected", [r[1:] for r in ENTRY_POINT_ROWS], ids=[r[0] for r in ENTRY_POINT_ROWS])
def test_the_installed_frerlab_command_refuses_as_main_does_in_process(tmp_path, argv, expected):
    (tmp_path / "run" / "dataplane").mkdir(parents=True)
    (tmp_path / "run" / "dataplane" / "torn.json").write_text('{"name": "torn", "att')
    command = run_entry_point(argv, tmp_path / "run", cwd=tmp_path)
    assert command.returncode == 2 and "Traceback" not in command.stdout + command.stderr, command.stderr
    assert all(text in command.stderr for text in expected), command.stderr
    in_process = run_cli(argv, tmp_path / "run", cwd=tmp_path)
    assert (in_process.returncode, in_process.stdout, in_process.stderr) == \
        (command.returncode, command.stdout, command.stderr)


def test_the_sandbox_moves_every_state_directory_a_module_keeps():
    """Every module global that is a path in RUN_DIR (computed when the module was imported) is
    one the sandbox moves."""
    for module in pkgutil.walk_packages(frerlab.__path__, "frerlab."):
        importlib.import_module(module.name)
    frerlab_modules = [m for n, m in sys.modules.items() if n == "frerlab" or n.startswith("frerlab.")]
    kept = {(module.__name__, name) for module in frerlab_modules for name, value in vars(module).items()
            if isinstance(value, PurePath) and value.is_relative_to(names.RUN_DIR)}
    assert kept == {(module.__name__, name) for module, name, _ in STATE_PATHS}
    for module, name, below in STATE_PATHS:
        assert getattr(module, name) == names.RUN_DIR / below


def test_the_sandbox_leaves_nothing_changed_behind_it(tmp_path):
    cwd, environment = os.getcwd(), dict(os.environ)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)}
    paths = [getattr(module, name) for module, name, _ in STATE_PATHS]
    log_handlers = logging.getLogger().handlers[:]
    with sandbox(tmp_path / "run", cwd=tmp_path):
        assert os.getcwd() == str(tmp_path) and os.environ["FRERLAB_RUN_DIR"] == str(tmp_path / "run")
        for module, name, below in STATE_PATHS:
            assert getattr(module, name) == tmp_path / "run" / below
        os.chdir("/")
        os.environ["FRERLAB_SANDBOX_TEST"] = "1"
        for number in handlers:
            signal.signal(number, lambda *_: None)
        logging.getLogger().addHandler(logging.NullHandler())
    assert os.getcwd() == cwd and dict(os.environ) == environment
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert [getattr(module, name) for module, name, _ in STATE_PATHS] == paths
    assert logging.getLogger().handlers == log_handlers
