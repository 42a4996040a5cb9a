//! Stream identification, IEEE 802.1CB clause 6 and 802.1CBdb (filled in by the identification work).
