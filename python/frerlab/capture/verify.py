"""`frerlab verify`: checks captures of an 802.1CB network per stream and per capture point.

One pass over every capture at once, merged by timestamp, in bounded memory: per stream and
point a window of the latest `window` sequence numbers, and per stream a table of the
sequence numbers seen lately (at most `window` of them, none older than `max_delay_ns`) for the
comparisons between points. A multi-GB capture is read one frame at a time (frerlab.capture.
reader); nothing grows with its length but the lists of the first gaps (at most MAX_LISTED).

A stream is a flow: the frames with the same values of the key's fields (default KEY:
destination and source MAC, IP source and destination, IP protocol, UDP/TCP source and
destination port; the VLAN is left out because active destination MAC and VLAN identification,
802.1CB 6.6, gives each path its own VID) that carried an R-TAG at some capture point or
frerlab's probe payload (frerlab gen). Its sequence number at a point is the R-TAG's (802.1CB
7.8, parsed by frerlab.frer.pop_rtag) where its frames carry one, else the probe's, else it has
none there and is only counted. Between points a frame is known by its probe's sequence number
when it carries one (the same at every point, tag or no tag), else by its R-TAG's.

Per stream and point: frames, R-TAG present (and where expected: missing), the VLANs, sequence
continuity (unique numbers, numbers missing and their gaps, same-point duplicates, late and
out-of-window arrivals). Per stream: the replication skew between the two path points (time
between the two copies of a number, a histogram), the latency between every pair of points
(same number seen at both), and at the point after elimination: exactly one copy of each
number, and numbers that reached a path point but never the point after elimination.

Every capture is checked before any is read (frerlab.capture.reader.check_capture: a regular
file with a capture's header, at most MAX_CAPTURE_BYTES; at most MAX_CAPTURES of them); one that
turns out damaged while read is refused (UsageError), one that ends inside a record is read up
to there (a problem in the report). A capture directory's manifest (capture.json, or a fail-over
run's meta.json) is read with frerlab.files.read_json and checked field by field (the pydantic
models below); no file it names, and no capture found in the directory, may lead outside it.

The module is longer than most (over 600 lines) because the one pass is one algorithm: the
per-stream state that `verify` builds is read and trimmed by `_match`, `_forget` and `_flush`,
and the report `summary` prints is the one `verify` returns; split, each part would have to
know the others' dictionaries.
"""

from __future__ import annotations

import heapq
import os
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from frerlab.capture.reader import VALID, check_capture, read_capture
from frerlab.errors import UsageError
from frerlab.files import check_shape, read_json, shape_error
from frerlab.frer import pop_rtag
from frerlab.names import pydantic_name, shown
from frerlab.pcap import TruncatedCapture
from frerlab.testbed.plan import ELIMINATE_AT, MODES, REPLICATE_AT

#: Every field a stream key may use, and the default key.
FIELDS = ("dst_mac", "src_mac", "vlan", "ethertype", "src_ip", "dst_ip", "proto", "src_port", "dst_port")
KEY = ("dst_mac", "src_mac", "src_ip", "dst_ip", "proto", "src_port", "dst_port")
#: Sequence numbers kept per stream and point (and per stream for the comparisons).
WINDOW = 16384
#: A number's first sighting is forgotten for the comparisons this long after it (ns).
MAX_DELAY_NS = 1_000_000_000
#: Most streams followed; frames of further flows count as other frames.
MAX_STREAMS = 1000
#: Most sequence numbers held at once: each stream holds up to `window` per point and `window`
#: for the comparisons (about 170 bytes each, measured), so fewer streams are followed when
#: the window or the captures are many: 128 streams of the default window at 3 points.
MAX_NUMBERS_HELD = 1 << 23
#: Most gaps listed per stream and point (all are counted).
MAX_LISTED = 20
#: The histograms' bin edges in ns (the last bin is open).
EDGES_NS = (0, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
            5_000_000, 10_000_000, 20_000_000, 50_000_000, 100_000_000, 200_000_000, 500_000_000, 1_000_000_000)
#: Point names of the capture manifest (`frerlab capture`) and of the fail-over run's files.
PATH_POINTS = ("path_a", "path_b")
AFTER_POINTS = ("after_elimination", "listener")
MANIFEST = "capture.json"
#: Most captures checked at once (each is an open file and a column of every stream's tables).
MAX_CAPTURES = 16

