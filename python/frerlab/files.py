"""Writing and reading back frerlab's files.

Every result, report and state file is written atomically (`write_atomic`), so a crash, a kill
or Ctrl-C leaves the old file or the new one, never half of one.

A file frerlab reads back (a results directory's JSON and CSV, a state file, a capture's
manifest, a file another stored file names) may have been damaged, replaced or planted: it is
read only through `stored_file`, `read_stored` or `read_json`, which take nothing but a regular
file of bounded size, inside the directory it must be in (a symlink leaving it is refused), and
which turn every way of being unreadable into one UsageError naming the file and why, never a
traceback and never a byte of the file's content.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from frerlab.errors import UsageError
from frerlab.yamlfile import field_path, hide_texts

#: Largest stored file read back (bytes): far above any result, manifest or state frerlab writes.
MAX_STORED_BYTES = 64 << 20
#: Longest integer a stored JSON file may hold, in digits (2^64 has 20; Python refuses > 4300).
MAX_JSON_DIGITS = 40


def write_atomic(path: Path, text: str | bytes) -> None:
    """Writes `text` (or bytes, such as an image) to `path` (creating its directory) through a
    temporary file in the same directory and a rename; the file is readable by everyone (0644),
    as results are."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stored_file(path: str | Path, what: str, root: str | Path | None = None) -> Path:
    """`path` if it is a regular file, inside directory `root` (when given) once symlinks are
    followed; UsageError naming the `what` file and why otherwise (missing, a directory, a
    device or FIFO, a symlink leaving `root`)."""
    path = Path(path)
    if root is not None and not path.resolve().is_relative_to(Path(root).resolve()):
        raise UsageError(f"{what} {str(path)!r} leads outside {str(root)!r} (a symlink or '..'): "
                         "frerlab reads only files inside it")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UsageError(f"{what} {str(path)!r} does not exist") from None
    except OSError as err:
        raise UsageError(f"{what} {str(path)!r} cannot be read: {err.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"
        raise UsageError(f"{what} {str(path)!r} is {kind}: frerlab reads only regular files")
    return path


def read_stored(path: str | Path, what: str, root: str | Path | None = None,
                max_bytes: int = MAX_STORED_BYTES) -> bytes:
    """The bytes of `stored_file(path, what, root)`, at most `max_bytes` of them; UsageError
    for a larger file or one that cannot be read."""
    path = stored_file(path, what, root)
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as err:
        raise UsageError(f"{what} {str(path)!r} cannot be read: {err.strerror}") from None
    if len(data) > max_bytes:
        raise UsageError(f"{what} {str(path)!r} is larger than {max_bytes} bytes, the most frerlab reads back")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_JSON_DIGITS})")
    return int(text)


def read_json(path: str | Path, what: str, root: str | Path | None = None,
              max_bytes: int = MAX_STORED_BYTES) -> Any:
    """The JSON data of `read_stored(path, what, root, max_bytes)`; UsageError for a file that is
    not UTF-8 JSON, that holds NaN or an infinity, an integer of more than MAX_JSON_DIGITS
    digits, or nesting deeper than Python's recursion limit. Checking the data's shape is the
    reader's: see `shape_error`."""
    data = read_stored(path, what, root, max_bytes)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant, parse_int=_bounded_int)
    except UnicodeDecodeError:
        problem = "it is not UTF-8 text"
    except json.JSONDecodeError as err:
        problem = f"not valid JSON at line {err.lineno}, column {err.colno}"
    except ValueError as err:
        problem = str(err)
    except RecursionError:
        problem = "it is nested too deeply"
    raise UsageError(f"{what} {str(path)!r} cannot be read ({problem}): is it a file frerlab wrote?")


def shape_error(path: str | Path, what: str, problem: str) -> UsageError:
    """The error for a stored file whose JSON parses but does not hold what frerlab wrote there
    (`problem` names the field and what it should be), for the reader to raise."""
    return UsageError(f"{what} {str(path)!r} is damaged: {problem}; is it a file frerlab wrote?")


Model = TypeVar("Model", bound=BaseModel)


def check_shape(model: type[Model], data: Any, path: str | Path, what: str, within: str = "") -> Model:
    """`data`, read from stored file `path`, as `model`; otherwise the shape_error naming the
    first bad field (under `within`, a field path), what it should be (never a text of the file
    longer than a field name) and how many more problems there are."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(part for part in (within, field_path(first["loc"])) if part) or "the top level"
        problem = ("should be a JSON object" if first["type"] == "model_type"
                   else hide_texts(first["msg"].removeprefix("Value error, "), first.get("input")))
        more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
        raise shape_error(path, what, f"{where}: {problem}{more}") from None
