//! Pinned maps and programs, opened by path: map elements read and written one at a time (with
//! flags such as `BPF_F_LOCK`) or in batches, a program run on a crafted frame
//! (`BPF_PROG_TEST_RUN`), its run-time statistics and its JIT line table (for profiles by source
//! line), and [`RunTimeStats`], which keeps those statistics counted while it lives.
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::{Error, Result};

/// `struct __sk_buff` (linux/bpf.h): its size and the offset of `ingress_ifindex`.
const SK_BUFF_SIZE: usize = 192;
const SK_BUFF_INGRESS_IFINDEX: usize = 36;
/// Room a test run's output frame has beyond the input (for tags a program pushes).
const DATA_OUT_HEADROOM: usize = 256;

fn map_flags(flags: u64) -> Result<MapFlags> {
    MapFlags::from_bits(flags).ok_or_else(|| {
        Error::Invalid(format!("map flags {flags:#x} are not valid (BPF_ANY 0, BPF_NOEXIST 1, BPF_EXIST 2, BPF_F_LOCK 4)"))
    })
}

/// A map pinned in a BPF filesystem.
#[derive(Debug)]
pub struct PinnedMap {
    map: MapHandle,
    path: PathBuf,
    cpus: usize,
}

impl PinnedMap {
    /// Opens the map pinned at `path`.
    ///
    /// # Errors
    /// Nothing is pinned there, or it is no map.
    pub fn open(path: &Path) -> Result<Self> {
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::Invalid(format!(
                "map path {path:?} contains a NUL byte"
            )));
        }
        let map = MapHandle::from_pinned_path(path)
            .map_err(|err| Error::libbpf(format!("opening pinned map {}", path.display()), &err))?;
        let cpus = if map.map_type().is_percpu() {
            libbpf_rs::num_possible_cpus().unwrap_or(1)
        } else {
            1
        };
        Ok(PinnedMap {
            map,
            path: path.to_owned(),
            cpus,
        })
    }

    /// Where it is pinned.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The map's name (its pin's file name).
    fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The size of a key.
    pub fn key_size(&self) -> usize {
        self.map.key_size() as usize
    }

    /// The size of a value as read and written here: for a per-CPU map, every possible CPU's
    /// value one after another.
    pub fn value_size(&self) -> usize {
        self.map.value_size() as usize * self.cpus
    }

    /// libbpf's name of the map's type (`array`, `hash`, `percpu_hash`, ...).
    pub fn kind(&self) -> String {
        crate::object::map_type_name(self.map.map_type())
    }

    /// The map's `max_entries`.
    pub fn max_entries(&self) -> u32 {
        self.map.max_entries()
    }

    /// Bytes of memory the kernel charges to the map (`memlock` of its descriptor's fdinfo,
    /// what bpftool shows as bytes_memlock): what it has allocated, elements included.
    ///
    /// # Errors
    /// The fdinfo cannot be read or has no memlock line.
    pub fn memlock(&self) -> Result<u64> {
        let path = format!("/proc/self/fdinfo/{}", self.fd());
        let text = std::fs::read_to_string(&path).map_err(|err| Error::io(&path, &err))?;
        text.lines()
            .find_map(|line| line.strip_prefix("memlock:"))
            .and_then(|value| value.trim().parse().ok())
            .ok_or_else(|| Error::Invalid(format!("{path} has no memlock line")))
    }

    /// The map's file descriptor (to put the map into a map of maps).
    pub fn fd(&self) -> i32 {
        self.map.as_fd().as_raw_fd()
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() != self.key_size() {
            return Err(Error::Invalid(format!(
                "key of {} bytes for map {} (needs {})",
                key.len(),
                self.name(),
                self.key_size()
            )));
        }
        Ok(())
    }

    /// The value at `key`; `flags` `BPF_F_LOCK` reads it under its spin lock, so it is not torn.
    ///
    /// # Errors
    /// A key of the wrong size, no element at `key`, or the kernel refusing the read.
    pub fn lookup(&self, key: &[u8], flags: u64) -> Result<Vec<u8>> {
        self.check_key(key)?;
        let flags = map_flags(flags)?;
        let what = || format!("reading {}[{}]", self.name(), hex(key));
        let value = if self.map.map_type().is_percpu() {
            self.map
                .lookup_percpu(key, flags)
                .map(|v| v.map(|cpus| cpus.concat()))
        } else {
            self.map.lookup(key, flags)
        };
        value
            .map_err(|err| Error::libbpf(what(), &err))?
            .ok_or_else(|| Error::errno(what(), libc::ENOENT))
    }

    /// Writes `value` (every CPU's, for a per-CPU map) at `key`.
    ///
    /// # Errors
    /// A key or value of the wrong size, or the kernel refusing the write.
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        self.check_key(key)?;
        if value.len() != self.value_size() {
            return Err(Error::Invalid(format!(
                "value of {} bytes for map {} (needs {})",
                value.len(),
                self.name(),
                self.value_size()
            )));
        }
        let flags = map_flags(flags)?;
        let written = if self.map.map_type().is_percpu() {
            let per_cpu: Vec<Vec<u8>> = value
                .chunks(self.map.value_size() as usize)
                .map(<[u8]>::to_vec)
                .collect();
            self.map.update_percpu(key, &per_cpu, flags)
        } else {
            self.map.update(key, value, flags)
        };
        written.map_err(|err| Error::libbpf(format!("writing {}[{}]", self.name(), hex(key)), &err))
    }

    /// Elements a batch read asks the kernel for in one call.
    const BATCH_CHUNK: usize = 4096;

    /// Every element of the map: the keys one after another and the values in the same order
    /// (every possible CPU's, for a per-CPU map, as [`lookup`](Self::lookup) gives them); for
    /// an array every index is an element. `flags` `BPF_F_LOCK` reads each value under its spin
    /// lock. Read in chunks of 4096 elements.
    ///
    /// # Errors
    /// Flags other than 0 and `BPF_F_LOCK`, or the kernel refusing the read (a map type without
    /// batch operations).
    pub fn lookup_batch(&self, flags: u64) -> Result<(Vec<u8>, Vec<u8>)> {
        let opts = Self::batch_opts(flags)?;
        let what = || format!("reading the elements of {}", self.name());
        let (key_size, slot) = (self.key_size(), self.batch_value_size());
        // Where a call stopped, for the next to go on from: a key for an array, a bucket index
        // (u32) for a hash map.
        let mut position = vec![0u8; key_size.max(8)];
        let mut next = position.clone();
        let mut started = false;
        let mut chunk = Self::BATCH_CHUNK;
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        loop {
            let (keys_len, values_len) = (keys.len(), values.len());
            keys.resize(keys_len + chunk * key_size, 0);
            values.resize(values_len + chunk * slot, 0);
            let mut count = chunk as u32;
            let from = if started {
                position.as_mut_ptr().cast()
            } else {
                std::ptr::null_mut()
            };
            // SAFETY: `from` is null or a token of the key's size (at least 8 bytes, more than a
            // hash map's u32), `next` has as much room, and the key and value buffers have room
            // for `count` elements past where they are written.
            let rc = unsafe {
                libbpf_sys::bpf_map_lookup_batch(
                    self.fd(),
                    from,
                    next.as_mut_ptr().cast(),
                    keys[keys_len..].as_mut_ptr().cast(),
                    values[values_len..].as_mut_ptr().cast(),
                    &mut count,
                    &opts,
                )
            };
            let got = if rc == 0 || rc == -libc::ENOENT {
                count as usize
            } else {
                0
            };
            keys.truncate(keys_len + got * key_size);
            values.truncate(values_len + got * slot);
            match -rc {
                0 => {}
                libc::ENOENT => break,
                // A hash bucket holds more elements than a chunk: ask for more at once.
                libc::ENOSPC if chunk < self.max_entries() as usize => {
                    chunk *= 2;
                    continue;
                }
                errno => return Err(Error::errno(what(), errno)),
            }
            std::mem::swap(&mut position, &mut next);
            started = true;
        }
        Ok((keys, self.unpack_values(values)))
    }

    /// Writes the elements `keys` (whole keys one after another) and `values` (as many whole
    /// values, every CPU's for a per-CPU map) in one call; `flags` `BPF_F_LOCK` writes each
    /// value under its spin lock.
    ///
    /// # Errors
    /// Keys or values that are not whole ones or not as many, flags other than 0 and
    /// `BPF_F_LOCK`, or the kernel refusing the write (a full hash map, a key out of an
    /// array's range); elements before the one refused may be written.
    pub fn update_batch(&self, keys: &[u8], values: &[u8], flags: u64) -> Result<()> {
        let n = self.batch_count(keys, Some(values))?;
        let opts = Self::batch_opts(flags)?;
        if n == 0 {
            return Ok(());
        }
        let values = self.pack_values(values);
        let mut count = n;
        // SAFETY: `keys` holds `n` keys and `values` `n` values in the kernel's layout.
        let rc = unsafe {
            libbpf_sys::bpf_map_update_batch(
                self.fd(),
                keys.as_ptr().cast(),
                values.as_ptr().cast(),
                &mut count,
                &opts,
            )
        };
        if rc < 0 {
            return Err(Error::errno(
                format!("writing {n} elements of {}", self.name()),
                -rc,
            ));
        }
        Ok(())
    }

    /// Deletes the elements at `keys` (whole keys one after another) in one call: for hash
    /// maps; every key must be there.
    ///
    /// # Errors
    /// Keys that are not whole ones, or the kernel refusing the deletion (`ENOENT` for a key
    /// that is not there, after deleting those before it; an array's elements cannot be
    /// deleted).
    pub fn delete_batch(&self, keys: &[u8]) -> Result<()> {
        let n = self.batch_count(keys, None)?;
        if n == 0 {
            return Ok(());
        }
        let opts = Self::batch_opts(0)?;
        let mut count = n;
        // SAFETY: `keys` holds `n` keys.
        let rc = unsafe {
            libbpf_sys::bpf_map_delete_batch(self.fd(), keys.as_ptr().cast(), &mut count, &opts)
        };
        if rc < 0 {
            return Err(Error::errno(
                format!("deleting {n} elements of {}", self.name()),
                -rc,
            ));
        }
        Ok(())
    }

    /// The options of a batch operation with element flags `flags` (0 or `BPF_F_LOCK`, all the
    /// kernel takes there).
    fn batch_opts(flags: u64) -> Result<libbpf_sys::bpf_map_batch_opts> {
        if flags != 0 && flags != MapFlags::LOCK.bits() {
            return Err(Error::Invalid(format!(
                "batch flags {flags:#x} are not valid (0, or BPF_F_LOCK 4)"
            )));
        }
        Ok(libbpf_sys::bpf_map_batch_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
            elem_flags: flags,
            flags: 0,
        })
    }

    /// The number of elements in `keys` (and `values`, if given): whole keys and as many whole
    /// values, else `Invalid` naming the map and the sizes.
    fn batch_count(&self, keys: &[u8], values: Option<&[u8]>) -> Result<u32> {
        let (key_size, value_size) = (self.key_size(), self.value_size());
        if key_size == 0 || !keys.len().is_multiple_of(key_size) {
            return Err(Error::Invalid(format!(
                "keys of {} bytes for map {} are not whole {key_size}-byte keys",
                keys.len(),
                self.name()
            )));
        }
        let n = keys.len() / key_size;
        if let Some(values) = values {
            if value_size == 0 || !values.len().is_multiple_of(value_size) {
                return Err(Error::Invalid(format!(
                    "values of {} bytes for map {} are not whole {value_size}-byte values",
                    values.len(),
                    self.name()
                )));
            }
            if values.len() / value_size != n {
                return Err(Error::Invalid(format!(
                    "{n} keys ({} bytes) but {} values ({} bytes) for map {}",
                    keys.len(),
                    values.len() / value_size,
                    values.len(),
                    self.name()
                )));
            }
        }
        u32::try_from(n)
            .map_err(|_| Error::Invalid(format!("{n} elements at once for map {}", self.name())))
    }

    /// The bytes of one value in a batch as the kernel lays it out: for a per-CPU map, each
    /// CPU's value padded to 8 bytes.
    fn batch_value_size(&self) -> usize {
        let size = self.map.value_size() as usize;
        if self.map.map_type().is_percpu() {
            size.next_multiple_of(8) * self.cpus
        } else {
            size
        }
    }

    /// Values laid out as here (each CPU's value right after the one before) in the kernel's
    /// batch layout.
    fn pack_values<'a>(&self, values: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        let size = self.map.value_size() as usize;
        let padded = self.batch_value_size() / self.cpus;
        if padded == size {
            return values.into();
        }
        let mut out = vec![0u8; values.len() / size * padded];
        for (from, to) in values.chunks_exact(size).zip(out.chunks_exact_mut(padded)) {
            to[..size].copy_from_slice(from);
        }
        out.into()
    }

    /// Values in the kernel's batch layout laid out as here (the padding dropped).
    fn unpack_values(&self, values: Vec<u8>) -> Vec<u8> {
        let size = self.map.value_size() as usize;
        let padded = self.batch_value_size() / self.cpus;
        if padded == size {
            return values;
        }
        values
            .chunks_exact(padded)
            .flat_map(|chunk| &chunk[..size])
            .copied()
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A program pinned in a BPF filesystem.
#[derive(Debug)]
pub struct PinnedProgram {
    fd: OwnedFd,
    path: PathBuf,
    xdp: bool,
}

/// The outcome of a test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// The tc verdict, or the XDP action.
    pub retval: u32,
    /// The frame as the program left it.
    pub data: Vec<u8>,
    /// The mean time of one run, in nanoseconds, as the kernel measured it.
    pub duration_ns: u32,
}

