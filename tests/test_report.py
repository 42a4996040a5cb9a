"""`frerlab report`: stored results of a campaign (a real quick-campaign run kept as a fixture),
an import of real tool outputs and a simulator run become one offline HTML page and PNG/SVG
images; a real Chromium (Debian's, driven by Playwright) opens the page with the network off
and finds every figure drawn with its series and points, no console error, sortable tables."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from frerlab.bench.imported import import_into
from frerlab.bench.results import write_summary
from frerlab.report import summary, tables, write_report
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


def _copy(tmp_path: Path, name: str = "quick") -> Path:
    copy = tmp_path / name
    shutil.copytree(QUICK, copy)
    return copy


def _resummarize(results: Path) -> None:
    write_summary(results, [json.loads(p.read_text()) for p in sorted((results / "units").rglob("result.json"))])


def test_the_throughput_figure_draws_l1_and_l2_line_rates_and_the_summary_means(tmp_path):
    drawn = {f.id: f for f in write_report([QUICK], tmp_path / "r.html")}
    figure = drawn["throughput-vs-frame-size"]
    summary = json.loads((QUICK / "summary.json").read_text())
    group = next(g for g in summary["groups"] if g["kind"] == "throughput")
    ndr = next(p for p in figure.points if p["panel"].startswith("NDR") and p["role"] == "mean")
    assert ndr["y"] == pytest.approx(group["metrics"]["throughput_mbps_loss_0"]["mean"])
    l2 = {r["x"]: r["y"] for r in figure.rows if r["role"] == "line" and r["panel"] == ndr["panel"]}
    l1 = {r["y"] for r in figure.rows if r["role"] == "rule_y"}
    assert l1 == {20.0}  # the quick campaign's system rate: 20 Mbit/s
    assert l2[64] == pytest.approx(20 * 64 / 84) and l2[1518] == pytest.approx(20 * 1518 / 1538)
    assert figure.y_scale.zero and "L2" in figure.y_title


def test_an_invalid_unit_is_drawn_apart_listed_and_never_averaged_in(tmp_path):
    # a copy of the quick results in which one loss-vs-load repetition is flagged invalid
    copy = _copy(tmp_path)
    unit = copy / "units/loss_vs_load/control/frame_size=1024,load=60/r1/result.json"
    r = json.loads(unit.read_text())
    r["valid"], r["metrics"]["loss_percent"] = False, 99.0
    r["flags"].append({"name": "generator_shortfall", "detail": "test", "invalidates": True})
    unit.write_text(json.dumps(r))
    _resummarize(copy)
    drawn = {f.id: f for f in write_report([copy], tmp_path / "r.html")}
    rows = [p for p in drawn["loss-vs-load"].rows if p.get("mode") == "control" and p["x"] == 60]
    (mean,) = [p for p in rows if p["role"] == "mean"]
    (invalid,) = [p for p in rows if p["role"] == "trial"]
    assert mean["n"] == "1" and mean["y"] != pytest.approx(99.0) and mean["lo"] is None  # n = 1: no interval
    assert invalid["outcome"] == "invalid" and invalid["y"] == 99.0 and "generator_shortfall: test" in invalid["flags"]
    assert "1 invalid unit(s) drawn" in drawn["loss-vs-load"].caption
    flagged = tables.flagged(load_all([copy]))
    assert ["quick", r["unit"]["id"], "invalid", "generator_shortfall", "yes", "test"] in flagged.rows


def test_loss_is_drawn_on_a_symlog_axis_with_intervals_that_stay_in_range(tmp_path):
    copy = _copy(tmp_path)
    for k, path in enumerate(sorted((copy / "units/loss_vs_load/frer").rglob("result.json"))):
        r = json.loads(path.read_text())  # 0, 1, 2, ... frames lost: small losses beside none
        r["detail"]["lost"] = r["metrics"]["lost"] = k
        r["metrics"]["loss_percent"] = k / r["detail"]["sent"] * 100
        path.write_text(json.dumps(r))
    _resummarize(copy)
    figure = {f.id: f for f in write_report([copy], tmp_path / "r.html")}["loss-vs-load"]
    assert figure.y_scale.kind == "symlog" and figure.y_scale.domain[0] == 0
    means = [p for p in figure.rows if p["role"] == "mean"]
    assert any(p["y"] > 0 for p in means)
    for p in means:
        if p["lo"] is not None:
            assert 0 <= p["lo"] <= p["y"] <= p["hi"] <= 100 and "Clopper-Pearson" in p["interval"]
    assert any(r["role"] == "rule_x" and r["x"] == 100 for r in figure.rows)


def test_units_are_matched_by_what_they_measured_and_rates_compared_normalised(tmp_path):
    """A second campaign at twice the line rate whose loss-vs-load step has another name: its
    points meet the first's by frame size and load, TCP goodput is compared in % of each
    campaign's own line rate (the same fraction: no difference), and the page says the systems
    differ."""
    faster = _copy(tmp_path, "faster")
    campaign = faster / "campaign.yaml"
    campaign.write_text(campaign.read_text().replace("rate: 20Mbps", "rate: 40Mbps"))
    for path in (faster / "units").rglob("result.json"):
        r = json.loads(path.read_text())
        r["unit"]["step"] = r["unit"]["step"].replace("loss_vs_load", "loss-renamed")
        if r["unit"]["kind"] == "tcp":
            r["metrics"]["throughput_mbps"] *= 2
        path.write_text(json.dumps(r))
    _resummarize(faster)
    sources = load_all([QUICK, faster])
    table = tables.directories(sources)
    rows = [dict(zip(table.columns, r)) for r in table.rows]
    assert "different systems" in table.caption and "rate 40Mbps" in table.caption
    assert any(r["kind"] == "loss_vs_load" for r in rows)
    tcp = [r for r in rows if r["kind"] == "tcp" and r["measure"] == "TCP goodput"]
    assert tcp and all(r["unit"] == "% of line rate" and r["difference"] == pytest.approx(0, abs=1e-9) for r in tcp)
    assert all(r["significant"] != "yes" for r in tcp)
    assert not any(r["measure"] in ("samples", "sent_load_percent") for r in rows)
    drawn = {f.id: f for f in write_report([QUICK, faster], tmp_path / "cmp.html")}
    assert drawn["throughput-vs-frame-size"].y_title == "throughput, % of line rate (L1)"
    assert drawn["tcp-baseline"].y_title == "TCP goodput, % of line rate"
    assert 'id="systems-differ"' in (tmp_path / "cmp.html").read_text()


def test_a_difference_within_the_set_point_resolution_is_not_significant(tmp_path):
    """Two repetitions of each threshold sweep, FRER's 1 % of load below control's, found with
    2 % steps: Welch's test alone may call it significant; the report does not."""
    copy = _copy(tmp_path)
    (frer,) = (copy / "units/threshold_sweep/frer").rglob("result.json")
    base = json.loads(frer.read_text())
    for mode, shift in (("frer", 0.0), ("control", 1.0)):
        for rep, jitter in ((1, 0.0), (2, 0.01)):
            r = json.loads(json.dumps(base))
            r["unit"].update(mode=mode, repetition=rep, id=f"threshold_sweep/{mode}/frame_size=1024/r{rep}")
            onset = r["metrics"]["zero_loss_threshold_load"] + shift + jitter
            r["metrics"].update(zero_loss_threshold_load=onset, loss_onset_load=onset + 2)
            out = copy / "units/threshold_sweep" / mode / "frame_size=1024" / f"r{rep}" / "result.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(r))
    _resummarize(copy)
    table = tables.frer_vs_control(load_all([copy]))
    row = next(dict(zip(table.columns, r)) for r in table.rows if r[3] == "zero-loss threshold")
    assert row["difference"] == pytest.approx(-1.0) and row["p"] < 0.05
    assert row["significant"] == "no" and "within the set-point resolution 2" in row["effect / why not"]