_VLAN_TPIDS = (0x8100, 0x88A8)
_RTAG, _IPV4, _IPV6 = 0xF1C1, 0x0800, 0x86DD
_PORTS = (6, 17, 132)  # TCP, UDP, SCTP: source and destination port first
_PROBE_MAGIC, _PROBE_DATA = 0xFB, ord("D")


def _dissect(frame: bytes) -> tuple[tuple, int | None, bool, int | None]:
    """(key fields in FIELDS order, raw: MACs and IP addresses as bytes), the R-TAG's sequence
    number or None, whether an R-TAG was cut short, the data probe's sequence number or None."""
    vlan = proto = sport = dport = src_ip = dst_ip = rtag = probe = None
    at = 12
    ethertype = int.from_bytes(frame[12:14], "big")
    while ethertype in _VLAN_TPIDS and len(frame) >= at + 6:
        if vlan is None:
            vlan = int.from_bytes(frame[at + 2:at + 4], "big") & 0x0FFF
        at += 4
        ethertype = int.from_bytes(frame[at:at + 2], "big")
    if ethertype == _RTAG:
        try:
            rtag, frame = pop_rtag(frame)
        except ValueError:
            return (frame[0:6], frame[6:12], vlan, None, None, None, None, None, None), None, True, None
        ethertype = int.from_bytes(frame[at:at + 2], "big")
    ip = at + 2
    if ethertype == _IPV4 and len(frame) >= ip + 20:
        src_ip, dst_ip = frame[ip + 12:ip + 16], frame[ip + 16:ip + 20]
        proto, l4 = frame[ip + 9], ip + (frame[ip] & 0x0F) * 4
        fragment = frame[ip + 6] & 0x1F or frame[ip + 7]
    elif ethertype == _IPV6 and len(frame) >= ip + 40:
        src_ip, dst_ip = frame[ip + 8:ip + 24], frame[ip + 24:ip + 40]
        proto, l4, fragment = frame[ip + 6], ip + 40, 0
    if proto in _PORTS and not fragment and len(frame) >= l4 + 4:
        sport = int.from_bytes(frame[l4:l4 + 2], "big")
        dport = int.from_bytes(frame[l4 + 2:l4 + 4], "big")
        at = l4 + 8
        if proto == 17 and len(frame) >= at + 12 and frame[at] == _PROBE_MAGIC and frame[at + 1] == _PROBE_DATA:
            probe = int.from_bytes(frame[at + 5:at + 12], "big")  # byte 4: the sender lane
    return (frame[0:6], frame[6:12], vlan, ethertype, src_ip, dst_ip, proto, sport, dport), rtag, False, probe


def _shown(field: str, value):
    """A raw key field as the report gives it: MACs aa:bb:.., IP addresses in their notation."""
    if value is None or not isinstance(value, bytes):
        return value
    if field.endswith("_mac"):
        return value.hex(":")
    import ipaddress
    return str(ipaddress.ip_address(value))


def dissect(frame: bytes) -> dict:
    """The frame's key fields (FIELDS), its R-TAG (`rtag`: the sequence number or None;
    `rtag_error`: a tag cut short) and frerlab data probe (`probe`: its sequence number or None)."""
    fields, rtag, error, probe = _dissect(frame)
    return {**{f: _shown(f, v) for f, v in zip(FIELDS, fields)}, "rtag": rtag, "rtag_error": error, "probe": probe}


class Histogram:
    """Counts of time differences (ns) in the bins of EDGES_NS by magnitude, with the exact
    count, minimum, maximum, mean and how many were negative (the second point first)."""

    def __init__(self) -> None:
        self.bins = [0] * len(EDGES_NS)
        self.count = self.total = self.negative = self.zero = 0
        self.min: int | None = None
        self.max: int | None = None

    def add(self, delta: int) -> None:
        self.bins[bisect_right(EDGES_NS, abs(delta)) - 1] += 1
        self.count += 1
        self.total += delta
        self.negative += delta < 0
        self.zero += delta == 0
        self.min = delta if self.min is None or delta < self.min else self.min
        self.max = delta if self.max is None or delta > self.max else self.max

    def flip(self) -> Histogram:
        """The same differences taken the other way round."""
        flipped = Histogram()
        flipped.bins, flipped.count, flipped.total, flipped.zero = self.bins, self.count, -self.total, self.zero
        flipped.negative = self.count - self.negative - self.zero
        flipped.min = None if self.max is None else -self.max
        flipped.max = None if self.min is None else -self.min
        return flipped

    def report(self) -> dict:
        edges = (*EDGES_NS[1:], None)
        return {"count": self.count, "min_ns": self.min, "max_ns": self.max,
                "mean_ns": round(self.total / self.count) if self.count else None, "negative": self.negative,
                "histogram": [{"from_ns": lo, "to_ns": hi, "count": n}
                              for lo, hi, n in zip(EDGES_NS, edges, self.bins) if n]}


