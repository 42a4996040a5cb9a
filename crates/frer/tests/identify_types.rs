//! Stream identification, one section per type (802.1CB clause 6, 802.1CBdb): each parameter
//! on both sides of its match, its "ignore" value, frames with and without an R-TAG, the
//! active type's rewrites, and parameter validation messages.
//!
//! Long by design: one section per identification type, each parameter tested on both sides of its
//! match.

use std::net::IpAddr;

use frer::identify::{
    ActiveDestMacVlanIdentity, DestMacVlan, IpIdentity, MaskAndMatchIdentity, NextProtocol,
    NullIdentity, Pvid, SourceMacVlanIdentity, StreamHandle, StreamIdentifier, StreamIdentity,
    TagMatch, DSCP_IGNORE,
};
use frer::wire::{push_rtag, EtherType, Frame, FrameRepr, MacAddr, TagProtocol, VlanTag, VlanTags};
use frer::SeqNum;

const DA: MacAddr = MacAddr([0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]);
const OTHER_DA: MacAddr = MacAddr([0x01, 0x00, 0x5e, 0x00, 0x00, 0x02]);
const SA: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);
const OTHER_SA: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x02]);

fn c_tag(pcp: u8, vid: u16) -> VlanTag {
    VlanTag::new(TagProtocol::CTag, pcp, false, vid).unwrap()
}

/// A frame with the given addresses, VLAN tags (outermost first), EtherType and payload.
fn frame(
    dst: MacAddr,
    src: MacAddr,
    tags: &[VlanTag],
    ethertype: EtherType,
    payload: &[u8],
) -> Vec<u8> {
    let repr = FrameRepr {
        dst_addr: dst,
        src_addr: src,
        vlan_tags: VlanTags::new(tags).unwrap(),
        rtag: None,
        ethertype,
    };
    let mut bytes = vec![0; repr.buffer_len()];
    repr.emit(&mut bytes);
    bytes.extend_from_slice(payload);
    bytes
}

/// An IP packet with ports (UDP/TCP/SCTP header start) from the given fields.
struct Packet {
    src: IpAddr,
    dst: IpAddr,
    dscp: u8,
    protocol: u8,
    src_port: u16,
    dst_port: u16,
}

impl Packet {
    fn udp_v4() -> Packet {
        Packet {
            src: "198.18.0.1".parse().unwrap(),
            dst: "198.18.1.2".parse().unwrap(),
            dscp: 46,
            protocol: 17,
            src_port: 5000,
            dst_port: 6000,
        }
    }

    fn udp_v6() -> Packet {
        Packet {
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            ..Packet::udp_v4()
        }
    }

    /// The EtherType and bytes of the packet, with an 8-byte transport header.
    fn bytes(&self) -> (EtherType, Vec<u8>) {
        let mut transport = Vec::new();
        transport.extend_from_slice(&self.src_port.to_be_bytes());
        transport.extend_from_slice(&self.dst_port.to_be_bytes());
        transport.extend_from_slice(&[0, 8, 0, 0]);
        match (self.src, self.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let mut p = vec![
                    0x45,
                    self.dscp << 2,
                    0,
                    28,
                    0,
                    0,
                    0,
                    0,
                    64,
                    self.protocol,
                    0,
                    0,
                ];
                p.extend_from_slice(&src.octets());
                p.extend_from_slice(&dst.octets());
                p.extend_from_slice(&transport);
                (EtherType::IPV4, p)
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let tc = self.dscp << 2;
                let mut p = vec![0x60 | (tc >> 4), tc << 4, 0, 0, 0, 8, self.protocol, 64];
                p.extend_from_slice(&src.octets());
                p.extend_from_slice(&dst.octets());
                p.extend_from_slice(&transport);
                (EtherType::IPV6, p)
            }
            _ => panic!("test packet mixes IPv4 and IPv6"),
        }
    }

    /// The packet in an untagged frame from SA to DA.
    fn frame(&self) -> Vec<u8> {
        let (ethertype, bytes) = self.bytes();
        frame(DA, SA, &[], ethertype, &bytes)
    }
}

