"""Shared pieces of the tests. For any test: a child that Ctrl-C reaches however the suite was
started (interruptible), and the processes that carry a name of the test's own (processes_naming),
never the machine's whole process list. For the eBPF data plane tests: the skip conditions, frer.o
built, loaded and pinned once per module, the same with its XDP program (frer_xdp.o on frer.o's
maps) run on frames "received" by devices of a namespace of its own (hook_runner: either hook and
either shape of the per-stream maps, one test body), and the one-port-per-path recovery listener
the replays configure. For the testbed tests: one testbed per mode for the whole session
(frer_bed, control_bed), the seeds' topology with default settings; a test that impairs a path
clears it again."""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from frerlab import bpfsys
from frerlab.dataplane import layout
from frerlab.dataplane.node import OBJECT, XDP_OBJECT, map_shapes, open_maps, write_port
from frerlab.netns import Namespaces, entered, link_info
from frerlab.processes import command_line
from frerlab.testbed import bed
from frerlab.traffic.netpair import namespaces_available

ROOT = Path(__file__).resolve().parent.parent
#: Ingress ifindex of port p in the replays (BPF_PROG_TEST_RUN takes any number).
IFINDEX_BASE = 100

_missing = [tool for tool in ("clang", "tc") if shutil.which(tool) is None]
#: Marks for tests that load BPF programs (and create namespaces): skipped with the reason.
NEEDS_BPF = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="BPF programs and namespaces need root"),
    pytest.mark.skipif(bool(_missing), reason=f"not installed: {', '.join(_missing)}"),
]


@pytest.fixture(scope="session")
def frer_bed():
    """A testbed in frer mode with default settings, shared by the session's tests."""
    with bed.Testbed(name=f"s{os.getpid() % 100000}f", mode="frer") as tb:
        yield tb


@pytest.fixture(scope="session")
def control_bed():
    """A testbed in control mode with default settings, shared by the session's tests."""
    with bed.Testbed(name=f"s{os.getpid() % 100000}c", mode="control") as tb:
        yield tb


#: Standard normal quantile for a two-sided false-alarm chance of one in a million: a test that
#: checks a random measurement against it fails by chance about once in a million runs, not the
#: once in a hundred of a 99 % interval (which CI met: 5 % loss measured 4.54 % over 20,000 frames).
Z_ONE_IN_A_MILLION = 4.892


def binomial_bounds(n: int, p: float) -> tuple[float, float]:
    """The range that holds the fraction of n Bernoulli(p) trials but once in a million
    (normal approximation)."""
    half = Z_ONE_IN_A_MILLION * math.sqrt(p * (1 - p) / n)
    return p - half, p + half


def needs_netns(test):
    """Marks a test that creates network namespaces (`root`; skipped, with the reason, where
    that is impossible)."""
    unavailable = namespaces_available()
    return pytest.mark.root(pytest.mark.skipif(unavailable is not None, reason=str(unavailable))(test))


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def interruptible(argv: list[str], **popen_args) -> Iterator[subprocess.Popen]:
    """`argv` started (subprocess.Popen with `popen_args`) as a child that SIGINT stops as a
    Ctrl-C in a terminal would: SIGINT's default disposition is restored in it. A suite started
    with SIGINT ignored (a background job of a shell: `setsid bash .ci/run &`) passes SIG_IGN to
    every child, and Python then installs no KeyboardInterrupt handler. The child is killed on
    the way out if it still runs, so a failing test leaves nothing running."""
    with subprocess.Popen(argv, preexec_fn=_sigint_default, **popen_args) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


