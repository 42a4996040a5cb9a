//! The scenario as the simulator reads it: plain data in canonical units (picoseconds, bits
//! per second, bytes) with nodes, ports and streams referred to by index. The Python side turns
//! a user's YAML (names, unit strings, paths) into this form; `check` rejects what would make
//! the model meaningless, naming the bad value and what would be valid.
//!
//! Why over 600 lines: it is every type of the scenario's plain-data form with its one `check`,
//! which must see them all together (the congestion specs live beside their models).

use serde::Deserialize;

use crate::attack::AttackSpec;
use crate::bcn::{BcnPointSpec, BcnReactionSpec};
use crate::fecn::{FecnPointSpec, FecnSourceSpec};
use crate::guard::GuardSpec;
use crate::pause::PauseSpec;
use crate::psfp::FilterSpec;
use crate::qcn::{QcnPointSpec, QcnReactionSpec};
use crate::units::{BitsPerSec, Bytes, SimTime};

/// Number of traffic classes of an egress port (IEEE 802.1Q).
pub const TRAFFIC_CLASSES: usize = 8;

/// A whole scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Seed of every random number in the run.
    pub seed: u64,
    /// Sources stop creating frames at this time; the run continues until the network is empty.
    pub duration: SimTime,
    /// Frames created before this time are left out of the stream metrics.
    #[serde(default)]
    pub warmup: SimTime,
    /// Length of one interval of the per-interval series.
    pub interval: SimTime,
    /// Record every transmission and drop (large; for tests and plots of short runs).
    #[serde(default)]
    pub trace: bool,
    /// Hosts and switches.
    pub nodes: Vec<NodeSpec>,
    /// Egress ports, each with the link it drives (one direction of a cable).
    pub ports: Vec<PortSpec>,
    /// Traffic streams with their routes and FRER functions.
    pub streams: Vec<StreamSpec>,
}

/// A host or switch.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Name used in reports.
    pub name: String,
    /// Store-and-forward processing delay added to every frame arriving at this node.
    #[serde(default)]
    pub processing_delay: SimTime,
    /// Shared buffer pool of all egress ports of this node; `None` is unlimited.
    #[serde(default)]
    pub shared_buffer: Option<Bytes>,
    /// Buffer allocation unit: a frame occupies its size rounded up to whole cells.
    #[serde(default = "one_byte")]
    pub cell: Bytes,
}

fn one_byte() -> Bytes {
    Bytes(1)
}

/// An egress port and the link it transmits on.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    /// Name used in reports (the link name and its direction).
    pub name: String,
    /// Index of the node that owns the port.
    pub from: u32,
    /// Index of the node at the other end of the link.
    pub to: u32,
    /// Line rate.
    pub rate: BitsPerSec,
    /// Propagation delay of the link.
    #[serde(default)]
    pub delay: SimTime,
    /// Bytes sent on the wire per frame on top of the frame (preamble, SFD, inter-frame gap).
    pub overhead: Bytes,
    /// Per-class queue limits; `None` is unlimited. Exactly 8 entries.
    pub queue_limits: Vec<Option<Bytes>>,
    /// Per-class credit-based shaper idleSlope; `None` is no shaper. Exactly 8 entries.
    pub idle_slopes: Vec<Option<BitsPerSec>>,
    /// Time-aware shaper gate control list; `None` keeps every gate open.
    #[serde(default)]
    pub gate_control: Option<GateControlSpec>,
    /// Intervals `[down, up)` during which the link loses every frame it carries.
    #[serde(default)]
    pub failures: Vec<(SimTime, SimTime)>,
    /// Random loss on the link.
    #[serde(default)]
    pub loss: LossSpec,
    /// IEEE 802.3x PAUSE: the far node may pause this port.
    #[serde(default)]
    pub pause: Option<PauseSpec>,
    /// QCN congestion point on this port's queues.
    #[serde(default)]
    pub qcn: Option<QcnPointSpec>,
    /// BCN congestion point on this port's queues.
    #[serde(default)]
    pub bcn: Option<BcnPointSpec>,
    /// FECN advertised rate of this port.
    #[serde(default)]
    pub fecn: Option<FecnPointSpec>,
    /// (time, rate) in increasing time: from each time on the port sends at that rate (an
    /// output-generated hotspot is an egress whose service rate drops).
    #[serde(default)]
    pub rate_changes: Vec<(SimTime, BitsPerSec)>,
    /// Attackers on the link, acting on the frames this port sends.
    #[serde(default)]
    pub attacks: Vec<AttackSpec>,
}

