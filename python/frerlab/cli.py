"""The `frerlab` command: one tool, verbs by area.

Each area module exposes `register(subparsers)`, adding its verbs; a verb's handler is stored as
`func` on its parser and returns the process exit code. Errors the user can fix are raised as
`UsageError` and printed as one line naming the bad value and what would be valid (exit 2); a
failure of the system underneath (a tool, the kernel, a file that cannot be written) is printed
as one line too (exit 4). docs/errors.md lists the exit codes.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from frerlab import __version__
from frerlab.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, ToolFailed, UsageError

# Modules that add verbs, in the order `frerlab --help` lists them.
AREAS = [
    "frerlab.demo",
    "frerlab.sim.cli",
    "frerlab.net.cli",
    "frerlab.traffic.cli",
    "frerlab.dataplane.cli",
    "frerlab.config.cli",
    "frerlab.testbed.cli",
    "frerlab.attack.cli",
    "frerlab.capture.cli",
    "frerlab.crosscheck.cli",
    "frerlab.bench.cli",
    "frerlab.remote.cli",
    "frerlab.report.cli",
]

EPILOG = """examples:
  frerlab demo                 run the main job and print what FRER did
  frerlab demo --help          options of one verb
"""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every area's verbs."""
    parser = argparse.ArgumentParser(
        prog="frerlab",
        description="An open lab for IEEE 802.1CB FRER and TSN network performance.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"frerlab {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in AREAS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `frerlab` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except UsageError as err:
        print(f"frerlab: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, subprocess.SubprocessError, ToolFailed) as err:
        print(f"frerlab: failed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("frerlab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