/// Whether `identity` matches `frame` received on a port with the default PVID (1).
fn matches(identity: &StreamIdentity, frame: &[u8]) -> bool {
    matches_at(identity, frame, Pvid::DEFAULT)
}

fn matches_at(identity: &StreamIdentity, frame: &[u8], pvid: Pvid) -> bool {
    identity.validate().unwrap();
    let direct = identity.matches(frame, pvid).unwrap();
    let tagged = push_rtag(frame, SeqNum(9)).unwrap();
    assert_eq!(
        identity.matches(&tagged, pvid).unwrap(),
        direct,
        "an R-TAG must not change the verdict"
    );
    direct
}

// --- the VLAN rule shared by null, source MAC and IP identification ---

/// Every (tagged, vid) rule against an untagged, a priority-tagged (VID 0), a VID 10 and a
/// VID 11 frame, on a port with the default PVID 1 (the VID of the first two).
#[test]
fn tagged_priority_and_all_accept_the_frames_802_1cb_describes() {
    let (ethertype, packet) = Packet::udp_v4().bytes();
    let frames = [
        frame(DA, SA, &[], ethertype, &packet),
        frame(DA, SA, &[c_tag(3, 0)], ethertype, &packet),
        frame(DA, SA, &[c_tag(3, 10)], ethertype, &packet),
        frame(DA, SA, &[c_tag(3, 11)], ethertype, &packet),
    ];
    let cases = [
        (TagMatch::Tagged, 10, [false, false, true, false]),
        (TagMatch::Tagged, 0, [false, true, true, true]),
        (TagMatch::Priority, 0, [true, true, false, false]),
        (TagMatch::All, 0, [true, true, true, true]),
        (TagMatch::All, 10, [false, false, true, false]),
        (TagMatch::All, 1, [true, true, false, false]),
        (TagMatch::Tagged, 1, [false, true, false, false]),
    ];
    for (tagged, vid, expected) in cases {
        let null = StreamIdentity::Null(NullIdentity {
            dst_mac: DA,
            tagged,
            vid,
        });
        let smac = StreamIdentity::SourceMacVlan(SourceMacVlanIdentity {
            src_mac: SA,
            tagged,
            vid,
        });
        let ip = StreamIdentity::Ip(IpIdentity {
            tagged,
            vid,
            ..ip_any()
        });
        let active = StreamIdentity::ActiveDestMacVlan(ActiveDestMacVlanIdentity {
            down: DestMacVlan::new(DA, tagged, vid, None).unwrap(),
            up: DestMacVlan::new(OTHER_DA, TagMatch::All, 0, None).unwrap(),
        });
        for identity in [null, smac, ip, active] {
            let got: Vec<bool> = frames.iter().map(|f| matches(&identity, f)).collect();
            assert_eq!(got, expected, "{tagged:?} vid {vid}, {identity:?}");
        }
    }
}

/// 802.1Q 6.9: an untagged or priority-tagged frame belongs to the VLAN of the port it
/// arrives on (its PVID), for every type with a VLAN parameter.
#[test]
fn untagged_and_priority_tagged_frames_take_the_port_vid() {
    let (payload_type, payload) = Packet::udp_v4().bytes();
    let untagged = frame(DA, SA, &[], payload_type, &payload);
    let priority_tagged = frame(DA, SA, &[c_tag(6, 0)], payload_type, &payload);
    let vid_10 = frame(DA, SA, &[c_tag(0, 10)], payload_type, &payload);
    let (pvid_1, pvid_10) = (Pvid::DEFAULT, Pvid::new(10).unwrap());
    let identities = [
        StreamIdentity::Null(NullIdentity {
            dst_mac: DA,
            tagged: TagMatch::All,
            vid: 10,
        }),
        StreamIdentity::SourceMacVlan(SourceMacVlanIdentity {
            src_mac: SA,
            tagged: TagMatch::All,
            vid: 10,
        }),
        StreamIdentity::Ip(IpIdentity {
            tagged: TagMatch::All,
            vid: 10,
            ..ip_any()
        }),
        StreamIdentity::ActiveDestMacVlan(ActiveDestMacVlanIdentity {
            down: DestMacVlan::new(DA, TagMatch::All, 10, None).unwrap(),
            up: DestMacVlan::new(OTHER_DA, TagMatch::All, 0, None).unwrap(),
        }),
    ];
    for identity in &identities {
        assert!(matches_at(identity, &untagged, pvid_10), "{identity:?}");
        assert!(
            matches_at(identity, &priority_tagged, pvid_10),
            "{identity:?}"
        );
        assert!(!matches_at(identity, &untagged, pvid_1), "{identity:?}");
        assert!(
            !matches_at(identity, &priority_tagged, pvid_1),
            "{identity:?}"
        );
        assert!(
            matches_at(identity, &vid_10, pvid_1),
            "a tag's VID wins over the PVID"
        );
    }
    let mut table = StreamIdentifier::new();
    table.add(StreamHandle(4), identities[0].clone()).unwrap();
    assert_eq!(
        table.identify(&untagged, pvid_10),
        Ok(Some(StreamHandle(4)))
    );
    assert_eq!(table.identify(&untagged, pvid_1), Ok(None));
}

