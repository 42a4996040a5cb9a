//! Stream identification (IEEE 802.1CB clause 6, mask-and-match from 802.1CBdb): which stream
//! handle a frame belongs to.
//!
//! A [`StreamIdentifier`] is a table of (handle, [`StreamIdentity`]) entries; `identify`
//! returns the handle of the first entry that matches. Identities use the standard's
//! parameters and "ignore" encodings (VID 0, DSCP 64, port 0, all-zero IP address), so a
//! YANG/YAML configuration maps onto them field by field.
//!
//! What a frame is matched on:
//! - The VLAN is the outermost tag's (the one a bridge port classifies on). An untagged or
//!   priority-tagged (VID 0) frame belongs to the VLAN of the port it arrived on, the port's
//!   PVID (802.1Q 6.9): matching takes it as a [`Pvid`] parameter. The priority (PCP) of a
//!   frame is never matched; it is what the active type gives the frames it emits.
//! - Identification looks through an R-TAG: a replicated frame is still the same stream, and
//!   one whose R-TAG is malformed still belongs to its stream (its recovery function counts
//!   the encoding error).
//! - The IP type reads IPv4/IPv6 after the VLAN tags and R-TAG (see [`crate::wire::ip`] for
//!   what is parsed). A frame that is not IP, or whose IP header is malformed, simply does
//!   not match IP identities; only a frame too short for its L2 header is an error.
//! - Mask-and-match compares the MSDU as the EISS above the VLAN tagging and R-TAG layers
//!   sees it: starting at the payload's EtherType, with VLAN tags and R-TAG left out.
//!
//! Why over 600 lines: the five identification types, their parameter checks and the one `identify`
//! that tries them stay together, so the standard's encodings (the "ignore" values, the PVID rule)
//! are defined once.

use core::cell::OnceCell;
use core::fmt;
use core::net::IpAddr;

use crate::wire::{
    Frame, IpFields, IpProtocol, MacAddr, RangeError, TagProtocol, VlanTag, WireError,
};

/// A stream handle (tsnStreamIdHandle, 802.1CB clause 9): how FRER functions name a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamHandle(pub u32);

impl fmt::Display for StreamHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The VLAN a port gives the untagged and priority-tagged frames it receives (its PVID,
/// 802.1Q 6.9): 1..=4094, 1 by default. Always valid (checked by `new`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pvid(u16);

impl Pvid {
    /// The default PVID of a bridge port (802.1Q Table 9-2: VID 1).
    pub const DEFAULT: Pvid = Pvid(1);

    /// A port VID.
    ///
    /// # Errors
    /// [`IdentityError::OutOfRange`] for 0 or a VID above 4094 (neither names a VLAN).
    pub fn new(vid: u16) -> Result<Pvid, IdentityError> {
        if !(1..=4094).contains(&vid) {
            return Err(RangeError {
                field: "pvid",
                value: vid.into(),
                valid: "1..=4094",
            }
            .into());
        }
        Ok(Pvid(vid))
    }

    /// The VID.
    pub fn get(self) -> u16 {
        self.0
    }
}

impl Default for Pvid {
    fn default() -> Self {
        Pvid::DEFAULT
    }
}

/// Which frames a VLAN parameter accepts (802.1CB 9.1.2.2, tsnCpeNullDownTagged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagMatch {
    /// The frame must carry a VLAN tag, with the given VID unless the VID parameter is 0.
    Tagged,
    /// The frame must be untagged or priority-tagged (VID 0); the VID parameter must be 0.
    Priority,
    /// Tagged or not; a non-zero VID parameter must equal the frame's VID.
    All,
}

impl TagMatch {
    /// Whether a frame whose outermost tag is `outer`, received on a port with `pvid`, passes
    /// this rule with VID parameter `vid` (0 = any). An untagged or VID 0 frame's VID is the
    /// PVID.
    fn accepts(self, vid: u16, outer: Option<VlanTag>, pvid: Pvid) -> bool {
        let frame_vid = match outer {
            Some(tag) if tag.vid() != 0 => tag.vid(),
            _ => pvid.get(),
        };
        let vid_ok = vid == 0 || frame_vid == vid;
        match self {
            TagMatch::Tagged => outer.is_some() && vid_ok,
            TagMatch::Priority => outer.is_none_or(|tag| tag.vid() == 0),
            TagMatch::All => vid_ok,
        }
    }