/// One record of a program's JIT line table ([`PinnedProgram::jited_lines`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitedLine {
    /// The kernel address where the line's machine code starts.
    pub address: u64,
    /// The source file, as the compiler named it.
    pub file: String,
    /// Its line number.
    pub line: u32,
    /// The line's text.
    pub text: String,
}

impl PinnedProgram {
    /// Opens the program pinned at `path`.
    ///
    /// # Errors
    /// Nothing is pinned there, or it is no program.
    pub fn open(path: &Path) -> Result<Self> {
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::Invalid(format!(
                "program path {path:?} contains a NUL byte"
            )));
        }
        let fd = libbpf_rs::Program::fd_from_pinned_path(path).map_err(|err| {
            Error::libbpf(format!("opening pinned program {}", path.display()), &err)
        })?;
        let mut program = PinnedProgram {
            fd,
            path: path.to_owned(),
            xdp: false,
        };
        program.xdp = program.info()?.type_ == libbpf_sys::BPF_PROG_TYPE_XDP;
        Ok(program)
    }

    /// Where it is pinned.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it is an XDP program (else a tc one).
    pub fn is_xdp(&self) -> bool {
        self.xdp
    }

    /// The program's file descriptor.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn info(&self) -> Result<libbpf_sys::bpf_prog_info> {
        let mut info = libbpf_sys::bpf_prog_info::default();
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: `info` is a bpf_prog_info of `len` bytes, with no pointers set for the kernel
        // to fill.
        let rc = unsafe {
            libbpf_sys::bpf_prog_get_info_by_fd(self.fd.as_raw_fd(), &mut info, &mut len)
        };
        if rc < 0 {
            return Err(Error::errno(
                format!("reading the info of program {}", self.path.display()),
                -rc,
            ));
        }
        Ok(info)
    }

    /// (run_time_ns, run_cnt): the time the program has run and how many times, counted while
    /// run-time statistics are on ([`RunTimeStats`]).
    ///
    /// # Errors
    /// The kernel refusing the query.
    pub fn run_stats(&self) -> Result<(u64, u64)> {
        let info = self.info()?;
        Ok((info.run_time_ns, info.run_cnt))
    }

    /// Where the program's machine code came from: for each line record of its BTF line info,
    /// the kernel address its JIT-compiled code starts at and the source line (file, line
    /// number, text), sorted by address, over the program and its subprograms. An address a
    /// profiler samples belongs to the last record at or below it.
    ///
    /// # Errors
    /// The kernel refusing the query, or a program loaded without BTF line info or not
    /// JIT-compiled (the table would be empty).
    pub fn jited_lines(&self) -> Result<Vec<JitedLine>> {
        let what = || format!("reading the line info of program {}", self.path.display());
        let counts = self.info()?;
        let n = counts.nr_line_info as usize;
        if n == 0 || counts.nr_jited_line_info as usize != n {
            return Err(Error::Invalid(format!(
                "{}: the kernel kept no JIT line info (built without -g, or not JIT-compiled)",
                what()
            )));
        }
        let mut line_info = vec![libbpf_sys::bpf_line_info::default(); n];
        let mut addresses = vec![0u64; n];
        let mut info = libbpf_sys::bpf_prog_info {
            nr_line_info: n as u32,
            line_info_rec_size: std::mem::size_of::<libbpf_sys::bpf_line_info>() as u32,
            line_info: line_info.as_mut_ptr() as u64,
            nr_jited_line_info: n as u32,
            jited_line_info_rec_size: std::mem::size_of::<u64>() as u32,
            jited_line_info: addresses.as_mut_ptr() as u64,
            ..Default::default()
        };
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: the two arrays the info points at hold the `n` records of the sizes it gives,
        // and live until the call returns.
        let rc = unsafe {
            libbpf_sys::bpf_prog_get_info_by_fd(self.fd.as_raw_fd(), &mut info, &mut len)
        };
        if rc < 0 {
            return Err(Error::errno(what(), -rc));
        }
        // SAFETY: btf__load_from_kernel_by_id returns an owned BTF object or an error pointer.
        let btf = unsafe { libbpf_sys::btf__load_from_kernel_by_id(counts.btf_id) };
        // SAFETY: libbpf_get_error reads the pointer's value only.
        let err = unsafe { libbpf_sys::libbpf_get_error(btf.cast()) };
        if btf.is_null() || err != 0 {
            return Err(Error::errno(what(), (-err) as i32));
        }
        let name = |off: u32| -> String {
            // SAFETY: `btf` is valid until freed below; an offset out of its string section
            // gives NULL, a valid one a NUL-terminated string inside the object.
            let ptr = unsafe { libbpf_sys::btf__name_by_offset(btf, off) };
            if ptr.is_null() {
                return String::new();
            }
            // SAFETY: see above.
            unsafe { std::ffi::CStr::from_ptr(ptr) }
                .to_string_lossy()
                .into_owned()
        };
        let mut lines: Vec<JitedLine> = addresses
            .iter()
            .zip(&line_info)
            .map(|(address, line)| JitedLine {
                address: *address,
                file: name(line.file_name_off),
                line: line.line_col >> 10,
                text: name(line.line_off),
            })
            .collect();
        // SAFETY: `btf` came from btf__load_from_kernel_by_id and is freed once.
        unsafe { libbpf_sys::btf__free(btf) };
        lines.sort_by_key(|line| line.address);
        Ok(lines)
    }

    /// Runs the program on `frame` as if received on `ingress_ifindex`, `repeat` times in one
    /// call (each run sees what the one before left). An XDP program's `ingress_ifindex` must
    /// be a device of the calling thread's network namespace.
    ///
    /// # Errors
    /// The kernel refusing the run (an ifindex an XDP program cannot have, a frame too short).
    pub fn test_run(&self, frame: &[u8], ingress_ifindex: u32, repeat: u32) -> Result<TestRun> {
        let mut ctx = if self.xdp {
            xdp_md(frame.len() as u32, ingress_ifindex)
        } else {
            sk_buff(ingress_ifindex)
        };
        let mut data_out = vec![0u8; frame.len() + DATA_OUT_HEADROOM];
        let mut opts = libbpf_sys::bpf_test_run_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
            data_in: frame.as_ptr().cast(),
            data_size_in: frame.len() as u32,
            data_out: data_out.as_mut_ptr().cast(),
            data_size_out: data_out.len() as u32,
            ctx_in: ctx.as_mut_ptr().cast(),
            ctx_size_in: ctx.len() as u32,
            repeat: repeat.max(1) as i32,
            ..Default::default()
        };
        // SAFETY: every pointer in `opts` points into a live buffer of the size given beside it.
        let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(self.fd.as_raw_fd(), &mut opts) };
        if rc < 0 {
            return Err(Error::errno(
                format!("test run of {}", self.path.display()),
                -rc,
            ));
        }
        data_out.truncate(opts.data_size_out as usize);
        Ok(TestRun {
            retval: opts.retval,
            data: data_out,
            duration_ns: opts.duration,
        })
    }
}

