//! Python bindings for the traffic crate: the generator and receiver as classes whose `step`
//! releases the GIL, configured and reported in JSON (the Python side owns the record types).
use frerlab_traffic::receiver::Receiver;
use frerlab_traffic::sender::Sender;
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

fn nanos(seconds: f64) -> u64 {
    (seconds.max(0.0) * 1e9) as u64
}

/// The traffic generator (`frerlab_traffic::sender::Sender`), configured by a JSON object.
#[pyclass(module = "frerlab._native")]
pub struct TrafficSender {
    inner: Sender,
}

#[pymethods]
impl TrafficSender {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        Ok(TrafficSender { inner: Sender::from_json(config_json).map_err(to_py)? })
    }

    /// Sends for at most `seconds`; True once finished.
    fn step(&mut self, py: Python<'_>, seconds: f64) -> PyResult<bool> {
        let inner = &mut self.inner;
        py.detach(|| inner.step(nanos(seconds))).map_err(to_py)
    }

    /// The sender report as JSON.
    fn report_json(&self) -> String {
        self.inner.report_json()
    }
}

/// The traffic receiver (`frerlab_traffic::receiver::Receiver`), configured by a JSON object.
#[pyclass(module = "frerlab._native")]
pub struct TrafficReceiver {
    inner: Receiver,
}

#[pymethods]
impl TrafficReceiver {
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        Ok(TrafficReceiver { inner: Receiver::from_json(config_json).map_err(to_py)? })
    }

    /// Receives for at most `seconds`; True once finished.
    fn step(&mut self, py: Python<'_>, seconds: f64) -> PyResult<bool> {
        let inner = &mut self.inner;
        py.detach(|| inner.step(nanos(seconds))).map_err(to_py)
    }

    /// The receiver report as JSON.
    fn report_json(&self) -> String {
        self.inner.report_json()
    }
}

/// Adds this area's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TrafficSender>()?;
    m.add_class::<TrafficReceiver>()?;
    Ok(())
}
