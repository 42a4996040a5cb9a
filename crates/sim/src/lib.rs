//! A packet-level discrete-event simulator of TSN networks with IEEE 802.1CB FRER inside.
//!
//! Layers, dependencies one way only: `units` and `rng` <- `engine` (the event core: time
//! order, deterministic ties, no global state) <- models (`source`, `port` with `shaper`,
//! `metrics`, congestion control: `pause` for IEEE 802.3x, `bcn`, `fecn`, `qcn` for IEEE 802.1Qau,
//! `attack` for an attacker on a link, and its defences: `psfp` for 802.1Qci stream filters
//! and flow meters, `guard` for the rogue-rate guard) <-
//! `network` (a `Simulation` built from a `spec::Spec`, running the real FRER
//! functions of the `frer` crate) -> `report`. `run_json` is the whole thing as one call, the
//! form the Python bindings use.

#![forbid(unsafe_code)]

pub mod attack;
pub mod bcn;
pub mod engine;
pub mod fecn;
pub mod guard;
pub mod metrics;
pub mod network;
pub mod pause;
pub mod port;
pub mod psfp;
pub mod qcn;
pub mod report;
pub mod rng;
pub mod shaper;
pub mod source;
pub mod spec;
pub mod units;

pub use network::Simulation;
pub use spec::Spec;

/// Builds and runs the scenario given as JSON (see `spec::Spec`) and returns the report as
/// JSON.
///
/// # Errors
/// A message naming the bad value when the scenario is invalid.
pub fn run_json(spec_json: &str) -> Result<String, String> {
    let spec = Spec::from_json(spec_json)?;
    let mut sim = Simulation::new(&spec)?;
    sim.run();
    serde_json::to_string(&sim.report()).map_err(|e| format!("report: {e}"))
}