/// A `struct __sk_buff` test-run context: zero but for `ingress_ifindex`.
fn sk_buff(ingress_ifindex: u32) -> Vec<u8> {
    let mut ctx = vec![0u8; SK_BUFF_SIZE];
    ctx[SK_BUFF_INGRESS_IFINDEX..SK_BUFF_INGRESS_IFINDEX + 4]
        .copy_from_slice(&ingress_ifindex.to_ne_bytes());
    ctx
}

/// A `struct xdp_md` test-run context for a frame of `len` bytes: data, data_end, data_meta,
/// ingress_ifindex, rx_queue_index, egress_ifindex.
fn xdp_md(len: u32, ingress_ifindex: u32) -> Vec<u8> {
    [0, len, 0, ingress_ifindex, 0, 0]
        .iter()
        .flat_map(|v: &u32| v.to_ne_bytes())
        .collect()
}

/// Run-time statistics of every BPF program (`run_time_ns`, `run_cnt`), counted while this
/// lives (`BPF_ENABLE_STATS`): the kernel stops when the last such descriptor is closed, also
/// when the process dies, so the system is left as found (the sysctl
/// kernel.bpf_stats_enabled is a separate switch, untouched).
#[derive(Debug)]
pub struct RunTimeStats {
    _fd: OwnedFd,
}

