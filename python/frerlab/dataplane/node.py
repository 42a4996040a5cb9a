"""One FRER node of the eBPF data plane: bpf/frer.o loaded and pinned under
/run/frerlab/bpf/<name>, configured through its maps, and attached with tc (clsact ingress
and egress, direct action) to the node's ports inside its network namespace; with `xdp`, also
bpf/frer_xdp.o on the same maps, whose XDP program takes the place of frer_ingress on the
ports `attach` is told to run it on (native or generic XDP). XDP sends a stream's copies in one
broadcast through a device map of its output ports; where the copies are rewritten differently
per port, the map runs frer_xdp_copy on each copy, which needs native XDP on the receiving
port (a port that has only generic XDP then stays with tc). Loading and attaching go through
frerlab's loader (frerlab.bpfsys, on libbpf). The per-stream state is in arrays the loader
sizes to the streams the node is told it holds (map_shapes): an array lookup is an indexed load
the verifier inlines, a hash lookup hashes the key and walks a bucket. A configuration is written
in batches (one bpf(2) call per map), and a second one applied to a loaded node leaves nothing of
the first that a frame could reach.

    with Node("sw1", netns="ns-sw1", ports=["to-talker", "path-a", "path-b"], streams=1) as sw1:
        sw1.add_stream(0, ingress=["to-talker"], generate=True, encode=True,
                       outputs=["path-a", "path-b"])
        sw1.attach()

Everything the node creates (pins, clsact qdiscs, XDP programs) is removed by `close()`, also after a
failure half-way; `remove_leftovers(name)` clears what a killed run left.
"""

from __future__ import annotations

import errno
import functools
import struct
import time
from pathlib import Path

from frerlab import bpfsys
from frerlab.dataplane import layout
from frerlab.dataplane.compiler import NodePlan
from frerlab.dataplane.config import LOCAL
from frerlab.names import check_name, inside
from frerlab.netns import entered

OBJECT = Path(__file__).resolve().parents[3] / "bpf" / "build" / "frer.o"
XDP_OBJECT = OBJECT.with_name("frer_xdp.o")
PIN_ROOT = bpfsys.BPFFS
MAP_SIZES = {  # map name: (key size, value size), as in bpf/frer_common.h
    "settings": (4, layout.SETTINGS.size),
    "port_of_ifindex": (4, layout.PORT_SLOT.size),
    "ifindex_of_port": (4, 4),
    "identities": (4, layout.IDENTITY.size),
    "identity_hash": (layout.ID_KEY.size, layout.ID_HIT.size),
    "streams": (4, layout.STREAM_SIZE),
    "rcvy": (4, layout.RCVY.size),
    "rcvy_reset_requests": (4, 4),
    "seqgen": (4, layout.SEQGEN.size),
    "filter_of": (4, 4),
    "filters": (4, layout.FILTER.size),
    "meters": (4, layout.METER.size),
}
#: A node has room for at least this many streams (their arrays take about 4.5 MiB, mostly
#: recovery entries), so a few streams added later still fit.
ARRAY_STREAMS = 1024
#: A stream whose reset timeouts are all at least this many ticks of the kernel's coarse clock
#: (or never) has its recovery functions run on that clock (layout.STREAM_COARSE_CLOCK): a
#: timer then fires within a tick of its time, 0.4 % of the timeout at most, and reading the
#: clock costs a few ns instead of ~30 (docs/8021cb-decisions.md).
COARSE_TIMEOUT_TICKS = 250
#: CLOCK_MONOTONIC_COARSE of linux/time.h (the time module does not name it), the clock of
#: bpf_ktime_get_coarse_ns.
CLOCK_MONOTONIC_COARSE = 6
#: Per-CPU counter maps: name -> layout of one CPU's value.
PERCPU_MAPS = {"port_stats": layout.PORT_STATS, "stream_port_stats": layout.STREAM_PORT_STATS,
               "filter_stats": layout.FILTER_STATS}


