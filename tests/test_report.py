"""`frerlab report`: stored results of a campaign (a real quick-campaign run kept as a fixture),
an import of real tool outputs and a simulator run become one offline HTML page and PNG/SVG
images; a real Chromium (Debian's, driven by Playwright) opens the page with the network off
and finds every figure drawn with its series and points, no console error, sortable tables."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from frerlab.bench.imported import import_into
from frerlab.bench.results import write_summary
from frerlab.report import tables, write_report
from frerlab.report.sources import load_all
from frerlab.errors import UsageError
from frerlab import sim

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "tests" / "fixtures" / "results" / "quick"
TOOLS = ROOT / "tests" / "fixtures" / "tools"
CHROMIUM = shutil.which("chromium")
#: As the machine notes say: without the background-networking flags Chromium keeps calling out.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    """The three kinds of results a report reads."""
    where = tmp_path_factory.mktemp("results")
    imported = where / "imported"
    import_into(imported, [TOOLS / "iperf3_udp_64B.json", TOOLS / "iperf3_udp_1518B_unlimited.json",
                           TOOLS / "sockperf_pingpong_64B.txt"], "frer")
    import_into(imported, [TOOLS / "iperf3_udp_64B.json", TOOLS / "sockperf_pingpong_64B.txt"], "control")
    simulated = where / "sim"
    sim.run(ROOT / "scenarios" / "link_failure.yaml").save(simulated)
    swept = where / "sweep"
    subprocess.run([sys.executable, "-m", "frerlab.cli", "sim", "run", str(ROOT / "scenarios" / "loss_vs_load.yaml"),
                    "-o", str(swept), "--jobs", "1"], check=True, capture_output=True)
    return {"quick": QUICK, "imported": imported, "sim": simulated, "sweep": swept}


@pytest.mark.slow
def test_each_kind_of_results_gives_its_figures_and_images(results, tmp_path):
    for name, path in results.items():
        out = tmp_path / name / "report.html"
        drawn = write_report([path], out, tmp_path / name / "images")
        assert drawn, name
        html = out.read_text()
        assert "cdn" not in html.lower() and "https://" not in html.split("<script>")[0]
        for f in drawn:
            assert f'id="fig-{f.id}"' in html
            assert (tmp_path / name / "images" / f"{f.id}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert (tmp_path / name / "images" / f"{f.id}.svg").read_text().lstrip().startswith("<svg")
    sim_figures = {f.id: f for f in write_report([results["sim"]], tmp_path / "s.html")}
    queue = sim_figures["sim-queue-sim"]
    busy = {p["series"].rsplit(" ", 1)[0] for p in queue.points}
    assert busy and "sim-rate-sim" in sim_figures
    assert all(max(p["y"] for p in queue.points if p["series"].startswith(port)) > 0 for port in busy)
    sweep = {f.id: f for f in write_report([results["sweep"]], tmp_path / "w.html")}
    table = pd.read_csv(results["sweep"] / "sweep.csv")
    loss = sweep["sweep-loss-sweep"]
    assert loss.x_title == "streams.udp.rate (Mbit/s)" and [p["x"] for p in loss.points][:2] == [100.0, 200.0]
    assert [p["y"] for p in loss.points] == pytest.approx(list(table["loss_ratio"] * 100))
    assert "sweep-latency-sweep" in sweep
    ids = {f.id for f in write_report([QUICK], tmp_path / "q.html")}
    assert {"throughput-vs-frame-size", "latency-vs-frame-size", "latency-percentiles", "loss-vs-load",
            "tcp-baseline"} <= ids
    assert any(i.startswith("search-") for i in ids) and any(i.startswith("sweep-") for i in ids)


def test_a_qcn_run_shows_each_reaction_points_rate(tmp_path):
    from test_sim_congestion import incast
    scenario = incast(2, "20ms")
    scenario["links"][-1]["egress"]["qcn"] = {}
    for stream in scenario["streams"]:
        stream["qcn"] = {}
    sim.run(scenario).save(tmp_path / "qcn")
    drawn = {f.id: f for f in write_report([tmp_path / "qcn"], tmp_path / "r.html")}
    rates = drawn["sim-cn-qcn"]
    table = pd.read_csv(tmp_path / "qcn" / "rate_series.csv")
    assert rates.series == ["s0", "s1"] and len(rates.points) == len(table)
    assert [p["y"] for p in rates.points] == pytest.approx(list(table["rate_mean_bps"] / 1e6))


def test_the_throughput_figure_draws_l1_and_l2_line_rates_and_the_summary_means(tmp_path):
    drawn = {f.id: f for f in write_report([QUICK], tmp_path / "r.html")}
    figure = drawn["throughput-vs-frame-size"]
    summary = json.loads((QUICK / "summary.json").read_text())
    group = next(g for g in summary["groups"] if g["kind"] == "throughput")
    ndr = next(p for p in figure.points if "NDR" in p["series"])
    assert ndr["y"] == group["metrics"]["throughput_mbps_loss_0"]["mean"]
    l1 = {p["x"]: p["y"] for p in figure.lines if p["series"].startswith("line rate, L1")}
    l2 = {p["x"]: p["y"] for p in figure.lines if p["series"].startswith("line rate, L2")}
    assert set(l1.values()) == {20.0}  # the quick campaign's system rate: 20 Mbit/s
    assert l2[64] == pytest.approx(20 * 64 / 84) and l2[1518] == pytest.approx(20 * 1518 / 1538)


def test_an_invalid_unit_is_never_averaged_in(tmp_path):
    # a copy of the quick results in which one loss-vs-load repetition is flagged invalid
    copy = tmp_path / "quick"
    shutil.copytree(QUICK, copy)
    unit = copy / "units/loss_vs_load/control/frame_size=1024,load=60/r1/result.json"
    r = json.loads(unit.read_text())
    r["valid"], r["metrics"]["loss_percent"] = False, 99.0
    r["flags"].append({"name": "generator_shortfall", "detail": "test", "invalidates": True})
    unit.write_text(json.dumps(r))
    results = [json.loads(p.read_text()) for p in sorted((copy / "units").rglob("result.json"))]
    write_summary(copy, results)
    drawn = {f.id: f for f in write_report([copy], tmp_path / "r.html")}
    point = next(p for p in drawn["loss-vs-load"].points if p["series"].startswith("control") and p["x"] == 60)
    assert point["n"] == 1 and point["y"] != pytest.approx(99.0)
    assert "1 invalid unit(s) excluded" in drawn["loss-vs-load"].caption
    assert "generator_shortfall (1)" in (tmp_path / "r.html").read_text()


def test_two_directories_are_compared_with_intervals_and_significance(tmp_path):
    # the second directory: the quick run with every TCP repetition 1 Mbit/s faster
    shifted = tmp_path / "faster"
    shutil.copytree(QUICK, shifted)
    for path in (shifted / "units" / "tcp").rglob("result.json"):
        r = json.loads(path.read_text())
        r["metrics"]["throughput_mbps"] += 1.0
        path.write_text(json.dumps(r))
    table = tables.directories(load_all([QUICK, shifted]))
    columns = table.columns
    row = next(dict(zip(columns, r)) for r in table.rows
               if r[columns.index("step")] == "tcp" and r[columns.index("mode")] == "frer"
               and r[columns.index("metric")] == "throughput_mbps")
    assert row["results"] == "faster" and row["baseline"] == "quick" and row["valid"] == "2/2"
    assert row["difference"] == pytest.approx(1.0) and row["95 % low"] < 1.0 < row["95 % high"]
    assert row["significant at 5 %"] in ("yes", "no") and 0 <= row["p"] <= 1
    same = next(dict(zip(columns, r)) for r in table.rows if r[columns.index("step")] == "loss_vs_load"
                and r[columns.index("metric")] == "loss_percent" and "load=40" in r[columns.index("point")])
    assert same["difference"] is None and "constant" in same["effect / why not"]  # 0 % loss both times: no test
    out = tmp_path / "cmp.html"
    write_report([QUICK, shifted], out)
    assert "Results compared with quick" in out.read_text()


def test_bad_directories_are_refused_naming_them(tmp_path):
    with pytest.raises(UsageError, match="no results directory given"):
        load_all([])
    with pytest.raises(UsageError, match=f"{tmp_path / 'missing'} is not a directory"):
        load_all([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="holds no results frerlab can read"):
        load_all([tmp_path / "empty"])
    done = subprocess.run([sys.executable, "-m", "frerlab.cli", "report", str(QUICK), "--line-rate", "fast",
                           "-o", str(tmp_path / "x.html")], capture_output=True, text=True)
    assert done.returncode == 2 and "--line-rate" in done.stderr and "'fast'" in done.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.slow
def test_a_browser_offline_draws_every_figure_with_its_series_and_points(results, tmp_path):
    from playwright.sync_api import sync_playwright
    out = tmp_path / "report.html"
    drawn = write_report(list(results.values()), out, tmp_path / "images")
    requests, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True)
            context.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()
                                                 if route.request.url.startswith("file://") else route.abort()))
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(out.as_uri())
            assert page.evaluate("() => window.frerlabReady.then(() => window.frerlabErrors)") == []
            for f in drawn:
                shown = page.evaluate("""id => {
                    const view = window.frerlabViews[id], rows = view.data('points');
                    const chart = document.getElementById('chart-' + id);
                    return {points: rows.length, series: new Set(rows.map(r => r.series)).size,
                            legend: chart.querySelectorAll('.role-legend-label text').length,
                            marks: chart.querySelectorAll('.mark-symbol path, .mark-line path').length,
                            figure: [chart.closest('figure').dataset.series, chart.closest('figure').dataset.points]};
                }""", f.id)
                assert shown["points"] == len(f.points), f.id
                assert shown["series"] == len({p["series"] for p in f.points}), f.id
                assert shown["legend"] == len(f.series) and shown["marks"] > 0, f.id
                assert shown["figure"] == [str(len(f.series)), str(len(f.points))], f.id
            # tables sort by a clicked column, numbers numerically
            page.click("#statistics th:has-text('mean')")
            means = page.evaluate("""() => Array.from(document.querySelectorAll('#statistics tbody tr'))
                .map(r => r.cells[6].dataset.value).filter(v => v !== '').map(Number)""")
            assert means == sorted(means) and len(means) > 10
            # a click on a legend entry fades the other series
            tcp = next(f for f in drawn if f.id == "tcp-baseline")
            picked = f"() => window.frerlabViews['{tcp.id}'].signal('legend_pick_tuple')"
            assert page.evaluate(picked) is None
            page.click(f"#chart-{tcp.id} .role-legend-symbol path >> nth=0")
            assert page.evaluate(picked)["values"] == [tcp.series[0]]
            faded = page.evaluate(f"""() => Array.from(document.querySelectorAll('#chart-{tcp.id} .mark-line path'))
                .map(p => p.getAttribute('opacity'))""")
            assert "1" in faded and "0.12" in faded
        finally:
            browser.close()
    assert errors == []
    assert all(u.startswith("file://") for u in requests), [u for u in requests if not u.startswith("file://")]


def test_building_the_command_line_loads_neither_plotting_nor_data_libraries():
    # every verb's start pays for what the command line imports: `gen recv` must be listening
    # within moments of starting (the campaign's trials and their tests count on it); pandas
    # alone cost every command 0.3 s while the simulator's verbs imported it
    probe = ("import sys, frerlab.cli; frerlab.cli.build_parser(); "
             "print(sorted(m for m in ('altair', 'vl_convert', 'scipy', 'pandas') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_search_trial_is_drawn_as_the_search_judged_it():
    """A binary search at loss 1e-5 passes a trial that lost 1 frame in a million: its point
    says "passes", not "lost frames"; MLR's two goals are told apart."""
    from frerlab.report.figures import _against_goals
    binary = [{"loss_ratio": 1e-5}]
    assert _against_goals({"loss_ratio": 1e-6}, binary) == "passes loss <= 1e-05"
    assert _against_goals({"loss_ratio": 2e-5}, binary) == "fails (loss > 1e-05)"
    mlr = [{"loss_ratio": 0}, {"loss_ratio": 0.005}]
    assert [_against_goals({"loss_ratio": r}, mlr) for r in (0, 0.001, 0.01)] == \
        ["passes loss <= 0", "passes loss <= 0.005", "fails (loss > 0.005)"]


