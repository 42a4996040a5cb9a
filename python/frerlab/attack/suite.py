"""The attack suite: every named attack (or the chosen ones) on a temporary testbed per recovery
algorithm (and the testbed's other recovery settings: history length, reset timeout,
take-no-sequence, individual recovery), each under the chosen defences — none, the rogue-rate
guard with reset (frerlab.dataplane.control.guard), policing of each path's copies (802.1Qci,
testbed --police), or both — repeated; then one table of the harm. An attack that ends after
the suite's stream (replay-wrap needs a wrap of the numbers recorded first) runs on a stream
lengthened to its end and one second more; its rows say so (`stream_s`). With `bounds`
(frerlab.attack.recommended) every row also carries the harm stated for it and whether the run
held to it.

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
import math
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from frerlab.attack import run, spec
from frerlab.dataplane import control
from frerlab.errors import UsageError
from frerlab.files import write_atomic
from frerlab.testbed import bed
from frerlab.units import rate_bps, size_bytes

#: The columns of a row of the table, after its algorithm, attack and defence.
COUNTS = ("lost_to_attack", "lost_to_outage", "duplicates", "forged", "rogue", "guard_alarms")
#: The defences a run can be under: the guard watches sw2, police is the testbed's own.
DEFENCES = ("none", "guard", "police", "guard+police")
#: The testbed settings a suite may set (bed.Settings fields), beside algorithm and policing rate.
TESTBED_FIELDS = ("history_length", "reset_timeout_ms", "take_no_sequence", "individual_recovery", "police_burst")


@dataclass(frozen=True)
class Guard:
    """The rogue-rate guard's settings (with reset: an alarmed function that passed nothing is reset)."""

    threshold: int = 20
    period_s: float = 0.05


def default_defences(guard: Guard | None, police: str | None) -> list[str]:
    """No defence, and each defence given, alone and together."""
    return [d for d in DEFENCES if (guard or "guard" not in d) and (police or "police" not in d)]


def run_suite(out: Path, attacks: list[str], algorithms: list[str], stream: run.Stream, testbed: dict | None = None,
              repetitions: int = 1, guard: Guard | None = None, police: str | None = None,
              defences: list[str] | None = None, bounds: Callable[[spec.Attack, run.Stream, dict], dict] | None = None,
              say=print) -> dict:
    """Runs the suite into `out` (raw results first) and returns the table. `testbed`: bed.Settings
    fields of TESTBED_FIELDS every testbed gets; `police`: the rate of the testbed that runs the
    police defences (testbed --police); `defences`: default_defences's when None; `bounds(attack,
    stream, row)`: the harm stated for a row ({"stated": text, "holds": bool})."""
    testbed = dict(testbed or {})
    known = spec.catalog()
    unknown = [a for a in attacks if a not in known]
    if unknown:
        raise UsageError(f"attack {unknown[0]!r} is not known (known: {', '.join(sorted(known))})")
    if not 1 <= repetitions <= 100:
        raise UsageError(f"repetitions {repetitions} is out of range (1..100)")
    extra = sorted(set(testbed) - set(TESTBED_FIELDS))
    if extra:
        raise UsageError(f"testbed setting {extra[0]!r} is not one a suite sets ({', '.join(TESTBED_FIELDS)})")
    defences = default_defences(guard, police) if defences is None else defences
    for d in defences:
        if d not in DEFENCES:
            raise UsageError(f"defence {d!r} is not valid ({', '.join(DEFENCES)})")
        for needs, given, option in (("guard", guard, "--guard THRESHOLD,PERIOD"), ("police", police, "--police RATE")):
            if needs in d and not given:
                raise UsageError(f"defence {d} needs {option}")
    # per testbed: its policing and the defences run on it
    setups = [(rate, chosen) for rate, chosen in
              ((None, [d for d in defences if "police" not in d]), (police, [d for d in defences if "police" in d]))
              if chosen]
    names = {(algorithm, rate): f"as{os.getpid() % 100000}{algorithm[0]}{'p' if rate else ''}"
             for algorithm in algorithms for rate, _ in setups}
    for (algorithm, rate), name in names.items():
        bed.Settings(name=name, algorithm=algorithm, police_rate=rate, **testbed).check()
    stream.check()
    settings = bed.Settings(**testbed)
    for a in (spec.attack(name) for name in attacks):  # every one before the first testbed is up
        run.check_fits(a, "a", asdict(settings), fitted(a, stream), next(iter(names.values())))
    rows = []
    for algorithm in algorithms:
        for rate, chosen in setups:
            with bed.Testbed(name=names[algorithm, rate], algorithm=algorithm, police_rate=rate, **testbed) as tb:
                rows += _on(tb, attacks, algorithm, chosen, stream, repetitions, guard, bounds, out, say)
    table = {"stream": stream.__dict__, "testbed": {f: getattr(settings, f) for f in TESTBED_FIELDS},
             "guard": guard.__dict__ if guard else None, "police": police, "defences": defences,
             "runs": rows, "groups": groups(rows)}
    write_atomic(out / "suite.json", json.dumps(table, indent=1))
    write_atomic(out / "suite.csv", _csv(rows))
    write_atomic(out / "suite.md", markdown(table))
    return table


