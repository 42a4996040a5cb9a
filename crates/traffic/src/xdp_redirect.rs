//! The receiver's XDP program: IPv4 (no options) / UDP frames to one destination port go to
//! the AF_XDP socket of the queue they arrived on; every other frame (ARP, other ports, a
//! queue without a socket) goes on to the kernel stack.
//!
//! The program is 22 BPF instructions, assembled here and loaded with bpf(2), so no ELF
//! loader or C library is needed; the port is an immediate of the program. It is attached
//! through a BPF link (native XDP where the driver has it, generic XDP otherwise), which the
//! kernel detaches when the link's descriptor closes: when [`Redirect`] is dropped or the
//! process dies, whatever way, nothing stays attached. `bpftool prog` shows it as
//! `frerlab_xsk`, its map as `frerlab_xsks`.

use serde::Serialize;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// How the XDP program is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachMode {
    /// In the driver, before any socket buffer is allocated.
    Native,
    /// In the stack, after the socket buffer (any interface; slower).
    Generic,
}

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const XDP_PASS: i32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
/// Queues the XSKMAP has room for (frames on a queue beyond it go to the stack).
pub const MAX_QUEUES: u32 = 64;

/// One BPF instruction (`struct bpf_insn`; registers: destination in the low nibble).
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

const MOV64_REG: u8 = 0xbf;
const MOV64_IMM: u8 = 0xb7;
const ADD64_IMM: u8 = 0x07;
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const JGT_REG: u8 = 0x2d;
const JNE_IMM: u8 = 0x55;
const LD_IMM64: u8 = 0x18;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
/// `BPF_PSEUDO_MAP_FD`: the immediate of a 64-bit load is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;

/// The program for UDP port `port`, with the XSKMAP `map_fd`. Registers: r1 the context
/// (`struct xdp_md`: data at 0, data_end at 4, rx_queue_index at 16), r2 the frame.
fn program(port: u16, map_fd: i32) -> [Insn; 22] {
    // A 16-bit load reads network byte order as little-endian: compare with swapped constants.
    let be16 = |v: u16| i32::from(u16::from_le_bytes(v.to_be_bytes()));
    const PASS: i16 = 20;
    let to_pass = |at: i16| PASS - (at + 1);
    [
        insn(MOV64_REG, 6, 1, 0, 0),                   // 0: r6 = ctx
        insn(LDX_W, 2, 1, 0, 0),                       // 1: r2 = data
        insn(LDX_W, 3, 1, 4, 0),                       // 2: r3 = data_end
        insn(MOV64_REG, 4, 2, 0, 0),                   // 3: r4 = data
        insn(ADD64_IMM, 4, 0, 0, 38), // 4: r4 += Ethernet + IPv4 + UDP up to the port
        insn(JGT_REG, 4, 3, to_pass(5), 0), // 5: too short: pass
        insn(LDX_H, 4, 2, 12, 0),     // 6: EtherType
        insn(JNE_IMM, 4, 0, to_pass(7), be16(0x0800)), // 7: not IPv4: pass
        insn(LDX_B, 4, 2, 14, 0),     // 8: version and header length
        insn(JNE_IMM, 4, 0, to_pass(9), 0x45), // 9: options: pass
        insn(LDX_B, 4, 2, 23, 0),     // 10: protocol
        insn(JNE_IMM, 4, 0, to_pass(11), 17), // 11: not UDP: pass
        insn(LDX_H, 4, 2, 36, 0),     // 12: UDP destination port
        insn(JNE_IMM, 4, 0, to_pass(13), be16(port)), // 13: another port: pass
        insn(LDX_W, 2, 6, 16, 0),     // 14: r2 = rx_queue_index
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd), // 15: r1 = the XSKMAP
        insn(0, 0, 0, 0, 0),          // 16: (second half of the 64-bit load)
        insn(MOV64_IMM, 3, 0, 0, XDP_PASS), // 17: no socket on this queue: pass
        insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP), // 18: r0 = bpf_redirect_map(r1, r2, r3)
        insn(EXIT, 0, 0, 0, 0),       // 19
        insn(MOV64_IMM, 0, 0, 0, XDP_PASS), // 20 (PASS): r0 = XDP_PASS
        insn(EXIT, 0, 0, 0, 0),       // 21
    ]
}

