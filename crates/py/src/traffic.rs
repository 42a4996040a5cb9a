//! Python bindings for the traffic crate.
use pyo3::prelude::*;

/// Adds this area's classes and functions to the extension module.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