def test_an_import_gets_its_verdicts_from_its_percentiles(tmp_path):
    """Imported tool outputs carry no TSN verdict of their own: the table judges the imported
    P99.9 against the limit, and puts UDP rates in % of the line rate given."""
    imported = tmp_path / "imported"
    import_into(imported, [TOOLS / "iperf3_udp_64B.json", TOOLS / "sockperf_pingpong_64B.txt"], "frer")
    import_into(imported, [TOOLS / "iperf3_udp_64B.json", TOOLS / "sockperf_pingpong_64B.txt"], "control")
    (table,) = summary.build(load_all([imported]), line_rate=1e9)
    rows = {r[1]: r for r in table.rows}
    udp = rows["UDP throughput (iperf3-udp)"]
    mbps = json.loads(next((imported / "units").rglob("iperf3-udp/frer/*/r1/result.json")).read_text())["metrics"]["l2_mbps"]
    assert udp[3].value == pytest.approx(mbps) and f"{mbps * 84 / 64 / 10:.4g} % of line rate" in udp[3].text
    p999 = rows["latency P99.9 (sockperf-ping-pong)"]
    verdict = "FAIL" if p999[3].value >= 300 else "PASS"
    assert p999[-1].startswith(f"FRER: {verdict} (P99.9 < 300 µs") and "one run a side" in p999[7].text