#[test]
fn a_port_vid_names_a_vlan() {
    assert_eq!(Pvid::new(1).map(Pvid::get), Ok(1));
    assert_eq!(Pvid::new(4094).map(Pvid::get), Ok(4094));
    assert_eq!(Pvid::default(), Pvid::DEFAULT);
    for vid in [0, 4095] {
        assert_eq!(
            Pvid::new(vid).unwrap_err().to_string(),
            format!("pvid {vid} is out of range (1..=4094)")
        );
    }
}

#[test]
fn the_outermost_vlan_tag_is_the_one_matched() {
    let identity = StreamIdentity::Null(NullIdentity {
        dst_mac: DA,
        tagged: TagMatch::Tagged,
        vid: 10,
    });
    let s_tag = VlanTag::new(TagProtocol::STag, 0, false, 10).unwrap();
    assert!(matches(
        &identity,
        &frame(DA, SA, &[s_tag, c_tag(0, 20)], EtherType::IPV4, &[])
    ));
    assert!(!matches(
        &identity,
        &frame(DA, SA, &[c_tag(0, 20), s_tag], EtherType::IPV4, &[])
    ));
}

#[test]
fn a_frame_with_a_malformed_rtag_still_belongs_to_its_stream() {
    let mut bad_rtag = push_rtag(
        &frame(DA, SA, &[c_tag(0, 10)], EtherType::IPV4, &[]),
        SeqNum(3),
    )
    .unwrap();
    bad_rtag[18..20].copy_from_slice(&[0x00, 0x01]);
    let null = StreamIdentity::Null(NullIdentity {
        dst_mac: DA,
        tagged: TagMatch::Tagged,
        vid: 10,
    });
    assert_eq!(null.matches(&bad_rtag, Pvid::DEFAULT), Ok(true));
}

// --- type 1, null ---

#[test]
fn null_identity_compares_the_destination_mac() {
    let identity = StreamIdentity::Null(NullIdentity {
        dst_mac: DA,
        tagged: TagMatch::All,
        vid: 0,
    });
    assert_eq!(identity.type_number(), 1);
    assert!(matches(
        &identity,
        &frame(DA, OTHER_SA, &[], EtherType(0x88b5), &[])
    ));
    assert!(!matches(
        &identity,
        &frame(OTHER_DA, SA, &[], EtherType(0x88b5), &[])
    ));
}

// --- type 2, source MAC and VLAN ---

#[test]
fn source_mac_identity_compares_the_source_mac() {
    let identity = StreamIdentity::SourceMacVlan(SourceMacVlanIdentity {
        src_mac: SA,
        tagged: TagMatch::All,
        vid: 0,
    });
    assert_eq!(identity.type_number(), 2);
    assert!(matches(
        &identity,
        &frame(OTHER_DA, SA, &[], EtherType(0x88b5), &[])
    ));
    assert!(!matches(
        &identity,
        &frame(DA, OTHER_SA, &[], EtherType(0x88b5), &[])
    ));
}

