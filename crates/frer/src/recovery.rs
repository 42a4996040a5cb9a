//! Sequence recovery (802.1CB 7.4.2-7.4.3, 7.5).
