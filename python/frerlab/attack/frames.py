"""The frames an attacker on a member path handles: a genuine frame of the stream as the path
carries it (Ethernet, the path's VLAN tag, the R-TAG, IPv4, UDP, frerlab's probe payload), read
into offsets once (`parse`), and the frames made from it: forged (`forge`: another R-TAG
sequence number and a payload of the attacker's own stream id), stripped of the R-TAG
(`strip_rtag`), readdressed (`readdress`: another destination MAC or VLAN, another stream's
identity), or replayed as recorded (`replayable`).

What a frame sent from the path must carry to be counted by the listener: a valid IPv4 header
checksum (the host computed it: kept) and a valid UDP checksum. On the testbed's veths the
sending host leaves the UDP checksum to "offload" (CHECKSUM_PARTIAL), so a frame recorded on the
path may carry only the pseudo-header's partial sum in the field; a real wire carries the
full one. Every frame made here has its UDP checksum computed (`with_udp_checksum`), as the
frame had on a wire. No I/O here.

The probe payload (crates/traffic/src/payload.rs): magic 0xFB, kind 'D', stream id (2 bytes),
lane (1), sequence number (7), send time (6, low 48 bits of CLOCK_REALTIME ns), big-endian, at
the start of the UDP payload.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: EtherTypes: VLAN tags (C and S), the R-TAG (802.1CB 7.8), IPv4.
VLAN_TPIDS = (0x8100, 0x88A8)
RTAG, IPV4 = 0xF1C1, 0x0800
UDP = 17
#: R-TAG: EtherType, 2 reserved bytes, the 16-bit sequence number (then the next EtherType).
RTAG_LEN = 6
SEQ_SPACE = 1 << 16
PROBE_MAGIC, PROBE_DATA = 0xFB, ord("D")
PROBE_LEN = 18
#: The stream id of the probes in forged frames: the listener's receiver counts them apart from
#: the genuine stream (whose id is the generator's, 0 unless --stream-id), so frames delivered
#: that were not genuine are counted exactly.
FORGED_STREAM_ID = 0xA77A


@dataclass(frozen=True)
class Genuine:
    """A frame of the stream as recorded on the path, with the offsets of its parts."""

    data: bytes
    #: Offset of the R-TAG's EtherType (after the MACs and VLAN tags).
    rtag_at: int
    #: Offsets of the IPv4 header, the UDP header and the probe.
    ip_at: int
    udp_at: int

    @property
    def seq(self) -> int:
        """The R-TAG sequence number."""
        return int.from_bytes(self.data[self.rtag_at + 4:self.rtag_at + 6], "big")

    @property
    def probe_at(self) -> int:
        """Offset of the probe (the UDP payload)."""
        return self.udp_at + 8

    @property
    def stream_id(self) -> int:
        """The probe's stream id (the generator's)."""
        return int.from_bytes(self.data[self.probe_at + 2:self.probe_at + 4], "big")

    @property
    def probe_seq(self) -> int:
        """The probe's sequence number: the frame's place in the generator's stream."""
        return int.from_bytes(self.data[self.probe_at + 5:self.probe_at + 12], "big")


def parse(frame: bytes, dst_mac: bytes, port: int) -> Genuine | None:
    """`frame` as a genuine frame of the stream to `dst_mac` and UDP port `port` (R-tagged,
    IPv4/UDP, a data probe), else None. Never raises on a short or strange frame."""
    if len(frame) < 14 or frame[:6] != dst_mac:
        return None
    at = 12
    ethertype = int.from_bytes(frame[at:at + 2], "big")
    while ethertype in VLAN_TPIDS and len(frame) >= at + 6:
        at += 4
        ethertype = int.from_bytes(frame[at:at + 2], "big")
    if ethertype != RTAG or len(frame) < at + RTAG_LEN + 2:
        return None
    rtag_at = at
    ip = at + RTAG_LEN + 2
    if int.from_bytes(frame[ip - 2:ip], "big") != IPV4 or len(frame) < ip + 20 or frame[ip] >> 4 != 4:
        return None
    udp = ip + (frame[ip] & 0x0F) * 4
    probe = udp + 8
    if (frame[ip + 9] != UDP or len(frame) < probe + PROBE_LEN
            or int.from_bytes(frame[udp + 2:udp + 4], "big") != port
            or frame[probe] != PROBE_MAGIC or frame[probe + 1] != PROBE_DATA):
        return None
    return Genuine(bytes(frame), rtag_at, ip, udp)


