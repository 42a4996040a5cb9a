"""Which hook runs the frames a node receives: tc (bpf/frer.c's frer_ingress) or XDP
(bpf/frer_xdp.c's frer_xdp), from the configuration's `hook` (tc, xdp or auto).

XDP sends the copies of a stream in one broadcast redirect (rewritten per port, for active
stream identification on one path, as they leave: frer_xdp_copy), so a stream whose copies pass
a recovery function placed on an output port, or also go up to this host, needs tc:
`xdp_limits` names such streams; `xdp` refuses them, `auto` then takes tc for the node. Frames
the host sends stay on tc (XDP has no egress hook). XDP runs native, or generic where the driver
has no native XDP (but not for a node whose copies are rewritten per port: that port keeps tc,
frerlab.dataplane.node).

`auto` also takes tc on a veth, where XDP depends on the neighbour, which a node can neither
see in another namespace nor keep as it is (measured on 6.18, docs/dataplane.md):
- native: a frame redirected into a veth is delivered only while the veth's peer runs an XDP
  program (or has GRO on); and a VLAN tag the sender left in skb metadata (a tc program's
  push, VLAN offload) is not in the frame XDP sees;
- generic: the kernel skips frames a tc program redirected (skb_is_redirected), so behind a
  tc data plane or a tc redirect the program never runs.
`xdp` attaches native XDP on a veth all the same: for a node whose neighbours run XDP too.
"""

from __future__ import annotations

from frerlab.dataplane.compiler import NodePlan
from frerlab.dataplane.config import LOCAL
from frerlab.errors import UsageError
from frerlab.netns import link_info

HOOKS = ("tc", "xdp", "auto")


def xdp_limits(plan: NodePlan) -> list[str]:
    """Why the XDP program cannot run this plan (one reason per stream), or nothing."""
    problems = []
    for stream, (_, outputs) in enumerate(plan.streams):
        handle, ports = plan.handles[stream], [o.index for o in outputs if o.port != LOCAL]
        if len(outputs) < 2:
            continue
        if len(ports) < len(outputs):
            problems.append(f"stream {handle} is copied to ports and to this host ({LOCAL})")
        elif any(plan.recovery_ports[stream] >> p & 1 for p in ports):
            problems.append(f"stream {handle} has a sequence recovery function on an output port")
    return problems


def choose(hook: str, plan: NodePlan, netns: str | None) -> tuple[dict[str, str], str | None]:
    """The XDP mode asked for (native) per received-on port that runs XDP (the others: tc); and
    under `auto`, why tc was taken. UsageError when `xdp` cannot run the plan."""
    if hook not in HOOKS:
        raise UsageError(f"hook {hook!r} is not valid ({', '.join(HOOKS)})")
    if hook == "tc":
        return {}, None
    limits = xdp_limits(plan)
    if limits:
        if hook == "xdp":
            raise UsageError(f"hook xdp cannot run this node: {'; '.join(limits)} (use hook tc or auto)")
        return {}, f"tc, as XDP cannot: {'; '.join(limits)}"
    if hook == "xdp":
        return {port: "native" for port in plan.ingress_ports}, None
    veths = [port for port in plan.ingress_ports if _kind(netns, port) == "veth"]
    note = f"tc on {', '.join(veths)}: XDP on a veth depends on its peer" if veths else None
    return {port: "native" for port in plan.ingress_ports if port not in veths}, note


def _kind(netns: str | None, port: str) -> str | None:
    """The link kind of `port` (veth, bridge, ...; None for a physical NIC)."""
    return link_info(netns, port).get("linkinfo", {}).get("info_kind")
