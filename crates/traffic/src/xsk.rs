//! AF_XDP sockets (XSK) on plain system calls: a UMEM of 4 KiB chunks shared with the kernel,
//! its fill and completion rings, and an RX or a TX ring, each a single-producer /
//! single-consumer ring mapped into this process.
//!
//! One socket serves one queue of an interface; a multi-queue sender or receiver opens one per
//! queue, each with its own UMEM (no shared UMEM: the queues never exchange chunks).
//!
//! The sender writes whole frames into UMEM chunks, posts them on the TX ring and kicks the
//! kernel with `sendto` until it has taken them; chunks come back on the completion ring. The
//! receiver keeps its chunks on the fill ring, takes frames off the RX ring (where an XDP
//! program, [`crate::xdp_redirect`], put them) and hands each chunk straight back.
//! Zero-copy is asked for first (a driver with AF_XDP support), copy mode otherwise (any
//! interface, veth included); [`XskSocket::bind_mode`] says which one the kernel granted.
//! Everything is released when the socket is dropped, or by the kernel when the process dies.

use serde::Serialize;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes of one UMEM chunk (one frame per chunk).
const CHUNK: usize = 4096;
/// Chunks in the UMEM (64 MiB): a full TX ring and completion ring, or a full fill ring and
/// RX ring.
const CHUNKS: usize = 2 * RING_SIZE as usize;
/// Entries of each ring (a power of two): 8192 frames, about 6 ms at 1.4 M frames/s, so a
/// receiver that is scheduled late loses nothing (2048 lost a quarter of 64-byte frames at
/// full speed on a veth).
const RING_SIZE: u32 = 8192;
/// Headroom the kernel keeps before a received frame in its chunk (`XDP_PACKET_HEADROOM`).
const KERNEL_HEADROOM: usize = 256;
/// Largest frame (without FCS) a chunk holds on both the sending and the receiving side.
pub const MAX_FRAME_BYTES: usize = CHUNK - KERNEL_HEADROOM;

/// How the kernel moves frames between the UMEM and the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BindMode {
    /// The driver reads and writes the UMEM itself.
    ZeroCopy,
    /// The kernel copies each frame (any interface; slower than zero-copy).
    Copy,
}

/// An anonymous or kernel-provided memory mapping, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(fd: Option<&OwnedFd>, len: usize, offset: u64) -> io::Result<Mapping> {
        let (flags, raw) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd.as_raw_fd()),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            ),
        };
        // SAFETY: a fresh mapping; the kernel checks the descriptor and offset.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                raw,
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are a mapping this value owns.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One mapped ring; `local` is this side's index (producer or consumer, whichever it owns).
struct Ring {
    _map: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    descs: *mut u8,
    mask: u32,
    local: u32,
}

impl Ring {
    fn map(
        fd: &OwnedFd,
        offsets: &libc::xdp_ring_offset,
        desc_size: usize,
        pgoff: u64,
    ) -> io::Result<Ring> {
        let map = Mapping::new(
            Some(fd),
            offsets.desc as usize + RING_SIZE as usize * desc_size,
            pgoff,
        )?;
        // SAFETY: the kernel's offsets lie within the mapping it sized.
        let at = |off: u64| unsafe { map.ptr.add(off as usize) };
        Ok(Ring {
            producer: at(offsets.producer) as *const AtomicU32,
            consumer: at(offsets.consumer) as *const AtomicU32,
            descs: at(offsets.desc),
            mask: RING_SIZE - 1,
            local: 0,
            _map: map,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 in the live mapping, shared with the kernel.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { &*self.consumer }
    }

    /// Entry `index` (modulo the ring) as a `T`.
    fn slot<T>(&self, index: u32) -> *mut T {
        // SAFETY: the masked index is within the ring's `RING_SIZE` entries of size_of::<T>().
        unsafe {
            self.descs
                .add((index & self.mask) as usize * size_of::<T>()) as *mut T
        }
    }

    /// Free entries for a producer.
    fn room(&self) -> u32 {
        RING_SIZE
            - self
                .local
                .wrapping_sub(self.consumer().load(Ordering::Acquire))
    }

    /// Entries waiting for a consumer.
    fn ready(&self) -> u32 {
        self.producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.local)
    }
}

/// An AF_XDP socket bound to one queue of one interface, for sending or for receiving.
pub struct XskSocket {
    fill: Ring,
    completion: Ring,
    /// The RX ring (receiving) or the TX ring (sending).
    ring: Ring,
    umem: Mapping,
    free: Vec<u64>,
    bind_mode: BindMode,
    fd: OwnedFd,
}

impl XskSocket {
    /// Opens a socket on queue `queue` of interface `ifindex`, receiving if `rx` (else
    /// sending): zero-copy where the driver offers it, copy mode otherwise.
    ///
    /// # Errors
    /// When AF_XDP is missing from the kernel, or the kernel refuses the socket (the message
    /// says which step).
    pub fn open(ifindex: u32, queue: u32, rx: bool) -> io::Result<XskSocket> {
        XskSocket::open_as(ifindex, queue, rx, BindMode::ZeroCopy)
            .or_else(|_| XskSocket::open_as(ifindex, queue, rx, BindMode::Copy))
    }

