//! Per-stream filtering and policing (IEEE 802.1Qci, 802.1Q 8.6.5.1 and 8.6.5.3) with the
//! meaning the eBPF data plane gives it (docs/dataplane.md, "Per-stream filtering and
//! policing"): a stream filter at a node takes the stream's frames received over one link (a
//! member path) or over any link, before the node's FRER functions; a frame whose SDU is above
//! `max_sdu` is dropped, else its flow meter, a colour-blind single-rate token bucket (MEF 10.3
//! with no excess rate), passes it (green: it takes its SDU's tokens) or drops it (red: it
//! takes none). Frames a node's own talker sends are not filtered. The bucket starts full and
//! earns tokens with the time exactly: they are counted in bit x picoseconds per second, so
//! `elapsed ps x CIR bit/s` is a whole number and no rounding accumulates.

use serde::{Deserialize, Serialize};

use crate::units::{BitsPerSec, Bytes, SimTime};

/// Bytes of a frame that are not its SDU besides an R-TAG: the two MAC addresses (12) and the
/// FCS (4). The simulator's frames carry no VLAN tag, so the SDU is the EtherType and payload.
pub const NON_SDU_BYTES: u32 = 16;

/// Largest committed burst size, in octets (the data plane's limit).
pub const MAX_BURST: u64 = 1_000_000_000;

/// Largest committed information rate, in bit/s (the data plane's limit).
pub const MAX_RATE: u64 = 1_000_000_000_000;

/// A stream filter of one stream at one node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterSpec {
    /// The node that filters.
    pub node: u32,
    /// Only frames received over this port's link (the port sending towards `node`); `None`:
    /// over any link.
    #[serde(default)]
    pub ingress: Option<u32>,
    /// Frames whose SDU is above this many octets are dropped; `None`: any size.
    #[serde(default)]
    pub max_sdu: Option<u32>,
    /// The flow meter; `None`: no policing.
    #[serde(default)]
    pub meter: Option<MeterSpec>,
}

/// A flow meter: a single-rate token bucket.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeterSpec {
    /// Committed information rate (SDU bits per second).
    pub rate: BitsPerSec,
    /// Committed burst size: the bucket's size in SDU octets.
    pub burst: Bytes,
}

impl FilterSpec {
    /// Checks filter `index` of `stream` against the ports (which node each port sends to).
    ///
    /// # Errors
    /// A message naming the bad value and what would be valid.
    pub fn check(&self, stream: &str, index: usize, ports_to: &[u32]) -> Result<(), String> {
        let owner = format!("stream {stream}: stream filter {index}");
        if let Some(port) = self.ingress {
            let to = ports_to.get(port as usize).ok_or_else(|| {
                format!(
                    "{owner}: ingress port {port} out of range (0..{})",
                    ports_to.len()
                )
            })?;
            if *to != self.node {
                let node = self.node;
                return Err(format!(
                    "{owner}: ingress port {port} sends to node {to}, not to the filter's node {node}"
                ));
            }
        }
        if self.max_sdu == Some(0) {
            return Err(format!(
                "{owner}: max_sdu 0 is out of range (>= 1, or none for any size)"
            ));
        }
        if let Some(m) = self.meter {
            if m.rate.0 > MAX_RATE {
                return Err(format!(
                    "{owner}: rate {} bit/s is out of range (0..={MAX_RATE})",
                    m.rate.0
                ));
            }
            if !(1..=MAX_BURST).contains(&m.burst.0) {
                return Err(format!(
                    "{owner}: burst {} bytes is out of range (1..={MAX_BURST})",
                    m.burst.0
                ));
            }
        }
        Ok(())
    }
}

/// Picoseconds per second: tokens are bits x this.
const PS_PER_S: u128 = 1_000_000_000_000;

/// A token bucket: tokens in bit x picoseconds per second.
#[derive(Clone, Debug)]
struct FlowMeter {
    rate: u128,
    size: u128,
    tokens: u128,
    last: SimTime,
}

impl FlowMeter {
    fn new(spec: MeterSpec) -> Self {
        let size = u128::from(spec.burst.0) * 8 * PS_PER_S;
        FlowMeter {
            rate: u128::from(spec.rate.0),
            size,
            tokens: size,
            last: SimTime::ZERO,
        }
    }

    /// Whether a frame of `sdu` octets at `now` is green (it takes its tokens) or red.
    fn green(&mut self, sdu: u32, now: SimTime) -> bool {
        let elapsed = u128::from(now.0.saturating_sub(self.last.0));
        self.tokens = (self.tokens + elapsed * self.rate).min(self.size);
        self.last = now;
        let cost = u128::from(sdu) * 8 * PS_PER_S;
        let green = self.tokens >= cost;
        if green {
            self.tokens -= cost;
        }
        green
    }
}

