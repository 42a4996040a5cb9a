"""One FRER node of the eBPF data plane: bpf/frer.o loaded and pinned under
/run/frerlab/bpf/<name>, configured through its maps, and attached with tc (clsact ingress
and egress, direct action) to the node's ports inside its network namespace; with `xdp`, also
bpf/frer_xdp.o on the same maps, whose XDP program takes the place of frer_ingress on the
ports `attach` is told to run it on (native or generic XDP). XDP sends a stream's copies in one
broadcast through a device map of its output ports; where the copies are rewritten differently
per port, the map runs frer_xdp_copy on each copy, which needs native XDP on the receiving
port (a port that has only generic XDP then stays with tc). Loading and attaching go through
frerlab's loader (frerlab.bpfsys, on libbpf). A node told it holds at most
ARRAY_STREAMS streams keeps their state in array maps (the loader reshapes frer.o's hash maps
before creating them): an array lookup is an indexed load, a hash lookup hashes the key and
walks a bucket, and a frame takes five to ten such lookups.

    with Node("sw1", netns="ns-sw1", ports=["to-talker", "path-a", "path-b"], streams=1) as sw1:
        sw1.add_stream(0, ingress=["to-talker"], generate=True, encode=True,
                       outputs=["path-a", "path-b"])
        sw1.attach()

Everything the node creates (pins, clsact qdiscs, XDP programs) is removed by `close()`, also after a
failure half-way; `remove_leftovers(name)` clears what a killed run left.
"""

from __future__ import annotations

import errno
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
}
#: A node with at most this many streams keeps its per-stream state in arrays of this many
#: streams' entries (about 5.5 MiB with 2 CPUs, mostly recovery instances); one with more in
#: frer.o's hash maps, allocated as entries are written, up to layout.MAX_STREAMS streams,
#: except the per-CPU stream_port_stats, preallocated for every (stream, port) pair of the
#: node (bpf/frer_common.h says why).
ARRAY_STREAMS = 1024
#: Per-CPU counter maps: name -> layout of one CPU's value.
PERCPU_MAPS = {"port_stats": layout.PORT_STATS, "stream_port_stats": layout.STREAM_PORT_STATS}


def map_shapes(streams: int, ports: int = layout.MAX_PORTS) -> dict[str, tuple[str, int]]:
    """The per-stream maps of a node of `streams` streams on `ports` ports, reshaped for the
    loader (name -> (type, max_entries)): arrays holding ARRAY_STREAMS streams when they fit;
    else frer.o's own hash maps, up to layout.MAX_STREAMS streams, with the preallocated
    stream_port_stats sized to the pairs of that many streams on `ports` ports (at most
    layout.MAX_STREAM_PORTS)."""
    if not 1 <= streams <= layout.MAX_STREAMS:
        raise ValueError(f"streams {streams} is out of range (1..={layout.MAX_STREAMS})")
    if streams > ARRAY_STREAMS:
        return {"stream_port_stats": ("percpu_hash", min(layout.MAX_STREAMS * ports, layout.MAX_STREAM_PORTS))}
    rcvy = ARRAY_STREAMS * layout.RCVY_PER_STREAM
    return {"streams": ("array", ARRAY_STREAMS), "seqgen": ("array", ARRAY_STREAMS),
            "rcvy": ("array", rcvy), "rcvy_reset_requests": ("array", rcvy),
            "stream_port_stats": ("percpu_array", ARRAY_STREAMS * layout.MAX_PORTS)}


def copies_differ(outputs: list[bytes]) -> bool:
    """Whether a stream's outputs (packed struct frer_output) rewrite their copies differently."""
    rewrites = {(flags, vid, dmac, pcp) for _, flags, vid, dmac, _, pcp in map(layout.OUTPUT.unpack, outputs)}
    return len(rewrites) > 1


def percpu_sum(maps: dict[str, bpfsys.Map], name: str, index: int) -> list[int]:
    """Entry `index` of per-CPU map `name` (one of PERCPU_MAPS), each field summed over CPUs;
    zeros for an entry not made yet (stream_port_stats gets one on a pair's first frame)."""
    try:
        raw = maps[name].lookup(layout.key(index))
    except bpfsys.BpfError as err:
        if err.errno != errno.ENOENT:
            raise
        return [0] * len(PERCPU_MAPS[name].unpack(bytes(PERCPU_MAPS[name].size)))
    return [sum(col) for col in zip(*PERCPU_MAPS[name].iter_unpack(raw))]


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


