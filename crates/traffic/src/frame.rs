//! Frame sizes and rates on Ethernet, with the units always explicit.
//!
//! A frame size is the Ethernet frame from destination MAC to FCS inclusive, as in RFC 2544
//! (64..1518, jumbo beyond). On the wire each frame also costs 20 bytes of preamble, start
//! delimiter and inter-frame gap, so a rate may be given at layer 1 (with those 20 bytes),
//! at layer 2 (frame bytes only) or in frames per second; [`Rate::frames_per_sec`] converts.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Ethernet header (14) + FCS (4) + IPv4 header (20) + UDP header (8), untagged (RFC 2544).
pub const UDP_OVERHEAD: u32 = 46;
/// Preamble (7) + start-of-frame delimiter (1) + minimum inter-frame gap (12).
pub const L1_OVERHEAD: u32 = 20;
/// Frame check sequence, added by the NIC: software never writes it.
pub const FCS_LEN: u32 = 4;
/// The frame sizes RFC 2544 section 9.1 asks for on Ethernet.
pub const RFC2544_FRAME_SIZES: [u32; 7] = [64, 128, 256, 512, 1024, 1280, 1518];
/// Smallest Ethernet frame.
pub const MIN_FRAME: u32 = 64;
/// Largest standard (non-jumbo) Ethernet frame, untagged.
pub const MAX_STANDARD_FRAME: u32 = 1518;
/// The usual jumbo frame: 9000-byte MTU plus Ethernet header and FCS.
pub const JUMBO_FRAME: u32 = 9018;
/// Largest frame accepted (9216-byte jumbo limits of common switches).
pub const MAX_FRAME: u32 = 9216;

/// An Ethernet frame size in bytes, FCS included, checked to be in `MIN_FRAME..=MAX_FRAME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FrameSizeInput", into = "u32")]
pub struct FrameSize(u32);

/// A frame size as configuration may give it: bytes, or text for [`FrameSize::parse`].
#[derive(Deserialize)]
#[serde(untagged)]
enum FrameSizeInput {
    Bytes(u32),
    Text(String),
}

impl FrameSize {
    /// A checked frame size.
    ///
    /// # Errors
    /// When `bytes` is outside `64..=9216`.
    pub fn new(bytes: u32) -> Result<Self, String> {
        if (MIN_FRAME..=MAX_FRAME).contains(&bytes) {
            Ok(Self(bytes))
        } else {
            Err(format!(
                "frame size {bytes} is out of range ({MIN_FRAME}..={MAX_FRAME} bytes, FCS included)"
            ))
        }
    }

    /// Parses a size in bytes or one of the names `min` (64), `max` (1518), `jumbo` (9018).
    ///
    /// # Errors
    /// When the text is neither a number in range nor a known name.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "min" => Self::new(MIN_FRAME),
            "max" => Self::new(MAX_STANDARD_FRAME),
            "jumbo" => Self::new(JUMBO_FRAME),
            other => other.parse::<u32>().map_err(|_| {
                format!("frame size {text:?} is not valid (a number of bytes {MIN_FRAME}..={MAX_FRAME}, or min, max, jumbo)")
            })
            .and_then(Self::new),
        }
    }

    /// Bytes from destination MAC to FCS inclusive.
    pub fn bytes(self) -> u32 {
        self.0
    }

    /// Bytes a sender hands to the NIC (the frame without FCS).
    pub fn bytes_without_fcs(self) -> u32 {
        self.0 - FCS_LEN
    }

    /// UDP payload bytes that make an untagged IPv4 frame of this size.
    pub fn udp_payload(self) -> u32 {
        self.0 - UDP_OVERHEAD
    }

    /// Bits one frame occupies on the wire at layer 1 (with preamble and gap).
    pub fn l1_bits(self) -> u64 {
        u64::from(self.0 + L1_OVERHEAD) * 8
    }

    /// Bits one frame counts at layer 2 (frame bytes only).
    pub fn l2_bits(self) -> u64 {
        u64::from(self.0) * 8
    }
}

impl TryFrom<FrameSizeInput> for FrameSize {
    type Error = String;
    fn try_from(input: FrameSizeInput) -> Result<Self, String> {
        match input {
            FrameSizeInput::Bytes(bytes) => Self::new(bytes),
            FrameSizeInput::Text(text) => Self::parse(&text),
        }
    }
}

impl From<FrameSize> for u32 {
    fn from(size: FrameSize) -> u32 {
        size.0
    }
}

impl fmt::Display for FrameSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

/// An offered rate with its unit, or "as fast as the host can send".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Layer-1 bits per second (frame + 20 bytes preamble and gap).
    L1BitsPerSec(f64),
    /// Layer-2 bits per second (frame bytes, FCS included).
    L2BitsPerSec(f64),
    /// Frames per second.
    FramesPerSec(f64),
    /// No pacing: send back to back.
    Max,
}

impl Rate {
    /// Frames per second for frames of `size`; `None` for [`Rate::Max`].
    ///
    /// # Errors
    /// When the rate is not a positive finite number.
    pub fn frames_per_sec(self, size: FrameSize) -> Result<Option<f64>, String> {
        let (value, unit) = match self {
            Rate::L1BitsPerSec(v) => (v, "L1 bit/s"),
            Rate::L2BitsPerSec(v) => (v, "L2 bit/s"),
            Rate::FramesPerSec(v) => (v, "frames/s"),
            Rate::Max => return Ok(None),
        };
        if !(value.is_finite() && value > 0.0) {
            return Err(format!(
                "rate {value} {unit} is not valid (a positive number)"
            ));
        }
        Ok(Some(match self {
            Rate::L1BitsPerSec(v) => v / size.l1_bits() as f64,
            Rate::L2BitsPerSec(v) => v / size.l2_bits() as f64,
            _ => value,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2544_line_rate_at_1g() {
        let fps = |bytes| Rate::L1BitsPerSec(1e9).frames_per_sec(FrameSize::new(bytes).unwrap());
        assert_eq!(fps(64).unwrap().unwrap().floor(), 1_488_095.0);
        assert_eq!(fps(1518).unwrap().unwrap().floor(), 81_274.0);
    }

    #[test]
    fn payload_and_names() {
        assert_eq!(FrameSize::parse("64").unwrap().udp_payload(), 18);
        assert_eq!(FrameSize::parse("max").unwrap().udp_payload(), 1472);
        assert_eq!(FrameSize::parse("jumbo").unwrap().bytes(), 9018);
        assert_eq!(FrameSize::new(1518).unwrap().bytes_without_fcs(), 1514);
    }

    #[test]
    fn bad_sizes_and_rates_are_named() {
        assert_eq!(
            FrameSize::new(63).unwrap_err(),
            "frame size 63 is out of range (64..=9216 bytes, FCS included)"
        );
        assert!(FrameSize::parse("huge").unwrap_err().contains("\"huge\""));
        let size = FrameSize::new(64).unwrap();
        assert!(Rate::FramesPerSec(0.0)
            .frames_per_sec(size)
            .unwrap_err()
            .contains("0 frames/s"));
        assert_eq!(Rate::Max.frames_per_sec(size).unwrap(), None);
        assert_eq!(
            Rate::L2BitsPerSec(512.0).frames_per_sec(size).unwrap(),
            Some(1.0)
        );
    }
}
