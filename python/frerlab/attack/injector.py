"""The attacker on a member path: one process inside the path's network namespace, started by
frerlab.attack.run as `ip netns exec NS python -m frerlab.attack.injector PLAN` (PLAN: JSON).

It records the genuine frames of the stream arriving on the path's `record` interface (from
sw1: an AF_PACKET socket, which sees them before the path's impairment element; the VLAN tag the
kernel took into the frame's metadata is put back, PACKET_AUXDATA) and sends its attack frames
out of the `send` interface towards sw2 (an AF_PACKET socket through the interface's queue, so
they share the path's link with the genuine frames, as a compromised device's would). What it
sends is frerlab.attack.spec's attack, made by frerlab.attack.frames from the newest recorded
frame (or, for replay and babble, from older ones); frame i is due `i / rate` seconds after the
"go".

It talks JSON lines: on stdout `{"event": "ready"}` once its sockets are open, `{"event":
"first", ...}` after its first attack frame and `{"event": "report", ...}` last; on stdin it
takes `go` (start the attack now). It ends, printing its report, when it has sent every frame,
at `timeout_s` after it started, when stdin closes (the run is done with it, or died) or on
SIGTERM/SIGINT; it leaves nothing behind (its sockets close with it). A frame the path's queue
had no room for is counted as not sent (`not_sent`), not retried.
"""

from __future__ import annotations

import errno
import json
import math
import os
import select
import signal
import socket
import struct
import sys
import time
from collections import deque

from frerlab.attack import frames, spec

ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_AUXDATA = 263, 8
#: struct tpacket_auxdata: status, len, snaplen, mac, net, vlan_tci, vlan_tpid.
AUXDATA = "IIIHHHH"
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40
#: Frames sent per wake-up at most, so recording goes on while a fast attack catches up.
BATCH = 256
#: Attack kinds whose frames are forged (frames.forge) numbered `ahead` of the newest one.
FORGED = ("inject-ahead", "inject-far", "inject-after-reset", "foreign-identity")


class _Stopped(Exception):
    """SIGTERM or SIGINT arrived."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signal.Signals(signum).name)


def _emit(record: dict) -> None:
    try:
        print(json.dumps(record), flush=True)
    except BrokenPipeError:  # the run is gone: nobody to tell
        pass


class Injector:
    """The recording, the attack's state and its counts."""

    def __init__(self, plan: dict) -> None:
        self.attack = spec.KINDS[plan["attack"]["kind"]].model_validate(plan["attack"])
        self.kind = self.attack.kind
        self.dst_mac = bytes.fromhex(plan["dst_mac"].replace(":", ""))
        self.port = plan["port"]
        readdress = plan.get("readdress") or {}
        self.readdress_mac = bytes.fromhex(readdress["dst_mac"].replace(":", "")) if readdress.get("dst_mac") else None
        self.readdress_vid = readdress.get("vid")
        self.rate = self.attack.rate
        self.total = self.attack.frames()
        self.ring: deque[frames.Genuine] = deque(maxlen=plan["ring"])
        self.by_seq: dict[int, frames.Genuine] = {}
        self.babble: list[bytes] = []
        self.base: tuple[int, int] | None = None  # inject-after-reset: (R-TAG, probe) of its first frame
        self.go_at: float | None = None
        self.sent = self.not_sent = self.skipped = self.recorded = 0
        self.index = 0
        self.max_lag_s = 0.0
        self.first: dict | None = None
        self.last: dict | None = None

    def record(self, frame: bytes, aux: bytes | None) -> None:
        """Keeps `frame` (as received, its VLAN tag back in place) if it is a genuine frame."""
        if aux is not None and len(aux) >= 20:
            status, _, _, _, _, tci, tpid = struct.unpack_from(AUXDATA, aux)
            if status & TP_STATUS_VLAN_VALID:
                frame = frames.with_vlan(frame, tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100, tci)
        g = frames.parse(frame, self.dst_mac, self.port)
        if g is None:
            return
        if len(self.ring) == self.ring.maxlen:
            old = self.ring[0]
            if self.by_seq.get(old.seq) is old:
                del self.by_seq[old.seq]
        self.ring.append(g)
        self.by_seq[g.seq] = g
        self.recorded += 1

    def start(self, now: float) -> None:
        """The "go": the attack's frame 0 is due now."""
        self.go_at = now
        if self.kind == "babble":
            recorded = list(self.ring)[-self.attack.depth:]
            self.babble = [frames.replayable(g) for g in recorded]

    def next_due(self) -> float | None:
        """When the next frame is due (monotonic s), None before the go or once all are sent."""
        if self.go_at is None or self.index >= self.total:
            return None
        return self.go_at + self.index / self.rate

    def done(self) -> bool:
        """Whether every frame of the attack was sent (or skipped)."""
        return self.index >= self.total

    def make(self) -> tuple[bytes | None, int | None]:
        """Attack frame number `index`, made from what was recorded, and the R-TAG number it
        forges (None for recorded ones); no frame when there is nothing to make it from
        (replay: the frame `age` behind the newest was not recorded)."""
        g = self.ring[-1]
        if self.kind == "inject-after-reset":
            if self.base is None:
                self.base = (g.seq + self.attack.ahead, g.probe_seq + self.attack.ahead)
            seq, probe_seq = self.base[0] + self.index, self.base[1] + self.index
        elif self.kind in FORGED:
            seq, probe_seq = g.seq + self.attack.ahead, g.probe_seq + self.attack.ahead
        elif self.kind == "replay":
            old = self.by_seq.get((g.seq - self.attack.age) % frames.SEQ_SPACE)
            return (frames.replayable(old) if old is not None else None), None
        elif self.kind == "strip-tag":
            return frames.strip_rtag(g), None
        else:
            return (self.babble[self.index % len(self.babble)] if self.babble else None), None
        frame = frames.forge(g, seq, probe_seq, time.time_ns())
        if self.kind == "foreign-identity":
            frame = frames.readdress(frame, self.readdress_mac, self.readdress_vid)
        return frame, seq % frames.SEQ_SPACE

    def send_due(self, sock: socket.socket, now: float) -> None:
        """Sends the frames due by `now` (at most BATCH)."""
        for _ in range(BATCH):
            due = self.next_due()
            if due is None or due > now or not self.ring:
                return
            frame, seq = self.make()
            self.index += 1
            if frame is None:
                self.skipped += 1
                continue
            try:
                sock.send(frame)
            except BlockingIOError:
                self.not_sent += 1
                continue
            except OSError as err:
                if err.errno != errno.ENOBUFS:
                    raise
                self.not_sent += 1
                continue
            self.sent += 1
            self.max_lag_s = max(self.max_lag_s, now - due)
            g = self.ring[-1]
            mark = {"t": now, "genuine_seq": g.seq, "genuine_probe_seq": g.probe_seq, "seq": seq}
            if self.first is None:
                self.first = mark
                _emit({"event": "first", **mark})
            self.last = mark

    def report(self, reason: str, started: float) -> dict:
        """What the injector did, as its last JSON line says it (`stopped`: why it ended)."""
        return {"event": "report", "kind": self.kind, "stopped": reason, "frames": self.total,
                "sent": self.sent, "not_sent": self.not_sent, "skipped": self.skipped, "recorded": self.recorded,
                "started": started, "go": self.go_at, "max_lag_s": round(self.max_lag_s, 6),
                "first": self.first, "last": self.last,
                "babble_frames": len(self.babble) if self.kind == "babble" else None}


