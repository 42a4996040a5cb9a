"""frerlab's eBPF FRER data plane (bpf/frer.c): loading, map access and counters.

`bpfsys` is the loader (libbpf through the native crates/bpf: loading and pinning, map
elements, BPF_PROG_TEST_RUN, tc and XDP attachment), `layout` packs the map values byte for
byte as bpf/frer_common.h lays them out, `node` is one FRER node loaded and attached, and
`control` brings a configured node up and down across commands (`frerlab dataplane`).
"""
