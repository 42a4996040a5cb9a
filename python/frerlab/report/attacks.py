"""The report's "FRER under attack" section, from stored attack results only (docs/security.md
says what each field means): per attack suite (`frerlab attack suite`: suite.json) the settings
it was measured on, its groups (per algorithm, attack and defence: n and each count's range over
the runs), its runs and one figure of the harm per attack; per attack run (`frerlab attack run`:
result.json, meta.json) the attack's values, the verdict line, the harm at the listener, what
the eliminating node counted, and the harm per sequence bin over stream time with the attack's
span marked.

The suite's settings are every key of suite.json beside its runs and groups, shown as they are
(a few known ones in words); a group's fields beyond the known ones get columns of their own,
so a suite written by a newer frerlab is shown, not refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from frerlab.report.chart import Figure, Scale, panel_references
from frerlab.report.figures import cut_spans
from frerlab.report.sources import Source
from frerlab.report.tables import Cell, Table

#: The harm counts, field -> name, in the order the figures and tables show them.
HARM = {"lost_to_attack": "genuine lost", "duplicates": "duplicates", "forged": "forged delivered"}
#: The same per sequence bin of a run (a bin's genuine frames lost include any lost to an outage the run made).
BIN_HARM = {"lost": "genuine lost", "duplicates": "duplicates", "forged": "forged delivered"}
#: A suite group's known columns after algorithm, attack, defence and n: field -> name.
GROUP_COUNTS = {"lost_to_attack": "genuine lost", "lost_to_outage": "lost to outage", "duplicates": "duplicates",
                "forged": "forged delivered", "rogue": "rogue", "guard_alarms": "guard alarms",
                "recovered_s": "recovered (s)"}
#: A suite group's fields shown in the leading columns or as "shown by".
GROUP_KEYS = {"algorithm", "attack", "defence", "n", "detected_by", *GROUP_COUNTS}
#: A suite run's known columns: field -> name (its other fields follow, named by their keys; the
#: verdict line shows as its first word, the line itself on hover).
RUN_COLUMNS = {"algorithm": "algorithm", "attack": "attack", "defence": "defence", "repetition": "run",
               **GROUP_COUNTS, "detected_by": "shown by", "verdict": "verdict"}
#: What the listener counted of an attack run, field -> (name, what it is).
LISTENER = {"expected": ("sent", "genuine frames the talker sent"),
            "received": ("received", "genuine frames delivered, each number once"),
            "lost": ("lost", "genuine frames never delivered"),
            "lost_to_outage": ("lost to the outage", "lost while the run cut both paths (inject-after-reset)"),
            "lost_to_attack": ("lost to the attack", "lost less those lost to the outage"),
            "duplicates": ("duplicates", "genuine frames delivered more than once"),
            "forged": ("forged delivered", "forged frames delivered, each number once"),
            "forged_arrivals": ("forged arrivals", "forged frames delivered, all of them"),
            "reordered": ("reordered", "genuine frames delivered after a later one")}
#: Symlog axes of counts: linear below 1 frame, so that 0 shows and 1 stands clear of it.
COUNT_TICKS = [0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]


@dataclass
class Section:
    """One attack run's or suite's part of the section: facts, a verdict, tables and figures."""

    id: str
    title: str
    intro: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    verdict: str | None = None
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def build(sources: list[Source]) -> list[Section]:
    """A section per attack suite and attack run, in the order given."""
    found = []
    for s in sources:
        if s.kind == "attack-suite":
            found.append(suite_section(s))
        elif s.kind == "attack":
            found.append(run_section(s))
    return found


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()


def _count(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _shown(value: Any) -> str:
    """A setting or field of any kind as text."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return _count(value)
    if isinstance(value, dict):
        return ", ".join(" ".join(_named(k, v)) for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    return str(value)


def _named(key: str, value: Any) -> tuple[str, str]:
    """A field's name and its value in words: `reset_timeout_ms` 200 is ("reset timeout", "200 ms")."""
    for suffix, unit in (("_ms", " ms"), ("_s", " s")):
        if key.endswith(suffix) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return key.removesuffix(suffix).replace("_", " "), f"{_shown(value)}{unit}"
    return key.replace("_", " "), _shown(value)


def _heading(key: str) -> str:
    """A field's column heading: `stream_s` is "stream (s)"."""
    for suffix in ("_ms", "_s"):
        if key.endswith(suffix):
            return f"{key.removesuffix(suffix).replace('_', ' ')} ({suffix[1:]})"
    return key.replace("_", " ")


# ---- a suite ----

def settings(suite: dict[str, Any]) -> list[tuple[str, str]]:
    """Every setting of suite.json (its keys beside runs and groups), the known ones in words."""
    found = []
    for key, value in suite.items():
        if key in ("runs", "groups"):
            continue
        if key == "stream":
            s = value
            text = (f"{_count(s['rate_fps'])} frames/s of {_count(s['frame_size'])} bytes for {s['duration_s']:g} s, "
                    f"counted in bins of {s['interval_s']:g} s")
            extra = {k: v for k, v in s.items() if k not in ("rate_fps", "frame_size", "duration_s", "interval_s")}
            text += f"; {_shown(extra)}" if extra else ""
        elif key == "guard" and isinstance(value, dict) and {"threshold", "period_s"} <= set(value):
            text = (f"the rogue-rate guard: more than {_shown(value['threshold'])} rogue frames in "
                    f"{_shown(value['period_s'])} s raise an alarm, and reset a function that passed nothing in "
                    "that period")
            extra = {k: v for k, v in value.items() if k not in ("threshold", "period_s")}
            text += f"; {_shown(extra)}" if extra else ""
        elif key == "police" and value is not None:
            text = f"each path's copies through a flow meter of {_shown(value)} (SDU) at the eliminating switch"
        else:
            found.append(_named(key, value) if value is not None else (key.replace("_", " "), "not used"))
            continue
        found.append((key, text))
    return found


def _range(values: list[float] | None, n: int) -> Cell:
    """A group's range over its n runs: one value when they agree, low..high otherwise; sorted by
    the high end (the worst run)."""
    if values is None:
        return Cell(None, "")
    low, high = values
    text = _count(low) if low == high else f"{_count(low)}..{_count(high)}"
    return Cell(high, text, f"over n = {n} run{'s' if n > 1 else ''}: lowest {_count(low)}, highest {_count(high)}")


def _extra_fields(groups: list[dict]) -> list[str]:
    """The fields of the groups beyond the known ones, in the order first met."""
    return list(dict.fromkeys(k for g in groups for k in g if k not in GROUP_KEYS))


def _extra_cell(value: Any, n: int) -> Any:
    """A group's field beyond the known ones: a [low, high] pair of numbers is a range."""
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) and value[0] <= value[1]:
        return _range(value, n)
    return _cell(value)


