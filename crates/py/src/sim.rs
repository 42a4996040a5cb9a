//! Python bindings for crates/sim; `frerlab.sim` builds the JSON spec from a scenario file and
//! turns the JSON report into pandas DataFrames. Conversion only: checks live in crates/sim.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Runs the simulation described by `spec_json` (frersim's spec schema) without holding the
/// GIL and returns the report as JSON; a bad scenario raises ValueError naming the bad value.
#[pyfunction]
fn sim_run(py: Python<'_>, spec_json: String) -> PyResult<String> {
    py.detach(|| frersim::run_json(&spec_json))
        .map_err(PyValueError::new_err)
}

/// Adds this area's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim_run, m)?)?;
    Ok(())
}
