"""docs/paradox.md regenerates: every zero-loss figure in its tables is re-measured from the
scenario file (and --set override) named in the same row."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from frerlab import sim
from frerlab.sim.cli import parse_overrides

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "paradox.md"
ROW = re.compile(r"^\|[^|]*\| `(scenarios/paradox/[\w.]+\.yaml)`(?: `--set ([^`]+)`)? \|(?:[^|]*\|)? ([0-9.]+) \|$")


def figures() -> list[tuple[str, str | None, float]]:
    rows = [ROW.match(line) for line in DOC.read_text().splitlines()]
    return [(m.group(1), m.group(2), float(m.group(3))) for m in rows if m]


def test_the_write_up_has_all_three_experiments() -> None:
    assert len(figures()) == 7


@pytest.mark.parametrize("scenario,override,figure", figures(), ids=lambda v: str(v))
def test_zero_loss_figure_matches_the_simulation(scenario: str, override: str | None, figure: float) -> None:
    overrides = parse_overrides(shlex.split(override) if override else [])
    rate = sim.zero_loss_rate(ROOT / scenario, "udp", "10Mbps", "1Gbps", "0.5Mbps", overrides)
    assert rate / 1e6 == pytest.approx(figure, abs=0.5)
