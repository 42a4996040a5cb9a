"""User-given names and the paths built from them.

frerlab runs as root and turns names from the command line and from configuration files
(data planes, testbeds, ports, network namespaces) into file paths, pin directories,
namespace and interface names. Every such name passes `check_name`: 1 to 40 (interfaces: 15)
letters, digits, '_' and '-', not starting with '-', so it is one harmless path component
(never '.', '..' or hidden), cannot be read as an option, and cannot make one name's file
look like another's (`x.json` vs `x.latent.json`). `inside` builds the path of a name in a state
directory and refuses one that does not resolve inside it (a symlink planted there included).

RUN_DIR holds every state directory (data planes, testbeds, impairments, the BPF
filesystem); the environment variable FRERLAB_RUN_DIR moves it (the tests point it at a
temporary directory).

Every option naming where results go passes `output_dir` or `output_file` before anything is
created: results never go into RUN_DIR, /proc, /sys, /dev, /run or a kernel file system, also
not through a symlink or '..'.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from frerlab.errors import UsageError

#: Where frerlab keeps what lives across commands (FRERLAB_RUN_DIR overrides it).
RUN_DIR = Path(os.environ.get("FRERLAB_RUN_DIR") or "/run/frerlab")
#: Longest name, and longest interface name (IFNAMSIZ 16 with the terminating NUL).
MAX_NAME, MAX_IFNAME = 40, 15
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
#: Longest text an error message shows of a value; longer ones are cut.
_SHOWN_CHARS = 200


def shown(value: object) -> str:
    """`value` as an error message shows it: repr, cut if long; a huge number by its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<a {int(value.bit_length() * math.log10(2)) + 1}-digit number>"  # str() refuses > 4300
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS - 20]}... ({len(str(value))} characters)"


def name_problem(value: object, what: str, max_length: int = MAX_NAME,
                 reserved: tuple[str, ...] = ()) -> str | None:
    """Why `value` is not a valid `what` name (a message naming it and the valid form), or None."""
    if not (isinstance(value, str) and len(value) <= max_length and _NAME.fullmatch(value)):
        return (f"{what} name {shown(value)} is not valid: use 1-{max_length} letters, digits, '_', '-' "
                "(not starting with '-')")
    if value in reserved:
        return f"{what} name {value!r} is reserved by frerlab ({', '.join(reserved)}); use another name"
    return None


def check_name(value: object, what: str, max_length: int = MAX_NAME, reserved: tuple[str, ...] = ()) -> str:
    """`value` if it is a valid `what` name; UsageError naming it and the valid form otherwise."""
    problem = name_problem(value, what, max_length, reserved)
    if problem:
        raise UsageError(problem)
    return value


def pydantic_name(what: str, max_length: int = MAX_NAME, reserved: tuple[str, ...] = ()):
    """A pydantic string type holding a valid `what` name (check_name's rule)."""
    def check(value: str) -> str:
        problem = name_problem(value, what, max_length, reserved)
        if problem:
            raise ValueError(problem)
        return value
    return Annotated[str, AfterValidator(check)]


def inside(directory: Path, name: str, suffix: str = "") -> Path:
    """`directory / (name + suffix)`; UsageError if that path does not resolve to an entry
    directly inside `directory` (a name with '/' or '..', a symlink pointing elsewhere)."""
    path = Path(directory) / f"{name}{suffix}"
    if not name or path.resolve().parent != Path(directory).resolve():
        raise UsageError(f"{shown(name)} does not name an entry of {directory}")
    return path


#: Directories no result of frerlab's goes to, and why: as root, a write there changes the system.
_SYSTEM_DIRS = {Path("/proc"): "the kernel's process information", Path("/sys"): "the kernel's devices and settings",
                Path("/dev"): "device files",
                Path("/run"): "the running system's state (network namespaces, sockets, frerlab's state)"}
