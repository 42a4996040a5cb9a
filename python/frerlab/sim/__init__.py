"""The packet-level TSN simulator with FRER: scenario files, runs returning pandas DataFrames,
parameter sweeps and zero-loss searches. The engine is the Rust crate frersim.

The names below, and the submodules, are loaded on first use (PEP 562): `frerlab sim` builds
its parser from this package, every frerlab command builds every parser, and importing the
simulator's Python side (pandas) would add about 0.3 s to each of them."""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: Public name -> the submodule that defines it.
_HOMES = {"SimResult": "api", "check": "api", "prepare": "api", "run": "api", "Scenario": "schema",
          "load_scenario": "schema", "sweep": "sweeps", "zero_loss_rate": "sweeps"}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"frerlab.sim.{_HOMES[name]}"), name)
    try:
        return import_module(f"frerlab.sim.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"frerlab.sim.{name}":
            raise
        raise AttributeError(f"module 'frerlab.sim' has no attribute {name!r}") from None