    fn open_as(ifindex: u32, queue: u32, rx: bool, bind_mode: BindMode) -> io::Result<XskSocket> {
        let step = |what: &'static str| {
            move |e: io::Error| io::Error::new(e.kind(), format!("AF_XDP: {what}: {e}"))
        };
        // SAFETY: plain socket(2).
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            let err = io::Error::last_os_error();
            let hint = if err.raw_os_error() == Some(libc::EAFNOSUPPORT) {
                "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS); use --mode raw"
            } else {
                "cannot open an AF_XDP socket (needs CAP_NET_RAW and CAP_BPF or root)"
            };
            return Err(io::Error::new(err.kind(), format!("{hint}: {err}")));
        }
        // SAFETY: `raw` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem = Mapping::new(None, CHUNK * CHUNKS, 0).map_err(step("cannot map the UMEM"))?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr as u64,
            len: umem.len as u64,
            chunk_size: CHUNK as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        set(&fd, libc::XDP_UMEM_REG, &reg).map_err(step("cannot register the UMEM"))?;
        set(&fd, libc::XDP_UMEM_FILL_RING, &RING_SIZE).map_err(step("fill ring"))?;
        set(&fd, libc::XDP_UMEM_COMPLETION_RING, &RING_SIZE).map_err(step("completion ring"))?;
        set(
            &fd,
            if rx {
                libc::XDP_RX_RING
            } else {
                libc::XDP_TX_RING
            },
            &RING_SIZE,
        )
        .map_err(step("RX/TX ring"))?;
        // SAFETY: all-zero offsets are valid; getsockopt writes at most `len` bytes.
        let mut off: libc::xdp_mmap_offsets = unsafe { zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: as above.
        check(unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        })
        .map_err(step("ring offsets"))?;
        let fill = Ring::map(
            &fd,
            &off.fr,
            size_of::<u64>(),
            libc::XDP_UMEM_PGOFF_FILL_RING,
        )
        .map_err(step("cannot map the fill ring"))?;
        let completion = Ring::map(
            &fd,
            &off.cr,
            size_of::<u64>(),
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )
        .map_err(step("cannot map the completion ring"))?;
        let ring = if rx {
            Ring::map(
                &fd,
                &off.rx,
                size_of::<libc::xdp_desc>(),
                libc::XDP_PGOFF_RX_RING as u64,
            )
        } else {
            Ring::map(
                &fd,
                &off.tx,
                size_of::<libc::xdp_desc>(),
                libc::XDP_PGOFF_TX_RING as u32 as u64,
            )
        }
        .map_err(step("cannot map the RX/TX ring"))?;
        let sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: match bind_mode {
                BindMode::ZeroCopy => libc::XDP_ZEROCOPY,
                BindMode::Copy => libc::XDP_COPY,
            },
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `sxdp` is a valid sockaddr_xdp of the length given.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sxdp as *const libc::sockaddr_xdp).cast(),
                size_of::<libc::sockaddr_xdp>() as u32,
            )
        })
        .map_err(step(if bind_mode == BindMode::Copy {
            "cannot bind to the interface's queue"
        } else {
            "zero-copy bind"
        }))?;
        let mut socket = XskSocket {
            fill,
            completion,
            ring,
            umem,
            free: (0..CHUNKS as u64).rev().map(|c| c * CHUNK as u64).collect(),
            bind_mode,
            fd,
        };
        if rx {
            for _ in 0..RING_SIZE {
                let addr = socket.free.pop().expect("more chunks than fill entries");
                socket.post_fill(addr);
            }
            socket
                .fill
                .producer()
                .store(socket.fill.local, Ordering::Release);
        }
        Ok(socket)
    }

    /// The socket's descriptor (for the XSKMAP of the receiving XDP program).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Zero-copy or copy mode, as the kernel granted.
    pub fn bind_mode(&self) -> BindMode {
        self.bind_mode
    }

    fn post_fill(&mut self, addr: u64) {
        // SAFETY: a fill-ring entry; the caller keeps the ring from overflowing.
        unsafe { *self.fill.slot::<u64>(self.fill.local) = addr };
        self.fill.local = self.fill.local.wrapping_add(1);
    }

    /// Takes the chunks the kernel has finished sending back from the completion ring.
    fn reclaim(&mut self) {
        let ready = self.completion.ready();
        for i in 0..ready {
            // SAFETY: an entry the kernel produced.
            let addr = unsafe {
                *self
                    .completion
                    .slot::<u64>(self.completion.local.wrapping_add(i))
            };
            self.free.push(addr);
        }
        self.completion.local = self.completion.local.wrapping_add(ready);
        self.completion
            .consumer()
            .store(self.completion.local, Ordering::Release);
    }

    /// Sends up to `count` frames of `len` bytes each, frame `i` being `frames[i * len..][..len]`,
    /// and waits until the kernel has taken them; returns how many were sent.
    ///
    /// # Errors
    /// `EAGAIN` when no chunk is free (every one in flight: retry), or the OS error of the kick.
    ///
    /// # Panics
    /// If `len` exceeds [`MAX_FRAME_BYTES`] or `frames` is shorter than `count * len`.
    pub fn send(&mut self, frames: &[u8], len: usize, count: usize) -> io::Result<usize> {
        assert!(len <= MAX_FRAME_BYTES && count * len <= frames.len());
        self.reclaim();
        let n = count.min(self.free.len()).min(self.ring.room() as usize);
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::EAGAIN));
        }
        for frame in frames.chunks_exact(len).take(n) {
            let addr = self.free.pop().expect("counted above");
            // SAFETY: `addr` is a free chunk of the UMEM, CHUNK >= len bytes long; the TX entry
            // is ours to write (room counted above).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    frame.as_ptr(),
                    self.umem.ptr.add(addr as usize),
                    len,
                );
                *self.ring.slot::<libc::xdp_desc>(self.ring.local) = libc::xdp_desc {
                    addr,
                    len: len as u32,
                    options: 0,
                };
            }
            self.ring.local = self.ring.local.wrapping_add(1);
        }
        self.ring
            .producer()
            .store(self.ring.local, Ordering::Release);
        while self.ring.consumer().load(Ordering::Acquire) != self.ring.local {
            // SAFETY: a zero-length sendto only wakes the kernel's transmit path.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if r < 0 {
                let err = io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS)
                    | Some(libc::EINTR) => std::thread::yield_now(),
                    _ => return Err(err),
                }
            }
        }
        Ok(n)
    }

    /// Hands each frame waiting on the RX ring to `each` and its chunk back to the kernel,
    /// without waiting (see [`wait_any`]); returns the number of frames.
    pub fn take(&mut self, mut each: impl FnMut(&[u8])) -> usize {
        let ready = self.ring.ready();
        for i in 0..ready {
            // SAFETY: an entry the kernel produced, pointing at `len` bytes inside the UMEM.
            let desc = unsafe {
                *self
                    .ring
                    .slot::<libc::xdp_desc>(self.ring.local.wrapping_add(i))
            };
            // SAFETY: the kernel puts a received frame inside one UMEM chunk, after the
            // headroom, so `addr` plus at most MAX_FRAME_BYTES stays within the mapping.
            let frame = unsafe {
                std::slice::from_raw_parts(
                    self.umem.ptr.add(desc.addr as usize),
                    (desc.len as usize).min(MAX_FRAME_BYTES),
                )
            };
            each(frame);
            // The chunk goes back whole (from its start, the kernel's headroom included).
            self.post_fill(desc.addr & !(CHUNK as u64 - 1));
        }
        self.ring.local = self.ring.local.wrapping_add(ready);
        self.ring
            .consumer()
            .store(self.ring.local, Ordering::Release);
        self.fill
            .producer()
            .store(self.fill.local, Ordering::Release);
        ready as usize
    }

    /// Frames the kernel dropped for this socket: no free chunk on the fill ring, or a full RX
    /// ring (the receiver's own overload, not the network's).
    ///
    /// # Errors
    /// When the kernel refuses `XDP_STATISTICS`.
    pub fn drops(&self) -> io::Result<u64> {
        // SAFETY: all-zero statistics are valid; getsockopt writes at most `len` bytes.
        let mut stats: libc::xdp_statistics = unsafe { zeroed() };
        let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: as above.
        check(unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&mut stats as *mut libc::xdp_statistics).cast(),
                &mut len,
            )
        })?;
        Ok(stats.rx_dropped + stats.rx_ring_full)
    }
}

/// Waits up to `timeout_ms` until one of the receiving `sockets` has a frame on its RX ring;
/// returns at once if one has.
///
/// # Errors
/// The OS error of `poll`, EINTR excepted.
pub fn wait_any(sockets: &[XskSocket], timeout_ms: i32) -> io::Result<()> {
    if sockets.iter().any(|s| s.ring.ready() > 0) {
        return Ok(());
    }
    let mut fds: Vec<libc::pollfd> = sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` holds `fds.len()` valid pollfds.
    if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) } < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
    Ok(())
}

// SAFETY: the raw pointers point into mappings the socket owns and nothing else in this
// process touches, so the socket may move to another thread; the rings are used through
// `&mut self` only, so shared references (`fd`, `bind_mode`, `drops`) never touch them.
unsafe impl Send for XskSocket {}
// SAFETY: see `Send`: through `&self` nothing reads or writes the rings or the UMEM.
unsafe impl Sync for XskSocket {}

fn set<T>(fd: &OwnedFd, option: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is valid for reads of size_of::<T>() bytes.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            option,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
