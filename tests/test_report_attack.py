"""`frerlab report` of attack results: a real attack run (inject-after-reset on a testbed, a
2.5 s stream) and a real attack suite (inject-ahead and inject-far, vector recovery, without
and with the guard), made once for the module, become the page's "FRER under attack" section:
the suite's settings, its groups and runs with the numbers its files hold, ranges and n honest
when runs differ, fields a newer suite adds shown and not refused, the harm per attack and the
run's harm over stream time as figures; a damaged file is refused naming it and the field; a
real Chromium, offline, draws every figure and sorts and filters the tables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_attack import RESET_TIMEOUT_MS, SETS, STREAM, needs_bpf
from test_report import CHROMIUM, QUICK, SCREENSHOTS, offline_page

from frerlab.attack import run, spec, suite
from frerlab.errors import UsageError
from frerlab.report import attacks, write_report
from frerlab.report.sources import load_all
from frerlab.report.tables import Cell
from frerlab.testbed import bed


@pytest.fixture(scope="module")
def attacked(tmp_path_factory) -> dict[str, Path]:
    """A real attack run's directory and a real attack suite's."""
    where = tmp_path_factory.mktemp("attacked")
    with bed.Testbed(name=f"rpa{os.getpid() % 100000}", algorithm="vector", reset_timeout_ms=RESET_TIMEOUT_MS) as tb:
        run.run(tb.name, spec.attack("inject-after-reset", SETS["inject-after-reset"]), "a", STREAM, where / "run")
    suite.run_suite(where / "suite", ["inject-ahead", "inject-far"], ["vector"], STREAM,
                    testbed={"reset_timeout_ms": RESET_TIMEOUT_MS}, guard=suite.Guard(), say=lambda _: None)
    return {"run": where / "run", "suite": where / "suite"}


def rows_of(table) -> list[dict]:
    return [dict(zip(table.columns, r)) for r in table.rows]


def value(cell):
    """A cell's number (a Cell sorts by its value)."""
    return cell if cell is None or isinstance(cell, (int, float)) else cell.value


def text(cell) -> str:
    return cell.text if isinstance(cell, Cell) else str(cell)


@needs_bpf
def test_a_run_shows_its_values_verdict_harm_counters_and_timeline(attacked, tmp_path):
    result = json.loads((attacked["run"] / "result.json").read_text())
    out = tmp_path / "r.html"
    drawn = {f.id: f for f in write_report([attacked["run"]], out, tmp_path / "images")}
    (section,) = attacks.build(load_all([attacked["run"]]))
    assert section.verdict == result["verdict"]
    facts = dict(section.facts)
    assert facts["attack"].startswith(f"inject-after-reset ({result['values']})") and facts["attacked path"] == "a"
    assert f"reset timeout {RESET_TIMEOUT_MS / 1000:g} s" in facts["recovery"]
    harm, counters = section.tables
    listener = {r["count"]: r["frames"] for r in rows_of(harm)}
    d = result["listener"]
    assert (listener["lost to the attack"], listener["lost to the outage"], listener["forged delivered"],
            listener["sent"]) == (d["lost_to_attack"], d["lost_to_outage"], d["forged"], d["expected"])
    recovery = {r["counter"]: r for r in rows_of(counters) if r["where"] == "recovery function"}
    assert recovery["rogue"]["change"] == result["recovery"]["rogue_packets"]
    assert recovery["rogue"]["shows it"] == ("yes" if "rogue" in result["detected_by"] else "")
    # the timeline: each bin's counts, one panel per count, the attack and the outage's cuts shaded
    figure = drawn["attack-timeline-run"]
    lost = [(p["x"], p["y"]) for p in figure.points if p["panel"] == "genuine lost"]
    assert lost == [(i["t_s"], i["lost"]) for i in result["intervals"]]
    assert figure.panels == ["genuine lost", "duplicates", "forged delivered"]
    bands = {(b["label"], b["x"]) for b in figure.rows if b["role"] == "band"}
    assert ("attack", result["attack_s"][0]) in bands and any(label.startswith("cut a") for label, _ in bands)
    binned = sum(i["forged"] for i in result["intervals"])
    assert (binned < d["forged"]) == ("forged frames delivered are in no bin" in figure.caption)
    assert (tmp_path / "images" / "attack-timeline-run.png").read_bytes()[:4] == b"\x89PNG"
    html = out.read_text()
    assert 'id="attacks"' in html and 'href="#attacks"' in html and 'id="fig-attack-timeline-run"' in html
    method = html[html.index('id="method"'):html.index("<script>")]
    for raw in ("send.json", "recv.json", "inject.json", "counters.json"):
        assert f">{raw}</a>" in method, raw
    assert ">result.json</a>" not in method


