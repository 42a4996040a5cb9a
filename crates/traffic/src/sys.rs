//! Thin safe wrappers over the Linux calls the generator, the receiver and the impairment
//! element's delay line use: clocks, CPU affinity, UDP and AF_PACKET sockets, socket options, interface
//! requests, and batched `sendmmsg` / `recvmmsg` with receive timestamps (`SO_TIMESTAMPNS`, or
//! `SO_TIMESTAMPING` with software and hardware stamps), the socket's drop
//! counter (`SO_RXQ_OVFL`), UDP GRO sizes and, on AF_PACKET, the VLAN tag the kernel kept in
//! the frame's metadata (`PACKET_AUXDATA`).
//!
//! Why over 700 lines: it holds the crate's many thin wrappers over libc (the AF_XDP rings and the
//! timestamp control messages have their own modules), each short, each with its SAFETY argument.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Most messages one `sendmmsg` / `recvmmsg` call handles.
pub const MAX_BATCH: usize = 64;
/// Most segments one UDP GSO send may carry (the kernel's UDP_MAX_SEGMENTS).
pub const MAX_GSO_SEGMENTS: usize = 64;
/// Largest UDP GSO send in bytes (an IPv4 datagram's 65535 minus headers, rounded down).
pub const MAX_GSO_BYTES: usize = 65_000;
/// `UDP_SEGMENT` from linux/udp.h (the libc crate defines it only for uclibc targets).
const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO` from linux/udp.h (likewise).
const UDP_GRO: libc::c_int = 104;
/// Control bytes per received message: CMSG_SPACE of a timespec (32) or of three
/// (scm_timestamping, 64), a u32 drop counter (24) and a GRO size (24) or a tpacket_auxdata (40),
/// with room to spare.
const CMSG_SPACE: usize = 160;
/// The TPID AF_PACKET implies when it reports a VLAN tag without one (802.1Q).
const ETH_P_8021Q: u16 = 0x8100;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into; the clock ids used always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME in ns: shared by every network namespace of a host, used for send and
/// receive timestamps.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// CLOCK_MONOTONIC in ns, used for pacing and durations.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// A set of CPUs a thread may run on, as `sched_getaffinity` reports it.
#[derive(Clone, Copy)]
pub struct CpuAffinity(libc::cpu_set_t);

impl CpuAffinity {
    /// The calling thread's affinity.
    ///
    /// # Errors
    /// The OS error of sched_getaffinity.
    pub fn current() -> io::Result<Self> {
        // SAFETY: an all-zero cpu_set_t is the empty set (plain integers).
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        // SAFETY: sched_getaffinity writes at most the size given into `set`.
        check(unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) })?;
        Ok(CpuAffinity(set))
    }

    /// The set holding `cpu` alone.
    ///
    /// # Errors
    /// When `cpu` is not below `CPU_SETSIZE`.
    pub fn only(cpu: usize) -> io::Result<Self> {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is out of range (0..{})", libc::CPU_SETSIZE),
            ));
        }
        // SAFETY: an all-zero cpu_set_t is the empty set (plain integers).
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        // SAFETY: `cpu` < CPU_SETSIZE (checked above), so the bit is inside the set.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        Ok(CpuAffinity(set))
    }

    /// The CPUs in the set, in order.
    pub fn cpus(&self) -> Vec<usize> {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: every `cpu` < CPU_SETSIZE, so the bit read is inside the set.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &self.0) })
            .collect()
    }

    /// Makes this set the calling thread's affinity.
    ///
    /// # Errors
    /// The OS error of sched_setaffinity (e.g. a set with no CPU the process may use).
    pub fn apply(&self) -> io::Result<()> {
        // SAFETY: sched_setaffinity reads at most the size given from the set.
        check(unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &self.0) })
            .map(drop)
    }
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn with_context(err: io::Error, what: &str) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

/// Sets socket option `name` of `level` to `value`.
///
/// # Errors
/// When the kernel refuses the option.
pub fn set_socket_option<T>(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: T,
) -> io::Result<()> {
    set_option(fd.as_raw_fd(), level, name, value)
}

fn set_option<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: T) -> io::Result<()> {
    // SAFETY: `value` lives for the call and its size is passed alongside.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const T as *const libc::c_void,
            size_of::<T>() as u32,
        )
    })
    .map(drop)
}

fn socket(domain: libc::c_int, kind: libc::c_int, protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the returned descriptor is owned by the OwnedFd.
    let fd = check(unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr_in(addr: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    // SAFETY: an all-zero sockaddr_in is valid (plain integers).
    let mut sa: libc::sockaddr_in = unsafe { zeroed() };
    sa.sin_family = libc::AF_INET as u16;
    sa.sin_port = port.to_be();
    sa.sin_addr.s_addr = u32::from(addr).to_be();
    sa
}

/// A UDP socket bound to `local` (port 0: any) and, if `remote` is given, connected to it.
///
/// # Errors
/// When the socket cannot be created, bound or connected.
pub fn udp_socket(local: (Ipv4Addr, u16), remote: Option<(Ipv4Addr, u16)>) -> io::Result<OwnedFd> {
    let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    let sa = sockaddr_in(local.0, local.1);
    // SAFETY: `sa` is a valid sockaddr_in of the length given.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sa as *const _ as *const libc::sockaddr,
            size_of::<libc::sockaddr_in>() as u32,
        )
    })
    .map_err(|e| with_context(e, &format!("cannot bind UDP {}:{}", local.0, local.1)))?;
    if let Some((addr, port)) = remote {
        let sa = sockaddr_in(addr, port);
        // SAFETY: as above.
        check(unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &sa as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as u32,
            )
        })
        .map_err(|e| with_context(e, &format!("cannot connect UDP to {addr}:{port}")))?;
    }
    Ok(fd)
}

/// Index of the interface named `name` in this network namespace.
///
/// # Errors
/// When there is no such interface.
pub fn interface_index(name: &str) -> io::Result<i32> {
    let cname = CString::new(name).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL byte")
    })?;
    // SAFETY: `cname` is a valid C string.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("interface {name:?} does not exist in this network namespace"),
        ));
    }
    Ok(index as i32)
}

fn interface_request(fd: RawFd, name: &str, request: libc::c_ulong) -> io::Result<libc::ifreq> {
    // SAFETY: an all-zero ifreq is valid (integers, and a null pointer in the union).
    let mut req: libc::ifreq = unsafe { zeroed() };
    for (dst, src) in req
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as libc::c_char;
    }
    // SAFETY: `req` is a valid ifreq for the SIOCGIF* requests used here.
    check(unsafe { libc::ioctl(fd, request as _, &mut req) })?;
    Ok(req)
}

/// Runs interface request `request` (an ioctl taking an ifreq whose data member points at
/// `data`, e.g. SIOCETHTOOL, SIOCSHWTSTAMP) on interface `name`.
///
/// # Errors
/// The OS error of the request.
///
/// # Safety
/// `data` must point at a live, writable structure of the type and size `request` expects.
pub unsafe fn interface_ioctl(
    name: &str,
    request: libc::c_ulong,
    data: *mut libc::c_void,
) -> io::Result<()> {
    let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    // SAFETY: an all-zero ifreq is valid (integers, and a null pointer in the union).
    let mut req: libc::ifreq = unsafe { zeroed() };
    for (dst, src) in req
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_data = data.cast();
    // SAFETY: `req` names the interface and points at the caller's structure for the request
    // (valid by this function's contract).
    check(unsafe { libc::ioctl(fd.as_raw_fd(), request as _, &mut req) }).map(drop)
}

/// `SIOCETHTOOL` from linux/sockios.h (not in the libc crate).
pub const SIOCETHTOOL: libc::c_ulong = 0x8946;

/// The TX (`tx`) or RX queues interface `name` has in use: the channels ethtool reports
/// (ETHTOOL_GCHANNELS: combined plus TX-only or RX-only channels), or where the driver does not
/// report channels, the `tx-N` / `rx-N` entries of /sys/class/net/NAME/queues.
///
/// # Errors
/// When neither can be read (no such interface).
pub fn interface_queues(name: &str, tx: bool) -> io::Result<u32> {
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    // struct ethtool_channels: cmd, max_rx, max_tx, max_other, max_combined, rx_count,
    // tx_count, other_count, combined_count
    let mut channels = [0u32; 9];
    channels[0] = ETHTOOL_GCHANNELS;
    // SAFETY: `channels` is a live struct ethtool_channels, which ETHTOOL_GCHANNELS fills.
    if unsafe { interface_ioctl(name, SIOCETHTOOL, channels.as_mut_ptr().cast()) }.is_ok() {
        let own = if tx { channels[6] } else { channels[5] };
        if own + channels[8] > 0 {
            return Ok(own + channels[8]);
        }
    }
    let prefix = if tx { "tx-" } else { "rx-" };
    let entries = std::fs::read_dir(format!("/sys/class/net/{name}/queues")).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot read the queues of interface {name}: {e}"),
        )
    })?;
    let count = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .count();
    Ok(count.max(1) as u32)
}

/// The name of the interface that holds IPv4 address `address` in this network namespace.
pub fn interface_with_address(address: Ipv4Addr) -> Option<String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates the list, freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list getifaddrs returned.
        let item = unsafe { &*entry };
        // SAFETY: a non-null ifa_addr points at a sockaddr of the list.
        if !item.ifa_addr.is_null() && unsafe { (*item.ifa_addr).sa_family } == libc::AF_INET as u16
        {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*(item.ifa_addr as *const libc::sockaddr_in) };
            if Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)) == address {
                // SAFETY: ifa_name is a C string.
                found = Some(
                    unsafe { std::ffi::CStr::from_ptr(item.ifa_name) }
                        .to_string_lossy()
                        .into_owned(),
                );
                break;
            }
        }
        entry = item.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// The local IPv4 address a socket is bound to (for a connected UDP socket: the address of
/// the route's interface).
///
/// # Errors
/// The OS error of getsockname.
pub fn local_address(fd: &OwnedFd) -> io::Result<Ipv4Addr> {
    // SAFETY: an all-zero sockaddr_in is valid (plain integers).
    let mut sa: libc::sockaddr_in = unsafe { zeroed() };
    let mut len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: getsockname writes at most `len` bytes into `sa`.
    check(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut sa as *mut libc::sockaddr_in).cast(),
            &mut len,
        )
    })?;
    Ok(Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)))
}

/// The MAC address and IPv4 address of interface `name`.
///
/// # Errors
/// When the interface does not exist or has no IPv4 address.
pub fn interface_addresses(name: &str) -> io::Result<([u8; 6], Ipv4Addr)> {
    let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    let hw = interface_request(fd.as_raw_fd(), name, libc::SIOCGIFHWADDR)
        .map_err(|e| with_context(e, &format!("cannot read the MAC address of {name:?}")))?;
    // SAFETY: SIOCGIFHWADDR filled the ifru_hwaddr member.
    let data = unsafe { hw.ifr_ifru.ifru_hwaddr.sa_data };
    let mut mac = [0u8; 6];
    for (m, d) in mac.iter_mut().zip(data.iter()) {
        *m = *d as u8;
    }
    let ip = interface_request(fd.as_raw_fd(), name, libc::SIOCGIFADDR)
        .map_err(|e| with_context(e, &format!("interface {name:?} has no IPv4 address")))?;
    // SAFETY: SIOCGIFADDR filled ifru_addr with a sockaddr_in.
    let sin: libc::sockaddr_in =
        unsafe { std::ptr::read(&ip.ifr_ifru.ifru_addr as *const _ as *const libc::sockaddr_in) };
    Ok((mac, Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))))
}

/// An AF_PACKET raw socket bound to interface `index`, receiving the frames of EtherType
/// `ethertype` (host order; `libc::ETH_P_ALL` for every frame, 0 for none: a socket that only
/// sends).
///
/// # Errors
/// When the socket cannot be created (needs CAP_NET_RAW) or bound.
pub fn packet_socket(index: i32, ethertype: u16) -> io::Result<OwnedFd> {
    let protocol = ethertype.to_be();
    let fd = socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(protocol))
        .map_err(|e| with_context(e, "cannot open an AF_PACKET socket (needs CAP_NET_RAW)"))?;
    // SAFETY: an all-zero sockaddr_ll is valid (plain integers).
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol;
    sll.sll_ifindex = index;
    // SAFETY: `sll` is a valid sockaddr_ll of the length given.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sll as *const _ as *const libc::sockaddr,
            size_of::<libc::sockaddr_ll>() as u32,
        )
    })
    .map_err(|e| with_context(e, "cannot bind the AF_PACKET socket"))?;
    Ok(fd)
}

/// `PACKET_IGNORE_OUTGOING` from linux/if_packet.h (not in the libc crate).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// Makes an AF_PACKET socket skip the frames the host sends out of its device (it then sees
/// only what arrives).
///
/// # Errors
/// When the kernel refuses the option (before Linux 4.20).
pub fn ignore_outgoing(fd: &OwnedFd) -> io::Result<()> {
    set_option(
        fd.as_raw_fd(),
        libc::SOL_PACKET,
        PACKET_IGNORE_OUTGOING,
        1i32,
    )
    .map_err(|e| with_context(e, "PACKET_IGNORE_OUTGOING"))
}

/// Makes reads and writes on `fd` return at once instead of waiting.
///
/// # Errors
/// The OS error of fcntl.
pub fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above; F_SETFL takes an int.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// `PACKET_VNET_HDR` from linux/if_packet.h.
const PACKET_VNET_HDR: libc::c_int = 15;
/// Bytes of the virtio-net header an AF_PACKET socket with `PACKET_VNET_HDR` puts first.
const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_GSO_UDP_L4`: a UDP GSO packet (segments of `gso_size` payload bytes).
const VNET_GSO_UDP_L4: u8 = 5;