def _not_recovered(runs: list[dict], g: dict) -> int:
    return sum(1 for r in runs if (r["algorithm"], r["attack"], r["defence"]) == (g["algorithm"], g["attack"],
                                                                                    g["defence"])
               and r.get("recovered_s", 0) is None)


def groups_table(s: Source) -> Table:
    suite = s.suite
    extra = _extra_fields(suite["groups"])
    rows = []
    for g in suite["groups"]:
        n = g["n"]
        recovered = _range(g.get("recovered_s"), n)
        missing = _not_recovered(suite["runs"], g)
        if missing:
            recovered = Cell(recovered.value, f"{recovered.text} ({missing} of {n} not recovered by the stream's end)"
                             .lstrip(), recovered.title)
        rows.append([g["algorithm"], g["attack"], g["defence"], n,
                     *(_range(g.get(k), n) for k in GROUP_COUNTS if k != "recovered_s"), recovered,
                     Cell(None, "; ".join(g.get("detected_by", []))),
                     *(_extra_cell(g.get(k), n) for k in extra)])
    return Table(f"attack-groups-{_slug(s.label)}", f"Harm per attack and defence: {s.label}",
                 "Per recovery algorithm, attack and defence, over its n runs: each count's range (one value when the "
                 "runs agree, lowest..highest otherwise; sorted by the highest): genuine frames lost to the attack "
                 "(less those lost to an outage the run made), lost to that outage, duplicates and forged frames "
                 "delivered to the listener, the eliminating node's rogue frames, the guard's alarms, the time from "
                 "the attack's last frame until the stream was whole again, and the signals that showed the attack.",
                 ["algorithm", "attack", "defence", "n", *GROUP_COUNTS.values(), "shown by",
                  *(_heading(k) for k in extra)], rows)