def map_shapes(streams: int, ports: int = layout.MAX_PORTS) -> dict[str, tuple[str, int]]:
    """The per-stream arrays of a node of `streams` streams on `ports` ports, sized for the
    loader (name -> (type, max_entries)): room for max(streams, ARRAY_STREAMS) streams, each
    with every recovery instance it can have (layout.RCVY_PER_STREAM) while that stays within
    layout.MAX_RCVY entries, else one each on average (the node's streams share them,
    rcvy_bases); stream_port_stats and filter_of have one entry per stream and port."""
    if not 1 <= streams <= layout.MAX_STREAMS:
        raise ValueError(f"streams {streams} is out of range (1..={layout.MAX_STREAMS})")
    room = max(streams, ARRAY_STREAMS)
    rcvy = min(room * layout.RCVY_PER_STREAM, max(room, layout.MAX_RCVY))
    return {"streams": ("array", room), "seqgen": ("array", room),
            "rcvy": ("array", rcvy), "rcvy_reset_requests": ("array", rcvy),
            "stream_port_stats": ("percpu_array", room * ports), "filter_of": ("array", room * ports)}


@functools.cache
def coarse_tick_ns() -> float:
    """The coarse clock's tick (its resolution), asked of the kernel once: clock_flag runs per
    stream, 65,536 times for a large node."""
    return time.clock_getres(CLOCK_MONOTONIC_COARSE) * 1e9


def clock_flag(recoveries: list[layout.RecoveryConfig]) -> int:
    """layout.STREAM_COARSE_CLOCK for a stream with these recovery functions when the coarse
    clock is fine enough for every reset timeout among them (COARSE_TIMEOUT_TICKS), else 0
    (also for a stream with none: it reads no clock)."""
    shortest = COARSE_TIMEOUT_TICKS * coarse_tick_ns()
    coarse = bool(recoveries) and all(not r.reset_timeout_ns or r.reset_timeout_ns >= shortest for r in recoveries)
    return layout.STREAM_COARSE_CLOCK if coarse else 0


def rcvy_bases(plan: NodePlan) -> tuple[list[int], int]:
    """Where each stream's recovery instances start in `rcvy` (instance i of stream s at
    bases[s] + i: each stream gets as many entries as its highest instance needs, one after
    the other's), and the entries taken in all."""
    highest: dict[int, int] = {}
    for r in plan.recoveries:
        highest[r.stream] = max(highest.get(r.stream, 0), r.instance)
    bases, taken = [], 0
    for stream in range(len(plan.streams)):
        bases.append(taken)
        if stream in highest:
            taken += highest[stream] + 1
    return bases, taken


def copies_differ(outputs: list[bytes]) -> bool:
    """Whether a stream's outputs (packed struct frer_output) rewrite their copies differently."""
    rewrites = {(flags, vid, dmac, pcp) for _, flags, vid, dmac, _, pcp in map(layout.OUTPUT.unpack, outputs)}
    return len(rewrites) > 1


def percpu_sum(maps: dict[str, bpfsys.Map], name: str, index: int) -> list[int]:
    """Entry `index` of per-CPU map `name` (one of PERCPU_MAPS), each field summed over CPUs."""
    return cpu_sum(PERCPU_MAPS[name], maps[name].lookup(layout.key(index)))


def cpu_sum(value: struct.Struct, raw: bytes) -> list[int]:
    """Every CPU's `value` one after another in `raw`, each field summed over CPUs."""
    return [sum(col) for col in zip(*value.iter_unpack(raw))]


class CounterTables:
    """Every per-stream counter of a node, read at once (one batch read per map) for a snapshot
    of many streams: what Node's generation_counters, recovery_state and stream_port_counters
    give, without a bpf(2) call per stream."""

    def __init__(self, node: Node) -> None:
        self.n_ports, self.cpus = len(node.ports), bpfsys.possible_cpus()
        self.streams = node.maps["streams"].lookup_batch()[1]
        self.seqgen = node.maps["seqgen"].lookup_batch()[1]
        self.rcvy = node.maps["rcvy"].lookup_batch(bpfsys.BPF_F_LOCK)[1]
        self.stream_ports = node.maps["stream_port_stats"].lookup_batch()[1]
        self.filter_stats = node.maps["filter_stats"].lookup_batch()[1]

    def generation_counters(self, stream: int) -> dict[str, int]:
        _, _, generated, resets = layout.SEQGEN.unpack_from(self.seqgen, stream * layout.SEQGEN.size)
        return {"generated": generated, "resets": resets}

    def recovery_state(self, stream: int, instance: int = 0) -> bytes:
        index = layout.STREAM_HEAD.unpack_from(self.streams, stream * layout.STREAM_SIZE)[4] + instance
        return self.rcvy[index * layout.RCVY.size:(index + 1) * layout.RCVY.size]

    def stream_port_counters(self, stream: int, port: int) -> dict[str, int]:
        size = layout.STREAM_PORT_STATS.size * self.cpus
        start = (stream * self.n_ports + port) * size
        return dict(zip(layout.STREAM_PORT_COUNTERS,
                        cpu_sum(layout.STREAM_PORT_STATS, self.stream_ports[start:start + size])))

    def filter_counters(self, entry: int) -> dict[str, int]:
        size = layout.FILTER_STATS.size * self.cpus
        return dict(zip(layout.FILTER_COUNTERS,
                        cpu_sum(layout.FILTER_STATS, self.filter_stats[entry * size:(entry + 1) * size])))


