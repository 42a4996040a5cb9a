"""Bad places for results: every option naming an output directory or file goes through
frerlab.names.output_dir / output_file before anything is created or run, and a place in
/proc, /sys, /dev, /run, frerlab's state directory or a kernel file system (also through a
symlink or '..'), a file where a directory belongs, a directory or device where a file
belongs, or a path under a non-directory is refused: exit 2, the value named, what is valid
said, no traceback, nothing created, no testbed built.

The many kinds of place are rows calling the validators directly; each verb's option has
one row through the real CLI (tests/badinput.py). No CLI row writes into /dev, even were
the check to go: a regression must not replace a device file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from badinput import assert_refused
from frerlab import names
from frerlab.errors import UsageError
from frerlab.names import output_dir, output_file

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def places(tmp_path, monkeypatch) -> Path:
    """tmp_path with a regular file, a directory, a FIFO, a symlink to /proc, a symlink loop,
    a state directory run/ (RUN_DIR here and for the CLI), and cwd/ as the current directory."""
    (tmp_path / "file").write_text("results\n")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to("/proc")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "run").mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.setattr(names, "RUN_DIR", tmp_path / "run")
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


def tree(root: Path) -> set[str]:
    """Every path under `root` (symlinks not followed)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


#: Place kind -> (path, under the fixture's directory T, either validator refuses; texts the
#: message holds besides the path).
BOTH = {
    "proc": ("/proc/frerlab-results", ["is inside /proc, the kernel's process information"]),
    "sys": ("/sys/kernel/frerlab-results", ["is inside /sys"]),
    "dev device": ("/dev/null", ["is inside /dev, device files"]),
    "dev tmpfs": ("/dev/shm/frerlab-results", ["is inside /dev"]),
    "run": ("/run/frerlab-results", ["is inside /run, the running system's state"]),
    "run netns": ("/run/netns/frerlab-results", ["is inside /run"]),
    "state directory": ("T/run/results", ["run, frerlab's state directory"]),
    "symlink to /proc": ("T/link/self", ["is inside /proc (it leads to '/proc/"]),
    "relative into /proc": ("../" * 40 + "proc/frerlab-results", ["(it leads to '/proc/frerlab-results')"]),
    "parent a file": ("T/file/results", ["file' is not a directory"]),
    "symlink loop": ("T/loop/results", ["cannot be used (Symlink loop"]),
    "name too long": ("T/" + "n" * 300, ["cannot be used (File name too long)"]),
}
DIR_ROWS = [(kind, path, texts) for kind, (path, texts) in BOTH.items()] + [
    ("a file", "T/file", ["exists and is not a directory"]),
    ("a FIFO", "T/fifo", ["exists and is not a directory"]),
]
FILE_ROWS = [(kind, path, texts) for kind, (path, texts) in BOTH.items()] + [
    ("a directory", "T/dir", ["is a directory: give a file name"]),
    ("a FIFO", "T/fifo", ["is not a regular file (a device, FIFO or socket)"]),
]


def assert_validator_refuses(check, places: Path, path: str, texts: list[str], valid: str) -> None:
    path = path.replace("T/", f"{places}/")
    before = tree(places)
    with pytest.raises(UsageError) as refused:
        check(Path(path), "--out")
    message = str(refused.value)
    for text in [f"--out {names.shown(path)}", *texts, valid]:
        assert text in message, f"{text!r} not in: {message}"
    assert tree(places) == before, "the check created something"


@pytest.mark.parametrize("kind, path, texts", DIR_ROWS, ids=[r[0] for r in DIR_ROWS])
def test_output_dir_refuses_a_place_that_is_not_for_results(places, kind, path, texts):
    assert_validator_refuses(output_dir, places, path, texts, "give a new or existing directory outside /proc")


@pytest.mark.parametrize("kind, path, texts", FILE_ROWS, ids=[r[0] for r in FILE_ROWS])
def test_output_file_refuses_a_place_that_is_not_for_results(places, kind, path, texts):
    assert_validator_refuses(output_file, places, path, texts, "give a file name (new, or a regular file to replace)")


