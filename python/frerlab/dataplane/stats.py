"""Views of a data plane snapshot (frerlab.dataplane.control.snapshot): a readable table, and
the Prometheus text exposition format with the 802.1CB clause-10 counter names.

Prometheus metric names are the standard's names in snake case with `_total` (counters), e.g.
frerCpsSeqRcvyPassedPackets -> frer_cps_seq_rcvy_passed_packets_total; the HELP line gives
the standard's own name. Labels: node, stream (handle), port (a recovery function's port, or
the ports feeding an individual one, comma-separated; none for one that takes every frame of
the stream), function (sequence or individual recovery), and for the per port and stream
counters direction: where the stream identification function sits (802.1CB 9.1.1; received
frames are identified out-facing, frames the host sends in-facing).
The stream filters (802.1Qci), where a snapshot has them (`filters`, node.filter_records), are
counted under the ieee802-dot1q-psfp leaf names (psfpMatchingFramesCount ->
psfp_matching_frames_count_total), labelled by filter (its index).
"""

from __future__ import annotations

import re

#: Recovery counters (frerlab.frer.COUNTER_NAMES) -> 802.1CB clause-10 per port-stream names.
RECOVERY_NAMES = {
    "passed_packets": "frerCpsSeqRcvyPassedPackets",
    "discarded_packets": "frerCpsSeqRcvyDiscardedPackets",
    "out_of_order_packets": "frerCpsSeqRcvyOutOfOrderPackets",
    "rogue_packets": "frerCpsSeqRcvyRoguePackets",
    "lost_packets": "frerCpsSeqRcvyLostPackets",
    "tagless_packets": "frerCpsSeqRcvyTaglessPackets",
    "resets": "frerCpsSeqRcvyResets",
}
#: Per-port counters -> their standard names, or frerlab's own for what 802.1CB does not count.
PORT_NAMES = {
    "frames": "frerlabPortFrames",
    "malformed": "frerlabPortMalformedFrames",
    "seq_enc_errored": "frerCpSeqEncErroredPackets",
    "rcvy_passed": "frerCpSeqRcvyPassedPackets",
    "rcvy_discarded": "frerCpSeqRcvyDiscardPackets",
    "bridged": "frerlabPortBridgedFrames",
    "to_stack": "frerlabPortToStackFrames",
    "tx_errors": "frerlabPortTxErrors",
    "gso_refused": "frerlabPortGsoRefusedPackets",
}
#: Per port and stream counters -> their standard names and direction (802.1CB 9.1.1, 10.8).
STREAM_PORT_NAMES = {
    "input": ("tsnCpsSidInputPackets", "out-facing"),
    "input_sent": ("tsnCpsSidInputPackets", "in-facing"),
    "output": ("tsnCpsSidOutputPackets", "out-facing"),
    "seq_enc_errored": ("frerCpsSeqEncErroredPackets", "out-facing"),
}

#: Stream filter counters (layout.FILTER_COUNTERS) -> ieee802-dot1q-psfp's leaves, camel-cased.
FILTER_NAMES = {
    "matching_frames": "psfpMatchingFramesCount",
    "passing_frames": "psfpPassingFramesCount",
    "passing_sdu": "psfpPassingSduCount",
    "not_passing_sdu": "psfpNotPassingSduCount",
    "red_frames": "psfpRedFramesCount",
}