// --- type 3, active destination MAC and VLAN ---

fn active() -> ActiveDestMacVlanIdentity {
    ActiveDestMacVlanIdentity {
        down: DestMacVlan::new(OTHER_DA, TagMatch::Tagged, 20, Some(5)).unwrap(),
        up: DestMacVlan::new(DA, TagMatch::Tagged, 10, Some(3)).unwrap(),
    }
}

#[test]
fn active_rewrite_down_then_up_restores_the_frame() {
    let s_tag = VlanTag::new(TagProtocol::STag, 3, true, 10).unwrap();
    for tags in [vec![c_tag(3, 10)], vec![s_tag, c_tag(1, 99)]] {
        let original = push_rtag(
            &frame(DA, SA, &tags, EtherType::IPV6, &[1, 2, 3]),
            SeqNum(4),
        )
        .unwrap();
        let bytes = active()
            .rewrite_down(&original, Pvid::DEFAULT)
            .unwrap()
            .unwrap();

        let wire = Frame::new_checked(&bytes[..]).unwrap();
        assert_eq!(wire.dst_addr(), OTHER_DA);
        let outer = wire.outer_vlan().unwrap();
        assert_eq!((outer.vid(), outer.pcp()), (20, 5));
        assert_eq!(
            (outer.protocol(), outer.dei()),
            (tags[0].protocol(), tags[0].dei()),
            "TPID and DEI kept"
        );
        assert_eq!(
            &bytes[16..],
            &original[16..],
            "only DA and outer tag change"
        );
        assert!(StreamIdentity::ActiveDestMacVlan(active())
            .matches(&bytes, Pvid::DEFAULT)
            .unwrap());

        let up = active().rewrite_up(&bytes, Pvid::DEFAULT).unwrap();
        assert_eq!(up, Some(original));
    }
}

#[test]
fn active_rewrite_leaves_other_frames_alone() {
    let others = [
        frame(OTHER_SA, SA, &[c_tag(3, 10)], EtherType::IPV4, &[]),
        frame(DA, SA, &[c_tag(3, 11)], EtherType::IPV4, &[]),
        frame(DA, SA, &[], EtherType::IPV4, &[]),
    ];
    for original in others {
        assert_eq!(active().rewrite_down(&original, Pvid::DEFAULT), Ok(None));
    }
    let up_values = frame(DA, SA, &[c_tag(3, 10)], EtherType::IPV4, &[]);
    assert_eq!(
        active().rewrite_up(&up_values, Pvid::DEFAULT),
        Ok(None),
        "rewrite_up wants the down values"
    );
    assert!(active().rewrite_down(&[0u8; 13], Pvid::DEFAULT).is_err());
}

/// The YANG model (9.1.4.4, 9.1.4.8): priority is what the function gives the frames it
/// emits; frames are recognised by DA and VLAN only, whatever their PCP.
#[test]
fn active_identity_matches_da_and_vid_never_the_pcp() {
    let identity = StreamIdentity::ActiveDestMacVlan(active());
    assert_eq!(identity.type_number(), 3);
    for pcp in 0..=7 {
        assert!(matches(
            &identity,
            &frame(OTHER_DA, SA, &[c_tag(pcp, 20)], EtherType::IPV4, &[])
        ));
        let up_values = frame(DA, SA, &[c_tag(pcp, 10)], EtherType::IPV4, &[]);
        let down = active().rewrite_down(&up_values, Pvid::DEFAULT).unwrap();
        assert_eq!(
            down.map(|f| Frame::new_checked(f).unwrap().outer_vlan().unwrap().pcp()),
            Some(5),
            "the down priority is given to every frame"
        );
    }
    assert!(!matches(
        &identity,
        &frame(DA, SA, &[c_tag(5, 20)], EtherType::IPV4, &[])
    ));
    assert!(!matches(
        &identity,
        &frame(OTHER_DA, SA, &[c_tag(5, 21)], EtherType::IPV4, &[])
    ));
}