@needs_bpf
def test_a_run_on_a_testbed_with_individual_recovery_shows_that_function_s_counters(attacked, tmp_path):
    copy = tmp_path / "individual"
    shutil.copytree(attacked["run"], copy)
    result = json.loads((copy / "result.json").read_text())
    result["individual"] = {k: 0 for k in result["recovery"]} | {"tagless_packets": 40}
    result["detected_by"].append("tagless at p1's individual recovery")
    (copy / "result.json").write_text(json.dumps(result))
    (section,) = attacks.build(load_all([copy]))
    rows = {r["counter"]: r for r in rows_of(section.tables[1]) if r["where"] == "individual recovery, path a"}
    assert (rows["tagless"]["change"], rows["tagless"]["shows it"], rows["rogue"]["shows it"]) == (40, "yes", "")


@needs_bpf
def test_a_suite_shows_its_settings_groups_runs_and_the_harm_per_attack(attacked, tmp_path):
    table = json.loads((attacked["suite"] / "suite.json").read_text())
    drawn = {f.id: f for f in write_report([attacked["suite"]], tmp_path / "s.html")}
    (section,) = attacks.build(load_all([attacked["suite"]]))
    facts = dict(section.facts)
    assert facts["stream"].startswith(f"{STREAM.rate_fps:,} frames/s of {STREAM.frame_size} bytes for "
                                      f"{STREAM.duration_s:g} s")
    assert "more than 20 rogue frames in 0.05 s" in facts["guard"]
    assert f"reset timeout {RESET_TIMEOUT_MS} ms" in facts["testbed"]
    groups, runs = section.tables
    shown = {(r["attack"], r["defence"]): r for r in rows_of(groups)}
    assert set(shown) == {(a, d) for a in ("inject-ahead", "inject-far") for d in ("none", "guard")}
    for g in table["groups"]:
        row = shown[g["attack"], g["defence"]]
        assert row["n"] == g["n"] == 1
        for key, name in attacks.GROUP_COUNTS.items():
            if g[key] is not None:
                assert value(row[name]) == g[key][1] and text(row[name]) == f"{g[key][1]:,g}", (key, row)
    for r in rows_of(runs):  # every run's own result.json, as the suite's runs table shows it
        result = json.loads((attacked["suite"] / r["directory"] / "result.json").read_text())
        assert (r["genuine lost"], r["forged delivered"], r["verdict"].title) == (
            result["listener"]["lost_to_attack"], result["listener"]["forged"], result["verdict"])
        assert text(r["verdict"]) == ("NO HARM" if result["verdict"].startswith("NO HARM") else "HARM")
    figure = drawn["attack-harm-suite"]
    assert figure.x_names == ["inject-ahead", "inject-far"] and figure.series == ["none", "guard"]
    points = {(p["x"], p["series"], p["panel"]): p for p in figure.points}
    assert len(points) == len(table["groups"]) * 3
    for g in table["groups"]:
        for key, name in attacks.HARM.items():
            p = points[g["attack"], g["defence"], name]
            assert (p["y"], p["n"], p["lo"]) == (g[key][1], "1", None)
    assert "Every point is one run (n = 1)" in figure.caption
    raw = load_all([attacked["suite"]])[0].raw_files
    assert "vector/inject-ahead/guard/r1/guard.json" in raw and "vector/inject-far/none/r1/recv.json" in raw
    assert not {"suite.json", "suite.csv", "suite.md"} & set(raw)


