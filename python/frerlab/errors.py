"""Errors shared by every area of frerlab, and the exit codes of the `frerlab` command
(docs/errors.md lists them with what each command means by them)."""

#: Done; for a test, its verdict was met.
EXIT_OK = 0
#: A test's verdict was not met, or a monitor raised an alarm.
EXIT_VERDICT = 1
#: Bad input (a UsageError, or one argparse refused): nothing was done.
EXIT_USAGE = 2
#: `gen send` sent everything but fell behind its pacing.
EXIT_SHORTFALL = 3
#: The system underneath failed (a tool, the kernel, a file that cannot be written).
EXIT_FAILED = 4
#: Interrupted (Ctrl-C).
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad input the user can fix: the message names the bad value and what would be valid."""


class ToolFailed(RuntimeError):
    """A tool or process frerlab runs (ip, ethtool, the delay line, the generator) failed; the
    message carries what it said. The command exits with EXIT_FAILED."""
