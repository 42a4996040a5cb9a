"""Where the eBPF data plane's time per frame goes: each switch's programs profiled by source
function while a stream flows at the sender's top rate, next to their run time per frame.

For each topology of benches/dataplane_pps.py asked for (default: xdp-frer, xdp-plain-dual,
frer, plain-dual), one stream of --seconds at --max-rate, while `perf record -a -g` samples
every CPU (cpu-clock, --freq per second) and BPF run-time statistics count. A sample is the
programs' when its call chain passes through one of the switches' programs; it belongs to the
source line whose JIT-compiled code holds the innermost program address of the chain (the
kernel's JIT line table, bpfsys Program.jited_lines; a return address counts for the call
before it), and that line to the function of bpf/*.c or bpf/frer_common.h around it, inlined or
not. So a helper (a map lookup, the spin lock, a redirect) counts for the function that called
it. ns per frame = the function's share of the switch's samples x the switch's program time
per frame entering sw1 (run_time_ns over the runs of its first program).

Limits: perf samples on a timer here (no PMU in this VM), so a sample that falls while
interrupts are off (inside bpf_spin_lock) is taken when they are back on, at the unlock: the
locked section is counted whole, at its end. A function's figure has the sampling error of its
count n (about sqrt(n)/n); the programs' samples and each switch's are printed.

    .venv/bin/python benches/dataplane_profile.py [--cases xdp-frer,frer] [--size 64]
        [--seconds 10] [--freq 10000] [--lines 12] [--json FILE]
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import re
import signal
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from dataplane_pps import ROLES, TOPOLOGIES, run_stats

from frerlab import bpfsys
from frerlab.dataplane.twopath import TwoPath

SOURCES = Path(__file__).resolve().parent.parent / "bpf"
DEFAULT_CASES = ("xdp-frer", "xdp-plain-dual", "frer", "plain-dual")


def functions_of(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of each function defined in a C file of ours: a body opens
    with "{" and closes with "}" at column 0, after a line at column 0 naming it."""
    spans, name, start = [], None, 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        head = re.match(r"^[A-Za-z_][^(]*?\b(\w+)\(", re.sub(r"__attribute__\(\(\w+\)\)\s*", "", line))
        if head and not line.rstrip().endswith(";"):
            name, start = head.group(1), number
        elif line.startswith("}") and name:
            spans.append((start, number, name))
            name = None
    return spans


class LineTable:
    """The JIT line tables of some programs: kernel address -> (file, line, text)."""

    def __init__(self, programs: dict[str, list[bpfsys.Program]]) -> None:
        records = sorted((address, role, file, line, text) for role, progs in programs.items()
                         for prog in progs for address, file, line, text in prog.jited_lines())
        self.addresses = [r[0] for r in records]
        self.records = records
        self.functions = {path.name: functions_of(path) for path in SOURCES.glob("*.[ch]")}

    def where(self, address: int) -> tuple[str, str, int, str] | None:
        """(role, file, line, text) of the code at address, None when no program holds it."""
        i = bisect.bisect_right(self.addresses, address) - 1
        if i < 0:
            return None
        _, role, file, line, text = self.records[i]
        return role, file, line, text

    def function(self, file: str, line: int) -> str:
        for first, last, name in self.functions.get(Path(file).name, ()):
            if first <= line <= last:
                return name
        return "?"


def attribute(perf_data: Path, table: LineTable) -> dict[str, collections.Counter]:
    """Per role: samples by (function, file:line text), for the samples inside its programs."""
    script = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip,sym"], check=True,
                            capture_output=True, text=True).stdout
    out: dict[str, collections.Counter] = {role: collections.Counter() for role in ROLES}
    for block in script.split("\n\n"):
        frames = [line.split(None, 1) for line in block.strip().splitlines()]
        for depth, frame in enumerate(frames):
            if len(frame) < 2 or not frame[1].startswith("bpf_prog_"):
                continue
            address = int(frame[0], 16) - (1 if depth else 0)
            found = table.where(address)
            if found:
                role, file, line, text = found
                out[role][(table.function(file, line), f"{Path(file).name}:{line} {text.strip()}")] += 1
            break
    return out


def profile(label: str, args: argparse.Namespace, tmp: Path) -> dict:
    with ExitStack() as stack:
        net = stack.enter_context(TwoPath(*TOPOLOGIES[label]))
        programs = {role: [stack.enter_context(bpfsys.Program(path)) for path in net.programs[role]]
                    for role in ROLES}
        table = LineTable(programs)
        perf_data = tmp / f"{label}.data"
        record = ["perf", "record", "-a", "-g", "-F", str(args.freq), "-o", str(perf_data), "--",
                  "sleep", str(max(1.0, args.seconds - 1))]
        before = run_stats(programs)
        net.stream(["--frame-size", str(args.size), "--max-rate", "--duration", str(args.seconds)],
                   during=lambda: subprocess.run(record, check=True, capture_output=True))
        after = run_stats(programs)
        frames_in = after["sw1"][2] - before["sw1"][2]
        samples = attribute(perf_data, table)
        perf_data.unlink()
    return {"label": label, "size": args.size, "frames_in": frames_in,
            "ns_per_frame": {role: (after[role][0] - before[role][0]) / max(frames_in, 1) for role in ROLES},
            "samples": {role: [[fn, line, n] for (fn, line), n in counts.most_common()]
                        for role, counts in samples.items()}}


def report(result: dict, lines: int) -> None:
    print(f"{result['label']} at {result['size']} B: {result['frames_in']:,} frames entered sw1")
    for role in ROLES:
        rows = result["samples"][role]
        total = sum(n for *_, n in rows)
        ns = result["ns_per_frame"][role]
        print(f"  {role}: {ns:.0f} ns of program time per frame, {total} samples")
        if not total:
            continue
        by_function = collections.Counter()
        for function, _, n in rows:
            by_function[function] += n
        for function, n in by_function.most_common():
            print(f"    {function:<24} {100 * n / total:5.1f} %  {ns * n / total:6.0f} ns  (n {n})")
        print("    busiest lines:")
        for _, line, n in rows[:lines]:
            print(f"      {100 * n / total:5.1f} %  {line[:100]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=lambda text: text.split(","), default=list(DEFAULT_CASES),
                        help=f"comma-separated topologies of dataplane_pps (default {','.join(DEFAULT_CASES)})")
    parser.add_argument("--size", type=int, default=64, help="frame size in bytes")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of each stream")
    parser.add_argument("--freq", type=int, default=10000, help="perf samples per second and CPU")
    parser.add_argument("--lines", type=int, default=12, help="busiest source lines shown per switch")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    unknown = [label for label in args.cases if label not in TOPOLOGIES]
    if unknown:
        parser.error(f"--cases {','.join(unknown)} is not valid (valid: {', '.join(TOPOLOGIES)})")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    with ExitStack() as stack:
        stack.enter_context(bpfsys.RunTimeStats())
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="frerlab-profile-")))
        for label in args.cases:
            results.append(profile(label, args, tmp))
            if args.json:
                part = args.json.with_suffix(".tmp")
                part.write_text(json.dumps(results, indent=1))
                part.replace(args.json)
            report(results[-1], args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
