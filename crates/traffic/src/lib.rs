//! Traffic generator and receiver that measure themselves.
