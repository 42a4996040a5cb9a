//! Interoperability: frames tagged by `push_rtag` are decoded by Wireshark's 802.1CB dissector
//! (tshark) with the same sequence number, S-tag and C-tag VIDs and encapsulated IP packet.
//!
//! Needs `tshark` (Debian package `tshark`); without it the test says so and does nothing.

use std::path::PathBuf;
use std::process::Command;

use frer::wire::{push_rtag, EtherType, FrameRepr, MacAddr, TagProtocol, VlanTag, VlanTags};
use frer::SeqNum;

/// A pcap file in the temp directory, named per process and test, removed when dropped.
struct TempPcap(PathBuf);

impl TempPcap {
    /// Writes `frames` as a classic pcap (Ethernet link type) via a temp file and a rename.
    fn write(name: &str, frames: &[Vec<u8>]) -> TempPcap {
        let mut bytes = Vec::new();
        for field in [
            0xa1b2_c3d4u32.to_le_bytes(),
            [2, 0, 4, 0],
            [0; 4],
            [0; 4],
            65535u32.to_le_bytes(),
            1u32.to_le_bytes(),
        ] {
            bytes.extend_from_slice(&field);
        }
        for (i, frame) in frames.iter().enumerate() {
            let len = (frame.len() as u32).to_le_bytes();
            for field in [(i as u32).to_le_bytes(), [0; 4], len, len] {
                bytes.extend_from_slice(&field);
            }
            bytes.extend_from_slice(frame);
        }
        let path = std::env::temp_dir().join(format!("frerlab-{}-{name}.pcap", std::process::id()));
        let partial = path.with_extension("pcap.partial");
        std::fs::write(&partial, &bytes).unwrap();
        std::fs::rename(&partial, &path).unwrap();
        TempPcap(path)
    }
}

impl Drop for TempPcap {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The names this tshark gives the R-TAG's sequence number and EtherType fields: 4.0 has
/// `ieee8021cb.*`, later versions `rtag.*`. `None` if tshark is missing or knows neither.
fn rtag_field_names() -> Option<(&'static str, &'static str)> {
    let output = Command::new("tshark")
        .args(["-G", "fields"])
        .output()
        .ok()?;
    let fields = String::from_utf8_lossy(&output.stdout);
    let known = |name: &str| {
        fields
            .lines()
            .any(|line| line.split('\t').nth(2) == Some(name))
    };
    [
        ("ieee8021cb.seq", "ieee8021cb.etype"),
        ("rtag.seqno", "rtag.protocol"),
    ]
    .into_iter()
    .find(|(seq, etype)| known(seq) && known(etype))
}

/// An untagged, single-tagged or double-tagged IPv4/UDP frame 198.18.0.1 -> 198.18.1.2.
fn udp_frame(tags: &[VlanTag]) -> Vec<u8> {
    let repr = FrameRepr {
        dst_addr: MacAddr([0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]),
        src_addr: MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]),
        vlan_tags: VlanTags::new(tags).unwrap(),
        rtag: None,
        ethertype: EtherType::IPV4,
    };
    let mut frame = vec![0; repr.buffer_len()];
    repr.emit(&mut frame);
    frame.extend_from_slice(&[
        0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 1, 2,
    ]);
    frame.extend_from_slice(&[0x13, 0x88, 0x17, 0x70, 0, 8, 0, 0]);
    frame
}

#[test]
fn wireshark_decodes_pushed_rtags_like_we_do() {
    let Some((seq_field, etype_field)) = rtag_field_names() else {
        eprintln!("skipping: tshark is not installed or has no 802.1CB R-TAG dissector");
        return;
    };
    let c_tag = VlanTag::new(TagProtocol::CTag, 3, false, 10).unwrap();
    let s_tag = VlanTag::new(TagProtocol::STag, 5, false, 20).unwrap();
    // (tags, sequence number, S-tag VIDs and C-tag VIDs as tshark lists them)
    let cases = [
        (vec![], 0u16, "", ""),
        (vec![c_tag], 1234, "", "10"),
        (vec![s_tag, c_tag], 65535, "20", "10"),
    ];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|(tags, seq, _, _)| push_rtag(&udp_frame(tags), SeqNum(*seq)).unwrap())
        .collect();
    let pcap = TempPcap::write("wire-tshark", &frames);

    let fields = [
        seq_field,
        etype_field,
        "ieee8021ad.id",
        "vlan.id",
        "ip.dst",
        "udp.dstport",
    ];
    let output = Command::new("tshark")
        .arg("-r")
        .arg(&pcap.0)
        .args(["-T", "fields", "-E", "separator=/t"])
        .args(fields.iter().flat_map(|field| ["-e", field]))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), cases.len(), "{stdout}");
    for ((_, seq, s_vid, c_vid), line) in cases.iter().zip(lines) {
        let columns: Vec<&str> = line.split('\t').collect();
        assert_eq!(columns.len(), fields.len(), "{line}");
        assert_eq!(
            number(columns[0]),
            u32::from(*seq),
            "sequence number in {line}"
        );
        assert_eq!(
            number(columns[1]),
            0x0800,
            "encapsulated EtherType in {line}"
        );
        assert_eq!(
            &columns[2..],
            [*s_vid, *c_vid, "198.18.1.2", "6000"],
            "{line}"
        );
    }
}

/// A number as tshark prints it: decimal, or hex with a 0x prefix (depends on the field).
fn number(text: &str) -> u32 {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
        None => text.parse().unwrap(),
    }
}