/// VLAN 0 on a side means "any VID" when matching (9.1.4.3); `tagged` chooses whether the
/// frame must carry a tag.
#[test]
fn active_identity_vid_0_is_any_and_tagged_chooses_the_frames() {
    let side = |tagged| DestMacVlan::new(DA, tagged, 0, None).unwrap();
    let frames = [
        frame(DA, SA, &[], EtherType::IPV4, &[]),
        frame(DA, SA, &[c_tag(2, 0)], EtherType::IPV4, &[]),
        frame(DA, SA, &[c_tag(2, 30)], EtherType::IPV4, &[]),
    ];
    for (tagged, expected) in [
        (TagMatch::Tagged, [false, true, true]),
        (TagMatch::Priority, [true, true, false]),
        (TagMatch::All, [true, true, true]),
    ] {
        let identity = StreamIdentity::ActiveDestMacVlan(ActiveDestMacVlanIdentity {
            down: side(tagged),
            up: side(TagMatch::All),
        });
        let got: Vec<bool> = frames.iter().map(|f| matches(&identity, f)).collect();
        assert_eq!(got, expected, "{tagged:?}");
    }
}

/// A rewrite without a configured priority keeps the frame's PCP; an untagged frame gets a
/// C-tag with the other side's VID and the port default priority 0.
#[test]
fn active_rewrite_keeps_the_pcp_unless_configured_and_tags_untagged_frames() {
    let identity = ActiveDestMacVlanIdentity {
        down: DestMacVlan::new(OTHER_DA, TagMatch::Tagged, 20, None).unwrap(),
        up: DestMacVlan::new(DA, TagMatch::All, 0, None).unwrap(),
    };
    let tagged = frame(DA, SA, &[c_tag(6, 10)], EtherType::IPV4, &[9; 4]);
    let down = identity
        .rewrite_down(&tagged, Pvid::DEFAULT)
        .unwrap()
        .unwrap();
    let outer = Frame::new_checked(&down[..]).unwrap().outer_vlan().unwrap();
    assert_eq!((outer.vid(), outer.pcp()), (20, 6));

    let untagged = frame(DA, SA, &[], EtherType::IPV4, &[9; 4]);
    let down = identity
        .rewrite_down(&untagged, Pvid::DEFAULT)
        .unwrap()
        .unwrap();
    assert_eq!(
        down,
        frame(OTHER_DA, SA, &[c_tag(0, 20)], EtherType::IPV4, &[9; 4])
    );
}

// --- type 4, IP ---

fn ip_any() -> IpIdentity {
    IpIdentity {
        dst_mac: None,
        tagged: TagMatch::All,
        vid: 0,
        src_ip: "0.0.0.0".parse().unwrap(),
        dst_ip: "0.0.0.0".parse().unwrap(),
        dscp: DSCP_IGNORE,
        next_protocol: NextProtocol::None,
        src_port: 0,
        dst_port: 0,
    }
}

/// Each parameter set to the packet's value matches; set to another value it does not; the
/// all-ignore identity matches both IPv4 and IPv6.
#[test]
fn ip_identity_compares_each_parameter_and_ignores_its_ignore_value() {
    for packet in [Packet::udp_v4(), Packet::udp_v6()] {
        let frame = packet.frame();
        let other_ip: IpAddr = if packet.src.is_ipv4() {
            "198.18.9.9".parse().unwrap()
        } else {
            "2001:db8::9".parse().unwrap()
        };
        let any = ip_any();
        assert!(matches(&StreamIdentity::Ip(any), &frame));
        let udp = IpIdentity {
            next_protocol: NextProtocol::Udp,
            ..any
        };
        let cases = [
            (
                IpIdentity {
                    dst_mac: Some(DA),
                    ..any
                },
                IpIdentity {
                    dst_mac: Some(OTHER_DA),
                    ..any
                },
            ),
            (
                IpIdentity {
                    src_ip: packet.src,
                    ..any
                },
                IpIdentity {
                    src_ip: other_ip,
                    ..any
                },
            ),
            (
                IpIdentity {
                    dst_ip: packet.dst,
                    ..any
                },
                IpIdentity {
                    dst_ip: other_ip,
                    ..any
                },
            ),
            (
                IpIdentity { dscp: 46, ..any },
                IpIdentity { dscp: 45, ..any },
            ),
            (
                udp,
                IpIdentity {
                    next_protocol: NextProtocol::Tcp,
                    ..any
                },
            ),
            (
                IpIdentity {
                    src_port: 5000,
                    ..udp
                },
                IpIdentity {
                    src_port: 5001,
                    ..udp
                },
            ),
            (
                IpIdentity {
                    dst_port: 6000,
                    ..udp
                },
                IpIdentity {
                    dst_port: 5000,
                    ..udp
                },
            ),
            (
                IpIdentity {
                    tagged: TagMatch::Priority,
                    ..any
                },
                IpIdentity {
                    tagged: TagMatch::Tagged,
                    ..any
                },
            ),
        ];
        for (hit, miss) in cases {
            assert!(matches(&StreamIdentity::Ip(hit), &frame), "{hit:?}");
            assert!(!matches(&StreamIdentity::Ip(miss), &frame), "{miss:?}");
        }
    }
}

