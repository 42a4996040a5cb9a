//! Attaching pinned programs to ports through libbpf's own netlink: a clsact qdisc with a BPF
//! filter in direct-action mode on its ingress or egress hook (`bpf_tc_hook_create`,
//! `bpf_tc_attach`), or an XDP program in native or generic mode (`bpf_xdp_attach`). These
//! are netlink attachments, not BPF links: they stay after the process that made them exits,
//! until [`detach`] (or the port's namespace) removes them.
//!
//! A port is named in a network namespace (`/run/netns/NAME`, as `ip netns` makes them; None:
//! the caller's). The netlink work runs on a short-lived thread that enters that namespace
//! first (setns(2) moves only the calling thread), so the caller stays where it is.
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use libbpf_rs::libbpf_sys;
use libbpf_rs::{TcHook, Xdp, XdpFlags};

use crate::pinned::PinnedProgram;
use crate::{with_log, Error, Result};

/// How many lines of libbpf's messages (the kernel's netlink error text) an error carries.
const LOG_LINES: usize = 5;

/// Runs `f` inside network namespace `netns` (None: here), on a thread of its own that enters
/// it and ends with `f`.
///
/// # Errors
/// A namespace name that is not a plain name, a namespace that does not exist, or `f`'s error.
pub fn in_netns<T: Send>(netns: Option<&str>, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let Some(name) = netns else { return f() };
    let target = netns_file(name)?;
    std::thread::scope(|scope| {
        let thread = scope.spawn(move || {
            // SAFETY: setns(2) on a descriptor we own; it affects this thread only.
            if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(Error::io(
                    format!("entering network namespace {name}"),
                    &std::io::Error::last_os_error(),
                ));
            }
            f()
        });
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The open `/run/netns/NAME` of namespace `name`.
fn netns_file(name: &str) -> Result<File> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(Error::Invalid(format!(
            "network namespace name {name:?} is not valid (a plain file name under /run/netns)"
        )));
    }
    let path = Path::new("/run/netns").join(name);
    File::open(&path).map_err(|err| {
        Error::io(
            format!("network namespace {name} ({})", path.display()),
            &err,
        )
    })
}

/// Where a port is, for messages: "PORT" or "PORT in network namespace NS".
fn port_in(netns: Option<&str>, port: &str) -> String {
    match netns {
        Some(ns) => format!("{port} in network namespace {ns}"),
        None => port.to_owned(),
    }
}

/// The interface index of `port` in the calling thread's namespace.
fn ifindex_here(netns: Option<&str>, port: &str) -> Result<i32> {
    let name = CString::new(port)
        .map_err(|_| Error::Invalid(format!("port name {port:?} contains a NUL byte")))?;
    // SAFETY: a NUL-terminated name.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(Error::errno(
            format!("no interface {}", port_in(netns, port)),
            libc::ENODEV,
        )),
        index => Ok(index as i32),
    }
}

/// The interface index of `port` in `netns`.
///
/// # Errors
/// No such namespace or interface.
pub fn ifindex(netns: Option<&str>, port: &str) -> Result<u32> {
    in_netns(netns, || ifindex_here(netns, port)).map(|i| i as u32)
}

/// A tc hook on `ifindex`: `attach_point` one of libbpf's BPF_TC_INGRESS, BPF_TC_EGRESS or
/// both (the clsact qdisc itself).
fn tc_hook(ifindex: i32, attach_point: libbpf_sys::bpf_tc_attach_point) -> libbpf_sys::bpf_tc_hook {
    libbpf_sys::bpf_tc_hook {
        sz: std::mem::size_of::<libbpf_sys::bpf_tc_hook>() as _,
        ifindex,
        attach_point,
        ..Default::default()
    }
}