/// A cyclic gate control list (802.1Qbv).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateControlSpec {
    /// The time at which the first entry starts (modulo the cycle).
    #[serde(default)]
    pub base_time: SimTime,
    /// Entries in order: (gate states, one bit per traffic class; duration).
    pub entries: Vec<(u8, SimTime)>,
}

/// Random frame loss on a link.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossSpec {
    /// No random loss.
    #[default]
    None,
    /// Each frame lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Gilbert-Elliott two-state burst loss.
    GilbertElliott {
        /// Probability of moving from the good to the bad state, per frame.
        p_good_to_bad: f64,
        /// Probability of moving from the bad to the good state, per frame.
        p_bad_to_good: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

/// A stream: a source on a host, a route tree to the destination host, and FRER functions.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSpec {
    /// Name used in reports.
    pub name: String,
    /// Index of the talker host.
    pub source: u32,
    /// Index of the listener host.
    pub destination: u32,
    /// Traffic class of the stream's frames (its PCP mapped one to one).
    pub class: u8,
    /// Frame sizes (Ethernet frame with FCS, without preamble).
    pub frame_size: FrameSizeSpec,
    /// Departure process.
    pub pattern: PatternSpec,
    /// Offered load (peak rate for on/off).
    pub rate: BitsPerSec,
    /// Whether `rate` counts the 20 bytes of Ethernet L1 overhead per frame.
    pub rate_counts_l1: bool,
    /// Time of the first frame.
    #[serde(default)]
    pub start: SimTime,
    /// Stop after this many frames; `None` runs to the scenario duration.
    #[serde(default)]
    pub count: Option<u64>,
    /// The route tree: hop `i` is a port, its children the hops a frame takes after it.
    pub hops: Vec<HopSpec>,
    /// Hops a frame takes from the talker (more than one replicates at the talker).
    pub first_hops: Vec<u32>,
    /// Node with the sequence generation function (numbers frames before replication).
    #[serde(default)]
    pub generation: Option<u32>,
    /// Bytes the R-TAG adds while a frame carries a sequence number.
    #[serde(default)]
    pub rtag_bytes: u32,
    /// Sequence / individual recovery functions, applied in this order at their nodes.
    #[serde(default)]
    pub recovery: Vec<RecoverySpec>,
    /// Stream filters (802.1Qci) applied to the stream's frames where they arrive, before the
    /// node's FRER functions; of those that take a frame, the first in this order.
    #[serde(default)]
    pub filters: Vec<FilterSpec>,
    /// QCN reaction point: the stream's rate follows congestion notifications.
    #[serde(default)]
    pub qcn: Option<QcnReactionSpec>,
    /// BCN rate regulator: the stream's rate follows BCN feedback.
    #[serde(default)]
    pub bcn: Option<BcnReactionSpec>,
    /// FECN probing: the stream's rate follows its returned probes.
    #[serde(default)]
    pub fecn: Option<FecnSourceSpec>,
}

/// One hop of a route tree.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopSpec {
    /// The port the frame is sent from.
    pub port: u32,
    /// Hops that follow at the port's far node (none: the far node is the listener).
    pub next: Vec<u32>,
}

/// Frame size distribution.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum FrameSizeSpec {
    /// Every frame the same size.
    Fixed {
        /// Bytes.
        bytes: u32,
    },
    /// Uniform over `min..=max` bytes.
    Uniform {
        /// Smallest size.
        min: u32,
        /// Largest size.
        max: u32,
    },
    /// Exponential with the given mean, rounded to whole bytes, at least 1.
    Exponential {
        /// Mean size.
        mean: f64,
    },
}

