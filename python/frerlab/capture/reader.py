"""Reading captures: classic pcap (what tcpdump writes; frerlab.pcap.read_pcap) and pcapng
(what tshark and dumpcap write), one frame at a time, so a file of any size is read in constant
memory.

pcapng is read by the small reader below rather than by a library: the blocks a capture of
Ethernet frames needs (section header, interface description with its timestamp resolution and
offset, enhanced, simple and the obsolete packet block) are a few dozen lines, the maintained
candidates on PyPI (python-pcapng, last released 2020; dpkt, 2022) would each be one more
dependency of the whole command line for those lines, and neither streams both formats with
nanosecond timestamps any better. Every other block type is skipped. Timestamps come back in
nanoseconds (CLOCK_REALTIME as the capturing tool took them); a simple packet block has none and
takes the time of the frame before it. Ethernet link type only.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from frerlab.pcap import LINKTYPE_ETHERNET, read_pcap

_PCAP_MAGICS = {bytes.fromhex(m) for m in ("d4c3b2a1", "a1b2c3d4", "4d3cb2a1", "a1b23c4d")}
_SHB = 0x0A0D0D0A
_IDB, _OPB, _SPB, _EPB = 1, 2, 3, 6
_BYTE_ORDER = 0x1A2B3C4D
_OPT_TSRESOL, _OPT_TSOFFSET = 9, 14


def capture_format(path: str | Path) -> str:
    """'pcap' or 'pcapng' by the file's first bytes; ValueError for anything else."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head in _PCAP_MAGICS:
        return "pcap"
    if len(head) == 4 and struct.unpack("<I", head)[0] == _SHB:
        return "pcapng"
    raise ValueError(f"{path}: not a pcap or pcapng file (first bytes {head.hex() or 'none'})")


def read_capture(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Yields (timestamp in ns, frame) from a pcap or pcapng file of Ethernet frames."""
    if capture_format(path) == "pcap":
        return read_pcap(path)
    return read_pcapng(path)


class _Interface:
    __slots__ = ("linktype", "snaplen", "to_ns", "offset_ns")

    def __init__(self, linktype: int, snaplen: int, to_ns, offset_ns: int) -> None:
        self.linktype, self.snaplen, self.to_ns, self.offset_ns = linktype, snaplen, to_ns, offset_ns


def _ticks_to_ns(resol: int):
    """A function turning timestamp units of if_tsresol `resol` into nanoseconds."""
    exp = resol & 0x7F
    if resol & 0x80:  # a negative power of 2
        return lambda ticks: (ticks * 1_000_000_000) >> exp
    if exp <= 9:
        scale = 10 ** (9 - exp)
        return lambda ticks: ticks * scale
    div = 10 ** (exp - 9)
    return lambda ticks: ticks // div


def _options(body: bytes, at: int, endian: str) -> Iterator[tuple[int, bytes]]:
    while at + 4 <= len(body):
        code, length = struct.unpack_from(endian + "HH", body, at)
        if code == 0:
            return
        yield code, body[at + 4:at + 4 + length]
        at += 4 + (length + 3) // 4 * 4


def read_pcapng(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Yields (timestamp in ns, frame) from a pcapng file (any number of sections and
    interfaces, either byte order); ValueError for a malformed file or a non-Ethernet
    interface that carries frames."""
    endian = "<"
    interfaces: list[_Interface] = []
    last_ns = 0
    with open(path, "rb") as f:
        while head := f.read(8):
            if len(head) < 8:
                raise ValueError(f"{path}: truncated block header")
            if struct.unpack("<I", head[:4])[0] == _SHB:
                magic = f.read(4)
                endian = "<" if magic == struct.pack("<I", _BYTE_ORDER) else ">"
                if struct.unpack(endian + "I", magic)[0] != _BYTE_ORDER:
                    raise ValueError(f"{path}: section header with byte-order magic {magic.hex()}")
                length = struct.unpack(endian + "I", head[4:])[0]
                body = magic + f.read(length - 12)
                interfaces = []
            else:
                length = struct.unpack(endian + "I", head[4:])[0]
                body = f.read(length - 8)
            if length < 12 or length % 4 or len(body) != length - 8:
                raise ValueError(f"{path}: truncated or malformed block (length {length})")
            kind = struct.unpack(endian + "I", head[:4])[0]
            if kind == _IDB:
                linktype, _, snaplen = struct.unpack_from(endian + "HHI", body)
                resol, offset = 6, 0
                for code, value in _options(body[:-4], 8, endian):
                    if code == _OPT_TSRESOL and value:
                        resol = value[0]
                    elif code == _OPT_TSOFFSET and len(value) == 8:
                        offset = struct.unpack(endian + "q", value)[0] * 1_000_000_000
                interfaces.append(_Interface(linktype, snaplen, _ticks_to_ns(resol), offset))
            elif kind in (_EPB, _OPB):
                if kind == _EPB:
                    iface, high, low, caplen, _ = struct.unpack_from(endian + "IIIII", body)
                else:
                    iface, _, high, low, caplen, _ = struct.unpack_from(endian + "HHIIII", body)
                if iface >= len(interfaces):
                    raise ValueError(f"{path}: packet of interface {iface}, but {len(interfaces)} described")
                itf = interfaces[iface]
                if itf.linktype != LINKTYPE_ETHERNET:
                    raise ValueError(f"{path}: interface {iface} has link type {itf.linktype}, not Ethernet (1)")
                last_ns = itf.to_ns((high << 32) | low) + itf.offset_ns
                yield last_ns, body[20:20 + caplen]
            elif kind == _SPB:
                if not interfaces or interfaces[0].linktype != LINKTYPE_ETHERNET:
                    raise ValueError(f"{path}: simple packet block without an Ethernet interface 0")
                (origlen,) = struct.unpack_from(endian + "I", body)
                snaplen = interfaces[0].snaplen or origlen
                yield last_ns, body[4:4 + min(origlen, snaplen)]