/// Makes an AF_PACKET socket prefix every frame with a virtio-net header, which tells
/// whether the frame is a not-yet-segmented GSO packet (see [`split_vnet_header`]).
///
/// # Errors
/// When the kernel refuses the option.
pub fn enable_vnet_header(fd: &OwnedFd) -> io::Result<()> {
    set_option(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_VNET_HDR, 1i32)
}

/// Splits a frame read with `PACKET_VNET_HDR` into (UDP GSO segment size if it is an
/// unsegmented UDP GSO packet, the frame); `None` if too short.
pub fn split_vnet_header(bytes: &[u8]) -> Option<(Option<usize>, &[u8])> {
    let header = bytes.get(..VNET_HDR_LEN)?;
    let gso_size = usize::from(u16::from_ne_bytes([header[4], header[5]]));
    let gso = (header[1] & 0x7F == VNET_GSO_UDP_L4).then_some(gso_size);
    Some((gso, &bytes[VNET_HDR_LEN..]))
}

/// Makes an AF_PACKET socket report each frame's metadata in a `PACKET_AUXDATA` control
/// message, the VLAN tag the kernel kept out of the frame's bytes among it ([`Received::vlan`]).
///
/// # Errors
/// When the kernel refuses the option.
pub fn enable_auxdata(fd: &OwnedFd) -> io::Result<()> {
    set_option(fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_AUXDATA, 1i32)
}