/// `union bpf_attr` as 128 zeroed bytes, filled field by field at the kernel's offsets.
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }

    fn u32(mut self, offset: usize, value: u32) -> Attr {
        self.0[offset..offset + 4].copy_from_slice(&value.to_ne_bytes());
        self
    }

    fn u64(mut self, offset: usize, value: u64) -> Attr {
        self.0[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
        self
    }

    /// An object name (at most 15 bytes, NUL-padded), as `bpftool` shows it.
    fn name(mut self, offset: usize, name: &str) -> Attr {
        self.0[offset..offset + name.len().min(15)]
            .copy_from_slice(&name.as_bytes()[..name.len().min(15)]);
        self
    }

    fn call(&self, command: libc::c_long) -> io::Result<libc::c_long> {
        // SAFETY: bpf(2) reads (and for some commands writes) at most the size given; every
        // pointer stored in the attribute outlives the call.
        let r =
            unsafe { libc::syscall(libc::SYS_bpf, command, self.0.as_ptr(), self.0.len() as u32) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    fn fd(&self, command: libc::c_long) -> io::Result<OwnedFd> {
        // SAFETY: these commands return a new descriptor nothing else owns.
        self.call(command)
            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
}

/// The redirect program attached to an interface, with its XSKMAP.
pub struct Redirect {
    map: OwnedFd,
    prog: OwnedFd,
    link: Option<OwnedFd>,
    attach: Option<AttachMode>,
}

impl Redirect {
    /// Creates the XSKMAP and loads the program for UDP port `port` (not attached yet).
    ///
    /// # Errors
    /// When the kernel refuses the map or the program (the verifier's log is in the message).
    pub fn load(port: u16) -> io::Result<Redirect> {
        let map = Attr::new().u32(0, BPF_MAP_TYPE_XSKMAP).u32(4, 4).u32(8, 4).u32(12, MAX_QUEUES).name(28, "frerlab_xsks").fd(BPF_MAP_CREATE).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create an XSKMAP (needs CAP_BPF or root, and AF_XDP in the kernel): {e}"))
        })?;
        let insns = program(port, map.as_raw_fd());
        let license = c"GPL";
        let mut log = vec![0u8; 65_536];
        let prog = Attr::new()
            .u32(0, BPF_PROG_TYPE_XDP)
            .u32(4, insns.len() as u32)
            .u64(8, insns.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .u32(24, 1)
            .u32(28, log.len() as u32)
            .u64(32, log.as_mut_ptr() as u64)
            .name(48, "frerlab_xsk")
            .u32(68, BPF_XDP)
            .fd(BPF_PROG_LOAD)
            .map_err(|e| {
                let text =
                    String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)])
                        .into_owned();
                io::Error::new(
                    e.kind(),
                    format!(
                        "the kernel refused the XDP redirect program: {e}; verifier: {}",
                        text.trim()
                    ),
                )
            })?;
        Ok(Redirect {
            map,
            prog,
            link: None,
            attach: None,
        })
    }

    /// Puts the AF_XDP socket `xsk` (bound to `queue`) into the map.
    ///
    /// # Errors
    /// When the kernel refuses (e.g. the socket is not bound).
    pub fn insert(&self, queue: u32, xsk: &OwnedFd) -> io::Result<()> {
        let key = queue;
        let value = xsk.as_raw_fd() as u32;
        Attr::new()
            .u32(0, self.map.as_raw_fd() as u32)
            .u64(8, &key as *const u32 as u64)
            .u64(16, &value as *const u32 as u64)
            .call(BPF_MAP_UPDATE_ELEM)
            .map(drop)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot put the AF_XDP socket into the XSKMAP: {e}"),
                )
            })
    }

    /// Attaches the program to interface `ifindex` (`name` for messages): native XDP where
    /// the driver has it, generic otherwise.
    ///
    /// # Errors
    /// When neither attaches; an interface with an XDP program already is named as such.
    pub fn attach(&mut self, ifindex: u32, name: &str) -> io::Result<AttachMode> {
        let mut last = None;
        for (mode, flags) in [
            (AttachMode::Native, XDP_FLAGS_DRV_MODE),
            (AttachMode::Generic, XDP_FLAGS_SKB_MODE),
        ] {
            match Attr::new().u32(0, self.prog.as_raw_fd() as u32).u32(4, ifindex).u32(8, BPF_XDP).u32(12, flags).fd(BPF_LINK_CREATE) {
                Ok(link) => {
                    self.link = Some(link);
                    self.attach = Some(mode);
                    return Ok(mode);
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EEXIST)) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("interface {name} has an XDP program already (the FRER data plane's XDP hook?): detach it, or receive with --mode raw"),
                    ))
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.expect("two attempts were made");
        Err(io::Error::new(
            e.kind(),
            format!("cannot attach an XDP program to {name} (native or generic): {e}"),
        ))
    }

    /// How the program was attached, once it is.
    pub fn attach_mode(&self) -> Option<AttachMode> {
        self.attach
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_jumps_to_pass_and_the_constants_are_in_network_order() {
        let prog = program(5555, 7);
        for (at, insn) in prog.iter().enumerate() {
            if matches!(insn.code, JGT_REG | JNE_IMM) {
                assert_eq!(
                    at as i16 + 1 + insn.off,
                    20,
                    "instruction {at} jumps to PASS"
                );
            }
        }
        assert_eq!(
            (prog[20].code, prog[20].imm, prog[21].code),
            (MOV64_IMM, XDP_PASS, EXIT)
        );
        // 0x0800 on the wire is the bytes 08 00, read by a little-endian 16-bit load as 0x0008
        assert_eq!(prog[7].imm, 0x0008);
        assert_eq!(
            prog[13].imm,
            i32::from(u16::from_le_bytes(5555u16.to_be_bytes()))
        );
        assert_eq!(
            (prog[15].code, prog[15].regs, prog[15].imm),
            (LD_IMM64, 1 | (PSEUDO_MAP_FD << 4), 7)
        );
    }
}
