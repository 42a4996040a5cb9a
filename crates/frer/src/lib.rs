//! IEEE 802.1CB-2017 Frame Replication and Elimination for Reliability, with no I/O and no
//! clock: every function takes the current time as a parameter, so the same code runs in the
//! simulator, behind the Python API, and as the reference for the eBPF data plane.
//!
//! Layers, dependencies one way only: `wire` (bytes <-> structs) <- `identify` (which stream a
//! frame belongs to) and `decode` (the number a frame carries, encoding errors counted);
//! `generation` / `recovery` / `latent` (the FRER functions and counters) work on numbers only.

#![forbid(unsafe_code)]

pub mod decode;
pub mod generation;
pub mod identify;
pub mod latent;
pub mod recovery;
pub mod seqnum;
pub mod wire;

pub use seqnum::SeqNum;
