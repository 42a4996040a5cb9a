//! Which clock stamps the frames: what an interface can timestamp (`ETHTOOL_GET_TS_INFO`, what
//! `ethtool -T` shows), the choice made from it (hardware stamps where the NIC has them and a
//! PTP hardware clock, the kernel's software stamps otherwise), turning stamps on
//! (`SIOCSHWTSTAMP` on the interface, `SO_TIMESTAMPING` on the socket), the sender's per-frame
//! TX stamps read back from the socket's error queue, and the `timestamps` object every report
//! carries to say which stamps and which clock its figures come from.
//!
//! The decision ([`Capability::tx_source`], [`Capability::rx_source`]) is pure: it takes the
//! capability the kernel reported, so the hardware path is taken only when ethtool says the
//! interface has it.

use crate::sys;
use serde::{Deserialize, Serialize};
use std::io;
use std::mem::zeroed;
use std::os::fd::{AsRawFd, OwnedFd};

/// `ETHTOOL_GET_TS_INFO` from linux/ethtool.h.
const ETHTOOL_GET_TS_INFO: u32 = 0x41;
/// `SCM_TSTAMP_SND` from linux/errqueue.h: the stamp of a frame handed to the device.
const SCM_TSTAMP_SND: u32 = 0;
/// `PACKET_TX_TIMESTAMP` from linux/if_packet.h: the error-queue message of an AF_PACKET stamp.
const PACKET_TX_TIMESTAMP: libc::c_int = 16;
/// Control bytes per error-queue message: a scm_timestamping (64) and a sock_extended_err (32).
const ERRQUEUE_CMSG_SPACE: usize = 128;

/// `struct ethtool_ts_info` from linux/ethtool.h.
#[repr(C)]
#[derive(Default)]
struct EthtoolTsInfo {
    cmd: u32,
    so_timestamping: u32,
    phc_index: i32,
    tx_types: u32,
    tx_reserved: [u32; 3],
    rx_filters: u32,
    rx_reserved: [u32; 3],
}

/// What an interface can timestamp, as the kernel reports it (`ethtool -T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    /// `SOF_TIMESTAMPING_*` bits the interface supports.
    pub so_timestamping: u32,
    /// Index of its PTP hardware clock (/dev/ptpN), -1 if none.
    pub phc_index: i32,
    /// Bit set of the `HWTSTAMP_TX_*` modes it supports.
    pub tx_types: u32,
    /// Bit set of the `HWTSTAMP_FILTER_*` receive filters it supports.
    pub rx_filters: u32,
}

/// Where a timestamp comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The NIC stamped the frame (`SOF_TIMESTAMPING_*_HARDWARE`, the raw PHC time).
    Hardware,
    /// The kernel stamped it: on receive as it took the frame from the driver, on send as the
    /// driver took it (`SOF_TIMESTAMPING_*_SOFTWARE`, CLOCK_REALTIME).
    Software,
    /// The sender's CLOCK_REALTIME read just before the send call, carried in the probe.
    Payload,
    /// The receiver's CLOCK_REALTIME read when it took the frame off its ring (AF_XDP: no
    /// kernel stamp).
    Userspace,
}

const SOFTWARE_TX: u32 = libc::SOF_TIMESTAMPING_TX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
const SOFTWARE_RX: u32 = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
const HARDWARE_TX: u32 = libc::SOF_TIMESTAMPING_TX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;
const HARDWARE_RX: u32 = libc::SOF_TIMESTAMPING_RX_HARDWARE | libc::SOF_TIMESTAMPING_RAW_HARDWARE;

