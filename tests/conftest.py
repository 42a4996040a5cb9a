"""Shared pieces of the eBPF data plane tests: the skip conditions, frer.o built, loaded and
pinned once per module, and the one-port-per-path recovery listener the replays configure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from frerlab.dataplane import bpfsys, layout
from frerlab.dataplane.node import OBJECT, open_maps

ROOT = Path(__file__).resolve().parent.parent
#: Ingress ifindex of port p in the replays (BPF_PROG_TEST_RUN takes any number).
IFINDEX_BASE = 100

_missing = [tool for tool in ("clang", "bpftool", "tc") if shutil.which(tool) is None]
#: Marks for tests that load BPF programs (and create namespaces): skipped with the reason.
NEEDS_BPF = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="BPF programs and namespaces need root"),
    pytest.mark.skipif(bool(_missing), reason=f"not installed: {', '.join(_missing)}"),
]


@pytest.fixture(scope="module")
def frer_pinned():
    """bpf/build/frer.o built, loaded and pinned under a per-run directory: (pin dir, its maps,
    the frer_ingress program); everything is removed afterwards."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "bpf")], check=True)
    pin_dir = bpfsys.BPFFS / f"frerlab-test-{os.getpid()}"
    bpfsys.load_and_pin(OBJECT, pin_dir)
    maps = open_maps(pin_dir)
    prog = bpfsys.Program(pin_dir / "frer_ingress")
    try:
        yield pin_dir, maps, prog
    finally:
        prog.close()
        for m in maps.values():
            m.close()
        bpfsys.unpin(pin_dir)


def configure_recovery_listener(maps: dict[str, bpfsys.Map], recovery: layout.RecoveryConfig,
                                ports: int = 4) -> None:
    """Every frame on ports 0..ports-1 (ifindex IFINDEX_BASE + p) is stream 0, passed through
    sequence recovery `recovery` (in its initial state), its R-TAG removed, then to the stack."""
    for port in range(ports):
        maps["port_of_ifindex"].update(layout.key(IFINDEX_BASE + port), layout.key(port))
    maps["identities"].update(layout.key(0), layout.match_all_identity(0, 0xFFFF))
    maps["streams"].update(layout.key(0), layout.stream(layout.STREAM_RECOVER,
                                                        [layout.output(flags=layout.OUT_LOCAL)]))
    maps["rcvy"].update(layout.key(0), recovery.pack())
    maps["settings"].update(layout.key(0), layout.settings(1))
