"""The path impairment element (frerlab.impair) measured from outside: frerlab's generator in a
sender namespace, the element in a path namespace of its own, frerlab's receiver (and, for
burst lengths, a tcpdump capture) in a receiver namespace. Each configured impairment must
show up in what the receiver measures, within a bound computed from the model; and nothing
may be left behind, also after a crash."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from conftest import NEEDS_BPF, ROOT, Z_ONE_IN_A_MILLION, binomial_bounds, interruptible, processes_naming
from frerlab.errors import UsageError
from frerlab.impair import GilbertElliott, Impairment, PathImpairment, remove_leftovers
from frerlab.impair.path import PIN_ROOT, STATE_ROOT
from frerlab.netns import Namespaces, exists, ip
from frerlab.pcap import read_pcap
from frerlab.traffic.across import stream_across

pytestmark = NEEDS_BPF

SENDER_IP, RECEIVER_IP, PORT = "198.18.0.1", "198.18.0.2", 5555
_ids = itertools.count()


class Harness(Namespaces):
    """sender (198.18.0.1, s0) - path namespace (ends pa, pb) - receiver (198.18.0.2, r0);
    names carry a per-run prefix; `close()` deletes the namespaces."""

    def __init__(self) -> None:
        super().__init__(f"fim{os.getpid()}x{next(_ids)}")

    def __enter__(self) -> Harness:
        try:
            self.add("snd", "path", "rcv")
            self.link("snd", "s0", "path", "pa")
            self.link("path", "pb", "rcv", "r0")
            self.run("snd", "ip", "addr", "add", f"{SENDER_IP}/24", "dev", "s0")
            self.run("rcv", "ip", "addr", "add", f"{RECEIVER_IP}/24", "dev", "r0")
            self.neighbour("snd", "s0", RECEIVER_IP, self.mac("rcv", "r0"))
            self.neighbour("rcv", "r0", SENDER_IP, self.mac("snd", "s0"))
        except BaseException:
            self.close()
            raise
        return self

    def neighbour(self, role: str, dev: str, peer_ip: str, mac: str) -> None:
        """A permanent neighbour entry, so no ARP crosses the element."""
        self.run(role, "ip", "neigh", "replace", peer_ip, "lladdr", mac, "dev", dev, "nud", "permanent")

    def element(self, name: str | None = None) -> PathImpairment:
        return PathImpairment(self.ns["path"], "pa", "pb", name or f"{self.prefix}-imp")

    def stream(self, count: int, fps: int, capture: bool = False,
               reverse: bool = False) -> tuple[dict | None, list[int] | None]:
        """Sends `count` probes at `fps` frames/s from sender to receiver (`reverse`: the other
        way); returns the receiving side's stream report (None if nothing arrived) and, with
        `capture`, the data sequence numbers in the order the receiver got them."""
        src, dst, dst_ip, dst_dev = ("rcv", "snd", SENDER_IP, "s0") if reverse else \
            ("snd", "rcv", RECEIVER_IP, "r0")
        # The receiver stops 0.5 s after the end-of-stream probe, or after this (time for the
        # sender to start, then to send) when nothing arrives.
        duration = count / fps + 3
        with tempfile.TemporaryDirectory(prefix="frerlab-impair-") as tmp:
            pcap = Path(tmp) / "cap.pcap"
            with ExitStack() as running:
                dump = running.enter_context(interruptible(
                    self.exec(dst, ["tcpdump", "-i", dst_dev, "-n", "-s", "80", "-B", "32768", "--immediate-mode",
                                    "-w", str(pcap), "udp"]),
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)) if capture else None
                if dump:
                    assert "listening" in dump.stderr.readline()
                reports = stream_across(self.exec(src, []), self.exec(dst, []), dst_ip,
                                        ["--rate-fps", str(fps), "--count", str(count)], Path(tmp) / "gen",
                                        recv_args=["--duration", str(duration)], port=PORT,
                                        timeout_s=duration + 20)
                if dump:
                    time.sleep(0.2)
                    dump.send_signal(signal.SIGINT)
                    dump.wait(timeout=10)
            seqs = _data_seqs(pcap) if capture else None
        streams = reports.receiver["streams"]
        assert len(streams) <= 1, streams
        return (streams[0] if streams else None), seqs


def _data_seqs(pcap: Path) -> list[int]:
    """Sequence numbers of the data probes in a capture (Ethernet, IPv4 without options, UDP)."""
    seqs = []
    for _, frame in read_pcap(pcap):
        payload = frame[14 + 20 + 8:]
        if len(payload) >= 12 and payload[0] == 0xFB and payload[1] == 0x44:
            seqs.append(struct.unpack_from(">Q", payload, 4)[0])
    return seqs


def _median_latency_ns(report: dict) -> int:
    return dict((p, v) for p, v in report["latency_ns"]["percentiles"])[50.0]


def _delay_line_pids(name: str) -> list[int]:
    """Delay-line processes of element `name` (a name of this test's own)."""
    return [int(line.split()[0]) for line in processes_naming(f"frerlab.impair.delayline {STATE_ROOT / name}")]


def _leftovers(harness: Harness, name: str) -> list[str]:
    """What of element `name` still exists: pins, state, processes, qdiscs, veths."""
    found = []
    if (PIN_ROOT / name).exists():
        found.append(f"pins {PIN_ROOT / name}")
    if (STATE_ROOT / name).exists():
        found.append(f"state {STATE_ROOT / name}")
    found += [f"process {pid}" for pid in _delay_line_pids(name)]
    if exists(harness.ns["path"]):
        links = [link["ifname"] for link in json.loads(ip("-n", harness.ns["path"], "-j", "link", "show"))]
        found += [f"device {dev}" for dev in links if dev not in ("lo", "pa", "pb")]
        for dev in ("pa", "pb"):
            qdiscs = subprocess.run(["tc", "-n", harness.ns["path"], "qdisc", "show", "dev", dev],
                                    capture_output=True, text=True, check=True).stdout
            if "clsact" in qdiscs:
                found.append(f"clsact on {dev}")
    return found


@pytest.fixture(scope="module")
def path():
    """One harness and one element for the measurement tests; every test starts clean."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "bpf")], check=True)
    with Harness() as harness, harness.element() as element:
        yield harness, element


@pytest.fixture
def clean(path):
    harness, element = path
    element.clear()
    yield harness, element
    element.clear()


def _delta(after: dict, before: dict, key: str) -> int:
    return after["forward"][key] - before["forward"][key]


def test_bernoulli_loss_measures_within_its_binomial_bounds(clean):
    harness, element = clean
    element.set("forward", loss=0.05)
    before = element.counters()
    report, _ = harness.stream(20_000, 20_000)
    after = element.counters()
    assert report["expected"] == 20_000
    low, high = binomial_bounds(20_000, 0.05)
    measured = report["lost"] / report["expected"]
    assert low <= measured <= high, f"loss {measured:.4f} outside {low:.4f}..{high:.4f}"
    # Every loss is the element's, and only Bernoulli's (the element may also have dropped some
    # of the sender's end-of-stream probes, the frames beyond the data frames).
    probes = _delta(after, before, "frames_in") - 20_000
    assert 0 <= _delta(after, before, "dropped_loss") - report["lost"] <= probes
    assert _delta(after, before, "dropped_burst") == _delta(after, before, "dropped_down") == 0
    assert report["duplicates"] == report["reordered"] == 0


def test_gilbert_elliott_loss_rate_and_burst_length(clean):
    harness, element = clean
    ge = GilbertElliott(p_good_to_bad=0.01, p_bad_to_good=0.25, loss_good=0.0, loss_bad=1.0)
    element.set("forward", gilbert_elliott=ge)
    n = 40_000
    report, seqs = harness.stream(n, 20_000, capture=True)
    assert len(seqs) == report["unique"], "the capture saw every frame"
    # The sender's three end-of-stream probes cross the element too, and a bad run can take
    # them all with the last data frames: then the receiver cannot know n, the test does.
    assert report["expected"] == n or (not report["end_seen"] and report["expected"] <= n)
    # Loss rate: for a two-state chain the variance of the loss count over n frames is
    # n * pi(1 - pi) * (1 + lam) / (1 - lam), lam = 1 - p_gb - p_bg; allow Z_ONE_IN_A_MILLION of them.
    pi, lam = ge.stationary_loss(), 1 - ge.p_good_to_bad - ge.p_bad_to_good
    sd = math.sqrt(pi * (1 - pi) * (1 + lam) / (1 - lam) / n)
    measured = (n - report["unique"]) / n
    z = Z_ONE_IN_A_MILLION
    assert abs(measured - pi) <= z * sd, f"loss {measured:.4f}, stationary {pi:.4f} +- {z * sd:.4f}"
    # Bursts: runs of consecutive missing numbers, geometric with mean 1 / p_bad_to_good.
    received = set(seqs)
    bursts, run = [], 0
    for seq in range(n):
        if seq in received:
            if run:
                bursts.append(run)
            run = 0
        else:
            run += 1
    if run:
        bursts.append(run)
    mean, expected_mean = statistics.mean(bursts), ge.mean_bad_run()
    sd_mean = math.sqrt(1 - ge.p_bad_to_good) / ge.p_bad_to_good / math.sqrt(len(bursts))
    assert abs(mean - expected_mean) <= z * sd_mean, f"mean burst {mean:.2f} over {len(bursts)} bursts"
    assert max(bursts) >= 8, "bursts, not isolated losses"


@pytest.mark.timing
def test_delay_raises_the_median_latency(clean):
    harness, element = clean
    base, _ = harness.stream(2000, 2000)
    element.set("forward", delay_ms=5)
    delayed, _ = harness.stream(2000, 2000)
    shift_ms = (_median_latency_ns(delayed) - _median_latency_ns(base)) / 1e6
    assert 4.9 <= shift_ms <= 5.3, f"median latency rose by {shift_ms:.3f} ms (configured 5)"
    assert delayed["lost"] == 0 and delayed["reordered"] == 0, "a constant delay keeps every frame, in order"
    counters = element.counters()["forward"]
    assert counters["delay_line"]["sent"] >= 2000 and counters["delay_line"]["held"] == 0


# Sends the frames given in hex on stdin out of device argv[1], one every 0.5 ms.
_SEND_RAW = """
import socket, sys, time
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
sock.bind((sys.argv[1], 0))
for frame in sys.stdin.read().split():
    sock.send(bytes.fromhex(frame))
    time.sleep(0.0005)
"""

# Prints "ready", then the frames holding marker argv[3] that device argv[1] receives (up to
# argv[2] of them, or what came in 10 s) as a JSON list of hex strings, each frame with the VLAN
# tag the kernel reported in PACKET_AUXDATA put back after the MAC addresses.
_RECEIVE_RAW = """
import json, socket, struct, sys, time
SOL_PACKET, PACKET_AUXDATA, VLAN_VALID, VLAN_TPID_VALID = 263, 8, 1 << 4, 1 << 6
dev, count, marker = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
sock.bind((dev, 0))
sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
sock.settimeout(0.2)
print("ready", flush=True)
frames, deadline = [], time.monotonic() + 10
while len(frames) < count and time.monotonic() < deadline:
    try:
        frame, ancillary, _, _ = sock.recvmsg(65536, 256)
    except TimeoutError:
        continue
    if marker not in frame:
        continue
    for level, kind, data in ancillary:
        if (level, kind) == (SOL_PACKET, PACKET_AUXDATA):
            status, _, _, _, _, tci, tpid = struct.unpack_from("IIIHHHH", data)
            if status & VLAN_VALID:
                tpid = tpid if status & VLAN_TPID_VALID else 0x8100
                frame = frame[:12] + struct.pack(">HH", tpid, tci) + frame[12:]
    frames.append(frame.hex())
print(json.dumps(frames), flush=True)
"""


def test_delayed_frames_keep_their_vlan_tags(clean):
    """Frames sent untagged, with an 802.1Q tag (PCP 5, VLAN 20), and with an 802.1ad + 802.1Q
    stack (20, then PCP 3, VLAN 10), through a delayed direction. On a veth the kernel moves
    the outer tag of each frame it receives from the bytes into the skb's metadata, where
    AF_PACKET reports it only as ancillary data, as it does for the FRER data plane's pushed
    tags; an inner tag stays in the bytes. Each frame must arrive exactly as it was sent."""
    harness, element = clean
    marker = b"frerlab-impair-vlan"
    stacks = [b"", struct.pack(">HH", 0x8100, 5 << 13 | 20),
              struct.pack(">HHHH", 0x88A8, 20, 0x8100, 3 << 13 | 10)]
    macs = bytes.fromhex((harness.mac("rcv", "r0") + harness.mac("snd", "s0")).replace(":", ""))
    frames = [macs + stacks[i % 3] + struct.pack(">H", 0x88B5) + (marker + struct.pack(">I", i)).ljust(46, b"\0")
              for i in range(300)]
    element.set("forward", delay_ms=2)
    before = element.counters()["forward"]["delay_line"]
    recv = subprocess.Popen(harness.exec("rcv", [sys.executable, "-c", _RECEIVE_RAW, "r0", str(len(frames)),
                                                 marker.hex()]), stdout=subprocess.PIPE, text=True)
    try:
        assert recv.stdout.readline() == "ready\n"
        subprocess.run(harness.exec("snd", [sys.executable, "-c", _SEND_RAW, "s0"]),
                       input=" ".join(frame.hex() for frame in frames), text=True, check=True, timeout=30)
        out, _ = recv.communicate(timeout=30)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    after = element.counters()["forward"]["delay_line"]
    received = [bytes.fromhex(frame) for frame in json.loads(out)]
    assert len(received) == len(frames), f"{len(received)} of {len(frames)} frames arrived"
    changed = [(sent.hex(), got.hex()) for sent, got in zip(frames, received) if sent != got]
    assert not changed, f"{len(changed)} frames changed, the first (sent, received): {changed[0]}"
    counted = {key: after[key] - before[key] for key in ("received", "sent", "tagged")}
    assert counted == {"received": 300, "sent": 300, "tagged": 200}, "through the delay line, 2 of 3 tagged"


def test_directions_are_independent(clean):
    harness, element = clean
    element.set("reverse", delay_ms=2)
    element.set("forward", down=True)
    before = element.counters()
    back, _ = harness.stream(1000, 10_000, reverse=True)
    after = element.counters()
    assert back["lost"] == 0 and back["latency_ns"]["min"] >= 2_000_000, back["latency_ns"]
    sent = {d: after[d]["delay_line"]["sent"] - before[d]["delay_line"]["sent"] for d in ("forward", "reverse")}
    assert sent["reverse"] >= 1000 and sent["forward"] == 0, sent
    assert element.describe()["settings"]["reverse"]["delay_ms"] == 2


def test_jitter_and_reorder_reorder_frames(clean):
    harness, element = clean
    element.set("forward", delay_ms=1, jitter_ms=1)
    jittered, _ = harness.stream(5000, 20_000)
    assert jittered["lost"] == 0 and jittered["reordered"] > 500, jittered["reordered"]
    element.set("forward", delay_ms=2, jitter_ms=0, reorder=0.1)
    before = element.counters()["forward"]["delay_line"]
    reordered, _ = harness.stream(5000, 20_000)
    early = element.counters()["forward"]["delay_line"]["early"] - before["early"]
    assert reordered["lost"] == 0
    low, high = binomial_bounds(5000, 0.1)
    assert low <= early / 5000 <= high, f"{early} of 5000 sent at once"
    # A frame sent at once overtakes the ~40 frames still held (2 ms at 20k frames/s), and
    # RFC 4737 counts each of those, arriving below the highest number seen, as reordered.
    assert reordered["reordered"] >= early, (reordered["reordered"], early)


def test_duplication_makes_the_configured_fraction(clean):
    harness, element = clean
    element.set("forward", duplicate=0.1)
    report, _ = harness.stream(20_000, 20_000)
    low, high = binomial_bounds(20_000, 0.1)
    assert report["lost"] == 0
    assert low <= report["duplicates"] / 20_000 <= high, report["duplicates"]


def test_down_drops_everything_and_up_restores(clean):
    harness, element = clean
    element.set("both", down=True, loss=0.01)
    down, _ = harness.stream(1000, 10_000)
    assert down is None, "nothing arrives"
    element.set("both", down=False)
    element.set("both", loss=0.0)
    up, _ = harness.stream(1000, 10_000)
    assert up["expected"] == 1000 and up["lost"] == 0


def test_down_works_through_the_delay_line(clean):
    harness, element = clean
    element.set("forward", delay_ms=1, down=True)
    before = element.counters()["forward"]
    report, _ = harness.stream(500, 10_000)
    after = element.counters()["forward"]
    assert report is None, "nothing arrives"
    assert after["delay_line"]["received"] == before["delay_line"]["received"]
    assert after["dropped_down"] - before["dropped_down"] >= 500


def test_bad_values_are_rejected_naming_them():
    element = PathImpairment("no-such-netns", "pa", "pb", "frerlab-test-bad-values")
    cases = [
        (dict(loss=1.5), "loss 1.5 is out of range (0..=1)"),
        (dict(delay_ms=-1), "delay_ms -1 is out of range (0..=10000)"),
        (dict(delay_ms=1, jitter_ms=3), "jitter_ms 3 is out of range (0..=delay_ms, here 1)"),
        (dict(duplicate=-0.1), "duplicate -0.1 is out of range (0..=1)"),
        (dict(reorder=0.2), "reorder 0.2 needs delay_ms above 0"),
        (dict(gilbert_elliott={"p_good_to_bad": 0.1, "p_bad_to_good": 2}),
         "gilbert_elliott.p_bad_to_good 2 is out of range (0..=1)"),
        (dict(down="yes"), "down 'yes' is not valid (True or False)"),
        (dict(latency=3), "impairment 'latency' is not known"),
    ]
    for changes, message in cases:
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            element.set("both", **changes)
    with pytest.raises(UsageError, match=r"direction 'sideways' is not valid \(forward, reverse or both\)"):
        element.set("sideways", loss=0.1)
    with pytest.raises(UsageError, match="does not exist"):
        element.attach()
    assert not (STATE_ROOT / element.name).exists()
    assert Impairment(delay_ms=2, jitter_ms=2, reorder=1).delayed


def test_an_element_outlives_the_process_that_set_it_up():
    with Harness() as harness:
        name = f"{harness.prefix}-imp"
        setup = (f"from frerlab.impair import PathImpairment\n"
                 f"PathImpairment({harness.ns['path']!r}, 'pa', 'pb', {name!r}).attach()\n")
        try:
            subprocess.run([sys.executable, "-c", setup], check=True, timeout=30)
            element = PathImpairment.reopen(name)
            assert element.delay_line_running()
            element.set("forward", delay_ms=3, jitter_ms=1)
            other = PathImpairment.reopen(name)
            assert other.settings["forward"].jitter_ms == 1
            other.release()
            element.close()
            assert _leftovers(harness, name) == []
        finally:
            remove_leftovers(name)


def test_nothing_is_left_after_close_or_after_a_crash():
    with Harness() as harness:
        name = f"{harness.prefix}-imp"
        with harness.element(name) as element:
            element.set("forward", delay_ms=1, loss=0.01)
            assert _leftovers(harness, name), "the element exists while open"
            reopened = PathImpairment.reopen(name)
            assert reopened.settings["forward"].delay_ms == 1
            reopened.release()
        assert _leftovers(harness, name) == []
        # A failure half-way (the veth pair and the pins exist when the missing end is found).
        with pytest.raises(Exception, match="nosuch"):
            PathImpairment(harness.ns["path"], "pa", "nosuch", name).attach()
        assert _leftovers(harness, name) == []
        # A crash: the delay line killed, close() never called.
        element = harness.element(name)
        element.attach()
        element.set("both", delay_ms=2)
        (pid,) = _delay_line_pids(name)
        os.kill(pid, signal.SIGKILL)
        element.release()
        assert _leftovers(harness, name)
        with pytest.raises(UsageError, match="exists already"):
            harness.element(name).attach()
        remove_leftovers(name)
        assert _leftovers(harness, name) == []
        # Killed before the line was even reaped, with the namespace gone: still cleaned.
        element = harness.element(name)
        element.attach()
        element.release()
    remove_leftovers(name)
    assert not (PIN_ROOT / name).exists() and not (STATE_ROOT / name).exists()
    assert _delay_line_pids(name) == []