/// Adds a clsact qdisc to `port`.
///
/// # Errors
/// Refuses a port that has a clsact qdisc already (another data plane or tc program is
/// attached there), saying how to remove it; or the kernel's refusal.
pub fn add_clsact(netns: Option<&str>, port: &str) -> Result<()> {
    let (added, log) = with_log(|| {
        in_netns(netns, || {
            let mut hook = tc_hook(
                ifindex_here(netns, port)?,
                libbpf_sys::BPF_TC_INGRESS | libbpf_sys::BPF_TC_EGRESS,
            );
            // SAFETY: a hook set up by tc_hook.
            match unsafe { libbpf_sys::bpf_tc_hook_create(&mut hook) } {
                0 => Ok(()),
                rc if -rc == libc::EEXIST => Err(Error::errno(
                    format!("port {} already has a clsact qdisc (another data plane or tc program is attached); \
                             remove it first (frerlab dataplane down, or tc qdisc del dev {port} clsact)", port_in(netns, port)),
                    libc::EEXIST,
                )),
                rc => Err(Error::errno(format!("adding a clsact qdisc to {}", port_in(netns, port)), -rc)),
            }
        })
    });
    added.map_err(|err| err.with_log(&log, LOG_LINES))
}

/// Attaches pinned tc program `prog` to `port`'s clsact `hook` ("ingress" or "egress") in
/// direct-action mode; the port's clsact qdisc must exist ([`add_clsact`]).
///
/// # Errors
/// An unknown hook, no such program or port, or the kernel's refusal.
pub fn attach_tc(netns: Option<&str>, port: &str, prog: &Path, hook: &str) -> Result<()> {
    let point = match hook {
        "ingress" => libbpf_rs::TC_INGRESS,
        "egress" => libbpf_rs::TC_EGRESS,
        _ => {
            return Err(Error::Invalid(format!(
                "tc hook {hook:?} is not valid (ingress, egress)"
            )))
        }
    };
    let program = PinnedProgram::open(prog)?;
    let (attached, log) = with_log(|| {
        in_netns(netns, || {
            let index = ifindex_here(netns, port)?;
            TcHook::new(program.fd())
                .ifindex(index)
                .attach_point(point)
                .attach()
                .map(drop)
                .map_err(|err| {
                    Error::libbpf(
                        format!(
                            "attaching {} to tc {hook} of {}",
                            prog.display(),
                            port_in(netns, port)
                        ),
                        &err,
                    )
                })
        })
    });
    attached.map_err(|err| err.with_log(&log, LOG_LINES))
}

/// The XDP attach flags of `mode`: "native" (the driver's) or "generic" (on the skb).
fn xdp_mode(mode: &str) -> Result<XdpFlags> {
    match mode {
        "native" => Ok(XdpFlags::DRV_MODE),
        "generic" => Ok(XdpFlags::SKB_MODE),
        _ => Err(Error::Invalid(format!(
            "XDP mode {mode:?} is not valid (native, generic)"
        ))),
    }
}

/// The XDP programs attached to `ifindex`, per mode: (native id, generic id), 0 for none.
fn xdp_attached(ifindex: i32, where_: &str) -> Result<(u32, u32)> {
    let mut info = libbpf_sys::bpf_xdp_query_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_xdp_query_opts>() as _,
        ..Default::default()
    };
    // SAFETY: `info` is a bpf_xdp_query_opts with its size set.
    let rc = unsafe { libbpf_sys::bpf_xdp_query(ifindex, 0, &mut info) };
    if rc < 0 {
        return Err(Error::errno(format!("querying XDP on {where_}"), -rc));
    }
    Ok((info.drv_prog_id, info.skb_prog_id))
}

/// Attaches pinned XDP program `prog` to `port` in `mode` ("native" or "generic").
///
/// # Errors
/// Refuses a port that has an XDP program already (errno EBUSY), saying how to remove it; an
/// unknown mode, no such program or port, or the kernel's refusal (a driver without native
/// XDP, say).
pub fn attach_xdp(netns: Option<&str>, port: &str, prog: &Path, mode: &str) -> Result<()> {
    let flags = xdp_mode(mode)?;
    let program = PinnedProgram::open(prog)?;
    let (attached, log) = with_log(|| {
        in_netns(netns, || {
            let index = ifindex_here(netns, port)?;
            let where_ = port_in(netns, port);
            if xdp_attached(index, &where_)? != (0, 0) {
                return Err(Error::errno(
                    format!("port {where_} has an XDP program already; remove it first (frerlab dataplane down, \
                             or ip link set dev {port} xdp off)"),
                    libc::EBUSY,
                ));
            }
            Xdp::new(program.fd())
                .attach(index, XdpFlags::UPDATE_IF_NOEXIST | flags)
                .map_err(|err| {
                    Error::libbpf(
                        format!("attaching {} to {where_} as {mode} XDP", prog.display()),
                        &err,
                    )
                })
        })
    });
    attached.map_err(|err| err.with_log(&log, LOG_LINES))
}