def _record_socket(ifname: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.bind((ifname, ETH_P_ALL))
    sock.setblocking(False)
    return sock


def _send_socket(ifname: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sock.bind((ifname, 0))
    sock.setblocking(False)
    return sock


def _drain(sock: socket.socket, injector: Injector) -> None:
    """Records every frame the socket holds (those the path received, not those it sent)."""
    space = socket.CMSG_SPACE(20)
    while True:
        try:
            data, ancillary, _, address = sock.recvmsg(65536, space)
        except BlockingIOError:
            return
        if address[2] == socket.PACKET_OUTGOING:
            continue
        aux = next((d for level, kind, d in ancillary if level == SOL_PACKET and kind == PACKET_AUXDATA), None)
        injector.record(data, aux)


def run(plan: dict) -> dict:
    """Records and attacks as `plan` says until a stop (see the module); returns the report."""
    started = time.monotonic()
    deadline = started + plan["timeout_s"]
    injector = Injector(plan)
    reason = "timeout"
    record, send = _record_socket(plan["record"]), _send_socket(plan["send"])
    try:
        _emit({"event": "ready"})
        stdin = sys.stdin.fileno()
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            due = injector.next_due() if injector.ring else None
            wait = max(0.0, min(deadline, due if due is not None else math.inf) - now)
            readable, _, _ = select.select([record, stdin], [], [], wait)
            if record in readable:
                _drain(record, injector)
            if stdin in readable:
                said = os.read(stdin, 4096)
                if not said:
                    reason = "stdin closed"
                    break
                if b"go" in said and injector.go_at is None:
                    injector.start(time.monotonic())
            injector.send_due(send, time.monotonic())
            if injector.done():
                reason = "done"
                break
    except _Stopped as signal_name:
        reason = f"signal {signal_name}"
    finally:
        record.close()
        send.close()
    return injector.report(reason, started)


def main(argv: list[str] | None = None) -> int:
    """Entry point: `python -m frerlab.attack.injector PLAN_JSON`."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m frerlab.attack.injector PLAN_JSON (started by frerlab attack run)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a background job's stays ignored
        signal.signal(signal.SIGINT, _stop)
    _emit(run(json.loads(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
