"""Classic pcap files (the libpcap format every capture tool reads), for handing frerlab's
frames to Wireshark/tshark and reading captures back. Ethernet link type only.

A file being read may be anything: its header is checked (`pcap_header`), a record may hold at
most MAX_FRAME bytes (so a damaged length cannot make one read allocate gigabytes), and the file
ending inside a record (a capture tool stopped mid-write) is told apart from a damaged one
(TruncatedCapture). No error shows a byte of the file, only lengths and numbers."""

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


class TruncatedCapture(ValueError):
    """The capture ends inside a record (a capture tool stopped mid-write): the frames before
    it are whole. Any other ValueError of a reader: the file is damaged or no capture."""


#: Most bytes a record of a capture may hold (libpcap's largest snap length).
MAX_FRAME = _SNAPLEN


def pcap_header(header: bytes) -> tuple[str, int]:
    """(struct byte order, ns per unit of the timestamps' fraction) of a classic pcap file's
    first 24 bytes; ValueError saying what is wrong (never the bytes) for anything else."""
    if len(header) < 24:
        raise ValueError(f"{len(header)} bytes is too short for a pcap header (24)")
    for endian in "<>":
        magic, _, _, _, _, _, linktype = struct.unpack(endian + "IHHiIII", header[:24])
        if magic in (_MAGIC_US, _MAGIC_NS):
            break
    else:
        raise ValueError("no pcap magic number")
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"link type {linktype} is not Ethernet (1)")
    return endian, 1 if magic == _MAGIC_NS else 1000


def read_pcap(path: str | Path, max_bytes: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yields (timestamp in ns, frame) from a classic pcap of Ethernet frames; ValueError for a
    damaged file or one of more than `max_bytes` bytes, TruncatedCapture for one ending inside a
    record."""
    with open(path, "rb") as f:
        try:
            endian, scale = pcap_header(f.read(24))
        except ValueError as err:
            raise ValueError(f"{path}: {err} (pcapng files can be converted with `editcap -F pcap`)") from None
        at = 24
        while record := f.read(16):
            if len(record) < 16:
                raise TruncatedCapture(f"{path}: truncated record header at byte {at}")
            sec, frac, caplen, _ = struct.unpack(endian + "IIII", record)
            if caplen > MAX_FRAME:
                raise ValueError(f"{path}: the record at byte {at} claims {caplen} bytes of frame "
                                 f"(at most {MAX_FRAME})")
            at += 16 + caplen
            if max_bytes is not None and at > max_bytes:
                raise ValueError(f"{path}: grew past {max_bytes} bytes while read, the most read of one capture")
            frame = f.read(caplen)
            if len(frame) < caplen:
                raise TruncatedCapture(f"{path}: truncated frame ({len(frame)} of {caplen} bytes)")
            yield sec * 1_000_000_000 + frac * scale, frame
