//! Batched reads of the delay line's input sockets (`recvmmsg`), each frame with its receive
//! timestamp (`SO_TIMESTAMPNS`), the socket's drop counter (`SO_RXQ_OVFL`) and its VLAN tag
//! from `PACKET_AUXDATA` (see [`crate::tag`]). `frerlab_traffic::sys::RecvBatch` has no room
//! for the third control message, hence this reader of the line's own.

use crate::tag::VlanTag;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, OwnedFd};

/// Most messages one `recvmmsg` call reads.
const MAX_BATCH: usize = 64;
/// Control bytes per message: CMSG_SPACE of a timespec (32), a u32 (24) and a
/// tpacket_auxdata (40), with room to spare.
const CONTROL_SPACE: usize = 128;

/// Makes an AF_PACKET socket report each frame's metadata, the VLAN tag among it, in a
/// `PACKET_AUXDATA` control message.
///
/// # Errors
/// When the kernel refuses the option.
pub fn enable_auxdata(fd: &OwnedFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` lives for the call and its size is passed.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_AUXDATA,
            &one as *const _ as *const libc::c_void,
            size_of::<libc::c_int>() as u32,
        )
    };
    if ret < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(err.kind(), format!("PACKET_AUXDATA: {err}")));
    }
    Ok(())
}

/// What came with one frame.
#[derive(Clone, Copy, Debug, Default)]
pub struct Meta {
    /// Bytes received.
    pub len: usize,
    /// Kernel receive time (CLOCK_REALTIME ns), if attached.
    pub time_ns: Option<u64>,
    /// The socket's cumulative drop counter, if reported with this frame.
    pub drops: Option<u32>,
    /// The tag the frame had in its skb's metadata (not in its bytes), if any.
    pub tag: Option<VlanTag>,
}

/// Buffers for up to [`MAX_BATCH`] frames.
pub struct InputBatch {
    capacity: usize,
    data: Vec<u8>,
    control: Vec<u8>,
    received: Vec<Meta>,
}

impl InputBatch {
    /// Room for [`MAX_BATCH`] frames of up to `capacity` bytes each.
    pub fn new(capacity: usize) -> Self {
        InputBatch {
            capacity,
            data: vec![0; capacity * MAX_BATCH],
            control: vec![0; CONTROL_SPACE * MAX_BATCH],
            received: Vec::with_capacity(MAX_BATCH),
        }
    }

    /// Reads what is queued on `fd`; returns the number of frames (0 when none, EAGAIN).
    ///
    /// # Errors
    /// OS errors other than EAGAIN and EINTR.
    pub fn receive(&mut self, fd: &OwnedFd) -> io::Result<usize> {
        // SAFETY: all-zero iovecs and mmsghdrs are valid (null pointers, zero lengths).
        let mut iov: [libc::iovec; MAX_BATCH] = unsafe { zeroed() };
        let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { zeroed() };
        for (i, (msg, iov)) in msgs.iter_mut().zip(iov.iter_mut()).enumerate() {
            *iov = libc::iovec {
                iov_base: self.data[i * self.capacity..].as_mut_ptr() as *mut libc::c_void,
                iov_len: self.capacity,
            };
            msg.msg_hdr.msg_iov = iov;
            msg.msg_hdr.msg_iovlen = 1;
            msg.msg_hdr.msg_control =
                self.control[i * CONTROL_SPACE..].as_mut_ptr() as *mut libc::c_void;
            msg.msg_hdr.msg_controllen = CONTROL_SPACE;
        }
        // SAFETY: every header points at live buffers of the lengths given.
        let n = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                MAX_BATCH as u32,
                libc::MSG_DONTWAIT,
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
        self.received.clear();
        for msg in msgs.iter().take(n as usize) {
            let mut meta = Meta {
                len: (msg.msg_len as usize).min(self.capacity),
                ..Meta::default()
            };
            // SAFETY: the kernel filled msg_control with valid cmsgs up to msg_controllen.
            unsafe {
                let mut cmsg = libc::CMSG_FIRSTHDR(&msg.msg_hdr);
                while !cmsg.is_null() {
                    let data = libc::CMSG_DATA(cmsg);
                    match ((*cmsg).cmsg_level, (*cmsg).cmsg_type) {
                        (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                            let ts = std::ptr::read_unaligned(data as *const libc::timespec);
                            meta.time_ns =
                                Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                        }
                        (libc::SOL_SOCKET, libc::SO_RXQ_OVFL) => {
                            meta.drops = Some(std::ptr::read_unaligned(data as *const u32));
                        }
                        (libc::SOL_PACKET, libc::PACKET_AUXDATA) => {
                            let aux =
                                std::ptr::read_unaligned(data as *const libc::tpacket_auxdata);
                            meta.tag = VlanTag::from_auxdata(&aux);
                        }
                        _ => {}
                    }
                    cmsg = libc::CMSG_NXTHDR(&msg.msg_hdr, cmsg);
                }
            }
            self.received.push(meta);
        }
        Ok(self.received.len())
    }

    /// Frame `i` of the last [`InputBatch::receive`]: what came with it, and its bytes.
    pub fn message(&self, i: usize) -> (Meta, &[u8]) {
        let meta = self.received[i];
        let start = i * self.capacity;
        (meta, &self.data[start..start + meta.len])
    }
}
