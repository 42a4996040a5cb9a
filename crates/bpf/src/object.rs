//! Loading an ELF object and pinning what it holds: programs at `PIN/NAME`, maps at
//! `PIN/maps/NAME`. A map whose name is pinned in a `reuse` directory is that map, not a new
//! one, so two objects share their maps (frer_xdp.o runs on frer.o's). A [`MapShape`] gives a
//! map of the object another type and size before it is created (a FRER node of few streams
//! keeps them in arrays, one of many in hash maps). libbpf does the work:
//! it reads the object's BTF (map definitions, `bpf_spin_lock` values, CO-RE relocations),
//! creates the maps and loads every program through the verifier.
use std::fs;
use std::path::Path;

use libbpf_rs::libbpf_sys;
use libbpf_rs::{AsRawLibbpf, MapCore, MapHandle, MapType, ObjectBuilder};

use crate::{with_log, Error, Result};

/// How many lines of the verifier's log (or libbpf's messages) a load error carries.
const LOG_LINES: usize = 30;

/// `BPF_F_NO_PREALLOC` (linux/bpf.h): a hash map allocates its elements as they are written.
/// An array map refuses the flag, so a map given an array type loses it.
const BPF_F_NO_PREALLOC: u32 = 1;

/// Another type and size for map `name` of an object, set before the map is created: the
/// programs are verified against the map as it is then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapShape {
    /// The map's name in the object.
    pub name: String,
    /// libbpf's name of the type (see [`map_type`]).
    pub kind: String,
    /// Its `max_entries`.
    pub max_entries: u32,
}

/// Loads every program of object `obj` and pins programs under `pin_dir` (which must not
/// exist yet), maps under `pin_dir/maps`; a map of the same name pinned in directory `reuse`
/// is used instead of a new one, as it is (its type and size; the programs are verified against
/// it). Each of `shapes` gives a map of the object another type and size before it is created.
/// On failure nothing is left pinned and `pin_dir` is gone.
///
/// # Errors
/// The object cannot be read, a shape names a map the object lacks or a type libbpf does not
/// know, a reused map cannot be opened, the verifier refuses a program (the error names it and ends
/// with the verifier's last words), or pinning fails.
pub fn load_and_pin(
    obj: &Path,
    pin_dir: &Path,
    reuse: Option<&Path>,
    shapes: &[MapShape],
) -> Result<()> {
    if pin_dir.exists() {
        return Err(Error::errno(
            format!("pin directory {} exists already", pin_dir.display()),
            libc::EEXIST,
        ));
    }
    let (loaded, log) = with_log(|| load(obj, reuse, shapes));
    let (mut object, reused) = loaded.map_err(|err| err.with_log(&log, LOG_LINES))?;
    fs::create_dir(pin_dir).map_err(|err| {
        Error::io(
            format!("creating pin directory {}", pin_dir.display()),
            &err,
        )
    })?;
    let (pinned, log) = with_log(|| pin(&mut object, pin_dir, &reused));
    pinned.map_err(|err| {
        let _ = fs::remove_dir_all(pin_dir);
        err.with_log(&log, LOG_LINES)
    })
}

/// Opens and loads `obj` with its maps shaped by `shapes`; the names of the maps taken from
/// `reuse`.
fn load(
    obj: &Path,
    reuse: Option<&Path>,
    shapes: &[MapShape],
) -> Result<(libbpf_rs::Object, Vec<String>)> {
    let mut open = ObjectBuilder::default()
        .open_file(obj)
        .map_err(|err| Error::libbpf(format!("opening BPF object {}", obj.display()), &err))?;
    for shape in shapes {
        reshape(&mut open, shape, obj)?;
    }
    let mut reused = Vec::new();
    if let Some(dir) = reuse {
        for mut map in open.maps_mut() {
            let name = map.name().to_string_lossy().into_owned();
            let pinned = dir.join(&name);
            if pinned.exists() {
                map.reuse_pinned_map(&pinned).map_err(|err| {
                    Error::libbpf(
                        format!(
                            "reusing map {name} pinned at {} for {}",
                            pinned.display(),
                            obj.display()
                        ),
                        &err,
                    )
                })?;
                reused.push(name);
            }
        }
    }
    let object = open.load().map_err(|err| {
        let what = match failed_program(&libbpf_log_so_far()) {
            Some(prog) => format!("loading program {prog} of {} failed", obj.display()),
            None => format!("loading {} failed", obj.display()),
        };
        Error::libbpf(what, &err)
    })?;
    Ok((object, reused))
}

/// Gives map `shape.name` of the opened object `open` (read from `obj`) the shape's type and
/// size; an array type drops `BPF_F_NO_PREALLOC`.
fn reshape(open: &mut libbpf_rs::OpenObject, shape: &MapShape, obj: &Path) -> Result<()> {
    let ty = map_type(&shape.kind)?;
    let mut map = open
        .maps_mut()
        .find(|m| *m.name().to_string_lossy() == shape.name)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "map {:?} is not in BPF object {}",
                shape.name,
                obj.display()
            ))
        })?;
    let what = || {
        format!(
            "giving map {} of {} the type {} and {} entries",
            shape.name,
            obj.display(),
            shape.kind,
            shape.max_entries
        )
    };
    map.set_type(ty)
        .map_err(|err| Error::libbpf(what(), &err))?;
    map.set_max_entries(shape.max_entries)
        .map_err(|err| Error::libbpf(what(), &err))?;
    if matches!(ty, MapType::Array | MapType::PercpuArray) {
        // SAFETY: the pointer is the open map's, valid while `map` borrows the object.
        let flags = unsafe { libbpf_sys::bpf_map__map_flags(map.as_libbpf_object().as_ptr()) }
            & !BPF_F_NO_PREALLOC;
        map.set_map_flags(flags)
            .map_err(|err| Error::libbpf(what(), &err))?;
    }
    Ok(())
}

