"""Writing frerlab's files: every result, report and state file is written atomically, so a
crash, a kill or Ctrl-C leaves the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
