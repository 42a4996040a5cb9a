//! The baseline of the traffic benchmark: the barest UDP sender, a `sendmmsg` loop of fixed
//! 18-byte payloads (64-byte frames) with no pacing, no per-packet writes and no accounting.
//!
//! Usage: `bare_sendmmsg DEST_IP PORT SECONDS [BATCH]`; prints `{"frames_sent": N, "elapsed_s": S}`.

use frerlab_traffic::sys;
use std::net::Ipv4Addr;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bare_sendmmsg DEST_IP PORT SECONDS [BATCH]");
        std::process::exit(2);
    }
    let dest: Ipv4Addr = args[1].parse().expect("DEST_IP must be an IPv4 address");
    let port: u16 = args[2].parse().expect("PORT must be 0..=65535");
    let seconds: f64 = args[3].parse().expect("SECONDS must be a number");
    let batch: usize = args.get(4).map_or(32, |b| b.parse().expect("BATCH must be 1..=64"));
    let socket = sys::udp_socket((Ipv4Addr::UNSPECIFIED, 0), Some((dest, port))).expect("UDP socket");
    sys::set_buffers(&socket, 4 << 20);
    let len = 18;
    let mut buffers = vec![0xA5u8; len * batch];
    let start = sys::monotonic_ns();
    let end = start + (seconds * 1e9) as u64;
    let mut sent = 0u64;
    while sys::monotonic_ns() < end {
        match sys::send_batch(&socket, &mut buffers, len, batch) {
            Ok(n) => sent += n as u64,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR)) => {}
            Err(e) => panic!("sendmmsg failed: {e}"),
        }
    }
    let elapsed = (sys::monotonic_ns() - start) as f64 / 1e9;
    println!("{{\"frames_sent\": {sent}, \"elapsed_s\": {elapsed}}}");
}
