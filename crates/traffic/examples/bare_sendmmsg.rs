//! The baseline of the traffic benchmark: the barest UDP sender, a `sendmmsg` loop of fixed
//! payloads (18 bytes, a 64-byte frame, unless FRAME_BYTES says otherwise) with no pacing, no
//! per-packet writes and no accounting.
//!
//! Usage: `bare_sendmmsg DEST_IP PORT SECONDS [BATCH [FRAME_BYTES]]`; prints
//! `{"frames_sent": N, "elapsed_s": S, "cpu_s": C}` (C: the process's user + system time).

#![warn(clippy::undocumented_unsafe_blocks)]

use frerlab_traffic::sys;
use std::net::Ipv4Addr;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bare_sendmmsg DEST_IP PORT SECONDS [BATCH [FRAME_BYTES]]");
        std::process::exit(2);
    }
    let dest: Ipv4Addr = args[1].parse().expect("DEST_IP must be an IPv4 address");
    let port: u16 = args[2].parse().expect("PORT must be 0..=65535");
    let seconds: f64 = args[3].parse().expect("SECONDS must be a number");
    let batch: usize = args
        .get(4)
        .map_or(32, |b| b.parse().expect("BATCH must be 1..=64"));
    let socket =
        sys::udp_socket((Ipv4Addr::UNSPECIFIED, 0), Some((dest, port))).expect("UDP socket");
    sys::set_buffers(&socket, 4 << 20);
    let frame: usize = args
        .get(5)
        .map_or(64, |f| f.parse().expect("FRAME_BYTES must be 64..=1518"));
    assert!(
        (64..=1518).contains(&frame),
        "FRAME_BYTES {frame} is out of range (64..=1518)"
    );
    let len = frame - 46;
    let mut buffers = vec![0xA5u8; len * batch];
    let start = sys::monotonic_ns();
    let end = start + (seconds * 1e9) as u64;
    let mut sent = 0u64;
    while sys::monotonic_ns() < end {
        match sys::send_batch(&socket, &mut buffers, len, batch) {
            Ok(n) => sent += n as u64,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR)
                ) => {}
            Err(e) => panic!("sendmmsg failed: {e}"),
        }
    }
    let elapsed = (sys::monotonic_ns() - start) as f64 / 1e9;
    // SAFETY: an all-zero rusage is valid (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    println!("{{\"frames_sent\": {sent}, \"elapsed_s\": {elapsed}, \"cpu_s\": {cpu}}}");
}
