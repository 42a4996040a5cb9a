"""The attack suite: every named attack (or the chosen ones) on a temporary testbed per recovery
algorithm, each without a defence and, if asked, under the rogue-rate guard with reset
(frerlab.dataplane.control.guard) and on a testbed that polices each path's copies (802.1Qci,
testbed --police), repeated; then one table of the harm.

A run's raw results are those of `frerlab attack run` (frerlab.attack.run: meta.json, the
tools' reports, inject.json, counters.json, result.json) in DIR/ALGORITHM/ATTACK/DEFENCE/rK,
with the guard's findings beside them (guard.json); the suite writes DIR/suite.json (one row per
run, then per algorithm, attack and defence the range over the repetitions), DIR/suite.csv and
DIR/suite.md from those rows alone. Each testbed is taken down at the end, also on failure and
Ctrl-C, and a guard never outlives its run.
"""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from frerlab.attack import run, spec
from frerlab.dataplane import control
from frerlab.errors import UsageError
from frerlab.files import write_atomic
from frerlab.testbed import bed

#: The columns of a row of the table, after its algorithm, attack and defence.
COUNTS = ("lost_to_attack", "lost_to_outage", "duplicates", "forged", "rogue", "guard_alarms")


@dataclass(frozen=True)
class Guard:
    """The rogue-rate guard's settings (with reset: an alarmed function that passed nothing is reset)."""

    threshold: int = 20
    period_s: float = 0.05


def run_suite(out: Path, attacks: list[str], algorithms: list[str], stream: run.Stream, reset_timeout_ms: int,
              repetitions: int = 1, guard: Guard | None = None, police: str | None = None, say=print) -> dict:
    """Runs the suite into `out` (raw results first) and returns the table. `police`: also run
    each attack on a testbed whose eliminating switches police each path's copies at this rate
    (testbed --police)."""
    known = spec.catalog()
    unknown = [a for a in attacks if a not in known]
    if unknown:
        raise UsageError(f"attack {unknown[0]!r} is not known (known: {', '.join(sorted(known))})")
    if not 1 <= repetitions <= 100:
        raise UsageError(f"repetitions {repetitions} is out of range (1..100)")
    # per testbed: its policing and the defences run on it
    setups = [(None, ["none", "guard"] if guard else ["none"])] + ([(police, ["police"])] if police else [])
    for algorithm in algorithms:
        for rate, _ in setups:
            bed.Settings(name="check", algorithm=algorithm, reset_timeout_ms=reset_timeout_ms, police_rate=rate).check()
    stream.check()
    rows = []
    for algorithm in algorithms:
        for rate, defences in setups:
            with bed.Testbed(name=f"as{os.getpid() % 100000}{algorithm[0]}{'p' if rate else ''}", algorithm=algorithm,
                             reset_timeout_ms=reset_timeout_ms, police_rate=rate) as tb:
                rows += _on(tb, attacks, algorithm, defences, stream, repetitions, guard, out, say)
    table = {"stream": stream.__dict__, "reset_timeout_ms": reset_timeout_ms, "guard": guard.__dict__ if guard else None,
             "police": police, "runs": rows, "groups": groups(rows)}
    write_atomic(out / "suite.json", json.dumps(table, indent=1))
    write_atomic(out / "suite.csv", _csv(rows))
    write_atomic(out / "suite.md", markdown(table))
    return table


def _on(tb: bed.Testbed, attacks: list[str], algorithm: str, defences: list[str], stream: run.Stream,
        repetitions: int, guard: Guard | None, out: Path, say) -> list[dict]:
    """Every attack on testbed `tb` under each of `defences` (none, guard, police: the testbed's
    own), `repetitions` times: a row per run."""
    chosen = {name: spec.attack(name) for name in attacks}
    settings = bed.read_state(tb.name)["settings"]
    for a in chosen.values():  # every one before the first runs
        run.check_fits(a, "a", settings, stream, tb.name)
    rows = []
    for name, a in chosen.items():
        for defence in defences:
            for k in range(1, repetitions + 1):
                where = out / algorithm / name / defence / f"r{k}"
                result, findings = _one(tb.name, a, stream, where, guard if defence == "guard" else None)
                rows.append(_row(algorithm, name, defence, k, result, findings))
                say(f"{algorithm} {name} {defence} r{k}: {result['verdict']}")
    return rows