    /// Checks a (tagged, vid) parameter pair.
    fn validate(self, vid: u16) -> Result<(), IdentityError> {
        check_vid(vid)?;
        if self == TagMatch::Priority && vid != 0 {
            return Err(IdentityError::VidWithPriority { vid });
        }
        Ok(())
    }
}

/// An identity parameter that cannot be used, named with what would be valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdentityError {
    /// A number outside its range (vid, pvid, priority, dscp, MSDU length).
    OutOfRange(RangeError),
    /// `tagged = priority` with a non-zero VID, which no frame it accepts can carry.
    VidWithPriority { vid: u16 },
    /// A source or destination port without a next protocol that has ports.
    PortWithoutProtocol { field: &'static str, port: u16 },
    /// IPv4 and IPv6 addresses in one identity.
    IpVersionMismatch { src_ip: IpAddr, dst_ip: IpAddr },
    /// MSDU match and mask of different lengths.
    MsduMaskLength { match_len: usize, mask_len: usize },
}

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentityError::OutOfRange(range) => range.fmt(f),
            IdentityError::VidWithPriority { vid } => write!(
                f,
                "vid {vid} cannot be used with tagged=priority, which accepts only untagged and \
                 VID 0 frames (use vid 0, or tagged=tagged)"
            ),
            IdentityError::PortWithoutProtocol { field, port } => write!(
                f,
                "{field} {port} needs next_protocol udp, tcp or sctp (it is none; or use {field} 0 to ignore)"
            ),
            IdentityError::IpVersionMismatch { src_ip, dst_ip } => write!(
                f,
                "src_ip {src_ip} and dst_ip {dst_ip} are of different IP versions (use both IPv4 or both IPv6)"
            ),
            IdentityError::MsduMaskLength { match_len, mask_len } => write!(
                f,
                "msdu_mask has {mask_len} bytes but msdu_match has {match_len} (they must be equally long)"
            ),
        }
    }
}

impl std::error::Error for IdentityError {}

impl From<RangeError> for IdentityError {
    fn from(range: RangeError) -> Self {
        IdentityError::OutOfRange(range)
    }
}

fn check_vid(vid: u16) -> Result<(), IdentityError> {
    if vid > 4095 {
        return Err(RangeError {
            field: "vid",
            value: vid.into(),
            valid: "0..=4095",
        }
        .into());
    }
    Ok(())
}

/// Null stream identification (type 1, 802.1CB clause 6): destination MAC and VLAN. Passive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NullIdentity {
    /// Destination MAC address the frame must carry.
    pub dst_mac: MacAddr,
    /// Tagged / priority / all.
    pub tagged: TagMatch,
    /// VLAN identifier, 0 = ignore.
    pub vid: u16,
}

/// Source MAC and VLAN stream identification (type 2, 802.1CB clause 6). Passive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceMacVlanIdentity {
    /// Source MAC address the frame must carry.
    pub src_mac: MacAddr,
    /// Tagged / priority / all.
    pub tagged: TagMatch,
    /// VLAN identifier, 0 = ignore.
    pub vid: u16,
}

/// One side of active destination MAC and VLAN identification (802.1CB 9.1.4): the DA, the
/// VLAN rule (`tagged`, VID with 0 = any) a frame must carry to be this side's, and the
/// priority given to the frames rewritten to this side. Always valid (checked by `new`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DestMacVlan {
    dst_mac: MacAddr,
    tagged: TagMatch,
    vid: u16,
    priority: Option<u8>,
}