/// What a stream filter counted (named after ieee802-dot1q-psfp's counters).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FilterCounters {
    /// Frames the filter took.
    pub matching_frames: u64,
    /// Frames that passed the size check and the meter.
    pub passing_frames: u64,
    /// Frames within `max_sdu`.
    pub passing_sdu: u64,
    /// Frames above `max_sdu`, dropped.
    pub not_passing_sdu: u64,
    /// Frames red at the flow meter, dropped.
    pub red_frames: u64,
    /// SDU octets of the passing frames.
    pub passing_octets: u64,
}

/// A running stream filter.
#[derive(Clone, Debug)]
pub struct StreamFilter {
    /// The node that filters.
    pub node: u32,
    /// The port whose frames it takes; `None`: every port into `node`.
    pub ingress: Option<u32>,
    max_sdu: Option<u32>,
    meter: Option<FlowMeter>,
    /// Its counters.
    pub counters: FilterCounters,
}

impl StreamFilter {
    /// The filter of a checked `spec`.
    pub fn new(spec: &FilterSpec) -> Self {
        StreamFilter {
            node: spec.node,
            ingress: spec.ingress,
            max_sdu: spec.max_sdu,
            meter: spec.meter.map(FlowMeter::new),
            counters: FilterCounters::default(),
        }
    }

    /// Whether it takes a frame arriving at `node` over `port`.
    pub fn matches(&self, node: u32, port: u32) -> bool {
        self.node == node && self.ingress.map_or(true, |p| p == port)
    }

    /// A frame of `sdu` octets at `now`: whether it passes (counted either way).
    pub fn pass(&mut self, sdu: u32, now: SimTime) -> bool {
        let c = &mut self.counters;
        c.matching_frames += 1;
        if self.max_sdu.is_some_and(|max| sdu > max) {
            c.not_passing_sdu += 1;
            return false;
        }
        c.passing_sdu += 1;
        if let Some(meter) = self.meter.as_mut() {
            if !meter.green(sdu, now) {
                c.red_frames += 1;
                return false;
            }
        }
        c.passing_frames += 1;
        c.passing_octets += u64::from(sdu);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000_000;

    fn filter(max_sdu: Option<u32>, rate: u64, burst: u64) -> StreamFilter {
        StreamFilter::new(&FilterSpec {
            node: 1,
            ingress: Some(3),
            max_sdu,
            meter: Some(MeterSpec {
                rate: BitsPerSec(rate),
                burst: Bytes(burst),
            }),
        })
    }

    #[test]
    fn a_full_bucket_passes_its_burst_then_the_rate_earns_frames_exactly() {
        // 1 Mbit/s, 480 octets: ten 48-octet frames at once, then one per 384 us.
        let mut f = filter(None, 1_000_000, 480);
        let at = |t| SimTime(t);
        assert_eq!((0..11).filter(|_| f.pass(48, at(0))).count(), 10);
        assert!(
            !f.pass(48, at(384 * US - 1)),
            "1 ps short of a frame's tokens"
        );
        assert!(f.pass(48, at(384 * US)));
        // A long pause fills the bucket to its size, no more.
        assert_eq!(
            (0..11).filter(|_| f.pass(48, at(1_000_000 * US))).count(),
            10
        );
        let c = f.counters;
        assert_eq!(
            (
                c.matching_frames,
                c.passing_frames,
                c.red_frames,
                c.passing_octets
            ),
            (24, 21, 3, 21 * 48)
        );
    }

    #[test]
    fn a_frame_above_max_sdu_is_dropped_before_the_meter() {
        let mut f = filter(Some(100), 0, 150);
        assert!(!f.pass(101, SimTime::ZERO));
        assert!(f.pass(100, SimTime::ZERO));
        assert!(
            !f.pass(100, SimTime::ZERO),
            "a rate of 0: the burst, then red"
        );
        let c = f.counters;
        assert_eq!((c.not_passing_sdu, c.passing_sdu, c.red_frames), (1, 2, 1));
        assert!(f.matches(1, 3) && !f.matches(1, 2) && !f.matches(2, 3));
    }

    #[test]
    fn a_bad_filter_is_named_with_what_would_be_valid() {
        let mut spec = FilterSpec {
            node: 1,
            ingress: Some(0),
            max_sdu: None,
            meter: Some(MeterSpec {
                rate: BitsPerSec(1),
                burst: Bytes(0),
            }),
        };
        let err = |s: &FilterSpec| s.check("s", 2, &[2, 1]).unwrap_err();
        assert_eq!(
            err(&spec),
            "stream s: stream filter 2: ingress port 0 sends to node 2, not to the filter's node 1"
        );
        spec.ingress = Some(1);
        assert_eq!(
            err(&spec),
            "stream s: stream filter 2: burst 0 bytes is out of range (1..=1000000000)"
        );
        spec.ingress = Some(5);
        assert_eq!(
            err(&spec),
            "stream s: stream filter 2: ingress port 5 out of range (0..2)"
        );
    }
}