def write_identities(maps: dict[str, bpfsys.Map], plan: NodePlan) -> None:
    """The identities of a compiled configuration into identity_hash (the hashed ones) and
    `identities` (the scanned ones, in order); the settings that use them are the caller's."""
    hashed = maps["identity_hash"]
    for key, hit in plan.hashed.items():
        hashed.update(key, hit)
    for index, identity in enumerate(plan.scanned):
        maps["identities"].update(layout.key(index), identity.pack())


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
            self.maps["settings"].update(layout.key(0), layout.settings(0))
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
                 | (layout.STREAM_RECOVER if recovery else 0) | (layout.STREAM_PER_COPY if per_copy else 0))
        copies = self._xdp_copies([self.ifindex(p) for p in outputs], per_copy)
        self.maps["streams"].update(layout.key(stream), layout.stream(flags, outs, copies=copies))
        if generate:
            self.maps["seqgen"].update(layout.key(stream), layout.SEQGEN.pack(0, 0, 0, 0))
        if recovery:
            self.maps["rcvy"].update(layout.rcvy_key(stream), recovery.pack())
            self.maps["rcvy_reset_requests"].update(layout.rcvy_key(stream), layout.U32.pack(0))
        self.maps["identities"].update(layout.key(self.n_identities), layout.match_all_identity(stream, mask))
        self.n_identities += 1
        self.maps["settings"].update(layout.key(0), layout.settings(self.n_identities))

    def apply(self, plan: NodePlan) -> None:
        """Writes a compiled configuration (compiler.compile_node) into the maps."""
        if plan.ports != self.ports:
            raise ValueError(f"the plan's ports {plan.ports} are not this node's ({self.ports})")
        self._check_capacity(len(plan.streams))
        ifindexes = {p: self.ifindex(p) for p in self.ports}
        for stream, (flags, outputs) in enumerate(plan.streams):
            outs = [layout.output(0 if o.port == LOCAL else ifindexes[o.port], o.flags, o.index,
                                  o.vid, o.dmac, o.pcp) for o in outputs]
            if self.xdp and copies_differ(outs):
                flags |= layout.STREAM_PER_COPY
            copies = self._xdp_copies([ifindexes[o.port] for o in outputs if o.port != LOCAL],
                                      per_copy=bool(flags & layout.STREAM_PER_COPY))
            self.maps["streams"].update(layout.key(stream), layout.stream(
                flags, outs, plan.recovery_ports[stream], plan.individual_feeds[stream], copies))
            if flags & layout.STREAM_GENERATE:
                self.maps["seqgen"].update(layout.key(stream), layout.SEQGEN.pack(0, 0, 0, 0))
        bridge = [self.ifindex(p) for i, p in enumerate(self.ports) if plan.bridge_mask >> i & 1]
        if self.xdp and bridge:
            with entered(self.netns):
                for ifindex in bridge:
                    self.maps["xdp_bridge"].update(layout.key(ifindex), layout.key(ifindex))
        for r in plan.recoveries:
            self.maps["rcvy"].update(layout.rcvy_key(r.stream, r.instance), r.config.pack())
            self.maps["rcvy_reset_requests"].update(layout.rcvy_key(r.stream, r.instance), layout.U32.pack(0))
        write_identities(self.maps, plan)
        self._stream_port_stats(plan)
        self.n_identities = len(plan.scanned)
        self.maps["settings"].update(layout.key(0), layout.settings(self.n_identities, plan.bridge_mask,
                                                                    pvids=plan.pvids, shapes=plan.shapes))

    @property
    def capacity(self) -> int:
        """How many streams the node's maps hold (handles 0 .. capacity - 1)."""
        return self.maps["streams"].max_entries

    def _check_capacity(self, streams: int) -> None:
        """ValueError unless `streams` streams fit the node's maps."""
        if streams > self.capacity:
            raise ValueError(f"{streams} streams do not fit data plane {self.name!r}: it was loaded for "
                             f"at most {self.capacity} (Node(..., streams=N) with N up to {layout.MAX_STREAMS})")

    def _stream_port_stats(self, plan: NodePlan) -> None:
        """A zero stream_port_stats entry for every port a stream is identified on or copied
        to, where the map is a hash (arrays have every entry), so that no frame has to make
        one (the program makes a missing one on the pair's first frame)."""
        stats = self.maps["stream_port_stats"]
        if stats.kind != "percpu_hash":
            return
        pairs = {(i.stream, p) for i in plan.identities for p in range(len(plan.ports)) if i.port_mask >> p & 1}
        pairs |= {(stream, o.index) for stream, (_, outputs) in enumerate(plan.streams) for o in outputs
                  if o.port != LOCAL}
        zero = bytes(stats.value_size)
        for stream, port in sorted(pairs):
            stats.update(layout.key(stream * layout.MAX_PORTS + port), zero)

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

    def recovery_state(self, stream: int, instance: int = 0) -> bytes:
        """struct frer_rcvy of a recovery function of the stream, read under its lock (one
        consistent set of counters): instance 0 is the compound stream's sequence recovery,
        1 + p the individual recovery on port p."""
        return self.maps["rcvy"].lookup(layout.rcvy_key(stream, instance), bpfsys.BPF_F_LOCK)

    def recovery_counters(self, stream: int, instance: int = 0) -> dict[str, int]:
        """The clause-10 counters of a recovery function of the stream (see recovery_state)."""
        return layout.rcvy_counters(self.recovery_state(stream, instance))

    def port_counters(self, port: int) -> dict[str, int]:
        """The counters of port index `port`, summed over CPUs (layout.PORT_COUNTERS)."""
        return dict(zip(layout.PORT_COUNTERS, percpu_sum(self.maps, "port_stats", port)))

    def stream_port_counters(self, stream: int, port: int) -> dict[str, int]:
        """The counters of a stream on a port, summed over CPUs (layout.STREAM_PORT_COUNTERS)."""
        return dict(zip(layout.STREAM_PORT_COUNTERS,
                        percpu_sum(self.maps, "stream_port_stats", stream * layout.MAX_PORTS + port)))

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