/// Departure process of a source.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PatternSpec {
    /// Evenly spaced frames.
    Constant,
    /// Poisson departures.
    Poisson,
    /// Evenly spaced frames during `on`, silence during `off`, repeating.
    OnOff {
        /// Length of a burst.
        on: SimTime,
        /// Length of a pause.
        off: SimTime,
    },
}

/// A sequence recovery or individual recovery function.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverySpec {
    /// Node it runs on.
    pub node: u32,
    /// Only frames that arrived through this port (a member stream); `None`: all of them.
    #[serde(default)]
    pub ingress: Option<u32>,
    /// "vector" or "match".
    pub algorithm: String,
    /// frerSeqRcvyHistoryLength.
    pub history_length: u16,
    /// frerSeqRcvyResetMSec as a time; `None` never times out.
    #[serde(default)]
    pub reset_timeout: Option<SimTime>,
    /// Individual recovery (7.5): leaves the R-TAG on for a later sequence recovery.
    #[serde(default)]
    pub individual: bool,
    /// A sequence recovery function whose passed frames keep their R-TAG: a relay that
    /// recovers and forwards the frame with the same sequence number, to be replicated and
    /// recovered again further on (the relay's sequence encode function active on its output
    /// ports, 802.1CB 7.6). Without it a sequence recovery function takes the R-TAG off.
    #[serde(default)]
    pub keep_tag: bool,
    /// frerSeqRcvyTakeNoSequence.
    #[serde(default)]
    pub take_no_sequence: bool,
    /// The rogue-rate guard watching it, if any.
    #[serde(default)]
    pub guard: Option<GuardSpec>,
}

impl Spec {
    /// Parses the JSON form.
    ///
    /// # Errors
    /// The parser's message when the JSON does not match the schema, naming the field at
    /// the position where it stopped.
    pub fn from_json(text: &str) -> Result<Spec, String> {
        serde_json::from_str(text).map_err(|e| match field_at(text, e.line(), e.column()) {
            Some(field) => format!("scenario spec: field {field:?}: {e}"),
            None => format!("scenario spec: {e}"),
        })
    }

    /// Checks ranges and cross references.
    ///
    /// # Errors
    /// A message naming the first bad value and what would be valid.
    pub fn check(&self) -> Result<(), String> {
        let nodes = self.nodes.len() as u32;
        let ports = self.ports.len() as u32;
        let routes: Vec<&[HopSpec]> = self.streams.iter().map(|s| s.hops.as_slice()).collect();
        if self.interval.0 == 0 {
            return Err("interval 0 is out of range (> 0)".into());
        }
        for node in &self.nodes {
            if node.cell.0 == 0 {
                return Err(format!(
                    "node {}: cell 0 bytes is out of range (>= 1)",
                    node.name
                ));
            }
        }
        for (index, port) in self.ports.iter().enumerate() {
            let name = &port.name;
            if port.from >= nodes || port.to >= nodes {
                return Err(format!("port {name}: node index out of range (0..{nodes})"));
            }
            if port.rate.0 == 0 {
                return Err(format!("port {name}: rate 0 bit/s is out of range (> 0)"));
            }
            if port.queue_limits.len() != TRAFFIC_CLASSES
                || port.idle_slopes.len() != TRAFFIC_CLASSES
            {
                return Err(format!(
                    "port {name}: queue_limits and idle_slopes need {TRAFFIC_CLASSES} entries"
                ));
            }
            for slope in port.idle_slopes.iter().flatten() {
                if slope.0 == 0 || slope.0 > port.rate.0 {
                    return Err(format!(
                        "port {name}: idle slope {} bit/s is out of range (1..={} bit/s, the port rate)",
                        slope.0, port.rate.0
                    ));
                }
            }
            if let Some(gcl) = &port.gate_control {
                if gcl.entries.is_empty() || gcl.entries.iter().any(|(_, d)| d.0 == 0) {
                    return Err(format!(
                        "port {name}: gate control list needs entries of positive duration"
                    ));
                }
            }
            for (down, up) in &port.failures {
                if down >= up {
                    return Err(format!(
                        "port {name}: failure [{}, {}) ps is empty (down < up)",
                        down.0, up.0
                    ));
                }
            }
            check_loss(name, &port.loss)?;
            if let Some(pause) = &port.pause {
                check_pause(name, pause, &self.ports, port)?;
            }
            if let Some(cp) = &port.qcn {
                if cp.qeq == 0 || !(0.0..=64.0).contains(&cp.w) {
                    return Err(format!(
                        "port {name}: qcn qeq {} bytes, w {} are out of range (qeq >= 1, 0 <= w <= 64)",
                        cp.qeq, cp.w
                    ));
                }
            }
            if let Some(cp) = &port.bcn {
                check_bcn_point(name, cp)?;
            }
            if let Some(fp) = &port.fecn {
                check_fecn_point(name, fp)?;
            }
            check_rate_changes(port)?;
            for attack in &port.attacks {
                attack.check(name, index as u32, &routes)?;
            }
        }
        let bcn = self.streams.iter().any(|s| s.bcn.is_some());
        if bcn && self.ports.len() > usize::from(u16::MAX) + 1 {
            return Err(format!(
                "{} ports: BCN supports at most 65,536 (its feedback names the port in 16 bits)",
                self.ports.len()
            ));
        }
        for stream in &self.streams {
            check_stream(stream, nodes, ports, &self.ports)?;
        }
        Ok(())
    }
}

