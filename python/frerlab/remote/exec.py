"""`python -m frerlab.remote.exec HOSTS ROLE -- CMD ...`: runs CMD on ROLE's host of hosts file
HOSTS over SSH as if it ran here, so that anything frerlab runs through a command prefix runs
on a real host unchanged: stdout and stderr come back (when the command ends), the exit status
is the command's (128 + N when signal N killed it), and SIGTERM or SIGINT to this process
stops the remote command before it exits (frerlab.remote.ssh.Session does)."""

from __future__ import annotations

import signal
import sys

from frerlab.errors import EXIT_FAILED, EXIT_USAGE, UsageError
from frerlab.remote.hosts import read_hosts
from frerlab.remote.ssh import RemoteError, Session

#: Longest a remote command may run, in seconds.
MAX_RUN_S = 7 * 24 * 3600


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m frerlab.remote.exec HOSTS ROLE -- CMD ...", file=sys.stderr)
        return EXIT_USAGE
    hosts_file, role, command = argv[0], argv[1], argv[3:]
    signal.signal(signal.SIGTERM, _stop)
    try:
        with Session(read_hosts(hosts_file), roles=[role]) as session:
            process = session.start(role, command)
            try:
                done = process.wait(MAX_RUN_S)
            except RemoteError:
                done = process.result
                if done is None:
                    raise
    except UsageError as err:
        print(f"frerlab: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except RemoteError as err:
        print(f"frerlab: failed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 128 + signal.SIGTERM
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode if done.returncode >= 0 else 128 - done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
