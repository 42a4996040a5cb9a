"""The few bpf(2) commands the data plane needs, through ctypes: get a pinned program or map,
read and write map elements, and run a program on a crafted frame (BPF_PROG_TEST_RUN).
Loading and pinning an object file is left to `bpftool prog loadall`, which every system with
BPF has; errors carry the kernel's errno text and say what was being done."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import struct
import subprocess
from pathlib import Path

from frerlab.names import RUN_DIR

_SYSCALL_BPF = {"x86_64": 321, "aarch64": 280}
_MAP_LOOKUP_ELEM, _MAP_UPDATE_ELEM, _OBJ_GET, _PROG_TEST_RUN = 1, 2, 7, 10
_OBJ_GET_INFO_BY_FD, _ENABLE_STATS = 15, 32
#: `struct bpf_prog_info` size and the offset of run_time_ns (run_cnt follows; linux/bpf.h).
PROG_INFO_SIZE, PROG_INFO_RUN_TIME_NS = 232, 192
#: Map update flag: take the value's bpf_spin_lock while writing it.
BPF_F_LOCK = 4
#: Where frerlab pins: a BPF filesystem of its own outside /sys, because `ip netns exec` and
#: `tc -n` remount /sys in the namespace and would lose sight of /sys/fs/bpf.
BPFFS = RUN_DIR / "bpf"
#: `struct __sk_buff` size and the offset of ingress_ifindex (linux/bpf.h).
SK_BUFF_SIZE, SK_BUFF_INGRESS_IFINDEX = 192, 36
#: `struct xdp_md`: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex.
XDP_MD = struct.Struct("<6I")

_libc = ctypes.CDLL(None, use_errno=True)


class BpfError(OSError):
    """A bpf(2) call or bpftool run that failed; the message says which and why."""


def _bpf(cmd: int, attr: ctypes.Array, what: str) -> int:
    number = _SYSCALL_BPF.get(platform.machine())
    if number is None:
        raise BpfError(f"bpf(2) syscall number unknown on {platform.machine()} "
                       f"(known: {', '.join(_SYSCALL_BPF)})")
    ret = _libc.syscall(number, cmd, ctypes.byref(attr), len(attr))
    if ret < 0:
        err = ctypes.get_errno()
        raise BpfError(err, f"{what}: {os.strerror(err)} ({errno.errorcode.get(err, err)})")
    return ret


def ensure_bpffs() -> None:
    """Mounts a BPF filesystem at BPFFS if none is mounted there."""
    if not os.path.ismount(BPFFS):
        BPFFS.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "bpf", "frerlab-bpf", str(BPFFS)], check=True)


def load_and_pin(obj: Path, pin_dir: Path, reuse: Path | None = None) -> None:
    """Loads every program of `obj` (verifier included) and pins programs under `pin_dir`,
    maps under `pin_dir/maps`; a map of the same name pinned in directory `reuse` is used
    instead of a new one (so two objects share their maps). Removes what it pinned if loading
    fails."""
    if shutil.which("bpftool") is None:
        raise BpfError("bpftool is not installed (apt-get install bpftool)")
    ensure_bpffs()
    shared = [arg for path in (sorted(reuse.iterdir()) if reuse else [])
              for arg in ("map", "name", path.name, "pinned", str(path))]
    result = subprocess.run(["bpftool", "prog", "loadall", str(obj), str(pin_dir), *shared,
                             "pinmaps", str(pin_dir / "maps")], capture_output=True, text=True)
    if result.returncode != 0:
        unpin(pin_dir)
        tail = "\n".join(result.stderr.strip().splitlines()[-5:])
        raise BpfError(f"loading {obj} failed (the verifier's last words):\n{tail}")


def create_map(path: Path, kind: str, key_size: int, value_size: int, entries: int) -> None:
    """Creates a map of type `kind` (bpftool's name, e.g. devmap_hash) pinned at `path`."""
    result = subprocess.run(["bpftool", "map", "create", str(path), "type", kind, "key", str(key_size),
                             "value", str(value_size), "entries", str(entries), "name", path.name[:15]],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise BpfError(f"creating {kind} map {path} failed: {result.stderr.strip()}")


def unpin(pin_dir: Path) -> None:
    """Removes a pin directory and everything pinned in it (the kernel frees what no one else
    holds), then the BPF filesystem itself once nothing is pinned in it any more."""
    if pin_dir.exists():
        shutil.rmtree(pin_dir)
    _release_bpffs()


def _release_bpffs() -> None:
    """Unmounts BPFFS when it holds only the kernel's debug files and the empty state
    directories tc creates (ip, tc/globals, xdp): nothing of any run is left in it."""
    if not os.path.ismount(BPFFS):
        return
    for path in BPFFS.rglob("*"):
        if path.name not in ("progs.debug", "maps.debug") and not (path.is_dir() or path.is_symlink()):
            return
    subprocess.run(["umount", str(BPFFS)], capture_output=True)
    if not os.path.ismount(BPFFS):
        BPFFS.rmdir()
        if not any(BPFFS.parent.iterdir()):
            BPFFS.parent.rmdir()


class Descriptor:
    """A BPF file descriptor, closed on `close()` or when the `with` block ends."""

    fd: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunTimeStats(Descriptor):
    """Run-time statistics of every BPF program (`run_time_ns`, `run_cnt`), on while open.

    BPF_ENABLE_STATS: the kernel counts while any such descriptor is open and stops when the
    last one is closed, also when the process dies, so the system is left as found (the
    sysctl kernel.bpf_stats_enabled is a separate switch, untouched)."""

    def __init__(self) -> None:
        attr = ctypes.create_string_buffer(struct.pack("<I", 0), 4)  # BPF_STATS_RUN_TIME
        self.fd = _bpf(_ENABLE_STATS, attr, "enabling BPF run-time statistics")


class Pinned(Descriptor):
    """A file descriptor of a pinned program or map."""

    def __init__(self, path: Path) -> None:
        name = ctypes.create_string_buffer(os.fsencode(path))
        attr = ctypes.create_string_buffer(struct.pack("<QII", ctypes.addressof(name), 0, 0), 16)
        self.path = path
        self.fd = _bpf(_OBJ_GET, attr, f"opening pinned {path}")


class Map(Pinned):
    """A pinned map with fixed key and value sizes."""

    def __init__(self, path: Path, key_size: int, value_size: int) -> None:
        super().__init__(path)
        self.key_size, self.value_size = key_size, value_size

    def _elem(self, cmd: int, key: bytes, value: ctypes.Array, flags: int, what: str) -> None:
        if len(key) != self.key_size:
            raise ValueError(f"key of {len(key)} bytes for {self.path.name} (needs {self.key_size})")
        k = ctypes.create_string_buffer(key, len(key))
        attr = ctypes.create_string_buffer(
            struct.pack("<IIQQQ", self.fd, 0, ctypes.addressof(k), ctypes.addressof(value), flags), 32)
        _bpf(cmd, attr, f"{what} {self.path.name}[{key.hex()}]")

    def lookup(self, key: bytes, flags: int = 0) -> bytes:
        """The value at `key` (for a per-CPU map, every CPU's value one after another);
        `flags` BPF_F_LOCK reads it under its spin lock, so it is not torn."""
        value = ctypes.create_string_buffer(self.value_size)
        self._elem(_MAP_LOOKUP_ELEM, key, value, flags, "reading")
        return value.raw

    def update(self, key: bytes, value: bytes, flags: int = 0) -> None:
        """Writes `value` at `key`."""
        if len(value) != self.value_size:
            raise ValueError(f"value of {len(value)} bytes for {self.path.name} "
                             f"(needs {self.value_size})")
        self._elem(_MAP_UPDATE_ELEM, key, ctypes.create_string_buffer(value, len(value)), flags,
                   "writing")


class Program(Pinned):
    """A pinned tc program that can be run on a crafted frame."""

    def run_stats(self) -> tuple[int, int]:
        """(run_time_ns, run_cnt): the time the program has run and how many times, counted
        while run-time statistics are on (RunTimeStats)."""
        info = ctypes.create_string_buffer(PROG_INFO_SIZE)
        attr = ctypes.create_string_buffer(struct.pack("<IIQ", self.fd, PROG_INFO_SIZE,
                                                       ctypes.addressof(info)), 16)
        _bpf(_OBJ_GET_INFO_BY_FD, attr, f"reading the info of {self.path.name}")
        return struct.unpack_from("<QQ", info.raw, PROG_INFO_RUN_TIME_NS)

    def test_run(self, frame: bytes, ingress_ifindex: int = 0, repeat: int = 1,
                 xdp: bool = False) -> tuple[int, bytes]:
        """Runs the program on `frame` as if received on `ingress_ifindex`, `repeat` times in
        one call (on the same skb: each run sees what the one before left); returns the tc
        verdict (the XDP action for an `xdp` program) and the frame as the program left it.
        An XDP program's `ingress_ifindex` must be a device of the caller's namespace."""
        data_in = ctypes.create_string_buffer(frame, len(frame))
        data_out = ctypes.create_string_buffer(len(frame) + 256)
        if xdp:
            ctx = bytearray(XDP_MD.pack(0, len(frame), 0, ingress_ifindex, 0, 0))
        else:
            ctx = bytearray(SK_BUFF_SIZE)
            struct.pack_into("<I", ctx, SK_BUFF_INGRESS_IFINDEX, ingress_ifindex)
        ctx_in = ctypes.create_string_buffer(bytes(ctx), len(ctx))
        attr = ctypes.create_string_buffer(struct.pack(
            "<IIIIQQIIIIQQIII4x", self.fd, 0, len(frame), len(data_out), ctypes.addressof(data_in),
            ctypes.addressof(data_out), repeat, 0, len(ctx), 0, ctypes.addressof(ctx_in), 0, 0, 0, 0), 80)
        _bpf(_PROG_TEST_RUN, attr, f"test run of {self.path.name}")
        retval, _, size_out = struct.unpack_from("<III", attr.raw, 4)
        return retval, data_out.raw[:size_out]
