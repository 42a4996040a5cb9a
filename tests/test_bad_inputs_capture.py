"""Bad input to `frerlab verify` (frerlab.capture): a file that is no capture (text shaped like
/etc/shadow, binary, empty, cut short, a device, a FIFO, a directory, a huge file), a capture
damaged inside, a capture directory whose manifest (capture.json, or a fail-over run's
meta.json) is damaged or names a file outside the directory, and inputs past the bounds. Each
is refused with exit code 2 (UsageError) and one message naming the file and what is valid,
never a traceback and never a byte of the file.

Every class has rows run as the real `frerlab` CLI (tests/badinput.py); the other rows call
frerlab.capture.verify directly, as the CLI does. The captures are built here with struct, so
nothing needs the network.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from badinput import SECRET, assert_refused
from frerlab.capture import reader, verify
from frerlab.errors import UsageError
from frerlab.files import MAX_JSON_DIGITS
from frerlab.pcap import MAX_FRAME

#: Texts no message may hold: the secret lines, and the first bytes of one in hex.
NEVER = [*SECRET, "SecretSalt", "daemon:", "726f6f74"]
T0 = 1_795_000_000_000_000_000
FRAME = bytes.fromhex("02fe00000002" "02fe00000001" "0800") + bytes(46)


def pcap_header(linktype: int = 1) -> bytes:
    return struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, linktype)


def pcap(frames: int = 3) -> bytes:
    """A nanosecond pcap of `frames` frames."""
    return pcap_header() + b"".join(struct.pack("<IIII", T0 // 10**9, n, len(FRAME), len(FRAME)) + FRAME
                                    for n in range(frames))


def block(kind: int, body: bytes, length: int | None = None, trailer: int | None = None) -> bytes:
    """A little-endian pcapng block; `length`, `trailer`: wrong lengths to write instead."""
    body += bytes(-len(body) % 4)
    right = len(body) + 12
    return struct.pack("<II", kind, right if length is None else length) + body + \
        struct.pack("<I", right if trailer is None else trailer)


SHB_BODY = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
PCAPNG_HEAD = block(0x0A0D0D0A, SHB_BODY) + block(1, struct.pack("<HHI", 1, 0, 0))
EPB_BODY = struct.pack("<IIIII", 0, 0, 0, len(FRAME), len(FRAME)) + FRAME

#: File name -> content of the files the rows give `verify`.
FILES = {
    "secret.pcap": ("\n".join(SECRET) + "\n").encode(),
    "binary.pcap": bytes(range(256)) * 4,
    "empty.pcap": b"",
    "short.pcap": pcap()[:10],
    "linktype.pcap": pcap_header(105),
    "huge-frame.pcap": pcap_header() + struct.pack("<IIII", 0, 0, 0xFFFFFFFF, 60) + FRAME,
    "shb-length.pcapng": block(0x0A0D0D0A, SHB_BODY, length=5),
    "block-length.pcapng": PCAPNG_HEAD + block(6, EPB_BODY, length=5),
    "huge-block.pcapng": PCAPNG_HEAD + block(6, EPB_BODY, length=0xFFFFFFF0),
    "trailer.pcapng": PCAPNG_HEAD + block(6, EPB_BODY, trailer=0x1000),
    "frame-length.pcapng": PCAPNG_HEAD + block(6, struct.pack("<IIIII", 0, 0, 0, 5000, 5000) + FRAME),
    "good.pcap": pcap(),
    "good.pcapng": PCAPNG_HEAD + block(6, EPB_BODY),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """FILES, a FIFO `fifo.pcap`, an empty directory `dir`, a sparse file one byte above
    MAX_CAPTURE_BYTES with a pcap header `huge.pcap`."""
    d = tmp_path_factory.mktemp("bad-captures")
    for name, content in FILES.items():
        (d / name).write_bytes(content)
    os.mkfifo(d / "fifo.pcap")
    (d / "dir").mkdir()
    with open(d / "huge.pcap", "wb") as f:
        f.write(pcap())
        f.truncate(reader.MAX_CAPTURE_BYTES + 1)
    return d


def refused(captures: list[str], expected: list[str], cli: bool, run_dir: Path, window: int | None = None) -> str:
    """`frerlab verify CAPTURES [--window WINDOW]` is refused (exit 2, one message holding every
    `expected` text and no secret), through the real CLI if `cli`, else through the calls the
    CLI makes."""
    if cli:
        argv = ["verify", *captures, *([] if window is None else ["--window", str(window)])]
        message = assert_refused(argv, expected, run_dir, never=NEVER)
    else:
        with pytest.raises(UsageError) as refusal:
            points, _ = verify.points_from(captures)
            verify.verify(points, window=verify.WINDOW if window is None else window)
        message = str(refusal.value)
        for text in expected:
            assert text in message, f"{text!r} not in {message!r}"
        for text in NEVER:
            assert text not in message, f"{message!r} shows {text!r}"
    assert len(message.strip().splitlines()) == 1, f"one line, not:\n{message}"
    return message


VALID = "verify reads pcap and pcapng files of Ethernet frames"

#: (file, texts the message holds beside its path and VALID, through the CLI): files that are
#: no capture, refused before any is read.
NOT_A_CAPTURE_ROWS = [
    ("secret.pcap", ["is not a capture: no pcap or pcapng header"], True),
    ("binary.pcap", ["(1024 bytes) is not a capture: no pcap or pcapng header"], False),
    ("empty.pcap", ["(0 bytes) is not a capture: no pcap or pcapng header (0 bytes read)"], False),
    ("short.pcap", ["(10 bytes) is not a capture: 10 bytes is too short for a pcap header (24)"], False),
    ("linktype.pcap", ["is not a capture: link type 105 is not Ethernet (1)"], False),
    ("shb-length.pcapng", [f"the block at byte 0 has length 5 (a multiple of 4, 28..{reader.MAX_BLOCK_BYTES})"],
     False),
    ("fifo.pcap", ["is not a regular file (a device, FIFO or socket)"], True),
    ("dir", ["holds no capture.json and no .pcap or .pcapng file"], False),
    ("missing.pcap", ["does not exist"], False),
    ("huge.pcap", [f"is {reader.MAX_CAPTURE_BYTES + 1} bytes, more than the {reader.MAX_CAPTURE_BYTES} (16 GiB)"],
     True),
]


@pytest.mark.parametrize("file, expected, cli", NOT_A_CAPTURE_ROWS, ids=[r[0] for r in NOT_A_CAPTURE_ROWS])
def test_a_file_that_is_no_capture_is_refused_before_any_is_read(files, tmp_path, file, expected, cli):
    path = str(files / file)
    refused([str(files / "good.pcap"), path], [f"'{path}'", *expected, VALID], cli, tmp_path / "run")


@pytest.mark.parametrize("cli", [True, False], ids=["cli", "python"])
def test_a_device_is_refused_not_read(tmp_path, cli):
    refused(["/dev/zero"], ["capture '/dev/zero' is not a regular file", VALID], cli, tmp_path / "run")


#: (file, texts): captures whose header is right but which are damaged inside.
DAMAGED_ROWS = [
    ("block-length.pcapng", [f"the block at byte 48 has length 5 (a multiple of 4, 32..{reader.MAX_BLOCK_BYTES})"],
     True),
    ("huge-block.pcapng", ["the block at byte 48 has length 4294967280"], False),
    ("trailer.pcapng", ["the block at byte 48 ends with another length than its 92"], False),
    ("frame-length.pcapng", ["the packet block at byte 48 claims 5000 bytes of frame in 60"], False),
    ("huge-frame.pcap", [f"the record at byte 24 claims 4294967295 bytes of frame (at most {MAX_FRAME})"], True),
]


@pytest.mark.parametrize("file, expected, cli", DAMAGED_ROWS, ids=[r[0] for r in DAMAGED_ROWS])
def test_a_capture_damaged_inside_is_refused_naming_where(files, tmp_path, file, expected, cli):
    path = str(files / file)
    refused([path], [f"capture of point '{Path(file).stem}' is damaged: {path}: ", *expected, VALID], cli,
            tmp_path / "run")


def test_a_capture_cut_inside_a_record_is_read_up_to_there(files, tmp_path):
    """What tcpdump leaves when killed mid-write is no bad input: the frames before count, and
    the cut is a problem of the report (docs/verify.md)."""
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(FILES["good.pcapng"] + block(6, EPB_BODY)[:40])
    report = verify.verify([verify.Point("cut", cut)])
    assert report["captures"][0]["frames"] == 1 and not report["ok"]
    assert "truncated block at byte 140 (40 of 92 bytes)" in report["captures"][0]["error"]


POINT = {"file": "path_a.pcap", "rtag_expected": True}
DEEP = "[" * 100_000 + "]" * 100_000

#: (capture.json's content, texts the message holds, through the CLI).
MANIFEST_ROWS = [
    ({"points": {"a": {"file": "../secret.pcap"}}},
     ["points.a.file: '../secret.pcap' is not the name of a file in the capture directory"], True),
    ({"points": {"a": {"file": "/etc/shadow"}}},
     ["points.a.file: '/etc/shadow' is not the name of a file in the capture directory"], False),
    ({"points": {"../x": POINT}}, ["capture point name '../x' is not valid"], False),
    ({"points": {SECRET[0]: POINT}}, ["capture point name (a text of", "is not valid"], True),
    ({"roles": {}}, ["points: Field required"], True),
    ({"points": {}}, ["points: Dictionary should have at least 1 item"], False),
    ({"points": {f"p{i}": POINT for i in range(verify.MAX_CAPTURES + 1)}},
     [f"points: Dictionary should have at most {verify.MAX_CAPTURES} items"], False),
    ({"points": {"a": {"file": 5}}}, ["points.a.file: Input should be a valid string"], False),
    ({"points": {"a": {**POINT, "rtag_expected": "yes"}}}, ["points.a.rtag_expected: Input should be a valid boolean"],
     False),
    ({"points": {"a": {**POINT, "rtag_expected": 1}}}, ["points.a.rtag_expected: Input should be a valid boolean"],
     False),
    ({"points": [POINT]}, ["points: Input should be a valid dictionary"], False),
    ([POINT], ["the top level: should be a JSON object"], False),
    ({"points": {"a": POINT}, "roles": []}, ["roles: should be a JSON object"], False),
    ({"points": {"a": POINT}, "roles": {"paths": ["a"]}}, ["roles.paths: List should have at least 2 items"], False),
    ('{"points": {"a": {"file": "path_a.pcap", "rtag_expected": NaN}}}', ["NaN is not a number JSON allows"], True),
    ('{"points": {"a": {"file": "path_a.pcap", "rtag_expected": ' + "9" * 50 + "}}}",
     [f"an integer of 50 digits (at most {MAX_JSON_DIGITS})"], False),
    (DEEP, ["it is nested too deeply"], False),
    ("\n".join(SECRET), ["not valid JSON at line 1, column 1"], False),
    ("", ["not valid JSON at line 1, column 1"], False),
]


def capture_dir(base: Path, manifest: object | None = None) -> Path:
    """A capture directory `cap` with a good path_a.pcap and capture.json `manifest` (a text as
    it is, anything else as JSON), beside a secret file secret.pcap and a good capture
    outside.pcap."""
    (base / "secret.pcap").write_text("\n".join(SECRET))
    (base / "outside.pcap").write_bytes(pcap())
    cap = base / "cap"
    cap.mkdir()
    (cap / "path_a.pcap").write_bytes(pcap())
    if manifest is not None:
        (cap / verify.MANIFEST).write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return cap


@pytest.mark.parametrize("manifest, expected, cli", MANIFEST_ROWS, ids=[str(i) for i in range(len(MANIFEST_ROWS))])
def test_a_damaged_capture_manifest_is_refused_naming_the_field(tmp_path, manifest, expected, cli):
    cap = capture_dir(tmp_path, manifest)
    refused([str(cap)], [f"capture manifest '{cap / verify.MANIFEST}'", *expected], cli, tmp_path / "run")


#: (what is planted in the capture directory, texts, through the CLI): paths leading outside it.
ESCAPE_ROWS = [
    ("manifest names a symlink to a secret", ["capture '{cap}/link.pcap' leads outside '{cap}'"], True),
    ("manifest names a symlink to a capture", ["capture '{cap}/good-link.pcap' leads outside '{cap}'"], False),
    ("manifest is a symlink to a secret", ["capture manifest '{cap}/capture.json' leads outside '{cap}'"], True),
    ("manifest is a directory", ["capture manifest '{cap}/capture.json' is a directory"], False),
    ("no manifest, a symlink among the captures", ["capture '{cap}/good-link.pcap' leads outside '{cap}'"], False),
    ("no manifest, a FIFO among the captures", ["capture '{cap}/fifo.pcap' is not a regular file"], False),
]


@pytest.mark.parametrize("planted, expected, cli", ESCAPE_ROWS, ids=[r[0] for r in ESCAPE_ROWS])
def test_no_path_of_a_capture_directory_leads_outside_it(tmp_path, planted, expected, cli):
    cap = capture_dir(tmp_path)
    (cap / "link.pcap").symlink_to(tmp_path / "secret.pcap")
    (cap / "good-link.pcap").symlink_to(tmp_path / "outside.pcap")
    manifest = cap / verify.MANIFEST
    if planted.startswith("manifest names"):
        file = "link.pcap" if "secret" in planted else "good-link.pcap"
        manifest.write_text(json.dumps({"points": {"a": POINT, "b": {"file": file}}}))
    elif planted == "manifest is a symlink to a secret":
        manifest.symlink_to(tmp_path / "secret.pcap")
    elif planted == "manifest is a directory":
        manifest.mkdir()
    elif "FIFO" in planted:
        (cap / "link.pcap").unlink()
        (cap / "good-link.pcap").unlink()
        os.mkfifo(cap / "fifo.pcap")
    refused([str(cap)], [text.format(cap=cap) for text in expected], cli, tmp_path / "run")


SETTINGS = {"mode": "frer", "replicate_at": "sw1", "eliminate_at": "sw2"}

#: (a fail-over run's meta.json, texts, through the CLI).
FAILOVER_ROWS = [
    ([SETTINGS], ["run metadata '{run}/meta.json' is damaged: it holds no JSON object"], True),
    ({"test": "failover"}, ["is damaged: testbed: Field required"], False),
    ({"test": "failover", "testbed": [SETTINGS]}, ["is damaged: testbed: should be a JSON object"], False),
    ({"test": "failover", "testbed": {**SETTINGS, "mode": "nonsense"}},
     ["is damaged: testbed.mode: Input should be 'frer' or 'control'"], False),
    ({"test": "failover", "testbed": {**SETTINGS, "eliminate_at": None}},
     ["is damaged: testbed.eliminate_at: Input should be 'sw2' or 'listener'"], False),
    ("\n".join(SECRET), ["run metadata '{run}/meta.json' cannot be read (not valid JSON at line 1"], False),
    ({"test": "failover", "testbed": SETTINGS}, ["capture '{run}/listener.pcap' leads outside '{run}'"], True),
]


@pytest.mark.parametrize("meta, expected, cli", FAILOVER_ROWS, ids=[str(i) for i in range(len(FAILOVER_ROWS))])
def test_a_damaged_failover_run_is_refused_naming_the_field(tmp_path, meta, expected, cli):
    run = capture_dir(tmp_path)
    (run / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    (run / "listener.pcap").symlink_to(tmp_path / "secret.pcap")
    refused([str(run)], [text.format(run=run) for text in expected], cli, tmp_path / "run")


#: (captures given, --window, texts, through the CLI): inputs past verify's bounds.
BOUND_ROWS = [
    (verify.MAX_CAPTURES + 1, None,
     [f"{verify.MAX_CAPTURES + 1} captures given, more than the {verify.MAX_CAPTURES} verify checks at once"], True),
    (8, 1 << 20, [f"window 1048576 at 8 captures holds {9 << 20} sequence numbers per stream, more than the "
                  f"{verify.MAX_NUMBERS_HELD} held at once"], True),
    (1, 1 << 21, ["window 2097152 is out of range (16..1048576 sequence numbers)"], False),
]


@pytest.mark.parametrize("count, window, expected, cli", BOUND_ROWS, ids=["captures", "numbers held", "window"])
def test_inputs_past_the_bounds_are_refused_naming_the_total_and_the_bound(tmp_path, count, window, expected, cli):
    for i in range(count):
        (tmp_path / f"p{i}.pcap").write_bytes(pcap())
    refused([str(tmp_path / f"p{i}.pcap") for i in range(count)], expected, cli, tmp_path / "run", window)


def test_a_capture_growing_past_the_bound_while_read_is_refused(files):
    for file in ("good.pcap", "good.pcapng"):
        with pytest.raises(ValueError, match="grew past 100 bytes while read, the most read of one capture"):
            list(reader.read_capture(files / file, max_bytes=100))


def test_fewer_streams_are_followed_when_each_holds_more_numbers(tmp_path):
    """One capture at the default window: each stream holds up to 2 x 16384 numbers, so
    MAX_NUMBERS_HELD / 32768 = 256 streams are followed; the frames of the others are counted."""
    followed = verify.MAX_NUMBERS_HELD // (verify.WINDOW * 2)
    records = []
    for flow in range(followed + 4):
        frame = bytearray(FRAME[:12] + b"\x08\x00" + struct.pack(">BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0,
                                                                 bytes(4), bytes(4)))
        frame += struct.pack(">HHHH", 40000, flow, 26, 0) + bytes([0xFB, ord("D"), 0, 1]) + (1).to_bytes(8, "big")
        frame += bytes(6)
        records.append(struct.pack("<IIII", T0 // 10**9, flow, len(frame), len(frame)) + bytes(frame))
    (tmp_path / "p.pcap").write_bytes(pcap_header() + b"".join(records))
    report = verify.verify([verify.Point("p", tmp_path / "p.pcap")])
    assert len(report["streams"]) == followed == 256 and report["captures"][0]["other_frames"] == 4
