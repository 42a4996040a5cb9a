//! Python bindings for frerlab's eBPF loader (crates/bpf), wrapped by
//! `frerlab.dataplane.bpfsys`: `BpfError` (an OSError), pinned maps and programs as context
//! managers, and one function per loader operation. Invalid arguments raise ValueError.
use std::collections::BTreeMap;
use std::path::PathBuf;

use frerlab_bpf::{attach, object, pinned, Error};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

create_exception!(
    frerlab._native,
    BpfError,
    PyOSError,
    "A BPF operation that failed; the message says which and why."
);

fn to_py(err: Error) -> PyErr {
    match err {
        Error::Invalid(message) => PyValueError::new_err(message),
        Error::Os {
            errno: Some(errno),
            message,
        } => BpfError::new_err((errno, message)),
        Error::Os {
            errno: None,
            message,
        } => BpfError::new_err(message),
    }
}

fn closed(what: &str, path: &std::path::Path) -> PyErr {
    PyValueError::new_err(format!("{what} {} is closed", path.display()))
}

/// A pinned map with fixed key and value sizes (for a per-CPU map, the value is every CPU's
/// one after another); closed by `close()` or at the end of a `with` block.
#[pyclass(name = "BpfMap", module = "frerlab._native")]
struct PyMap {
    map: Option<pinned::PinnedMap>,
    path: PathBuf,
}

impl PyMap {
    fn get(&self) -> PyResult<&pinned::PinnedMap> {
        self.map.as_ref().ok_or_else(|| closed("map", &self.path))
    }
}

#[pymethods]
impl PyMap {
    /// Opens the map pinned at `path`; ValueError if its sizes are not `key_size` and
    /// `value_size` (the layout the caller packs does not match the object's); None takes the
    /// map's own.
    #[new]
    #[pyo3(signature = (path, key_size = None, value_size = None))]
    fn new(path: PathBuf, key_size: Option<usize>, value_size: Option<usize>) -> PyResult<Self> {
        let map = pinned::PinnedMap::open(&path).map_err(to_py)?;
        let key_size = key_size.unwrap_or(map.key_size());
        let value_size = value_size.unwrap_or(map.value_size());
        if (map.key_size(), map.value_size()) != (key_size, value_size) {
            return Err(PyValueError::new_err(format!(
                "map {} has {}-byte keys and {}-byte values, not {key_size} and {value_size}",
                path.display(),
                map.key_size(),
                map.value_size()
            )));
        }
        Ok(PyMap {
            map: Some(map),
            path,
        })
    }

    /// Where the map is pinned.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The map's file descriptor, -1 once closed.
    #[getter]
    fn fd(&self) -> i32 {
        self.map.as_ref().map_or(-1, |m| m.fd())
    }

    /// libbpf's name of the map's type (`array`, `hash`, ...).
    #[getter]
    fn kind(&self) -> PyResult<String> {
        Ok(self.get()?.kind())
    }

    /// Bytes of memory the kernel charges to the map (its fdinfo's memlock: what it has
    /// allocated, elements included).
    #[getter]
    fn memlock(&self) -> PyResult<u64> {
        self.get()?.memlock().map_err(to_py)
    }

    /// The map's capacity (max_entries).
    #[getter]
    fn max_entries(&self) -> PyResult<u32> {
        Ok(self.get()?.max_entries())
    }

    /// Bytes of one value as lookup returns it (every CPU's, for a per-CPU map).
    #[getter]
    fn value_size(&self) -> PyResult<usize> {
        Ok(self.get()?.value_size())
    }