def runs_table(s: Source) -> Table:
    runs = s.suite["runs"]
    extra = list(dict.fromkeys(k for r in runs for k in r if k not in RUN_COLUMNS))
    rows = [[*(_verdict(r["verdict"]) if k == "verdict" else _cell(r.get(k)) for k in (*RUN_COLUMNS, *extra)),
             "/".join((r["algorithm"], r["attack"], r["defence"], f"r{r['repetition']}"))] for r in runs]
    return Table(f"attack-runs-{_slug(s.label)}", f"Every run of the suite: {s.label}",
                 "One row per run, as suite.json holds it; the verdict's line on hover; each run's raw results are in "
                 "the directory named in the last column.",
                 [*RUN_COLUMNS.values(), *(_heading(k) for k in extra), "directory"], rows)


def _verdict(line: str) -> Cell:
    """A verdict line as its first words (HARM, NO HARM), the line on hover."""
    return Cell(None, line.split(":", 1)[0], line)


def _cell(value: Any) -> Any:
    """A field of any kind as a table cell: numbers stay numbers (they sort), the rest is text."""
    if value is None or isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return Cell(None, _shown(value))


def harm_figure(s: Source) -> Figure:
    """The harm of each attack, one panel per count and one row per algorithm, a colour per defence:
    the highest count over the group's runs, with the range down to the lowest where they differ."""
    groups = s.suite["groups"]
    rows = []
    for g in groups:
        for key, name in HARM.items():
            low, high = g[key]
            differ = g["n"] > 1 and low < high
            rows.append({"role": "mean", "series": g["defence"], "panel": name, "row": g["algorithm"],
                         "x": g["attack"], "y": high, "lo": low if differ else None, "hi": high if differ else None,
                         "n": str(g["n"]), "range": f"{_count(low)}..{_count(high)}" if differ else _count(high)})
    ns = sorted({g["n"] for g in groups})
    top = max((r["y"] for r in rows), default=0)
    n_text = ("Every point is one run (n = 1): no range." if ns == [1] else
              f"n = {ns[0]}..{ns[-1]} runs per point: the point is the highest count, the bar the range down to the "
              "lowest.")
    return Figure(f"attack-harm-{_slug(s.label)}", f"Harm per attack: {s.label}",
                  "What each attack delivered to the listener: genuine frames lost to the attack, duplicates and "
                  "forged frames delivered (one panel each; one row per recovery algorithm; a colour per defence), "
                  f"on a symlog axis (linear below 1 frame: 0 shows). {n_text} Hover a point for its n and range.",
                  "attack", "frames", rows, y_scale=Scale("symlog", constant=1, domain=[0, _top(top)]),
                  y_ticks=[t for t in COUNT_TICKS if t <= _top(top)], colour="series", mark="points",
                  x_names=list(dict.fromkeys(g["attack"] for g in groups)), tooltip={"range": "range over the runs"})


def _top(largest: float) -> float:
    return next((t for t in COUNT_TICKS if t >= largest and t > 0), COUNT_TICKS[-1])


def suite_section(s: Source) -> Section:
    suite = s.suite
    attacks = list(dict.fromkeys(g["attack"] for g in suite["groups"]))
    algorithms = list(dict.fromkeys(g["algorithm"] for g in suite["groups"]))
    defences = list(dict.fromkeys(g["defence"] for g in suite["groups"]))
    intro = (f"Attack suite {s.label}: {len(suite['runs'])} runs of {len(attacks)} attacks "
             f"({', '.join(attacks)}) with {', '.join(algorithms)} recovery, defences {', '.join(defences)}; "
             "the attacker on path a.")
    figures = [harm_figure(s)] if suite["groups"] else []
    return Section(f"under-attack-{_slug(s.label)}", f"Attack suite: {s.label}", intro, settings(suite),
                   tables=[groups_table(s), runs_table(s)], figures=figures)


# ---- a run ----

