"""Each node of a topology as a configuration of frerlab's eBPF data plane
(frerlab.dataplane.config.NodeConfig), made from the same NodeFunctions the simulator scenario
is made from (frerlab.net.nodes): what `net sim` simulates is what a namespace network of the
topology would load, and what the per-switch YANG and LAN966x exports describe.

Addressing (the namespace network's, from the testbeds' 198.18.0.0/15): end station k in the
file's order has address 198.18.0.0 + k + 1; stream i (file order) is handle i + 1 and is sent
to its listener's address on UDP port STREAM_PORT_BASE + i. Every node identifies a stream by
those two (IP stream identification): frames received by the links the stream arrives on
(out-facing input ports), and at a talker that numbers its own stream, frames its host sends
out of the first link it forwards the stream on (in-facing, 802.1CB's talker end system). A
relay on several member paths of a stream without recovering it (the end-to-end ladder's middle
switches) identifies each member by the links it arrives on, as a stream of its own (handles
after the streams'), and sends it on along its own path only.
Sequence recovery functions keep the R-TAG on frames they pass where FRER acts again further
on (sequence-identification active on the outputs: recovery at every stage), and remove it at
the last one (the data plane's default). Times become whole milliseconds, the YANG's unit,
rounded up. A node with nothing to do for any stream (a plain end station) has no
configuration.
"""

from __future__ import annotations

import ipaddress
import math

from frerlab.dataplane.config import LOCAL, NodeConfig, parse_config
from frerlab.errors import UsageError
from frerlab.net.nodes import NodeFunctions, RecoveryFunction, node_functions
from frerlab.net.topology import LatentErrorDetection, Topology

#: The first UDP destination port of the streams (stream i: STREAM_PORT_BASE + i).
STREAM_PORT_BASE = 5000
#: The first end station's address (the next ones follow it).
FIRST_ADDRESS = ipaddress.IPv4Address("198.18.0.1")
PS_PER_MS = 10**9


def addresses(topo: Topology) -> dict[str, str]:
    """Each end station's address, in file order."""
    stations = [name for name, node in topo.nodes.items() if node.kind == "end_station"]
    return {name: str(FIRST_ADDRESS + k) for k, name in enumerate(stations)}


def node_documents(topo: Topology, by_address: bool = False) -> dict[str, dict]:
    """The data plane configuration of every node that has something to do, in file order, as
    the mapping a configuration file holds (docs/dataplane.md's vocabulary). `by_address`:
    streams identified by their listener's address alone (every UDP frame to it, whatever its
    port: a campaign's measured and background traffic); UsageError if two streams go to one
    listener."""
    address = addresses(topo)
    index = {s.name: i for i, s in enumerate(topo.streams)}
    if by_address:
        to: dict[str, str] = {}
        for s in topo.streams:
            listener = topo.plans[s.name].listener
            if to.setdefault(listener, s.name) != s.name:
                raise UsageError(f"streams {to[listener]} and {s.name} both go to {listener}: identified by its "
                                 "address alone, their frames could not be told apart")
    documents = {}
    for name, nf in node_functions(topo).items():
        document = _document(topo, nf, address, index, by_address)
        if document is not None:
            documents[name] = document
    return documents


def node_configs(topo: Topology, by_address: bool = False) -> dict[str, NodeConfig]:
    """node_documents, validated and compiled."""
    return {name: parse_config(document, f"node {name} of the topology")
            for name, document in node_documents(topo, by_address).items()}


def _document(topo: Topology, nf: NodeFunctions, address: dict[str, str], index: dict[str, int],
              by_address: bool) -> dict | None:
    """The configuration of one node as a mapping in the data plane's file vocabulary."""
    identities, generation, recovery, forwarding, tagged = [], [], [], [], []
    recovers = {r.stream for r in nf.recovery}
    members = len(topo.streams)  # the handles of a relay's further members come after the streams'
    for s in topo.streams:
        talks_frer = s.name in nf.talks and s.name in nf.generation
        listens_frer = s.name in nf.listens and s.name in recovers
        if not (talks_frer or listens_frer or s.name not in (*nf.talks, *nf.listens)):
            continue
        match = {"ip-destination": address[topo.plans[s.name].listener], "next-protocol": "udp"}
        if not by_address:
            match["destination-port"] = STREAM_PORT_BASE + index[s.name]
        for k, forward in enumerate(f for f in nf.forwarding if f.stream == s.name):
            if k == 0:
                handle = index[s.name] + 1
            else:
                members += 1
                handle = members
            facing = ({"out-facing": {"input-port": list(forward.ingress)}} if forward.ingress
                      else {"in-facing": {"input-port": [forward.output[0]]}})
            identities.append({"index": len(identities) + 1, "handle": handle, **facing,
                               "ip-stream-identification": match})
            forwarding.append({"stream": handle, "output-port": list(forward.output) or [LOCAL]})
            if forward.tagged and s.name in recovers:
                tagged.append({"port": list(forward.output), "stream": [handle], "active": True})
        handle = index[s.name] + 1
        if s.name in nf.generation:
            generation.append({"index": len(generation) + 1, "stream": [handle]})
        for r in (r for r in nf.recovery if r.stream == s.name):
            recovery.append({"index": len(recovery) + 1, "stream": [handle], **_recovery(r)})
    if not identities:
        return None
    document = {"name": nf.name, "ports": nf.links, "stream-identity": identities, "stream-forwarding": forwarding}
    for key, entries in (("sequence-generation", generation), ("sequence-recovery", recovery),
                         ("sequence-identification", tagged)):
        if entries:
            document[key] = entries
    return document


def _recovery(r: RecoveryFunction) -> dict:
    """A recovery function's fields of a sequence-recovery entry."""
    entry = {"algorithm": r.algorithm, "history-length": r.history_length}
    if r.individual_recovery:
        entry |= {"port": list(r.ingress), "individual-recovery": True}
    if r.reset_timeout is not None:
        entry["reset-timeout"] = r.reset_timeout if r.reset_timeout == "never" else _ms(r.reset_timeout)
    if r.latent_error_detection is not None:
        entry |= {"latent-error-detection": True,
                  "latent-error-detection-parameters": _latent(r.latent_error_detection)}
    return entry


def _latent(latent: LatentErrorDetection) -> dict:
    return {"difference": latent.difference, "period": _ms(latent.period), "paths": latent.paths,
            "reset-period": _ms(latent.reset_period)}


def _ms(ps: int) -> int:
    """Picoseconds as whole milliseconds, rounded up (at least 1)."""
    return max(1, math.ceil(ps / PS_PER_MS))