    /// The value at `key`; `flags` BPF_F_LOCK reads it under its spin lock, so it is not torn.
    #[pyo3(signature = (key, flags = 0))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
        flags: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let value = self.get()?.lookup(key, flags).map_err(to_py)?;
        Ok(PyBytes::new(py, &value))
    }

    /// Writes `value` at `key`.
    #[pyo3(signature = (key, value, flags = 0))]
    fn update(&self, key: &[u8], value: &[u8], flags: u64) -> PyResult<()> {
        self.get()?.update(key, value, flags).map_err(to_py)
    }

    /// Every element of the map at once: (keys, values), the keys one after another and the
    /// values in the same order (every CPU's, for a per-CPU map, as lookup gives them); for an
    /// array every index is an element. `flags` BPF_F_LOCK reads each value under its spin lock.
    #[pyo3(signature = (flags = 0))]
    fn lookup_batch<'py>(
        &self,
        py: Python<'py>,
        flags: u64,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let map = self.get()?;
        let (keys, values) = py.detach(|| map.lookup_batch(flags)).map_err(to_py)?;
        Ok((PyBytes::new(py, &keys), PyBytes::new(py, &values)))
    }

    /// Writes many elements in one call: `keys` whole keys one after another, `values` as many
    /// whole values in the same order; ValueError if they are not.
    #[pyo3(signature = (keys, values, flags = 0))]
    fn update_batch(&self, py: Python<'_>, keys: &[u8], values: &[u8], flags: u64) -> PyResult<()> {
        let map = self.get()?;
        py.detach(|| map.update_batch(keys, values, flags))
            .map_err(to_py)
    }

    /// Deletes the elements at `keys` (whole keys one after another) in one call, of a hash
    /// map; BpfError (ENOENT) if one is not there, after deleting those before it.
    fn delete_batch(&self, py: Python<'_>, keys: &[u8]) -> PyResult<()> {
        let map = self.get()?;
        py.detach(|| map.delete_batch(keys)).map_err(to_py)
    }

    /// Closes the map's descriptor (the pinned map stays); safe to call twice.
    fn close(&mut self) {
        self.map = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, PyTuple>) {
        self.close();
    }
}

/// A pinned tc or XDP program; closed by `close()` or at the end of a `with` block.
#[pyclass(name = "BpfProgram", module = "frerlab._native")]
struct PyProgram {
    program: Option<pinned::PinnedProgram>,
    path: PathBuf,
}

impl PyProgram {
    fn get(&self) -> PyResult<&pinned::PinnedProgram> {
        self.program
            .as_ref()
            .ok_or_else(|| closed("program", &self.path))
    }
}

#[pymethods]
impl PyProgram {
    /// Opens the program pinned at `path`.
    #[new]
    fn new(path: PathBuf) -> PyResult<Self> {
        let program = pinned::PinnedProgram::open(&path).map_err(to_py)?;
        Ok(PyProgram {
            program: Some(program),
            path,
        })
    }

    /// Where the program is pinned.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The program's file descriptor (e.g. for a device map's value), -1 once closed.
    #[getter]
    fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.program.as_ref().map_or(-1, |p| p.fd().as_raw_fd())
    }

    /// Whether it is an XDP program (else a tc one).
    #[getter]
    fn xdp(&self) -> PyResult<bool> {
        Ok(self.get()?.is_xdp())
    }

    /// (run_time_ns, run_cnt), counted while run-time statistics are on (RunTimeStats).
    fn run_stats(&self) -> PyResult<(u64, u64)> {
        self.get()?.run_stats().map_err(to_py)
    }

    /// The program's JIT line table: (kernel address, source file, line number, line text)
    /// per BTF line record, sorted by address (what a profiler's sampled addresses map to).
    fn jited_lines(&self) -> PyResult<Vec<(u64, String, u32, String)>> {
        let lines = self.get()?.jited_lines().map_err(to_py)?;
        Ok(lines
            .into_iter()
            .map(|l| (l.address, l.file, l.line, l.text))
            .collect())
    }

    /// Runs the program on `frame` as if received on `ingress_ifindex`, `repeat` times in one
    /// call (each run sees what the one before left): (verdict, frame as the program left it,
    /// mean duration of one run in ns). The verdict is the tc one, or the XDP action; an XDP
    /// program's `ingress_ifindex` must be a device of the calling thread's namespace.
    #[pyo3(signature = (frame, ingress_ifindex = 0, repeat = 1))]
    fn test_run<'py>(
        &self,
        py: Python<'py>,
        frame: &[u8],
        ingress_ifindex: u32,
        repeat: u32,
    ) -> PyResult<(u32, Bound<'py, PyBytes>, u32)> {
        let program = self.get()?;
        let run = py
            .detach(|| program.test_run(frame, ingress_ifindex, repeat))
            .map_err(to_py)?;
        Ok((run.retval, PyBytes::new(py, &run.data), run.duration_ns))
    }

    /// Closes the program's descriptor (the pinned program stays); safe to call twice.
    fn close(&mut self) {
        self.program = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, PyTuple>) {
        self.close();
    }
}

