//! Discrete-event simulator of TSN networks with FRER.
