"""TCP baseline (seed 002 section 2.1): one iperf3 TCP run of the step's duration, talker to
listener; throughput as the receiver counted it, per-second throughput, retransmits and both
ends' CPU load as iperf3 reports them."""

from __future__ import annotations

import json

from frerlab.bench.campaign import Tcp
from frerlab.bench.steps import Context, result
from frerlab.bench.trial import CPU_SATURATED, Flag
from frerlab.files import write_atomic
from frerlab.traffic.tools import iperf3


def run(ctx: Context, step: Tcp, params: dict) -> dict:
    duration = params["duration_s"]
    ctx.note(f"iperf3 TCP {duration:g} s")
    raw, _ = iperf3.run_test(ctx.target.listener_ip, client_prefix=ctx.target.prefix("talker"),
                             server_prefix=ctx.target.prefix("listener"), duration_s=duration, udp=False)
    write_atomic(ctx.out / "iperf3.json", raw)
    doc = json.loads(raw)
    end = doc["end"]
    cpu = end.get("cpu_utilization_percent", {})
    flags = [Flag(f"{who}_cpu_saturated", f"iperf3 reports the {who} at {cpu[key]:.0f} % CPU", False)
             for who, key in (("sender", "host_total"), ("receiver", "remote_total"))
             if cpu.get(key, 0) >= CPU_SATURATED * 100]
    intervals = [i["sum"]["bits_per_second"] for i in doc.get("intervals", [])]
    metrics = {"throughput_mbps": end["sum_received"]["bits_per_second"] / 1e6,
               "retransmits": end["sum_sent"].get("retransmits"),
               "sender_cpu_percent": cpu.get("host_total"), "receiver_cpu_percent": cpu.get("remote_total")}
    return result(metrics, flags, {"interval_mbps": [b / 1e6 for b in intervals],
                                   "sent_mbps": end["sum_sent"]["bits_per_second"] / 1e6})
