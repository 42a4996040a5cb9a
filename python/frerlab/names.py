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
"""

from __future__ import annotations

import math
import os
import re
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


#: Kernel filesystems no output of frerlab's goes to (as root, writing there changes the system).
_KERNEL_FS = (Path("/proc"), Path("/sys"), Path("/dev"))


def _outside_kernel_fs(path: Path, option: str) -> Path:
    for root in _KERNEL_FS:
        if path.resolve().is_relative_to(root):
            raise UsageError(f"{option} {str(path)!r} is inside {root}: give a path on a file system for results")
    return path


def output_dir(path: Path, option: str) -> Path:
    """`path` if results may go there as a directory (existing, or to be made); UsageError
    for an existing non-directory or a path in /proc, /sys, /dev."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {str(path)!r} exists and is not a directory: give a directory for the results")
    return _outside_kernel_fs(path, option)


def output_file(path: Path, option: str) -> Path:
    """`path` if a result file may be written there (replacing a regular file); UsageError for
    a directory, another kind of file, a missing parent directory or a path in /proc, /sys, /dev."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a directory: give a file name")
    if path.exists() and not path.is_file():
        raise UsageError(f"{option} {str(path)!r} is not a regular file")
    if not path.absolute().parent.is_dir():
        raise UsageError(f"{option} {str(path)!r}: directory {str(path.absolute().parent)!r} does not exist")
    return _outside_kernel_fs(path, option)
