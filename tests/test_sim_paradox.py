"""docs/paradox.md regenerates: every zero-loss figure in its tables is re-measured from the
scenario file (and --set override) named in the same row, and its payload figure recomputed;
every model's loss per load is re-run from the grid file named in its column; the campaign it
prints is campaigns/paradox-decider.yaml, unchanged, and plans as the text says."""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

import pytest
import yaml

from frerlab import sim
from frerlab.bench.campaign import duration_text, plan, read_campaign, total_estimate_s
from frerlab.sim.api import run
from frerlab.yamlfile import parse_overrides
from frerlab.sim.sweeps import grid_points
from frerlab.units import rate_bps, time_ps

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "paradox.md"
PARADOX = ROOT / "scenarios" / "paradox"
GRIDS = PARADOX / "grids"
DECIDER = ROOT / "campaigns" / "paradox-decider.yaml"
# | set-up | `scenario` [`--set F=V`] | [one more column |] L2 | payload |
ROW = re.compile(r"^\|[^|]*\| `(scenarios/paradox/[\w.]+\.yaml)`(?: `--set ([^`]+)`)? \|(?:[^|]*\|)? "
                 r"([0-9.]+) \| ([0-9.]+) \|$")
GRID = re.compile(r"`(curve_\w+\.yaml)`")
PAYLOAD_PER_L2 = 1472 / 1518  # a 1518-byte frame carries 1472 bytes of UDP payload
FRAME_BITS = 1518 * 8


def lines() -> list[str]:
    return DOC.read_text().splitlines()


def figures() -> list[tuple[str, str | None, float, float]]:
    rows = [ROW.match(line) for line in lines()]
    return [(m.group(1), m.group(2), float(m.group(3)), float(m.group(4))) for m in rows if m]


def curve_table() -> tuple[list[str], list[list[str]]]:
    """The grid file of each model column and the table's rows (cells as text)."""
    text = lines()
    header = next(i for i, line in enumerate(text) if line.startswith("| Load") and GRID.search(line))
    cells = [c.strip() for c in text[header].strip("|").split("|")]
    grids = [m.group(1) if (m := GRID.search(c)) else "" for c in cells]
    rows = []
    for line in text[header + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return grids, rows


def test_the_write_up_has_all_zero_loss_rows() -> None:
    assert len(figures()) == 10


@pytest.mark.parametrize("scenario,override,figure,payload", figures(), ids=lambda v: str(v))
def test_zero_loss_figure_matches_the_simulation(scenario: str, override: str | None, figure: float,
                                                 payload: float) -> None:
    assert payload == pytest.approx(round(figure * PAYLOAD_PER_L2, 1), abs=0.05)
    overrides = parse_overrides(shlex.split(override) if override else [])
    rate = sim.zero_loss_rate(ROOT / scenario, "udp", "10Mbps", "1Gbps", "0.5Mbps", overrides)
    assert rate / 1e6 == pytest.approx(figure, abs=0.5)


def test_the_loss_table_names_six_models_and_eighteen_loads() -> None:
    grids, rows = curve_table()
    assert len([g for g in grids if g]) == 6
    assert len(rows) == 18 and all(len(r) == len(grids) for r in rows)


def _point_load(point: dict) -> float:
    """The mean offered load of a grid point in Mbit/s of payload: the rate, or for an on/off
    pattern at line rate (1 Gbit/s at L1) the whole frames of a burst over its period."""
    pattern = point.get("streams.udp.pattern")
    if pattern is None:
        return rate_bps(point["streams.udp.rate"]) * PAYLOAD_PER_L2 / 1e6
    on, off = time_ps(pattern["on"]), time_ps(pattern["off"])
    frames = math.ceil(on / ((1518 + 20) * 8 * 1000))  # one frame every 12.304 us while on
    return frames * FRAME_BITS / ((on + off) / 1e12) * PAYLOAD_PER_L2 / 1e6


@pytest.mark.parametrize("column", range(3, 9))
@pytest.mark.slow
def test_loss_per_load_matches_the_grid(column: int) -> None:
    grids, rows = curve_table()
    spec = yaml.safe_load((GRIDS / grids[column]).read_text())
    points = grid_points(spec["grid"])
    assert len(points) == len(rows)
    for point, row in zip(points, rows):
        assert _point_load(point) == pytest.approx(float(row[0]), abs=0.01), (grids[column], point)
        result = run(GRIDS / spec["scenario"], point)
        loss = float(result.streams.set_index("stream").loc["udp", "loss_ratio"]) * 100
        assert loss == pytest.approx(float(row[column]), abs=0.006), (grids[column], row[0])


def test_the_decider_campaign_file_plans_as_stated_and_the_doc_shows_it_unchanged() -> None:
    campaign, text = read_campaign(DECIDER)
    units = plan(campaign)
    doc = DOC.read_text()
    stated = re.search(r"(\d+) units, (\d+ min \d+ s)", doc)
    assert stated is not None
    assert int(stated.group(1)) == len(units)
    assert stated.group(2) == duration_text(total_estimate_s(campaign, units))
    assert (campaign.system.kind, campaign.system.mode, campaign.system.eliminate_at) == ("hosts", "frer", "sw2")
    # the curve's loads x repetitions, one sweep, one search
    curve, sweep, search = campaign.steps
    assert len(units) == len(curve.loads) * curve.repetitions + 1 + 1
    assert (sweep.kind, search.kind, search.search.trial_s) == ("threshold_sweep", "throughput", 30)
    shown = doc.split("The campaign is `campaigns/paradox-decider.yaml`.", 1)[1].split("```yaml\n", 1)[1]
    assert shown.split("```", 1)[0] == text, (
        "docs/paradox.md's copy of campaigns/paradox-decider.yaml differs")
