"""Command-line verbs of the traffic area: `frerlab gen send`, `frerlab gen recv` and
`frerlab import FILE...`."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import socket
import sys
from pathlib import Path

from frerlab.cli_output import add_json, add_output, emit
from frerlab.errors import EXIT_SHORTFALL, UsageError
from frerlab.names import output_dir, output_file
from frerlab.traffic import gen, importer
from frerlab.files import write_atomic
from frerlab.traffic.record import TrafficRecord, dump_records, records_data
from frerlab.names import shown
from frerlab.units import (MAX_COUNT, MAX_SECONDS, count, frame_bytes, frames_per_second, generator_rate, option_value,
                           seconds)

# Generator/receiver modes: UDP socket, AF_PACKET, AF_XDP.
MODES = ["udp", "raw", "xdp"]

# Each rate option and the key of the generator's configuration it sets.
RATE_KEYS = (("rate_l1", "l1_bits_per_sec"), ("rate_l2", "l2_bits_per_sec"), ("rate_fps", "frames_per_sec"))

SEND_EPILOG = """rate (one is required; units are in the option name):
  --rate-l1 100M    layer-1 bit/s: frame + 20 B preamble/gap per frame (RFC 2544 line rate)
  --rate-l2 100M    layer-2 bit/s: frame bytes, FCS included
  --rate-fps 10k    frames per second
  --max-rate        no pacing: as fast as the host can send
frame size: bytes FCS included (64..9216) or min (64), max (1518), jumbo (9018);
RFC 2544 sizes: 64 128 256 512 1024 1280 1518. UDP payload = frame - 46.

bounds: 1..1e10 frames/s and at most 10T bit/s; --duration, and --count at the requested
rate, at most a week (604800 s); --count at most 1e12.

exit status: 0 done, 2 bad input, 3 the generator fell short of the requested rate
(the report says by how much: that shortfall is the host's, not the network's).

examples:
  frerlab gen send --dst 198.18.0.2 --frame-size 64 --rate-fps 100k --duration 10
  frerlab gen send --dst 198.18.0.2 --frame-size 1518 --rate-l1 100M --pattern poisson --count 100000 --json
  frerlab gen send --mode raw --interface veth0 --dst 198.18.0.2 --dst-mac 02:00:00:00:00:02 --max-rate --duration 5
  frerlab gen send --mode xdp --interface veth0 --dst 198.18.0.2 --dst-mac 02:00:00:00:00:02 --max-rate --duration 5
  frerlab gen send --mode xdp --queues 2 --interface veth0 --dst 198.18.0.2 --rate-fps 1M --count 1000000

