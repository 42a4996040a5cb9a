"""Batch operations on pinned maps (frerlab.bpfsys.Map: lookup_batch, update_batch,
delete_batch): what update_batch writes, lookup_batch reads back, value for value as lookup gives
it (every CPU's for a per-CPU map), on arrays, hash maps and their per-CPU kinds, past the chunk
the loader reads in; an array's every index is an element; delete_batch removes hash elements
and refuses a key that is not there; an empty hash map reads as nothing; keys and values that
are not whole or not as many are refused naming the map and the sizes, as are flags the kernel
does not take; and a per-CPU array of 65,536 elements is read whole."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import NEEDS_BPF

from frerlab import bpfsys

pytestmark = NEEDS_BPF

CPUS = bpfsys.possible_cpus()
#: More elements than the loader asks the kernel for in one call (4096).
MANY = 5000


def prefix() -> str:
    return f"frb{os.getpid()}x{time.monotonic_ns() % 100000}"


@contextmanager
def created(kind: str, key_size: int, value_size: int, max_entries: int) -> Iterator[bpfsys.Map]:
    """A new map named `batched`, pinned in a directory of its own that goes at the end."""
    bpfsys.ensure_bpffs()
    pin_dir = bpfsys.BPFFS / prefix()
    pin_dir.mkdir()
    try:
        bpfsys.create_map(pin_dir / "batched", kind, key_size, value_size, max_entries)
        with bpfsys.Map(pin_dir / "batched") as m:
            yield m
    finally:
        bpfsys.unpin(pin_dir)


def split(blob: bytes, size: int) -> list[bytes]:
    assert len(blob) % size == 0
    return [blob[i:i + size] for i in range(0, len(blob), size)]


def value_of(i: int, size: int, cpus: int) -> bytes:
    """Element i's value: a different number per element and per CPU."""
    return b"".join((i * 1000 + cpu + 1).to_bytes(size, "little") for cpu in range(cpus))


def hash_key(i: int) -> bytes:
    return (i * 7919 + 13).to_bytes(8, "little")


#: (kind, key size, value size of one CPU): value sizes that are not multiples of 8 too, which
#: the kernel pads per CPU in a batch.
KINDS = [("array", 4, 12), ("hash", 8, 6), ("percpu_array", 4, 12), ("percpu_hash", 8, 4),
         ("percpu_hash", 8, 16)]


@pytest.mark.parametrize(("kind", "key_size", "value_size"), KINDS)
def test_what_update_batch_writes_lookup_batch_reads_as_lookup_does(kind, key_size, value_size):
    cpus = CPUS if kind.startswith("percpu") else 1
    array = kind.endswith("array")
    with created(kind, key_size, value_size, MANY) as m:
        assert m.value_size == value_size * cpus
        # An array's written elements are its even indices; a hash map's are all it holds.
        indices = range(0, MANY, 2) if array else range(MANY)
        keys = [i.to_bytes(4, "little") if array else hash_key(i) for i in indices]
        values = [value_of(i, value_size, cpus) for i in indices]
        m.update_batch(b"".join(keys), b"".join(values))

        got_keys, got_values = m.lookup_batch()
        got = dict(zip(split(got_keys, key_size), split(got_values, value_size * cpus), strict=True))
        if array:
            zero = bytes(value_size * cpus)
            assert list(got) == [i.to_bytes(4, "little") for i in range(MANY)]
            assert got == {i.to_bytes(4, "little"): value_of(i, value_size, cpus) if i % 2 == 0 else zero
                           for i in range(MANY)}
        else:
            assert len(got_keys) == MANY * key_size
            assert got == dict(zip(keys, values, strict=True))
        for key, value in got.items():
            assert m.lookup(key) == value


def test_update_batch_overwrites_and_delete_batch_removes_hash_elements():
    with created("hash", 8, 6, 64) as m:
        keys = [hash_key(i) for i in range(50)]
        m.update_batch(b"".join(keys), b"".join(value_of(i, 6, 1) for i in range(50)))
        m.update_batch(keys[0], value_of(999, 6, 1))
        m.delete_batch(b"".join(keys[10:30]))
        got_keys, got_values = m.lookup_batch()
        got = dict(zip(split(got_keys, 8), split(got_values, 6), strict=True))
        assert got == {key: value_of(999 if i == 0 else i, 6, 1)
                       for i, key in enumerate(keys) if not 10 <= i < 30}
        with pytest.raises(bpfsys.BpfError, match="deleting 2 elements of batched") as missing:
            m.delete_batch(keys[30] + keys[10])  # keys[10] is gone
        assert missing.value.errno == errno.ENOENT
        assert hash_key(30) not in split(m.lookup_batch()[0], 8)  # deleted before the refusal


@pytest.mark.parametrize("kind", ["hash", "percpu_hash"])
def test_an_empty_hash_map_reads_as_nothing(kind):
    with created(kind, 8, 8, 16) as m:
        assert m.lookup_batch() == (b"", b"")
        m.update_batch(b"", b"")
        m.delete_batch(b"")
        assert m.lookup_batch() == (b"", b"")


def test_sizes_that_do_not_fit_are_refused_naming_the_map():
    with created("hash", 8, 6, 4) as m:
        with pytest.raises(ValueError, match="keys of 7 bytes for map batched are not whole 8-byte keys"):
            m.update_batch(bytes(7), bytes(6))
        with pytest.raises(ValueError, match="values of 5 bytes for map batched are not whole 6-byte values"):
            m.update_batch(bytes(8), bytes(5))
        with pytest.raises(ValueError, match=r"2 keys \(16 bytes\) but 1 values \(6 bytes\) for map batched"):
            m.update_batch(bytes(16), bytes(6))
        with pytest.raises(ValueError, match="keys of 12 bytes for map batched are not whole 8-byte keys"):
            m.delete_batch(bytes(12))
        with pytest.raises(ValueError, match="batch flags 0x1 are not valid"):
            m.lookup_batch(1)
        with pytest.raises(bpfsys.BpfError, match="reading the elements of batched") as unlocked:
            m.lookup_batch(bpfsys.BPF_F_LOCK)  # its values have no spin lock
        assert unlocked.value.errno == errno.EINVAL
        with pytest.raises(bpfsys.BpfError, match="writing 5 elements of batched") as full:
            m.update_batch(b"".join(hash_key(i) for i in range(5)), bytes(30))  # room for 4
        assert full.value.errno == errno.E2BIG
    with created("percpu_array", 4, 12, 4) as m:
        size = 12 * CPUS  # every CPU's value
        with pytest.raises(ValueError, match=f"values of {size + 4} bytes for map batched are not whole {size}-byte"):
            m.update_batch(bytes(4), bytes(size + 4))


def test_a_per_cpu_array_of_65536_elements_is_read_whole():
    entries = 65536
    with created("percpu_array", 4, 8, entries) as m:
        keys = b"".join(i.to_bytes(4, "little") for i in range(entries))
        values = b"".join(value_of(i, 8, CPUS) for i in range(entries))
        m.update_batch(keys, values)
        got_keys, got_values = m.lookup_batch()
        assert len(got_keys) // 4 == entries
        assert (got_keys, got_values) == (keys, values)
