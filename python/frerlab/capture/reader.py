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

A capture given to frerlab may be anything (a text file, a device, a damaged or endless file):
`check_capture` takes only a regular file (inside its capture directory, when it comes from
one) of at most MAX_CAPTURE_BYTES that starts with a pcap header or a pcapng section header,
and refuses anything else in one UsageError naming the file and what a capture is, never
showing a byte of it. While reading, a record or block longer than a capture holds, or a file
grown past MAX_CAPTURE_BYTES, is a ValueError (damaged); the file ending inside a record is a
TruncatedCapture (the frames before it count).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from frerlab.errors import UsageError
from frerlab.files import stored_file
from frerlab.pcap import LINKTYPE_ETHERNET, TruncatedCapture, pcap_header, read_pcap

#: Largest capture file read (bytes; a file that grows past it while read is refused too). At
#: about 5 us a frame, a file of this many bytes of 128-byte frames takes some 10 minutes.
MAX_CAPTURE_BYTES = 16 << 30
#: Longest pcapng block (bytes): far above any frame's (at most 256 KiB, pcap.MAX_FRAME).
MAX_BLOCK_BYTES = 4 << 20
#: Most interfaces a pcapng section describes (each is kept while the section is read).
MAX_INTERFACES = 65536
#: What frerlab verify reads, for its errors.
VALID = "verify reads pcap and pcapng files of Ethernet frames (tcpdump, tshark, dumpcap) and directories of them"

_PCAP_MAGICS = {bytes.fromhex(m) for m in ("d4c3b2a1", "a1b2c3d4", "4d3cb2a1", "a1b23c4d")}
_SHB = 0x0A0D0D0A
_IDB, _OPB, _SPB, _EPB = 1, 2, 3, 6
#: Smallest length of each block type with its fixed fields (12 bytes of type and lengths).
_MIN_LENGTH = {_SHB: 28, _IDB: 20, _OPB: 32, _SPB: 16, _EPB: 32}
_BYTE_ORDER = 0x1A2B3C4D
_OPT_TSRESOL, _OPT_TSOFFSET = 9, 14


def _block_length(length: int, kind: int, at: int) -> int:
    """`length` if it is one a pcapng block of type `kind` at byte `at` can have; ValueError."""
    low = _MIN_LENGTH.get(kind, 12)
    if length % 4 or not low <= length <= MAX_BLOCK_BYTES:
        raise ValueError(f"the block at byte {at} has length {length} (a multiple of 4, {low}..{MAX_BLOCK_BYTES})")
    return length


def _section_header(head: bytes, at: int = 0) -> tuple[str, int]:
    """(struct byte order, block length) of the first 12 bytes of a pcapng section header
    block at byte `at`; ValueError saying what is wrong (never the bytes)."""
    if len(head) < 12 or struct.unpack("<I", head[:4])[0] != _SHB:
        raise ValueError(f"no pcapng section header at byte {at}")
    endian = next((e for e in "<>" if struct.unpack(e + "I", head[8:12])[0] == _BYTE_ORDER), None)
    if endian is None:
        raise ValueError(f"the section header at byte {at} has no byte-order magic")
    return endian, _block_length(struct.unpack(endian + "I", head[4:8])[0], _SHB, at)


