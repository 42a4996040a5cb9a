"""`frerlab verify` and `frerlab capture` (frerlab.capture): the checks on generated captures
whose every gap, duplicate and delay is known; pcapng read like pcap; per-frame agreement with
tshark's dissection; constant memory over a capture of millions of frames; and on a real
testbed, verify's counts equal the data plane's counters and the receiver's report."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NEEDS_BPF, interruptible, processes_naming

from frerlab.capture import verify
from frerlab.capture.reader import read_capture
from frerlab.frer import push_rtag
from frerlab.pcap import read_pcap, write_pcap

CLI = [sys.executable, "-m", "frerlab.cli"]
HAS_TSHARK = shutil.which("tshark") is not None
needs_tshark = pytest.mark.skipif(not HAS_TSHARK, reason="tshark is not installed (apt-get install tshark)")
T0 = 1_795_000_000_000_000_000


def frame(probe: int | None, rtag: int | None = None, vlan: int | None = None, dport: int = 5555,
          kind: str = "D") -> bytes:
    """Talker -> listener UDP frame with frerlab's probe (sequence number `probe`; None: no
    probe), optionally VLAN-tagged and R-tagged."""
    payload = (bytes([0xFB, ord(kind), 0, 1]) + (probe or 0).to_bytes(8, "big") + bytes(6)) if probe is not None \
        else bytes(18)
    udp = struct.pack(">HHHH", 40000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes([198, 18, 0, 1]),
                     bytes([198, 18, 0, 2]))
    tag = b"" if vlan is None else struct.pack(">HH", 0x8100, vlan)
    f = bytes.fromhex("02fe00000002" "02fe00000001") + tag + b"\x08\x00" + ip + udp
    return f if rtag is None else push_rtag(f, rtag)


def scenario(tmp: Path, after_dup: int | None = None) -> dict[str, Path]:
    """1000 numbers (R-TAG = probe + 65000, so the tag wraps at probe 536) replicated onto
    paths a (VLAN 10) and b (VLAN 20) and eliminated into `after` (untagged). Path a loses
    100..109, carries 200 twice and 300 late (after 302); path b loses 500 and 700..702 and runs
    30 us behind a; after elimination gets each number once 100 us after a (or b), and
    `after_dup` twice."""
    a, b, after = [], [], []
    for n in range(1000):
        t = T0 + n * 1_000_000
        tag = (n + 65000) % 65536
        if not 100 <= n <= 109 and n != 300:
            a.append((t, frame(n, tag, 10)))
        if n == 200:
            a.append((t + 5_000, frame(n, tag, 10)))
        if n == 302:
            a.append((t + 6_000, frame(300, (300 + 65000) % 65536, 10)))
        if n != 500 and not 700 <= n <= 702:
            b.append((t + 30_000, frame(n, tag, 20)))
        after.append((t + 100_000, frame(n, None, 0)))
        if n == after_dup:
            after.append((t + 150_000, frame(n, None, 0)))
    files = {"path_a": tmp / "path_a.pcap", "path_b": tmp / "path_b.pcap", "after_elimination": tmp / "after.pcap"}
    for name, frames in (("path_a", a), ("path_b", b), ("after_elimination", after)):
        write_pcap(files[name], sorted(frames))
    return files


def points(files: dict[str, Path]) -> list[verify.Point]:
    return [verify.Point(name, f) for name, f in files.items()]


def test_gaps_duplicates_late_skew_latency_and_one_copy_after_elimination(tmp_path):
    report = verify.verify(points(scenario(tmp_path)))
    assert report["ok"] and report["problems"] == []
    assert report["paths"] == ["path_a", "path_b"] and report["after_elimination"] == "after_elimination"
    (st,) = report["streams"]
    assert st["flow"] == {"dst_mac": "02:fe:00:00:00:02", "src_mac": "02:fe:00:00:00:01", "src_ip": "198.18.0.1",
                          "dst_ip": "198.18.0.2", "proto": 17, "src_port": 40000, "dst_port": 5555}
    a, b, after = (st["points"][n] for n in ("path_a", "path_b", "after_elimination"))
    assert (a["frames"], a["rtag_frames"], a["vlans"], a["numbering"]) == (991, 991, [10], "rtag")
    assert (a["first_seq"], a["last_seq"], a["span"]) == (65000, (999 + 65000) % 65536, 1000), "wraps at 65535"
    assert (a["unique"], a["missing"], a["gap_runs"], a["largest_gap"]) == (990, 10, 1, 10)
    assert a["gaps"] == [{"from_seq": 65100, "count": 10}]
    assert (a["duplicates"], a["late"], a["out_of_window"]) == (1, 1, 0)
    assert (b["frames"], b["unique"], b["missing"], b["gap_runs"], b["largest_gap"], b["duplicates"]) == \
        (996, 996, 4, 2, 3, 0)
    assert b["gaps"] == [{"from_seq": (500 + 65000) % 65536, "count": 1}, {"from_seq": 164, "count": 3}]
    assert (after["frames"], after["rtag_frames"], after["rtag_expected"], after["numbering"]) == \
        (1000, 0, False, "probe")
    assert (after["unique"], after["missing"], after["duplicates"], after["vlans"]) == (1000, 0, 0, [0])
    skew = st["skew"]
    assert skew["points"] == ["path_a", "path_b"]
    # every number on both paths: b 30 us after a, but 300 (a late by 2 ms: b first) and 200 (once)
    both = 1000 - 10 - 4
    assert skew["count"] == both and skew["max_ns"] == 30_000 and skew["min_ns"] == 30_000 - 2_006_000
    assert skew["negative"] == 1
    assert {(h["from_ns"], h["to_ns"]): h["count"] for h in skew["histogram"]} == \
        {(20_000, 50_000): both - 1, (1_000_000, 2_000_000): 1}
    latency = {(x["from"], x["to"]): x for x in st["latency"]}
    assert set(latency) == {("path_a", "after_elimination"), ("path_b", "after_elimination")}
    lat_a = latency[("path_a", "after_elimination")]
    assert lat_a["count"] == 990 and lat_a["max_ns"] == 100_000 and lat_a["min_ns"] == 100_000 - 2_006_000
    assert latency[("path_b", "after_elimination")]["min_ns"] == 70_000
    e = st["elimination"]
    assert e["exactly_one_copy"] and e["duplicates"] == 0 and e["lost"] == 0 and e["not_delivered"] == 0


def test_a_second_copy_after_elimination_is_a_problem_and_the_exit_status_says_so(tmp_path):
    files = scenario(tmp_path, after_dup=42)
    done = subprocess.run([*CLI, "verify", *map(str, files.values()), "--after", "after", "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (st,) = report["streams"]
    assert st["elimination"]["duplicates"] == 1 and not st["elimination"]["exactly_one_copy"]
    assert len(report["problems"]) == 1 and "seen again after elimination" in report["problems"][0]
    text = subprocess.run([*CLI, "verify", *map(str, files.values()), "--after", "after"],
                          capture_output=True, text=True)
    assert text.returncode == 1 and "PROBLEM" in text.stdout and "skew path_a -> path_b" in text.stdout


def test_missing_rtag_where_expected_and_frames_of_no_stream(tmp_path):
    frames = [(T0 + n * 1000, frame(n, n, 10)) for n in range(50)]
    frames[10] = (frames[10][0], frame(10, None, 10))  # a copy without its tag
    frames.append((T0 + 10**6, bytes.fromhex("ffffffffffff02fe000000010806") + bytes(28)))  # ARP: no stream
    frames.append((T0 + 2 * 10**6, frame(None, None, None, dport=9)))  # a flow never numbered
    write_pcap(tmp_path / "p.pcap", frames)
    report = verify.verify([verify.Point("p", tmp_path / "p.pcap")])
    (st,) = report["streams"]
    p = st["points"]["p"]
    assert (p["frames"], p["rtag_frames"], p["rtag_missing"], p["unique"], p["missing"]) == (50, 49, 1, 49, 1)
    assert report["captures"][0]["other_frames"] == 2 and not report["ok"]
    assert "1 of 50 frames without the R-TAG expected there" in report["problems"][0]


def test_short_frames_and_a_cut_rtag_do_not_stop_the_check(tmp_path):
    tagged = frame(1, 7)
    write_pcap(tmp_path / "p.pcap", [(T0, bytes(10)), (T0 + 1, tagged[:16]), (T0 + 2, tagged)])
    report = verify.verify([verify.Point("p", tmp_path / "p.pcap")])
    assert report["captures"][0]["frames"] == 3 and not report["ok"]
    assert any("R-TAG cut short" in p for p in report["problems"])
    whole = tmp_path / "p.pcap"
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(whole.read_bytes()[:-20])  # tcpdump killed mid-write: the frames before count
    report = verify.verify([verify.Point("p", cut)])
    assert report["captures"][0]["frames"] == 2 and "truncated frame" in report["captures"][0]["error"]
    assert any("damaged record" in p for p in report["problems"])


def write_pcapng(path: Path, frames: list[tuple[int, bytes]], endian: str = "<", tsresol: int = 9) -> None:
    """A pcapng of one section and one Ethernet interface with if_tsresol `tsresol`."""
    def block(kind: int, body: bytes) -> bytes:
        body += bytes(-len(body) % 4)
        return struct.pack(endian + "II", kind, len(body) + 12) + body + struct.pack(endian + "I", len(body) + 12)
    unit = 10 ** 9 // 10 ** tsresol if tsresol <= 9 else None
    out = block(0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack(endian + "HHI", 1, 0, 0) + struct.pack(endian + "HHB3x", 9, 1, tsresol)
                 + struct.pack(endian + "HH", 0, 0))
    out += block(5, b"statistics are skipped")
    for t, f in frames:
        ticks = t // unit
        out += block(6, struct.pack(endian + "IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(f), len(f)) + f)
    path.write_bytes(out)


@pytest.mark.parametrize("endian,tsresol", [("<", 9), (">", 6)])
def test_pcapng_reads_like_pcap(tmp_path, endian, tsresol):
    frames = [(T0 + n * 1000, frame(n, n)) for n in range(20)]
    write_pcapng(tmp_path / "x.pcapng", frames, endian, tsresol)
    assert list(read_capture(tmp_path / "x.pcapng")) == frames  # whole microseconds: exact either way


def test_a_failover_runs_directory_names_its_points_and_roles(tmp_path):
    """eliminated at the listener: its port carries both copies, so it is no point after
    elimination and the second copies there are no problem; the paths expect R-TAGs."""
    files = scenario(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    for name, file in (("path_a", "path_a.pcap"), ("path_b", "path_b.pcap"), ("path_a", "listener.pcap")):
        shutil.copy(files[name], run / file)
    (run / "meta.json").write_text(json.dumps({"test": "failover", "testbed": {
        "mode": "frer", "replicate_at": "sw1", "eliminate_at": "listener"}}))
    pts, roles = verify.points_from([run])
    assert [(p.name, p.file.name, p.rtag_expected) for p in pts] == [
        ("path_a", "path_a.pcap", True), ("path_b", "path_b.pcap", True),
        ("after_elimination", "listener.pcap", True)]
    assert roles == {"paths": ["path_a", "path_b"], "after_elimination": None}
    done = subprocess.run([*CLI, "verify", str(run), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["after_elimination"] is None and report["streams"][0]["elimination"] is None


@needs_tshark
def test_editcap_pcapng_gives_the_same_report(tmp_path):
    files = scenario(tmp_path)
    ng = {}
    for name, f in files.items():
        ng[name] = tmp_path / f"{name}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(f), str(ng[name])], check=True, capture_output=True)
    assert [list(read_capture(f)) for f in ng.values()] == [list(read_pcap(f)) for f in files.values()]
    a, b = verify.verify(points(files)), verify.verify(points(ng))
    assert a["streams"] == b["streams"] and [c["format"] for c in b["captures"]] == ["pcapng"] * 3


def tshark_seqs(path: Path) -> list[int | None]:
    """Per frame, tshark's R-TAG sequence number (None: no tag)."""
    fields = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, check=True).stdout
    seq = "rtag.seqno" if "\trtag.seqno\t" in fields else "ieee8021cb.seq"
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", seq], capture_output=True, text=True,
                         check=True).stdout
    return [int(line, 0) if line.strip() else None for line in out.splitlines()]