def with_vlan(frame: bytes, tpid: int, tci: int) -> bytes:
    """`frame` with a VLAN tag inserted after the MACs (a tag the kernel took into the
    frame's metadata on receive, PACKET_AUXDATA, put back where the wire had it)."""
    return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]


def _ones_sum(data: bytes) -> int:
    """The 16-bit ones' complement sum of `data` (RFC 1071), odd length padded with a zero."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def with_udp_checksum(frame: bytes, ip_at: int, udp_at: int) -> bytes:
    """`frame` with the UDP checksum of its IPv4/UDP datagram computed in full (RFC 768: over
    the pseudo-header, the UDP header and the payload; 0 is sent as 0xFFFF)."""
    length = int.from_bytes(frame[udp_at + 4:udp_at + 6], "big")
    datagram = frame[udp_at:udp_at + 6] + b"\0\0" + frame[udp_at + 8:udp_at + length]
    pseudo = frame[ip_at + 12:ip_at + 20] + struct.pack("!BBH", 0, UDP, length)
    checksum = 0xFFFF - _ones_sum(pseudo + datagram) or 0xFFFF
    return frame[:udp_at + 6] + checksum.to_bytes(2, "big") + frame[udp_at + 8:]


def replayable(g: Genuine) -> bytes:
    """The recorded frame as it was on a wire (its UDP checksum complete)."""
    return with_udp_checksum(g.data, g.ip_at, g.udp_at)


def forge(g: Genuine, seq: int, probe_seq: int, now_ns: int) -> bytes:
    """A frame like `g` with R-TAG sequence number `seq` (taken modulo 2^16) and a data probe
    of FORGED_STREAM_ID numbered `probe_seq`, sent at `now_ns` (CLOCK_REALTIME)."""
    data = bytearray(g.data)
    data[g.rtag_at + 4:g.rtag_at + 6] = (seq % SEQ_SPACE).to_bytes(2, "big")
    p = g.probe_at
    data[p + 2:p + 4] = FORGED_STREAM_ID.to_bytes(2, "big")
    data[p + 4] = 0
    data[p + 5:p + 12] = (probe_seq % (1 << 56)).to_bytes(7, "big")
    data[p + 12:p + 18] = (now_ns % (1 << 48)).to_bytes(6, "big")
    return with_udp_checksum(bytes(data), g.ip_at, g.udp_at)


def strip_rtag(g: Genuine) -> bytes:
    """`g` as the path would carry it without its R-TAG (the EtherType after it kept)."""
    frame = replayable(g)
    return frame[:g.rtag_at] + frame[g.rtag_at + RTAG_LEN:]


def readdress(frame: bytes, dst_mac: bytes | None = None, vid: int | None = None) -> bytes:
    """`frame` with another destination MAC and/or outer VLAN ID (the PCP and DEI kept);
    ValueError if a VLAN ID is asked of an untagged frame."""
    data = bytearray(frame)
    if dst_mac is not None:
        data[:6] = dst_mac
    if vid is not None:
        if int.from_bytes(data[12:14], "big") not in VLAN_TPIDS:
            raise ValueError("the frame has no VLAN tag whose ID could be changed")
        tci = int.from_bytes(data[14:16], "big")
        data[14:16] = ((tci & 0xF000) | (vid & 0x0FFF)).to_bytes(2, "big")
    return bytes(data)