def test_frers_own_counters_stand_next_to_each_units_loss():
    """The quick campaign's FRER loss-vs-load units recorded their recovery functions' counters:
    one row per unit and function the stream passed, beside the unit's loss."""
    table = tables.evidence(load_all([QUICK]))
    rows = [dict(zip(table.columns, r)) for r in table.rows]
    units = {u.parent.parent.name + "/" + u.parent.name: json.loads(u.read_text())
             for u in (QUICK / "units/loss_vs_load/frer").rglob("result.json")}
    assert rows and {r["unit"].split("/", 2)[2] for r in rows} == set(units)
    for r in rows:
        unit = units[r["unit"].split("/", 2)[2]]
        assert r["loss %"] == unit["metrics"]["loss_percent"] and r["passed"] > 0 and r["window"] == 32
        assert r["passed"] >= unit["detail"]["received"]  # the stream's frames, its end-of-stream probes too


def test_a_sweep_that_never_lost_above_its_threshold_gives_a_lower_bound(tmp_path):
    copy = _copy(tmp_path)
    (swept,) = (copy / "units/threshold_sweep/frer").rglob("result.json")
    r = json.loads(swept.read_text())
    r["metrics"]["loss_onset_load"] = None
    swept.write_text(json.dumps(r))
    _resummarize(copy)
    (table,) = summary.build(load_all([copy]))
    row = next(x for x in table.rows if x[1] == "zero-loss threshold (sweep)")
    assert row[3].text.startswith(f"≥{r['metrics']['zero_loss_threshold_load']:.4g} ")
    drawn = {f.id: f for f in write_report([copy], tmp_path / "r.html")}
    trace = next(f for i, f in drawn.items() if i.startswith("sweep-"))
    assert any(x["role"] == "found" and "threshold: ≥" in x["label"] for x in trace.rows)


def test_the_verdicts_open_the_page_with_both_modes_side_by_side(tmp_path):
    out = tmp_path / "r.html"
    write_report([QUICK], out)
    (table,) = summary.build(load_all([QUICK]))
    assert table.columns[3:6] == ["FRER", "control", "FRER − control"]
    rows = {(r[0], r[1], r[2]): r for r in table.rows}
    groups = {(g["kind"], g["mode"], json.dumps(g["params"])): g for g in
              json.loads((QUICK / "summary.json").read_text())["groups"]}
    tcp = next(g for k, g in groups.items() if k[:2] == ("tcp", "frer"))
    cell = rows[("TCP", f"goodput ({tcp['params']['duration_s']:g} s)", "Mbit/s; % of line rate")][3]
    assert cell.value == pytest.approx(tcp["metrics"]["throughput_mbps"]["mean"]) and "(n=2)" in cell.text
    p999 = next(r for k, r in rows.items() if k[1].startswith("latency P99.9 (sockperf"))
    assert p999[-1].startswith("FRER: not supported (") and "samples do not support" in p999[-1]
    assert table.columns[-1] == "TSN verdict (P99.9 < 300 µs)"
    throughput = next(r for k, r in rows.items() if k[1].startswith("NDR"))
    frer = next(g for k, g in groups.items() if k[:2] == ("throughput", "frer"))
    assert throughput[3].value == pytest.approx(frer["metrics"]["throughput_load_loss_0"]["mean"])
    fps = frer["metrics"]["throughput_fps_loss_0"]["mean"]
    assert f"{fps:,.0f} frames/s" in throughput[3].text and "Mbit/s L2" in throughput[3].text
    html = out.read_text()
    assert html.index('id="verdicts"') < html.index('id="figures"') < html.index('id="tables"')


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