def test_a_search_that_stopped_short_is_drawn_and_a_unit_without_trials_is_skipped(tmp_path):
    """A throughput search the generator could not finish keeps its trials (drawn, no rate found
    as a rule); a unit whose tool failed before any trial has nothing to draw and stops nothing."""
    copy = tmp_path / "quick"
    shutil.copytree(QUICK, copy)
    searched = copy / "units/throughput/frer/frame_size=1024/r1/result.json"
    r = json.loads(searched.read_text())
    failed = {"name": "failed", "detail": "the generator sent 10 of 20 frames", "invalidates": True}
    r.update(metrics={}, valid=False, flags=[failed])
    r["detail"]["goals"] = [{**g, "rate": None} for g in r["detail"]["goals"]]
    searched.write_text(json.dumps(r))
    swept = copy / "units/threshold_sweep/frer/frame_size=1024/r1/result.json"
    s = json.loads(swept.read_text())
    swept.write_text(json.dumps({**s, "metrics": {}, "valid": False, "flags": [failed], "detail": {}}))
    write_summary(copy, [json.loads(p.read_text()) for p in sorted((copy / "units").rglob("result.json"))])
    drawn = {f.id: f for f in write_report([copy], tmp_path / "r.html")}
    trace = next(f for i, f in drawn.items() if i.startswith("search-"))
    assert len(trace.points) == len(r["detail"]["trials"]) and not trace.rules
    assert not any(i.startswith("sweep-") for i in drawn)