impl DestMacVlan {
    /// The values of one side. `priority` is the PCP of the frames rewritten to this side
    /// (tsnCpeDmacVlanDownPriority / UpPriority); `None` keeps the frame's own.
    ///
    /// # Errors
    /// [`IdentityError::OutOfRange`] for a VID above 4095 or a priority above 7;
    /// [`IdentityError::VidWithPriority`] for a non-zero VID with `TagMatch::Priority`.
    pub fn new(
        dst_mac: MacAddr,
        tagged: TagMatch,
        vid: u16,
        priority: Option<u8>,
    ) -> Result<DestMacVlan, IdentityError> {
        tagged.validate(vid)?;
        if let Some(pcp) = priority.filter(|&pcp| pcp > 7) {
            return Err(RangeError {
                field: "priority",
                value: pcp.into(),
                valid: "0..=7",
            }
            .into());
        }
        Ok(DestMacVlan {
            dst_mac,
            tagged,
            vid,
            priority,
        })
    }

    /// Destination MAC address.
    pub fn dst_mac(&self) -> MacAddr {
        self.dst_mac
    }

    /// Which frames this side accepts: tagged, priority-tagged or all.
    pub fn tagged(&self) -> TagMatch {
        self.tagged
    }

    /// VLAN identifier: matched on input (0 = any), written on output (0 = priority tag).
    pub fn vid(&self) -> u16 {
        self.vid
    }

    /// PCP of the frames rewritten to this side, `None` = the frame's own.
    pub fn priority(&self) -> Option<u8> {
        self.priority
    }

    fn accepts<T: AsRef<[u8]>>(&self, frame: &Frame<T>, pvid: Pvid) -> bool {
        frame.dst_addr() == self.dst_mac && self.tagged.accepts(self.vid, frame.outer_vlan(), pvid)
    }
}

/// Active destination MAC and VLAN stream identification (type 3, 802.1CB clause 6, 9.1.4).
///
/// On the wire (below the function) the stream uses the `down` values; above it, the `up`
/// values. Frames passed down are rewritten from `up` to `down`, frames passed up from
/// `down` to `up`, so each path can use its own DA and VID. A side's DA, `tagged` rule and VID
/// (0 = any) decide which frames are its (never their PCP); the rewrite gives a frame the
/// other side's DA, a VLAN tag with its VID (VID 0: a priority tag) and its priority, or the
/// frame's own PCP when it has none (an untagged frame's is 0, a port's default priority when
/// none is set). A rewrite keeps the tag's TPID and DEI; an untagged frame gets a C-tag. In a
/// [`StreamIdentifier`] the identity matches the `down` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActiveDestMacVlanIdentity {
    /// Values on the wire, out-facing.
    pub down: DestMacVlan,
    /// Values above the function, in-facing.
    pub up: DestMacVlan,
}

impl ActiveDestMacVlanIdentity {
    /// For a frame passed down the stack on a port with `pvid`: if it carries the `up`
    /// values, the frame with the `down` ones; `None` if it is not this stream's.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the frame is too short for its L2 header.
    pub fn rewrite_down(&self, frame: &[u8], pvid: Pvid) -> Result<Option<Vec<u8>>, WireError> {
        rewrite(frame, pvid, &self.up, &self.down)
    }

    /// For a frame passed up the stack from a port with `pvid`: if it carries the `down`
    /// values, the frame with the `up` ones; `None` if it is not this stream's.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the frame is too short for its L2 header.
    pub fn rewrite_up(&self, frame: &[u8], pvid: Pvid) -> Result<Option<Vec<u8>>, WireError> {
        rewrite(frame, pvid, &self.down, &self.up)
    }
}

