"""The packet-level TSN simulator with FRER: scenario files, runs returning pandas DataFrames,
parameter sweeps and zero-loss searches. The engine is the Rust crate frersim."""

from frerlab.sim.api import SimResult, check, prepare, run
from frerlab.sim.scenario import Scenario, load_scenario
from frerlab.sim.sweep import sweep, zero_loss_rate

__all__ = ["Scenario", "SimResult", "check", "load_scenario", "prepare", "run", "sweep", "zero_loss_rate"]