class SequenceTracker:
    """Sequence continuity of one stream at one point, in a window of the latest `window`
    numbers. R-TAG numbers (modulus 65536) are unwrapped against the highest number seen, so
    a jump of more than 32767 numbers cannot be told from a step back; probe numbers do not
    wrap. A number is missing once it falls out of the window unseen (or at the end); one that
    arrives after that counts as out of window, and so does one below the first number seen."""

    def __init__(self, modulus: int | None, window: int = WINDOW) -> None:
        self.modulus, self.window = modulus, window
        self.first: int | None = None
        self.top = 0
        self.seen: set[int] = set()
        self.expired = 0  # every number below this has been accounted for
        self.unique = self.duplicates = self.late = self.out_of_window = 0
        self.missing = self.gap_runs = self.largest_gap = 0
        self.gaps: list[dict] = []
        self._run_start = self._run_len = 0

    def add(self, seq: int) -> None:
        if self.first is None:
            self.first = self.top = self.expired = seq
            self.seen.add(seq)
            self.unique = 1
            return
        if self.modulus:
            half = self.modulus // 2
            seq = self.top + ((seq - self.top + half) % self.modulus) - half
        if seq > self.top:
            previous, self.top = self.top, seq
            self.seen.add(seq)
            self.unique += 1
            self._expire(seq - self.window + 1, previous)
        elif seq < self.expired:
            self.out_of_window += 1
        elif seq in self.seen:
            self.duplicates += 1
        else:
            self.seen.add(seq)
            self.unique += 1
            self.late += 1

    def _expire(self, low: int, previous_top: int) -> None:
        """Accounts for every number below `low`: numbers up to `previous_top` were in the
        window (seen or not), those above it were jumped over."""
        for n in range(self.expired, min(low, previous_top + 1)):
            if n in self.seen:
                self.seen.remove(n)
                self._close_run()
            else:
                self._extend_run(n, 1)
        jumped_from = max(self.expired, previous_top + 1)
        if low > jumped_from:
            self._extend_run(jumped_from, low - jumped_from)
        self.expired = max(self.expired, low)

    def _extend_run(self, start: int, count: int) -> None:
        if not self._run_len:
            self._run_start = start
        self._run_len += count

    def _close_run(self) -> None:
        if self._run_len:
            self.missing += self._run_len
            self.gap_runs += 1
            self.largest_gap = max(self.largest_gap, self._run_len)
            if len(self.gaps) < MAX_LISTED:
                start = self._run_start % self.modulus if self.modulus else self._run_start
                self.gaps.append({"from_seq": start, "count": self._run_len})
            self._run_len = 0

    def finish(self) -> dict:
        if self.first is not None:
            self._expire(self.top + 1, self.top)
            self._close_run()
        wrap = (lambda s: s % self.modulus) if self.modulus else (lambda s: s)
        return {"first_seq": None if self.first is None else wrap(self.first),
                "last_seq": None if self.first is None else wrap(self.top),
                "span": 0 if self.first is None else self.top - self.first + 1,
                "unique": self.unique, "duplicates": self.duplicates, "missing": self.missing,
                "gap_runs": self.gap_runs, "largest_gap": self.largest_gap, "gaps": self.gaps,
                "late": self.late, "out_of_window": self.out_of_window}


