//! Properties of the wire codec over random frames (proptest): R-TAG push/pop round trips on
//! frames with 0, 1 or 2 VLAN tags, and no parser or identification path panics on any bytes.

use frer::identify::{
    ActiveDestMacVlanIdentity, DestMacVlan, IpIdentity, MaskAndMatchIdentity, NextProtocol,
    NullIdentity, Pvid, StreamHandle, StreamIdentifier, StreamIdentity, TagMatch,
};
use frer::wire::{
    pop_rtag, pop_rtag_in_place, push_rtag, push_rtag_in_place, EtherType, Frame, FrameRepr,
    IpFields, MacAddr, TagProtocol, VlanTag, VlanTags, WireError,
};
use frer::SeqNum;
use proptest::prelude::*;

fn vlan_tag() -> impl Strategy<Value = VlanTag> {
    (any::<bool>(), 0u8..8, any::<bool>(), 0u16..4096).prop_map(|(service, pcp, dei, vid)| {
        let protocol = if service {
            TagProtocol::STag
        } else {
            TagProtocol::CTag
        };
        VlanTag::new(protocol, pcp, dei, vid).unwrap()
    })
}

/// An EtherType that is read back as itself (not a VLAN TPID, not the R-TAG's).
fn payload_ethertype() -> impl Strategy<Value = EtherType> {
    any::<u16>()
        .prop_filter("a TPID would be read as a tag", |&value| {
            ![0x8100, 0x88a8, 0xf1c1].contains(&value)
        })
        .prop_map(EtherType)
}

/// A frame header without R-TAG and a payload of up to 200 bytes.
fn plain_frame() -> impl Strategy<Value = (FrameRepr, Vec<u8>)> {
    (
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        prop::collection::vec(vlan_tag(), 0..=2),
        payload_ethertype(),
        prop::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(dst, src, tags, ethertype, payload)| {
            let repr = FrameRepr {
                dst_addr: MacAddr(dst),
                src_addr: MacAddr(src),
                vlan_tags: VlanTags::new(&tags).unwrap(),
                rtag: None,
                ethertype,
            };
            (repr, payload)
        })
}

fn emit(repr: &FrameRepr, payload: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0; repr.buffer_len()];
    repr.emit(&mut bytes);
    bytes.extend_from_slice(payload);
    bytes
}