/// The innermost JSON key written before `line`:`column` (1-based, as serde_json reports
/// positions), so that a parse error can name the field instead of only a position.
fn field_at(text: &str, line: usize, column: usize) -> Option<&str> {
    let line_text = text.lines().nth(line.checked_sub(1)?)?;
    let before = line_text.get(..column.min(line_text.len()))?;
    let colon = before.rfind("\":")?;
    let start = before[..colon].rfind('"')? + 1;
    Some(&before[start..colon])
}

fn check_probability(owner: &str, field: &str, p: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(format!("{owner}: {field} {p} is out of range (0..=1)"))
    }
}

fn check_loss(name: &str, loss: &LossSpec) -> Result<(), String> {
    let owner = format!("port {name}");
    match *loss {
        LossSpec::None => Ok(()),
        LossSpec::Bernoulli { p } => check_probability(&owner, "loss p", p),
        LossSpec::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        } => {
            check_probability(&owner, "p_good_to_bad", p_good_to_bad)?;
            check_probability(&owner, "p_bad_to_good", p_bad_to_good)?;
            check_probability(&owner, "loss_good", loss_good)?;
            check_probability(&owner, "loss_bad", loss_bad)
        }
    }
}

fn check_pause(
    name: &str,
    pause: &PauseSpec,
    ports: &[PortSpec],
    port: &PortSpec,
) -> Result<(), String> {
    let reverse = ports.get(pause.reverse as usize);
    if reverse.map(|r| (r.from, r.to)) != Some((port.to, port.from)) {
        return Err(format!(
            "port {name}: pause reverse port {} is not the other direction of the link",
            pause.reverse
        ));
    }
    if pause.quanta == 0 || pause.xon >= pause.xoff {
        return Err(format!(
            "port {name}: pause quanta {} (1..=65535), xon {} below xoff {} bytes required",
            pause.quanta, pause.xon, pause.xoff
        ));
    }
    Ok(())
}

fn check_bcn_point(name: &str, cp: &BcnPointSpec) -> Result<(), String> {
    if cp.qeq == 0
        || !(0.0..=64.0).contains(&cp.w)
        || !(cp.pm > 0.0 && cp.pm <= 1.0)
        || cp.qsc < cp.qeq
    {
        return Err(format!(
            "port {name}: bcn qeq {} bytes, w {}, pm {}, qsc {} bytes are out of range \
             (qeq >= 1, 0 <= w <= 64, 0 < pm <= 1, qsc >= qeq)",
            cp.qeq, cp.w, cp.pm, cp.qsc
        ));
    }
    Ok(())
}

