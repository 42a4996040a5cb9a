"""Classic pcap files (the libpcap format every capture tool reads), for handing frerlab's
frames to Wireshark/tshark and reading captures back. Ethernet link type only."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

LINKTYPE_ETHERNET = 1
_MAGIC_US = 0xA1B2C3D4  # microsecond timestamps
_MAGIC_NS = 0xA1B23C4D  # nanosecond timestamps
_SNAPLEN = 262_144


def write_pcap(path: str | Path, frames: Iterable[tuple[int, bytes]]) -> None:
    """Writes (timestamp in ns, frame) pairs as a nanosecond pcap, atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        out.write(struct.pack("<IHHiIII", _MAGIC_NS, 2, 4, 0, 0, _SNAPLEN, LINKTYPE_ETHERNET))
        for t_ns, frame in frames:
            sec, nsec = divmod(t_ns, 1_000_000_000)
            out.write(struct.pack("<IIII", sec, nsec, len(frame), len(frame)))
            out.write(frame)
    tmp.replace(path)


def read_pcap(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Yields (timestamp in ns, frame) from a classic pcap of Ethernet frames."""
    with open(path, "rb") as f:
        header = f.read(24)
        if len(header) < 24:
            raise ValueError(f"{path}: {len(header)} bytes is too short for a pcap header (24)")
        for endian in "<>":
            magic, _, _, _, _, _, linktype = struct.unpack(endian + "IHHiIII", header)
            if magic in (_MAGIC_US, _MAGIC_NS):
                break
        else:
            raise ValueError(f"{path}: magic 0x{header[:4].hex()} is not a classic pcap "
                             "(pcapng files can be converted with `editcap -F pcap`)")
        if linktype != LINKTYPE_ETHERNET:
            raise ValueError(f"{path}: link type {linktype} is not Ethernet (1)")
        scale = 1 if magic == _MAGIC_NS else 1000
        while record := f.read(16):
            if len(record) < 16:
                raise ValueError(f"{path}: truncated record header")
            sec, frac, caplen, _ = struct.unpack(endian + "IIII", record)
            frame = f.read(caplen)
            if len(frame) < caplen:
                raise ValueError(f"{path}: truncated frame ({len(frame)} of {caplen} bytes)")
            yield sec * 1_000_000_000 + frac * scale, frame