def run_facts(s: Source) -> list[tuple[str, str]]:
    r, meta = s.attack, s.meta
    stream = meta.get("stream") if isinstance(meta.get("stream"), dict) else {}
    described = (meta.get("attack") or {}).get("description") if isinstance(meta.get("attack"), dict) else None
    facts = [("attack", f"{r['attack']} ({r['values']})" + (f": {described}" if described else "")),
             ("attacked path", r["path"]),
             ("recovery", f"{r['algorithm']} at {r['node']}, history length {r['history_length']}, reset timeout "
                          f"{r['reset_timeout_s']:g} s")]
    if {"rate_fps", "frame_size", "duration_s", "interval_s"} <= set(stream):
        facts.append(("stream", f"{_count(stream['rate_fps'])} frames/s of {_count(stream['frame_size'])} bytes for "
                                f"{stream['duration_s']:g} s, counted in bins of {stream['interval_s']:g} s"))
    i = r["injected"]
    if {"sent", "frames"} <= set(i):
        facts.append(("injector", f"{_shown(i['sent'])} of {_shown(i['frames'])} frames sent"
                                  + (f" at {_shown(i['achieved_fps'])} frames/s" if i.get("achieved_fps") else "")
                                  + (f"; {_shown(i['not_sent'])} found the path's queue full" if i.get("not_sent") else "")
                                  + (f"; {_shown(i['skipped'])} had nothing recorded to send" if i.get("skipped") else "")))
    if r["attack_s"]:
        facts.append(("attack span", f"{r['attack_s'][0]:g} to {r['attack_s'][1]:g} s of stream time (first and "
                                     "last frame sent)"))
    facts.append(("recovered", "not harmed" if not _harmed(r) else "not by the stream's end" if r["recovered_s"] is None
                  else f"{r['recovered_s']:g} s after the attack's last frame"))
    if r["run"]:
        facts.append(("the run's steps", "; ".join(f"{x['what']} {x['t_s']:g} s" for x in r["run"])))
    return facts


def _harmed(r: dict) -> bool:
    d = r["listener"]
    return d["lost_to_attack"] > 0 or d["duplicates"] > 0 or d["forged"] > 0


def harm_table(s: Source) -> Table:
    d = s.attack["listener"]
    rows = [[name, d[k], what] for k, (name, what) in LISTENER.items() if k in d]
    return Table(f"attack-listener-{_slug(s.label)}", f"Harm at the listener: {s.label}",
                 "What the listener counted of the genuine stream and, apart, of the forged frames (their probes name "
                 "the genuine number whose R-TAG they carry).", ["count", "frames", "what it is"], rows)


def counters_table(s: Source) -> Table:
    """The eliminating node's counters over the run: its recovery function's (10.8), its port's
    on the attacked path, latent error detection; whether each is a signal that showed the attack."""
    r = s.attack
    shown = set(r["detected_by"])
    signal = {"rogue_packets": "rogue", "tagless_packets": "tagless", "lost_packets": "lost",
              "out_of_order_packets": "out-of-order", "resets": "resets"}
    rows = [["recovery function", k.removesuffix("_packets").replace("_", " "), v,
             "yes" if signal.get(k) in shown else ""] for k, v in r["recovery"].items()]
    # a testbed with --individual-recovery: the attacked path's individual function, in front
    rows += [[f"individual recovery, path {r['path']}", k.removesuffix("_packets").replace("_", " "), v,
              "yes" if any(x.startswith(f"{signal.get(k)} at ") and x.endswith("individual recovery") for x in shown)
              else ""] for k, v in (r.get("individual") or {}).items()]
    to_kernel = next((x for x in shown if x.startswith("left to the kernel")), None)
    rows += [["port", k.replace("_", " "), v, "yes" if k == "to_stack" and to_kernel else ""]
             for k, v in r["port"].items()]
    rows += [["latent error detection", k.replace("_", " "), Cell(None, "no monitor") if v is None else _cell(v),
              "yes" if k == "over_threshold" and v is True else ""] for k, v in r["latent"].items()]
    return Table(f"attack-counters-{_slug(s.label)}", f"What {r['node']} counted: {s.label}",
                 f"{r['node']}'s counters over the run: the stream's sequence recovery function (IEEE 802.1CB 10.8; "
                 "resets include the run's own management reset at its start), the attacked path's individual "
                 "recovery function where the testbed has one (7.5), its port on the attacked path (frames "
                 "of no stream are left to the kernel), and latent error detection (7.4.4: the drift of passed × "
                 "(paths − 1) − discarded against its threshold, and the alarms its monitor raised). 'shows it' marks "
                 f"the signals the run counts as showing the attack: {', '.join(r['detected_by']) or 'none'}.",
                 ["where", "counter", "change", "shows it"], rows)


