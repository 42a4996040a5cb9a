"""The eBPF recovery function under both CPUs at once, on the kernel's real clock (not the
fixed clock of the vector replays): two paths' copies of one stream run through one recovery
function from two CPUs (BPF_PROG_TEST_RUN, one thread pinned to each), and a reader takes its
counters while a writer updates them. Millions of frames: no duplicate may pass, no reset may
fire while traffic flows, and no counter read may be torn."""

from __future__ import annotations

import os
import threading
import time

import pytest
from conftest import IFINDEX_BASE, NEEDS_BPF

from frerlab.dataplane import layout
from frerlab.dataplane.node import Node, write_port
from frerlab.frer import push_rtag

pytestmark = [*NEEDS_BPF, pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")]

FRAME = (bytes.fromhex("020000000002" "020000000001" "0800"
                       "4500002e000000004011" "0000c6120001c6120002")
         + bytes.fromhex("1389138900120000") + bytes(18))
CPUS = sorted(os.sched_getaffinity(0))[:2]
NUMBERS = 20_000
REPEAT = 50  # each copy runs 50 times in one call: 2 x 20000 x 50 = 2 M frames


def configure(maps, flags: int, recovery: layout.RecoveryConfig) -> None:
    """Every frame on ports 0 and 1 is stream 0, handled per `flags` and handed up locally;
    the real clock (no fixed time)."""
    for port in (0, 1):
        write_port(maps, IFINDEX_BASE + port, port)
    maps["identities"].update(layout.key(0), layout.match_all_identity(0, 0b11))
    maps["streams"].update(layout.key(0), layout.stream(flags, [layout.output(flags=layout.OUT_LOCAL)]))
    maps["seqgen"].update(layout.key(0), layout.SEQGEN.pack(0, 0, 0, 0))
    maps["rcvy"].update(layout.key(0), recovery.pack())
    maps["settings"].update(layout.key(0), layout.settings(1))


def on_cpu(cpu: int, work) -> threading.Thread:
    def run() -> None:
        os.sched_setaffinity(0, {cpu})  # this thread only
        work()
    return threading.Thread(target=run)


CLOCKS = {"precise": 0, "coarse": layout.STREAM_COARSE_CLOCK}


@pytest.mark.parametrize("clock", CLOCKS)
def test_two_paths_on_two_cpus_pass_each_number_once_and_never_reset(frer_pinned, clock):
    _, maps, prog = frer_pinned
    # a long timeout: any reset while both paths deliver is a false one (a wrapped time
    # difference), not a real expiry
    configure(maps, layout.STREAM_RECOVER | CLOCKS[clock],
              layout.RecoveryConfig("vector", 1024, reset_timeout_ns=10_000_000_000))
    frames = [push_rtag(FRAME, n) for n in range(NUMBERS)]
    errors = []

    def path(port: int) -> None:
        try:
            for frame in frames:
                prog.test_run(frame, IFINDEX_BASE + port, repeat=REPEAT)
        except Exception as err:  # noqa: BLE001 - reported by the test below
            errors.append(err)

    threads = [on_cpu(cpu, lambda p=port: path(p)) for port, cpu in enumerate(CPUS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    c = layout.rcvy_counters(maps["rcvy"].lookup(layout.key(0)))
    assert c["resets"] == 0, f"false resets: {c}"
    assert c["passed_packets"] == NUMBERS, f"duplicates delivered: {c}"
    # BPF_PROG_TEST_RUN keeps the skb across runs: the run after a pass sees it marked for
    # re-injection (let through once, uncounted), the runs after that without its R-TAG
    counted = sum(c[k] for k in ("passed_packets", "discarded_packets", "rogue_packets", "tagless_packets"))
    assert counted + c["passed_packets"] == 2 * NUMBERS * REPEAT


@pytest.mark.parametrize("clock", CLOCKS)
def test_a_reset_timeout_runs_out_on_the_real_clock(frer_pinned, clock):
    """300 ms: a duplicate 200 ms after the pass is still one (a discard reloads nothing), the
    same frame 600 ms after the pass is taken afresh (the function reset), on either clock (the
    coarse one is at most a tick, 4 ms at HZ 250, behind)."""
    _, maps, prog = frer_pinned
    configure(maps, layout.STREAM_RECOVER | CLOCKS[clock], layout.RecoveryConfig("vector", 32, reset_timeout_ns=300_000_000))
    frame = push_rtag(FRAME, 7)
    verdicts = [prog.test_run(frame, IFINDEX_BASE)[0]]
    time.sleep(0.2)
    verdicts.append(prog.test_run(frame, IFINDEX_BASE)[0])
    time.sleep(0.4)
    verdicts.append(prog.test_run(frame, IFINDEX_BASE)[0])
    c = layout.rcvy_counters(maps["rcvy"].lookup(layout.key(0)))
    assert (c["passed_packets"], c["discarded_packets"], c["resets"]) == (2, 1, 1)
    assert verdicts[1] == layout.TC_ACT_SHOT and verdicts[0] == verdicts[2] != layout.TC_ACT_SHOT


def test_counters_are_read_whole_while_another_cpu_updates_them(frer_pinned):
    """Sequence generation feeds recovery on one CPU (every number passes, in order) while the
    node's reader on the other CPU takes the counters: each read must be one consistent state,
    passed numbers 0 .. passed-1, so the last passed is RecovSeqNum."""
    pin_dir, maps, prog = frer_pinned
    configure(maps, layout.STREAM_GENERATE | layout.STREAM_RECOVER,
              layout.RecoveryConfig("vector", 32, reset_timeout_ns=10_000_000_000))
    node = Node.loaded(pin_dir.name, None, ["p0", "p1"])
    done = threading.Event()

    def write() -> None:
        for _ in range(40):
            prog.test_run(FRAME, IFINDEX_BASE, repeat=50_000)
        done.set()

    writer = on_cpu(CPUS[1], write)
    writer.start()
    os.sched_setaffinity(0, {CPUS[0]})
    torn = reads = 0
    try:
        while not done.is_set():
            state = node.recovery_state(0)
            passed = layout.rcvy_counters(state)["passed_packets"]
            recov_seq = layout.RCVY.unpack(state)[6]
            reads += 1
            if passed and (passed - 1) % 65536 != recov_seq:
                torn += 1
    finally:
        os.sched_setaffinity(0, set(CPUS))
        writer.join()
        node.release()
    assert reads > 100
    assert torn == 0, f"{torn} of {reads} reads mixed two states"
