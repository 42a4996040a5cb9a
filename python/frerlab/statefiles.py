"""Reading back the state files frerlab keeps under RUN_DIR across commands (a testbed's, a data
plane's and its latent error findings, an impairment element's).

Such a file may have been damaged (a full disk, a crash of the machine) or planted: `read_state`
takes it only through `frerlab.files.read_json` (a regular file inside its state directory,
bounded, JSON without NaN, huge integers or deep nesting) and checks its shape with a strict
pydantic model of what frerlab wrote there, so every damage is one UsageError naming the file
and the field, never a traceback and never a text of the file longer than a field name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from frerlab.errors import UsageError
from frerlab.files import check_shape, read_json


class StateModel(BaseModel):
    """A state file's shape: strict types (no `"1"` for 1, no `1` for true); keys a later
    version may add are ignored."""

    model_config = ConfigDict(strict=True, extra="ignore")


def read_state(path: Path, what: str, model: type[StateModel], root: Path) -> dict[str, Any]:
    """The data of state file `path` (inside directory `root`) once it has `model`'s shape;
    UsageError naming the file and the bad field otherwise."""
    data = read_json(path, what, root)
    check_shape(model, data, path, what)
    return data


def down_all(what: str, names: Iterable[str], down: Callable[[str], bool],
             say: Callable[[str], None] = print) -> dict[str, bool]:
    """`down(name)` for each of `names` (each a `what`: "testbed", "data plane"), saying what
    it did; one whose state file is damaged is left in place and the rest go on, then one
    UsageError names every one left. Returns each name and whether it was up."""
    was_up, damaged = {}, []
    for name in names:
        try:
            was_up[name] = down(name)
            say(f"{what} {name} {'removed' if was_up[name] else 'was not up'}")
        except UsageError as err:
            damaged.append(str(err))
    if damaged:
        raise UsageError(f"{len(damaged)} {what}(s) left in place: " + "\n".join(damaged))
    return was_up


def remove_if_empty(directory: Path) -> None:
    """Removes state directory `directory` (one of RUN_DIR's) if nothing is left in it, then
    RUN_DIR if that is empty too, so that a machine frerlab is done with keeps no trace of it.
    Whatever another run put there meanwhile stays."""
    for empty in (directory, directory.parent):
        try:
            if empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
            elif empty.exists():
                return
        except OSError:  # filled or removed by another run meanwhile
            return