def timeline_figure(s: Source) -> Figure:
    """Per sequence bin, the genuine frames lost, the duplicates and the forged frames delivered
    over stream time, one panel each; the attack's span (and any cut path) shaded in every panel."""
    r = s.attack
    intervals = r["intervals"]
    bin_s = intervals[1]["t_s"] - intervals[0]["t_s"] if len(intervals) > 1 else None
    rows = [{"role": "mean", "series": name, "panel": name, "x": i["t_s"], "y": i[key], "sent": str(i["sent"])}
            for key, name in BIN_HARM.items() for i in intervals]
    panels = list(BIN_HARM.values())
    end = intervals[-1]["t_s"] + (bin_s or 0)
    if r["attack_s"]:
        start, stop = r["attack_s"]  # one frame: a sliver, so that it shows
        panel_references(rows, panels, role="band", x=start, x2=max(stop, start + (bin_s or 0.1) / 10), label="attack")
    events = [(x["t_s"], x["what"].split(" ", 1)[1], x["what"].startswith("restore")) for x in r["run"]
              if x["what"].startswith(("cut ", "restore "))]
    for start, stop, paths in _overlapping(cut_spans(events, end)):
        panel_references(rows, panels, role="band", x=start, x2=stop, label=f"cut {', '.join(paths)}")
    top = max((x["y"] for x in rows if x["role"] == "mean"), default=0)
    width = f"bins of {bin_s:g} s" if bin_s else "one bin"
    binned, forged = sum(i["forged"] for i in intervals), r["listener"]["forged"]
    beyond = (f" {forged - binned} of the {forged} forged frames delivered are in no bin: the numbers they took are "
              "beyond the stream's." if forged > binned else "")
    return Figure(f"attack-timeline-{_slug(s.label)}", f"Harm over stream time: {s.label}",
                  f"Per sequence bin ({width} of the send schedule, drawn at the bin's start), one panel each: "
                  "genuine frames lost (to the attack, or to an outage the run made), duplicates (in the bin of the "
                  "frame they repeat: a replayed frame shows where its original was sent) and forged frames "
                  "delivered, on a symlog axis (linear below 1 frame: 0 shows). Grey spans: the attack, from its "
                  "first frame to its last" + (", and the paths the run cut" if events else "")
                  + f".{beyond} Verdict: {r['verdict']}",
                  "stream time (s)", "frames per bin", rows,
                  y_scale=Scale("symlog", constant=1, domain=[0, _top(top)]),
                  y_ticks=[t for t in COUNT_TICKS if t <= _top(top)], colour="series", columns=1,
                  mark="line+points" if len(intervals) <= 200 else "line", tooltip={"sent": "genuine sent in the bin"})


def _overlapping(spans: list[tuple[float, float, str]]) -> list[tuple[float, float, list[str]]]:
    """Spans that overlap as one, naming every path cut in it."""
    merged: list[tuple[float, float, list[str]]] = []
    for start, stop, path in sorted(spans):
        if merged and start <= merged[-1][1]:
            first, last, paths = merged[-1]
            merged[-1] = (first, max(last, stop), [*paths, path])
        else:
            merged.append((start, stop, [path]))
    return merged


def run_section(s: Source) -> Section:
    r = s.attack
    intro = f"Attack run {s.label}: {r['attack']} on path {r['path']}, {r['algorithm']} recovery at {r['node']}."
    figures = [timeline_figure(s)] if r["intervals"] else []
    return Section(f"under-attack-{_slug(s.label)}", f"Attack run: {s.label}", intro, run_facts(s), r["verdict"],
                   [harm_table(s), counters_table(s)], figures)