impl Capability {
    /// The capability of interface `name` (ETHTOOL_GET_TS_INFO).
    ///
    /// # Errors
    /// When the interface does not exist or the kernel refuses the request.
    pub fn of_interface(name: &str) -> io::Result<Capability> {
        let mut info = EthtoolTsInfo {
            cmd: ETHTOOL_GET_TS_INFO,
            ..EthtoolTsInfo::default()
        };
        // SAFETY: `info` is a live struct ethtool_ts_info, which ETHTOOL_GET_TS_INFO fills.
        unsafe {
            sys::interface_ioctl(
                name,
                sys::SIOCETHTOOL,
                (&mut info as *mut EthtoolTsInfo).cast(),
            )
        }
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot read the timestamping capability of {name:?} (ethtool -T): {e}"),
            )
        })?;
        Ok(Capability {
            so_timestamping: info.so_timestamping,
            phc_index: info.phc_index,
            tx_types: info.tx_types,
            rx_filters: info.rx_filters,
        })
    }

    fn has(&self, bits: u32) -> bool {
        self.so_timestamping & bits == bits
    }

    /// The NIC stamps frames it sends: hardware TX and raw hardware stamps, a PHC, and the
    /// `HWTSTAMP_TX_ON` mode.
    pub fn hardware_tx(&self) -> bool {
        self.has(HARDWARE_TX)
            && self.phc_index >= 0
            && self.tx_types & (1 << libc::HWTSTAMP_TX_ON) != 0
    }

    /// The NIC stamps every frame it receives: hardware RX and raw hardware stamps, a PHC, and
    /// the `HWTSTAMP_FILTER_ALL` filter.
    pub fn hardware_rx(&self) -> bool {
        self.has(HARDWARE_RX)
            && self.phc_index >= 0
            && self.rx_filters & (1 << libc::HWTSTAMP_FILTER_ALL) != 0
    }

    /// The stamps a sender's socket takes of each frame on this interface.
    pub fn tx_source(&self) -> Source {
        if self.hardware_tx() {
            Source::Hardware
        } else if self.has(SOFTWARE_TX) {
            Source::Software
        } else {
            Source::Payload
        }
    }

    /// The stamps a receiver's socket takes of each frame on this interface (the kernel's
    /// software stamp is always there: the stack takes it, not the driver).
    pub fn rx_source(&self) -> Source {
        if self.hardware_rx() {
            Source::Hardware
        } else {
            Source::Software
        }
    }

    /// The clock of `source` stamps on this interface.
    pub fn clock_of(&self, source: Source) -> String {
        match source {
            Source::Hardware => format!("PHC {}", self.phc_index),
            _ => "CLOCK_REALTIME".into(),
        }
    }

    /// In words, what the interface offers, as `ethtool -T` shows it.
    pub fn describe(&self) -> String {
        let names = [
            (libc::SOF_TIMESTAMPING_TX_HARDWARE, "hardware-transmit"),
            (libc::SOF_TIMESTAMPING_TX_SOFTWARE, "software-transmit"),
            (libc::SOF_TIMESTAMPING_RX_HARDWARE, "hardware-receive"),
            (libc::SOF_TIMESTAMPING_RX_SOFTWARE, "software-receive"),
            (libc::SOF_TIMESTAMPING_SOFTWARE, "software-system-clock"),
            (libc::SOF_TIMESTAMPING_RAW_HARDWARE, "hardware-raw-clock"),
        ];
        let offered: Vec<&str> = names
            .iter()
            .filter(|(bit, _)| self.so_timestamping & bit != 0)
            .map(|(_, n)| *n)
            .collect();
        let phc = if self.phc_index >= 0 {
            self.phc_index.to_string()
        } else {
            "none".into()
        };
        format!(
            "{}; PTP Hardware Clock: {phc}",
            if offered.is_empty() {
                "none".into()
            } else {
                offered.join(", ")
            }
        )
    }
}

/// The stamps a run on an interface of some [`Capability`] takes, and their clocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The capability decided on.
    pub capability: Capability,
    /// A sender's per-frame stamps ([`Capability::tx_source`]).
    pub tx: Source,
    /// Their clock.
    pub tx_clock: String,
    /// A receiver's per-frame stamps ([`Capability::rx_source`]).
    pub rx: Source,
    /// Their clock.
    pub rx_clock: String,
    /// [`Capability::describe`].
    pub offers: String,
}

