//! Python bindings for the path impairment element's delay line (crates/impair): one blocking
//! function, run with the GIL released by `python -m frerlab.impair.delayline`.
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::io;

fn to_py(err: io::Error) -> PyErr {
    if err.kind() == io::ErrorKind::InvalidInput {
        PyValueError::new_err(err.to_string())
    } else {
        PyOSError::new_err((err.raw_os_error().unwrap_or(0), err.to_string()))
    }
}

/// Runs the delay line described by `spec_json` (`frerlab_impair::line::LineSpec`) in this
/// process's network namespace until a `stop` request on its control socket.
#[pyfunction]
fn impair_delay_line(py: Python<'_>, spec_json: &str) -> PyResult<()> {
    py.detach(|| frerlab_impair::line::run_json(spec_json))
        .map_err(to_py)
}

/// Adds this area's functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(impair_delay_line, m)?)?;
    Ok(())
}