#: Screenshots of every figure the browser test drew, for a person to look at.
SCREENSHOTS = ROOT / "target" / "test-output" / "report"


@contextlib.contextmanager
def offline_page(out: Path):
    """Report page `out` open in Debian's Chromium with the network cut off: (page, the URLs it
    requested, the errors it logged), checked when the block ends: no error, nothing but files."""
    from playwright.sync_api import sync_playwright
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    requests, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
            context.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()
                                                 if route.request.url.startswith("file://") else route.abort()))
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(out.as_uri())
            assert page.evaluate("() => window.frerlabReady.then(() => window.frerlabErrors)") == []
            yield page, requests, errors
        finally:
            browser.close()
    assert errors == []
    assert all(u.startswith("file://") for u in requests), [u for u in requests if not u.startswith("file://")]


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.slow
def test_a_browser_offline_shows_what_the_results_hold(results, tmp_path):
    """Every kind of results in one page, opened offline in Chromium: each figure drawn with its
    rows, FRER and control in the same colours everywhere, the loss axis logarithmic, invalid
    units marked, no interval of a non-negative quantity below 0, the verdict table's figures
    equal to summary.json's, tables that sort and filter, a legend click that fades the other
    series, no absolute path of this machine in the page; a screenshot of every figure."""
    copy = tmp_path / "quick"  # with one invalid unit, so that one is drawn
    shutil.copytree(QUICK, copy)
    unit = copy / "units/loss_vs_load/frer/frame_size=1024,load=40/r1/result.json"
    r = json.loads(unit.read_text())
    r["valid"] = False
    r["flags"].append({"name": "generator_shortfall", "detail": "test", "invalidates": True})
    unit.write_text(json.dumps(r))
    _resummarize(copy)
    out = tmp_path / "page" / "report.html"
    drawn = write_report([copy, *(v for k, v in results.items() if k != "quick")], out, tmp_path / "page" / "images")
    html = out.read_text()
    for machine_path in (str(tmp_path), str(ROOT), "/tmp/", "/work/"):
        assert machine_path not in html.split("<script>")[0], machine_path
    with offline_page(out) as (page, requests, errors):
        colours = {}
        for f in drawn:
            shown = page.evaluate("""id => {
                const view = window.frerlabViews[id], rows = view.data('rows');
                const chart = document.getElementById('chart-' + id);
                const colour = view.scale('color') || view.scale('child__column_P50_color');
                return {rows: rows.length, marks: chart.querySelectorAll('.mark-symbol path, .mark-line path').length,
                        domain: colour ? colour.domain() : null, range: colour ? colour.range() : null,
                        legend: Array.from(chart.querySelectorAll('.role-legend-label text')).map(t => t.textContent)};
            }""", f.id)
            assert shown["rows"] == len(f.rows) and shown["marks"] > 0, f.id
            if f.colour == "mode":
                assert shown["domain"] == f.series, f.id
                for mode, colour in zip(shown["domain"], shown["range"]):
                    assert colours.setdefault(mode, colour) == colour, (f.id, mode)
                if any(r.get("outcome") == "invalid" for r in f.rows):
                    assert "invalid" in shown["legend"], f.id
            page.locator(f"#fig-{f.id}").screenshot(path=str(SCREENSHOTS / f"{f.id}.png"))
        assert colours["FRER"] == "#0072B2" and colours["control"] == "#D55E00"
        # the loss axis is logarithmic (symlog: 0 shows), the invalid unit is drawn as one
        loss = page.evaluate("""() => {
            const view = window.frerlabViews['loss-vs-load'];
            return {scale: FIGURES['loss-vs-load'].spec.layer[0].encoding.y.scale.type,
                    invalid: view.data('rows').filter(r => r.outcome === 'invalid').map(r => r.unit)};
        }""")
        assert loss == {"scale": "symlog", "invalid": [r["unit"]["id"]]}
        # no interval of a non-negative quantity below 0, in what the browser drew
        lows = page.evaluate("""() => Object.values(window.frerlabViews).flatMap(v => v.data('rows'))
            .filter(r => r.lo !== null && r.lo !== undefined).map(r => r.lo)""")
        assert lows and min(lows) >= 0
        # the verdict table shows summary.json's means
        groups = json.loads((copy / "summary.json").read_text())["groups"]
        tcp = next(g for g in groups if g["kind"] == "tcp" and g["mode"] == "control")
        cells = page.evaluate("""() => Array.from(document.querySelectorAll('#verdicts-quick tbody tr'))
            .filter(r => r.cells[0].textContent === 'TCP')
            .map(r => Number(r.cells[4].dataset.value))""")
        assert cells == pytest.approx([tcp["metrics"]["throughput_mbps"]["mean"]])
        # tables sort by a clicked column, numbers numerically, and filter by what is typed
        page.click("#statistics th:has-text('estimate')")
        means = page.evaluate("""() => Array.from(document.querySelectorAll('#statistics tbody tr'))
            .map(r => r.cells[7].dataset.value).filter(v => v !== '').map(Number)""")
        assert means == sorted(means) and len(means) > 10
        page.fill("input[data-table=statistics]", "tcp frer")
        kept = page.evaluate("""() => Array.from(document.querySelectorAll('#statistics tbody tr'))
            .filter(r => !r.hidden).map(r => r.cells[1].textContent + ' ' + r.cells[2].textContent)""")
        assert kept and set(kept) == {"tcp FRER"}
        # a click on a legend entry fades the other series
        tcp_id = "tcp-baseline"
        picked = f"() => window.frerlabViews['{tcp_id}'].signal('legend_pick_tuple')"
        assert page.evaluate(picked) is None
        page.click(f"#chart-{tcp_id} .role-legend-label text >> nth=0")
        assert page.evaluate(picked)["values"] == ["FRER"]
        # links are relative and lead to files that are there
        hrefs = page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))")
        files = [h for h in hrefs if not h.startswith("#")]
        assert files and all(not h.startswith("/") and (out.parent / h).exists() for h in files)


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
    says "passes", not "lost frames"."""
    from frerlab.report.figures import _against_goals
    binary = [{"loss_ratio": 1e-5}]
    assert _against_goals({"loss_ratio": 1e-6}, binary) == "passes"
    assert _against_goals({"loss_ratio": 2e-5}, binary) == "fails"
    mlr = [{"loss_ratio": 0}, {"loss_ratio": 0.005}]
    assert [_against_goals({"loss_ratio": r}, mlr) for r in (0, 0.001, 0.01)] == ["passes", "passes", "fails"]


def test_a_search_that_stopped_short_is_drawn_and_a_unit_without_trials_is_skipped(tmp_path):
    """A throughput search the generator could not finish keeps its trials (drawn, no rate found
    as a rule); a unit whose tool failed before any trial has nothing to draw and stops nothing."""
    copy = _copy(tmp_path)
    searched = copy / "units/throughput/frer/frame_size=1024/r1/result.json"
    r = json.loads(searched.read_text())
    failed = {"name": "failed", "detail": "the generator sent 10 of 20 frames", "invalidates": True}
    r.update(metrics={}, valid=False, flags=[failed])
    r["detail"]["goals"] = [{**g, "rate": None} for g in r["detail"]["goals"]]
    searched.write_text(json.dumps(r))
    swept = copy / "units/threshold_sweep/frer/frame_size=1024/r1/result.json"
    s = json.loads(swept.read_text())
    swept.write_text(json.dumps({**s, "metrics": {}, "valid": False, "flags": [failed], "detail": {}}))
    _resummarize(copy)
    drawn = {f.id: f for f in write_report([copy], tmp_path / "r.html")}
    trace = next(f for i, f in drawn.items() if i.startswith("search-"))
    assert len(trace.points) == len(r["detail"]["trials"]) and not [x for x in trace.rows if x["role"] == "found"]
    assert not any(i.startswith("sweep-") for i in drawn)
    # the throughput figure marks the failed search at its frame size, on the axis, with its flag
    invalid = [x for x in drawn["throughput-vs-frame-size"].rows if x.get("outcome") == "invalid"]
    assert invalid and all(x["y"] == 0 and x["x"] == 1024 and "failed" in x["flags"] for x in invalid)
