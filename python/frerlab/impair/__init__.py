"""The path impairment element, for kernels without netem: down/up, Bernoulli and
Gilbert-Elliott loss and duplication in eBPF (bpf/impair.c), delay, jitter and reordering in a
user-space delay line (crates/impair). See docs/impair.md and `PathImpairment`."""

from frerlab.impair.path import DIRECTIONS, GilbertElliott, Impairment, PathImpairment, remove_leftovers

__all__ = ["DIRECTIONS", "GilbertElliott", "Impairment", "PathImpairment", "remove_leftovers"]