class _PointStream:
    """One stream at one point."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.frames = self.rtag_frames = self.rtag_errors = 0
        self.vlans: set = set()
        self.numbering: str | None = None
        self.tracker: SequenceTracker | None = None
        self.first_ns: int | None = None
        self.last_ns = 0


class Point:
    """A capture point: a name, its file and whether the R-TAG is expected there (None: where
    a stream was seen tagged there at all); `root`: the directory the file must stay in (the
    capture directory it comes from; None for a file given by the user)."""

    def __init__(self, name: str, file: Path, rtag_expected: bool | None = None, root: Path | None = None) -> None:
        self.name, self.file, self.rtag_expected, self.root = name, Path(file), rtag_expected, root
        self.format: str | None = None  # 'pcap' or 'pcapng', once checked
        self.error: str | None = None  # why reading its file stopped early


_PointName = pydantic_name("capture point")


def _file_name(value: str) -> str:
    if "/" in value or value in ("", ".", "..") or "\0" in value:
        raise ValueError(f"{shown(value)} is not the name of a file in the capture directory")
    return value


class _Stored(BaseModel):
    """A part of a stored manifest: strict types, fields verify does not use ignored."""

    model_config = ConfigDict(strict=True, frozen=True)


class _ManifestPoint(_Stored):
    file: Annotated[str, AfterValidator(_file_name)]
    rtag_expected: bool | None = None


class _Roles(_Stored):
    paths: Annotated[list[_PointName], Field(min_length=2, max_length=2)] | None = None
    after_elimination: _PointName | None = None


class _Manifest(_Stored):
    """capture.json as verify reads it (frerlab.capture.record writes it)."""

    points: Annotated[dict[_PointName, _ManifestPoint], Field(min_length=1, max_length=MAX_CAPTURES)]
    roles: _Roles = _Roles()


class _TestbedSettings(_Stored):
    mode: Literal[MODES]
    replicate_at: Literal[REPLICATE_AT]
    eliminate_at: Literal[ELIMINATE_AT]


class _FailoverMeta(_Stored):
    """A fail-over run's meta.json as verify reads it (frerlab.testbed.failover writes it)."""

    test: Literal["failover"]
    testbed: _TestbedSettings


def _present(path: Path) -> bool:
    """Whether `path` is there at all (a dangling symlink too: it is refused, not skipped)."""
    return os.path.lexists(path)


def points_from(captures: Sequence[str | Path]) -> tuple[list[Point], dict]:
    """The points of CAPTURE arguments: files (named by their stem), or directories written by
    `frerlab capture` (their capture.json names the points and where an R-TAG is expected) or
    by `frerlab failover` (their .pcap files). Also returns the manifest's roles (paths, after
    elimination) when a directory had one. The files themselves are checked by `verify`."""
    points, roles = [], {}
    for given in captures:
        path = Path(given)
        if not path.is_dir():
            points.append(Point(path.stem, path))
            continue
        manifest = path / MANIFEST
        if not _present(manifest) and _present(path / "meta.json"):
            data = _failover_manifest(path)
            if data:
                points += [Point(name, path / file, rtag, path) for name, (file, rtag) in data[0].items()]
                roles = data[1]
                continue
        if _present(manifest):
            stored = check_shape(_Manifest, read_json(manifest, "capture manifest", root=path), manifest,
                             "capture manifest")
            points += [Point(name, path / p.file, p.rtag_expected, path) for name, p in stored.points.items()]
            roles = stored.roles.model_dump(exclude_unset=True)
        else:
            found = sorted(path.glob("*.pcap")) + sorted(path.glob("*.pcapng"))
            if not found:
                raise UsageError(f"{str(path)!r} holds no {MANIFEST} and no .pcap or .pcapng file; {VALID}")
            points += [Point(f.stem, f, root=path) for f in found]
    names = [p.name for p in points]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two captures are named {twice[0]!r}: give files with different names")
    return points, roles


def _failover_manifest(path: Path) -> tuple[dict[str, tuple[str, bool]], dict] | None:
    """What capture.json would say of a fail-over run's directory (its meta.json names the
    testbed's settings; its captures are the timeline's points): {point: (file, R-TAG
    expected)} and the roles; None if it is not one."""
    meta_file = path / "meta.json"
    meta = read_json(meta_file, "run metadata", root=path)
    if not isinstance(meta, dict):
        raise shape_error(meta_file, "run metadata", "it holds no JSON object")
    if meta.get("test") != "failover":
        return None
    from frerlab.capture.record import expectations
    from frerlab.testbed.timeline import POINTS

    settings = check_shape(_FailoverMeta, meta, meta_file, "run metadata").testbed
    rtag, roles = expectations(settings.model_dump())
    return {name: (file, rtag[name]) for name, (_, _, _, file) in POINTS.items() if _present(path / file)}, roles