fn check_fecn_point(name: &str, fp: &FecnPointSpec) -> Result<(), String> {
    let ok = fp.interval.0 > 0
        && fp.qeq > 0
        && fp.a > 1.0
        && fp.b > 1.0
        && fp.c > 0.0
        && fp.c <= 1.0
        && fp.alpha > 0.0
        && fp.alpha <= 1.0
        && fp.n0 >= 1
        && fp.max_increase >= 1.0;
    if !ok {
        return Err(format!(
            "port {name}: fecn interval {} ps, qeq {}, a {}, b {}, c {}, alpha {}, n0 {}, max_increase {} \
             are out of range (interval > 0, qeq >= 1, a > 1, b > 1, 0 < c <= 1, 0 < alpha <= 1, \
             n0 >= 1, max_increase >= 1)",
            fp.interval.0, fp.qeq, fp.a, fp.b, fp.c, fp.alpha, fp.n0, fp.max_increase
        ));
    }
    Ok(())
}

fn check_rate_changes(port: &PortSpec) -> Result<(), String> {
    let name = &port.name;
    if port.rate_changes.iter().any(|(_, rate)| rate.0 == 0) {
        return Err(format!(
            "port {name}: a rate change to 0 bit/s (rates are > 0)"
        ));
    }
    if port.rate_changes.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(format!(
            "port {name}: rate changes must be in increasing time"
        ));
    }
    if !port.rate_changes.is_empty() && port.idle_slopes.iter().any(Option::is_some) {
        return Err(format!(
            "port {name}: rate changes cannot be combined with a credit-based shaper (its send slope follows the port rate)"
        ));
    }
    Ok(())
}

