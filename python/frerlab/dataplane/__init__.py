"""frerlab's eBPF FRER data plane (bpf/frer.c): configuration, loading, map access and counters.

It sits on frerlab.bpfsys, the loader it shares with frerlab.impair (libbpf through the
native crates/bpf: loading and pinning, map elements, BPF_PROG_TEST_RUN, tc and XDP
attachment). `config` is the configuration file's schema and `compiler` turns a configuration
into map entries, which `layout` packs byte for byte as bpf/frer_common.h lays them out;
`node` is one FRER node loaded and attached, and `control` brings a configured node up and
down across commands (`frerlab dataplane`).
"""