/// Bytes that look like frames often enough to reach deep into the parsers: MACs, then a
/// random sequence of TPIDs, R-TAGs, IP EtherTypes and IP-looking headers, then noise.
fn frame_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let chunk = prop_oneof![
        any::<u16>().prop_map(|tci| [vec![0x81, 0x00], tci.to_be_bytes().to_vec()].concat()),
        any::<u16>().prop_map(|tci| [vec![0x88, 0xa8], tci.to_be_bytes().to_vec()].concat()),
        (any::<u16>(), any::<u16>()).prop_map(|(reserved, seq)| {
            [
                vec![0xf1, 0xc1],
                reserved.to_be_bytes().to_vec(),
                seq.to_be_bytes().to_vec(),
            ]
            .concat()
        }),
        Just(vec![0x81, 0x00, 0xc0, 0x0a]),
        Just(vec![0x08, 0x00]),
        Just(vec![0x86, 0xdd]),
        ipv4_like().prop_map(|ip| [vec![0x08, 0x00], ip].concat()),
        ipv6_like().prop_map(|ip| [vec![0x86, 0xdd], ip].concat()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    let macs = prop_oneof![
        prop::collection::vec(any::<u8>(), 12),
        any::<[u8; 6]>().prop_map(|src| [&TABLE_MAC.0[..], &src[..]].concat()),
    ];
    (macs, prop::collection::vec(chunk, 0..5))
        .prop_map(|(macs, chunks)| [macs, chunks.concat()].concat())
}

/// An IPv4 header with any IHL, DSCP, fragment offset and protocol, whose total length is
/// usually consistent with the bytes that follow.
fn ipv4_like() -> impl Strategy<Value = Vec<u8>> {
    let protocol = prop_oneof![Just(6u8), Just(17), Just(132), any::<u8>()];
    (
        0x40u8..0x50,
        any::<u8>(),
        any::<bool>(),
        any::<u16>(),
        protocol,
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(version_ihl, tos, consistent, fragment, protocol, rest)| {
            let total_len = if consistent {
                20 + rest.len() as u16
            } else {
                fragment
            };
            let mut header = vec![version_ihl, tos];
            header.extend_from_slice(&total_len.to_be_bytes());
            header.extend_from_slice(&[0, 0]);
            let flags_fragment = if consistent {
                fragment & 0x2001
            } else {
                fragment
            };
            header.extend_from_slice(&flags_fragment.to_be_bytes());
            header.extend_from_slice(&[64, protocol, 0, 0, 198, 18, 0, 1, 198, 18, 1, 2]);
            [header, rest].concat()
        })
}

/// An IPv6 header with any traffic class and next header, whose payload length is usually
/// consistent with the bytes that follow.
fn ipv6_like() -> impl Strategy<Value = Vec<u8>> {
    let next_header = prop_oneof![Just(6u8), Just(17), Just(132), any::<u8>()];
    (
        0x60u8..0x70,
        any::<bool>(),
        any::<u16>(),
        next_header,
        prop::collection::vec(any::<u8>(), 0..20),
    )
        .prop_map(|(version_tc, consistent, payload_len, next_header, rest)| {
            let payload_len = if consistent {
                rest.len() as u16
            } else {
                payload_len
            };
            let mut header = vec![version_tc, 0, 0, 0];
            header.extend_from_slice(&payload_len.to_be_bytes());
            header.extend_from_slice(&[next_header, 64]);
            header.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            header.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            [header, rest].concat()
        })
}

fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        frame_like_bytes()
    ]
}

/// The destination MAC the identities in `table_of_every_type` look for.
const TABLE_MAC: MacAddr = MacAddr([0x01, 0x00, 0x5e, 0, 0, 1]);

/// The active identity in `table_of_every_type`: DA `TABLE_MAC`, VID 10, PCP 6 on the wire.
fn active_identity() -> ActiveDestMacVlanIdentity {
    let down = DestMacVlan::new(TABLE_MAC, TagMatch::Tagged, 10, Some(6)).unwrap();
    let up_mac = MacAddr([0x01, 0x00, 0x5e, 0, 0, 2]);
    let up = DestMacVlan::new(up_mac, TagMatch::All, 20, None).unwrap();
    ActiveDestMacVlanIdentity { down, up }
}

