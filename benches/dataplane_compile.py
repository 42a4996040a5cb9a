"""Data plane configuration compile time (issue 33): parse_config and its plan for the two-path
bench's spread configurations, against the compiler of another git revision measured side by
side in the same run.

The configurations are frerlab.dataplane.twopath.spread_config's: sw1 numbers and replicates,
sw2 recovers and removes the R-TAG, each of N streams identified by its UDP ports (IP stream
identification, hashed identities), N = 1,024, 16,384 and 65,536 (--sizes). What is timed is
`parse_config(mapping)` followed by `.plan`: pydantic validation of the schema
(frerlab.dataplane.config) and compile_node (frerlab.dataplane.compiler), which validation
runs, from a mapping built beforehand (not timed), with the garbage collector as a program
has it (on, default thresholds; collected before each measurement). After each measurement
the collector's work still owed is timed too ("then gc"): gc.collect(1), which takes what is
left in the young generations to the oldest, then one full gc.collect(), the pass everything
in the oldest generation gets when it has grown by a quarter. (Since issue 33 validation
pauses the collector and collects the young generations on its way out, inside the timed
call; this shows that it does not leave more for later than the baseline does.)

The baseline is the same code at --baseline (default: `git merge-base HEAD origin/main`, or
HEAD when there is no origin/main): checked out with `git worktree add` into a temporary
directory (removed again at the end, also on failure, Ctrl-C or a plain kill), with this tree's built
extension (python/frerlab/_native*.so) linked in, since frerlab.dataplane.twopath imports it.
Both sides run in fresh subprocesses of this script (PYTHONPATH = that tree's python/), one
per round and side, the side that goes first alternating from round to round so machine
noise hits both alike; each subprocess measures every size and switch once.
Reported: median (min .. max) over --rounds of each side, and the ratio of the medians
new / baseline; the 1-minute load average at the start of each round; and whether the plans
of the first round are the same on both sides (SHA-256 of each NodePlan's repr; exit status 1
when not), which checks the 65,536-stream plans the test suite leaves to this bench.

    .venv/bin/python benches/dataplane_compile.py [--rounds 5] [--sizes 1024,16384,65536]
        [--baseline REV] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
SIZES = (1024, 16384, 65536)
ROLES = ("sw1", "sw2")
HISTORY = 32


def measure_here(sizes: list[int], digest: bool) -> list[dict]:
    """One measurement of each size and switch with the frerlab on sys.path (the child's side);
    with `digest`, also the SHA-256 of each plan's repr (the same text in every run: no sets)."""
    from frerlab.dataplane import twopath
    from frerlab.dataplane.config import parse_config

    rows = []
    for streams in sizes:
        for role in ROLES:
            # spread_config builds the mapping and validates it in one call: with parse_config
            # returning its input, it returns the mapping
            with mock.patch.object(twopath, "parse_config", side_effect=lambda data, source="config": data):
                data = twopath.spread_config(role, streams, HISTORY, "bench")
            gc.collect()
            start = time.perf_counter()
            cfg = parse_config(data, f"spread {role}")
            plan = cfg.plan
            seconds = time.perf_counter() - start
            start = time.perf_counter()
            gc.collect(1)
            gc.collect()
            gc_seconds = time.perf_counter() - start
            assert len(plan.handles) == streams, f"{len(plan.handles)} streams compiled, not {streams}"
            rows.append({"streams": streams, "role": role, "seconds": seconds, "gc_seconds": gc_seconds})
            if digest:
                rows[-1]["plan_sha256"] = hashlib.sha256(repr(plan).encode()).hexdigest()
            del cfg, plan, data
    return rows


def run_side(tree: Path, sizes: list[int], digest: bool) -> list[dict]:
    """measure_here in a subprocess whose frerlab is `tree`'s."""
    env = {**os.environ, "PYTHONPATH": str(tree / "python")}
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import dataplane_compile as b; "
            f"import frerlab; print(json.dumps([frerlab.__file__, b.measure_here({sizes!r}, {digest!r})]))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {tree} failed:\n{done.stderr.strip()}")
    package, rows = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(package).is_relative_to(tree / "python"):
        raise RuntimeError(f"measuring {tree} imported frerlab from {package}")
    return rows


def default_baseline() -> str:
    found = subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", "origin/main"], capture_output=True,
                           text=True, check=False)
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else "HEAD"


