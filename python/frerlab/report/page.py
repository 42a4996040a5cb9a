"""The report as one HTML file that works offline, and every figure as PNG and SVG.

The page opens with the verdicts (report.summary), then the figures, the tables, the section
"FRER under attack" where the results hold attack runs or suites (report.attacks: each one's
settings, verdict, tables and figures), and a method section. It embeds the Vega, Vega-Lite and
Vega-Embed libraries once (vl-convert's bundle, no CDN) and each figure's specification; the
browser draws them (zoom and pan with the mouse, values on hover, series toggled by clicking the
legend). Tables sort by any column when its header is clicked and filter their rows by what is
typed above them; every number is written in one format. The method section lists, per results directory, where and how the results were
taken (host, kernel, tools, commit, the campaign file), the raw files they were derived from
(linked) and the files the report skipped, with why. Every link is relative to the page, so a
page shared or committed with its results names no file of the machine that built it.
vl-convert renders the same specifications to the image files, so the page and the images show
the same data drawn the same way."""

from __future__ import annotations

import html
import json
import os
import time
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert

from frerlab import __version__
from frerlab.files import write_atomic
from frerlab.report.attacks import Section
from frerlab.report.chart import Figure
from frerlab.report.measures import system_text
from frerlab.report.sources import Source
from frerlab.report.tables import Cell, Table