impl Capability {
    /// What a sender and a receiver on this interface use.
    pub fn decision(&self) -> Decision {
        let (tx, rx) = (self.tx_source(), self.rx_source());
        Decision {
            capability: *self,
            tx,
            tx_clock: self.clock_of(tx),
            rx,
            rx_clock: self.clock_of(rx),
            offers: self.describe(),
        }
    }

    /// A capability from a JSON object of its four fields.
    ///
    /// # Errors
    /// `InvalidInput` naming what is wrong.
    pub fn from_json(text: &str) -> io::Result<Capability> {
        serde_json::from_str(text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad timestamping capability: {e}"),
            )
        })
    }
}

impl Decision {
    /// The decision as a JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("decisions are plain data")
    }
}

/// Which stamps and which clock a report's figures come from (the `timestamps` object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timestamps {
    /// How each frame's send time was taken: the receiver's latency uses the probe's
    /// (`payload`); the sender's gaps use its per-frame TX stamps where the socket has them.
    pub tx: Source,
    /// How each frame's receive time was taken (the receiver's latency); `None` in a sender's
    /// report.
    pub rx: Option<Source>,
    /// The clock of both stamps of the pair: `CLOCK_REALTIME`, or `PHC n`.
    pub clock: String,
    /// The stamps the inter-frame gaps (`gaps` of the report) come from.
    pub gaps: Source,
    /// Their clock.
    pub gaps_clock: String,
    /// The interface whose capability was read, if one is known.
    pub interface: Option<String>,
    /// What the interface offers (`ethtool -T`), and so whether hardware stamps were used.
    pub hardware: String,
}

/// `hardware` of a report: what was found and what it means for the stamps used.
pub fn hardware_statement(
    interface: Option<&str>,
    capability: Option<&Capability>,
    used: bool,
) -> String {
    match (interface, capability) {
        (Some(name), Some(cap)) if used => {
            format!("{name} has hardware timestamps ({}): used", cap.describe())
        }
        (Some(name), Some(cap)) if cap.hardware_tx() || cap.hardware_rx() => {
            format!(
                "{name} has hardware timestamps ({}), not used for these figures",
                cap.describe()
            )
        }
        (Some(name), Some(cap)) => format!(
            "{name} has no hardware timestamps ({}): software stamps",
            cap.describe()
        ),
        (Some(name), None) => {
            format!("the timestamping capability of {name} could not be read: software stamps")
        }
        (None, _) => {
            "no interface known (UDP socket not bound to one address): software stamps".into()
        }
    }
}

/// The interface's hardware timestamping switched on (`SIOCSHWTSTAMP`), put back as it was
/// when dropped.
pub struct HardwareStamping {
    interface: String,
    previous: libc::hwtstamp_config,
}

impl HardwareStamping {
    /// Switches on TX stamps (`tx`) or receive stamps of every frame (`!tx`) on `interface`,
    /// keeping what is on already (another user's, e.g. ptp4l's, setting).
    ///
    /// # Errors
    /// When the driver refuses (no permission, or the mode is not supported after all).
    pub fn enable(interface: &str, tx: bool) -> io::Result<HardwareStamping> {
        // SAFETY: an all-zero hwtstamp_config is valid (plain integers).
        let mut previous: libc::hwtstamp_config = unsafe { zeroed() };
        hwtstamp_ioctl(interface, libc::SIOCGHWTSTAMP, &mut previous).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot read the hardware timestamping of {interface:?} (SIOCGHWTSTAMP): {e}"
                ),
            )
        })?;
        let mut config = previous;
        if tx {
            config.tx_type = libc::HWTSTAMP_TX_ON as libc::c_int;
        } else {
            config.rx_filter = libc::HWTSTAMP_FILTER_ALL as libc::c_int;
        }
        hwtstamp_ioctl(interface, libc::SIOCSHWTSTAMP, &mut config).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot switch on hardware timestamps on {interface:?} (SIOCSHWTSTAMP): {e}"
                ),
            )
        })?;
        Ok(HardwareStamping {
            interface: interface.into(),
            previous,
        })
    }
}

