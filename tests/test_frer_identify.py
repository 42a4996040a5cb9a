"""Stream identification from Python: each type on both sides of its match, the ignore
values, the port VID of untagged frames, the active rewrite both ways, and clear errors."""

import struct

import pytest

from frerlab.frer import StreamIdentifier, push_rtag

DST, SRC = "02:00:00:00:00:02", "02:00:00:00:00:01"


def mac(text):
    return bytes.fromhex(text.replace(":", ""))


def udp4(dst_port=5001, dscp=0, src="198.18.0.1", dst="198.18.0.2", vlan=None, proto=17):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, 28, 0, 0, 64, proto, 0,
                     bytes(map(int, src.split("."))), bytes(map(int, dst.split("."))))
    l4 = struct.pack("!HHHH", 4000, dst_port, 8, 0)
    tag = b"" if vlan is None else struct.pack("!HH", 0x8100, (vlan[1] << 13) | vlan[0])
    return mac(DST) + mac(SRC) + tag + b"\x08\x00" + ip + l4


def test_null_and_source_mac_vlan():
    ids = StreamIdentifier()
    ids.add_null(1, DST, tagged="tagged", vid=10)
    ids.add_source_mac_vlan(2, SRC, tagged="priority")
    assert ids.identify(udp4(vlan=(10, 0))) == 1
    assert ids.identify(udp4(vlan=(11, 0))) is None, "VID 11 is neither 10 nor priority"
    assert ids.identify(udp4()) == 2, "untagged: not 'tagged', but priority accepts it"


def test_ip_identity_fields_and_ignore_values():
    ids = StreamIdentifier()
    ids.add_ip(5, dst_ip="198.18.0.2", next_protocol="udp", dst_port=5001, dscp=46)
    ids.add_ip(6, src_ip="198.18.0.1", next_protocol="tcp")
    assert ids.identify(udp4(dscp=46)) == 5
    assert ids.identify(udp4(dscp=0)) is None
    assert ids.identify(udp4(dscp=46, dst_port=5002)) is None
    assert ids.identify(udp4(proto=6)) == 6
    assert ids.identify(push_rtag(udp4(dscp=46), 9)) == 5, "identification looks through an R-TAG"


def test_mask_and_match_on_the_msdu():
    ids = StreamIdentifier()
    ids.add_mask_and_match(3, msdu_match=b"\x08\x00\x45", msdu_mask=b"\xff\xff\xf0",
                           dst_mac=DST, dst_mac_mask="ff:ff:ff:ff:ff:ff")
    assert ids.identify(udp4()) == 3
    assert ids.identify(mac(SRC) + mac(DST) + udp4()[12:]) is None


def test_active_rewrite_down_then_up_restores_the_frame():
    ids = StreamIdentifier()
    ids.add_active_dest_mac_vlan(4, down={"mac": "02:aa:00:00:00:01", "vid": 100, "priority": 3},
                                 up={"mac": DST, "vid": 10, "priority": 0})
    original = udp4(vlan=(10, 0))
    down = ids.rewrite(4, original, "down")
    assert down[:6] == mac("02:aa:00:00:00:01") and down[14:16] == struct.pack("!H", (3 << 13) | 100)
    assert ids.identify(down) == 4
    assert ids.rewrite(4, down, "up") == original
    assert ids.rewrite(4, original, "up") is None, "the original does not carry the down values"


def test_untagged_frames_take_the_port_vid():
    """802.1Q 6.9: an untagged frame belongs to the VLAN of its port (PVID, default 1)."""
    ids = StreamIdentifier()
    ids.add_null(1, DST, tagged="all", vid=10)
    ids.add_active_dest_mac_vlan(2, down={"mac": DST, "tagged": "all", "vid": 20}, up={"mac": SRC})
    assert ids.identify(udp4(), pvid=10) == 1
    assert ids.identify(udp4(vlan=(0, 5)), pvid=10) == 1, "priority-tagged: the PVID too"
    assert ids.identify(udp4(), pvid=20) == 2
    assert ids.identify(udp4()) is None, "the default PVID 1 is neither 10 nor 20"
    with pytest.raises(ValueError, match=r"pvid 0 is out of range \(1..=4094\)"):
        ids.identify(udp4(), pvid=0)


def test_active_identity_matches_da_and_vid_not_the_pcp_and_gives_its_priority():
    ids = StreamIdentifier()
    ids.add_active_dest_mac_vlan(4, down={"mac": DST, "vid": 100, "priority": 6},
                                 up={"mac": DST, "vid": 10})
    for pcp in (0, 3, 7):
        assert ids.identify(udp4(vlan=(100, pcp))) == 4
        assert ids.rewrite(4, udp4(vlan=(10, pcp)), "down") == udp4(vlan=(100, 6))
        assert ids.rewrite(4, udp4(vlan=(100, pcp)), "up") == udp4(vlan=(10, pcp)), \
            "no up priority: the frame keeps its own"


@pytest.mark.parametrize("call, message", [
    (lambda i: i.add_null(1, DST, vid=5000), "vid 5000 is out of range (0..=4095)"),
    (lambda i: i.add_null(1, "02:00:00:00:00", vid=1), "dst_mac"),
    (lambda i: i.add_null(1, DST, tagged="sometimes"), 'tagged "sometimes" is not valid'),
    (lambda i: i.add_active_dest_mac_vlan(1, {"mac": DST, "priority": 8}, {"mac": DST}),
     "down: priority 8 is out of range (0..=7)"),
    (lambda i: i.add_active_dest_mac_vlan(1, {"mac": DST}, {"mac": DST, "tagged": "priority", "vid": 3}),
     "up: vid 3 cannot be used with tagged=priority"),
    (lambda i: i.add_active_dest_mac_vlan(1, {"mac": DST, "pcp": 3}, {"mac": DST}), "keys mac, tagged"),
    (lambda i: i.add_ip(1, dscp=65), "dscp 65 is out of range (0..=63, or 64 to ignore)"),
    (lambda i: i.add_ip(1, dst_port=80), "dst_port 80 needs next_protocol udp, tcp or sctp"),
    (lambda i: i.add_ip(1, dst_ip="198.18.0.300"), "dst_ip"),
    (lambda i: i.add_mask_and_match(1, msdu_match=b"\x08", msdu_mask=b"\xff"),
     "msdu_match length 1 is out of range (2..=1024)"),
])
def test_bad_parameters_name_the_value(call, message):
    with pytest.raises(ValueError) as err:
        call(StreamIdentifier())
    assert message in str(err.value)