def filter_records(plan: NodePlan, counters) -> list[dict]:
    """Each stream filter of `plan` as a plain record for a snapshot: its index, streams,
    ports (None: every port), max-sdu-size, flow meter (its index and configuration) and the
    counters `counters(entry)` gives for its entry of `filters` (Node.filter_counters, or
    CounterTables.filter_counters for many at once)."""
    meters = dict(plan.meters)
    records = []
    for entry, f in enumerate(plan.filters):
        meter = meters.get(f.meter_index)
        records.append({"filter": f.index, "streams": list(f.handles), "ports": list(f.ports) or None,
                        "max_sdu_size": f.max_sdu, "flow_meter": f.meter_index,
                        "committed_information_rate": meter.cir if meter else None,
                        "committed_burst_size": meter.cbs if meter else None, **counters(entry)})
    return records


def write_filters(maps: dict[str, bpfsys.Map], plan: NodePlan) -> None:
    """The stream filters and flow meters of a compiled configuration into `filters`, `meters`
    (buckets full) and `filter_of` (every entry: a filter of an earlier configuration goes),
    their counters from zero. The STREAM_FILTERED flags are in the plan's streams."""
    stride = len(plan.ports)
    of = maps["filter_of"]
    slots = [0] * of.max_entries
    for (stream, port), entry in plan.filter_of.items():
        slots[stream * stride + port] = entry + 1
    of.update_batch(keys(range(of.max_entries)), struct.pack(f"<{of.max_entries}I", *slots))
    maps["filters"].update_batch(keys(range(len(plan.filters))), b"".join(f.pack() for f in plan.filters))
    maps["meters"].update_batch(keys(range(len(plan.meters))), b"".join(m.pack() for _, m in plan.meters))
    stats = maps["filter_stats"]
    stats.update_batch(keys(range(stats.max_entries)), bytes(stats.value_size * stats.max_entries))


def write_port(maps: dict[str, bpfsys.Map], ifindex: int, port: int) -> None:
    """Port index `port` is interface `ifindex`: written into the first free slot of
    port_of_ifindex from ifindex % PORT_SLOTS on, where the programs look for it (port_of)."""
    if ifindex <= 0:
        raise ValueError(f"ifindex {ifindex} is not valid (an interface index is at least 1)")
    for i in range(layout.MAX_PORTS):
        slot = layout.key((ifindex + i) % layout.PORT_SLOTS)
        taken, _ = layout.PORT_SLOT.unpack(maps["port_of_ifindex"].lookup(slot))
        if taken in (0, ifindex):
            maps["port_of_ifindex"].update(slot, layout.PORT_SLOT.pack(ifindex, port))
            return
    raise ValueError(f"no free slot for ifindex {ifindex} in port_of_ifindex "
                     f"(at most {layout.MAX_PORTS} ports per data plane)")


def keys(indices) -> bytes:
    """Array map keys of `indices`, one after another (for a batch)."""
    indices = list(indices)
    return struct.pack(f"<{len(indices)}I", *indices)


def write_identities(maps: dict[str, bpfsys.Map], plan: NodePlan) -> None:
    """The identities of a compiled configuration into identity_hash (the hashed ones; those of
    an earlier configuration that this one has not are deleted) and `identities` (the scanned
    ones, in order); the settings that use them are the caller's."""
    hashed = maps["identity_hash"]
    old, _ = hashed.lookup_batch()
    size = layout.ID_KEY.size
    stale = [key for key in (old[i:i + size] for i in range(0, len(old), size)) if key not in plan.hashed]
    hashed.delete_batch(b"".join(stale))
    hashed.update_batch(b"".join(plan.hashed), b"".join(plan.hashed.values()))
    maps["identities"].update_batch(keys(range(len(plan.scanned))), b"".join(i.pack() for i in plan.scanned))