def agree_with_tshark(path: Path, report: dict, point: str) -> None:
    """tshark's per-frame sequence numbers equal verify's dissection, and its counts verify's."""
    theirs = tshark_seqs(path)
    ours = [verify.dissect(f)["rtag"] for _, f in read_capture(path)]
    assert theirs == ours
    tagged = [s for s in theirs if s is not None]
    rows = [st["points"][point] for st in report["streams"] if point in st["points"]]
    assert sum(r["rtag_frames"] for r in rows) == len(tagged)
    if len(rows) == 1 and rows[0]["numbering"] == "rtag":
        r = rows[0]
        assert r["unique"] == len(set(tagged)) and r["duplicates"] == len(tagged) - len(set(tagged))


@needs_tshark
def test_tshark_sees_the_same_sequence_numbers(tmp_path):
    files = scenario(tmp_path)
    report = verify.verify(points(files))
    for name in ("path_a", "path_b", "after_elimination"):
        agree_with_tshark(files[name], report, name)
    ng = tmp_path / "a.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(files["path_a"]), str(ng)], check=True)
    agree_with_tshark(ng, verify.verify([verify.Point("path_a", ng)]), "path_a")


BIG_FRAMES = 2_000_000


@pytest.mark.slow
def test_millions_of_frames_in_constant_memory(tmp_path):
    """2 million R-tagged frames (a 10-frame gap every 100 000): verify's peak memory (RSS of
    a process doing only that) is that of 20 000 frames within a few MB, though the file is
    100 times larger."""
    def write(path: Path, n: int) -> None:
        base = frame(0, 0, 10)
        head, tail = base[:16], base[22:]

        def frames():
            for i in range(n):
                if i % 100_000 < 10 and i > 10:
                    continue
                f = bytearray(head + b"\xf1\xc1\x00\x00" + (i & 0xFFFF).to_bytes(2, "big") + tail)
                f[-14:-6] = i.to_bytes(8, "big")  # the probe's sequence number
                yield T0 + i * 1000, bytes(f)
        write_pcap(path, frames())

    def peak(path: Path) -> tuple[int, dict]:
        code = ("import json, resource, sys; from frerlab.capture import verify; "
                "r = verify.verify([verify.Point('p', sys.argv[1])]); "
                "print(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r['streams'][0]['points']['p']]))")
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
        rss_kib, row = json.loads(out.stdout)
        return rss_kib, row

    small, big = tmp_path / "small.pcap", tmp_path / "big.pcap"
    write(small, BIG_FRAMES // 100)
    write(big, BIG_FRAMES)
    started = time.monotonic()
    big_rss, row = peak(big)
    seconds = time.monotonic() - started
    small_rss, _ = peak(small)
    assert big.stat().st_size > 100 * 2**20
    gaps = BIG_FRAMES // 100_000 - 1
    assert (row["frames"], row["missing"], row["gap_runs"], row["duplicates"]) == \
        (BIG_FRAMES - 10 * gaps, 10 * gaps, gaps, 0)
    assert big_rss - small_rss < 8 * 1024, f"peak RSS {big_rss} KiB for {BIG_FRAMES} frames, {small_rss} for 1 %"
    print(f"{BIG_FRAMES} frames verified in {seconds:.1f} s, peak RSS {big_rss} KiB (1 %: {small_rss} KiB)")


# --- on a real testbed --------------------------------------------------------------------

def tcpdumps(out: Path) -> list[str]:
    """The tcpdump processes writing into `out` (a directory of the test's own)."""
    return processes_naming("tcpdump", str(out))


def needs_bpf(test):
    for mark in NEEDS_BPF:
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def frer_bed():
    from frerlab.testbed import bed

    with bed.Testbed(name=f"v{os.getpid() % 100000}", mode="frer") as tb:
        yield tb


@needs_bpf
def test_capture_for_a_duration_leaves_nothing_running(frer_bed, tmp_path):
    done = subprocess.run([*CLI, "capture", "--testbed", frer_bed.name, "-o", str(tmp_path), "--duration", "0.5"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert tcpdumps(tmp_path) == []
    manifest = json.loads((tmp_path / "capture.json").read_text())
    assert manifest["stopped_by"] == "duration" and manifest["complete"]
    assert 0.5 <= (manifest["stopped_ns"] - manifest["started_ns"]) / 1e9 < 5
    assert {p: (m["file"], m["rtag_expected"]) for p, m in manifest["points"].items()} == {
        "sent": ("talker.pcap", False), "path_a": ("path_a.pcap", True), "path_b": ("path_b.pcap", True),
        "after_elimination": ("listener.pcap", False)}
    assert all((tmp_path / m["file"]).stat().st_size >= 24 for m in manifest["points"].values())
    assert "check with: frerlab verify" in done.stdout


@needs_bpf
def test_testbed_capture_agrees_with_the_counters_and_the_receiver(frer_bed, tmp_path):
    from frerlab.testbed import failover, plan
    from frerlab.traffic.across import stream_across

    caps = tmp_path / "caps"
    mode = "frer"
    tb = frer_bed
    before = tb.status()
    try:
        with interruptible([*CLI, "capture", "--testbed", tb.name, "-o", str(caps)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True) as capture:
            assert "capturing" in capture.stderr.readline()

            def impair() -> None:
                time.sleep(0.4)
                tb.impair("a", "forward", loss=0.1)
                time.sleep(0.8)
                tb.impair("a", "forward", clear=True)
                time.sleep(0.2)
                tb.impair("b", down=True)
                time.sleep(0.3)
                tb.impair("b", down=False)

            reports = stream_across(tb.prefix("talker"), tb.prefix("listener"), plan.LISTENER_IP,
                                    ["--rate-fps", "2000", "--frame-size", "256", "--duration", "2.5"],
                                    tmp_path, port=failover.PORT, during=impair, timeout_s=60)
            after_stream = tb.status()  # the counters count the stream alone
            tb.run("talker", "ping", "-c", "2", "-i", "0.2", plan.LISTENER_IP)  # replies: the other direction
            os.killpg(capture.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to frerlab's whole process group
            out, err = capture.communicate(timeout=30)
    finally:
        for line in tcpdumps(caps):  # only if frerlab could not stop them (the test fails below)
            os.kill(int(line.split()[0]), signal.SIGTERM)
        for path in ("a", "b"):
            tb.impair(path, clear=True)
    assert capture.returncode == 0, err
    assert tcpdumps(caps) == [], "every tcpdump stopped"
    counters = {"before": before, "after": after_stream}
    manifest = json.loads((caps / "capture.json").read_text())
    assert manifest["complete"] and manifest["stopped_by"] == "Ctrl-C"
    done = subprocess.run([*CLI, "verify", str(caps), "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    report = json.loads(done.stdout)
    (st,) = [s for s in report["streams"] if s["flow"]["dst_port"] == failover.PORT]
    (ping,) = [s for s in report["streams"] if s["flow"]["proto"] == 1]  # R-tagged on the paths
    assert all(ping["points"][p]["rtag_frames"] == 2 for p in ("path_a", "path_b"))
    pts = st["points"]
    sender, stream = reports.sender, reports.stream()
    settings = counters["after"]["settings"]
    assert pts["sent"]["frames"] == sender["frames_sent"] + sender["end_probes_sent"]
    paths = {p["path"]: p for p in failover.path_accounting(counters, mode)}
    for path in ("a", "b"):
        p, acc = pts[f"path_{path}"], paths[path]
        assert p["frames"] == p["rtag_frames"] == acc["delivered"], (path, p, acc)
        # a capture sees a drop as a gap between numbers it saw: drops before the path's first
        # frame or after its last are outside every gap (sw1 numbers the `into` frames from 0,
        # the end-of-stream probes last)
        unseen = p["first_seq"] + (acc["into"] - 1 - p["last_seq"])
        assert p["missing"] + unseen == acc["dropped"] and p["duplicates"] == 0, (path, p, acc)
        assert p["vlans"] == [plan.PATH_VLANS[path]]
    assert pts["path_a"]["missing"] > 0 and pts["path_b"]["largest_gap"] >= 300, "the loss and the cut show"
    elim = failover.elimination_accounting(counters, settings, sender, stream)
    after = pts["after_elimination"]
    assert after["frames"] == elim["passed"] == stream["unique"] + stream["duplicates"] + stream["end_probes"]
    assert after["unique"] == stream["unique"] and after["missing"] == stream["lost"] == 0
    assert st["elimination"]["exactly_one_copy"] and st["elimination"]["not_delivered"] == 0
    assert pts["path_a"]["frames"] + pts["path_b"]["frames"] - elim["passed"] == elim["discarded"]
    assert st["skew"]["count"] > 0 and {x["from"] for x in st["latency"]} >= {"sent", "path_a", "path_b"}
    if HAS_TSHARK:
        for name in ("path_a", "path_b", "after_elimination"):
            agree_with_tshark(caps / manifest["points"][name]["file"], report, name)