def metric_name(standard: str) -> str:
    """frerCpsSeqRcvyPassedPackets -> frer_cps_seq_rcvy_passed_packets_total."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", standard).lower() + "_total"


def _labels(**labels: object) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items() if v is not None)
    return "{" + inner + "}"


def prometheus(snap: dict) -> str:
    """The snapshot in the Prometheus text exposition format (version 0.0.4)."""
    samples: dict[str, list[str]] = {}
    node = snap["name"]

    def add(standard: str, value: int, **labels: object) -> None:
        samples.setdefault(standard, []).append(f"{metric_name(standard)}{_labels(node=node, **labels)} {value}")

    for st in snap["streams"]:
        if st["generation"] is not None:
            add("frerCpsSeqGenResets", st["generation"]["resets"], stream=st["handle"])
            add("frerlabSeqGenGeneratedPackets", st["generation"]["generated"], stream=st["handle"])
        for r in st["recovery"]:
            for key, standard in RECOVERY_NAMES.items():
                add(standard, r[key], stream=st["handle"], function=r["function"], port=r["port"])
        for p in st["ports"]:
            for key, (standard, direction) in STREAM_PORT_NAMES.items():
                add(standard, p[key], stream=st["handle"], port=p["port"], direction=direction)
    for p in snap["ports"]:
        for key, standard in PORT_NAMES.items():
            add(standard, p[key], port=p["port"])
    for f in snap.get("filters") or []:
        for key, standard in FILTER_NAMES.items():
            add(standard, f[key], filter=f["filter"])
    lines = []
    for standard, rows in samples.items():
        name = metric_name(standard)
        source = ("IEEE 802.1CB clause 10" if standard.startswith(("frerCp", "tsnCp"))
                  else "IEEE 802.1Q 8.6.5, ieee802-dot1q-psfp" if standard.startswith("psfp") else "frerlab")
        lines += [f"# HELP {name} {standard} ({source})", f"# TYPE {name} counter", *rows]
    individual = [(st["handle"], r) for st in snap["streams"] for r in st["recovery"]
                  if r["function"] == "individual"]
    if individual:
        lines += ["# HELP frerlab_member_locked_out 1 while an individual recovery function sees only "
                  "rogue packets for longer than its reset timeout (802.1CB 7.4.3.4)",
                  "# TYPE frerlab_member_locked_out gauge"]
        lines += [f"frerlab_member_locked_out{_labels(node=node, stream=handle, port=r['port'])} "
                  f"{int(r['locked_out'])}" for handle, r in individual]
    latent = (snap.get("latent") or {}).get("functions", [])
    if latent:
        resets = metric_name("frerCpsSeqRcvyLatentErrorResets")
        lines += [f"# HELP {resets} frerCpsSeqRcvyLatentErrorResets (IEEE 802.1CB clause 10)",
                  f"# TYPE {resets} counter"]
        lines += [f"{resets}{_labels(node=node, stream=f['stream'])} {f['latent_error_resets']}" for f in latent]
        lines += ["# HELP frerlab_latent_error 1 while a latent error is signalled (802.1CB 7.4.4)",
                  "# TYPE frerlab_latent_error gauge"]
        lines += [f"frerlab_latent_error{_labels(node=node, stream=f['stream'])} {int(f['active'])}" for f in latent]
    return "\n".join(lines) + "\n"


def table(snap: dict) -> str:
    """The snapshot as a readable text table; latent errors first, in capitals."""
    out = []
    latent = (snap.get("latent") or {}).get("functions", [])
    for f in latent:
        if f["active"]:
            last = f["last"]
            out.append(f"LATENT ERROR stream {f['stream']}: {last['condition']} (difference "
                       f"{last['difference']}, threshold {f['difference_threshold']}, at {last['at_s']} s)")
    for st in snap["streams"]:
        for r in st["recovery"]:
            if r["locked_out"]:
                out.append(f"LOCKED OUT stream {st['handle']} on {r['port']}: only rogue packets for "
                           f"{r['rogue_only_s']:g} s, each reloading the reset timer (802.1CB 7.4.3.4); "
                           "raise history-length or lower reset-timeout, and reset it")
    out.append(f"data plane {snap['name']}" + (f" (netns {snap['netns']})" if snap["netns"] else ""))
    for st in snap["streams"]:
        out.append(f"stream {st['handle']}")
        if st["generation"] is not None:
            g = st["generation"]
            out.append(f"  sequence generation: {g['generated']} numbered, {g['resets']} resets")
        for r in st["recovery"]:
            where = f" on {r['port']}" if r["port"] else ""
            out.append(f"  {r['function']} recovery{where} ({r['algorithm']}, history {r['history_length']}): "
                       + ", ".join(f"{k.removesuffix('_packets').replace('_', '-')} {r[k]}" for k in RECOVERY_NAMES))
        for p in st["ports"]:
            sent = f" (+{p['input_sent']} sent by this host)" if p["input_sent"] else ""
            out.append(f"  port {p['port']}: in {p['input']}{sent}, out {p['output']}, "
                       f"seq-enc-errored {p['seq_enc_errored']}")
    for f in snap.get("filters") or []:
        on = f" on {','.join(f['ports'])}" if f["ports"] else ""
        sdu = f", max-sdu-size {f['max_sdu_size']}" if f["max_sdu_size"] else ""
        meter = (f", flow-meter {f['flow_meter']} ({f['committed_information_rate']} bit/s, burst "
                 f"{f['committed_burst_size']} octets)" if f["flow_meter"] is not None else "")
        out.append(f"stream-filter {f['filter']} (stream {','.join(map(str, f['streams']))}{on}{sdu}{meter}): "
                   + ", ".join(f"{k.replace('_', '-')} {f[k]}" for k in FILTER_NAMES))
    for f in latent:
        state = "ERROR" if f["active"] else "ok"
        out.append(f"latent error detection, stream {f['stream']}: {state} ({f['alarms']} alarms, "
                   f"{f['latent_error_resets']} resets)")
    width = max(len(p["port"]) for p in snap["ports"])
    header = "port".ljust(width) + "".join(f"{k.replace('_', '-'):>16}" for k in PORT_NAMES)
    out += ["", header]
    out += [p["port"].ljust(width) + "".join(f"{p[k]:>16}" for k in PORT_NAMES) for p in snap["ports"]]
    return "\n".join(out)