/// A frame that `from` accepts, with the DA, VID and priority of `to`.
fn rewrite(
    frame: &[u8],
    pvid: Pvid,
    from: &DestMacVlan,
    to: &DestMacVlan,
) -> Result<Option<Vec<u8>>, WireError> {
    let view = Frame::new_checked(frame)?;
    if !from.accepts(&view, pvid) {
        return Ok(None);
    }
    let outer = view.outer_vlan();
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(&to.dst_mac.0);
    out.extend_from_slice(&frame[6..12]);
    if outer.is_none() {
        out.extend_from_slice(&TagProtocol::CTag.tpid().0.to_be_bytes());
        out.extend_from_slice(&[0, 0]);
    }
    out.extend_from_slice(&frame[12..]);
    let pcp = to.priority.unwrap_or(outer.map_or(0, VlanTag::pcp));
    let protocol = outer.map_or(TagProtocol::CTag, VlanTag::protocol);
    let tag = VlanTag::new(protocol, pcp, outer.is_some_and(VlanTag::dei), to.vid)
        .expect("DestMacVlan::new checked vid and priority");
    Frame::new_checked(&mut out[..])?.set_outer_vlan(tag)?;
    Ok(Some(out))
}

/// The transport protocol an IP identity requires (tsnCpeIpIdNextProtocol).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NextProtocol {
    /// Any protocol; ports are not compared.
    None,
    /// UDP (17).
    Udp,
    /// TCP (6).
    Tcp,
    /// SCTP (132).
    Sctp,
}

impl NextProtocol {
    /// The IP protocol number required, or `None` for any.
    pub fn ip_protocol(self) -> Option<IpProtocol> {
        match self {
            NextProtocol::None => None,
            NextProtocol::Udp => Some(IpProtocol::UDP),
            NextProtocol::Tcp => Some(IpProtocol::TCP),
            NextProtocol::Sctp => Some(IpProtocol::SCTP),
        }
    }
}

/// The DSCP value that means "ignore the DSCP" in an [`IpIdentity`].
pub const DSCP_IGNORE: u8 = 64;

/// IP stream identification (type 4, 802.1CB clause 6), IPv4 or IPv6. Passive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpIdentity {
    /// Destination MAC address, `None` = ignore.
    pub dst_mac: Option<MacAddr>,
    /// Tagged / priority / all.
    pub tagged: TagMatch,
    /// VLAN identifier, 0 = ignore.
    pub vid: u16,
    /// IP source address, all-zero (0.0.0.0 or ::) = ignore.
    pub src_ip: IpAddr,
    /// IP destination address, all-zero (0.0.0.0 or ::) = ignore.
    pub dst_ip: IpAddr,
    /// DSCP 0..=63, or [`DSCP_IGNORE`] (64).
    pub dscp: u8,
    /// Required transport protocol.
    pub next_protocol: NextProtocol,
    /// Transport source port, 0 = ignore.
    pub src_port: u16,
    /// Transport destination port, 0 = ignore.
    pub dst_port: u16,
}

impl IpIdentity {
    fn validate(&self) -> Result<(), IdentityError> {
        self.tagged.validate(self.vid)?;
        if self.dscp > DSCP_IGNORE {
            let range = RangeError {
                field: "dscp",
                value: self.dscp.into(),
                valid: "0..=63, or 64 to ignore",
            };
            return Err(range.into());
        }
        if !self.src_ip.is_unspecified()
            && !self.dst_ip.is_unspecified()
            && self.src_ip.is_ipv4() != self.dst_ip.is_ipv4()
        {
            return Err(IdentityError::IpVersionMismatch {
                src_ip: self.src_ip,
                dst_ip: self.dst_ip,
            });
        }
        if self.next_protocol == NextProtocol::None {
            for (field, port) in [("src_port", self.src_port), ("dst_port", self.dst_port)] {
                if port != 0 {
                    return Err(IdentityError::PortWithoutProtocol { field, port });
                }
            }
        }
        Ok(())
    }

