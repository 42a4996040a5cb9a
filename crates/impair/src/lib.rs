//! The user-space half of frerlab's path impairment element (bpf/impair.c is the kernel half).
//!
//! The kernel programs take every loss and duplication decision; a direction that needs delay,
//! jitter or reordering hands its frames to a device read by this crate's delay line, which
//! holds each frame until its due time and sends it on out of the path's far end.
//! - [`delay`]: the delay model and the queue of held frames, with no I/O and no clock
//!   (time is a parameter), so it is tested exactly;
//! - [`line`]: the process around it: AF_PACKET sockets, a nanosecond timer loop, run-time
//!   reconfiguration and counters over a control socket;
//! - [`tag`]: writing a VLAN tag that lived in skb metadata back into the frame's bytes.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod delay;
pub mod line;
pub mod tag;