@pytest.fixture
def bpffs(places) -> Iterator[Path]:
    """A BPF file system mounted in the temporary directory (outside every system directory)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a BPF file system needs root")
    mount = places / "bpf"
    mount.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.root
@pytest.mark.parametrize("check", [output_dir, output_file])
def test_a_kernel_file_system_is_refused_wherever_it_is_mounted(bpffs, check):
    before = tree(bpffs)
    with pytest.raises(UsageError, match=f"is on the kernel's bpf file system mounted at {bpffs}"):
        check(bpffs / "results", "--out")
    assert tree(bpffs) == before


@pytest.mark.parametrize("path", ["T/new/deeper", "T/dir", "results/run1", "T/link-to-dir"])
def test_output_dir_takes_a_new_or_existing_directory(places, path):
    (places / "link-to-dir").symlink_to(places / "dir")
    before = tree(places)
    assert output_dir(Path(path.replace("T/", f"{places}/")), "--out") == Path(path.replace("T/", f"{places}/"))
    assert tree(places) == before


@pytest.mark.parametrize("path", ["T/new/report.html", "T/file", "report.html", "T/dir/x.json"])
def test_output_file_takes_a_new_or_regular_file(places, path):
    before = tree(places)
    assert output_file(Path(path.replace("T/", f"{places}/")), "-o") == Path(path.replace("T/", f"{places}/"))
    assert tree(places) == before


# ---- one row per output option, through the real CLI ----

CAMPAIGN = str(ROOT / "campaigns" / "quick.yaml")
RESULTS = str(FIXTURES / "results" / "quick")
IPERF = str(FIXTURES / "tools" / "iperf3_udp_64B.json")
#: A path that names /proc from the CLI's current directory T/cwd.
PROC_RELATIVE = "../" * 40 + "proc/frerlab-results"
#: A file in /run a refused option must not write.
IN_RUN = "/run/frerlab-bad-output-recv.json"

#: (argv, the bad value as the message names it, texts the message holds, the namespace prefix
#: of the testbed the verb would build); T is the temporary directory, the CLI runs in T/cwd
#: with its state directory T/run.
CLI_ROWS = [
    (["bench", "run", CAMPAIGN, "-o", "T/file/results"], "-o/--output 'T/file/results'",
     ["file' is not a directory"], "tb-bc"),
    (["report", RESULTS, "-o", "T/dir"], "-o/--output 'T/dir'", ["is a directory: give a file name"], None),
    (["report", RESULTS, "--images", "T/link/frerlab-images"], "--images 'T/link/frerlab-images'",
     ["is inside /proc (it leads to '/proc/"], None),
    (["report", RESULTS, "-o", "T/cwd/page", "--images", "T/cwd/page"], "--images 'T/cwd/page'",
     ["is the page itself"], None),
    (["config", "export", str(ROOT / "configs" / "dataplane" / "sw2-eliminate.yaml"), "--format", "yang-json",
      "-o", "T/run/sw2.json"], "-o/--output 'T/run/sw2.json'", ["frerlab's state directory"], None),
    (["config", "import", str(FIXTURES / "lan966x" / "lan966x-sw1.sh"), "-o", "T/fifo"], "-o/--output 'T/fifo'",
     ["is not a regular file"], None),
    (["capture", "-o", "T/run/captures", "--duration", "1"], "-o/--output 'T/run/captures'",
     ["frerlab's state directory"], None),
    (["crosscheck", str(ROOT / "scenarios" / "crosscheck" / "path_cut.yaml"), "--out", "T/file/xc"],
     "-o/--output 'T/file/xc'", ["file' is not a directory"], "tb-xc"),
    (["demo", "--output", "T/loop/demo"], "-o/--output 'T/loop/demo'", ["cannot be used (Symlink loop"], "tb-demo"),
    (["failover", "--output", "T/loop/failover"], "-o/--output 'T/loop/failover'", ["cannot be used (Symlink loop"],
     "tb-frerlab-"),
    (["import", IPERF, "--output", PROC_RELATIVE], f"-o/--output '{PROC_RELATIVE}'",
     ["is inside /proc (it leads to '/proc/frerlab-results')"], None),
    (["import", IPERF, "--results", "T/run/imported", "--mode", "frer"], "--results 'T/run/imported'",
     ["frerlab's state directory"], None),
    (["gen", "send", "--dst", "198.18.0.2", "--rate-fps", "10", "--count", "1", "--output", "T/run/send.json"],
     "-o/--output 'T/run/send.json'", ["frerlab's state directory"], None),
    (["gen", "recv", "--duration", "1", "--output", IN_RUN], f"-o/--output '{IN_RUN}'", ["is inside /run"], None),
    (["sim", "run", str(ROOT / "scenarios" / "seed000_control.yaml"), "-o", "T/run/sim"], "-o/--output 'T/run/sim'",
     ["frerlab's state directory"], None),
    (["sim", "sweep", str(ROOT / "scenarios" / "grids" / "loss_vs_load.yaml"), "-o", "T/file/grid"],
     "-o/--output 'T/file/grid'", ["file' is not a directory"], None),
]


def namespaces() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in listed.splitlines() if line.strip()}


@pytest.mark.parametrize("argv, value, texts, testbed", CLI_ROWS, ids=[
    " ".join([*(a for a in r[0][:2] if a.isalpha()), r[1].split()[0]]) for r in CLI_ROWS])
def test_every_output_option_refuses_a_bad_place_before_creating_or_building_anything(
        places, argv, value, texts, testbed):
    argv = [a.replace("T/", f"{places}/") for a in argv]
    value = value.replace("T/", f"{places}/")
    before, netns_before = tree(places), namespaces()
    assert_refused(argv, [value, *texts, "give a"], places / "run", cwd=places / "cwd")
    assert tree(places) == before, "created something"
    assert not Path(IN_RUN).exists()
    if testbed:
        assert not [ns for ns in namespaces() - netns_before if ns.startswith(testbed)], "built a testbed"