impl Drop for HardwareStamping {
    fn drop(&mut self) {
        let _ = hwtstamp_ioctl(&self.interface, libc::SIOCSHWTSTAMP, &mut self.previous);
    }
}

/// `request` (SIOCGHWTSTAMP, which fills `config`, or SIOCSHWTSTAMP, which takes it) on
/// `interface`.
fn hwtstamp_ioctl(
    interface: &str,
    request: libc::c_ulong,
    config: &mut libc::hwtstamp_config,
) -> io::Result<()> {
    // SAFETY: `config` is a live, writable hwtstamp_config, the structure both requests use.
    unsafe {
        sys::interface_ioctl(
            interface,
            request,
            (config as *mut libc::hwtstamp_config).cast(),
        )
    }
}

/// Asks the socket for per-frame stamps of `source`: receive stamps (`rx`), or send stamps
/// returned on the error queue, numbered (`OPT_ID`) and without the frame (`OPT_TSONLY`).
/// Receive stamps always include the kernel's software stamp (the latency's clock).
///
/// # Errors
/// When the kernel refuses the option.
pub fn enable_on_socket(fd: &OwnedFd, source: Source, rx: bool) -> io::Result<()> {
    let flags = match (rx, source) {
        (true, Source::Hardware) => SOFTWARE_RX | HARDWARE_RX,
        (true, _) => SOFTWARE_RX,
        (false, Source::Hardware) => {
            HARDWARE_TX | libc::SOF_TIMESTAMPING_OPT_ID | libc::SOF_TIMESTAMPING_OPT_TSONLY
        }
        (false, _) => {
            SOFTWARE_TX | libc::SOF_TIMESTAMPING_OPT_ID | libc::SOF_TIMESTAMPING_OPT_TSONLY
        }
    };
    sys::set_socket_option(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
    .map_err(|e| io::Error::new(e.kind(), format!("SO_TIMESTAMPING: {e}")))
}

/// One send stamp from the error queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxStamp {
    /// The socket's running number of the frame (`OPT_ID`: 0 for the first frame sent).
    pub id: u32,
    /// The stamp (ns) on the clock of the stamps asked for.
    pub time_ns: u64,
}

