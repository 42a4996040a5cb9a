//! frerlab's eBPF loader, on libbpf (through libbpf-rs, with its vendored libbpf): what the
//! data plane, the impairment element and their tests need from the kernel, and nothing else.
//!
//! - [`object`]: load an ELF object (the verifier included; libbpf reads the object's BTF, which
//!   `bpf/Makefile` builds with `-g`) and pin its programs and maps, reusing maps pinned by
//!   another object; create a pinned map of a given type.
//! - [`pinned`]: pinned maps (lookup and update, one element or a batch, with flags such as
//!   `BPF_F_LOCK`) and programs (`BPF_PROG_TEST_RUN`, run-time statistics, JIT line table), and
//!   switching those statistics on.
//! - [`attach`]: tc clsact hooks (direct action) and XDP, through libbpf's own netlink, in a
//!   network namespace by way of a short-lived thread that enters it. Attachments are netlink
//!   ones, not BPF links, so they stay after the loading process exits.
//!
//! Every error names what was being done (object, program, map, port) and carries libbpf's own
//! messages, which libbpf prints through a callback this crate collects ([`with_log`]): for a
//! program the verifier refuses, the end of the verifier's log.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod attach;
pub mod object;
pub mod pinned;

use std::fmt;
use std::io;
use std::sync::{Mutex, Once};

/// What went wrong, said for a person: what was being done, to what, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A value the caller gave that cannot be valid (a wrong size, an unknown name).
    Invalid(String),
    /// A kernel or libbpf operation that failed; `errno` where it is known exactly.
    Os { errno: Option<i32>, message: String },
}

impl Error {
    /// A failure of `what` with the errno of `err`, if it has one.
    pub fn io(what: impl fmt::Display, err: &io::Error) -> Self {
        Error::Os {
            errno: err.raw_os_error(),
            message: format!("{what}: {err}"),
        }
    }

    /// A failure of `what` with errno `errno`, a positive `E...` value.
    pub fn errno(what: impl fmt::Display, errno: i32) -> Self {
        Error::io(what, &io::Error::from_raw_os_error(errno))
    }

    /// A failure of `what` reported by libbpf-rs (which keeps no errno to hand on).
    pub fn libbpf(what: impl fmt::Display, err: &libbpf_rs::Error) -> Self {
        Error::Os {
            errno: None,
            message: format!("{what}: {err:#}"),
        }
    }

    /// This error with libbpf's messages `log` (their last `lines` lines) appended.
    pub fn with_log(self, log: &str, lines: usize) -> Self {
        let tail = tail(log, lines);
        if tail.is_empty() {
            return self;
        }
        match self {
            Error::Os { errno, message } => Error::Os {
                errno,
                message: format!("{message}\n{tail}"),
            },
            Error::Invalid(message) => Error::Invalid(format!("{message}\n{tail}")),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid(message) | Error::Os { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

/// The loader's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// The most of libbpf's messages kept for one operation: a verifier log can run to megabytes,
/// and only its end goes into an error.
const LOG_LIMIT: usize = 1 << 20;

static LOG: Mutex<String> = Mutex::new(String::new());
static PRINT: Once = Once::new();

fn collect(_level: libbpf_rs::PrintLevel, message: String) {
    let mut log = LOG.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    log.push_str(&message);
    if log.len() > LOG_LIMIT {
        let mut cut = log.len() - LOG_LIMIT / 2;
        while !log.is_char_boundary(cut) {
            cut += 1;
        }
        log.drain(..cut);
    }
}

/// Runs `f` and returns, beside its result, the warnings libbpf printed meanwhile (libbpf
/// prints through a process-wide callback, installed here on first use, so nothing reaches
/// stderr; a verifier log is such a warning).
pub fn with_log<T>(f: impl FnOnce() -> T) -> (T, String) {
    PRINT.call_once(|| {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, collect)));
    });
    LOG.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clear();
    let result = f();
    let log = std::mem::take(&mut *LOG.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    (result, log)
}

/// The last `lines` non-empty lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let kept: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    kept[kept.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_non_empty_lines() {
        assert_eq!(tail("a\n\nb\nc\n\n", 2), "b\nc");
        assert_eq!(tail("a\nb", 5), "a\nb");
        assert_eq!(tail("", 3), "");
    }

    #[test]
    fn an_error_names_its_errno_and_carries_the_log() {
        let err = Error::errno("opening x", libc::ENOENT).with_log("libbpf: one\nlibbpf: two\n", 1);
        let Error::Os { errno, message } = err else {
            panic!("not an OS error")
        };
        assert_eq!(errno, Some(libc::ENOENT));
        assert!(
            message.starts_with("opening x: No such file or directory"),
            "{message}"
        );
        assert!(message.ends_with("\nlibbpf: two"), "{message}");
    }
}