#: The kernel's file systems, refused wherever they are mounted (a bpf file system in RUN_DIR, a
#: cgroup tree elsewhere): their files are the kernel's interfaces, not storage.
_KERNEL_FS_TYPES = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "debugfs", "tracefs", "securityfs", "bpf",
                              "cgroup", "cgroup2", "configfs", "pstore", "efivarfs", "mqueue", "hugetlbfs",
                              "binfmt_misc", "fusectl", "nsfs", "selinuxfs", "autofs", "rpc_pipefs"})
_VALID_DIR = "give a new or existing directory outside /proc, /sys, /dev and /run (e.g. results/NAME)"
_VALID_FILE = "give a file name (new, or a regular file to replace) outside /proc, /sys, /dev and /run"


def _mount_of(real: Path) -> tuple[str, str]:
    """The mount point the resolved path `real` lies under, and its file system type."""
    found = ("/", "")
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:  # ID PARENT DEV ROOT MOUNT-POINT OPTIONS... - TYPE SOURCE OPTIONS
        head, _, tail = line.partition(" - ")
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), head.split()[4])  # \040: a space
        if real.is_relative_to(point) and len(point) >= len(found[0]):  # the later of stacked mounts
            found = (point, tail.split()[0])
    return found


def _results_place(path: Path, option: str, valid: str) -> int | None:
    """The file type (stat's st_mode) of what `path` leads to, None if nothing yet; UsageError
    naming `path` and `valid` if it leads (symlinks and '..' followed) into RUN_DIR, a system
    directory or a kernel file system, or under something that is not a directory."""
    try:
        real = path.resolve()
        leads = "" if real == path.absolute() else f" (it leads to {str(real)!r})"
        for root, what in ((RUN_DIR.resolve(), "frerlab's state directory"), *_SYSTEM_DIRS.items()):
            if real.is_relative_to(root):
                raise UsageError(f"{option} {shown(str(path))} is inside {root}{leads}, {what}: {valid}")
        point, kind = _mount_of(real)
        if kind in _KERNEL_FS_TYPES:
            raise UsageError(f"{option} {shown(str(path))}{leads} is on the kernel's {kind} file system mounted at "
                             f"{point}: {valid}")
        mode = real.stat().st_mode if real.exists() else None
        base = next((p for p in real.parents if p.exists()), real)
        if not base.is_dir():
            raise UsageError(f"{option} {shown(str(path))}: {str(base)!r} is not a directory: {valid}")
    except (OSError, RuntimeError) as err:  # a name too long, a symlink loop
        raise UsageError(f"{option} {shown(str(path))} cannot be used ({getattr(err, 'strerror', None) or err}): "
                         f"{valid}") from None
    return mode


def output_dir(path: Path, option: str) -> Path:
    """`path` if results may go there as a directory (existing, or to be made); UsageError
    naming it and what is valid otherwise: an existing non-directory, a path in or leading
    (through a symlink or '..') into /proc, /sys, /dev, /run, RUN_DIR or a kernel file system,
    or one under a non-directory. Every option naming an output directory passes here before
    anything is created."""
    path = Path(path)
    mode = _results_place(path, option, _VALID_DIR)
    if mode is not None and not stat.S_ISDIR(mode):
        raise UsageError(f"{option} {shown(str(path))} exists and is not a directory: {_VALID_DIR}")
    return path


def output_file(path: Path, option: str) -> Path:
    """`path` if a result file may be written there (new, or replacing a regular file; missing
    directories are made); UsageError naming it and what is valid otherwise: a directory, a
    device, FIFO or socket, and every place output_dir refuses. Every option naming an output
    file passes here before anything is created."""
    path = Path(path)
    mode = _results_place(path, option, _VALID_FILE)
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{option} {shown(str(path))} is a directory: {_VALID_FILE}")
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{option} {shown(str(path))} is not a regular file (a device, FIFO or socket): {_VALID_FILE}")
    return path
