//! The extension module `frerlab._native`: thin PyO3 bindings over the Rust crates. Each area
//! registers its own classes and functions from its own file.

#![forbid(unsafe_code)]

use pyo3::prelude::*;

mod bpf;
mod frer;
mod impair;
mod sim;
mod traffic;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bpf::register(m)?;
    frer::register(m)?;
    impair::register(m)?;
    sim::register(m)?;
    traffic::register(m)?;
    Ok(())
}