/// Asks for large socket buffers (forcing past the sysctl limits where permitted).
pub fn set_buffers(fd: &OwnedFd, bytes: i32) {
    let fd = fd.as_raw_fd();
    for (force, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if set_option(fd, libc::SOL_SOCKET, force, bytes).is_err() {
            let _ = set_option(fd, libc::SOL_SOCKET, plain, bytes);
        }
    }
}

/// Turns on UDP generic segmentation offload: every later send of more than `segment` bytes
/// is cut by the kernel into datagrams of `segment` bytes, each its own frame on the wire.
///
/// # Errors
/// When the kernel lacks UDP GSO (before Linux 4.18).
pub fn enable_udp_gso(fd: &OwnedFd, segment: usize) -> io::Result<()> {
    set_option(
        fd.as_raw_fd(),
        libc::SOL_UDP,
        UDP_SEGMENT,
        segment as libc::c_int,
    )
}

/// Turns on UDP generic receive offload: the kernel may hand over several same-sized
/// datagrams of one flow as one message, with their size in a `UDP_GRO` control message
/// ([`Received::segment`]).
///
/// # Errors
/// When the kernel lacks UDP GRO (before Linux 5.0).
pub fn enable_udp_gro(fd: &OwnedFd) -> io::Result<()> {
    set_option(fd.as_raw_fd(), libc::SOL_UDP, UDP_GRO, 1i32)
}

