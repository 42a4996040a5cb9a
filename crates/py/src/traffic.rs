//! Python bindings for the traffic crate: the generator and receiver as classes whose `step`
//! releases the GIL, configured and reported in JSON (the Python side owns the record types).
use frerlab_traffic::receiver::Receiver;
use frerlab_traffic::sender::Sender;
use frerlab_traffic::timestamping::Capability;
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
        Ok(TrafficSender {
            inner: Sender::from_json(config_json).map_err(to_py)?,
        })
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
        Ok(TrafficReceiver {
            inner: Receiver::from_json(config_json).map_err(to_py)?,
        })
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

/// What interface `name` can timestamp (ETHTOOL_GET_TS_INFO, as `ethtool -T`) and the stamps a
/// sender and a receiver on it use, as JSON (`frerlab_traffic::timestamping::Decision`).
#[pyfunction]
fn timestamp_capability(name: &str) -> PyResult<String> {
    Ok(Capability::of_interface(name)
        .map_err(to_py)?
        .decision()
        .to_json())
}

/// The same decision for a capability given as JSON (`so_timestamping`, `phc_index`,
/// `tx_types`, `rx_filters`), e.g. a real interface's with bits changed.
#[pyfunction]
fn timestamp_decision(capability_json: &str) -> PyResult<String> {
    Ok(Capability::from_json(capability_json)
        .map_err(to_py)?
        .decision()
        .to_json())
}

/// Adds this area's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TrafficSender>()?;
    m.add_class::<TrafficReceiver>()?;
    m.add_function(wrap_pyfunction!(timestamp_capability, m)?)?;
    m.add_function(wrap_pyfunction!(timestamp_decision, m)?)?;
    Ok(())
}