/// What libbpf has printed so far in the current `with_log`.
fn libbpf_log_so_far() -> String {
    crate::LOG
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// The program libbpf says failed to load, from its messages (`prog 'NAME': BPF program load
/// failed: ...`).
pub fn failed_program(log: &str) -> Option<&str> {
    log.lines()
        .find(|line| line.contains("load failed"))
        .and_then(|line| {
            let start = line.find("prog '")? + "prog '".len();
            let len = line[start..].find('\'')?;
            Some(&line[start..start + len])
        })
}

/// Pins every program of `object` at `pin_dir/NAME` and every map not in `reused` at
/// `pin_dir/maps/NAME`.
fn pin(object: &mut libbpf_rs::Object, pin_dir: &Path, reused: &[String]) -> Result<()> {
    for mut prog in object.progs_mut() {
        let path = pin_dir.join(prog.name());
        prog.pin(&path)
            .map_err(|err| Error::libbpf(format!("pinning program at {}", path.display()), &err))?;
    }
    let maps_dir = pin_dir.join("maps");
    fs::create_dir(&maps_dir)
        .map_err(|err| Error::io(format!("creating {}", maps_dir.display()), &err))?;
    for mut map in object.maps_mut() {
        if reused.iter().any(|r| *r == *map.name().to_string_lossy()) {
            continue;
        }
        let path = maps_dir.join(map.name());
        map.pin(&path)
            .map_err(|err| Error::libbpf(format!("pinning map at {}", path.display()), &err))?;
    }
    Ok(())
}

/// The map type libbpf calls `kind` (as bpftool does: `hash`, `devmap_hash`, ...).
///
/// # Errors
/// `Invalid` naming the types there are, for a name that is none of them.
pub fn map_type(kind: &str) -> Result<MapType> {
    let mut known = Vec::new();
    for id in 0.. {
        // SAFETY: returns a static string, or null past the last type libbpf knows.
        let name = unsafe { libbpf_sys::libbpf_bpf_map_type_str(id) };
        if name.is_null() {
            break;
        }
        // SAFETY: a non-null result is a NUL-terminated static string.
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
        if name == kind {
            return Ok(MapType::from(id));
        }
        known.push(name.into_owned());
    }
    Err(Error::Invalid(format!(
        "map type {kind:?} is not one libbpf knows ({})",
        known.join(", ")
    )))
}

/// libbpf's name of map type `ty` (the inverse of [`map_type`]).
pub fn map_type_name(ty: MapType) -> String {
    // SAFETY: returns a static string, or null for a type libbpf does not know.
    let name = unsafe { libbpf_sys::libbpf_bpf_map_type_str(ty as u32) };
    if name.is_null() {
        return format!("type {}", ty as u32);
    }
    // SAFETY: a non-null result is a NUL-terminated static string.
    unsafe { std::ffi::CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// Creates a map of type `kind` (see [`map_type`]) and pins it at `path`; the map is named
/// after the path's file name (its first 15 characters, the kernel's limit).
///
/// # Errors
/// An unknown type, or the kernel refusing the map or the pin.
pub fn create_map(
    path: &Path,
    kind: &str,
    key_size: u32,
    value_size: u32,
    entries: u32,
) -> Result<()> {
    let ty = map_type(kind)?;
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(15).collect())
        .unwrap_or_default();
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let what = || {
        format!(
            "creating {kind} map {} (key {key_size}, value {value_size}, {entries} entries)",
            path.display()
        )
    };
    let (created, log) = with_log(|| {
        let mut map = MapHandle::create(ty, Some(&name), key_size, value_size, entries, &opts)
            .map_err(|err| Error::libbpf(what(), &err))?;
        map.pin(path)
            .map_err(|err| Error::libbpf(format!("pinning map at {}", path.display()), &err))
    });
    created.map_err(|err| err.with_log(&log, LOG_LINES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failed_program_is_read_from_libbpf_s_messages() {
        let log = "libbpf: prog 'frer_ingress': BPF program load failed: Permission denied\n\
                   libbpf: prog 'frer_ingress': -- BEGIN PROG LOAD LOG --\n0: (b7) r0 = 0\n";
        assert_eq!(failed_program(log), Some("frer_ingress"));
        assert_eq!(failed_program("libbpf: elf: something else\n"), None);
    }

    #[test]
    fn map_types_are_libbpf_s_names() {
        assert_eq!(map_type("devmap_hash").unwrap(), MapType::DevmapHash);
        assert_eq!(map_type("hash").unwrap(), MapType::Hash);
        assert_eq!(map_type_name(MapType::PercpuArray), "percpu_array");
        let Err(Error::Invalid(message)) = map_type("devmap-hash") else {
            panic!("accepted")
        };
        assert!(
            message.contains("\"devmap-hash\"") && message.contains("devmap_hash"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_object_is_named_in_the_error() {
        let dir = std::env::temp_dir().join(format!("frerlab-bpf-test-{}", std::process::id()));
        let err = load_and_pin(Path::new("/nonexistent/frer.o"), &dir, None, &[]).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/frer.o"), "{err}");
        assert!(!dir.exists());
    }
}
