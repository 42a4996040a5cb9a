"""`frerlab sim sweep GRID.yaml`: a grid over a scenario on a local process pool and, through the
same code path, on a real Dask cluster (a scheduler and two workers started here as processes on
loopback); one table (Parquet and CSV) with the grid's coordinates, each run's raw files, clear
errors for a bad grid file or an absent scheduler."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
GRID = ROOT / "scenarios" / "grids" / "loss_vs_load.yaml"
CLI = [sys.executable, "-m", "frerlab.cli"]
DASK = str(Path(sys.executable).parent / "dask")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """A Dask scheduler and two single-threaded workers on loopback: (address, worker pids)."""
    address = f"tcp://127.0.0.1:{free_port()}"
    port = address.rsplit(":", 1)[1]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    processes = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
                                  **quiet)]
    try:
        processes += [subprocess.Popen([DASK, "worker", address, "--nworkers", "1", "--nthreads", "1",
                                        "--no-dashboard", "--host", "127.0.0.1"], **quiet) for _ in range(2)]
        from dask.distributed import Client
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            pids = set(client.run(os.getpid).values())
        yield address, pids
    finally:
        for p in processes:
            os.killpg(p.pid, signal.SIGTERM)
        for p in processes:
            p.wait(timeout=30)


def run_sweep(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "sim", "sweep", str(GRID), "-o", str(out), *extra], capture_output=True, text=True,
                          timeout=300)


def test_a_grid_runs_on_local_processes_into_one_table(tmp_path):
    done = run_sweep(tmp_path / "local", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    table = pd.read_parquet(tmp_path / "local" / "sweep.parquet")
    assert table.equals(pd.read_csv(tmp_path / "local" / "sweep.csv").astype(table.dtypes.to_dict()))
    assert list(table.columns[:3]) == ["streams.udp.rate", "links.stack.egress.queue_limit", "stream"]
    assert len(table) == 12 and len(set(zip(table["streams.udp.rate"], table["links.stack.egress.queue_limit"]))) == 12
    assert len(list((tmp_path / "local").glob("point-*/report.json"))) == 12
    assert (tmp_path / "local" / GRID.name).read_text() == GRID.read_text()
    assert "12/12" in done.stderr  # the progress bar went to stderr, the table to stdout
    # the buffer matters only above the listener's capacity (about 503 Mbit/s)
    lossless = table[table["streams.udp.rate"].isin(["300Mbps", "500Mbps"])]
    assert (lossless["lost"] == 0).all() and (table[table["streams.udp.rate"] == "900Mbps"]["lost"] > 0).all()


@pytest.mark.slow
def test_the_same_grid_on_a_dask_cluster_gives_the_same_table_from_its_workers(cluster, tmp_path):
    address, worker_pids = cluster
    local, remote = run_sweep(tmp_path / "local", "--jobs", "1"), run_sweep(tmp_path / "dask", "--scheduler", address)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    a = pd.read_parquet(tmp_path / "local" / "sweep.parquet")
    b = pd.read_parquet(tmp_path / "dask" / "sweep.parquet")
    ran = {int(w.rsplit(":", 1)[1]) for w in b["worker"]}
    assert ran <= worker_pids and len(ran) == 2  # every run on a worker, both workers used
    same = [c for c in a.columns if c not in ("wall_seconds", "worker")]
    pd.testing.assert_frame_equal(a[same], b[same])  # seeded runs: identical wherever they ran
    assert len(list((tmp_path / "dask").glob("point-*/report.json"))) == 12


@pytest.mark.timing
def test_no_scheduler_at_the_address_is_one_clear_line(tmp_path):
    started = time.monotonic()
    done = run_sweep(tmp_path / "x", "--scheduler", f"tcp://127.0.0.1:{free_port()}")
    assert done.returncode == 2 and "no Dask scheduler answered" in done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - started < 60


@pytest.mark.parametrize("text, message", [
    ("grid: {duration: [1ms]}\n", "a grid file holds `scenario: PATH`"),
    ("scenario: ../loss_vs_load.yaml\ngrid: {duration: [1ms]}\nextra: 1\n", "unknown key 'extra'"),
    ("scenario: ../loss_vs_load.yaml\ngrid: {duration: []}\n", "needs a non-empty list of values"),
    ("scenario: ../loss_vs_load.yaml\ngrid: {streams.udp.rate: [fast]}\n", "fast"),
])
def test_a_bad_grid_file_is_refused_naming_what_is_wrong(tmp_path, text, message):
    grid = ROOT / "scenarios" / "grids" / f".bad-{os.getpid()}.yaml"
    grid.write_text(text)
    try:
        done = subprocess.run([*CLI, "sim", "sweep", str(grid), "-o", str(tmp_path / "x")], capture_output=True,
                              text=True, timeout=120)
    finally:
        grid.unlink()
    assert done.returncode == 2 and message in done.stderr, done.stderr
