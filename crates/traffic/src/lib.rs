//! Traffic generator and receiver that measure themselves.
//!
//! Layers, each depending only on those above it:
//! - [`frame`]: frame sizes and rates with explicit units (L1 / L2 bit/s, frames/s);
//! - [`payload`]: the probe every frame carries (stream id, sender lane, 56-bit sequence number,
//!   send time);
//! - [`histogram`], [`accounting`]: loss / duplicate / reorder / latency accounting of one
//!   stream, with no I/O (reused by the simulator's sinks);
//! - [`pacing`]: due times for constant, bursty and Poisson traffic; [`gaps`]: how evenly
//!   frames really went and came (inter-frame gap distribution);
//! - [`timestamping`]: which stamps (hardware, kernel software, payload) and clock a run uses;
//! - [`packet`], [`sys`]: frame headers for raw mode, and the Linux socket calls;
//! - [`xsk`], [`xdp_redirect`]: AF_XDP sockets and the receiver's XDP program (xdp mode);
//! - [`sender`], [`receiver`]: the generator and the receiver.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod accounting;
pub mod frame;
pub mod gaps;
pub mod histogram;
pub mod pacing;
pub mod packet;
pub mod payload;
pub mod receiver;
pub mod sender;
pub mod sys;
pub mod timestamping;
pub mod xdp_redirect;
pub mod xsk;
