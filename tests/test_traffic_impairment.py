"""`frerlab gen` measured against a network impairment whose effect is known in advance: a tc
BPF program on the receiver's port drops every data probe whose sequence number is 3 modulo
10 (tests/bpf/drop_probe_modulo.c). The sender knows nothing of it; the receiver must count
exactly those losses, in order, with no duplicates or reordering."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from frerlab.traffic.netpair import NetPair, namespaces_available
from frerlab.traffic.tools.base import wait_for_udp_port

SOURCE = Path(__file__).parent / "bpf" / "drop_probe_modulo.c"
CLI = [sys.executable, "-m", "frerlab.cli"]

unavailable = namespaces_available() or (None if shutil.which("clang") else "clang is not installed")
pytestmark = [pytest.mark.root, pytest.mark.skipif(unavailable is not None, reason=str(unavailable))]


def bpf_mounts() -> list[Path]:
    """The mount points of the BPF file systems (tc's loader keeps its ip/tc/xdp pin dirs in the first)."""
    return [Path(line.split()[1]) for line in Path("/proc/mounts").read_text().splitlines() if line.split()[2] == "bpf"]


@pytest.fixture
def tc_pin_dirs_removed():
    """Removes the pin directories (ip, tc/globals, xdp) tc's BPF loader makes in a BPF file
    system when it loads an object, where they were not there before: the test leaves nothing."""
    made = [m / name for m in bpf_mounts() for name in ("ip", "tc", "xdp") if not os.path.lexists(m / name)]
    yield
    for path in made:
        if path.is_symlink():
            path.unlink()
        elif path.is_dir():
            for sub in sorted(path.rglob("*"), reverse=True):
                if sub.is_dir():
                    sub.rmdir()
                else:
                    sub.unlink()
            path.rmdir()


def compile_impairment(tmp: Path) -> Path:
    obj = tmp / "drop_probe_modulo.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{platform.machine()}-linux-gnu",
                    "-c", str(SOURCE), "-o", str(obj)], check=True)
    return obj


@pytest.mark.parametrize("mode", ["udp", "raw"])
def test_receiver_counts_exactly_the_frames_the_link_dropped(tmp_path, mode, tc_pin_dirs_removed):
    obj = compile_impairment(tmp_path)
    count = 3000
    with NetPair() as pair:
        tc = pair.cmd("b", ["tc"])
        subprocess.run([*tc, "qdisc", "add", "dev", pair.b_if, "clsact"], check=True)
        subprocess.run([*tc, "filter", "add", "dev", pair.b_if, "ingress", "bpf", "da", "obj", str(obj),
                        "sec", "tc"], check=True)
        recv = subprocess.Popen(pair.cmd("b", [*CLI, "gen", "recv", "--port", "5555", "--duration", "30",
                                               "--linger", "0.3", "--output", str(tmp_path / "recv.json")]),
                                stdout=subprocess.DEVNULL)
        try:
            wait_for_udp_port(pair.cmd("b", []), 5555)
            extra = ["--mode", "raw", "--interface", pair.a_if, "--dst-mac", pair.mac("b")] if mode == "raw" else []
            sent = subprocess.run(pair.cmd("a", [*CLI, "gen", "send", "--dst", pair.b_ip, "--port", "5555",
                                                 "--rate-fps", "20k", "--count", str(count), *extra]),
                                  capture_output=True, text=True)
            recv.wait(timeout=40)
        finally:
            recv.kill()
    assert sent.returncode in (0, 3), sent.stderr  # 3: the sender fell behind its pacing, yet sent all
    (stream,) = json.loads((tmp_path / "recv.json").read_text())["streams"]
    assert stream["expected"] == count
    assert stream["lost"] == count // 10, "every number that is 3 modulo 10"
    assert stream["unique"] == count - count // 10
    assert stream["duplicates"] == 0 and stream["reordered"] == 0