    fn accepts(&self, frame: &ParsedFrame<'_>) -> bool {
        let l2 = &frame.l2;
        if self.dst_mac.is_some_and(|mac| mac != l2.dst_addr())
            || !self.tagged.accepts(self.vid, l2.outer_vlan(), frame.pvid)
        {
            return false;
        }
        let Some(ip) = frame.ip() else {
            return false;
        };
        let address_ok = |wanted: IpAddr, found: IpAddr| wanted.is_unspecified() || wanted == found;
        let port_ok = |wanted: u16, found: Option<u16>| wanted == 0 || found == Some(wanted);
        address_ok(self.src_ip, ip.src)
            && address_ok(self.dst_ip, ip.dst)
            && (self.dscp == DSCP_IGNORE || self.dscp == ip.dscp)
            && (self.next_protocol == NextProtocol::None
                || self.next_protocol.ip_protocol() == Some(ip.protocol))
            && port_ok(self.src_port, ip.ports.map(|ports| ports.src))
            && port_ok(self.dst_port, ip.ports.map(|ports| ports.dst))
    }
}

/// Shortest and longest MSDU prefix mask-and-match compares, in bytes.
pub const MSDU_MATCH_LEN: core::ops::RangeInclusive<usize> = 2..=1024;

/// Mask-and-match stream identification (type 5, 802.1CBdb). Passive.
///
/// A frame matches when `(field & mask) == (value & mask)` for its destination MAC, its
/// source MAC and the first `msdu_match.len()` bytes of its MSDU (from the payload's
/// EtherType, VLAN tags and R-TAG left out). An MSDU shorter than the pattern matches only if
/// the mask is zero over the missing bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaskAndMatchIdentity {
    /// Destination MAC value.
    pub dst_mac: MacAddr,
    /// Destination MAC mask (all zero = ignore).
    pub dst_mac_mask: MacAddr,
    /// Source MAC value.
    pub src_mac: MacAddr,
    /// Source MAC mask (all zero = ignore).
    pub src_mac_mask: MacAddr,
    /// MSDU prefix value, 2..=1024 bytes.
    pub msdu_match: Vec<u8>,
    /// MSDU prefix mask, as long as `msdu_match`.
    pub msdu_mask: Vec<u8>,
}

impl MaskAndMatchIdentity {
    fn validate(&self) -> Result<(), IdentityError> {
        if !MSDU_MATCH_LEN.contains(&self.msdu_match.len()) {
            let len = self.msdu_match.len() as u64;
            return Err(RangeError {
                field: "msdu_match length",
                value: len,
                valid: "2..=1024",
            }
            .into());
        }
        if self.msdu_mask.len() != self.msdu_match.len() {
            return Err(IdentityError::MsduMaskLength {
                match_len: self.msdu_match.len(),
                mask_len: self.msdu_mask.len(),
            });
        }
        Ok(())
    }

    fn accepts<T: AsRef<[u8]>>(&self, frame: &Frame<T>) -> bool {
        let msdu = frame.msdu();
        frame.dst_addr().masked(self.dst_mac_mask) == self.dst_mac.masked(self.dst_mac_mask)
            && frame.src_addr().masked(self.src_mac_mask) == self.src_mac.masked(self.src_mac_mask)
            && self.msdu_match.iter().zip(&self.msdu_mask).enumerate().all(
                |(i, (&value, &mask))| {
                    mask == 0 || msdu.get(i).is_some_and(|&byte| byte & mask == value & mask)
                },
            )
    }
}

/// One way of recognising a stream's frames (802.1CB 9.1.1.6 identification types).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StreamIdentity {
    /// Type 1: destination MAC and VLAN.
    Null(NullIdentity),
    /// Type 2: source MAC and VLAN.
    SourceMacVlan(SourceMacVlanIdentity),
    /// Type 3: destination MAC and VLAN, rewritten between paths.
    ActiveDestMacVlan(ActiveDestMacVlanIdentity),
    /// Type 4: IP addresses, DSCP, protocol and ports.
    Ip(IpIdentity),
    /// Type 5: masked MACs and MSDU prefix.
    MaskAndMatch(MaskAndMatchIdentity),
}

impl StreamIdentity {
    /// The identification type number (OUI 00-80-C2): null 1, source MAC + VLAN 2, active
    /// destination MAC + VLAN 3, IP 4, mask-and-match 5.
    pub fn type_number(&self) -> u8 {
        match self {
            StreamIdentity::Null(_) => 1,
            StreamIdentity::SourceMacVlan(_) => 2,
            StreamIdentity::ActiveDestMacVlan(_) => 3,
            StreamIdentity::Ip(_) => 4,
            StreamIdentity::MaskAndMatch(_) => 5,
        }
    }

