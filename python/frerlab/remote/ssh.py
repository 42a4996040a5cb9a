"""SSH sessions to the hosts of a measurement, with asyncssh.

Why asyncssh rather than paramiko: commands on the talker and the listener must start together
and run side by side (a receiver, then its sender; pre-flight on every host at once), which is
what an asyncio library does natively, where paramiko needs a thread per channel; it is
maintained, speaks jump hosts (`tunnel`), known_hosts and the SSH agent, and has SFTP.

`Session(hosts)` connects to every role at once (in a `with` block) and offers blocking calls
for the rest of frerlab, run on an event loop of its own in a background thread:

- `run(role, argv, timeout_s)`: a command to completion; `run_all({role: argv})` in parallel;
- `start(role, argv)`: a background process whose remote pid is known, so it can be stopped;
- `fetch(role, remote, local)`: a file back into the results directory (SFTP).

Every remote process started is stopped (SIGTERM, then SIGKILL) when the block ends, also on
Ctrl-C or an error: an SSH channel closing does not stop a process without a terminal. A
process is registered for that on the session's loop as soon as its pid is known, so one whose
`start` was interrupted (SIGTERM while it started) is stopped too. Errors name the role, the
target and what went wrong: unreachable, authentication refused, host key unknown, a tool
missing (exit 127), a timeout, a process killed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shlex
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from frerlab.errors import ToolFailed
from frerlab.remote.hosts import Hosts, SshTarget

#: Seconds a stopped remote process has between SIGTERM and SIGKILL.
STOP_GRACE_S = 1.0
#: Seconds closing a session waits for a `start` still under way, to stop what it started.
START_WAIT_S = 5.0


class RemoteError(ToolFailed):
    """A host could not be reached or logged into, or a remote command failed."""


@dataclass(frozen=True)
class Done:
    """A finished remote command."""

    returncode: int
    stdout: str
    stderr: str


class RemoteProcess:
    """A command running on a host; `pid` is its process id there."""

    def __init__(self, session: Session, role: str, argv: list[str], process: asyncssh.SSHClientProcess,
                 pid: int) -> None:
        self.session, self.role, self.argv, self._process, self.pid = session, role, argv, process, pid
        self.result: Done | None = None

    def wait(self, timeout_s: float) -> Done:
        """Waits for the process to end; RemoteError if it was killed or did not end in time."""
        async def finish() -> Done:
            done = await asyncio.wait_for(self._process.wait(check=False), timeout_s)
            return Done(_exit_code(done), done.stdout or "", done.stderr or "")
        try:
            self.result = self.session._call(finish())
        except TimeoutError:
            raise RemoteError(f"{shlex.join(self.argv)} on {self.role} did not end within {timeout_s:g} s") from None
        if self.result.returncode < 0:
            raise RemoteError(f"{shlex.join(self.argv)} on {self.role} was killed by signal {-self.result.returncode}")
        return self.result


def _exit_code(done: asyncssh.SSHCompletedProcess) -> int:
    """The exit status, or minus the signal number for a process killed by a signal."""
    if done.exit_status is not None and done.exit_status >= 0:
        return done.exit_status
    signals = {"TERM": 15, "KILL": 9, "INT": 2, "HUP": 1}
    return -signals.get(done.exit_signal[0], 0) if done.exit_signal else -1


class Session:
    """SSH connections to every role of `hosts`, or to `roles` only (see the module doc)."""

    def __init__(self, hosts: Hosts, roles: list[str] | None = None) -> None:
        self.targets = {role: t for role, t in hosts.roles().items() if roles is None or role in roles}
        if roles is not None and set(roles) - set(self.targets):
            raise RemoteError(f"no host for role {sorted(set(roles) - set(self.targets))[0]!r} "
                              f"(hosts: {', '.join(hosts.roles())})")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._connections: dict[str, asyncssh.SSHClientConnection] = {}
        self._started: list[RemoteProcess] = []
        self._starting: list[concurrent.futures.Future] = []

    def __enter__(self) -> Session:
        self._thread.start()
        try:
            roles = list(self.targets)
            found = self._call(_gather([self._connect(r, self.targets[r]) for r in roles], return_exceptions=True))
            for role, item in zip(roles, found):
                if isinstance(item, BaseException):
                    raise item
                self._connections[role] = item
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, coroutine: Coroutine) -> Any:
        """Runs `coroutine` on the session's loop and waits for it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _connect(self, role: str, target: SshTarget) -> asyncssh.SSHClientConnection:
        tunnel = await self._connect(f"{role}'s jump host", target.jump) if target.jump else ()
        known = target.known_hosts_keys()
        keys = [target.private_key()] if target.key else ()
        try:
            return await asyncssh.connect(target.host, target.port, username=target.user, client_keys=keys,
                                          known_hosts=known, tunnel=tunnel, connect_timeout=target.connect_timeout_s,
                                          agent_path=None if target.key else ())
        except asyncssh.PermissionDenied:
            raise RemoteError(f"{role}: authentication refused for {target.address}"
                              + (f" with key {target.key}" if target.key else " (agent and default keys)")) from None
        except asyncssh.HostKeyNotVerifiable as err:
            raise RemoteError(f"{role}: the host key of {target.address} is not known ({err.reason}): add it to "
                              f"{target.known_hosts or '~/.ssh/known_hosts'}, or set known_hosts: none") from None
        except (OSError, asyncssh.Error, TimeoutError) as err:
            reason = getattr(err, "strerror", None) or getattr(err, "reason", None) or type(err).__name__
            raise RemoteError(f"{role}: cannot reach {target.address}: {reason}") from None

    def _connection(self, role: str) -> asyncssh.SSHClientConnection:
        if role not in self._connections:
            raise RemoteError(f"no host for role {role!r} (hosts: {', '.join(self._connections)})")
        return self._connections[role]

    def run(self, role: str, argv: list[str], timeout_s: float = 60.0, check: bool = True) -> Done:
        """Runs `argv` on `role`'s host to completion; with `check`, RemoteError on a non-zero exit
        (127: the tool is not installed there)."""
        return self.run_all({role: argv}, timeout_s, check)[role]

    def run_all(self, commands: dict[str, list[str]], timeout_s: float = 60.0, check: bool = True) -> dict[str, Done]:
        """Runs one command per role, all at once; results by role."""
        async def one(role: str, argv: list[str]) -> Done:
            done = await asyncio.wait_for(self._connection(role).run(shlex.join(argv), check=False), timeout_s)
            return Done(_exit_code(done), done.stdout or "", done.stderr or "")
        try:
            found = self._call(_gather([one(r, a) for r, a in commands.items()]))
        except TimeoutError:
            raise RemoteError(f"a command on {', '.join(commands)} did not end within {timeout_s:g} s") from None
        results = dict(zip(commands, found))
        if check:
            for role, done in results.items():
                _check(role, commands[role], done)
        return results

    def start(self, role: str, argv: list[str]) -> RemoteProcess:
        """Starts `argv` on `role`'s host in the background; it is stopped when the session ends."""
        async def begin() -> RemoteProcess:
            process = await self._connection(role).create_process(
                "sh -c 'echo $$; exec \"$@\"' frerlab " + shlex.join(argv))
            line = await process.stdout.readline()
            if not line.strip().isdigit():
                raise RemoteError(f"{shlex.join(argv)} did not start on {role}")
            started = RemoteProcess(self, role, argv, process, int(line))
            self._started.append(started)  # here, so that close() stops it even if the caller was interrupted
            return started
        starting = asyncio.run_coroutine_threadsafe(begin(), self._loop)
        self._starting.append(starting)
        return starting.result()

    def fetch(self, role: str, remote: str, local: Path) -> None:
        """Copies file `remote` of `role`'s host to `local` (SFTP)."""
        async def get() -> None:
            async with self._connection(role).start_sftp_client() as sftp:
                await sftp.get(remote, str(local))
        try:
            self._call(get())
        except (OSError, asyncssh.Error) as err:
            raise RemoteError(f"cannot fetch {remote} from {role}: {getattr(err, 'reason', None) or err}") from None

    def stop(self, process: RemoteProcess) -> None:
        """Stops a started process (SIGTERM, then SIGKILL after STOP_GRACE_S) if it still runs."""
        if process.result is None and process._process.exit_status is None:
            pid, tries = process.pid, round(STOP_GRACE_S / 0.1)
            kill = (f"kill -TERM {pid} 2>/dev/null; for i in $(seq {tries}); do kill -0 {pid} 2>/dev/null || exit 0; "
                    f"sleep 0.1; done; kill -KILL {pid} 2>/dev/null")
            self._call(self._connection(process.role).run(kill, check=False))

    def close(self) -> None:
        """Stops what was started, closes every connection and the loop."""
        try:
            if self._thread.is_alive():
                concurrent.futures.wait(self._starting, timeout=START_WAIT_S)
                for process in list(self._started):
                    try:
                        self.stop(process)
                    except (OSError, asyncssh.Error):
                        pass
                for connection in self._connections.values():
                    connection.close()
                self._call(_gather([c.wait_closed() for c in self._connections.values()]))
        finally:
            self._connections.clear()
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join()
            self._loop.close()


async def _gather(coroutines: list[Coroutine], return_exceptions: bool = False) -> list:
    """asyncio.gather as a coroutine (run_coroutine_threadsafe takes coroutines only)."""
    return await asyncio.gather(*coroutines, return_exceptions=return_exceptions)


def _check(role: str, argv: list[str], done: Done) -> None:
    if done.returncode == 127:
        raise RemoteError(f"{argv[0]} is not installed on {role} (exit 127): install it there")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-300:]
        raise RemoteError(f"{shlex.join(argv)} on {role} exited with status {done.returncode}: {tail}")