/// Reads the send stamps queued on `fd`'s error queue (without waiting) into `out`, keeping
/// those of `source` (software: `ts[0]`, hardware: `ts[2]`); returns how many messages were
/// read (0: the queue is empty).
///
/// # Errors
/// OS errors other than an empty queue or EINTR.
pub fn read_tx_stamps(fd: &OwnedFd, source: Source, out: &mut Vec<TxStamp>) -> io::Result<usize> {
    let mut control = [[0u8; ERRQUEUE_CMSG_SPACE]; sys::MAX_BATCH];
    // SAFETY: all-zero mmsghdrs are valid (integers and null pointers).
    let mut msgs: [libc::mmsghdr; sys::MAX_BATCH] = unsafe { zeroed() };
    for (msg, control) in msgs.iter_mut().zip(control.iter_mut()) {
        msg.msg_hdr.msg_control = control.as_mut_ptr().cast();
        msg.msg_hdr.msg_controllen = ERRQUEUE_CMSG_SPACE;
    }
    // SAFETY: every header points at live control buffers of the lengths given; no data iovec.
    let n = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            sys::MAX_BATCH as u32,
            libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
            _ => Err(err),
        };
    }
    let slot = if source == Source::Hardware { 2 } else { 0 };
    for msg in msgs.iter().take(n as usize) {
        let (mut time_ns, mut id) = (None, None);
        // SAFETY: the kernel filled msg_control with valid cmsgs up to msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg.msg_hdr);
            while !cmsg.is_null() {
                let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
                if level == libc::SOL_SOCKET && kind == libc::SO_TIMESTAMPING {
                    let ts: [libc::timespec; 3] = std::ptr::read_unaligned(
                        libc::CMSG_DATA(cmsg) as *const [libc::timespec; 3]
                    );
                    let t = ts[slot];
                    time_ns = (t.tv_sec != 0 || t.tv_nsec != 0)
                        .then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                } else if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                    || (level == libc::SOL_PACKET && kind == PACKET_TX_TIMESTAMP)
                {
                    let err: libc::sock_extended_err = std::ptr::read_unaligned(libc::CMSG_DATA(
                        cmsg,
                    )
                        as *const libc::sock_extended_err);
                    if err.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                        && err.ee_info == SCM_TSTAMP_SND
                    {
                        id = Some(err.ee_data);
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg.msg_hdr, cmsg);
            }
        }
        if let (Some(time_ns), Some(id)) = (time_ns, id) {
            out.push(TxStamp { id, time_ns });
        }
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VETH: Capability = Capability {
        so_timestamping: libc::SOF_TIMESTAMPING_TX_SOFTWARE
            | libc::SOF_TIMESTAMPING_RX_SOFTWARE
            | libc::SOF_TIMESTAMPING_SOFTWARE,
        phc_index: -1,
        tx_types: 0,
        rx_filters: 0,
    };

    const NIC: Capability = Capability {
        so_timestamping: VETH.so_timestamping | HARDWARE_TX | HARDWARE_RX,
        phc_index: 2,
        tx_types: (1 << libc::HWTSTAMP_TX_OFF) | (1 << libc::HWTSTAMP_TX_ON),
        rx_filters: (1 << libc::HWTSTAMP_FILTER_NONE) | (1 << libc::HWTSTAMP_FILTER_ALL),
    };

    #[test]
    fn hardware_only_with_the_bits_a_clock_and_the_modes() {
        assert_eq!(
            (VETH.tx_source(), VETH.rx_source()),
            (Source::Software, Source::Software)
        );
        assert_eq!(
            (NIC.tx_source(), NIC.rx_source()),
            (Source::Hardware, Source::Hardware)
        );
        assert_eq!(NIC.clock_of(Source::Hardware), "PHC 2");
        assert_eq!(NIC.clock_of(Source::Software), "CLOCK_REALTIME");
        let no_clock = Capability {
            phc_index: -1,
            ..NIC
        };
        assert_eq!(
            (no_clock.tx_source(), no_clock.rx_source()),
            (Source::Software, Source::Software)
        );
        let ptp_only = Capability {
            rx_filters: 1 << libc::HWTSTAMP_FILTER_PTP_V2_EVENT,
            tx_types: 1,
            ..NIC
        };
        assert_eq!(
            (ptp_only.tx_source(), ptp_only.rx_source()),
            (Source::Software, Source::Software)
        );
        let no_raw = Capability {
            so_timestamping: NIC.so_timestamping & !libc::SOF_TIMESTAMPING_RAW_HARDWARE,
            ..NIC
        };
        assert!(!no_raw.hardware_tx() && !no_raw.hardware_rx());
        let nothing = Capability {
            so_timestamping: 0,
            phc_index: -1,
            tx_types: 0,
            rx_filters: 0,
        };
        assert_eq!(nothing.tx_source(), Source::Payload);
    }

    #[test]
    fn statements_say_what_was_found() {
        assert!(VETH.describe().contains(
            "software-transmit, software-receive, software-system-clock; PTP Hardware Clock: none"
        ));
        assert!(hardware_statement(Some("veth0"), Some(&VETH), false)
            .contains("veth0 has no hardware timestamps"));
        assert!(hardware_statement(Some("eth0"), Some(&NIC), true)
            .ends_with("PTP Hardware Clock: 2): used"));
        assert!(hardware_statement(Some("eth0"), Some(&NIC), false).contains("not used"));
    }
}