def _merged(points: Sequence[Point]) -> Iterator[tuple[int, int, bytes]]:
    """(time, point index, frame) of every capture, in time order (each file in its own);
    UsageError for a damaged one."""
    def tagged(i: int, p: Point) -> Iterator[tuple[int, int, bytes]]:
        try:
            for t, frame in read_capture(p.file):
                yield t, i, frame
        except TruncatedCapture as err:  # a capture tool stopped mid-write: what came before it counts
            p.error = str(err)
        except ValueError as err:
            raise UsageError(f"capture of point {p.name!r} is damaged: {err}; {VALID}") from None
    return heapq.merge(*(tagged(i, p) for i, p in enumerate(points)), key=lambda r: (r[0], r[1]))


def verify(points: Sequence[Point], key: Sequence[str] = KEY, paths: Sequence[str] | None = None,
           after: str | None = None, window: int = WINDOW, max_delay_ns: int = MAX_DELAY_NS,
           max_streams: int = MAX_STREAMS) -> dict:
    """Checks the captures of `points` (see the module); `paths`: the two points that carry
    the replicas (default: those named path_a and path_b; [] for none), `after`: the point
    after elimination (default: the one named after_elimination or listener; "" for none).
    Returns the report."""
    names = [p.name for p in points]
    if len(points) > MAX_CAPTURES:
        raise UsageError(f"{len(points)} captures given, more than the {MAX_CAPTURES} verify checks at once")
    for p in points:
        p.format = check_capture(p.file, "capture", p.root)
    unknown = [f for f in key if f not in FIELDS]
    if unknown or not key:
        raise UsageError(f"stream key field {unknown[0] if unknown else '(none)'!r} is not valid "
                         f"({', '.join(FIELDS)})")
    if not 16 <= window <= 1 << 20:
        raise UsageError(f"window {window} is out of range (16..1048576 sequence numbers)")
    per_stream = window * (len(points) + 1)
    if per_stream > MAX_NUMBERS_HELD:
        raise UsageError(f"window {window} at {len(points)} captures holds {per_stream} sequence numbers per stream, "
                         f"more than the {MAX_NUMBERS_HELD} held at once: give a smaller --window")
    max_streams = min(max_streams, MAX_NUMBERS_HELD // per_stream)
    if paths is None:
        paths = [n for n in PATH_POINTS if n in names]
        paths = paths if len(paths) == 2 else []
    if after is None:
        after = next((n for n in AFTER_POINTS if n in names), None)
    after = after or None  # "": no point after elimination
    for n in [*paths, *([after] if after else [])]:
        if n not in names:
            raise UsageError(f"point {n!r} is not among the captures ({', '.join(names)})")
    if paths and len(set(paths)) != 2:
        raise UsageError(f"--paths needs two different points, not {','.join(paths)}")
    path_idx = [names.index(n) for n in paths]
    key_at = [FIELDS.index(f) for f in key]
    after_idx = names.index(after) if after else None
    n_points = len(points)

    streams: dict[tuple, dict] = {}  # key -> {"id", "fields", "points": [_PointStream], "match": {}, ...}
    frames_at = [0] * n_points
    other = [0] * n_points
    bounds: list[list[int | None]] = [[None, None] for _ in points]
    for t, i, frame in _merged(points):
        frames_at[i] += 1
        b = bounds[i]
        if b[0] is None:
            b[0] = t
        b[1] = t
        if len(frame) < 14:
            other[i] += 1
            continue
        fields, rtag, rtag_error, probe = _dissect(frame)
        k = tuple(fields[j] for j in key_at)
        s = streams.get(k)
        if s is None:
            if len(streams) >= max_streams:
                other[i] += 1
                continue
            s = streams[k] = {"fields": {f: _shown(f, v) for f, v in zip(key, k)},
                              "points": [_PointStream(window) for _ in points], "match": {}, "order": deque(),
                              "pairs": {}, "skew": Histogram(), "numbered": False,
                              "not_delivered": {"p": 0, "r": 0}, "not_delivered_seqs": []}
        ps = s["points"][i]
        ps.frames += 1
        if ps.first_ns is None:
            ps.first_ns = t
        ps.last_ns = t
        ps.vlans.add(fields[2])
        seq = None
        if rtag_error:
            ps.rtag_errors += 1
        elif rtag is not None:
            ps.rtag_frames += 1
            if ps.numbering is None:
                ps.numbering, ps.tracker = "rtag", SequenceTracker(65536, window)
            seq = rtag if ps.numbering == "rtag" else probe
        elif probe is not None:
            if ps.numbering is None:
                ps.numbering, ps.tracker = "probe", SequenceTracker(None, window)
            seq = probe if ps.numbering == "probe" else None
        if seq is not None:
            ps.tracker.add(seq)
        if rtag_error:
            s["numbered"] = True
        if rtag is not None or probe is not None:
            s["numbered"] = True
            _match(s, ("p", probe) if probe is not None else ("r", rtag), i, t, n_points,
                   path_idx, after_idx, window, max_delay_ns)

    report_streams = []
    problems = [f"{p.name}: read up to a damaged record only: {p.error}" for p in points if p.error]
    for s in streams.values():
        if not s["numbered"]:
            for i, ps in enumerate(s["points"]):
                other[i] += ps.frames
            continue
        _flush(s, path_idx, after_idx)
        sid = f"s{len(report_streams) + 1}"
        flow = " ".join(f"{f}={v}" for f, v in s["fields"].items() if v is not None)
        per_point = {}
        for i, ps in enumerate(s["points"]):
            if not ps.frames:
                continue
            expected = points[i].rtag_expected
            expected = ps.rtag_frames > 0 if expected is None else expected
            row = {"frames": ps.frames, "first_ns": ps.first_ns, "last_ns": ps.last_ns,
                   "vlans": sorted(ps.vlans, key=lambda v: -1 if v is None else v),
                   "rtag_expected": expected, "rtag_frames": ps.rtag_frames,
                   "rtag_missing": ps.frames - ps.rtag_frames if expected else 0,
                   "rtag_unexpected": 0 if expected else ps.rtag_frames,
                   "rtag_errors": ps.rtag_errors, "numbering": ps.numbering,
                   **(ps.tracker.finish() if ps.tracker else {})}
            per_point[names[i]] = row
            where = f"{names[i]}: stream {sid} ({flow})"
            if row["rtag_missing"]:
                problems.append(f"{where}: {row['rtag_missing']} of {ps.frames} frames without the R-TAG expected there")
            if row["rtag_unexpected"]:
                problems.append(f"{where}: {row['rtag_unexpected']} frames R-tagged where no R-TAG is expected")
            if ps.rtag_errors:
                problems.append(f"{where}: {ps.rtag_errors} frames with an R-TAG cut short")
        elimination = None
        if after_idx is not None and names[after_idx] in per_point:
            row = per_point[names[after_idx]]
            dups = row.get("duplicates", 0)
            # a frame known by its R-TAG alone cannot be found where the tag is gone
            kinds = ("p", "r") if row["rtag_frames"] else ("p",)
            elimination = {"point": names[after_idx], "numbering": row["numbering"], "duplicates": dups,
                           "exactly_one_copy": row["numbering"] is not None and dups == 0,
                           "lost": row.get("missing", 0), "not_delivered": sum(s["not_delivered"][k] for k in kinds),
                           "not_delivered_seqs": [n for n in s["not_delivered_seqs"]
                                                  if "rtag" not in n or "r" in kinds]}
            if dups:
                problems.append(f"{names[after_idx]}: stream {sid} ({flow}): {dups} sequence numbers seen again "
                                "after elimination (exactly one copy each expected)")
        skew = None
        if len(path_idx) == 2 and all(names[j] in per_point for j in path_idx):
            skew = {"points": [names[j] for j in path_idx],
                    "sign": f"time at {names[path_idx[1]]} - time at {names[path_idx[0]]}",
                    **s["skew"].report()}
        latency = []
        for (a, b), h in sorted(s["pairs"].items()):  # from the point that sees a number first (on average)
            a, b, h = (b, a, h.flip()) if h.total < 0 else (a, b, h)
            latency.append({"from": names[a], "to": names[b], **h.report()})
        report_streams.append({"id": sid, "flow": s["fields"], "points": per_point, "skew": skew,
                               "latency": latency, "elimination": elimination})
    return {"captures": [{"point": p.name, "file": str(p.file), "format": p.format,
                          "frames": frames_at[i], "first_ns": bounds[i][0], "last_ns": bounds[i][1],
                          "other_frames": other[i], "rtag_expected": p.rtag_expected, "error": p.error}
                         for i, p in enumerate(points)],
            "key": list(key), "window": window, "max_delay_ns": max_delay_ns,
            "paths": list(paths), "after_elimination": after,
            "streams": report_streams, "problems": problems, "ok": not problems}


def _match(s: dict, number: tuple, i: int, t: int, n_points: int, path_idx: list[int], after_idx: int | None,
           window: int, max_delay_ns: int) -> None:
    """Records the first sighting of `number` at point `i` and the time differences to the
    points that saw it before; forgets sightings beyond the window or older than max_delay."""
    match, order = s["match"], s["order"]
    seen = match.get(number)
    if seen is None:
        seen = match[number] = [None] * n_points
        seen.append(t)  # when it was first seen anywhere
        order.append(number)
        while len(order) > window or t - match[order[0]][-1] > max_delay_ns:
            oldest = order.popleft()
            _forget(s, oldest, match.pop(oldest), path_idx, after_idx)
    if seen[i] is not None:
        return
    seen[i] = t
    for j in range(n_points):
        tj = seen[j]
        if tj is None or j == i:
            continue
        pair, delta = ((j, i), t - tj) if j < i else ((i, j), tj - t)
        if len(path_idx) == 2 and {i, j} == set(path_idx):
            s["skew"].add(t - tj if i == path_idx[1] else tj - t)
        else:
            h = s["pairs"].get(pair)
            if h is None:
                h = s["pairs"][pair] = Histogram()
            h.add(delta)


def _forget(s: dict, number: tuple, seen: list, path_idx: list[int], after_idx: int | None) -> None:
    """A sequence number leaves the comparison table: one that reached a path point but not
    the point after elimination counts as not delivered."""
    if after_idx is not None and path_idx and seen[after_idx] is None and any(seen[j] is not None for j in path_idx):
        s["not_delivered"][number[0]] += 1
        if len(s["not_delivered_seqs"]) < MAX_LISTED:
            s["not_delivered_seqs"].append({"probe" if number[0] == "p" else "rtag": number[1]})


def _flush(s: dict, path_idx: list[int], after_idx: int | None) -> None:
    for number, seen in s["match"].items():
        _forget(s, number, seen, path_idx, after_idx)
    s["match"].clear()
    s["order"].clear()


def _ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def _times(h: dict) -> str:
    if not h["count"]:
        return "none matched"
    top = max(h["histogram"], key=lambda b: b["count"])
    upto = "+" if top["to_ns"] is None else f"-{_ms(top['to_ns'])}"
    return (f"{h['count']} matched, min {_ms(h['min_ns'])}, mean {_ms(h['mean_ns'])}, max {_ms(h['max_ns'])}"
            f" (most in {_ms(top['from_ns'])}{upto})")


def summary(report: dict) -> str:
    """The report in words: per capture, per stream and point, skew, latency, elimination,
    problems."""
    lines = []
    for c in report["captures"]:
        lines.append(f"{c['point']}: {c['file']} ({c['format']}), {c['frames']} frames, "
                     f"{c['other_frames']} not of a stream")
    for st in report["streams"]:
        flow = " ".join(f"{k}={v}" for k, v in st["flow"].items() if v is not None)
        lines.append(f"stream {st['id']}: {flow}")
        for name, p in st["points"].items():
            tag = (f"R-TAG {p['rtag_frames']}/{p['frames']}" + (" expected" if p["rtag_expected"] else " not expected"))
            line = f"  {name:<18}{p['frames']:>9} frames  {tag}; VLAN {p['vlans']}"
            if p["numbering"]:
                line += (f"; by {p['numbering']} seq {p['first_seq']}..{p['last_seq']}: {p['unique']} unique, "
                         f"{p['missing']} missing in {p['gap_runs']} gaps (largest {p['largest_gap']}), "
                         f"{p['duplicates']} duplicates, {p['late']} late, {p['out_of_window']} out of window")
            lines.append(line)
        if st["skew"]:
            lines.append(f"  skew {st['skew']['points'][0]} -> {st['skew']['points'][1]}: {_times(st['skew'])}")
        for lat in st["latency"]:
            lines.append(f"  latency {lat['from']} -> {lat['to']}: {_times(lat)}")
        e = st["elimination"]
        if e:
            verdict = "exactly one copy of each" if e["exactly_one_copy"] else (
                f"{e['duplicates']} seen twice" if e["numbering"] else "no sequence number to check")
            lines.append(f"  after elimination ({e['point']}): {verdict}; {e['lost']} lost, "
                         f"{e['not_delivered']} reached a path but not {e['point']}")
    if not report["streams"]:
        lines.append("no stream: no frame carried an R-TAG or frerlab's probe")
    lines += [f"PROBLEM: {p}" for p in report["problems"]] or ["no problem found"]
    return "\n".join(lines)
