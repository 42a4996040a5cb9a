"""Running a campaign: the plan's units, mode by mode on a testbed of their own, each unit's
result written as it finishes, a progress bar over the whole campaign (step, trial, ETA), and
a summary at the end, also when the run is interrupted (Ctrl-C, SIGTERM) or a unit fails.

A unit that fails (a tool error, a search whose every trial was invalid) is stored with a
`failed` flag that invalidates it, and the campaign goes on. The testbed is named after the
results directory, so a run killed with SIGKILL leaves namespaces that the next `--resume`
removes before it starts. A `network` system is a topology file's network, brought up in
namespaces the same way (frerlab.net.namespaces) with its stream identified by the listener's
address alone. On real hosts (a `hosts` system) there is no testbed: the hosts are checked first
(pre-flight, recorded in metadata.json) and the tools run there over SSH.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from frerlab.bench.campaign import Campaign, HostsSystem, NetworkSystem, Unit, plan, point_label, select_steps
from frerlab.bench.results import ResultsDir
from frerlab.bench.search import GeneratorShortfall
from frerlab.bench.steps import Context, result, runners
from frerlab.bench.target import HostsTarget, NetworkTarget, Target, TestbedTarget
from frerlab.bench.trial import Flag
from frerlab.errors import ToolFailed, UsageError
from frerlab.net import namespaces
from frerlab.remote.hosts import Hosts, read_hosts
from frerlab.testbed import bed

#: The metrics a finished unit's line shows, per kind (every metric is in the results).
HEADLINES = {
    "tcp": ("throughput_mbps", "retransmits"),
    "throughput": ("throughput_mbps_loss_0", "throughput_mbps_loss_1e-05", "throughput_mbps_loss_0.005", "trials"),
    "latency": ("mean_us", "p99_9_us", "tsn_pass"),
    "loss_vs_load": ("loss_percent", "sent_load_percent"),
    "back_to_back": ("back_to_back_frames",),
    "recovery": ("recovery_ms", "lost_during_overload"),
    "failover": ("lost", "duplicates", "passed"),
    "threshold_sweep": ("zero_loss_threshold_load", "loss_onset_load"),
    "import": ("throughput_mbps", "frames_per_s", "loss_percent", "retransmits", "mean_us", "p99_9_us"),
}


def campaign_testbed(out: Path) -> str:
    """The testbed of the campaign writing into `out`: the same for every run into it."""
    return "bc" + hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:8]


def run_campaign(campaign: Campaign, text: str, out: Path, resume: bool = False,
                 console: Console | None = None, steps: list[str] | None = None) -> dict:
    """Runs (or completes) the campaign into `out`, only the steps of the kinds in `steps` if
    given (the rest stay for a later resume: the run ends "partial"); returns the summary."""
    console = console or Console(stderr=True)
    units = plan(campaign)
    selected = select_steps(campaign, units, steps)
    hosts = _hosts(campaign.system) if isinstance(campaign.system, HostsSystem) else None
    results = ResultsDir(out, campaign, text)
    done = set(results.open(resume))
    todo = [u for u in selected if u.id not in done]
    if done:
        console.print(f"resuming: {len(done)} of {len(units)} units done already")
    started, ended = time.time(), "failed"
    name = campaign_testbed(out)
    bed.down(name)  # what a killed run into the same directory left
    namespaces.down(name)
    kinds = runners()
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task(campaign.name, total=sum(u.estimate_s for u in selected),
                                completed=sum(u.estimate_s for u in selected if u.id in done))
            for mode in dict.fromkeys(u.mode for u in todo):
                with _target(campaign, hosts, mode, name, results) as target:
                    for unit in (u for u in todo if u.mode == mode):
                        where = results.start_unit(unit)
                        label = f"{unit.step} {mode} {point_label(unit.params)} r{unit.repetition}"

                        def note(text: str, label: str = label) -> None:
                            bar.update(task, description=f"{label}: {text}")

                        began = time.time()
                        outcome = _run_unit(kinds[unit.kind], Context(target, where, note),
                                            campaign.steps[unit.step_index], unit)
                        outcome |= {"started": began, "elapsed_s": time.time() - began}
                        results.finish_unit(unit, outcome)
                        bar.console.print(unit_line(unit, outcome), soft_wrap=True, highlight=False)
                        bar.advance(task, unit.estimate_s)
        ended = "complete" if len(done) + len(todo) == len(units) else "partial"
    except KeyboardInterrupt:
        ended = "interrupted"
        raise
    finally:
        summary = results.write_summary()
        results.log_run(started, ended)
    return summary


def _hosts(system: HostsSystem) -> Hosts:
    """The hosts file of a hosts system (its key files read), checked before anything is made."""
    hosts = read_hosts(system.hosts_file)
    if hosts.talker.interface is None:
        raise UsageError(f"{system.hosts_file}: talker.interface is missing: name the talker's interface under test")
    return hosts


@contextmanager
def _target(campaign: Campaign, hosts: Hosts | None, mode: str, name: str, results: ResultsDir) -> Iterator[Target]:
    """A testbed of `mode` or the topology's network, up while the block runs; or the hosts,
    checked (pre-flight, recorded in metadata.json) before the block runs."""
    system = campaign.system
    if isinstance(system, HostsSystem):
        from frerlab.remote.preflight import one_way_latency_allowed, preflight  # asyncssh: only when used
        from frerlab.remote.ssh import Session

        with Session(hosts) as session:
            report = preflight(session)
        clock = one_way_latency_allowed(report)
        results.add_metadata("hosts", {"preflight": report, "one_way_latency": {"allowed": clock[0], "why": clock[1]}})
        yield HostsTarget(mode, system.rate_bps, system.listener_address, tuple(system.frerlab), clock,
                          hosts_file=system.hosts_file.resolve(), talker_interface=hosts.talker.interface)
        return
    if isinstance(system, NetworkSystem):
        data, topo = system.load()
        stream = system.stream_of(topo)
        ends = topo.plans[stream.name]
        state = namespaces.up(topo, data, str(system.topology_file), name, by_address=True)
        try:
            first = namespaces.routes(topo)[ends.talker][ends.listener]  # the talker's link its stream leaves by
            yield NetworkTarget(mode, topo.link(first).rate, state["addresses"][ends.listener],
                                network=name, talker=ends.talker, listener=ends.listener, talker_link=first)
        finally:
            namespaces.down(name)
        return
    with bed.Testbed(**system.testbed_args(mode, name)) as tb:
        for path, changes in system.impair.items():
            tb.impair(path, "forward", **changes)
        yield TestbedTarget(mode, system.rate_bps, generator=system.generator, testbed=tb.name)


def _run_unit(run, ctx: Context, step, unit: Unit) -> dict:
    try:
        return run(ctx, step, unit.params)
    except (ToolFailed, GeneratorShortfall, OSError, json.JSONDecodeError) as err:  # a tool's output unreadable too
        return result({}, [Flag("failed", str(err), True)], {})


def unit_line(unit: Unit, outcome: dict) -> str:
    """One line for a finished unit: its headline metrics and flags."""
    shown = [f"{k} {_number(outcome['metrics'][k])}" for k in HEADLINES.get(unit.kind, ())
             if outcome["metrics"].get(k) is not None]
    flags = [f["name"] + ("" if f["invalidates"] else "?") for f in outcome["flags"]]
    state = "ok" if outcome["valid"] else "INVALID"
    return (f"{state:7} {unit.step} {unit.mode} {point_label(unit.params)} r{unit.repetition}: "
            f"{', '.join(shown) or 'no figures'}" + (f"  [{', '.join(flags)}]" if flags else ""))


def summary_lines(summary: dict) -> list[str]:
    """The headline metrics of every group with their statistics, the flags seen, and the
    FRER vs control comparisons of headline metrics."""
    lines = []
    for g in summary["groups"]:
        head = f"{g['step']} {g['mode']} {point_label(g['params'])}"
        flags = ", ".join(f"{name} in {count}" for name, count in g["flags"].items())
        invalid = g["units"] - g["valid_units"]
        lines.append(head + (f"  ({invalid} of {g['units']} units invalid)" if invalid else "")
                     + (f"  flags: {flags}" if flags else ""))
        for name in HEADLINES.get(g["kind"], ()):
            if g["metrics"].get(name):
                lines.append(f"    {name}: {g['metrics'][name]['text']}")
    headline = {name for names in HEADLINES.values() for name in names}
    found = [c for c in summary["comparisons"] if "text" in c and c["metric"] in headline]
    if found:
        lines.append("FRER vs control:")
        lines += [f"    {c['step']} {point_label(c['params'])} {c['metric']}: {c['text']}" for c in found]
    return lines


def _number(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
