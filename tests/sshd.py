"""A real OpenSSH server for tests: keys made for the test, sshd started inside a network
namespace (made by the caller, with frerlab.netns), reached over a veth from this namespace;
everything but the namespace removed on exit."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from frerlab.netns import veth
from frerlab.processes import command_line, stop

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
PORT = 2222


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


class OpenSshServer:
    """sshd in the existing namespace `netns`, listening on `server_ip`:PORT of a veth whose other end
    (`client_ip`/30, device `veth`) is in this namespace. Files go to `tmp`: client_key (and
    other_key, which the server does not accept), known_hosts."""

    def __init__(self, netns: str, veth: str, client_ip: str, server_ip: str, tmp: Path) -> None:
        self.netns, self.veth, self.client_ip, self.server_ip, self.tmp = netns, veth, client_ip, server_ip, tmp
        self.server: subprocess.Popen | None = None

    def __enter__(self) -> OpenSshServer:
        tmp, ns = self.tmp, self.netns
        tmp.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "client_key", "other_key"):
            keygen(tmp / name)
        shutil.copy(tmp / "client_key.pub", tmp / "authorized_keys")
        (tmp / "known_hosts").write_text(f"[{self.server_ip}]:{PORT} {(tmp / 'host_key.pub').read_text()}")
        (tmp / "sshd_config").write_text(
            f"Port {PORT}\nListenAddress {self.server_ip}\nHostKey {tmp / 'host_key'}\n"
            f"AuthorizedKeysFile {tmp / 'authorized_keys'}\nPidFile {tmp / 'sshd.pid'}\nStrictModes no\nUsePAM no\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "AllowTcpForwarding yes\nSubsystem sftp internal-sftp\nMaxStartups 100\nMaxSessions 100\n")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        try:
            veth(None, self.veth, ns, "mgmt")
            subprocess.run(["ip", "addr", "add", f"{self.client_ip}/30", "dev", self.veth], check=True)
            for argv in (["ip", "addr", "add", f"{self.server_ip}/30", "dev", "mgmt"], ["ip", "link", "set", "lo", "up"]):
                subprocess.run(["ip", "netns", "exec", ns, *argv], check=True)
            self.server = subprocess.Popen(["ip", "netns", "exec", ns, SSHD, "-D", "-e", "-f", str(tmp / "sshd_config")],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 10
            while not subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{PORT}"],
                                     capture_output=True, text=True).stdout.strip():
                if time.monotonic() > deadline or self.server.poll() is not None:
                    raise RuntimeError("sshd did not start")
                time.sleep(0.05)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops the server and every session process it forked (a session still open when the
        server stops outlives it, orphaned), then removes the veth."""
        if self.server:
            self.server.terminate()
            self.server.wait(timeout=10)
        in_netns = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True).stdout.split()
        stop([int(pid) for pid in in_netns if b" ".join(command_line(int(pid))).startswith(b"sshd")])
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True)

    def target(self, **changes) -> dict:
        """A hosts-file entry for this server."""
        return {"host": self.server_ip, "port": PORT, "user": "root", "key": str(self.tmp / "client_key"),
                "known_hosts": str(self.tmp / "known_hosts"), **changes}
