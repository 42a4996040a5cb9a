"""The methods a campaign step can run, one module each, all with one signature:
`run(ctx, step, params) -> dict`, the unit's result: `metrics` (name -> number or None, what
the summary aggregates over repetitions), `flags` (frerlab.bench.trial.Flag records), `valid`
(no flag invalidates it) and `detail` (everything else worth keeping). Raw tool outputs are
written into `ctx.out` before the result is derived from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from frerlab.bench.target import Target
from frerlab.bench.trial import Flag


@dataclass(frozen=True)
class Context:
    """Where a unit runs and writes, and how it reports what it is doing."""

    target: Target
    out: Path
    note: Callable[[str], None] = lambda text: None


def result(metrics: dict[str, float | None], flags: list[Flag], detail: dict[str, Any]) -> dict[str, Any]:
    """A unit's result (see the package doc)."""
    return {"metrics": metrics, "flags": [asdict(f) for f in flags], "valid": not any(f.invalidates for f in flags),
            "detail": detail}


def runners() -> dict[str, Callable[[Context, Any, dict], dict]]:
    """kind -> run function."""
    from frerlab.bench.steps import (back_to_back, failover, latency, loss_vs_load, recovery, tcp, threshold_sweep,
                                     throughput)
    return {"tcp": tcp.run, "throughput": throughput.run, "latency": latency.run, "loss_vs_load": loss_vs_load.run,
            "back_to_back": back_to_back.run, "recovery": recovery.run, "failover": failover.run,
            "threshold_sweep": threshold_sweep.run}