/// A table with identities of every type, ordered so that each is reached by some frames
/// from `frame_like_bytes` (the first match wins).
fn table_of_every_type() -> StreamIdentifier {
    let ip = |next_protocol, dst_port| IpIdentity {
        dst_mac: None,
        tagged: TagMatch::All,
        vid: 0,
        src_ip: "0.0.0.0".parse().unwrap(),
        dst_ip: "::".parse().unwrap(),
        dscp: 64,
        next_protocol,
        src_port: 0,
        dst_port,
    };
    let mask = MaskAndMatchIdentity {
        dst_mac: TABLE_MAC,
        dst_mac_mask: MacAddr([0xff; 6]),
        src_mac: MacAddr::default(),
        src_mac_mask: MacAddr::default(),
        msdu_match: vec![0x08, 0x00, 0x40],
        msdu_mask: vec![0xff, 0xff, 0xf0],
    };
    let null = NullIdentity {
        dst_mac: TABLE_MAC,
        tagged: TagMatch::Tagged,
        vid: 0,
    };
    let identities = [
        StreamIdentity::ActiveDestMacVlan(active_identity()),
        StreamIdentity::Ip(ip(NextProtocol::Udp, 6000)),
        StreamIdentity::Ip(ip(NextProtocol::Tcp, 0)),
        StreamIdentity::MaskAndMatch(mask),
        StreamIdentity::Null(null),
    ];
    let mut table = StreamIdentifier::new();
    for (handle, identity) in (1..).zip(identities) {
        table.add(StreamHandle(handle), identity).unwrap();
    }
    table
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn push_then_pop_restores_the_frame((repr, payload) in plain_frame(), seq in any::<u16>()) {
        let frame = emit(&repr, &payload);
        let tagged = push_rtag(&frame, SeqNum(seq)).unwrap();
        prop_assert_eq!(tagged.len(), frame.len() + 6);

        let view = Frame::new_checked(&tagged[..]).unwrap();
        let expected = FrameRepr { rtag: Some(SeqNum(seq)), ..repr };
        prop_assert_eq!(FrameRepr::parse(&view), expected);
        prop_assert_eq!(view.payload(), &payload[..]);
        prop_assert_eq!(view.tag_offset(), 12 + 4 * repr.vlan_tags.as_slice().len());

        prop_assert_eq!(pop_rtag(&tagged).unwrap(), (SeqNum(seq), frame.clone()));

        let mut in_place = frame.clone();
        push_rtag_in_place(&mut in_place, SeqNum(seq)).unwrap();
        prop_assert_eq!(&in_place, &tagged);
        prop_assert_eq!(pop_rtag_in_place(&mut in_place).unwrap(), SeqNum(seq));
        prop_assert_eq!(in_place, frame);
    }

    #[test]
    fn header_repr_round_trips_through_bytes((repr, payload) in plain_frame(), seq in any::<Option<u16>>()) {
        let repr = FrameRepr { rtag: seq.map(SeqNum), ..repr };
        let frame = emit(&repr, &payload);
        let view = Frame::new_checked(&frame[..]).unwrap();
        prop_assert_eq!(FrameRepr::parse(&view), repr);
        prop_assert_eq!(view.payload_offset(), repr.buffer_len());
    }

    #[test]
    fn a_second_push_and_an_untagged_pop_are_errors((repr, payload) in plain_frame(), seq in any::<u16>()) {
        let frame = emit(&repr, &payload);
        prop_assert_eq!(pop_rtag(&frame), Err(WireError::NoRtag { ethertype: repr.ethertype }));
        let tagged = push_rtag(&frame, SeqNum(seq)).unwrap();
        prop_assert_eq!(push_rtag(&tagged, SeqNum(0)), Err(WireError::RtagPresent { seq: SeqNum(seq) }));
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn nothing_panics_on_arbitrary_bytes(bytes in any_bytes(), seq in any::<u16>()) {
        let popped = pop_rtag(&bytes);
        let pushed = push_rtag(&bytes, SeqNum(seq));
        let mut in_place = bytes.clone();
        prop_assert_eq!(pop_rtag_in_place(&mut in_place).map(|_| in_place.clone()), popped.map(|(_, f)| f));
        let mut in_place = bytes.clone();
        prop_assert_eq!(push_rtag_in_place(&mut in_place, SeqNum(seq)).map(|_| in_place), pushed);

        if let Ok(view) = Frame::new_checked(&bytes[..]) {
            let _ = FrameRepr::parse(&view);
            let _ = (view.dst_addr(), view.src_addr(), view.vlan_tags(), view.msdu());
            let _ = view.rtag().map(|tag| (tag.reserved(), tag.seq_num(), tag.next_ethertype()));
            let _ = IpFields::parse(view.ethertype(), view.payload());
        }
        let _ = IpFields::parse(EtherType::IPV4, &bytes);
        let _ = IpFields::parse(EtherType::IPV6, &bytes);

        let _ = table_of_every_type().identify(&bytes, Pvid::DEFAULT);
        let _ = active_identity().rewrite_up(&bytes, Pvid::DEFAULT);
        let _ = active_identity().rewrite_down(&bytes, Pvid::DEFAULT);
    }
}
