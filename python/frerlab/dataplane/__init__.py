"""frerlab's eBPF FRER data plane (bpf/frer.c): loading, map access and counters.

This is the part of the data plane that exists so far: `bpfsys` talks to the kernel (bpf(2)
through ctypes: pinned objects, map elements, BPF_PROG_TEST_RUN) and `layout` packs the map
values byte for byte as bpf/frer_common.h lays them out. The shared 802.1CB vectors are
replayed through the loaded programs by tests/test_dataplane_vectors.py. Attaching to
interfaces and the `frerlab dataplane` command are still to come (issue 3).
"""