@needs_bpf
def test_ranges_over_runs_that_differ_say_n_and_the_range(attacked, tmp_path):
    """A copy of the suite with a second run of each group, its counts 2 higher: each count's
    range and n in the table and the figure."""
    copy = tmp_path / "twice"
    shutil.copytree(attacked["suite"], copy)
    table = json.loads((copy / "suite.json").read_text())
    again = [{**r, "repetition": 2, "lost_to_attack": r["lost_to_attack"] + 2, "forged": r["forged"] + 2}
             for r in table["runs"]]
    table["runs"] += again
    table["groups"] = suite.groups(table["runs"])
    (copy / "suite.json").write_text(json.dumps(table))
    (section,) = attacks.build(load_all([copy]))
    ahead = next(r for r in rows_of(section.tables[0]) if (r["attack"], r["defence"]) == ("inject-ahead", "none"))
    low = next(r["lost_to_attack"] for r in table["runs"] if (r["attack"], r["defence"]) == ("inject-ahead", "none"))
    assert ahead["n"] == 2 and text(ahead["genuine lost"]) == f"{low}..{low + 2}"
    assert value(ahead["genuine lost"]) == low + 2 and "over n = 2 runs" in ahead["genuine lost"].title
    (figure,) = section.figures
    point = next(p for p in figure.points if (p["x"], p["series"], p["panel"]) == ("inject-ahead", "none",
                                                                                  "genuine lost"))
    assert (point["y"], point["lo"], point["hi"], point["n"]) == (low + 2, low, low + 2, "2")
    assert "n = 2..2 runs per point" in figure.caption


@needs_bpf
def test_a_setting_or_field_a_newer_suite_adds_is_shown_not_refused(attacked, tmp_path):
    copy = tmp_path / "newer"
    shutil.copytree(attacked["suite"], copy)
    table = json.loads((copy / "suite.json").read_text())
    table = {"authentication": {"key_bits": 128, "window_ms": 5}, **table}
    table["groups"][0]["tampered"] = [1, 3]
    table["groups"][1]["stated"] = "at most 40 genuine frames lost"
    table["runs"][0]["note"] = "first"
    (copy / "suite.json").write_text(json.dumps(table))
    (section,) = attacks.build(load_all([copy]))
    assert dict(section.facts)["authentication"] == "key bits 128, window 5 ms"
    groups, runs = (rows_of(t) for t in section.tables)
    assert text(groups[0]["tampered"]) == "1..3" and text(groups[1]["stated"]) == "at most 40 genuine frames lost"
    assert groups[1]["tampered"] is None and text(runs[0]["note"]) == "first"


@needs_bpf
def test_attack_results_beside_other_results(attacked, tmp_path):
    out = tmp_path / "all.html"
    drawn = write_report([QUICK, attacked["run"], attacked["suite"]], out)
    ids = [f.id for f in drawn]
    assert len(ids) == len(set(ids)) and {"attack-timeline-run", "attack-harm-suite", "loss-vs-load"} <= set(ids)
    html = out.read_text()
    assert html.index('id="verdicts-quick"') < html.index('id="attacks"') < html.index('id="method"')
    assert html.index('id="under-attack-run"') < html.index('id="under-attack-suite"')  # in the order given
    assert "(campaign, " in html and "(attack, " in html and "(attack-suite, " in html