def processes_naming(*texts: str, namespace: str | None = None) -> list[str]:
    """The processes whose command line holds every one of `texts`, each as `pgrep -a` prints
    it ("PID COMMAND LINE"): those in network namespace `namespace`, or without one any, and
    then one of `texts` must be the calling test's own (its tmp_path, a name carrying this
    run's pid), so that no other suite's processes match."""
    if namespace is None:
        pids = [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    else:
        pids = [int(pid) for pid in subprocess.run(["ip", "netns", "pids", namespace], capture_output=True,
                                                   text=True).stdout.split()]  # none once it is gone
    found = []
    for pid in pids:
        line = b" ".join(command_line(pid)).decode(errors="replace").strip()
        if pid != os.getpid() and all(text in line for text in texts):
            found.append(f"{pid} {line}")
    return found


#: The per-stream arrays as a node of few streams has them and as one of 64k (one `rcvy` entry
#: per stream instead of one per possible instance).
SHAPES = {"small": map_shapes(1), "large": map_shapes(layout.MAX_STREAMS)}


@contextmanager
def _pinned(name: str, shapes: dict[str, tuple[str, int]] | None = None):
    """bpf/build/frer.o built, loaded (its maps reshaped by `shapes`, default none: the
    object's own sizes) and pinned under `name`: (pin dir, its maps, the frer_ingress program); everything is
    removed afterwards."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "bpf")], check=True)
    pin_dir = bpfsys.BPFFS / name
    bpfsys.load_and_pin(OBJECT, pin_dir, shapes=shapes)
    maps = open_maps(pin_dir)
    prog = bpfsys.Program(pin_dir / "frer_ingress")
    try:
        yield pin_dir, maps, prog
    finally:
        prog.close()
        for m in maps.values():
            m.close()
        bpfsys.unpin(pin_dir)


@pytest.fixture(scope="module")
def frer_pinned():
    """frer.o loaded and pinned under a per-run directory: (pin dir, its maps, frer_ingress)."""
    with _pinned(f"frerlab-test-{os.getpid()}") as pinned:
        yield pinned


@pytest.fixture
def frer_fresh():
    """frer.o loaded and pinned for one test only (its hashed identities start empty)."""
    with _pinned(f"frerlab-test-{os.getpid()}-fresh") as pinned:
        yield pinned


class HookRunner:
    """frer.o's maps and one hook's program on them: `run(frame, port)` runs frer_ingress (tc)
    or frer_xdp on a frame received on port p; `passed`, `dropped` are that hook's verdicts
    for an R-tagged frame passed up to this host and a dropped one."""

    def __init__(self, hook: str, maps: dict[str, bpfsys.Map], prog: bpfsys.Program,
                 ifindexes: list[int] | None = None, netns: str | None = None) -> None:
        self.hook, self.maps, self.prog, self.netns = hook, maps, prog, netns
        self.ifindexes = ifindexes or [IFINDEX_BASE + p for p in range(4)]
        xdp = hook == "xdp"
        self.passed = layout.XDP_PASS if xdp else layout.TC_ACT_REDIRECT
        self.passed_untagged = layout.XDP_PASS if xdp else layout.TC_ACT_OK
        self.dropped = layout.XDP_DROP if xdp else layout.TC_ACT_SHOT

    def run(self, frame: bytes, port: int = 0) -> tuple[int, bytes]:
        """(verdict, frame as the program left it) for `frame` received on port `port`."""
        if self.netns is None:
            return self.prog.test_run(frame, self.ifindexes[port])[:2]
        with entered(self.netns):
            return self.prog.test_run(frame, self.ifindexes[port])[:2]


@pytest.fixture(scope="module", params=["tc-small", "xdp-small", "tc-large", "xdp-large"])
def hook_runner(request):
    """A HookRunner for each hook and each shape of the per-stream maps (SHAPES) in turn, each
    on a frer.o of its own; for XDP, frer_xdp.o loaded on its maps, and four veth ends in a
    namespace of its own as the ports."""
    hook, shape = request.param.split("-")
    with _pinned(f"frerlab-test-{os.getpid()}-{request.param}", SHAPES[shape]) as (pin_dir, maps, prog):
        if hook == "tc":
            yield HookRunner("tc", maps, prog)
            return
        with Namespaces(f"frt{os.getpid()}") as net:
            net.add("x")
            for p in (0, 2):
                net.link("x", f"p{p}", "x", f"p{p + 1}")
            ifindexes = [link_info(net.ns["x"], f"p{p}")["ifindex"] for p in range(4)]
            bpfsys.load_and_pin(XDP_OBJECT, pin_dir / "xdp", reuse=pin_dir / "maps")
            with bpfsys.Program(pin_dir / "xdp" / "frer_xdp") as xdp_prog:
                yield HookRunner("xdp", maps, xdp_prog, ifindexes, net.ns["x"])


def configure_recovery_listener(maps: dict[str, bpfsys.Map], recovery: layout.RecoveryConfig,
                                ports: int = 4, ifindexes: list[int] | None = None) -> None:
    """Every frame on ports 0..ports-1 (ifindex IFINDEX_BASE + p, or ifindexes[p]) is stream 0,
    passed through sequence recovery `recovery` (in its initial state), its R-TAG removed, then
    to the stack."""
    for port in range(ports):
        ifindex = ifindexes[port] if ifindexes else IFINDEX_BASE + port
        write_port(maps, ifindex, port)
    maps["identities"].update(layout.key(0), layout.match_all_identity(0, 0xFFFF))
    maps["streams"].update(layout.key(0), layout.stream(layout.STREAM_RECOVER,
                                                        [layout.output(flags=layout.OUT_LOCAL)]))
    maps["rcvy"].update(layout.key(0), recovery.pack())
    maps["settings"].update(layout.key(0), layout.settings(1))