    /// Checks every parameter against its valid range and the others.
    ///
    /// # Errors
    /// The first [`IdentityError`] found.
    pub fn validate(&self) -> Result<(), IdentityError> {
        match self {
            StreamIdentity::Null(null) => null.tagged.validate(null.vid),
            StreamIdentity::SourceMacVlan(smac) => smac.tagged.validate(smac.vid),
            StreamIdentity::ActiveDestMacVlan(_) => Ok(()), // checked by DestMacVlan::new
            StreamIdentity::Ip(ip) => ip.validate(),
            StreamIdentity::MaskAndMatch(mask) => mask.validate(),
        }
    }

    /// Whether `frame` (as seen on the wire), received on a port with `pvid`, belongs to this
    /// identity's stream.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the frame is too short for its L2 header.
    pub fn matches(&self, frame: &[u8], pvid: Pvid) -> Result<bool, WireError> {
        Ok(self.accepts(&ParsedFrame::new(frame, pvid)?))
    }

    fn accepts(&self, frame: &ParsedFrame<'_>) -> bool {
        let (l2, pvid) = (&frame.l2, frame.pvid);
        match self {
            StreamIdentity::Null(null) => {
                l2.dst_addr() == null.dst_mac
                    && null.tagged.accepts(null.vid, l2.outer_vlan(), pvid)
            }
            StreamIdentity::SourceMacVlan(smac) => {
                l2.src_addr() == smac.src_mac
                    && smac.tagged.accepts(smac.vid, l2.outer_vlan(), pvid)
            }
            StreamIdentity::ActiveDestMacVlan(active) => active.down.accepts(l2, pvid),
            StreamIdentity::Ip(ip) => ip.accepts(frame),
            StreamIdentity::MaskAndMatch(mask) => mask.accepts(l2),
        }
    }
}

/// A frame's L2 header, parsed once, the PVID of the port it arrived on, and its IP fields,
/// parsed at most once and only if an identity asks for them.
struct ParsedFrame<'a> {
    l2: Frame<&'a [u8]>,
    pvid: Pvid,
    ip: OnceCell<Option<IpFields>>,
}

impl<'a> ParsedFrame<'a> {
    fn new(frame: &'a [u8], pvid: Pvid) -> Result<ParsedFrame<'a>, WireError> {
        Ok(ParsedFrame {
            l2: Frame::new_checked(frame)?,
            pvid,
            ip: OnceCell::new(),
        })
    }

    /// The IP fields, or `None` for a frame that is not (well-formed) IPv4 or IPv6.
    fn ip(&self) -> Option<&IpFields> {
        self.ip
            .get_or_init(|| IpFields::parse(self.l2.ethertype(), self.l2.payload()).ok())
            .as_ref()
    }
}

/// The stream identity table: (handle, identity) entries, tried in the order they were added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamIdentifier {
    entries: Vec<(StreamHandle, StreamIdentity)>,
}

impl StreamIdentifier {
    /// An empty table.
    pub fn new() -> StreamIdentifier {
        StreamIdentifier::default()
    }

    /// Appends an entry. Several entries may name the same handle (a stream recognised in
    /// more than one way).
    ///
    /// # Errors
    /// The identity's [`IdentityError`] if it does not validate; the table is unchanged.
    pub fn add(
        &mut self,
        handle: StreamHandle,
        identity: StreamIdentity,
    ) -> Result<(), IdentityError> {
        identity.validate()?;
        self.entries.push((handle, identity));
        Ok(())
    }

    /// The entries, in matching order.
    pub fn entries(&self) -> &[(StreamHandle, StreamIdentity)] {
        &self.entries
    }

