"""`frerlab crosscheck`: a path-cut scenario in the simulator and on a real namespace testbed
(eBPF data plane, root) agrees in every counting metric within the stated tolerances, the raw
results of both worlds are written before the comparison, and the testbed is gone afterwards;
a bad crosscheck file is refused naming the field; building the parser loads neither world."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from frerlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
PATH_CUT = ROOT / "scenarios/crosscheck/path_cut.yaml"
COUNTS = ("sent", "delivered", "lost", "duplicates", "eliminated")


@pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
@pytest.mark.timing
@pytest.mark.root
def test_a_path_cut_agrees_in_both_worlds(tmp_path, capsys):
    from frerlab.testbed import bed

    out = tmp_path / "xc"
    assert main(["crosscheck", str(PATH_CUT), "--out", str(out)]) == 0
    for raw in ("sim/report.json", "sim/meta.json", "testbed/result.json", "testbed/recv.json", "testbed/send.json",
                "testbed/counters.json", "comparison.txt"):
        assert (out / raw).is_file(), raw
    comparison = json.loads((out / "comparison.json").read_text())
    rows = {r["metric"]: r for r in comparison["rows"]}
    for metric in COUNTS:
        r = rows[metric]
        assert r["agrees"] is True and abs(r["sim"] - r["testbed"]) <= r["tolerance"], r
    assert rows["lost"]["sim"] == rows["lost"]["testbed"] == 0 and rows["lost"]["tolerance"] == 0
    assert rows["delivered"]["sim"] == rows["sent"]["sim"] == 7000
    # sw2 eliminates one copy of every frame sent while both paths were up: 3.5 s - 0.7 s - 0.6 s
    assert rows["eliminated"]["sim"] == 4400
    assert rows["latency_p50_us"]["agrees"] is None, "latency is shown, not compared"
    printed = capsys.readouterr().out
    assert "eliminated" in printed and "the counts agree" in printed
    assert f"xc{os.getpid() % 10**7}" not in bed.running(), "the temporary testbed is taken down"


BAD = {
    "unknown field": ("stream: {rate_fps: 2000, speed: 3}\npaths: {a: {cut: [0.5, 1]}, b: {cut: [1.5, 2]}}",
                      "stream: unknown field 'speed' (valid: rate_fps, frame_size, duration)"),
    "loss out of range": ("paths: {a: {cut: [0.5, 1], loss: 0.9}, b: {cut: [1.5, 2]}}",
                          "paths.a.loss: Input should be less than or equal to 0.5 (got 0.9)"),
    "cuts out of order": ("paths: {a: {cut: [1.5, 2]}, b: {cut: [0.5, 1]}}",
                          "paths: cuts a (1.5, 2.0) and b (0.5, 1.0) must come one after the other"),
    "missing paths": ("stream: {rate_fps: 100}", "paths: Field required"),
    "bad rate": ("paths: {a: {cut: [0.5, 1]}, b: {cut: [1.5, 2]}}\nlink: {rate: fast}", "link: rate:"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_bad_crosscheck_file_is_refused_naming_the_field(name, tmp_path, capsys):
    body, message = BAD[name]
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: bad\n{body}\n")
    assert main(["crosscheck", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists(), "nothing runs before the file is valid"


def _loaded(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `code`."""
    script = f"import json, sys; {code}; print(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_building_the_parser_loads_neither_world():
    assert _loaded("import frerlab.crosscheck.cli", ("pandas", "frerlab.sim.api", "frerlab.testbed.bed",
                                                     "frerlab.crosscheck.run")) == []
    assert _loaded("from frerlab.cli import build_parser; build_parser()", ("frerlab.crosscheck.run",)) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
@pytest.mark.root
def test_a_stopped_crosscheck_removes_its_testbed(tmp_path, stop):
    """SIGTERM (a timeout, a CI job cancelled) or Ctrl-C while the testbed world runs: the
    crosscheck ends as interrupted (130) and no namespace, state file or pin of its testbed
    remains."""
    import signal
    import time

    run = tmp_path / "run"
    env = {**os.environ, "FRERLAB_RUN_DIR": str(run)}
    proc = subprocess.Popen([sys.executable, "-m", "frerlab.cli", "crosscheck", str(PATH_CUT), "--out",
                             str(tmp_path / "xc")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    prefix = f"tb-xc{proc.pid % 10**7}-"

    def namespaces() -> list[str]:
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        return [ns for ns in listed if ns.startswith(prefix)]

    deadline = time.monotonic() + 60
    while len(namespaces()) < 6 or not (tmp_path / "xc" / "testbed").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(getattr(signal, stop))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert namespaces() == []
    assert not [p for p in run.rglob("*") if p.is_file() and "progs.debug" not in p.name
                and "maps.debug" not in p.name], list(run.rglob("*"))
