"""Interop: frames R-tagged by frerlab decode in Wireshark's dissector with the same
sequence numbers (tshark 4.0 names the field ieee8021cb.seq, newer versions rtag.seqno)."""

import shutil
import subprocess

import pytest

from frerlab.frer import push_rtag
from frerlab.pcap import read_pcap, write_pcap

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None,
                                reason="tshark is not installed (apt-get install tshark)")

FRAME = (bytes.fromhex("020000000002" "020000000001") + b"\x08\x00"
         + bytes.fromhex("4500002e000000004011000 0c6120001c6120002".replace(" ", ""))
         + bytes(26))


def seq_field() -> tuple[str, str]:
    fields = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True,
                            check=True).stdout
    for seq, etype in [("rtag.seqno", "rtag.protocol"), ("ieee8021cb.seq", "ieee8021cb.etype")]:
        if f"\t{seq}\t" in fields:
            return seq, etype
    pytest.fail("this tshark has no 802.1CB R-TAG dissector field")


def test_tshark_decodes_frerlab_rtags(tmp_path):
    seqs = [0, 1, 255, 256, 4096, 65535]
    vlan = bytes.fromhex("81000064")  # VID 100 between the MACs and the R-TAG
    frames = [push_rtag(FRAME, s) for s in seqs] + [push_rtag(FRAME[:12] + vlan + FRAME[12:], 77)]
    pcap = tmp_path / "rtag.pcap"
    write_pcap(pcap, [(i * 1000, f) for i, f in enumerate(frames)])
    assert [f for _, f in read_pcap(pcap)] == frames
    seq, etype = seq_field()
    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", seq, "-e", etype,
                          "-e", "ip.dst"], capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert [int(r[0], 0) for r in rows] == seqs + [77]
    assert all(int(r[1], 0) == 0x0800 for r in rows), "the original EtherType follows the tag"
    assert all(r[2] == "198.18.0.2" for r in rows), "the IPv4 packet after the tag decodes"
