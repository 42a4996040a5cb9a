"""Pre-flight of a host before it measures anything, recorded in the results' metadata: the
tools and their versions, the interface under test (up, MTU, speed and duplex from ethtool,
offloads), the CPU frequency governor, and the clock's synchronisation.

One-way latency needs the talker's and the listener's clocks to agree: it is used only when
both hosts report a synchronised clock (chrony) whose error bound (|offset| + root delay / 2 +
root dispersion, chrony's own bound on the distance to true time) is at most
`MAX_CLOCK_ERROR_US` on each, so that the two add up to at most a tenth of a typical switch
latency budget; otherwise a campaign reports RTT/2 and labels it so. Every probe runs on all
hosts at once; a probe whose tool is missing reports `None`, not an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from frerlab.remote.ssh import Session

#: Largest clock error bound (µs) on each host for one-way latency to be reported.
MAX_CLOCK_ERROR_US = 5.0
#: Tools a host may need, and how to ask each its version.
TOOLS = {"iperf3": ["iperf3", "--version"], "sockperf": ["sockperf", "--version"],
         "tcpdump": ["tcpdump", "--version"], "ethtool": ["ethtool", "--version"],
         "python3": ["python3", "--version"]}
OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
            "rx-checksumming", "tx-checksumming")


def preflight(session: Session) -> dict[str, dict[str, Any]]:
    """The pre-flight record of every host of the session, by role."""
    roles = list(session.targets)
    report: dict[str, dict[str, Any]] = {role: {"target": session.targets[role].address} for role in roles}
    for tool, argv in TOOLS.items():
        for role, done in session.run_all({r: argv for r in roles}, check=False).items():
            text = (done.stdout or done.stderr).strip()
            report[role].setdefault("tools", {})[tool] = text.splitlines()[0] if done.returncode == 0 and text else None
    for role, done in session.run_all({r: ["sh", "-c", "cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor "
                                           "2>/dev/null | sort -u"] for r in roles}, check=False).items():
        report[role]["cpu_governor"] = done.stdout.split() or None
    for role, done in session.run_all({r: ["chronyc", "-c", "tracking"] for r in roles}, check=False).items():
        report[role]["clock"] = clock_state(done.stdout if done.returncode == 0 else None)
    for role in roles:
        interface = session.targets[role].interface
        if interface:
            report[role]["interface"] = interface_state(session, role, interface)
    return report


def clock_state(tracking_csv: str | None) -> dict[str, Any]:
    """chronyc's tracking (CSV) as a clock state: synchronised, the error bound in µs and
    whether it allows one-way latency. None (no chrony): unknown, not allowed."""
    if not tracking_csv:
        return {"source": None, "synchronised": False, "error_bound_us": None, "one_way_ok": False,
                "why": "no chrony on this host: clock synchronisation unknown"}
    fields = tracking_csv.strip().split(",")
    try:
        offset, root_delay, root_dispersion = float(fields[4]), float(fields[10]), float(fields[11])
        leap = fields[13].strip()
    except (IndexError, ValueError):
        return {"source": "chrony", "synchronised": False, "error_bound_us": None, "one_way_ok": False,
                "why": "chronyc tracking could not be read"}
    bound_us = (abs(offset) + root_delay / 2 + root_dispersion) * 1e6
    synchronised = leap.lower() != "not synchronised"
    ok = synchronised and bound_us <= MAX_CLOCK_ERROR_US
    why = (f"error bound {bound_us:.1f} µs" + ("" if ok else f" above {MAX_CLOCK_ERROR_US:g} µs")
           if synchronised else "chrony is not synchronised")
    return {"source": "chrony", "synchronised": synchronised, "error_bound_us": bound_us, "one_way_ok": ok, "why": why}


def interface_state(session: Session, role: str, interface: str) -> dict[str, Any]:
    """Up, MTU, speed, duplex and offloads of `interface` on `role`'s host."""
    found = session.run_all({role: ["ip", "-j", "link", "show", "dev", interface]}, check=False)[role]
    if found.returncode != 0:
        return {"name": interface, "present": False, "why": (found.stderr or found.stdout).strip()[:200]}
    link = json.loads(found.stdout)[0]
    state: dict[str, Any] = {"name": interface, "present": True, "up": link.get("operstate") == "UP"
                             or "UP" in link.get("flags", []), "mtu": link.get("mtu")}
    settings = session.run(role, ["ethtool", interface], check=False)
    speed = re.search(r"Speed:\s*(\d+)Mb/s", settings.stdout)
    duplex = re.search(r"Duplex:\s*(\w+)", settings.stdout)
    state["speed_mbps"] = int(speed.group(1)) if speed else None
    state["duplex"] = duplex.group(1).lower() if duplex else None
    features = session.run(role, ["ethtool", "-k", interface], check=False).stdout
    state["offloads"] = {name: bool(re.search(rf"^{name}:\s*on", features, re.M)) for name in OFFLOADS
                         if re.search(rf"^{name}:", features, re.M)}
    return state


def one_way_latency_allowed(report: dict[str, dict[str, Any]]) -> tuple[bool, str]:
    """Whether talker and listener clocks allow one-way latency, and why (or why not)."""
    reasons = [f"{role}: {report[role]['clock']['why']}" for role in ("talker", "listener") if role in report]
    ok = all(report[role]["clock"]["one_way_ok"] for role in ("talker", "listener") if role in report)
    return ok, "; ".join(reasons)
