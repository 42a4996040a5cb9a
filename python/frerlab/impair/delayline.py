"""The delay-line process of a path impairment element: `python -m frerlab.impair.delayline
STATE_DIR`, started inside the path's namespace by `PathImpairment`. It runs crates/impair's
delay line (with the GIL released) on the spec in STATE_DIR until a `stop` request on its
control socket, or SIGTERM (which ends the process at once: the GIL is not taken back to run a
Python signal handler)."""

from __future__ import annotations

import sys
from pathlib import Path

from frerlab import _native
from frerlab.impair.path import SPEC_FILE


def main(argv: list[str] | None = None) -> int:
    """Runs the delay line of the state directory given as the only argument; exit 0 when
    stopped by request, 1 on failure (the reason on stderr), 2 on a bad command line."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m frerlab.impair.delayline STATE_DIR", file=sys.stderr)
        return 2
    try:
        spec = (Path(args[0]) / SPEC_FILE).read_text()
        _native.impair_delay_line(spec)
    except (OSError, ValueError) as err:
        print(f"delay line {args[0]}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