    /// The handle of the first entry whose identity matches `frame`, received on a port with
    /// `pvid`, or `None`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the frame is too short for its L2 header (count it as a
    /// malformed frame).
    pub fn identify(&self, frame: &[u8], pvid: Pvid) -> Result<Option<StreamHandle>, WireError> {
        let parsed = ParsedFrame::new(frame, pvid)?;
        Ok(self
            .entries
            .iter()
            .find(|(_, identity)| identity.accepts(&parsed))
            .map(|(handle, _)| *handle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(s: &str) -> MacAddr {
        s.parse().unwrap()
    }

    /// DA 01:00:5e:00:00:01, SA 02:00:00:00:00:01, C-tag PCP 6 VID 10, R-TAG seq 7, IPv4 UDP
    /// 198.18.0.1:5000 -> 198.18.1.2:6000, DSCP 46.
    const TAGGED_RTAG_UDP: [u8; 52] = [
        0x01, 0x00, 0x5e, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // MACs
        0x81, 0x00, 0xc0, 0x0a, // C-tag PCP 6 VID 10
        0xf1, 0xc1, 0x00, 0x00, 0x00, 0x07, 0x08, 0x00, // R-TAG seq 7, IPv4
        0x45, 0xb8, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 198, 18, 0, 1, 198,
        18, 1, 2, // IPv4 header
        0x13, 0x88, 0x17, 0x70, 0x00, 0x08, 0x00, 0x00, // UDP 5000 -> 6000
    ];

    #[test]
    fn fixture_frame_is_identified_by_each_passive_type() {
        let null = NullIdentity {
            dst_mac: mac("01:00:5e:00:00:01"),
            tagged: TagMatch::Tagged,
            vid: 10,
        };
        let smac = SourceMacVlanIdentity {
            src_mac: mac("02:00:00:00:00:01"),
            tagged: TagMatch::All,
            vid: 0,
        };
        let ip = IpIdentity {
            dst_mac: None,
            tagged: TagMatch::All,
            vid: 0,
            src_ip: "198.18.0.1".parse().unwrap(),
            dst_ip: "0.0.0.0".parse().unwrap(),
            dscp: 46,
            next_protocol: NextProtocol::Udp,
            src_port: 0,
            dst_port: 6000,
        };
        for identity in [
            StreamIdentity::Null(null),
            StreamIdentity::SourceMacVlan(smac),
            StreamIdentity::Ip(ip),
        ] {
            identity.validate().unwrap();
            assert_eq!(
                identity.matches(&TAGGED_RTAG_UDP, Pvid::DEFAULT),
                Ok(true),
                "{identity:?}"
            );
        }
    }

    #[test]
    fn table_returns_the_first_matching_handle() {
        let mut table = StreamIdentifier::new();
        let other = NullIdentity {
            dst_mac: mac("01:00:5e:00:00:02"),
            tagged: TagMatch::All,
            vid: 0,
        };
        let this = NullIdentity {
            dst_mac: mac("01:00:5e:00:00:01"),
            tagged: TagMatch::All,
            vid: 0,
        };
        table
            .add(StreamHandle(1), StreamIdentity::Null(other))
            .unwrap();
        table
            .add(StreamHandle(2), StreamIdentity::Null(this))
            .unwrap();
        table
            .add(StreamHandle(3), StreamIdentity::Null(this))
            .unwrap();
        assert_eq!(
            table.identify(&TAGGED_RTAG_UDP, Pvid::DEFAULT),
            Ok(Some(StreamHandle(2)))
        );
        assert_eq!(table.entries().len(), 3);
        assert!(table
            .identify(&TAGGED_RTAG_UDP[..10], Pvid::DEFAULT)
            .is_err());
    }

    #[test]
    fn invalid_identity_is_refused_with_a_message() {
        let mut table = StreamIdentifier::new();
        let bad = NullIdentity {
            dst_mac: MacAddr::default(),
            tagged: TagMatch::Tagged,
            vid: 5000,
        };
        let err = table
            .add(StreamHandle(1), StreamIdentity::Null(bad))
            .unwrap_err();
        assert_eq!(err.to_string(), "vid 5000 is out of range (0..=4095)");
        assert!(table.entries().is_empty());
    }
}
