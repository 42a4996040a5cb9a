"""The hosts file: SSH targets by role (talker, listener, switch management), validated.

    talker:
      host: 192.0.2.10          # name or address
      port: 22
      user: root
      key: ~/.ssh/frerlab       # private key (default: the SSH agent and ~/.ssh keys)
      known_hosts: ~/.ssh/known_hosts   # default; "none" turns host key checking off
      jump: {host: bastion.example, user: lab}   # optional jump host, same fields
      interface: enp2s0         # the interface under test (pre-flight reads it)
    listener: {...}

Values are strict (`port: "22"` or `port: true` is refused, not coerced). A relative `key` or
`known_hosts` is relative to the hosts file's directory (`~` is the home directory). Every key
file and known_hosts file is read when the hosts file is (regular files of at most
MAX_KEY_BYTES): one that is missing, not a private key (a public key, an empty file, any other
text), encrypted, or not a known_hosts file is refused naming the file, never showing its text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from frerlab.errors import UsageError
from frerlab.files import read_stored
from frerlab.yamlfile import read_mapping, validate

ROLES = ("talker", "listener", "switch")
#: Largest key or known_hosts file read (bytes): a 16384-bit RSA private key is about 12 KB, a
#: known_hosts line under 1 KB.
MAX_KEY_BYTES = 1 << 20


#: A path in the file: text, taken as a path (strict models take Path objects only).
FilePath = Annotated[Path, Field(strict=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SshTarget(_Model):
    """Where and as whom to log in."""

    host: str = Field(min_length=1, max_length=255)
    port: int = Field(22, ge=1, le=65535)
    user: str = Field("root", min_length=1, max_length=64)
    key: FilePath | None = None
    known_hosts: FilePath | Literal["none"] | None = None
    jump: SshTarget | None = None
    interface: str | None = Field(None, min_length=1, max_length=15)
    connect_timeout_s: float = Field(10.0, gt=0, le=300)

    @property
    def address(self) -> str:
        """`user@host:port`, as messages name the target."""
        return f"{self.user}@{self.host}:{self.port}"

    def private_key(self) -> Any:
        """The private key of file `key` (an asyncssh.SSHKey), None without `key`; UsageError
        naming the file if it is missing, not a regular file, or not an unencrypted private key."""
        if self.key is None:
            return None
        import asyncssh  # only when a key is named: most of frerlab never logs in

        data = read_stored(self.key, "key file", max_bytes=MAX_KEY_BYTES)
        try:
            return asyncssh.import_private_key(data)
        except (asyncssh.KeyImportError, ValueError):
            raise UsageError(f"key file {str(self.key)!r} is not a private key frerlab can use (an OpenSSH or PEM "
                             "private key without a passphrase; for a key with one, leave `key` out and add the "
                             "key to the SSH agent)") from None

    def known_hosts_keys(self) -> Any:
        """The host keys of file `known_hosts` (an asyncssh.SSHKnownHosts); None to check none
        ("none"), () for the default ~/.ssh/known_hosts; UsageError naming a file that is
        missing, not a regular file, or not a known_hosts file."""
        if self.known_hosts is None:
            return ()
        if self.known_hosts == "none":
            return None
        import asyncssh

        data = read_stored(self.known_hosts, "known_hosts file", max_bytes=MAX_KEY_BYTES)
        try:
            return asyncssh.import_known_hosts(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise UsageError(f"known_hosts file {str(self.known_hosts)!r} is not a known_hosts file "
                             "(lines of host names and public keys, as ssh writes it)") from None

    def in_directory(self, directory: Path) -> SshTarget:
        """This target with a relative `key` and `known_hosts` (its jump host's too) taken
        relative to `directory`, and `~` expanded."""
        def file(path: Path | str | None) -> Path | str | None:
            return path if path in (None, "none") else Path(directory) / Path(path).expanduser()
        return self.model_copy(update={"key": file(self.key), "known_hosts": file(self.known_hosts),
                                       "jump": self.jump and self.jump.in_directory(directory)})

    def check_files(self) -> None:
        """Reads the key and known_hosts files (its jump host's too): UsageError if one is bad."""
        self.private_key()
        self.known_hosts_keys()
        if self.jump:
            self.jump.check_files()


class Hosts(_Model):
    """The hosts file: a target per role; talker and listener are required."""

    talker: SshTarget
    listener: SshTarget
    switch: SshTarget | None = None

    def roles(self) -> dict[str, SshTarget]:
        return {role: target for role in ROLES if (target := getattr(self, role)) is not None}


SHAPE = "a hosts file is a mapping of talker, listener and optionally switch, each with host, user, key, ..."


def read_hosts(path: str | Path) -> Hosts:
    """The validated hosts file, its file paths taken relative to its directory and its key
    and known_hosts files read; UsageError naming each bad field or file otherwise."""
    hosts = validate(Hosts, read_mapping(path, "hosts", SHAPE), str(path), SHAPE)
    hosts = hosts.model_copy(update={role: target.in_directory(Path(path).parent)
                                     for role, target in hosts.roles().items()})
    for role, target in hosts.roles().items():
        try:
            target.check_files()
        except UsageError as err:
            raise UsageError(f"{path}: {role}: {err}") from None
    return hosts
