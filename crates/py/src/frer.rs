//! Python bindings for crates/frer; `frerlab.frer` wraps them into the public Python API.
//! Conversions and error mapping only: parameter checks and messages live in crates/frer.
use std::net::IpAddr;

use frer::decode::SequenceDecoder;
use frer::generation::SequenceGenerator;
use frer::identify::{
    ActiveDestMacVlanIdentity, DestMacVlan, IpIdentity, MaskAndMatchIdentity, NextProtocol,
    NullIdentity, Pvid, SourceMacVlanIdentity, StreamHandle, StreamIdentifier, StreamIdentity,
    TagMatch,
};
use frer::latent::{LatentErrorDetector, LatentParamError, LatentParams};
use frer::recovery::{
    check_history_length, check_reset_timeout, Algorithm, RecoveryCounters, RecoveryParams,
    SequenceRecovery,
};
use frer::wire::MacAddr;
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

fn counters_dict<'py>(
    py: Python<'py>,
    counters: &RecoveryCounters,
) -> PyResult<Bound<'py, PyDict>> {
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
        Ok(Self {
            inner: SequenceRecovery::new(params).map_err(value_error)?,
        })
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

    /// The highest frame rate at which this function cannot lock a member stream out, or None
    /// when it never can (RecoveryParams::lockout_free_rate).
    fn lockout_free_rate(&self) -> Option<f64> {
        self.inner.params().lockout_free_rate()
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
        Self {
            inner: SequenceGenerator::new(),
        }
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

/// The sequence decode function with its encoding-error counter.
#[pyclass(name = "SequenceDecoder", module = "frerlab._native")]
#[derive(Default)]
struct PySequenceDecoder {
    inner: SequenceDecoder,
}

#[pymethods]
impl PySequenceDecoder {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// The frame's sequence number, or None without an R-TAG; ValueError if unreadable.
    fn decode(&mut self, frame: &[u8]) -> PyResult<Option<u16>> {
        Ok(self
            .inner
            .decode(frame)
            .map_err(value_error)?
            .map(|seq| seq.0))
    }

    /// frerCpsSeqEncErroredPackets.
    fn seq_enc_errored_packets(&self) -> u64 {
        self.inner.seq_enc_errored_packets()
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
        let difference = u64::try_from(difference)
            .map_err(|_| value_error(LatentParamError::Difference(difference)))?;
        let paths =
            u16::try_from(paths).map_err(|_| value_error(LatentParamError::Paths(paths)))?;
        let period = |name: &'static str, v: i64| {
            u64::try_from(v).map_err(|_| value_error(LatentParamError::Period(name, v)))
        };
        let params = LatentParams {
            difference,
            period_ns: period("period_ns", period_ns)?,
            paths,
            reset_period_ns: period("reset_period_ns", reset_period_ns)?,
        };
        let start = RecoveryCounters {
            passed_packets,
            discarded_packets,
            ..Default::default()
        };
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
        let counters = RecoveryCounters {
            passed_packets,
            discarded_packets,
            ..Default::default()
        };
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

fn mac(field: &str, text: &str) -> PyResult<MacAddr> {
    text.parse()
        .map_err(|e| value_error(format!("{field}: {e}")))
}

fn ip(field: &str, text: &str) -> PyResult<IpAddr> {
    text.parse().map_err(|_| {
        value_error(format!(
            "{field} {text:?} is not an IPv4 or IPv6 address (0.0.0.0 or :: to ignore)"
        ))
    })
}

fn tag_match(text: &str) -> PyResult<TagMatch> {
    match text {
        "tagged" => Ok(TagMatch::Tagged),
        "priority" => Ok(TagMatch::Priority),
        "all" => Ok(TagMatch::All),
        _ => Err(value_error(format!(
            "tagged {text:?} is not valid (\"tagged\", \"priority\" or \"all\")"
        ))),
    }
}

fn port_vid(pvid: i64) -> PyResult<Pvid> {
    Pvid::new(field("pvid", pvid, "1..=4094")?).map_err(value_error)
}

fn next_protocol(text: &str) -> PyResult<NextProtocol> {
    match text {
        "none" => Ok(NextProtocol::None),
        "udp" => Ok(NextProtocol::Udp),
        "tcp" => Ok(NextProtocol::Tcp),
        "sctp" => Ok(NextProtocol::Sctp),
        _ => Err(value_error(format!(
            "next_protocol {text:?} is not valid (\"none\", \"udp\", \"tcp\" or \"sctp\")"
        ))),
    }
}

/// A number from Python that must fit the field's type; out of it, the same message as the
/// core's range checks.
fn field<T: TryFrom<i64>>(name: &str, value: i64, valid: &str) -> PyResult<T> {
    T::try_from(value).map_err(|_| value_error(format!("{name} {value} is out of range ({valid})")))
}

/// A table of stream identities (802.1CB clause 6); the first match names a frame's stream.
#[pyclass(name = "StreamIdentifier", module = "frerlab._native")]
#[derive(Default)]
struct PyStreamIdentifier {
    inner: StreamIdentifier,
}

impl PyStreamIdentifier {
    fn add(&mut self, handle: i64, identity: StreamIdentity) -> PyResult<()> {
        let handle = StreamHandle(field("handle", handle, "0..=4294967295")?);
        self.inner.add(handle, identity).map_err(value_error)
    }

    fn active(&self, handle: i64) -> PyResult<ActiveDestMacVlanIdentity> {
        self.inner
            .entries()
            .iter()
            .find_map(|(h, identity)| match identity {
                StreamIdentity::ActiveDestMacVlan(active) if i64::from(h.0) == handle => {
                    Some(*active)
                }
                _ => None,
            })
            .ok_or_else(|| {
                value_error(format!(
                    "handle {handle} has no active destination MAC and VLAN identity"
                ))
            })
    }
}

#[pymethods]
impl PyStreamIdentifier {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Null stream identification (type 1).
    fn add_null(&mut self, handle: i64, dst_mac: &str, tagged: &str, vid: i64) -> PyResult<()> {
        let identity = NullIdentity {
            dst_mac: mac("dst_mac", dst_mac)?,
            tagged: tag_match(tagged)?,
            vid: field("vid", vid, "0..=4095")?,
        };
        self.add(handle, StreamIdentity::Null(identity))
    }

    /// Source MAC and VLAN stream identification (type 2).
    fn add_source_mac_vlan(
        &mut self,
        handle: i64,
        src_mac: &str,
        tagged: &str,
        vid: i64,
    ) -> PyResult<()> {
        let identity = SourceMacVlanIdentity {
            src_mac: mac("src_mac", src_mac)?,
            tagged: tag_match(tagged)?,
            vid: field("vid", vid, "0..=4095")?,
        };
        self.add(handle, StreamIdentity::SourceMacVlan(identity))
    }

    /// Active destination MAC and VLAN stream identification (type 3): down = on the wire;
    /// each side is (mac, tagged, vid, priority or None).
    fn add_active_dest_mac_vlan(
        &mut self,
        handle: i64,
        down: (String, String, i64, Option<i64>),
        up: (String, String, i64, Option<i64>),
    ) -> PyResult<()> {
        let side = |(mac_text, tagged, vid, priority): (String, String, i64, Option<i64>),
                    prefix: &str|
         -> PyResult<DestMacVlan> {
            DestMacVlan::new(
                mac(&format!("{prefix} mac"), &mac_text)?,
                tag_match(&tagged)?,
                field(&format!("{prefix} vid"), vid, "0..=4095")?,
                priority
                    .map(|p| field(&format!("{prefix} priority"), p, "0..=7"))
                    .transpose()?,
            )
            .map_err(|err| value_error(format!("{prefix}: {err}")))
        };
        let identity = ActiveDestMacVlanIdentity {
            down: side(down, "down")?,
            up: side(up, "up")?,
        };
        self.add(handle, StreamIdentity::ActiveDestMacVlan(identity))
    }

    /// IP stream identification (type 4).
    // One argument per Python keyword: the identity's fields, as 802.1CB names them.
    #[allow(clippy::too_many_arguments)]
    fn add_ip(
        &mut self,
        handle: i64,
        dst_mac: Option<&str>,
        tagged: &str,
        vid: i64,
        src_ip: &str,
        dst_ip: &str,
        dscp: i64,
        next_protocol: &str,
        src_port: i64,
        dst_port: i64,
    ) -> PyResult<()> {
        let identity = IpIdentity {
            dst_mac: dst_mac.map(|m| mac("dst_mac", m)).transpose()?,
            tagged: tag_match(tagged)?,
            vid: field("vid", vid, "0..=4095")?,
            src_ip: ip("src_ip", src_ip)?,
            dst_ip: ip("dst_ip", dst_ip)?,
            dscp: field("dscp", dscp, "0..=63, or 64 to ignore")?,
            next_protocol: self::next_protocol(next_protocol)?,
            src_port: field("src_port", src_port, "0..=65535, 0 to ignore")?,
            dst_port: field("dst_port", dst_port, "0..=65535, 0 to ignore")?,
        };
        self.add(handle, StreamIdentity::Ip(identity))
    }

    /// Mask-and-match stream identification (type 5).
    // One argument per Python keyword: the identity's fields, as 802.1CB names them.
    #[allow(clippy::too_many_arguments)]
    fn add_mask_and_match(
        &mut self,
        handle: i64,
        dst_mac: &str,
        dst_mac_mask: &str,
        src_mac: &str,
        src_mac_mask: &str,
        msdu_match: Vec<u8>,
        msdu_mask: Vec<u8>,
    ) -> PyResult<()> {
        let identity = MaskAndMatchIdentity {
            dst_mac: mac("dst_mac", dst_mac)?,
            dst_mac_mask: mac("dst_mac_mask", dst_mac_mask)?,
            src_mac: mac("src_mac", src_mac)?,
            src_mac_mask: mac("src_mac_mask", src_mac_mask)?,
            msdu_match,
            msdu_mask,
        };
        self.add(handle, StreamIdentity::MaskAndMatch(identity))
    }

    /// The handle of the first identity the frame, received on a port with `pvid`, matches,
    /// or None.
    fn identify(&self, frame: &[u8], pvid: i64) -> PyResult<Option<u32>> {
        let pvid = port_vid(pvid)?;
        Ok(self
            .inner
            .identify(frame, pvid)
            .map_err(value_error)?
            .map(|h| h.0))
    }

    /// The frame rewritten by the active identity `handle` ("down" toward the wire or "up"),
    /// or None if the frame does not carry that identity's other side.
    fn rewrite<'py>(
        &self,
        py: Python<'py>,
        handle: i64,
        frame: &[u8],
        direction: &str,
        pvid: i64,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let active = self.active(handle)?;
        let pvid = port_vid(pvid)?;
        let rewritten = match direction {
            "down" => active.rewrite_down(frame, pvid),
            "up" => active.rewrite_up(frame, pvid),
            _ => {
                return Err(value_error(format!(
                    "direction {direction:?} is not valid (\"down\" or \"up\")"
                )))
            }
        }
        .map_err(value_error)?;
        Ok(rewritten.map(|out| PyBytes::new(py, &out)))
    }
}

/// Adds this area's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySequenceRecovery>()?;
    m.add_class::<PySequenceGenerator>()?;
    m.add_class::<PySequenceDecoder>()?;
    m.add_class::<PyLatentErrorDetector>()?;
    m.add_class::<PyStreamIdentifier>()?;
    m.add_function(wrap_pyfunction!(push_rtag, m)?)?;
    m.add_function(wrap_pyfunction!(pop_rtag, m)?)?;
    m.add(
        "DEFAULT_HISTORY_LENGTH",
        frer::recovery::DEFAULT_HISTORY_LENGTH,
    )?;
    m.add(
        "DEFAULT_RESET_TIMEOUT_NS",
        frer::recovery::DEFAULT_RESET_TIMEOUT_NS,
    )?;
    m.add(
        "DEFAULT_INDIVIDUAL_RESET_TIMEOUT_NS",
        frer::recovery::DEFAULT_INDIVIDUAL_RESET_TIMEOUT_NS,
    )?;
    Ok(())
}