impl RunTimeStats {
    /// Switches the statistics on.
    ///
    /// # Errors
    /// The kernel refusing (no root, or no BPF_ENABLE_STATS).
    pub fn enable() -> Result<Self> {
        // SAFETY: plain system call wrapper.
        let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
        if fd < 0 {
            return Err(Error::errno("enabling BPF run-time statistics", -fd));
        }
        Ok(RunTimeStats {
            // SAFETY: a new descriptor that nothing else owns.
            _fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_put_the_ingress_ifindex_where_linux_bpf_h_has_it() {
        let skb = sk_buff(0x0102_0304);
        assert_eq!(skb.len(), SK_BUFF_SIZE);
        assert_eq!(&skb[36..40], &0x0102_0304u32.to_ne_bytes());
        assert!(skb[..36].iter().chain(&skb[40..]).all(|&b| b == 0));
        let md = xdp_md(60, 7);
        assert_eq!(md.len(), 24);
        assert_eq!(&md[4..8], &60u32.to_ne_bytes());
        assert_eq!(&md[12..16], &7u32.to_ne_bytes());
    }

    #[test]
    fn unknown_map_flags_are_refused_by_value() {
        assert_eq!(map_flags(4).unwrap(), MapFlags::LOCK);
        let Err(Error::Invalid(message)) = map_flags(8) else {
            panic!("accepted")
        };
        assert!(message.contains("0x8"), "{message}");
    }

    #[test]
    fn a_path_with_nothing_pinned_is_named() {
        let err = PinnedMap::open(Path::new("/nonexistent/pin/map")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/pin/map"), "{err}");
    }
}
