"""One convention for every verb of `frerlab`: walks the parser and checks that each verb shows
an example of itself in its help, names its output -o/--output, and has --json (or is exempt,
with the reason); then runs the verbs that need no root with --json and parses what they print,
and checks that the README names every verb, and that every command line the docs and the
verbs' help texts show is one the parser takes."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest

from frerlab.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent

#: Verbs without --json, and why.
NO_JSON = {
    "dataplane monitor": "streams alarms while it runs; its result is the exit status",
    "testbed exec": "runs a command in a namespace and passes on its output and exit status",
    "net exec": "runs a command in a namespace and passes on its output and exit status",
}


def verbs(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(verb path, parser) of every verb, recursing into the subparsers."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield " ".join(path), parser
        return
    for name, sub in groups[0].choices.items():
        yield from verbs(sub, (*path, name))


VERBS = dict(verbs(build_parser()))


def test_the_walk_finds_every_area():
    assert {"demo", "sim run", "gen send", "dataplane monitor", "config validate", "testbed exec", "failover",
            "capture", "verify", "crosscheck", "bench show", "hosts push", "report"} <= set(VERBS)


@pytest.mark.parametrize("path", VERBS)
def test_every_verb_shows_an_example_of_itself(path):
    lines = [line.strip() for line in VERBS[path].format_help().splitlines()]
    assert any(line.startswith(f"frerlab {path}") for line in lines), f"`frerlab {path} --help` shows no example"


@pytest.mark.parametrize("path", VERBS)
def test_every_output_option_is_spelled_o_output(path):
    for action in VERBS[path]._actions:
        names = set(action.option_strings)
        if action.help == argparse.SUPPRESS:
            assert action.dest != "output" or names == {"--out"}, (path, names)
            continue
        assert "--out" not in names, f"{path}: --out is shown"
        if action.dest == "output" or "-o" in names or "--output" in names:
            assert names == {"-o", "--output"}, (path, names)


@pytest.mark.parametrize("path", VERBS)
def test_every_verb_that_prints_a_result_has_json(path):
    options = {s for a in VERBS[path]._actions for s in a.option_strings}
    assert ("--json" in options) != (path in NO_JSON), (path, NO_JSON.get(path))


def test_the_readme_names_every_verb():
    readme = (ROOT / "README.md").read_text()
    missing = [path for path in VERBS if f"frerlab {path}" not in readme]
    assert not missing


#: A shown command line with a placeholder or an alternative is a pattern, not a command.
PATTERN = re.compile(r"[\[\]…<>{}$|]|\.\.\.|\bN\b")


def shown_commands(text: str) -> list[str]:
    """The `frerlab ...` command lines of `text`'s code blocks (fenced or indented by 4) and
    example lines: each command of a line (split at ;, &, && and |), without a leading $, sudo,
    time or .venv/bin/, a trailing # comment or the description after 2 spaces; patterns left
    out. A line ending in a backslash goes on in the next."""
    found, fenced = [], False
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not (fenced or line.startswith("  ")):
            continue
        body = re.split(r"\s{2,}#|\s#\s", line.strip())[0]
        for part in re.split(r"\s*(?:;|&&?|\|\|?)\s*", body):
            part = re.sub(r"^(\$ |sudo |time |\.venv/bin/)+", "", part)
            command = re.split(r"\s{2,}", part)[0]
            if command.startswith("frerlab ") and not PATTERN.search(command):
                found.append(command)
    return found


def parse_problem(command: str) -> str | None:
    """None if the parser takes `command` ("frerlab ..."), else what it says."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(shlex.split(command)[1:])
    except SystemExit as stop:
        return None if stop.code == 0 else said.getvalue().strip().splitlines()[-1]
    return None


def test_every_command_line_the_docs_show_parses():
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    shown = [(doc.relative_to(ROOT), c) for doc in documents for c in shown_commands(doc.read_text())]
    assert len(shown) > 50
    refused = [f"{doc}: {command}: {problem}" for doc, command in shown if (problem := parse_problem(command))]
    assert refused == [], "\n".join(refused)


@pytest.mark.parametrize("path", VERBS)
def test_every_example_in_a_verbs_help_parses(path):
    examples = shown_commands(VERBS[path].format_help())
    assert examples, f"`frerlab {path} --help` shows no example to parse"
    assert [(c, p) for c in examples if (p := parse_problem(c))] == []


def test_a_command_line_the_parser_refuses_is_found():
    assert shown_commands("    frerlab sim run a.yaml -o out   # simulate\n    frerlab bench run [-o DIR]\n") == [
        "frerlab sim run a.yaml -o out"]
    assert "--nonsense" in parse_problem("frerlab sim run a.yaml --nonsense")
    assert parse_problem("frerlab sim run a.yaml -o out") is None


def run_json(capsys, argv: list[str]):
    """Runs `frerlab ARGV --json` in this process; its stdout parsed as one JSON document."""
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_sim_verbs_print_json(capsys):
    scenario = str(ROOT / "scenarios" / "seed000_frer_2hop.yaml")
    checked = run_json(capsys, ["sim", "check", scenario])
    assert checked["valid"] and checked["streams"] == 1 and checked["largest_run"]["events"] > 0
    ran = run_json(capsys, ["sim", "run", scenario])
    assert [s["stream"] for s in ran["streams"]] == ["udp"] and ran["run_info"]["events"] > 0


def test_config_verbs_print_json(capsys, tmp_path):
    exported = run_json(capsys, ["config", "export", str(ROOT / "configs" / "dataplane" / "sw2-eliminate.yaml"),
                                 "--format", "yang-json", "-o", str(tmp_path / "sw2.json")])
    assert exported["format"] == "yang-json" and json.loads(exported["text"]) == json.loads(
        (tmp_path / "sw2.json").read_text())
    node = tmp_path / "node.json"  # frerlab's own module: validated without IEEE modules at hand
    node.write_text(json.dumps({"frerlab-dataplane:node": json.loads(exported["text"])["frerlab-dataplane:node"]}))
    (tmp_path / "yang").mkdir()
    validated = run_json(capsys, ["config", "validate", str(node), "--yang-dir", str(tmp_path / "yang")])
    assert validated["valid"] and validated["top_level_members"] == 1
    imported = run_json(capsys, ["config", "import", str(tmp_path / "sw2.json")])
    assert imported["output"] is None and "name: sw2" in imported["text"]


def test_bench_verbs_print_json_and_the_old_out_still_works(capsys, tmp_path):
    planned = run_json(capsys, ["bench", "run", str(ROOT / "campaigns" / "quick.yaml"), "--dry-run"])
    assert planned["campaign"] == "quick" and planned["units"] and planned["estimate_s"] > 0
    assert main(["bench", "run", str(ROOT / "campaigns" / "quick.yaml"), "--out", str(tmp_path / "r"),
                 "--dry-run"]) == 0
    assert "campaign quick:" in capsys.readouterr().out
    summary = run_json(capsys, ["bench", "show", str(ROOT / "tests" / "fixtures" / "results" / "quick")])
    assert summary["groups"]


def test_import_prints_json(capsys):
    records = run_json(capsys, ["import", str(ROOT / "tests" / "fixtures" / "tools" / "iperf3_tcp.json")])
    assert records and records[0]["tool"] == "iperf3"