#: The Vega-Lite version Altair writes, for the bundle and the image renderer alike.
VL_VERSION = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
#: Raw files listed per results directory before the list is cut (the directory holds them all).
RAW_FILES_SHOWN = 200

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1400px; padding: 1em 2em; color: #222; }
h1 { margin-bottom: .2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
figure { margin: 1.5em 0; } figcaption { color: #444; max-width: 820px; }
.files { font-size: 13px; color: #555; }
table { border-collapse: collapse; font-size: 13px; margin: .5em 0 1.5em; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.filter { margin: .2em 0; font-size: 13px; width: 20em; }
.notice { background: #fff4d6; border-left: 4px solid #c98a00; padding: .5em .8em; }
.verdict { background: #f3f3f3; border-left: 4px solid #6b6b6b; padding: .5em .8em; }
table.facts th { cursor: auto; text-align: left; }
td.text { white-space: normal; max-width: 32em; }
pre { background: #f7f7f7; padding: .6em; overflow: auto; font-size: 12px; }
nav a { margin-right: 1em; }
"""

#: Draws every figure and records its view (window.frerlabViews) for whoever inspects the page.
DRAW = """
window.frerlabViews = {};
window.frerlabErrors = [];
window.frerlabReady = Promise.all(Object.entries(FIGURES).map(([id, spec]) =>
  vegaEmbed('#chart-' + id, spec, {renderer: 'svg', actions: false})
    .then(result => { window.frerlabViews[id] = result.view; })
    .catch(err => { window.frerlabErrors.push(id + ': ' + err); console.error(id, err); })));
"""

#: Sorts a table by the clicked column: numbers numerically, text alphabetically, blanks last.
SORT = r"""
document.querySelectorAll('table.sortable th').forEach(th => th.addEventListener('click', () => {
  const column = th.cellIndex, body = th.closest('table').tBodies[0];
  const ascending = th.getAttribute('aria-sort') !== 'ascending';
  th.closest('tr').querySelectorAll('th').forEach(h => h.removeAttribute('aria-sort'));
  th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
  const key = row => row.cells[column].dataset.value ?? row.cells[column].textContent;
  const rows = Array.from(body.rows).sort((a, b) => {
    const x = key(a), y = key(b);
    if (x === '' || y === '') return (x === '') - (y === '');
    const nx = Number(x), ny = Number(y);
    const order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
    return ascending ? order : -order;
  });
  rows.forEach(row => body.appendChild(row));
}));
document.querySelectorAll('input.filter').forEach(input => input.addEventListener('input', () => {
  const words = input.value.toLowerCase().split(/\s+/).filter(w => w);
  document.getElementById(input.dataset.table).tBodies[0].querySelectorAll('tr').forEach(row => {
    const text = row.textContent.toLowerCase();
    row.hidden = !words.every(w => text.includes(w));
  });
}));
"""


def write_images(figures: list[Figure], images: Path) -> list[Path]:
    """`ID.png` and `ID.svg` of every figure into `images`; returns the files."""
    images.mkdir(parents=True, exist_ok=True)
    written = []
    for f in figures:
        spec = f.spec()
        for suffix, data in ((".svg", vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION)),
                             (".png", vl_convert.vegalite_to_png(spec, vl_version=VL_VERSION, scale=2))):
            write_atomic(images / f"{f.id}{suffix}", data)
            written.append(images / f"{f.id}{suffix}")
    return written


def write_page(out: Path, sources: list[Source], figures: list[Figure], tables: list[Table], images: Path | None,
               verdicts: list[Table], attacks: list[Section]) -> None:
    """The self-contained report page; `figures` are those outside the attack sections."""
    e = html.escape
    parts = [("verdicts", "Verdicts"), ("figures", "Figures"), ("tables", "Tables")]
    parts += [("attacks", "FRER under attack")] if attacks else []
    nav = "".join(f'<a href="#{e(x)}">{e(y)}</a>' for x, y in (*parts, ("method", "Method and raw data")))
    head = (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>frerlab report</title>"
            f"<style>{STYLE}</style></head><body><h1>frerlab report</h1>"
            f"<p>Built {e(time.strftime('%Y-%m-%d %H:%M:%S %Z'))} by frerlab {e(__version__)} from stored results "
            f"only: {', '.join(e(f'{s.label} ({s.kind}, {_from_page(s.path, out)})') for s in sources)}.</p>"
            f"<nav>{nav}</nav>")
    body = ['<h2 id="verdicts">Verdicts</h2>', _systems(sources)]
    body += [_table(t) for t in verdicts] or ["<p>These results hold no benchmark with a verdict (campaign or "
                                              "import); the figures and tables below show what they hold"
                                              + (", and each attack's verdict is in FRER under attack" if attacks
                                                 else "") + ".</p>"]
    body.append('<h2 id="figures">Figures</h2>')
    if not figures:
        body.append("<p>These results hold nothing to plot" + (" outside FRER under attack" if attacks else "")
                    + ".</p>")
    body += [_figure(f, images, out) for f in figures]
    body.append('<h2 id="tables">Tables</h2>')
    body += [_table(t) for t in tables]
    if attacks:
        body.append('<h2 id="attacks">FRER under attack</h2>')
        body += [_attack(a, images, out) for a in attacks]
    body.append('<h2 id="method">Method and raw data</h2>')
    body += [_method(s, out) for s in sources]
    drawn = [*figures, *(f for a in attacks for f in a.figures)]
    specs = json.dumps({f.id: f.spec() for f in drawn}).replace("</", "<\\/")
    bundle = vl_convert.javascript_bundle(vl_version=VL_VERSION).replace("</script", "<\\/script")
    scripts = f"<script>{bundle}</script><script>const FIGURES = {specs};{DRAW}{SORT}</script>"
    write_atomic(out, head + "".join(body) + scripts + "</body></html>")


def _figure(f: Figure, images: Path | None, out: Path) -> str:
    e = html.escape
    files = ""
    if images:
        link = e(_from_page(images / f.id, out))
        files = f'<div class="files">images: <a href="{link}.png">{link}.png</a>, <a href="{link}.svg">.svg</a></div>'
    return (f'<figure id="fig-{e(f.id)}" data-series="{len(f.series)}" data-points="{len(f.points)}">'
            f'<div class="chart" id="chart-{e(f.id)}"></div><figcaption><b>{e(f.title)}.</b> '
            f"{e(f.caption)}</figcaption>{files}</figure>")


def _attack(a: Section, images: Path | None, out: Path) -> str:
    """One attack run's or suite's part of FRER under attack: what it was, its verdict, its
    figures and tables."""
    e = html.escape
    facts = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in a.facts)
    verdict = f'<p class="verdict"><b>Verdict:</b> {e(a.verdict)}</p>' if a.verdict else ""
    return (f'<section id="{e(a.id)}"><h3>{e(a.title)}</h3><p>{e(a.intro)}</p>'
            f'<table class="facts"><tbody>{facts}</tbody></table>{verdict}'
            + "".join(_figure(f, images, out) for f in a.figures) + "".join(_table(t) for t in a.tables) + "</section>")


def _systems(sources: list[Source]) -> str:
    """A notice when the results compared were measured on different systems."""
    systems = {s.label: system_text(s) for s in sources if s.units}
    if len(set(systems.values())) < 2:
        return ""
    return ('<p class="notice" id="systems-differ"><b>These results were measured on different systems</b>, so '
            "rates are compared in percent of each one's own line rate: "
            + "; ".join(html.escape(f"{k}: {v}") for k, v in systems.items()) + ".</p>")


def _from_page(path: Path, out: Path) -> str:
    """`path` as the page at `out` names it: relative to the page's directory, so that a page
    shared or committed with its results names no file of the machine that built it."""
    return os.path.relpath(path.resolve(), out.resolve().parent)


def number(value: float) -> str:
    """Every number of every table in one format: integers in full with thousands separated,
    others with four significant digits (scientific only below 0.0001 or from 10^9)."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if value != 0 and (abs(value) < 1e-4 or abs(value) >= 1e9):
        return f"{value:.3e}"
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.1f}"


def _cell(value: Any) -> str:
    e = html.escape
    if isinstance(value, Cell):
        sort = "" if value.value is None else repr(value.value)
        title = f' title="{e(value.title)}"' if value.title else ""
        return f'<td class="text" data-value="{sort}"{title}>{e(value.text)}</td>'
    if value is None:
        return '<td data-value=""></td>'
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f'<td class="text">{e(str(value))}</td>'
    return f'<td class="num" data-value="{value!r}">{number(value)}</td>'


def _table(t: Table) -> str:
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in t.columns)
    rows = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in t.rows)
    return (f'<h3 id="table-{e(t.id)}">{e(t.title)}</h3><p>{e(t.caption)}</p>'
            f'<input type="search" class="filter" data-table="{e(t.id)}" placeholder="filter rows: words to match" '
            f'aria-label="filter {e(t.title)}"><table class="sortable" id="{e(t.id)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _method(s: Source, out: Path) -> str:
    e = html.escape
    keys = ("campaign", "created", "start", "host", "kernel", "cpu", "cpus", "frerlab", "commit", "python", "tools",
            "testbed", "schedule", "scenario", "run")
    facts = {k: s.meta[k] for k in keys if k in s.meta}
    for when in ("created", "start"):
        if isinstance(facts.get(when), (int, float)):
            facts[when] = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(facts[when]))
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
                   for k, v in facts.items())
    campaign = (f"<details><summary>campaign file</summary><pre>{e(s.campaign_text)}</pre></details>"
                if s.campaign_text else "")
    shown = s.raw_files[:RAW_FILES_SHOWN]
    more = f"<li>… and {len(s.raw_files) - len(shown)} more in the directory</li>" if len(s.raw_files) > len(shown) else ""
    raw = (f"<details><summary>raw files ({len(s.raw_files)}) under {e(_from_page(s.path, out))}</summary><ul>"
           + "".join(f'<li><a href="{e(_from_page(s.path / p, out))}">{e(p)}</a></li>' for p in shown) + more
           + "</ul></details>")
    skipped = (f'<p class="skipped"><b>Skipped {len(s.skipped)} file(s)</b> (frerlab reads only regular files inside '
               "the results directory, of bounded size):</p><ul>" + "".join(f"<li>{e(why)}</li>" for why in s.skipped)
               + "</ul>" if s.skipped else "")
    return (f"<h3>{e(s.label)}</h3><p>{e(s.kind)} results in {e(_from_page(s.path, out))}</p>{skipped}"
            f"<table><tbody>{rows}</tbody></table>{campaign}{raw}")

