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
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from frerlab.yamlfile import read_mapping, validate

ROLES = ("talker", "listener", "switch")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SshTarget(_Model):
    """Where and as whom to log in."""

    host: str = Field(min_length=1, max_length=255)
    port: int = Field(22, ge=1, le=65535)
    user: str = Field("root", min_length=1, max_length=64)
    key: Path | None = None
    known_hosts: Union[Path, Literal["none"], None] = None
    jump: SshTarget | None = None
    interface: str | None = Field(None, min_length=1, max_length=15)
    connect_timeout_s: float = Field(10.0, gt=0, le=300)

    @property
    def address(self) -> str:
        """`user@host:port`, as messages name the target."""
        return f"{self.user}@{self.host}:{self.port}"


class Hosts(_Model):
    """The hosts file: a target per role; talker and listener are required."""

    talker: SshTarget
    listener: SshTarget
    switch: SshTarget | None = None

    def roles(self) -> dict[str, SshTarget]:
        return {role: target for role in ROLES if (target := getattr(self, role)) is not None}


SHAPE = "a hosts file is a mapping of talker, listener and optionally switch, each with host, user, key, ..."


def read_hosts(path: str | Path) -> Hosts:
    """The validated hosts file; UsageError naming each bad field otherwise."""
    return validate(Hosts, read_mapping(path, "hosts", SHAPE), str(path), SHAPE)
