//! The probe payload: what every generated frame carries so the receiver can account for it.
//!
//! 18 bytes, big-endian, at the start of the UDP payload (the whole payload of a 64-byte frame):
//!
//! | offset | size | field                                                        |
//! |-------:|-----:|--------------------------------------------------------------|
//! | 0      | 1    | magic `0xFB`                                                 |
//! | 1      | 1    | kind: `0x44` ('D') data probe, `0x45` ('E') end of stream    |
//! | 2      | 2    | stream id                                                    |
//! | 4      | 8    | sequence number (data: 0, 1, 2, ...; end: data probes sent)  |
//! | 12     | 6    | send time: low 48 bits of CLOCK_REALTIME in nanoseconds     |
//!
//! Larger frames pad the payload with zeros after byte 18. The 48-bit send time wraps every
//! 78 hours; [`Probe::send_time_ns`] rebuilds the full time from the receive time, which is
//! exact for any one-way latency below 78 hours. An end-of-stream probe tells the receiver how
//! many sequence numbers the sender used, so losses at the tail are counted too.
//!
//! The lane is 0 for a sender with one socket, so its probes are byte for byte those of the
//! earlier 8-byte sequence number field (bytes 4..12) below 2^56. A multi-queue xdp sender
//! (one thread per TX queue, [`crate::sender`]) writes each thread's index there, so the
//! receiver can tell the order each thread sent in from the interleaving of threads, which no
//! one controls (see [`crate::accounting`], "reordered").

/// Bytes of the probe header; the smallest UDP payload (64-byte frame) is exactly this.
pub const PROBE_LEN: usize = 18;
/// First byte of every probe.
pub const MAGIC: u8 = 0xFB;
const MAGIC_AT: usize = 0;
const KIND_AT: usize = 1;
const STREAM: std::ops::Range<usize> = 2..4;
const LANE_AT: usize = 4;
const SEQ: std::ops::Range<usize> = 5..12;
const TIME: std::ops::Range<usize> = 12..18;
const TIME_BITS: u32 = 48;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;
/// Largest sequence number a probe carries (56 bits).
pub const MAX_SEQ: u64 = (1 << 56) - 1;

/// What a probe says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A measured data frame; its sequence number is its place in the stream.
    Data,
    /// End of stream; the sequence number is the count of data sequence numbers used.
    End,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Data => b'D',
            Kind::End => b'E',
        }
    }
}

/// A decoded probe header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Data or end of stream.
    pub kind: Kind,
    /// Stream the probe belongs to.
    pub stream_id: u16,
    /// The sending thread of a multi-queue sender (0 for a single sender).
    pub lane: u8,
    /// Sequence number (see [`Kind`]).
    pub seq: u64,
    /// Low 48 bits of the send time (CLOCK_REALTIME, ns).
    pub send_time_low: u64,
}

impl Probe {
    /// Decodes the first [`PROBE_LEN`] bytes of `payload`; `None` if it is not a probe
    /// (too short, wrong magic or unknown kind).
    pub fn parse(payload: &[u8]) -> Option<Probe> {
        if payload.len() < PROBE_LEN || payload[MAGIC_AT] != MAGIC {
            return None;
        }
        let kind = match payload[KIND_AT] {
            b'D' => Kind::Data,
            b'E' => Kind::End,
            _ => return None,
        };
        let mut time = [0u8; 8];
        time[2..].copy_from_slice(&payload[TIME]);
        let mut seq = [0u8; 8];
        seq[1..].copy_from_slice(&payload[SEQ]);
        Some(Probe {
            kind,
            stream_id: u16::from_be_bytes(payload[STREAM].try_into().ok()?),
            lane: payload[LANE_AT],
            seq: u64::from_be_bytes(seq),
            send_time_low: u64::from_be_bytes(time),
        })
    }

    /// Writes the fixed fields (magic, kind, stream id, lane) into `payload[..PROBE_LEN]`.
    ///
    /// # Panics
    /// If `payload` is shorter than [`PROBE_LEN`].
    pub fn emit_header(payload: &mut [u8], kind: Kind, stream_id: u16, lane: u8) {
        payload[MAGIC_AT] = MAGIC;
        payload[KIND_AT] = kind.byte();
        payload[STREAM].copy_from_slice(&stream_id.to_be_bytes());
        payload[LANE_AT] = lane;
    }

    /// Writes the per-frame fields (sequence number, at most [`MAX_SEQ`], and send time) into
    /// `payload[..PROBE_LEN]`.
    ///
    /// # Panics
    /// If `payload` is shorter than [`PROBE_LEN`].
    pub fn emit_seq_time(payload: &mut [u8], seq: u64, send_time_ns: u64) {
        debug_assert!(seq <= MAX_SEQ);
        payload[SEQ].copy_from_slice(&seq.to_be_bytes()[1..]);
        payload[TIME].copy_from_slice(&(send_time_ns & TIME_MASK).to_be_bytes()[2..]);
    }

    /// The full send time in ns, rebuilt from the 48-bit field and the receive time (exact when
    /// the one-way latency is below 2^48 ns = 78 hours; a send time "after" the receive time,
    /// from clock steps, comes out as the receive time minus a negative latency).
    pub fn send_time_ns(&self, recv_time_ns: u64) -> i128 {
        let back = recv_time_ns.wrapping_sub(self.send_time_low) & TIME_MASK;
        let back = if back >= 1 << (TIME_BITS - 1) {
            back as i128 - (1i128 << TIME_BITS)
        } else {
            back as i128
        };
        recv_time_ns as i128 - back
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_layout_is_as_documented() {
        let mut buf = [0u8; PROBE_LEN];
        Probe::emit_header(&mut buf, Kind::Data, 0x0102, 3);
        Probe::emit_seq_time(&mut buf, 0x0004_0506_0708_090A, 0xAAAA_1112_1314_1516);
        assert_eq!(
            buf,
            [0xFB, b'D', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16]
        );
        let probe = Probe::parse(&buf).unwrap();
        assert_eq!((probe.lane, probe.seq), (3, 0x0004_0506_0708_090A));
        assert_eq!(probe.stream_id, 0x0102);
        assert_eq!(probe.send_time_low, 0x1112_1314_1516);
    }

    #[test]
    fn send_time_survives_the_48_bit_wrap() {
        let mut buf = [0u8; PROBE_LEN];
        Probe::emit_header(&mut buf, Kind::End, 7, 0);
        let sent = (5u64 << 48) - 100;
        Probe::emit_seq_time(&mut buf, 9, sent);
        let probe = Probe::parse(&buf).unwrap();
        assert_eq!(probe.kind, Kind::End);
        assert_eq!(probe.send_time_ns(sent + 250), sent as i128);
        assert_eq!(probe.send_time_ns(sent - 10), sent as i128);
    }

    #[test]
    fn non_probes_are_rejected() {
        let mut buf = [0u8; PROBE_LEN];
        Probe::emit_header(&mut buf, Kind::Data, 1, 0);
        assert!(Probe::parse(&buf[..PROBE_LEN - 1]).is_none());
        let mut bad_kind = buf;
        bad_kind[1] = b'X';
        assert!(Probe::parse(&bad_kind).is_none());
        buf[0] = 0;
        assert!(Probe::parse(&buf).is_none());
    }
}
