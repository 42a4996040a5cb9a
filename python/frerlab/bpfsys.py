"""frerlab's eBPF plumbing, as Python sees it: a thin wrapper of the native loader (crates/bpf,
on libbpf through libbpf-rs, in frerlab._native), below both the FRER data plane
(frerlab.dataplane) and the path impairment element (frerlab.impair), and importing neither.
It loads an object and pins its programs (PIN/NAME) and maps (PIN/maps/NAME), creates pinned
maps, opens pinned maps (`Map`: lookup and update, BPF_F_LOCK, and the same for many elements
at once in batches; `possible_cpus` gives the entries of a per-CPU value) and programs
(`Program`: BPF_PROG_TEST_RUN, run-time statistics, `RunTimeStats`), and attaches programs to
ports through libbpf's own netlink: tc clsact ingress/egress in direct-action mode, XDP native
or generic, inside a network namespace where one is named. Attachments are netlink ones that
stay after this process exits (`frerlab dataplane up` leaves the data plane running); `detach`
removes them.

What Python keeps is the BPF filesystem frerlab pins in (BPFFS, mounted on first use and
unmounted once nothing of any run is left in it). Failures raise BpfError (an OSError) naming
the object, program, map or port; a program the verifier refuses ends with the verifier's
last words. Invalid arguments raise ValueError.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from frerlab._native import BpfError
from frerlab._native import BpfMap as Map
from frerlab._native import BpfProgram as Program
from frerlab._native import RunTimeStats
from frerlab._native import bpf_add_clsact as add_clsact
from frerlab._native import bpf_attach_tc as attach_tc
from frerlab._native import bpf_attach_xdp as attach_xdp
from frerlab._native import bpf_create_map as create_map
from frerlab._native import bpf_detach as detach
from frerlab._native import bpf_ifindex as ifindex
from frerlab._native import bpf_load_and_pin as _load_and_pin
from frerlab.names import RUN_DIR
from frerlab.statefiles import remove_if_empty

__all__ = ["BPFFS", "BPF_F_LOCK", "BpfError", "Map", "Program", "RunTimeStats", "add_clsact",
           "attach_ingress", "attach_tc", "attach_xdp", "create_map", "detach", "ensure_bpffs",
           "ifindex", "load_and_pin", "possible_cpus", "unpin"]

#: Map update flag: take the value's bpf_spin_lock while writing it.
BPF_F_LOCK = 4
#: Where frerlab pins: a BPF filesystem of its own outside /sys, because `ip netns exec` and
#: `tc -n` remount /sys in the namespace and would lose sight of /sys/fs/bpf.
BPFFS = RUN_DIR / "bpf"


def ensure_bpffs() -> None:
    """Mounts a BPF filesystem at BPFFS if none is mounted there."""
    if not os.path.ismount(BPFFS):
        BPFFS.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "bpf", "frerlab-bpf", str(BPFFS)], check=True)


def possible_cpus() -> int:
    """The number of possible CPUs (the entries of a per-CPU map value)."""
    text = Path("/sys/devices/system/cpu/possible").read_text().strip()
    return sum(int(r.split("-")[-1]) - int(r.split("-")[0]) + 1 for r in text.split(","))


def load_and_pin(obj: Path, pin_dir: Path, reuse: Path | None = None,
                 shapes: dict[str, tuple[str, int]] | None = None) -> None:
    """Loads every program of `obj` (verifier included) and pins programs under `pin_dir`
    (which must not exist), maps under `pin_dir/maps`; a map of the same name pinned in
    directory `reuse` is used instead of a new one (so two objects share their maps). `shapes`
    gives maps of the object another type and size before they are made (name -> (libbpf's
    type name, max_entries); an array drops BPF_F_NO_PREALLOC). Leaves nothing pinned if
    loading fails."""
    try:
        with _bpffs_lock(exclusive=False):
            ensure_bpffs()
            _load_and_pin(obj, pin_dir, reuse, shapes)
    except BaseException:
        _release_bpffs()
        raise


def attach_ingress(netns: str | None, port: str, prog: Path) -> None:
    """Adds a clsact qdisc to `port` (refusing a port that has one) and attaches pinned
    program `prog` to its ingress, in direct-action mode; removes the qdisc again on failure."""
    add_clsact(netns, port)
    try:
        attach_tc(netns, port, prog, "ingress")
    except BaseException:
        detach(netns, port)
        raise


def unpin(pin_dir: Path) -> None:
    """Removes a pin directory and everything pinned in it (the kernel frees what no one else
    holds), then the BPF filesystem itself once nothing is pinned in it any more."""
    if pin_dir.exists():
        shutil.rmtree(pin_dir)
    _release_bpffs()


@contextmanager
def _bpffs_lock(exclusive: bool) -> Iterator[None]:
    """An flock on RUN_DIR's parent directory (which always exists, where a lock file would
    outlive the run): a loader holds it shared from mounting BPFFS to its first pin, the
    unmount exclusive, so that no frerlab process unmounts the file system (taking every pin
    with it) between another's mount and its pins."""
    fd = os.open(RUN_DIR.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _release_bpffs() -> None:
    """Unmounts BPFFS when it holds only the kernel's debug files and the empty state
    directories tc creates (ip, tc/globals, xdp): nothing of any run is left in it."""
    with _bpffs_lock(exclusive=True):
        if not os.path.ismount(BPFFS):
            return
        for path in BPFFS.rglob("*"):
            if path.name not in ("progs.debug", "maps.debug") and not (path.is_dir() or path.is_symlink()):
                return
        subprocess.run(["umount", str(BPFFS)], capture_output=True)
        if not os.path.ismount(BPFFS):
            remove_if_empty(BPFFS)
