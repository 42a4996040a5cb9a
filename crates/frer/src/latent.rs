//! Latent error detection (802.1CB 7.4.4).