#[test]
fn ip_identity_matches_each_transport_protocol_it_names() {
    for (protocol, next_protocol) in [
        (17, NextProtocol::Udp),
        (6, NextProtocol::Tcp),
        (132, NextProtocol::Sctp),
    ] {
        let frame = Packet {
            protocol,
            ..Packet::udp_v4()
        }
        .frame();
        let identity = IpIdentity {
            next_protocol,
            dst_port: 6000,
            ..ip_any()
        };
        assert!(
            matches(&StreamIdentity::Ip(identity), &frame),
            "{next_protocol:?}"
        );
    }
    let other = Packet {
        protocol: 50,
        ..Packet::udp_v4()
    }
    .frame();
    assert!(matches(&StreamIdentity::Ip(ip_any()), &other));
    assert!(!matches(
        &StreamIdentity::Ip(IpIdentity {
            next_protocol: NextProtocol::Sctp,
            ..ip_any()
        }),
        &other
    ));
}

#[test]
fn an_ipv4_address_never_matches_an_ipv6_packet() {
    let v6 = Packet::udp_v6().frame();
    let identity = IpIdentity {
        src_ip: "198.18.0.1".parse().unwrap(),
        ..ip_any()
    };
    assert!(!matches(&StreamIdentity::Ip(identity), &v6));
}

#[test]
fn ip_identity_looks_past_vlan_tags_and_rtag() {
    let (ethertype, packet) = Packet::udp_v4().bytes();
    let tagged = frame(DA, SA, &[c_tag(0, 10), c_tag(0, 20)], ethertype, &packet);
    let identity = IpIdentity {
        tagged: TagMatch::Tagged,
        vid: 10,
        next_protocol: NextProtocol::Udp,
        dst_port: 6000,
        ..ip_any()
    };
    assert!(matches(&StreamIdentity::Ip(identity), &tagged));
}

#[test]
fn a_later_ipv4_fragment_has_no_ports_to_match() {
    let mut later = Packet::udp_v4().frame();
    later[14 + 7] = 0x10;
    let by_port = IpIdentity {
        next_protocol: NextProtocol::Udp,
        dst_port: 6000,
        ..ip_any()
    };
    let by_protocol = IpIdentity {
        next_protocol: NextProtocol::Udp,
        ..ip_any()
    };
    assert!(!matches(&StreamIdentity::Ip(by_port), &later));
    assert!(matches(&StreamIdentity::Ip(by_protocol), &later));
}

#[test]
fn non_ip_or_malformed_ip_frames_match_no_ip_identity_but_other_types_still_apply() {
    let mut table = StreamIdentifier::new();
    table
        .add(StreamHandle(1), StreamIdentity::Ip(ip_any()))
        .unwrap();
    table
        .add(
            StreamHandle(2),
            StreamIdentity::Null(NullIdentity {
                dst_mac: DA,
                tagged: TagMatch::All,
                vid: 0,
            }),
        )
        .unwrap();

    assert_eq!(
        table.identify(&Packet::udp_v4().frame(), Pvid::DEFAULT),
        Ok(Some(StreamHandle(1)))
    );
    let mut bad_ihl = Packet::udp_v4().frame();
    bad_ihl[14] = 0x44;
    let truncated = &Packet::udp_v6().frame()[..40];
    let arp = frame(DA, SA, &[], EtherType(0x0806), &[0; 28]);
    for frame in [&bad_ihl[..], truncated, &arp[..]] {
        assert_eq!(
            table.identify(frame, Pvid::DEFAULT),
            Ok(Some(StreamHandle(2)))
        );
    }
}