def _one(tb_name: str, a: spec.Attack, stream: run.Stream, where: Path, guard: Guard | None) -> tuple[dict, list]:
    """One run of attack `a` on path a, under `guard` if given: its result and the guard's findings."""
    if guard is None:
        return run.run(tb_name, a, "a", stream, where), []
    sw2 = bed.read_state(tb_name)["dataplanes"]["sw2"]
    stop = threading.Event()
    found: list = []
    watcher = threading.Thread(target=lambda: found.extend(control.guard(
        sw2, guard.threshold, lambda finding: None, guard.period_s, reset=True, stop=stop.is_set)), daemon=True)
    watcher.start()
    try:
        result = run.run(tb_name, a, "a", stream, where)
    finally:
        stop.set()
        watcher.join()
    write_atomic(where / "guard.json", json.dumps({"guard": guard.__dict__, "findings": found}, indent=1))
    return result, found


def _row(algorithm: str, attack: str, defence: str, repetition: int, r: dict, findings: list) -> dict:
    d = r["listener"]
    return {"algorithm": algorithm, "attack": attack, "defence": defence, "repetition": repetition,
            "lost_to_attack": d["lost_to_attack"], "lost_to_outage": d["lost_to_outage"],
            "duplicates": d["duplicates"], "forged": d["forged"], "rogue": r["recovery"]["rogue_packets"],
            "guard_alarms": sum(f["alarms"] for f in findings), "recovered_s": r["recovered_s"],
            "detected_by": ", ".join(r["detected_by"]) or "nothing", "verdict": r["verdict"]}


def groups(rows: list[dict]) -> list[dict]:
    """Per algorithm, attack and defence: n and each count's range over the repetitions."""
    keyed: dict[tuple, list[dict]] = {}
    for row in rows:
        keyed.setdefault((row["algorithm"], row["attack"], row["defence"]), []).append(row)
    out = []
    for (algorithm, attack, defence), runs in keyed.items():
        group = {"algorithm": algorithm, "attack": attack, "defence": defence, "n": len(runs)}
        for count in COUNTS:
            values = [r[count] for r in runs]
            group[count] = [min(values), max(values)]
        recovered = [r["recovered_s"] for r in runs if r["recovered_s"] is not None]
        group["recovered_s"] = [min(recovered), max(recovered)] if recovered else None
        group["detected_by"] = sorted({r["detected_by"] for r in runs})
        out.append(group)
    return out


def _span(values: list | None, unit: str = "") -> str:
    if values is None:
        return "-"
    low, high = values
    text = f"{low:g}" if low == high else f"{low:g}..{high:g}"
    return text + unit


def markdown(table: dict) -> str:
    """The groups as a Markdown table, with what they were measured on."""
    s = table["stream"]
    lines = [f"Stream {s['rate_fps']} frames/s of {s['frame_size']} bytes for {s['duration_s']:g} s; "
             f"reset timeout {table['reset_timeout_ms']} ms; attacker on path a; ranges over n runs.",
             "" if not table["guard"] else
             f"Guard: more than {table['guard']['threshold']} rogue frames in {table['guard']['period_s']:g} s "
             "raise an alarm, and reset a function that passed nothing in that period.",
             "" if not table.get("police") else
             f"Police: each path's copies through a flow meter of {table['police']} (SDU) at the eliminating "
             "switch.", "",
             "| algorithm | attack | defence | n | genuine lost | lost to outage | duplicates | forged delivered "
             "| rogue | guard alarms | recovered (s) | shown by |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for g in table["groups"]:
        lines.append(f"| {g['algorithm']} | {g['attack']} | {g['defence']} | {g['n']} | "
                     + " | ".join(_span(g[c]) for c in COUNTS) + f" | {_span(g['recovered_s'])} | "
                     + "; ".join(g["detected_by"]) + " |")
    return "\n".join(lines) + "\n"


def _csv(rows: list[dict]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else ["algorithm"])
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()