fn check_regulators(stream: &StreamSpec) -> Result<(), String> {
    let name = &stream.name;
    let count = [
        stream.qcn.is_some(),
        stream.bcn.is_some(),
        stream.fecn.is_some(),
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    if count > 1 {
        return Err(format!(
            "stream {name}: at most one of qcn, bcn and fecn per stream"
        ));
    }
    if let Some(rp) = &stream.qcn {
        check_reaction(name, rp, stream.rate)?;
    }
    if let Some(rp) = &stream.bcn {
        if !(rp.gi > 0.0 && rp.gd > 0.0 && rp.gd * f64::from(crate::bcn::MAX_QUANTISED_FB) < 1.0)
            || rp.ru.0 == 0
        {
            return Err(format!(
                "stream {name}: bcn gi {}, gd {}, ru {} bit/s are out of range (gi > 0, 0 < gd < 1/63, ru > 0)",
                rp.gi, rp.gd, rp.ru.0
            ));
        }
        if rp.min_rate.0 == 0 || rp.min_rate > stream.rate {
            return Err(format!(
                "stream {name}: bcn min_rate {} bit/s is out of range (1..={} bit/s, the stream rate)",
                rp.min_rate.0, stream.rate.0
            ));
        }
    }
    if let Some(fs) = &stream.fecn {
        if fs.interval.0 == 0 {
            return Err(format!(
                "stream {name}: fecn interval 0 is out of range (> 0)"
            ));
        }
    }
    Ok(())
}

fn check_reaction(name: &str, rp: &QcnReactionSpec, rate: BitsPerSec) -> Result<(), String> {
    // Gd times the largest quantised feedback must stay at most 1/2 (at most halving).
    let max_gd = 0.5 / f64::from(crate::qcn::MAX_QUANTISED_FB);
    if !(rp.gd > 0.0 && rp.gd <= max_gd) {
        return Err(format!(
            "stream {name}: qcn gd {} is out of range (0 < gd <= 1/126)",
            rp.gd
        ));
    }
    if rp.byte_counter == 0 || rp.timer.0 == 0 {
        return Err(format!(
            "stream {name}: qcn byte_counter and timer must be > 0"
        ));
    }
    if rp.min_rate.0 == 0 || rp.min_rate > rate {
        return Err(format!(
            "stream {name}: qcn min_rate {} bit/s is out of range (1..={} bit/s, the stream rate)",
            rp.min_rate.0, rate.0
        ));
    }
    Ok(())
}

fn check_stream(
    stream: &StreamSpec,
    nodes: u32,
    ports: u32,
    port_specs: &[PortSpec],
) -> Result<(), String> {
    let name = &stream.name;
    if stream.source >= nodes || stream.destination >= nodes {
        return Err(format!(
            "stream {name}: node index out of range (0..{nodes})"
        ));
    }
    if usize::from(stream.class) >= TRAFFIC_CLASSES {
        return Err(format!(
            "stream {name}: class {} is out of range (0..=7)",
            stream.class
        ));
    }
    if stream.rate.0 == 0 {
        return Err(format!("stream {name}: rate 0 bit/s is out of range (> 0)"));
    }
    match stream.frame_size {
        FrameSizeSpec::Fixed { bytes: 0 } => {
            return Err(format!(
                "stream {name}: frame size 0 is out of range (>= 1)"
            ))
        }
        FrameSizeSpec::Uniform { min, max } if min == 0 || min > max => {
            return Err(format!(
                "stream {name}: frame sizes {min}..={max} are not a range of sizes >= 1"
            ))
        }
        FrameSizeSpec::Exponential { mean } if mean.is_nan() || mean < 1.0 => {
            return Err(format!(
                "stream {name}: mean frame size {mean} is out of range (>= 1)"
            ))
        }
        _ => {}
    }
    if let PatternSpec::OnOff { on, .. } = stream.pattern {
        if on.0 == 0 {
            return Err(format!("stream {name}: on time 0 is out of range (> 0)"));
        }
    }
    let hops = stream.hops.len() as u32;
    if stream.first_hops.is_empty() {
        return Err(format!("stream {name}: needs at least one path"));
    }
    for &first in &stream.first_hops {
        let hop = stream
            .hops
            .get(first as usize)
            .ok_or_else(|| format!("stream {name}: hop {first} out of range"))?;
        if port_specs.get(hop.port as usize).map(|p| p.from) != Some(stream.source) {
            return Err(format!(
                "stream {name}: the first hop does not leave the talker"
            ));
        }
    }
    for hop in &stream.hops {
        let port = port_specs
            .get(hop.port as usize)
            .ok_or_else(|| format!("stream {name}: port {} out of range (0..{ports})", hop.port))?;
        if hop.next.is_empty() && port.to != stream.destination {
            return Err(format!(
                "stream {name}: a path ends at node {} instead of the listener",
                port.to
            ));
        }
        for &next in &hop.next {
            let next_hop = stream.hops.get(next as usize).filter(|_| next < hops);
            let next_port = next_hop.and_then(|h| port_specs.get(h.port as usize));
            if next_port.map(|p| p.from) != Some(port.to) {
                return Err(format!(
                    "stream {name}: hop after port {} does not leave node {}",
                    port.name, port.to
                ));
            }
        }
    }
    for r in &stream.recovery {
        if r.node >= nodes {
            return Err(format!(
                "stream {name}: recovery node {} out of range (0..{nodes})",
                r.node
            ));
        }
        if r.guard.is_some_and(|g| g.period.0 == 0) {
            return Err(format!(
                "stream {name}: guard period 0 is out of range (> 0)"
            ));
        }
    }
    let ports_to: Vec<u32> = port_specs.iter().map(|p| p.to).collect();
    for (index, filter) in stream.filters.iter().enumerate() {
        if filter.node >= nodes {
            return Err(format!(
                "stream {name}: stream filter {index}: node {} out of range (0..{nodes})",
                filter.node
            ));
        }
        filter.check(name, index, &ports_to)?;
        let arrives = |h: &HopSpec| match filter.ingress {
            Some(port) => h.port == port,
            None => ports_to[h.port as usize] == filter.node,
        };
        if !stream.hops.iter().any(arrives) {
            return Err(format!(
                "stream {name}: stream filter {index}: no frame of the stream arrives there"
            ));
        }
    }
    check_regulators(stream)?;
    if stream.generation.is_some_and(|g| g >= nodes) {
        return Err(format!(
            "stream {name}: generation node out of range (0..{nodes})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_error_names_the_field() {
        let err = Spec::from_json(r#"{"seed": 1, "duration": 1e30, "interval": 1}"#).unwrap_err();
        assert!(
            err.starts_with("scenario spec: field \"duration\": invalid type: floating point"),
            "{err}"
        );
    }
}