def open_maps(pin_dir: Path) -> dict[str, bpfsys.Map]:
    """The maps of MAP_SIZES of a frer.o pinned at `pin_dir`, opened."""
    maps = {name: bpfsys.Map(pin_dir / "maps" / name, key_size, value_size)
            for name, (key_size, value_size) in MAP_SIZES.items()}
    for name, value in PERCPU_MAPS.items():
        maps[name] = bpfsys.Map(pin_dir / "maps" / name, 4, value.size * bpfsys.possible_cpus())
    return maps


def pin_path(name: str) -> Path:
    """Where node `name` is pinned; UsageError for a name that is not valid."""
    return inside(PIN_ROOT, check_name(name, "data plane"))


def remove_leftovers(name: str) -> None:
    """Unpins what a node called `name` left behind (its qdiscs go with its namespace)."""
    bpfsys.unpin(pin_path(name))


class Node:
    """A FRER node on the ports `ports` of namespace `netns` (None: the current one)."""

    def __init__(self, name: str, netns: str | None, ports: list[str], xdp: bool = False,
                 streams: int = 1) -> None:
        """A node not loaded yet (`with` or `__enter__` loads it); `name` names its pins;
        `xdp` loads the XDP program too; `streams`: how many streams (handles 0 ..
        streams - 1) it will hold, which decides its maps (map_shapes)."""
        if not 0 < len(ports) <= layout.MAX_PORTS:
            raise ValueError(f"{len(ports)} ports is out of range (1..={layout.MAX_PORTS})")
        self.name, self.netns, self.ports, self.xdp = name, netns, list(ports), xdp
        self.shapes = map_shapes(streams, len(ports))
        self.pin_dir = pin_path(name)
        self.maps: dict[str, bpfsys.Map] = {}
        self.attached: list[str] = []
        #: per port it is attached to: "tc", "xdp native" or "xdp generic" (ingress)
        self.hooks: dict[str, str] = {}
        self.n_identities = 0
        #: add_stream: the next free entry of `rcvy`
        self.next_rcvy = 0
        #: XDP: the entries of xdp_copies made so far, by their sorted output ifindexes and
        #: whether their copies are rewritten per copy (frer_xdp_copy)
        self.copy_sets: dict[tuple[tuple[int, ...], bool], int] = {}

    @classmethod
    def loaded(cls, name: str, netns: str | None, ports: list[str]) -> Node:
        """A node another process loaded (`frerlab dataplane up`), with its maps opened to read
        or configure it; `release()` closes them again."""
        node = cls(name, netns, ports)
        node.maps = open_maps(node.pin_dir)
        return node

    def ifindex(self, port: str) -> int:
        """The interface index of `port` in the node's namespace."""
        if port not in self.ports:
            raise ValueError(f"port {port!r} is not one of this node's ports ({', '.join(self.ports)})")
        return bpfsys.ifindex(self.netns, port)

    def __enter__(self) -> Node:
        if self.pin_dir.exists():
            raise bpfsys.BpfError(f"data plane {self.name!r} is already loaded ({self.pin_dir}); "
                                  "remove it first (remove_leftovers) or pick another name")
        try:
            bpfsys.load_and_pin(OBJECT, self.pin_dir, shapes=self.shapes)
            self.maps = open_maps(self.pin_dir)
            if self.xdp:
                bpfsys.load_and_pin(XDP_OBJECT, self.pin_dir / "xdp", reuse=self.pin_dir / "maps")
                for name in ("xdp_copies", "xdp_bridge"):
                    self.maps[name] = bpfsys.Map(self.pin_dir / "xdp" / "maps" / name, 4, 4)
            for index, port in enumerate(self.ports):
                ifindex = self.ifindex(port)
                write_port(self.maps, ifindex, index)
                self.maps["ifindex_of_port"].update(layout.key(index), layout.key(ifindex))
            self.maps["settings"].update(layout.key(0), layout.settings(0, port_stride=len(self.ports)))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_stream(self, stream: int, ingress: list[str], outputs: list[str],
                   generate: bool = False, encode: bool = False,
                   recovery: layout.RecoveryConfig | None = None, dmacs: dict[str, bytes] | None = None) -> None:
        """Stream `stream` is every frame received on the `ingress` ports; it is numbered
        (`generate`), passed through sequence recovery (`recovery`), sent with an R-TAG
        (`encode`, else any R-TAG is removed) and copied to each of `outputs`, the copies sent
        out of a port of `dmacs` with that destination MAC."""
        self._check_capacity(stream + 1)
        mask = 0
        for port in ingress:
            self.ifindex(port)
            mask |= 1 << self.ports.index(port)
        dmacs = dmacs or {}
        outs = [layout.output(self.ifindex(p), layout.OUT_SET_DMAC if p in dmacs else 0, self.ports.index(p),
                              dmac=dmacs.get(p, bytes(6))) for p in outputs]
        per_copy = self.xdp and copies_differ(outs)
        flags = ((layout.STREAM_GENERATE if generate else 0) | (layout.STREAM_ENCODE if encode else 0)
                 | (layout.STREAM_RECOVER if recovery else 0) | (layout.STREAM_PER_COPY if per_copy else 0)
                 | clock_flag([recovery] if recovery else []))
        copies = self._xdp_copies([self.ifindex(p) for p in outputs], per_copy)
        base = self.next_rcvy
        if recovery:
            self._check_rcvy(base + 1)
            self.maps["rcvy"].update(layout.key(base), recovery.pack())
            self.maps["rcvy_reset_requests"].update(layout.key(base), layout.U32.pack(0))
            self.next_rcvy += 1
        self.maps["streams"].update(layout.key(stream), layout.stream(flags, outs, copies=copies, rcvy_base=base))
        if generate:
            self.maps["seqgen"].update(layout.key(stream), layout.SEQGEN.pack(0, 0, 0, 0))
        self.maps["identities"].update(layout.key(self.n_identities), layout.match_all_identity(stream, mask))
        self.n_identities += 1
        self.maps["settings"].update(layout.key(0), layout.settings(self.n_identities, port_stride=len(self.ports)))

    def apply(self, plan: NodePlan) -> None:
        """Writes a compiled configuration (compiler.compile_node) into the maps, one batch per
        map, its counters from zero. What a configuration applied before left is cleared: its
        hashed identities that this one has not are deleted and its streams past this one's
        drop their frames (no outputs)."""
        if plan.ports != self.ports:
            raise ValueError(f"the plan's ports {plan.ports} are not this node's ({self.ports})")
        self._check_capacity(len(plan.streams))
        bases, taken = rcvy_bases(plan)
        self._check_rcvy(taken)
        ifindexes = {p: self.ifindex(p) for p in self.ports}
        recoveries: dict[int, list[layout.RecoveryConfig]] = {}
        for r in plan.recoveries:
            recoveries.setdefault(r.stream, []).append(r.config)
        streams, generated = [], []
        for stream, (flags, outputs) in enumerate(plan.streams):
            flags |= clock_flag(recoveries.get(stream, []))
            outs = [layout.output(0 if o.port == LOCAL else ifindexes[o.port], o.flags, o.index,
                                  o.vid, o.dmac, o.pcp) for o in outputs]
            if self.xdp and copies_differ(outs):
                flags |= layout.STREAM_PER_COPY
            copies = self._xdp_copies([ifindexes[o.port] for o in outputs if o.port != LOCAL],
                                      per_copy=bool(flags & layout.STREAM_PER_COPY))
            streams.append(layout.stream(flags, outs, plan.recovery_ports[stream], plan.individual_feeds[stream],
                                         copies, bases[stream]))
            if flags & layout.STREAM_GENERATE:
                generated.append(stream)
        streams += [bytes(layout.STREAM_SIZE)] * (self.capacity - len(streams))
        self.maps["streams"].update_batch(keys(range(self.capacity)), b"".join(streams))
        self.maps["seqgen"].update_batch(keys(generated), bytes(layout.SEQGEN.size * len(generated)))
        slots = [bases[r.stream] + r.instance for r in plan.recoveries]
        self.maps["rcvy"].update_batch(keys(slots), b"".join(r.config.pack() for r in plan.recoveries))
        self.maps["rcvy_reset_requests"].update_batch(keys(slots), bytes(4 * len(slots)))
        counters = self.maps["stream_port_stats"]
        counters.update_batch(keys(range(counters.max_entries)), bytes(counters.value_size * counters.max_entries))
        bridge = [self.ifindex(p) for i, p in enumerate(self.ports) if plan.bridge_mask >> i & 1]
        if self.xdp and bridge:
            with entered(self.netns):
                for ifindex in bridge:
                    self.maps["xdp_bridge"].update(layout.key(ifindex), layout.key(ifindex))
        write_filters(self.maps, plan)
        write_identities(self.maps, plan)
        self.n_identities = len(plan.scanned)
        self.maps["settings"].update(layout.key(0), layout.settings(self.n_identities, plan.bridge_mask,
                                                                    pvids=plan.pvids, shapes=plan.shapes,
                                                                    port_stride=len(self.ports)))

    @property
    def capacity(self) -> int:
        """How many streams the node's maps hold (handles 0 .. capacity - 1)."""
        return self.maps["streams"].max_entries

    def _check_capacity(self, streams: int) -> None:
        """ValueError unless `streams` streams fit the node's maps."""
        if streams > self.capacity:
            raise ValueError(f"{streams} streams do not fit data plane {self.name!r}: it was loaded for "
                             f"at most {self.capacity} (Node(..., streams=N) with N up to {layout.MAX_STREAMS})")

    def _check_rcvy(self, entries: int) -> None:
        """ValueError unless `entries` entries of `rcvy` fit the node's."""
        room = self.maps["rcvy"].max_entries
        if entries > room:
            raise ValueError(f"the recovery functions take {entries} entries of rcvy (each stream as many as its "
                             f"highest instance needs), but data plane {self.name!r} has {room}: load it for "
                             f"more streams (Node(..., streams=N))")

    def _xdp_copies(self, ifindexes: list[int], per_copy: bool = False) -> int:
        """With XDP, the entry of xdp_copies for a stream with several outputs (0 otherwise): a
        device map of them (pinned beside the program, so it goes with the node) that runs
        frer_xdp_copy on each copy if `per_copy`; one per set of output ports and `per_copy`,
        shared by the streams with that set."""
        ports = tuple(sorted(ifindexes))
        if not self.xdp or len(ports) < 2:
            return 0
        if (ports, per_copy) in self.copy_sets:
            return self.copy_sets[ports, per_copy]
        index = len(self.copy_sets)
        if index >= layout.MAX_COPY_SETS:
            raise ValueError(f"{index + 1} sets of output ports is out of range for XDP "
                             f"(1..={layout.MAX_COPY_SETS}, FRER_MAX_COPY_SETS)")
        path = self.pin_dir / "xdp" / f"copies{index}"
        bpfsys.create_map(path, "devmap_hash", 4, layout.DEVMAP_VAL.size, layout.MAX_OUTPUTS)
        # a device map takes its devices from the updating thread's namespace
        with (bpfsys.Map(path) as copies, bpfsys.Program(self.pin_dir / "xdp" / "frer_xdp_copy") as prog,
              entered(self.netns)):
            for ifindex in ports:
                copies.update(layout.key(ifindex), layout.DEVMAP_VAL.pack(ifindex, prog.fd if per_copy else 0))
            self.maps["xdp_copies"].update(layout.key(index), layout.key(copies.fd))
        self.copy_sets[ports, per_copy] = index
        return index

    def attach(self, ingress: list[str] | None = None, egress: list[str] = (),
               xdp: dict[str, str] | None = None) -> None:
        """Attaches frer_ingress to the `ingress` ports (default: every port) and frer_egress
        to the `egress` ports (clsact, direct action); an ingress port in `xdp` gets frer_xdp
        instead, in the mode given there (native, or generic), native falling back to generic
        where the driver has none; but a node with streams rewritten per copy keeps a port that
        would get generic XDP on tc (generic XDP's broadcast clones share one frame and lose the
        metadata frer_xdp_copy reads). `hooks` says what each port got."""
        ingress = self.ports if ingress is None else ingress
        xdp = xdp or {}
        for port in dict.fromkeys([*ingress, *egress]):
            self.ifindex(port)
            self.attached.append(port)
            mode = self._attach_xdp(port, xdp[port]) if port in ingress and port in xdp else None
            if mode:
                self.hooks[port] = f"xdp {mode}"
            tc = [hook for hook, ports in (("ingress", ingress), ("egress", egress))
                  if port in ports and not (hook == "ingress" and mode)]
            if not tc:
                continue
            bpfsys.add_clsact(self.netns, port)
            for hook in tc:
                bpfsys.attach_tc(self.netns, port, self.pin_dir / f"frer_{hook}", hook)
            self.hooks.setdefault(port, "tc")

    def _attach_xdp(self, port: str, mode: str) -> str | None:
        """Attaches frer_xdp to `port` in `mode`, or generic if native is refused; the mode, or
        None (nothing attached) where that would be generic XDP on a node with streams
        rewritten per copy."""
        if not self.xdp:
            raise ValueError(f"node {self.name} was loaded without XDP (Node(..., xdp=True))")
        if mode not in ("native", "generic"):
            raise ValueError(f"XDP mode {mode!r} is not valid (native, generic)")
        prog = self.pin_dir / "xdp" / "frer_xdp"
        if mode == "native":
            try:
                bpfsys.attach_xdp(self.netns, port, prog, mode)
                return mode
            except bpfsys.BpfError as err:
                if err.errno == errno.EBUSY:
                    raise
        if any(per_copy for _, per_copy in self.copy_sets):
            return None
        bpfsys.attach_xdp(self.netns, port, prog, "generic")
        return "generic"

    def rcvy_index(self, stream: int, instance: int = 0) -> int:
        """The entry of `rcvy` (and rcvy_reset_requests) of a recovery function of the stream:
        instance 0 is the compound stream's sequence recovery, 1 + p the one on port p or the
        individual recovery whose first port is p."""
        return layout.STREAM_HEAD.unpack_from(self.maps["streams"].lookup(layout.key(stream)))[4] + instance

    def recovery_state(self, stream: int, instance: int = 0) -> bytes:
        """struct frer_rcvy of a recovery function of the stream (rcvy_index), read under its
        lock (one consistent set of counters)."""
        return self.maps["rcvy"].lookup(layout.key(self.rcvy_index(stream, instance)), bpfsys.BPF_F_LOCK)

    def recovery_counters(self, stream: int, instance: int = 0) -> dict[str, int]:
        """The clause-10 counters of a recovery function of the stream (see recovery_state)."""
        return layout.rcvy_counters(self.recovery_state(stream, instance))

    def port_counters(self, port: int) -> dict[str, int]:
        """The counters of port index `port`, summed over CPUs (layout.PORT_COUNTERS)."""
        return dict(zip(layout.PORT_COUNTERS, percpu_sum(self.maps, "port_stats", port)))

    def stream_port_counters(self, stream: int, port: int) -> dict[str, int]:
        """The counters of a stream on a port, summed over CPUs (layout.STREAM_PORT_COUNTERS)."""
        return dict(zip(layout.STREAM_PORT_COUNTERS,
                        percpu_sum(self.maps, "stream_port_stats", stream * len(self.ports) + port)))

    def filter_counters(self, entry: int) -> dict[str, int]:
        """The counters of entry `entry` of `filters` (a plan's filters in order), summed over
        CPUs (layout.FILTER_COUNTERS)."""
        return dict(zip(layout.FILTER_COUNTERS, percpu_sum(self.maps, "filter_stats", entry)))

    def generation_counters(self, stream: int) -> dict[str, int]:
        """Frames numbered by the stream's sequence generation, and its resets."""
        _, _, generated, resets = layout.SEQGEN.unpack(self.maps["seqgen"].lookup(layout.key(stream)))
        return {"generated": generated, "resets": resets}

    def release(self) -> None:
        """Closes the node's file descriptors but leaves it loaded and attached (for
        `frerlab dataplane up`; `frerlab dataplane down` removes it)."""
        for m in self.maps.values():
            m.close()
        self.maps.clear()
        self.attached.clear()
        self.hooks.clear()

    def close(self) -> None:
        """Detaches and unpins everything; safe to call twice and after a failure."""
        for port in self.attached:
            bpfsys.detach(self.netns, port)
        self.attached.clear()
        self.hooks.clear()
        for m in self.maps.values():
            m.close()
        self.maps.clear()
        remove_leftovers(self.name)