// --- type 5, mask-and-match ---

fn mask_and_match() -> MaskAndMatchIdentity {
    MaskAndMatchIdentity {
        dst_mac: MacAddr([0x01, 0x00, 0x5e, 0x7f, 0xff, 0xff]),
        dst_mac_mask: MacAddr([0xff, 0xff, 0xff, 0x80, 0x00, 0x00]),
        src_mac: SA,
        src_mac_mask: MacAddr([0xff; 6]),
        msdu_match: vec![0x08, 0x00, 0x45, 0xb8],
        msdu_mask: vec![0xff, 0xff, 0xff, 0xfc],
    }
}

#[test]
fn mask_and_match_compares_masked_macs_and_msdu_prefix() {
    let identity = StreamIdentity::MaskAndMatch(mask_and_match());
    assert_eq!(identity.type_number(), 5);
    let frame_ok = Packet::udp_v4().frame();
    assert!(matches(&identity, &frame_ok));

    let (ethertype, packet) = Packet::udp_v4().bytes();
    let below_mask = frame(
        MacAddr([0x01, 0x00, 0x5e, 0x12, 0x34, 0x56]),
        SA,
        &[],
        ethertype,
        &packet,
    );
    assert!(
        matches(&identity, &below_mask),
        "DA bits outside the mask are ignored"
    );
    let outside = frame(
        MacAddr([0x01, 0x00, 0x5e, 0x80, 0x00, 0x01]),
        SA,
        &[],
        ethertype,
        &packet,
    );
    assert!(
        !matches(&identity, &outside),
        "DA bit inside the mask differs"
    );
    assert!(!matches(
        &identity,
        &frame(DA, OTHER_SA, &[], ethertype, &packet)
    ));

    let ecn_set = Packet {
        dscp: 46,
        ..Packet::udp_v4()
    };
    let (_, mut ecn_packet) = ecn_set.bytes();
    ecn_packet[1] |= 0x03;
    assert!(
        matches(&identity, &frame(DA, SA, &[], ethertype, &ecn_packet)),
        "masked-out ECN bits"
    );
    let other_dscp = Packet {
        dscp: 10,
        ..Packet::udp_v4()
    }
    .frame();
    assert!(!matches(&identity, &other_dscp));
    assert!(
        !matches(&identity, &Packet::udp_v6().frame()),
        "EtherType is part of the MSDU"
    );
}

#[test]
fn mask_and_match_msdu_starts_after_vlan_tags_and_rtag() {
    let identity = StreamIdentity::MaskAndMatch(mask_and_match());
    let (ethertype, packet) = Packet::udp_v4().bytes();
    let tagged = frame(DA, SA, &[c_tag(0, 10), c_tag(0, 20)], ethertype, &packet);
    assert!(matches(&identity, &tagged));
}

#[test]
fn a_short_msdu_matches_only_where_the_mask_is_zero() {
    let short = frame(DA, SA, &[], EtherType::IPV4, &[0x45]);
    let mut zero_tail = mask_and_match();
    zero_tail.msdu_mask[3] = 0;
    zero_tail.msdu_mask[2] = 0xf0;
    assert!(matches(&StreamIdentity::MaskAndMatch(zero_tail), &short));
    assert!(!matches(
        &StreamIdentity::MaskAndMatch(mask_and_match()),
        &short
    ));
}

// --- validation ---