class Worktree:
    """`with Worktree(rev) as path:` a detached checkout of `rev` with this tree's built extension
    linked in; removed again when the block ends, however it ends."""

    def __init__(self, rev: str) -> None:
        self.rev = rev
        self.path = Path(tempfile.mkdtemp(prefix="frerlab-compile-baseline-")) / "tree"

    def __enter__(self) -> Path:
        try:
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(self.path), self.rev],
                           check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as err:
            shutil.rmtree(self.path.parent, ignore_errors=True)
            raise SystemExit(f"--baseline {self.rev!r}: git worktree add failed: {err.stderr.strip()}") from None
        try:
            for native in (REPO / "python" / "frerlab").glob("_native*.so"):
                link = self.path / "python" / "frerlab" / native.name
                if not link.exists():
                    link.symlink_to(native)
        except BaseException:
            self._remove()
            raise
        return self.path

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _remove(self) -> None:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(self.path)],
                       capture_output=True, check=False)
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True, check=False)
        shutil.rmtree(self.path.parent, ignore_errors=True)


def spread(values: list[float]) -> str:
    """median (min .. max)"""
    return f"{statistics.median(values):.3f} ({min(values):.3f} .. {max(values):.3f})"


def report(raw: dict) -> None:
    runs = raw["runs"]
    print(f"parse_config + plan of twopath.spread_config, seconds: median (min .. max) over {len(raw['loads'])} "
          f"rounds; baseline {raw['baseline']} ({raw['baseline_commit'][:12]}), new = this tree")
    for streams in raw["sizes"]:
        for role in ROLES:
            rows = {side: [r for r in runs[side] if r["streams"] == streams and r["role"] == role] for side in runs}
            base, new = ([r["seconds"] for r in rows[side]] for side in ("baseline", "new"))
            after = {side: statistics.median(r["gc_seconds"] for r in rows[side]) for side in rows}
            print(f"  {streams:>6} streams {role}: baseline {spread(base)}  new {spread(new)}  "
                  f"new/baseline {statistics.median(new) / statistics.median(base):.2f}  "
                  f"(then gc: baseline {after['baseline']:.3f}, new {after['new']:.3f})")
    print(f"load average (1 min) at the start of the rounds: {min(raw['loads']):.2f} .. {max(raw['loads']):.2f}; "
          f"{os.cpu_count()} CPUs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", type=lambda text: [int(v) for v in text.split(",")], default=list(SIZES),
                        help="numbers of streams, comma-separated (1..65536)")
    parser.add_argument("--baseline", default=None,
                        help="git revision of the baseline (default: merge-base of HEAD and origin/main, else HEAD)")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    if args.rounds < 1 or not all(1 <= n <= 65536 for n in args.sizes):
        parser.error("--rounds must be at least 1 and each of --sizes 1..65536")
    baseline = args.baseline or default_baseline()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{baseline}^{{commit}}"],
                            capture_output=True, text=True, check=False)
    if commit.returncode != 0:
        parser.error(f"--baseline {baseline!r} is not a commit of {REPO}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a plain kill removes the worktree too
    raw = {"baseline": baseline, "baseline_commit": commit.stdout.strip(), "sizes": args.sizes, "loads": [],
           "runs": {"new": [], "baseline": []}}
    with Worktree(raw["baseline_commit"]) as tree:
        for round_no in range(args.rounds):
            raw["loads"].append(os.getloadavg()[0])
            sides = [("new", REPO), ("baseline", tree)]
            for side, path in sides if round_no % 2 == 0 else sides[::-1]:
                raw["runs"][side].extend(dict(row, round=round_no) for row in run_side(path, args.sizes, round_no == 0))
            print(f"round {round_no + 1}/{args.rounds} done (load {raw['loads'][-1]:.2f})", file=sys.stderr,
                  flush=True)
    report(raw)
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1) + "\n")
    digests = {side: {(r["streams"], r["role"]): r["plan_sha256"] for r in rows if "plan_sha256" in r}
               for side, rows in raw["runs"].items()}
    differ = [f"{n} streams {role}" for (n, role), digest in digests["new"].items()
              if digests["baseline"][(n, role)] != digest]
    print(f"plans (repr) of the first round: {'differ for ' + ', '.join(differ) if differ else 'identical'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
