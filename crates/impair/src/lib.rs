//! Link impairments (delay, jitter, reordering) for testbed links where the kernel has no netem.