/// Removes `port`'s clsact qdisc with every filter on it, and its XDP program in either mode;
/// quiet where they (or the port, or its namespace) are gone already.
///
/// # Errors
/// The kernel refusing a removal for another reason than its being gone.
pub fn detach(netns: Option<&str>, port: &str) -> Result<()> {
    if let Some(name) = netns {
        if !Path::new("/run/netns").join(name).exists() {
            return Ok(());
        }
    }
    let (detached, log) = with_log(|| {
        in_netns(netns, || {
            let Ok(index) = ifindex_here(netns, port) else {
                return Ok(());
            };
            let where_ = port_in(netns, port);
            let mut clsact = tc_hook(
                index,
                libbpf_sys::BPF_TC_INGRESS | libbpf_sys::BPF_TC_EGRESS,
            );
            // SAFETY: a hook set up by tc_hook.
            let rc = unsafe { libbpf_sys::bpf_tc_hook_destroy(&mut clsact) };
            if rc < 0 && ![libc::ENOENT, libc::EINVAL, libc::ENODEV].contains(&-rc) {
                return Err(Error::errno(
                    format!("removing the clsact qdisc of {where_}"),
                    -rc,
                ));
            }
            detach_xdp(index, &where_)
        })
    });
    detached.map_err(|err| err.with_log(&log, LOG_LINES))
}

/// Removes the XDP programs of `ifindex`, in each mode that has one.
fn detach_xdp(ifindex: i32, where_: &str) -> Result<()> {
    let (native, generic) = xdp_attached(ifindex, where_)?;
    for (id, flags, mode) in [
        (native, XdpFlags::DRV_MODE, "native"),
        (generic, XdpFlags::SKB_MODE, "generic"),
    ] {
        if id == 0 {
            continue;
        }
        // SAFETY: no options.
        let rc = unsafe { libbpf_sys::bpf_xdp_detach(ifindex, flags.bits(), std::ptr::null()) };
        if rc < 0 && -rc != libc::ENODEV {
            return Err(Error::errno(
                format!("removing the {mode} XDP program of {where_}"),
                -rc,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_are_plain_file_names() {
        for bad in ["", ".", "..", "a/b", "../x"] {
            let Err(Error::Invalid(message)) = netns_file(bad) else {
                panic!("{bad:?} accepted")
            };
            assert!(message.contains(&format!("{bad:?}")), "{message}");
        }
    }

    #[test]
    fn a_missing_namespace_is_named_and_detach_is_quiet_about_it() {
        let name = format!("frerlab-no-such-ns-{}", std::process::id());
        let err = ifindex(Some(&name), "lo").unwrap_err();
        assert!(err.to_string().contains(&name), "{err}");
        assert_eq!(detach(Some(&name), "lo"), Ok(()));
    }

    #[test]
    fn a_missing_port_is_named() {
        let err = ifindex(None, "frerlab-no-such-port").unwrap_err();
        assert!(
            err.to_string()
                .contains("no interface frerlab-no-such-port"),
            "{err}"
        );
        assert_eq!(ifindex(None, "lo").unwrap(), 1);
    }

    #[test]
    fn hooks_and_modes_are_refused_by_name() {
        let err = attach_tc(None, "lo", Path::new("/nonexistent"), "sideways").unwrap_err();
        assert!(err.to_string().contains("\"sideways\""), "{err}");
        assert!(xdp_mode("offload")
            .err()
            .unwrap()
            .to_string()
            .contains("\"offload\""));
    }
}