#[test]
fn invalid_parameters_are_refused_naming_the_value_and_the_valid_range() {
    let null = |tagged, vid| {
        StreamIdentity::Null(NullIdentity {
            dst_mac: DA,
            tagged,
            vid,
        })
    };
    let ip = |identity: IpIdentity| StreamIdentity::Ip(identity);
    let cases = [
        (null(TagMatch::Tagged, 5000), "vid 5000 is out of range (0..=4095)"),
        (
            null(TagMatch::Priority, 5),
            "vid 5 cannot be used with tagged=priority, which accepts only untagged and VID 0 frames \
             (use vid 0, or tagged=tagged)",
        ),
        (
            StreamIdentity::SourceMacVlan(SourceMacVlanIdentity { src_mac: SA, tagged: TagMatch::All, vid: 4096 }),
            "vid 4096 is out of range (0..=4095)",
        ),
        (ip(IpIdentity { dscp: 65, ..ip_any() }), "dscp 65 is out of range (0..=63, or 64 to ignore)"),
        (
            ip(IpIdentity { dst_port: 6000, ..ip_any() }),
            "dst_port 6000 needs next_protocol udp, tcp or sctp (it is none; or use dst_port 0 to ignore)",
        ),
        (
            ip(IpIdentity { src_ip: "198.18.0.1".parse().unwrap(), dst_ip: "2001:db8::1".parse().unwrap(), ..ip_any() }),
            "src_ip 198.18.0.1 and dst_ip 2001:db8::1 are of different IP versions (use both IPv4 or both IPv6)",
        ),
        (
            StreamIdentity::MaskAndMatch(MaskAndMatchIdentity { msdu_match: vec![0x08], msdu_mask: vec![0xff], ..mask_and_match() }),
            "msdu_match length 1 is out of range (2..=1024)",
        ),
        (
            StreamIdentity::MaskAndMatch(MaskAndMatchIdentity { msdu_match: vec![0; 1025], msdu_mask: vec![0; 1025], ..mask_and_match() }),
            "msdu_match length 1025 is out of range (2..=1024)",
        ),
        (
            StreamIdentity::MaskAndMatch(MaskAndMatchIdentity { msdu_mask: vec![0xff; 3], ..mask_and_match() }),
            "msdu_mask has 3 bytes but msdu_match has 4 (they must be equally long)",
        ),
    ];
    for (identity, message) in cases {
        let mut table = StreamIdentifier::new();
        assert_eq!(
            table
                .add(StreamHandle(1), identity)
                .unwrap_err()
                .to_string(),
            message
        );
        assert!(table.entries().is_empty());
    }
    assert_eq!(
        DestMacVlan::new(DA, TagMatch::Tagged, 4096, None)
            .unwrap_err()
            .to_string(),
        "vid 4096 is out of range (0..=4095)"
    );
    assert_eq!(
        DestMacVlan::new(DA, TagMatch::Tagged, 1, Some(8))
            .unwrap_err()
            .to_string(),
        "priority 8 is out of range (0..=7)"
    );
    assert!(DestMacVlan::new(DA, TagMatch::Priority, 1, None)
        .unwrap_err()
        .to_string()
        .starts_with("vid 1 cannot be used with tagged=priority"));
}

#[test]
fn boundary_values_are_accepted() {
    let mut table = StreamIdentifier::new();
    let null = StreamIdentity::Null(NullIdentity {
        dst_mac: DA,
        tagged: TagMatch::Tagged,
        vid: 4095,
    });
    let ip = StreamIdentity::Ip(IpIdentity {
        dscp: 63,
        ..ip_any()
    });
    let msdu_2 = MaskAndMatchIdentity {
        msdu_match: vec![0; 2],
        msdu_mask: vec![0; 2],
        ..mask_and_match()
    };
    let msdu_1024 = MaskAndMatchIdentity {
        msdu_match: vec![0; 1024],
        msdu_mask: vec![0; 1024],
        ..mask_and_match()
    };
    for identity in [
        null,
        ip,
        StreamIdentity::MaskAndMatch(msdu_2),
        StreamIdentity::MaskAndMatch(msdu_1024),
    ] {
        table.add(StreamHandle(1), identity).unwrap();
    }
    assert!(DestMacVlan::new(DA, TagMatch::Tagged, 4095, Some(7)).is_ok());
}
