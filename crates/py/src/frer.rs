//! Python bindings for crates/frer; `frerlab.frer` wraps them into the public Python API.
//! Conversions and error mapping only: parameter checks and messages live in crates/frer.
use frer::generation::SequenceGenerator;
use frer::latent::{LatentErrorDetector, LatentParamError, LatentParams};
use frer::recovery::{
    check_history_length, check_reset_timeout, Algorithm, RecoveryCounters, RecoveryParams,
    SequenceRecovery,
};
use frer::SeqNum;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

fn value_error(err: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(err.to_string())
}

/// A sequence number from Python: an int in 0..=65535.
fn seq_num(seq: i64) -> PyResult<SeqNum> {
    u16::try_from(seq)
        .map(SeqNum)
        .map_err(|_| value_error(format!("seq {seq} is out of range (0..=65535)")))
}

/// A time from Python: a non-negative int of nanoseconds.
fn time_ns(name: &str, value: i64) -> PyResult<u64> {
    u64::try_from(value)
        .map_err(|_| value_error(format!("{name} {value} is out of range (0..={})", i64::MAX)))
}

fn counters_dict<'py>(py: Python<'py>, counters: &RecoveryCounters) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in counters.entries() {
        dict.set_item(name, value)?;
    }
    Ok(dict)
}

/// One 802.1CB sequence recovery function (see frerlab.frer.SequenceRecovery).
#[pyclass(name = "SequenceRecovery", module = "frerlab._native")]
struct PySequenceRecovery {
    inner: SequenceRecovery,
}

#[pymethods]
impl PySequenceRecovery {
    #[new]
    #[pyo3(signature = (algorithm, history_length, reset_timeout_ns, individual_recovery, take_no_sequence))]
    fn new(
        algorithm: &str,
        history_length: i64,
        reset_timeout_ns: Option<i64>,
        individual_recovery: bool,
        take_no_sequence: bool,
    ) -> PyResult<Self> {
        let params = RecoveryParams {
            algorithm: algorithm.parse::<Algorithm>().map_err(value_error)?,
            history_length: check_history_length(history_length).map_err(value_error)?,
            reset_timeout_ns: check_reset_timeout(reset_timeout_ns).map_err(value_error)?,
            individual_recovery,
            take_no_sequence,
        };
        Ok(Self { inner: SequenceRecovery::new(params).map_err(value_error)? })
    }

    /// Processes one packet; returns the verdict name ("pass", "duplicate", "rogue", "tagless").
    fn receive(&mut self, seq: Option<i64>, now_ns: i64) -> PyResult<&'static str> {
        let seq = seq.map(seq_num).transpose()?;
        Ok(self.inner.receive(seq, time_ns("now_ns", now_ns)?).as_str())
    }

    /// Fires a due reset timeout at now_ns.
    fn advance(&mut self, now_ns: i64) -> PyResult<()> {
        self.inner.advance(time_ns("now_ns", now_ns)?);
        Ok(())
    }

    /// Management reset (SequenceRecoveryReset).
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// The clause-10 counters as a dict.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        counters_dict(py, self.inner.counters())
    }

    /// (RecovSeqNum, TakeAny).
    fn state(&self) -> (u16, bool) {
        (self.inner.recov_seq_num().0, self.inner.take_any())
    }
}

/// The 802.1CB sequence generation function.
#[pyclass(name = "SequenceGenerator", module = "frerlab._native")]
struct PySequenceGenerator {
    inner: SequenceGenerator,
}

#[pymethods]
impl PySequenceGenerator {
    #[new]
    fn new() -> Self {
        Self { inner: SequenceGenerator::new() }
    }

    /// The number for the next frame.
    fn next_seq(&mut self) -> u16 {
        self.inner.next_seq().0
    }

    /// SequenceGenerationReset.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// frerCpsSeqGenResets.
    fn resets(&self) -> u64 {
        self.inner.resets()
    }
}

/// Latent error detection over a recovery function's counters.
#[pyclass(name = "LatentErrorDetector", module = "frerlab._native")]
struct PyLatentErrorDetector {
    inner: LatentErrorDetector,
}

#[pymethods]
impl PyLatentErrorDetector {
    #[new]
    #[pyo3(signature = (difference, period_ns, paths, reset_period_ns, start_ns, passed_packets, discarded_packets))]
    fn new(
        difference: i64,
        period_ns: i64,
        paths: i64,
        reset_period_ns: i64,
        start_ns: i64,
        passed_packets: u64,
        discarded_packets: u64,
    ) -> PyResult<Self> {
        let difference =
            u64::try_from(difference).map_err(|_| value_error(LatentParamError::Difference(difference)))?;
        let paths = u16::try_from(paths).map_err(|_| value_error(LatentParamError::Paths(paths)))?;
        let period = |name: &'static str, v: i64| {
            u64::try_from(v).map_err(|_| value_error(LatentParamError::Period(name, v)))
        };
        let params = LatentParams {
            difference,
            period_ns: period("period_ns", period_ns)?,
            paths,
            reset_period_ns: period("reset_period_ns", reset_period_ns)?,
        };
        let start = RecoveryCounters { passed_packets, discarded_packets, ..Default::default() };
        let inner = LatentErrorDetector::new(params, time_ns("start_ns", start_ns)?, &start)
            .map_err(value_error)?;
        Ok(Self { inner })
    }

    /// Runs the due test and reset; returns (condition, difference, at_ns) if the test fired.
    fn poll(
        &mut self,
        now_ns: i64,
        passed_packets: u64,
        discarded_packets: u64,
    ) -> PyResult<Option<(&'static str, i64, u64)>> {
        let counters = RecoveryCounters { passed_packets, discarded_packets, ..Default::default() };
        let fired = self.inner.poll(time_ns("now_ns", now_ns)?, &counters);
        Ok(fired.map(|e| (e.condition.as_str(), e.difference, e.at_ns)))
    }

    /// frerCpsSeqRcvyLatentErrorResets.
    fn latent_error_resets(&self) -> u64 {
        self.inner.latent_error_resets()
    }
}

/// The frame with an R-TAG carrying `seq` after the MAC addresses and any VLAN tags.
#[pyfunction]
fn push_rtag<'py>(py: Python<'py>, frame: &[u8], seq: i64) -> PyResult<Bound<'py, PyBytes>> {
    let tagged = frer::wire::push_rtag(frame, seq_num(seq)?).map_err(value_error)?;
    Ok(PyBytes::new(py, &tagged))
}

/// (sequence number, the frame without its R-TAG).
#[pyfunction]
fn pop_rtag<'py>(py: Python<'py>, frame: &[u8]) -> PyResult<(u16, Bound<'py, PyBytes>)> {
    let (seq, untagged) = frer::wire::pop_rtag(frame).map_err(value_error)?;
    Ok((seq.0, PyBytes::new(py, &untagged)))
}

/// Adds this area's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySequenceRecovery>()?;
    m.add_class::<PySequenceGenerator>()?;
    m.add_class::<PyLatentErrorDetector>()?;
    m.add_function(wrap_pyfunction!(push_rtag, m)?)?;
    m.add_function(wrap_pyfunction!(pop_rtag, m)?)?;
    Ok(())
}
