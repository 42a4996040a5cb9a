# Set-up and entry points. `make demo` and `make test` install what is missing (Debian packages,
# the .venv with frerlab in it, the Rust and eBPF builds) and then run the main job / every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# libelf-dev, zlib1g-dev and pkg-config: libbpf-sys builds its vendored libbpf (the data plane's
# loader, crates/bpf) against them; libbpf-dev: the headers the BPF C includes.
DEB_PACKAGES := clang llvm libbpf-dev libelf-dev zlib1g-dev pkg-config iproute2 iputils-ping ethtool iperf3 sockperf netsniff-ng tcpdump tshark openssh-server chromium linux-perf
# One build at a time: parallel make runs (and parallel developers) share the .venv and target/.
LOCK := flock /tmp/frerlab-build.lock

.PHONY: demo test test-fast lint deps debs venv build native bpf bench clean

demo: build
	$(VENV)/bin/frerlab demo

test: build
	cargo test --workspace --exclude frerlab-py --release
	$(PY) -m pytest -q

# The tests that need no root, no sshd, no time bound and no long run: under 2 minutes (the
# markers are in pyproject.toml; docs/PERFORMANCE.md, "Tests").
test-fast: build
	$(PY) -m pytest -q -m "not root and not sshd and not timing and not slow"

# What CI checks besides the tests (.ci/run): Rust formatting, clippy on every crate and target
# with warnings as errors, ruff's rules from pyproject.toml on the Python.
lint: build
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release --quiet -- -D warnings
	$(VENV)/bin/ruff check --quiet python tests benches scripts

deps: debs venv

debs:
	scripts/install-debs.sh $(DEB_PACKAGES)

$(VENV)/bin/python:
	python3 -m venv $(VENV)

venv: $(VENV)/bin/python
	$(PY) -m pip install -q --disable-pip-version-check "maturin>=1.7,<2"

build: debs native bpf

bpf: debs
	$(MAKE) -s -C bpf

native: venv
	$(LOCK) env VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --extras test --quiet

# Benchmarks print ratios against baselines measured in the same run (docs/PERFORMANCE.md).
bench: build
	cargo bench -p frer --bench frer_recovery
	$(PY) benches/sim_engine.py
	$(PY) benches/traffic_pps.py
	$(PY) benches/dataplane_pps.py
	$(PY) benches/dataplane_profile.py
	$(PY) benches/dataplane_stats.py
	$(PY) benches/dataplane_compile.py
	$(PY) benches/throughput_search.py

clean:
	rm -rf target $(VENV) .make