def capture_format(path: str | Path) -> str:
    """'pcap' or 'pcapng' by the file's header; ValueError saying what is wrong otherwise."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:4] in _PCAP_MAGICS:
        pcap_header(head)
        return "pcap"
    if head[:4] == struct.pack("<I", _SHB):
        _section_header(head[:12])
        return "pcapng"
    raise ValueError(f"no pcap or pcapng header ({len(head)} bytes read)" if len(head) < 24
                     else "no pcap or pcapng header")


def check_capture(path: str | Path, what: str = "capture", root: str | Path | None = None) -> str:
    """The format ('pcap' or 'pcapng') of the `what` file `path`, a regular file inside
    directory `root` (when given) of at most MAX_CAPTURE_BYTES with a capture's header;
    UsageError naming the file, why and what a capture is, otherwise."""
    try:
        path = stored_file(path, what, root)
        size = path.stat().st_size
        if size > MAX_CAPTURE_BYTES:
            raise UsageError(f"{what} {str(path)!r} is {size} bytes, more than the {MAX_CAPTURE_BYTES} "
                             "(16 GiB) read of one capture: split it (editcap -c)")
        try:
            return capture_format(path)
        except ValueError as err:
            raise UsageError(f"{what} {str(path)!r} ({size} bytes) is not a capture: {err}") from None
        except OSError as err:
            raise UsageError(f"{what} {str(path)!r} cannot be read: {err.strerror}") from None
    except UsageError as err:
        raise UsageError(f"{err}; {VALID}") from None


def read_capture(path: str | Path, max_bytes: int = MAX_CAPTURE_BYTES) -> Iterator[tuple[int, bytes]]:
    """Yields (timestamp in ns, frame) from a pcap or pcapng file of Ethernet frames of at most
    `max_bytes`; ValueError for a damaged file, TruncatedCapture for one ending inside a record."""
    if capture_format(path) == "pcap":
        return read_pcap(path, max_bytes)
    return read_pcapng(path, max_bytes)


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


def read_pcapng(path: str | Path, max_bytes: int = MAX_CAPTURE_BYTES) -> Iterator[tuple[int, bytes]]:
    """Yields (timestamp in ns, frame) from a pcapng file (any number of sections and
    interfaces, either byte order) of at most `max_bytes`; ValueError for a malformed file or a
    non-Ethernet interface that carries frames, TruncatedCapture for one ending inside a block."""
    endian = "<"
    interfaces: list[_Interface] = []
    last_ns = at = 0
    with open(path, "rb") as f:
        while head := f.read(8):
            if len(head) < 8:
                raise TruncatedCapture(f"{path}: truncated block header at byte {at}")
            if struct.unpack("<I", head[:4])[0] == _SHB:
                magic = f.read(4)
                if len(magic) < 4:
                    raise TruncatedCapture(f"{path}: truncated section header at byte {at}")
                try:
                    endian, length = _section_header(head + magic, at)
                except ValueError as err:
                    raise ValueError(f"{path}: {err}") from None
                interfaces = []
            else:
                magic = b""
                try:
                    length = _block_length(struct.unpack(endian + "I", head[4:])[0],
                                           struct.unpack(endian + "I", head[:4])[0], at)
                except ValueError as err:
                    raise ValueError(f"{path}: {err}") from None
            if at + length > max_bytes:
                raise ValueError(f"{path}: grew past {max_bytes} bytes while read, the most read of one capture")
            rest = f.read(length - 8 - len(magic))
            if len(rest) < length - 8 - len(magic):
                raise TruncatedCapture(f"{path}: truncated block at byte {at} ({8 + len(magic) + len(rest)} "
                                       f"of {length} bytes)")
            body, trailer = (magic + rest)[:-4], rest[-4:]
            if struct.unpack(endian + "I", trailer)[0] != length:
                raise ValueError(f"{path}: the block at byte {at} ends with another length than its {length}")
            kind = struct.unpack(endian + "I", head[:4])[0]
            block_at, at = at, at + length
            if kind == _IDB:
                linktype, _, snaplen = struct.unpack_from(endian + "HHI", body)
                resol, offset = 6, 0
                for code, value in _options(body, 8, endian):
                    if code == _OPT_TSRESOL and value:
                        resol = value[0]
                    elif code == _OPT_TSOFFSET and len(value) == 8:
                        offset = struct.unpack(endian + "q", value)[0] * 1_000_000_000
                if len(interfaces) >= MAX_INTERFACES:
                    raise ValueError(f"{path}: more than {MAX_INTERFACES} interfaces in a section")
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
                if caplen > len(body) - 20:
                    raise ValueError(f"{path}: the packet block at byte {block_at} claims {caplen} bytes of frame "
                                     f"in {len(body) - 20}")
                last_ns = itf.to_ns((high << 32) | low) + itf.offset_ns
                yield last_ns, body[20:20 + caplen]
            elif kind == _SPB:
                if not interfaces or interfaces[0].linktype != LINKTYPE_ETHERNET:
                    raise ValueError(f"{path}: simple packet block without an Ethernet interface 0")
                (origlen,) = struct.unpack_from(endian + "I", body)
                snaplen = interfaces[0].snaplen or origlen
                yield last_ns, body[4:4 + min(origlen, snaplen)]