/// Sends `buffer` as one message on a connected socket; returns the bytes sent.
///
/// # Errors
/// The OS error of the call.
pub fn send_bytes(fd: &OwnedFd, buffer: &[u8]) -> io::Result<usize> {
    // SAFETY: `buffer` is valid for reads of its length.
    let sent = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buffer.as_ptr() as *const libc::c_void,
            buffer.len(),
            0,
        )
    };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(sent as usize)
    }
}

/// Turns on the kernel's per-datagram receive timestamps (`SO_TIMESTAMPNS`, CLOCK_REALTIME).
///
/// # Errors
/// When the kernel refuses the option.
pub fn enable_receive_timestamps(fd: &OwnedFd) -> io::Result<()> {
    set_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1i32)
}

/// Turns on the drop counter and a receive timeout (timestamps: [`enable_receive_timestamps`],
/// or `SO_TIMESTAMPING`, see crate::timestamping).
///
/// # Errors
/// When the kernel refuses an option.
pub fn prepare_receive(fd: &OwnedFd, timeout: Duration) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    set_option(raw, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1i32)?;
    let tv = libc::timeval {
        tv_sec: timeout.as_secs() as _,
        tv_usec: timeout.subsec_micros() as _,
    };
    set_option(raw, libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv)
}

/// Datagrams the socket dropped for lack of buffer space since it was opened (the kernel's
/// `sk_drops`, read through `SO_MEMINFO`). The `SO_RXQ_OVFL` count only rides on datagrams
/// queued after a drop, so it is missing when nothing arrived after the overflow.
///
/// # Errors
/// When the kernel refuses the option.
pub fn socket_drops(fd: &OwnedFd) -> io::Result<u32> {
    const SO_MEMINFO: libc::c_int = 55;
    let mut info = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
    let mut len = size_of_val(&info) as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info` and stores the length it wrote.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    Ok(info[libc::SK_MEMINFO_DROPS as usize])
}

/// Sends `count` equally long messages, message `i` being `buffers[i * len..][..len]`, on a
/// connected or bound socket; returns how many the kernel took (blocking sockets take all).
///
/// # Errors
/// The OS error of the call (EINTR and ENOBUFS are the caller's to retry).
pub fn send_batch(fd: &OwnedFd, buffers: &mut [u8], len: usize, count: usize) -> io::Result<usize> {
    assert!(count <= MAX_BATCH && count * len <= buffers.len());
    // SAFETY: all-zero iovecs and mmsghdrs are valid (integers and null pointers).
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { zeroed() };
    let base = buffers.as_mut_ptr();
    for i in 0..count {
        iov[i] = libc::iovec {
            // SAFETY: i * len + len <= buffers.len() (asserted above).
            iov_base: unsafe { base.add(i * len) } as *mut libc::c_void,
            iov_len: len,
        };
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: every header points at a live iovec over `buffers`.
    let sent = unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs.as_mut_ptr(), count as u32, 0) };
    check(sent).map(|n| n as usize)
}

/// One received message of a [`RecvBatch`].
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Bytes received.
    pub len: usize,
    /// Kernel receive time (CLOCK_REALTIME ns), if the kernel attached one.
    pub time_ns: Option<u64>,
    /// The NIC's receive time (raw PHC ns), if hardware stamps were asked for and the NIC
    /// stamped the frame.
    pub hw_time_ns: Option<u64>,
    /// The socket's cumulative drop counter, if reported with this message.
    pub drops: Option<u32>,
    /// With UDP GRO: the size of each of the datagrams this message joins (the last may be
    /// shorter).
    pub segment: Option<usize>,
    /// With `PACKET_AUXDATA`: (TPID, TCI) of the VLAN tag the frame had in its skb's metadata,
    /// not in its bytes (see [`enable_auxdata`]).
    pub vlan: Option<(u16, u16)>,
}

/// (TPID, TCI) of the VLAN tag a `PACKET_AUXDATA` message reports, if the frame had one in its
/// metadata; 802.1Q when the kernel gives no TPID.
fn vlan_of(aux: &libc::tpacket_auxdata) -> Option<(u16, u16)> {
    if aux.tp_status & libc::TP_STATUS_VLAN_VALID == 0 {
        return None;
    }
    let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
        aux.tp_vlan_tpid
    } else {
        ETH_P_8021Q
    };
    Some((tpid, aux.tp_vlan_tci))
}

/// Buffers for receiving up to [`MAX_BATCH`] messages with one `recvmmsg`.
pub struct RecvBatch {
    capacity: usize,
    data: Vec<u8>,
    control: Vec<u8>,
    received: Vec<Received>,
}

impl RecvBatch {
    /// Room for [`MAX_BATCH`] messages of up to `capacity` bytes each.
    pub fn new(capacity: usize) -> Self {
        RecvBatch {
            capacity,
            data: vec![0; capacity * MAX_BATCH],
            control: vec![0; CMSG_SPACE * MAX_BATCH],
            received: Vec::with_capacity(MAX_BATCH),
        }
    }

    /// Receives what is queued (waiting up to the socket's receive timeout for the first
    /// message); returns the number of messages, 0 on timeout.
    ///
    /// # Errors
    /// OS errors other than timeout and EINTR.
    pub fn receive(&mut self, fd: &OwnedFd) -> io::Result<usize> {
        // SAFETY: all-zero iovecs and mmsghdrs are valid (integers and null pointers).
        let mut iov: [libc::iovec; MAX_BATCH] = unsafe { zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { zeroed() };
        let data = self.data.as_mut_ptr();
        let control = self.control.as_mut_ptr();
        for i in 0..MAX_BATCH {
            iov[i] = libc::iovec {
                // SAFETY: the offset stays within `data` (sized for MAX_BATCH messages).
                iov_base: unsafe { data.add(i * self.capacity) } as *mut libc::c_void,
                iov_len: self.capacity,
            };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            // SAFETY: the offset stays within `control` (sized for MAX_BATCH messages).
            msgs[i].msg_hdr.msg_control =
                unsafe { control.add(i * CMSG_SPACE) } as *mut libc::c_void;
            msgs[i].msg_hdr.msg_controllen = CMSG_SPACE;
        }
        // SAFETY: every header points at live buffers of the lengths given.
        let n = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                MAX_BATCH as u32,
                libc::MSG_WAITFORONE,
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
        for msg in msgs.iter_mut().take(n as usize) {
            let mut item = Received {
                len: msg.msg_len as usize,
                time_ns: None,
                hw_time_ns: None,
                drops: None,
                segment: None,
                vlan: None,
            };
            // SAFETY: the kernel filled msg_control with valid cmsgs up to msg_controllen.
            unsafe {
                let mut cmsg = libc::CMSG_FIRSTHDR(&msg.msg_hdr);
                while !cmsg.is_null() {
                    let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
                    if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS {
                        let ts: libc::timespec = std::ptr::read_unaligned(
                            libc::CMSG_DATA(cmsg) as *const libc::timespec
                        );
                        item.time_ns = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                    } else if level == libc::SOL_SOCKET && kind == libc::SO_TIMESTAMPING {
                        let ts: [libc::timespec; 3] = std::ptr::read_unaligned(
                            libc::CMSG_DATA(cmsg) as *const [libc::timespec; 3],
                        );
                        let ns = |t: libc::timespec| {
                            (t.tv_sec != 0 || t.tv_nsec != 0)
                                .then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
                        };
                        item.time_ns = ns(ts[0]);
                        item.hw_time_ns = ns(ts[2]);
                    } else if level == libc::SOL_SOCKET && kind == libc::SO_RXQ_OVFL {
                        item.drops =
                            Some(std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const u32));
                    } else if level == libc::SOL_UDP && kind == UDP_GRO {
                        let size =
                            std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::c_int);
                        item.segment = usize::try_from(size).ok().filter(|&s| s > 0);
                    } else if level == libc::SOL_PACKET && kind == libc::PACKET_AUXDATA {
                        let aux = std::ptr::read_unaligned(
                            libc::CMSG_DATA(cmsg) as *const libc::tpacket_auxdata
                        );
                        item.vlan = vlan_of(&aux);
                    }
                    cmsg = libc::CMSG_NXTHDR(&msg.msg_hdr, cmsg);
                }
            }
            self.received.push(item);
        }
        Ok(n as usize)
    }

    /// Message `i` of the last [`RecvBatch::receive`]: its metadata and bytes.
    pub fn message(&self, i: usize) -> (Received, &[u8]) {
        let item = self.received[i];
        let start = i * self.capacity;
        (item, &self.data[start..start + item.len.min(self.capacity)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auxdata_gives_the_vlan_tag_and_defaults_the_tpid() {
        // SAFETY: an all-zero tpacket_auxdata is valid (plain integers).
        let mut aux: libc::tpacket_auxdata = unsafe { zeroed() };
        assert_eq!(vlan_of(&aux), None);
        aux.tp_vlan_tci = 20;
        aux.tp_vlan_tpid = 0x88A8;
        assert_eq!(vlan_of(&aux), None, "no tag without TP_STATUS_VLAN_VALID");
        aux.tp_status = libc::TP_STATUS_VLAN_VALID;
        assert_eq!(vlan_of(&aux), Some((0x8100, 20)));
        aux.tp_status |= libc::TP_STATUS_VLAN_TPID_VALID;
        assert_eq!(vlan_of(&aux), Some((0x88A8, 20)));
        aux.tp_vlan_tci = 0; // VLAN 0 (a priority tag) is a tag too
        assert_eq!(vlan_of(&aux), Some((0x88A8, 0)));
    }

    #[test]
    fn cpu_affinity_lists_sets_and_puts_back_the_cpus() {
        let before = CpuAffinity::current().unwrap();
        let cpus = before.cpus();
        assert!(!cpus.is_empty(), "a running thread may use some CPU");
        let last = *cpus.last().unwrap();
        assert_eq!(CpuAffinity::only(last).unwrap().cpus(), vec![last]);
        assert!(CpuAffinity::only(libc::CPU_SETSIZE as usize).is_err());
        std::thread::spawn(move || {
            CpuAffinity::only(last).unwrap().apply().unwrap();
            assert_eq!(CpuAffinity::current().unwrap().cpus(), vec![last]);
            before.apply().unwrap();
            assert_eq!(CpuAffinity::current().unwrap().cpus(), cpus);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn socket_drops_counts_datagrams_a_full_receive_buffer_refused_with_none_read() {
        let receiver = udp_socket((Ipv4Addr::LOCALHOST, 0), None).unwrap();
        set_option(
            receiver.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            4096i32,
        )
        .unwrap();
        // SAFETY: an all-zero sockaddr_in is valid; getsockname writes at most `len` bytes.
        let mut sa: libc::sockaddr_in = unsafe { zeroed() };
        let mut len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: as above.
        check(unsafe {
            libc::getsockname(
                receiver.as_raw_fd(),
                (&mut sa as *mut libc::sockaddr_in).cast(),
                &mut len,
            )
        })
        .unwrap();
        let sender = udp_socket(
            (Ipv4Addr::LOCALHOST, 0),
            Some((Ipv4Addr::LOCALHOST, u16::from_be(sa.sin_port))),
        )
        .unwrap();
        assert_eq!(socket_drops(&receiver).unwrap(), 0);
        let mut buffers = vec![0u8; 64 * 200];
        let mut sent = 0;
        while sent < 200 {
            sent += send_batch(
                &sender,
                &mut buffers[sent * 64..],
                64,
                (200 - sent).min(MAX_BATCH),
            )
            .unwrap();
        }
        assert!(
            socket_drops(&receiver).unwrap() > 100,
            "a 4 KiB buffer holds only a few of 200 datagrams"
        );
    }
}