/// Run-time statistics of every BPF program (`run_time_ns`, `run_cnt`), on while open: the
/// kernel counts while any such descriptor is open and stops when the last one is closed,
/// also when the process dies, so the system is left as found.
#[pyclass(name = "RunTimeStats", module = "frerlab._native")]
struct PyRunTimeStats {
    stats: Option<pinned::RunTimeStats>,
}

#[pymethods]
impl PyRunTimeStats {
    #[new]
    fn new() -> PyResult<Self> {
        Ok(PyRunTimeStats {
            stats: Some(pinned::RunTimeStats::enable().map_err(to_py)?),
        })
    }

    /// Switches the statistics off (as far as this descriptor keeps them on).
    fn close(&mut self) {
        self.stats = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, PyTuple>) {
        self.close();
    }
}

/// Loads every program of `obj` and pins programs under `pin_dir` (new), maps under
/// `pin_dir/maps`, reusing maps pinned in `reuse`; `shapes` gives maps another type and size
/// first (name -> (libbpf's type name, max_entries)); nothing stays pinned on failure.
#[pyfunction]
#[pyo3(signature = (obj, pin_dir, reuse = None, shapes = None))]
fn bpf_load_and_pin(
    obj: PathBuf,
    pin_dir: PathBuf,
    reuse: Option<PathBuf>,
    shapes: Option<BTreeMap<String, (String, u32)>>,
) -> PyResult<()> {
    let shapes: Vec<object::MapShape> = shapes
        .unwrap_or_default()
        .into_iter()
        .map(|(name, (kind, max_entries))| object::MapShape {
            name,
            kind,
            max_entries,
        })
        .collect();
    object::load_and_pin(&obj, &pin_dir, reuse.as_deref(), &shapes).map_err(to_py)
}

/// Creates a map of type `kind` (libbpf's name, e.g. devmap_hash) pinned at `path`.
#[pyfunction]
fn bpf_create_map(
    path: PathBuf,
    kind: &str,
    key_size: u32,
    value_size: u32,
    entries: u32,
) -> PyResult<()> {
    object::create_map(&path, kind, key_size, value_size, entries).map_err(to_py)
}

/// The interface index of `port` in network namespace `netns` (None: this one).
#[pyfunction]
fn bpf_ifindex(netns: Option<&str>, port: &str) -> PyResult<u32> {
    attach::ifindex(netns, port).map_err(to_py)
}

/// Adds a clsact qdisc to `port`; refuses a port that has one already.
#[pyfunction]
fn bpf_add_clsact(netns: Option<&str>, port: &str) -> PyResult<()> {
    attach::add_clsact(netns, port).map_err(to_py)
}

/// Attaches pinned program `prog` to `port`'s clsact `hook` (ingress or egress), direct action.
#[pyfunction]
fn bpf_attach_tc(netns: Option<&str>, port: &str, prog: PathBuf, hook: &str) -> PyResult<()> {
    attach::attach_tc(netns, port, &prog, hook).map_err(to_py)
}

/// Attaches pinned XDP program `prog` to `port` in `mode` (native or generic); refuses a port
/// that has an XDP program already (errno EBUSY).
#[pyfunction]
fn bpf_attach_xdp(netns: Option<&str>, port: &str, prog: PathBuf, mode: &str) -> PyResult<()> {
    attach::attach_xdp(netns, port, &prog, mode).map_err(to_py)
}

/// Removes `port`'s clsact qdisc and XDP programs; quiet where they are gone.
#[pyfunction]
fn bpf_detach(netns: Option<&str>, port: &str) -> PyResult<()> {
    attach::detach(netns, port).map_err(to_py)
}

/// Adds this area's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BpfError", m.py().get_type::<BpfError>())?;
    m.add_class::<PyMap>()?;
    m.add_class::<PyProgram>()?;
    m.add_class::<PyRunTimeStats>()?;
    m.add_function(wrap_pyfunction!(bpf_load_and_pin, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_create_map, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_ifindex, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_add_clsact, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_attach_tc, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_attach_xdp, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_detach, m)?)?;
    Ok(())
}
