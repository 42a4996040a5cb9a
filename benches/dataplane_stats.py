"""Configuring and reading a data plane of many streams: batch map operations against one
bpf(2) call per entry, side by side in one run.

A node with sw2's role of the two-path topology for --streams streams (frerlab.dataplane.twopath
spread_config: each stream identified by its UDP ports, recovered from paths a and b) is brought
up with `control.up` in a namespace of its own, without traffic. Per round:
- apply: Node.apply (one batch per map) against writing the same entries one update each (the
  baseline: what Node.apply did before batches), both on the loaded node;
- read: every counter a snapshot reads, from CounterTables (one batch read per map) against
  one lookup each (Node.recovery_state, stream_port_counters); and control.snapshot whole (the
  configuration parsed and compiled again from the node's state, the batches, the records);
- the command: `frerlab dataplane stats --name NAME --json`, wall time of the whole process (Python
  start, the configuration parsed and compiled again from the node's state, the snapshot, JSON).
Reported: median (min .. max) seconds over --rounds, and the ratios batch / one by one.

    .venv/bin/python benches/dataplane_stats.py [--streams 65536] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

from frerlab.dataplane import control, layout
from frerlab.dataplane.node import CounterTables, Node
from frerlab.dataplane.twopath import PATH_A, PATH_B, SWITCH_PORTS, spread_config
from frerlab.netns import Namespaces
from frerlab.testbed.plan import SWITCH_HOST_PORT

CLI = [sys.executable, "-m", "frerlab.cli"]


def one_by_one_apply(node: Node, plan) -> None:
    """As many entries of the same maps and sizes as Node.apply writes in batches (zeros, the
    hashed identities as they are), one update each."""
    for name in ("streams", "rcvy", "rcvy_reset_requests", "stream_port_stats", "identities"):
        table = node.maps[name]
        value = bytes(table.value_size)
        count = len(plan.scanned) if name == "identities" else table.max_entries
        for index in range(count):
            table.update(layout.key(index), value)
    for key, hit in plan.hashed.items():
        node.maps["identity_hash"].update(key, hit)


def read_counters(source, plan) -> None:
    """Every counter control.snapshot reads, from `source`: the node (one lookup each) or its
    CounterTables (read in one batch per map)."""
    for r in plan.recoveries:
        source.recovery_state(r.stream, r.instance)
    for stream in range(len(plan.streams)):
        for port in range(len(plan.ports)):
            source.stream_port_counters(stream, port)


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f} .. {max(values):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=layout.MAX_STREAMS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not 1 <= args.streams <= layout.MAX_STREAMS:
        parser.error(f"--streams {args.streams} is out of range (1..={layout.MAX_STREAMS})")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cfg = spread_config("sw2", args.streams, 32, f"frerlab-bench-{os.getpid()}")
    name, plan = cfg.name, cfg.plan
    times: dict[str, list[float]] = {k: [] for k in ("apply batch", "apply one by one", "read batch",
                                                      "read one by one", "snapshot", "stats command")}
    print(f"load average (1 min) at the start: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    with Namespaces(f"frs{os.getpid()}") as net:
        net.add("x")
        net.link("x", PATH_A, "x", PATH_B)
        net.link("x", SWITCH_HOST_PORT, "x", "l0")
        control.up(cfg, net.ns["x"], monitor=False)
        try:
            node = Node.loaded(name, net.ns["x"], SWITCH_PORTS["sw2"])
            try:
                for _ in range(args.rounds):
                    times["apply one by one"].append(timed(lambda: one_by_one_apply(node, plan)))
                    times["apply batch"].append(timed(lambda: node.apply(plan)))
                    times["read one by one"].append(timed(lambda: read_counters(node, plan)))
                    times["read batch"].append(timed(lambda: read_counters(CounterTables(node), plan)))
                    times["snapshot"].append(timed(lambda: control.snapshot(name)))
                    times["stats command"].append(timed(lambda: subprocess.run(
                        [*CLI, "dataplane", "stats", "--name", name, "--json"], check=True, capture_output=True)))
            finally:
                node.release()
        finally:
            control.down(name)
    print(f"{args.streams} streams, sw2 of the two-path topology, {args.rounds} rounds: median (min .. max)")
    for what, values in times.items():
        print(f"  {what:<17} {spread(values)}")
    for what in ("apply", "read"):
        ratios = [b / o for b, o in zip(times[f"{what} batch"], times[f"{what} one by one"])]
        print(f"  {what}: batch / one by one {statistics.median(ratios):.3f} ({min(ratios):.3f} .. {max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