--queues N (xdp mode): N AF_XDP sockets on TX queues 0..N-1, one thread each, sharing the stream
(each paces rate/N, sequence numbers from one shared counter, the thread's lane in every probe);
the receiver needs --queues covering the RX queues the frames arrive on.
"""

RECV_EPILOG = """The receiver counts, per stream id: loss, duplicates, reordering (RFC 4737), one-way
latency (send time in the probe vs the kernel's software receive stamp, CLOCK_REALTIME: exact
between namespaces of one host, needs synchronised clocks between hosts; xdp mode: the time the
ring was read) and the inter-arrival gaps (the NIC's stamps where it has hardware timestamps,
ethtool -T). Reports say which stamps and clock ("timestamps"). It stops after --duration, --linger
seconds after every stream's end-of-stream probe, --idle seconds without traffic, or on Ctrl-C
(the report then covers what arrived).

examples:
  frerlab gen recv --port 5555 --json
  frerlab gen recv --mode raw --interface veth1 --port 5555 --interval 0.1 --output raw.json
  frerlab gen recv --mode xdp --interface veth1 --port 5555 --json
  frerlab gen recv --mode xdp --queues 2 --interface veth1 --port 5555 --json

--queues N (xdp mode): one AF_XDP socket per RX queue 0..N-1, all read by one thread into one
report (per-queue frame counts under "queues"); reordering is judged within each sender lane
(each thread of a multi-queue sender), not across lanes, whose interleaving nobody controls.
"""

IMPORT_EPILOG = """Recognised formats: iperf3 --json output (TCP or UDP, client or server side), the iperf3
client's text output (its sender/receiver summary; rates as printed, 3 digits), sockperf
text output (ping-pong, under-load, throughput, as saved from its stdout), sockperf --full-log CSV,
frerlab gen send/recv raw reports.

examples:
  frerlab import sockperf_pingpong_64B.txt iperf3_udp.json --json
  frerlab import --results old --mode frer frer-*.json       into a results directory, as a campaign's
  frerlab import --results old --mode control ctl-*.json     ... then compared: FRER vs control
"""


def _seq_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of sequence numbers") from None
    if any(not 0 <= v < 2**64 for v in values):
        raise argparse.ArgumentTypeError(f"{shown(text)} has a sequence number out of range (0..2^64-1)")
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds `gen send`, `gen recv` and `import`."""
    gen_parser = subparsers.add_parser("gen", help="frerlab's traffic generator and receiver")
    verbs = gen_parser.add_subparsers(title="verbs", metavar="VERB")
    gen_parser.set_defaults(func=lambda args: gen_parser.print_help() or 2)

    send = verbs.add_parser(
        "send", help="send probe frames at a paced rate", epilog=SEND_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    send.add_argument("--dst", required=True, help="destination IPv4 address")
    send.add_argument("--port", type=int, default=5555, help="destination UDP port (default 5555)")
    send.add_argument("--source-port", type=int, default=0, help="source UDP port (default any)")
    send.add_argument("--mode", choices=MODES, default="udp",
                      help="UDP socket, AF_PACKET or AF_XDP (TX rings on queues 0..N-1, --queues) (default udp)")
    send.add_argument("--interface", help="interface to send on (raw and xdp modes)")
    send.add_argument("--queues", type=int, default=1, metavar="N",
                      help="xdp mode: send on TX queues 0..N-1, one thread each (default 1)")
    send.add_argument("--dst-mac", help="destination MAC (raw and xdp modes; default broadcast)")
    send.add_argument("--frame-size", default="64", help="frame bytes FCS included, or min/max/jumbo (default 64)")
    rate = send.add_mutually_exclusive_group(required=True)
    rate.add_argument("--rate-l1", metavar="BIT/S", help="layer-1 rate in bit/s (e.g. 1G, 1Gbps, '1 Gbit/s', 100M)")
    rate.add_argument("--rate-l2", metavar="BIT/S", help="layer-2 rate in bit/s (e.g. 1G, 1Gbps, '1 Gbit/s', 100M)")
    rate.add_argument("--rate-fps", metavar="FRAMES/S", help="rate in frames/s (e.g. 10k, 1M)")
    rate.add_argument("--max-rate", action="store_true", help="unpaced: as fast as possible")
    send.add_argument("--pattern", choices=["constant", "bursts", "poisson"], default="constant")
    send.add_argument("--burst-frames", type=int, default=10, help="frames per burst (pattern bursts)")
    send.add_argument("--seed", type=int, default=1, help="seed of the Poisson gaps")
    send.add_argument("--duration", type=float, help="seconds to send")
    send.add_argument("--count", help="data frames (sequence numbers) to send (e.g. 100000, 100k)")
    send.add_argument("--stream-id", type=int, default=0, help="stream id in the probes (0..65535)")
    send.add_argument("--batch", type=int, default=32, help="frames per sendmmsg call or AF_XDP kick (1..64)")
    send.add_argument("--gso", action="store_true",
                      help="UDP mode: one UDP GSO send per batch (fastest; on a veth a batch crosses as one "
                           "packet, so per-frame processing on the way, e.g. the FRER data plane, sees batches)")
    send.add_argument("--impair-drop", type=_seq_list, default=[], metavar="SEQS", help="test mode: never send these sequence numbers")
    send.add_argument("--impair-duplicate", type=_seq_list, default=[], metavar="SEQS", help="test mode: send these twice")
    send.add_argument("--impair-swap", type=_seq_list, default=[], metavar="SEQS", help="test mode: send each after its successor")
    add_output(send, "write the raw sender report (JSON) here")
    send.add_argument("--report-json", action="store_true",
                      help="print the raw report (JSON) on stdout instead of the summary (for remote runs)")
    add_json(send, "the result record (a list of one)")
    send.set_defaults(func=_send)

    recv = verbs.add_parser(
        "recv", help="receive probe frames and measure loss, duplicates, reordering, latency",
        epilog=RECV_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    recv.add_argument("--port", type=int, default=5555, help="UDP port (default 5555)")
    recv.add_argument("--bind", help="local IPv4 address (UDP mode; default any)")
    recv.add_argument("--mode", choices=MODES, default="udp",
                      help="UDP socket, AF_PACKET, or AF_XDP (an XDP program on --interface redirects the "
                           "port's frames on queues 0..N-1, --queues, to them; detached when the receiver ends) "
                           "(default udp)")
    recv.add_argument("--interface", help="interface to listen on (raw and xdp modes)")
    recv.add_argument("--queues", type=int, default=1, metavar="N",
                      help="xdp mode: read RX queues 0..N-1, one AF_XDP socket each (default 1)")
    recv.add_argument("--duration", type=float, help="seconds to listen (default: until end of stream)")
    recv.add_argument("--interval", type=float, default=1.0, help="seconds per interval of the series (default 1)")
    recv.add_argument("--interval-frames", type=int, metavar="N",
                      help="also count per N sequence numbers (seq_bins in the raw report: a loss in the bin its "
                           "frames were sent in, not where the gap was seen)")
    recv.add_argument("--linger", type=float, default=0.5, help="seconds to wait for stragglers after end of stream")
    recv.add_argument("--idle", type=float, help="stop after this many seconds without traffic (senders without end probes)")
    recv.add_argument("--no-gro", action="store_true", help="UDP mode: no UDP GRO (one datagram per read)")
    add_output(recv, "write the raw receiver report (JSON) here")
    recv.add_argument("--report-json", action="store_true",
                      help="print the raw report (JSON) on stdout instead of the summary (for remote runs)")
    add_json(recv, "the result records")
    recv.set_defaults(func=_recv)

    imp = subparsers.add_parser(
        "import", help="read old iperf3/sockperf result files into result records",
        epilog=IMPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    imp.add_argument("files", nargs="+", type=Path, metavar="FILE")
    add_output(imp, "write the records (JSON) here")
    add_json(imp, "the records (with --results: what was added)")
    imp.add_argument("--results", type=Path, metavar="DIR",
                     help="add the records to results directory DIR, laid out as a campaign's (docs/benchmarks.md)")
    imp.add_argument("--mode", choices=["frer", "control"], help="with --results: what the imported runs measured")
    imp.set_defaults(func=_import)


def _progress(verb: str, count_key: str | None):
    """A progress callback printing a running count on one terminal line, or None when stderr
    is not a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(report: dict) -> None:
        if count_key is not None:
            count = report[count_key]
        else:
            count = sum(s["arrivals"] for s in report["streams"])
        print(f"\r{verb} {count:,} frames", end="", file=sys.stderr, flush=True)

    return show


def _check_port(port: int, what: str, low: int = 0) -> None:
    if not low <= port <= 65535:
        raise UsageError(f"{what} {port} is out of range ({low}..=65535)")


def _check_range(option: str, value: int, low: int, high: int, unit: str = "") -> None:
    if not low <= value <= high:
        raise UsageError(f"{option} {shown(value)} is out of range ({low}..{high}{unit})")


def _check_interface(name: str | None, mode: str) -> None:
    """Raw and xdp modes need an interface that exists here; the message lists the ones that do."""
    if mode == "udp":
        if name is not None:
            raise UsageError(f"--interface {name!r} is for --mode raw or xdp only (UDP mode routes by address)")
        return
    if name is None:
        raise UsageError(f"--mode {mode} needs --interface NAME")
    names = sorted(n for _, n in socket.if_nameindex())
    if name not in names:
        raise UsageError(f"--interface {shown(name)} does not exist in this network namespace "
                         f"(interfaces: {', '.join(names)})")


def _check_queues(queues: int, mode: str) -> None:
    """--queues is xdp mode's; the range the interface allows is checked where its sockets open."""
    if queues != 1 and mode != "xdp":
        raise UsageError(f"--queues {shown(queues)} is for --mode xdp only")
    if queues < 1:
        raise UsageError(f"--queues {shown(queues)} is out of range (1 or more; at most the interface's queues)")


def _check_bind(address: str | None) -> None:
    """--bind must be an IPv4 address of this host (of this network namespace)."""
    if address is None:
        return
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        raise UsageError(f"--bind {shown(address)} is not an IPv4 address (e.g. 198.18.0.2)") from None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError as err:
            if err.errno != errno.EADDRNOTAVAIL:
                raise
            raise UsageError(f"--bind {address} is not an address of this host (network namespace); "
                             "give one of its addresses or leave --bind out to listen on all") from None


def _send(args: argparse.Namespace) -> int:
    if args.output:
        output_file(args.output, "-o/--output")
    try:
        ipaddress.IPv4Address(args.dst)
    except ValueError:
        raise UsageError(f"destination {shown(args.dst)} is not valid (an IPv4 address, e.g. 198.18.0.2)") from None
    _check_port(args.port, "--port", low=1)
    _check_port(args.source_port, "--source-port")
    _check_range("--stream-id", args.stream_id, 0, 65535)
    _check_range("--batch", args.batch, 1, 64, " frames per call")
    _check_range("--burst-frames", args.burst_frames, 1, 65536)
    _check_range("--seed", args.seed, 0, 2**64 - 1)
    _check_interface(args.interface, args.mode)
    _check_queues(args.queues, args.mode)
    frame = frame_bytes(args.frame_size)
    if args.duration is None and args.count is None:
        raise UsageError("give --duration SECONDS or --count FRAMES (or both) to say when to stop")
    seconds("--duration", args.duration)
    if args.count is not None:
        args.count = option_value(count, args.count, "--count")
        _check_range("--count", args.count, 1, MAX_COUNT, " frames")
    if args.max_rate:
        rate: object = "max"
    else:
        option, key, text = next((f"--{name.replace('_', '-')}", key, getattr(args, name)) for name, key in RATE_KEYS
                                 if getattr(args, name))
        fps = frames_per_second(option, text, frame)
        rate = {key: generator_rate(option, text)}
        if args.duration is None and args.count / fps > MAX_SECONDS:
            raise UsageError(f"--count {args.count} at {fps:.3g} frames/s takes {args.count / fps:.3g} s, more than "
                             f"a week ({MAX_SECONDS} s); lower --count, raise the rate or give --duration")
    pattern: dict = {"kind": args.pattern}
    if args.pattern == "bursts":
        pattern["frames"] = args.burst_frames
    elif args.pattern == "poisson":
        pattern["seed"] = args.seed
    config = {
        "mode": args.mode, "destination": args.dst, "port": args.port, "source_port": args.source_port,
        "interface": args.interface, "dst_mac": args.dst_mac, "frame_size": frame, "rate": rate,
        "pattern": pattern, "duration_s": args.duration, "count": args.count, "stream_id": args.stream_id,
        "batch": args.batch, "gso": args.gso, "queues": args.queues,
        "impair": {"drop": args.impair_drop, "duplicate": args.impair_duplicate, "swap": args.impair_swap},
    }
    report = gen.run_sender(config, progress=_progress("sent", "frames_sent"))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if args.output:
        write_atomic(args.output, json.dumps(report, indent=2))
    record = gen.sender_record(report, source=str(args.output) if args.output else None)
    if args.report_json:
        print(json.dumps(report))
    else:
        emit(args, records_data([record]), _describe(record))
    for warning in record.warnings:
        print(f"frerlab: warning: {warning}", file=sys.stderr)
    return EXIT_SHORTFALL if report["shortfall"] else 0


def _recv(args: argparse.Namespace) -> int:
    if args.output:
        output_file(args.output, "-o/--output")
    _check_port(args.port, "--port", low=1)
    _check_interface(args.interface, args.mode)
    _check_queues(args.queues, args.mode)
    if args.mode == "udp":
        _check_bind(args.bind)
    elif args.bind is not None:
        raise UsageError(f"--bind {shown(args.bind)} is for UDP mode only ({args.mode} mode listens on --interface)")
    seconds("--duration", args.duration)
    seconds("--idle", args.idle)
    seconds("--interval", args.interval, high=24 * 3600)
    if args.interval_frames is not None:
        _check_range("--interval-frames", args.interval_frames, 1, MAX_COUNT, " sequence numbers")
    config = {
        "mode": args.mode, "port": args.port, "bind": args.bind, "interface": args.interface,
        "duration_s": args.duration, "interval_s": args.interval, "linger_s": args.linger,
        "idle_s": args.idle, "gro": not args.no_gro, "interval_frames": args.interval_frames,
        "queues": args.queues,
    }
    report = gen.run_receiver(config, progress=_progress("received", None), stop_on_interrupt=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if args.output:
        write_atomic(args.output, json.dumps(report, indent=2))
    records = gen.receiver_records(report, args.interval, source=str(args.output) if args.output else None)
    if args.report_json:
        print(json.dumps(report))
    else:
        text = "\n".join(map(_describe_with_warnings, records))
        emit(args, records_data(records), text or "no probe frames received")
    return 0


def _import(args: argparse.Namespace) -> int:
    if args.output:
        output_file(args.output, "-o/--output")
    if args.results is not None:
        output_dir(args.results, "--results")
    if (args.results is None) != (args.mode is None):
        raise UsageError("--results and --mode go together: the directory, and whether the runs were frer or control")
    if args.results is not None:
        from frerlab.bench.imported import import_into  # the bench package only when asked for
        added = import_into(args.results, args.files, args.mode)
        emit(args, {"results": args.results, "mode": args.mode, "added": added},
             f"{len(added)} records added to {args.results} (summary.json, summary.csv)")
        return 0
    records: list[TrafficRecord] = []
    for path in args.files:
        records.extend(importer.import_file(path))
    if args.output:
        write_atomic(args.output, dump_records(records))
    emit(args, records_data(records), "\n".join(map(_describe_with_warnings, records)) or None)
    return 0


def _fmt(value: float | int | None, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _describe_with_warnings(r: TrafficRecord) -> str:
    """The record's paragraph and a line per warning."""
    return _describe(r) + "".join(f"\n  warning: {w}" for w in r.warnings)


def _describe(r: TrafficRecord) -> str:
    """One human-readable paragraph about a record."""
    head = f"{r.tool} {r.test}" + (f" stream {r.stream_id}" if r.stream_id is not None else "")
    parts = [head + (f" [{r.source}]" if r.source else "") + ":"]
    if r.frame_size or r.payload_size:
        parts.append(f"frame {_fmt(r.frame_size)} B, payload {_fmt(r.payload_size)} B")
    parts.append(f"sent {_fmt(r.sent)}, received {_fmt(r.received)}, lost {_fmt(r.lost)} ({_fmt(r.loss_percent, '.4f')} %)")
    if r.duplicates is not None or r.reordered is not None:
        parts.append(f"duplicates {_fmt(r.duplicates)}, reordered {_fmt(r.reordered)}")
    if r.frames_per_s is not None:
        parts.append(
            f"{r.frames_per_s:,.0f} frames/s, L1 {_fmt(r.l1_bps and r.l1_bps / 1e6, '.2f')} Mbit/s, "
            f"L2 {_fmt(r.l2_bps and r.l2_bps / 1e6, '.2f')} Mbit/s"
        )
    elif r.payload_bps is not None:
        parts.append(f"payload {r.payload_bps / 1e6:.2f} Mbit/s")
    if r.retransmits is not None:
        parts.append(f"TCP retransmits {r.retransmits}")
    if r.jitter_ms is not None:
        parts.append(f"jitter (RFC 3550 estimate, not latency) {r.jitter_ms:.4f} ms")
    if r.gaps:
        g = r.gaps
        against = "1/requested rate" if g.nominal == "requested_rate" else "mean gap"
        parts.append(
            f"gaps us: p1 {g.p1_us:.2f}, p50 {g.p50_us:.2f}, p99 {g.p99_us:.2f} (nominal {g.nominal_us:.2f}, {against}); "
            f"below half the nominal {g.below_half_share:.2%}" + (" (bursting)" if g.below_half_share >= 0.1 else "")
        )
    if r.timestamps:
        ts = r.timestamps
        pair = f"tx {ts.tx}" + (f", rx {ts.rx}" if ts.rx else "")
        parts.append(f"timestamps: {pair} ({ts.clock}); gaps from {ts.gaps} stamps ({ts.gaps_clock}); {ts.hardware}")
    if r.latency:
        lat = r.latency
        pct = ", ".join(f"p{k} {v:.2f}" for k, v in lat.percentiles_us.items())
        parts.append(
            f"latency {lat.kind} us: min {_fmt(lat.min_us, '.2f')}, mean {_fmt(lat.mean_us, '.2f')}, "
            f"std-dev {_fmt(lat.stddev_us, '.2f')}, max {_fmt(lat.max_us, '.2f')}; {pct}"
        )
    return "\n  ".join(parts)
