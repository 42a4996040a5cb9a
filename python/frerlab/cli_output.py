"""The options every verb spells alike, and how a verb prints its result.

A verb writing a file or directory takes it as `-o/--output` (`add_output`); a verb printing a
result takes `--json` (`add_json`) and prints through `emit`: its text, or with --json one JSON
document on stdout and nothing else there (progress and notes go to stderr)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_output(parser: argparse.ArgumentParser, help: str, old: str | None = None, **options: Any) -> None:
    """Adds `-o/--output PATH` (into args.output); `old`, an earlier spelling such as "--out",
    still works for one release but is not shown by --help."""
    parser.add_argument("-o", "--output", type=Path, help=help, **options)
    if old is not None:
        parser.add_argument(old, dest="output", type=Path, help=argparse.SUPPRESS)


def add_json(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    """Adds `--json`, which `emit` obeys."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as one JSON document")


def emit(args: argparse.Namespace, result: Any, text: str | None = None) -> None:
    """Prints `result` as JSON (paths as strings) when --json was given, else `text` if any."""
    if args.json:
        print(json.dumps(result, indent=1, default=str))
    elif text is not None:
        print(text)


def down_verb(args: argparse.Namespace, what: str, running, down) -> int:
    """The body of every `... down [--name N | --all] [--json]` verb: `down(name)` for the
    named one (or each of `running()`), saying what it did unless --json, then the record of
    each name and whether it was up."""
    from frerlab.statefiles import down_all

    names = running() if args.all else [args.name]
    was_up = down_all(what, names, down, say=(lambda line: None) if args.json else print)
    emit(args, [{"name": name, "was_up": up} for name, up in was_up.items()])
    return 0
