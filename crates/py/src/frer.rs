//! Python bindings for crates/frer (frerlab.frer wraps them).
use pyo3::prelude::*;

/// Adds this area's classes and functions to the extension module.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