def fitted(a: spec.Attack, stream: run.Stream) -> run.Stream:
    """The suite's stream, lengthened to a whole second past the attack's end if it ends later."""
    end = a.end_s()
    return stream if end < stream.duration_s else replace(stream, duration_s=float(math.ceil(end) + 1))


def _on(tb: bed.Testbed, attacks: list[str], algorithm: str, defences: list[str], stream: run.Stream,
        repetitions: int, guard: Guard | None, bounds, out: Path, say) -> list[dict]:
    """Every attack on testbed `tb` under each of `defences`, `repetitions` times: a row per run."""
    rows = []
    for name, a in ((name, spec.attack(name)) for name in attacks):
        for defence in defences:
            for k in range(1, repetitions + 1):
                where = out / algorithm / name / defence / f"r{k}"
                result, findings = _one(tb.name, a, fitted(a, stream), where, guard if "guard" in defence else None)
                row = _row(algorithm, name, defence, k, result, findings)
                if bounds is not None:
                    row.update(bounds(a, fitted(a, stream), row))
                rows.append(row)
                say(f"{algorithm} {name} {defence} r{k}: {result['verdict']}"
                    + ("" if bounds is None else f" [{'holds' if row['holds'] else 'EXCEEDS'}: {row['stated']}]"))
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
            "stream_s": r["meta"]["stream"]["duration_s"], "frames": r["injected"]["sent"],
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
        if "stated" in runs[0]:
            group["stated"] = runs[0]["stated"]
            group["holds"] = all(r["holds"] for r in runs)
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
    s, tb = table["stream"], table["testbed"]
    options = [name for name, on in (("take-no-sequence", tb["take_no_sequence"]),
                                     ("individual recovery", tb["individual_recovery"])) if on]
    stated = any("stated" in g for g in table["groups"])
    lines = [f"Stream {s['rate_fps']} frames/s of {s['frame_size']} bytes for {s['duration_s']:g} s (longer where a "
             f"row's attack ends later); history length {tb['history_length']}, reset timeout "
             f"{tb['reset_timeout_ms']} ms{''.join(', ' + o for o in options)}; attacker on path a; ranges over n runs.",
             "" if not table["guard"] else
             f"Guard: more than {table['guard']['threshold']} rogue frames in {table['guard']['period_s']:g} s "
             "raise an alarm, and reset a function that passed nothing in that period.",
             "" if not table.get("police") else
             f"Police: each path's copies through a flow meter of {rate_bps(table['police']) / 1e6:g} Mbit/s (SDU), "
             f"burst {size_bytes(tb['police_burst'])} octets, at the eliminating switch.", "",
             "| algorithm | attack | defence | n | genuine lost | lost to outage | duplicates | forged delivered "
             "| rogue | guard alarms | recovered (s) | shown by |" + (" stated harm | holds |" if stated else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if stated else "")]
    for g in table["groups"]:
        lines.append(f"| {g['algorithm']} | {g['attack']} | {g['defence']} | {g['n']} | "
                     + " | ".join(_span(g[c]) for c in COUNTS) + f" | {_span(g['recovered_s'])} | "
                     + "; ".join(g["detected_by"]) + " |"
                     + (f" {g['stated']} | {'yes' if g['holds'] else '**no**'} |" if stated else ""))
    return "\n".join(lines) + "\n"


def _csv(rows: list[dict]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else ["algorithm"])
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()