@needs_bpf
@pytest.mark.parametrize("file, damage, problem", [
    ("run/result.json", lambda r: r["listener"].update(lost="many"), "listener.lost: Input should be a valid integer"),
    ("run/result.json", lambda r: r["intervals"].reverse(), "the top level: the intervals' t_s must increase"),
    ("run/result.json", lambda r: r.pop("verdict"), "verdict: Field required"),
    ("suite/suite.json", lambda t: t["groups"][0].pop("n"), "groups.0.n: Field required"),
    ("suite/suite.json", lambda t: t["groups"][0].update(forged=[3, 1]), "groups.0.forged: a range must be [from, to] with from <= to"),
    ("suite/suite.json", lambda t: t["runs"][1].update(duplicates=-1), "runs.1.duplicates: Input should be greater"),
    ("suite/suite.json", lambda t: t.update(stream="fast"), "stream: should be a JSON object"),
])
def test_a_damaged_attack_file_is_refused_naming_it_and_the_field(attacked, tmp_path, file, damage, problem):
    where = tmp_path / "damaged"
    for name, path in attacked.items():
        shutil.copytree(path, where / name)
    data = json.loads((where / file).read_text())
    damage(data)
    (where / file).write_text(json.dumps(data))
    with pytest.raises(UsageError) as refused:
        load_all([where / file.split("/")[0]])
    message = str(refused.value)
    assert f"results file '{where / file}' is damaged: {problem}" in message, message


@needs_bpf
def test_the_command_refuses_a_file_that_is_not_json_and_writes_nothing(attacked, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(attacked["run"], copy)
    (copy / "result.json").write_text("{not json")
    out = tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "frerlab.cli", "report", str(copy), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and str(copy / "result.json") in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.slow
@needs_bpf
def test_a_browser_offline_shows_the_attack_section(attacked, tmp_path):
    """The run and the suite in one page, opened offline in Chromium: every figure drawn with
    its rows, the verdict line shown, the groups table sorting by a count numerically and
    filtering, the raw files' links leading to files that are there; a screenshot of each figure."""
    out = tmp_path / "page" / "report.html"
    drawn = write_report([attacked["suite"], attacked["run"]], out, tmp_path / "page" / "images")
    result = json.loads((attacked["run"] / "result.json").read_text())
    with offline_page(out) as (page, _, _):
        assert {f.id for f in drawn} == {"attack-harm-suite", "attack-timeline-run"}
        for f in drawn:
            shown = page.evaluate("""id => {
                const view = window.frerlabViews[id], chart = document.getElementById('chart-' + id);
                return {rows: view.data('rows').length,
                        marks: chart.querySelectorAll('.mark-symbol path, .mark-line path').length,
                        legend: Array.from(chart.querySelectorAll('.role-legend-label text')).map(t => t.textContent)};
            }""", f.id)
            assert shown["rows"] == len(f.rows) and shown["marks"] > 0, f.id
            assert shown["legend"] == f.series, f.id
            page.locator(f"#fig-{f.id}").screenshot(path=str(SCREENSHOTS / f"{f.id}.png"))
        assert page.locator("#under-attack-run .verdict").inner_text() == f"Verdict: {result['verdict']}"
        assert page.locator("nav a[href='#attacks']").inner_text() == "FRER under attack"
        # the groups table sorts by a count numerically, and filters by what is typed
        page.click("#attack-groups-suite th:has-text('rogue')")
        column = "Array.from(document.querySelectorAll('#attack-groups-suite tbody tr'))"
        rogue = page.evaluate(f"() => {column}.map(r => Number(r.cells[8].dataset.value))")
        assert rogue == sorted(rogue) and len(rogue) == 4
        page.fill("input[data-table=attack-groups-suite]", "inject-far guard")
        kept = page.evaluate(f"() => {column}.filter(r => !r.hidden).map(r => r.cells[1].textContent + ' ' "
                             "+ r.cells[2].textContent)")
        assert kept == ["inject-far guard"]
        hrefs = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))")
        files = [h for h in hrefs if not h.startswith("#")]
        assert any(h.endswith("inject.json") for h in files)
        assert all(not h.startswith("/") and (out.parent / h).exists() for h in files)
