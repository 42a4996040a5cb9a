"""`frerlab report`: stored results (campaigns, imports, fail-over runs, simulator runs, attack
runs and suites) as one self-contained, interactive HTML page and every figure as PNG and SVG,
never re-running anything. sources reads the directories, measures says what each unit measured
and with what interval, summary gives the verdicts the page opens with, figures builds each
figure's data (chart draws it in one visual language), tables the statistics and comparisons,
attacks the section "FRER under attack", page writes the files.

    from frerlab.report import write_report
    write_report([Path("results/quick")], Path("report.html"), images=Path("report-images"))
"""

from __future__ import annotations

import sys
from pathlib import Path


def write_report(dirs: list[Path], out: Path, images: Path | None = None,
                 line_rate_bps: float | None = None) -> list:
    """The report of `dirs` into `out` (and the images into `images`); returns its figures
    (frerlab.report.figures.Figure). Each file the report skipped is named on stderr (and in
    the page) with why. The modules load here, not when the package is imported:
    every `frerlab` command imports the package's cli, and Altair, vl-convert and SciPy would
    add half a second to each start."""
    from frerlab.report import attacks, figures, page, sources, summary, tables

    found = sources.load_all(dirs)
    for s in found:
        for why in s.skipped:
            print(f"report: skipped {why}", file=sys.stderr)
    drawn = figures.build(found, line_rate_bps)
    under_attack = attacks.build(found)
    if images is not None:
        page.write_images([*drawn, *(f for a in under_attack for f in a.figures)], images)
    page.write_page(out, found, drawn, tables.build(found, line_rate_bps), images,
                    summary.build(found, line_rate_bps), under_attack)
    return [*drawn, *(f for a in under_attack for f in a.figures)]
