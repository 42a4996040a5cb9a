"""The command script that configures a node's streams on a Microchip LAN966x/LAN9662 switch
running the Microchip Linux BSP, and the parser that reads such a script back.

The BSP has two tools. `vcap add` writes a VCAP IS1 rule that identifies a stream's frames on
its input port and gives them an ingress stream index (ISDX). `frer` configures FRER per ISDX
(its source names the commands): `frer iflow ISDX` sequence generation, R-TAG pop, the split
onto up to two egress ports (--dev1/--dev2) and the member stream; `frer msa DEV1 [DEV2]`
allocates a member stream (its id is printed, so a script keeps it in $MS on the same line),
`frer ms DEV MS_ID` its individual recovery, `frer cs CS_ID` a compound stream's sequence
recovery (member streams feed it through --cs_id). Each line runs alone (`frerlab hosts push`
runs `sh -c LINE`), so a line that allocates a member stream also uses it.

Per-stream filtering and policing (802.1Qci) takes a third tool, `psfp` (its source names the
commands): `psfp fm FMI` configures a flow meter (a policer of the switch) and `psfp sf SFI` a
stream filter; neither names a stream. The IS1 rule binds its frames to them with the actions
SFID_ENA/SFID_VAL and POLICE_ENA/POLICE_IDX, so the switch filters per IS1 rule: per stream and
input port, as frerlab's filters are. The psfp lines come before the rules, so no rule ever points
at a filter or meter not yet configured.

What the hardware or the tools cannot do is refused with a UsageError naming the entry, what
would be valid and where the limit comes from (LIMITS). What the switch has no use for but a
frerlab configuration holds (name, bridged ports, frerlab's indices and handles, a frame rate)
is written as comments: `# frerlab: ...` header lines and a trailing `# key value ...` on each
command, so that `parse_lan966x` gives back the same configuration. docs/config.md describes
the mapping and which syntax could not be confirmed.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

from frerlab.dataplane import layout
from frerlab.dataplane.config import LOCAL, NodeConfig, parse_config
from frerlab.errors import UsageError
from frerlab.yamlfile import read_text

#: Limits of the switch and where each comes from.
HISTORY = (2, 32)       # history length the LAN966x recovery takes (Microchip's documented range)
RESET_MS = (1, 4095)    # LAN966X_FRER_RESET_MAX in the BSP kernel's lan966x_qos.h: its driver refuses more
MAX_SPLIT = 2           # LAN966X_FRER_MAX_PORTS in the BSP's frer.h: ports of a split and of a member stream
CHIP_PORTS = 9          # IF_IGR_PORT_MASK is 9 bits wide (the kernel's lan966x VCAP IS1 key fields)
MAX_SDU = 65535         # max_sdu is a u16 in the psfp tool's lan966x_psfp_sf_conf
FILTERS = 256           # LAN966X_PSFP_NUM_SFI in the BSP kernel's lan966x_qos.h (SFID_VAL: 8 bits of the IS1 action)
POLICERS = (81, 343)    # LAN966X_POL_IX_POOL..LAN966X_POL_IX_DISCARD - 1: the BSP kernel's PSFP and IS2 policers
CIR_KBPS = 2_184_500    # policer_conf_set (BSP kernel): at most 65535 units of 33 1/3 kbit/s; psfp fm --cir is kbit/s
CBS = 60 * 4096         # policer_conf_set (BSP kernel): at most 60 units of 4096 octets
LIMITS = {
    "history-length": f"{HISTORY[0]}..{HISTORY[1]} (the LAN966x recovery's range, as Microchip documents it)",
    "reset-timeout": f"{RESET_MS[0]}..{RESET_MS[1]} ms (LAN966X_FRER_RESET_MAX in the BSP kernel's lan966x_qos.h: "
                     "the driver refuses a larger reset_time)",
    "split": f"at most {MAX_SPLIT} output ports (LAN966X_FRER_MAX_PORTS in the BSP's frer.h)",
    "chip port": f"0..{CHIP_PORTS - 1} (IF_IGR_PORT_MASK is {CHIP_PORTS} bits in the LAN966x IS1 key)",
    "max-sdu-size": f"0..{MAX_SDU} octets (max_sdu is a 16-bit number in the psfp tool's lan966x_psfp_sf_conf)",
    "stream filters": f"at most {FILTERS} (LAN966X_PSFP_NUM_SFI in the BSP kernel's lan966x_qos.h)",
    "flow meters": f"at most {POLICERS[1] - POLICERS[0] + 1} (policers {POLICERS[0]}..{POLICERS[1]}, the BSP kernel's "
                   "pool of PSFP and IS2 policers, LAN966X_POL_IX_POOL in lan966x_qos.h)",
    "committed-information-rate": f"a multiple of 1000 bit/s, 0..{CIR_KBPS * 1000} (`psfp fm --cir` is in kbit/s; "
                                  "the BSP kernel's policer_conf_set takes at most 65535 units of 33 1/3 kbit/s)",
    "committed-burst-size": f"1..{CBS} octets (the BSP kernel's policer_conf_set takes at most 60 units of 4096 "
                            "octets)",
}
HEADER = """\
# LAN966x FRER configuration of node {name}, written by `frerlab config export --target lan966x`
# from {source}.
# Run it on the switch with `frerlab hosts push HOSTS.yaml THIS.sh` (one line at a time).
# Tools of the Microchip LAN966x Linux BSP: `frer` (syntax from the tool's source: cs, msa, ms,
# iflow) and `vcap`. The vcap syntax (vcap add ID is1 PRIORITY LOOKUP KEYSET, KEY VALUE MASK...,
# VCAP_AFS_S1, ACTION VALUE...) follows published uses of the tool and the key and action names
# of the kernel's LAN966x VCAP model; it was NOT checked against the vcap tool's own source:
# check the first rule with `vcap get ID` before relying on the script. Key values and masks are
# hexadecimal; IF_IGR_PORT_MASK has bit N for chip port N. A member stream with --enable 0 is
# assumed to feed its compound stream (--cs_id) all the same. `# frerlab:` lines and the `# ...`
# after each command are for `frerlab config import` only.
"""
PSFP_HEADER = """\
# PSFP (802.1Qci): `psfp fm FMI` (flow meter) and `psfp sf SFI` (stream filter) follow the psfp
# tool's source: --cir and --eir in kbit/s, --cbs and --ebs in octets, --max_sdu in octets (0: no
# check). An IS1 rule binds its frames to them (SFID_ENA/SFID_VAL, POLICE_ENA/POLICE_IDX: action
# names of the kernel's LAN966x VCAP model, not checked against the vcap tool). NOT confirmed: that
# FMI is the policer index POLICE_IDX names (the kernel side of `psfp fm` was not found; frerlab
# uses the BSP's PSFP policer pool from 81, which its tc offload allocates from too); which octets
# the switch counts as the SDU of max_sdu and in the meter (frerlab: the SDU; the switch's
# policers count frames, with or without the gap); the switch rounds the rate up to 33 1/3 kbit/s
# and the burst up to 4096 octets. Check with `psfp sf SFI --status` and `vcap get ID`.
"""
_FRERLAB = "# frerlab: "


def _hex(value: int) -> str:
    return f"0x{value:x}"


def _vlan_keys(tagged: str, vlan: int, where: str) -> list[str]:
    if tagged == "priority":
        raise UsageError(f"{where}: tagged: priority is not exported to lan966x (whether the IS1 VID key of an "
                         "untagged frame is 0 or its PVID is not known); use tagged or all")
    keys = ["8021Q_VLAN_TAGGED_IS 1 1"] if tagged == "tagged" else []
    if vlan:
        keys.append(f"8021Q_VID0 {_hex(vlan)} 0xfff")
    return keys


def _mac_key(name: str, mac: str) -> str:
    return f"{name} 0x{mac.replace(':', '')} 0xffffffffffff"


def _is1(ident, where: str) -> tuple[str, list[str], list[str], list[str]]:
    """(keyset, keys, actions, comment words) of the IS1 rule of a stream identity."""
    if (null := ident.null_stream_identification) is not None:
        return ("VCAP_KFS_DMAC_VID", [_mac_key("L2_DMAC", null.destination_mac),
                                      *_vlan_keys(null.tagged, null.vlan, where)], [], [])
    if (smac := ident.smac_vlan_stream_identification) is not None:
        return ("VCAP_KFS_NORMAL", [_mac_key("L2_SMAC", smac.source_mac),
                                    *_vlan_keys(smac.tagged, smac.vlan, where)], [], [])
    if (active := ident.dmac_vlan_stream_identification) is not None:
        down, up = active.down, active.up
        if up.destination_mac != down.destination_mac:
            raise UsageError(f"{where}: dmac-vlan-stream-identification rewrites the destination MAC "
                             f"({down.destination_mac} -> {up.destination_mac}), which the LAN966x cannot do "
                             "(no IS1 or ES0 action sets it); give up the same destination-mac as down")
        if up.tagged != "tagged" or not up.vlan:
            raise UsageError(f"{where}: dmac-vlan-stream-identification up: the switch classifies the stream to "
                             "a VLAN (IS1 VID_REPLACE): give up a vlan 1..4095 and tagged: tagged")
        actions = [f"VID_REPLACE_ENA 1 VID_VAL {_hex(up.vlan)}"]
        if up.priority is not None:
            actions.append(f"PCP_DEI_ENA 1 PCP_VAL {up.priority} DEI_VAL 0")
        comment = [] if down.priority is None else ["down-priority", str(down.priority)]
        return ("VCAP_KFS_DMAC_VID", [_mac_key("L2_DMAC", down.destination_mac),
                                      *_vlan_keys(down.tagged, down.vlan, where)], actions, comment)
    ip = ident.ip_stream_identification
    if ip.destination_mac:
        raise UsageError(f"{where}: ip-stream-identification with destination-mac: the LAN966x IS1 key for "
                         "IPv4 5-tuples (VCAP_KFS_5TUPLE_IP4) has no destination MAC; remove it or use null "
                         "stream identification")
    src, dst = ipaddress.ip_address(ip.ip_source), ipaddress.ip_address(ip.ip_destination)
    if 6 in (src.version, dst.version):
        raise UsageError(f"{where}: IPv6 identification is not exported to lan966x (the vcap tool's format for "
                         "128-bit keys was not found); use IPv4")
    keys = _vlan_keys(ip.tagged, ip.vlan, where)
    if not dst.is_unspecified:
        keys.append(f"L3_IP4_DIP {_hex(int(dst))} 0xffffffff")
    if not src.is_unspecified:
        keys.append(f"L3_IP4_SIP {_hex(int(src))} 0xffffffff")
    if ip.dscp != 64:
        keys.append(f"L3_DSCP {_hex(ip.dscp)} 0x3f")
    if ip.next_protocol != "none":
        keys.append(f"L3_IP_PROTO {_hex({'udp': 17, 'tcp': 6, 'sctp': 132}[ip.next_protocol])} 0xff")
    if ip.source_port or ip.destination_port:
        mask = (0xffff0000 if ip.source_port else 0) | (0xffff if ip.destination_port else 0)
        keys.append(f"IP_PAYLOAD_5TUPLE {_hex(ip.source_port << 16 | ip.destination_port)} {_hex(mask)}")
    return "VCAP_KFS_5TUPLE_IP4", keys, [], []


def _recovery_options(rec, where: str) -> str:
    timeout = rec.timeout_ns()
    if rec.latent_error_detection:
        raise UsageError(f"{where}: latent-error-detection is not exported: the LAN966x frer tool has no "
                         "latent error detection (802.1CB 7.4.4 is left to software there); remove it")
    if not HISTORY[0] <= rec.history_length <= HISTORY[1]:
        raise UsageError(f"{where}: history-length {rec.history_length} is out of range for lan966x: "
                         f"{LIMITS['history-length']}")
    if timeout is None or timeout % 1_000_000 or not RESET_MS[0] <= timeout // 1_000_000 <= RESET_MS[1]:
        shown = "never" if timeout is None else f"{timeout / 1e6:g} ms"
        raise UsageError(f"{where}: reset-timeout {shown} is out of range for lan966x: {LIMITS['reset-timeout']}")
    return (f"--alg {0 if rec.algorithm == 'vector' else 1} --hlen {rec.history_length} "
            f"--reset_time {timeout // 1_000_000} --take_no_seq {int(rec.take_no_sequence)}")


def _filter_entry(plan, handle: int, port: str) -> int | None:
    """The entry of plan.filters that applies to stream `handle` received on `port` (None: none)."""
    return plan.filter_of.get((plan.handles.index(handle), plan.ports.index(port)))


def _psfp(plan) -> list[str]:
    """The `psfp fm` lines of the flow meters (FMI POLICERS[0] + the meter's entry) and the `psfp sf`
    lines of the stream filters (SFI = the filter's entry), in index order; UsageError for what the
    switch cannot do."""
    if len(plan.filters) > FILTERS:
        raise UsageError(f"{len(plan.filters)} stream filters is out of range for lan966x: {LIMITS['stream filters']}")
    if len(plan.meters) > POLICERS[1] - POLICERS[0] + 1:
        raise UsageError(f"{len(plan.meters)} flow meters is out of range for lan966x: {LIMITS['flow meters']}")
    lines = []
    for n, (index, meter) in enumerate(plan.meters):
        if meter.cir % 1000 or meter.cir > CIR_KBPS * 1000:
            raise UsageError(f"flow-meter {index}: committed-information-rate {meter.cir} bit/s is out of range for "
                             f"lan966x: {LIMITS['committed-information-rate']}")
        if meter.cbs > CBS:
            raise UsageError(f"flow-meter {index}: committed-burst-size {meter.cbs} octets is out of range for "
                             f"lan966x: {LIMITS['committed-burst-size']}")
        lines.append(f"psfp fm {POLICERS[0] + n} --enable 1 --cir {meter.cir // 1000} --cbs {meter.cbs} --eir 0 --ebs 0 "
                     f"--cf 0 --drop_on_yellow {int(meter.drop_on_yellow)} --mark_red_enable 0 --mark_red 0 "
                     f"# flow-meter {index}")
    for n, flt in enumerate(plan.filters):
        if flt.max_sdu > MAX_SDU:
            raise UsageError(f"stream-filter {flt.index}: max-sdu-size {flt.max_sdu} is out of range for lan966x: "
                             f"{LIMITS['max-sdu-size']}")
        comment = ["stream-filter", str(flt.index), "stream", ",".join(map(str, flt.handles))]
        comment += ["port", ",".join(flt.ports)] if flt.ports else []
        comment += ["flow-meter", str(flt.meter_index)] if flt.meter_index is not None else []
        lines.append(f"psfp sf {n} --enable 1 --max_sdu {flt.max_sdu} --block_oversize_enable 0 --block_oversize 0 "
                     f"# {' '.join(comment)}")
    return lines


def _binding(plan, handle: int, port: str) -> list[str]:
    """The IS1 actions binding stream `handle` received on `port` to its stream filter and flow meter."""
    entry = _filter_entry(plan, handle, port)
    if entry is None:
        return []
    meter = plan.filters[entry].meter
    return [f"SFID_ENA 1 SFID_VAL {entry}", *([] if meter is None else [f"POLICE_ENA 1 POLICE_IDX {POLICERS[0] + meter}"])]


def export_lan966x(cfg: NodeConfig, chip_ports: dict[str, int] | None = None, source: str = "config") -> str:
    """The LAN966x BSP script configuring `cfg`'s streams; UsageError for what the switch cannot do."""
    chip = {p: n for n, p in enumerate(cfg.ports)}
    for name, number in (chip_ports or {}).items():
        if name not in chip:
            raise UsageError(f"--chip-port {name}={number}: {name} is not one of ports ({', '.join(cfg.ports)})")
        chip[name] = number
    for name, number in chip.items():
        if not 0 <= number < CHIP_PORTS:
            raise UsageError(f"chip port {number} of port {name} is out of range: {LIMITS['chip port']}")
    if len(set(chip.values())) != len(chip):
        raise UsageError(f"two ports have the same chip port ({chip}); give each its own with --chip-port")
    for kind, entries in (("sequence-identification", cfg.sequence_identification),
                          ("stream-split", cfg.stream_split), ("port-settings", cfg.port_settings)):
        if entries:
            why = {"sequence-identification": "streams are R-tagged by generation and untagged by the pop of "
                                              "the node that recovers them (the default encoding)",
                   "stream-split": "a LAN966x split sends one copy per port (iflow --dev1/--dev2)",
                   "port-settings": "set a port's PVID with `bridge vlan add ... pvid` on the switch"}[kind]
            raise UsageError(f"{kind} is not exported to lan966x: {why}; remove it")
    plan = cfg.plan
    forwarding = {f.stream: list(f.output_port) for f in cfg.stream_forwarding}
    source = "".join(c if c.isprintable() else "?" for c in source)  # one comment line, whatever the path
    header = HEADER.format(name=cfg.name, source=source) + (PSFP_HEADER if plan.filters or plan.meters else "")
    lines = [header.rstrip("\n"),
             f"{_FRERLAB}node {cfg.name}", f"{_FRERLAB}ports " + " ".join(f"{p}={chip[p]}" for p in cfg.ports)]
    if cfg.netns:
        lines.append(f"{_FRERLAB}netns {cfg.netns}")
    if cfg.bridge_ports:
        lines.append(f"{_FRERLAB}bridge-ports " + " ".join(cfg.bridge_ports))
    lines += _psfp(plan)

    isdx: list[tuple[int, str]] = []  # ISDX - 1 -> (handle, input port)
    rules = []
    for ident in cfg.stream_identity:
        where = f"stream-identity {ident.index}"
        if ident.sent() or ident.out_facing.output_port:
            raise UsageError(f"{where}: identification of frames sent out of a port (in-facing input-port: frames "
                             "this host sends; out-facing output-port: a per-port rewrite of the copies) is not "
                             "exported to lan966x: a switch identifies frames where they enter (out-facing "
                             "input-port)")
        keyset, keys, actions, extra = _is1(ident, where)
        for p in ident.received():
            isdx.append((ident.handle, p))
            n = len(isdx)
            rules.append(f"vcap add {n} is1 {n} 0 {keyset} IF_IGR_PORT_MASK {_hex(1 << chip[p])} 0x1ff "
                         f"{' '.join(keys)}{' ' if keys else ''}VCAP_AFS_S1 ISDX_REPLACE_ENA 1 ISDX_ADD_VAL {n}"
                         f"{''.join(' ' + a for a in [*actions, *_binding(plan, ident.handle, p)])} "
                         f"# stream-identity {ident.index} handle {ident.handle}"
                         f"{''.join(' ' + w for w in extra)}")
    lines += rules

    generation = {h: g.index for g in cfg.sequence_generation for h in g.stream}
    compound: dict[int, int] = {}  # handle -> cs id
    individual: dict[tuple[int, str], Any] = {}  # (handle, port) -> recovery entry
    cs_lines = []
    for rec in cfg.sequence_recovery:
        where = f"sequence-recovery {rec.index}"
        options = _recovery_options(rec, where)
        rate = [] if rec.frame_rate is None else ["frame-rate", f"{rec.frame_rate:g}"]
        if rec.individual_recovery:
            for h in rec.stream:
                for p in rec.port:
                    individual[(h, p)] = (rec, options, rate)
            continue
        if rec.port:
            raise UsageError(f"{where}: sequence recovery placed on ports ({', '.join(rec.port)}) is not exported: "
                             "a LAN966x compound stream is one function for every frame of its stream; remove port")
        for h in rec.stream:
            compound[h] = len(compound)
            cs_lines.append(f"frer cs {compound[h]} --enable 1 {options} # sequence-recovery {rec.index} stream {h}"
                            f"{''.join(' ' + w for w in rate)}")
    lines += cs_lines

    for (handle, port), (rec, _, _) in individual.items():
        if (handle, port) not in isdx:
            raise UsageError(f"sequence-recovery {rec.index}: stream {handle} is not identified on port {port} "
                             "(no stream-identity of received frames there), so no member stream can feed this individual "
                             "recovery function")
    done: set[int] = set()
    for n, (handle, port) in enumerate(isdx, 1):
        if n in done:
            continue
        outputs = forwarding[handle]
        where = f"stream-forwarding of stream {handle}"
        if LOCAL in outputs:
            raise UsageError(f"{where}: {LOCAL!r} (this host) is not a switch port; the switch forwards the "
                             "stream to ports only")
        if len(outputs) > MAX_SPLIT:
            raise UsageError(f"{where}: {len(outputs)} output ports is out of range for lan966x: {LIMITS['split']}")
        devs = [*outputs, *["-"] * (MAX_SPLIT - len(outputs))]
        stream = plan.handles.index(handle)
        flags = plan.streams[stream][0]
        iflow = (f"--generation {int(bool(flags & layout.STREAM_GENERATE))} "
                 f"--pop {int(not flags & layout.STREAM_ENCODE)} --dev1 {devs[0]} --dev2 {devs[1]}")
        gen = ["sequence-generation", str(generation[handle])] if handle in generation else []
        member = individual.get((handle, port))
        if member is None and handle not in compound:
            lines.append(f"frer iflow {n} {iflow}{' # ' + ' '.join(gen) if gen else ''}")
            continue
        if handle not in compound:
            raise UsageError(f"sequence-recovery {member[0].index}: individual recovery without a sequence "
                             f"recovery function of stream {handle} on this node is not exported: a LAN966x member "
                             "stream feeds a compound stream (frer ms --cs_id); add one")
        if member is None:  # a member stream that only feeds the compound stream
            members, ms_options, comment = [n], "--enable 0", gen
        else:
            rec, ms_options, rate = member
            members = [m for m, (h, p) in enumerate(isdx, 1) if h == handle and individual.get((h, p)) is member]
            ms_options = f"--enable 1 {ms_options}"
            comment = [*gen, "sequence-recovery", str(rec.index), "stream", str(handle), *rate]
        done.update(members)
        parts = [f"MS=$(frer msa {' '.join(outputs)})"]
        parts += [f"frer ms {d} $MS {ms_options} --cs_id {compound[handle]}" for d in outputs]
        parts += [f"frer iflow {m} --ms_enable 1 --ms_id $MS {iflow}" for m in members]
        lines.append(" && ".join(parts) + (" # " + " ".join(comment) if comment else ""))
    return "\n".join(lines) + "\n"


# ---- the parser ----

_WORD = re.compile(r"[A-Za-z0-9_.:$()=/-]{1,32}")


def _word(text: str) -> str:
    """A word of the script as a message shows it (never other text of a file: docs/errors.md)."""
    return text if _WORD.fullmatch(text) else f"(a word of {len(text)} characters)"


_KEYSETS = ("VCAP_KFS_DMAC_VID", "VCAP_KFS_NORMAL", "VCAP_KFS_5TUPLE_IP4")


class _Script:
    """What the lines of a script say, gathered while reading it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.where = source
        self.out: dict[str, Any] = {}
        self.chip: dict[int, str] = {}
        self.isdx: dict[int, tuple[int, str]] = {}  # ISDX -> (handle, input port)
        self.identities: dict[int, dict[str, Any]] = {}
        self.generation: dict[int, list[int]] = {}
        self.recovery: dict[int, dict[str, Any]] = {}
        self.cs: dict[int, dict[str, Any]] = {}
        self.forwarding: dict[int, list[str]] = {}
        self.meters: dict[int, dict[str, Any]] = {}  # FMI -> flow-meter entry
        self.filters: dict[int, dict[str, Any]] = {}  # SFI -> stream-filter entry
        self.bound: dict[int, tuple[int | None, int | None]] = {}  # ISDX -> (SFID_VAL, POLICE_IDX) of its rule

    def fail(self, message: str) -> UsageError:
        return UsageError(f"{self.where}: {message}")

    def number(self, text: str, what: str) -> int:
        try:
            return int(text, 0)
        except ValueError:
            raise self.fail(f"{what} {_word(text)} is not a number") from None


def _options(script: _Script, words: list[str], allowed: tuple[str, ...]) -> dict[str, str]:
    if len(words) % 2:
        raise script.fail("options come as --name value pairs")
    options = {}
    for name, value in zip(words[::2], words[1::2]):
        if name.removeprefix("--") not in allowed or not name.startswith("--"):
            raise script.fail(f"option {_word(name)} is not one frerlab writes (valid: "
                              f"{', '.join('--' + a for a in allowed)})")
        options[name[2:]] = value
    return options


def _pairs(script: _Script, comment: str) -> dict[str, str]:
    words = comment.split()
    if len(words) % 2:
        raise script.fail("the comment after the command is not `key value` pairs (frerlab writes them)")
    return dict(zip(words[::2], words[1::2]))


def _vcap(script: _Script, words: list[str], meta: dict[str, str]) -> None:
    if len(words) < 7 or words[3] != "is1" or words[6] not in _KEYSETS or "VCAP_AFS_S1" not in words:
        raise script.fail("expected `vcap add ID is1 PRIORITY LOOKUP KEYSET KEY VALUE MASK ... VCAP_AFS_S1 "
                          f"ACTION VALUE ...` with a keyset of {', '.join(_KEYSETS)}")
    split = words.index("VCAP_AFS_S1")
    keys, actions = words[7:split], words[split + 1:]
    if len(keys) % 3 or len(actions) % 2:
        raise script.fail("keys come as KEY VALUE MASK, actions as ACTION VALUE")
    key = {k: (script.number(v, k), script.number(m, k)) for k, v, m in zip(keys[::3], keys[1::3], keys[2::3])}
    action = {a: script.number(v, a) for a, v in zip(actions[::2], actions[1::2])}
    if "stream-identity" not in meta or "handle" not in meta:
        raise script.fail("a vcap rule needs its `# stream-identity N handle H` comment")
    index, handle = int(meta["stream-identity"]), int(meta["handle"])
    mask = key.pop("IF_IGR_PORT_MASK", (0, 0))[0]
    ports = [name for n, name in script.chip.items() if mask == 1 << n]
    if not ports:
        raise script.fail(f"IF_IGR_PORT_MASK {_hex(mask)} is not one of the chip ports of the `# frerlab: ports` line")
    if action.get("ISDX_REPLACE_ENA") != 1 or "ISDX_ADD_VAL" not in action:
        raise script.fail("the rule gives no ISDX (ISDX_REPLACE_ENA 1 ISDX_ADD_VAL N)")
    script.isdx[action["ISDX_ADD_VAL"]] = (handle, ports[0])
    script.bound[action["ISDX_ADD_VAL"]] = (action.get("SFID_VAL") if action.get("SFID_ENA") == 1 else None,
                                            action.get("POLICE_IDX") if action.get("POLICE_ENA") == 1 else None)
    vlan = {"tagged": "tagged" if "8021Q_VLAN_TAGGED_IS" in key else "all", "vlan": key.get("8021Q_VID0", (0, 0))[0]}
    mac = key.get("L2_DMAC", key.get("L2_SMAC", (0, 0)))[0].to_bytes(6, "big").hex(":")
    if words[6] == "VCAP_KFS_5TUPLE_IP4":
        params: dict[str, Any] = {**vlan}
        for k, leaf in (("L3_IP4_SIP", "ip-source"), ("L3_IP4_DIP", "ip-destination")):
            if k in key:
                params[leaf] = str(ipaddress.IPv4Address(key[k][0]))
        if "L3_DSCP" in key:
            params["dscp"] = key["L3_DSCP"][0]
        if "L3_IP_PROTO" in key:
            protocols = {17: "udp", 6: "tcp", 132: "sctp"}
            if key["L3_IP_PROTO"][0] not in protocols:
                raise script.fail(f"L3_IP_PROTO {key['L3_IP_PROTO'][0]} is not udp, tcp or sctp")
            params["next-protocol"] = protocols[key["L3_IP_PROTO"][0]]
        if "IP_PAYLOAD_5TUPLE" in key:
            value, ports_mask = key["IP_PAYLOAD_5TUPLE"]
            if ports_mask & 0xffff0000:
                params["source-port"] = value >> 16
            if ports_mask & 0xffff:
                params["destination-port"] = value & 0xffff
        kind = ("ip-stream-identification", params)
    elif "VID_REPLACE_ENA" in action:
        down = {"destination-mac": mac, **vlan}
        if "down-priority" in meta:
            down["priority"] = int(meta["down-priority"])
        up = {"destination-mac": mac, "tagged": "tagged", "vlan": action.get("VID_VAL", 0)}
        if action.get("PCP_DEI_ENA") == 1:
            up["priority"] = action.get("PCP_VAL", 0)
        kind = ("dmac-vlan-stream-identification", {"down": down, "up": up})
    elif words[6] == "VCAP_KFS_NORMAL":
        kind = ("smac-vlan-stream-identification", {"source-mac": mac, **vlan})
    else:
        kind = ("null-stream-identification", {"destination-mac": mac, **vlan})
    entry = script.identities.setdefault(index, {"index": index, "handle": handle,
                                                 "out-facing": {"input-port": []}, kind[0]: kind[1]})
    entry["out-facing"]["input-port"].append(ports[0])


_RECOVERY_OPTIONS = ("enable", "alg", "hlen", "reset_time", "take_no_seq")


def _recovery_values(script: _Script, options: dict[str, str]) -> dict[str, Any]:
    for name in ("alg", "hlen", "reset_time", "take_no_seq"):
        if name not in options:
            raise script.fail(f"--{name} is missing (frerlab writes every recovery setting)")
    return {"algorithm": ("vector", "match")[script.number(options["alg"], "--alg") != 0],
            "history-length": script.number(options["hlen"], "--hlen"),
            "reset-timeout": script.number(options["reset_time"], "--reset_time"),
            "take-no-sequence": script.number(options["take_no_seq"], "--take_no_seq") != 0}


def _fixed(script: _Script, options: dict[str, str], values: dict[str, str]) -> None:
    """UsageError unless each of `values` is given as frerlab writes it."""
    for name, value in values.items():
        if options.get(name) != value:
            raise script.fail(f"--{name} {_word(options.get(name, '(none)'))} is not what frerlab writes "
                              f"(--{name} {value})")


def _psfp_command(script: _Script, words: list[str], meta: dict[str, str]) -> None:
    """Reads a `psfp fm` or `psfp sf` line (and its comment) into `script`."""
    number = script.number(words[2], f"{words[1]} id")
    if words[1] == "fm":
        options = _options(script, words[3:], ("enable", "cir", "cbs", "eir", "ebs", "cf", "drop_on_yellow",
                                               "mark_red_enable", "mark_red"))
        _fixed(script, options, {"enable": "1", "eir": "0", "ebs": "0", "cf": "0", "mark_red_enable": "0",
                                 "mark_red": "0"})
        if "flow-meter" not in meta or "cir" not in options or "cbs" not in options:
            raise script.fail("a flow meter needs --cir, --cbs and its `# flow-meter N` comment")
        script.meters[number] = {"index": int(meta["flow-meter"]),
                                 "committed-information-rate": script.number(options["cir"], "--cir") * 1000,
                                 "committed-burst-size": script.number(options["cbs"], "--cbs"),
                                 "drop-on-yellow": options.get("drop_on_yellow", "0") != "0"}
        return
    options = _options(script, words[3:], ("enable", "max_sdu", "block_oversize_enable", "block_oversize"))
    _fixed(script, options, {"enable": "1", "block_oversize_enable": "0", "block_oversize": "0"})
    if "stream-filter" not in meta or "stream" not in meta:
        raise script.fail("a stream filter needs its `# stream-filter N stream H[,H...]` comment")
    entry: dict[str, Any] = {"index": int(meta["stream-filter"]), "stream": [int(h) for h in meta["stream"].split(",")],
                             "port": meta["port"].split(",") if "port" in meta else [],
                             "max-sdu-size": script.number(options.get("max_sdu", "0"), "--max_sdu")}
    if "flow-meter" in meta:
        entry["flow-meter"] = int(meta["flow-meter"])
    script.filters[number] = entry


def _command(script: _Script, words: list[str], meta: dict[str, str], ms: dict[str, Any]) -> None:
    if words[:2] == ["vcap", "add"]:
        _vcap(script, words, meta)
    elif words[0] == "psfp" and words[1:2] in (["fm"], ["sf"]) and len(words) > 2:
        _psfp_command(script, words, meta)
    elif words[:2] == ["frer", "cs"] and len(words) > 2:
        values = _recovery_values(script, _options(script, words[3:], _RECOVERY_OPTIONS))
        script.cs[script.number(words[2], "cs id")] = {"meta": meta, **values}
    elif words[0].startswith("MS=$(frer") and words[:2] == ["MS=$(frer", "msa"] and words[-1].endswith(")"):
        ms["devs"] = [*words[2:-1], words[-1][:-1]]
    elif words[:2] == ["frer", "ms"] and len(words) > 3 and words[3] == "$MS":
        options = _options(script, words[4:], (*_RECOVERY_OPTIONS, "cs_id"))
        ms["cs"] = script.number(options.get("cs_id", "-1"), "--cs_id")
        if options.get("enable") == "1":
            ms["recovery"] = _recovery_values(script, options)
    elif words[:2] == ["frer", "iflow"] and len(words) > 2:
        n = script.number(words[2], "iflow id")
        if n not in script.isdx:
            raise script.fail(f"iflow {n} comes before a vcap rule giving ISDX {n}")
        handle, port = script.isdx[n]
        options = _options(script, words[3:], ("ms_enable", "ms_id", "generation", "pop", "dev1", "dev2"))
        if options.get("ms_enable") == "1":
            ms.setdefault("ports", []).append(port)
            ms["handle"] = handle
        if options.get("generation") == "1":
            if "sequence-generation" not in meta:
                raise script.fail("an iflow with --generation 1 needs its `# sequence-generation N` comment")
            streams = script.generation.setdefault(int(meta["sequence-generation"]), [])
            if handle not in streams:
                streams.append(handle)
        devs = [d for d in (options.get("dev1", "-"), options.get("dev2", "-")) if d != "-"]
        script.forwarding.setdefault(handle, devs)
    else:
        raise script.fail(f"`{' '.join(map(_word, words[:2]))}` is not a command frerlab writes "
                          "(vcap add, frer cs|msa|ms|iflow, psfp fm|sf)")


def parse_lan966x(text: str, source: str = "script") -> tuple[dict[str, Any], NodeConfig]:
    """frerlab's YAML mapping of a script `export_lan966x` wrote, and the NodeConfig it validates
    to; UsageError naming the line that cannot be read."""
    script = _Script(source)
    for number, line in enumerate(text.splitlines(), 1):
        script.where = f"{source}:{number}"
        line = line.strip()
        if line.startswith(_FRERLAB):
            key, _, value = line[len(_FRERLAB):].partition(" ")
            if key == "node":
                script.out["name"] = value
            elif key == "netns":
                script.out["netns"] = value
            elif key == "bridge-ports":
                script.out["bridge-ports"] = value.split()
            elif key == "ports":
                for item in value.split():
                    name, _, chip = item.partition("=")
                    script.chip[script.number(chip, f"chip port of {name}")] = name
                script.out["ports"] = list(script.chip.values())
            continue
        if not line or line.startswith("#"):
            continue
        code, _, comment = line.partition(" # ")
        meta = _pairs(script, comment)
        try:
            _line(script, code, meta)
        except (ValueError, OverflowError):  # a comment's number, a key too wide for its field
            raise script.fail("a number or address cannot be read (too wide for its field, or not a number)") from None
    script.where = source
    try:
        return _config(script)
    except (ValueError, OverflowError):
        raise UsageError(f"{source}: a number in a `# ...` comment cannot be read") from None


def _line(script: _Script, code: str, meta: dict[str, str]) -> None:
    """Reads one command line (commands joined by &&) into `script`."""
    ms: dict[str, Any] = {}
    for part in code.split(" && "):
        _command(script, part.split(), meta, ms)
    if ms.get("ports") and "recovery" in ms:  # an individual recovery function (else: feeds the compound one)
        index = int(meta.get("sequence-recovery", -1))
        if index < 0:
            raise script.fail("a member stream with recovery needs its `# sequence-recovery N` comment")
        entry = script.recovery.setdefault(index, {"index": index, "stream": [], "port": ms["ports"],
                                                   "individual-recovery": True, **ms["recovery"]})
        if ms["handle"] not in entry["stream"]:
            entry["stream"].append(ms["handle"])
        if "frame-rate" in meta:
            entry["frame-rate"] = float(meta["frame-rate"])


def _config(script: _Script) -> tuple[dict[str, Any], NodeConfig]:
    """The configuration of everything a script's lines said."""
    source = script.source
    if not script.chip:
        raise UsageError(f"{source}: no `# frerlab: ports NAME=CHIP ...` line; frerlab reads back only scripts "
                         "`frerlab config export --target lan966x` wrote")
    for cs in script.cs.values():
        meta = cs.pop("meta")
        index = int(meta.get("sequence-recovery", -1))
        entry = script.recovery.setdefault(index, {"index": index, "stream": [], **cs})
        entry["stream"].append(int(meta.get("stream", -1)))
        if "frame-rate" in meta:
            entry["frame-rate"] = float(meta["frame-rate"])
    out = script.out
    out["stream-identity"] = [script.identities[i] for i in sorted(script.identities)]
    if script.generation:
        out["sequence-generation"] = [{"index": i, "stream": s} for i, s in sorted(script.generation.items())]
    if script.recovery:
        out["sequence-recovery"] = [script.recovery[i] for i in sorted(script.recovery)]
    out["stream-forwarding"] = [{"stream": h, "output-port": p} for h, p in script.forwarding.items()]
    if script.meters:
        out["flow-meter"] = list(script.meters.values())
    if script.filters:
        out["stream-filter"] = list(script.filters.values())
    cfg = parse_config(out, source)
    _check_bindings(script, cfg)
    return out, cfg


def _check_bindings(script: _Script, cfg: NodeConfig) -> None:
    """UsageError unless each IS1 rule binds its frames to the stream filter and flow meter that
    the `psfp` lines say apply to its stream and port."""
    plan = cfg.plan
    for n, (handle, port) in script.isdx.items():
        sfi, fmi = script.bound[n]
        said = (script.filters.get(sfi, {}).get("index"), script.meters.get(fmi, {}).get("index"))
        entry = _filter_entry(plan, handle, port)
        want = (None, None) if entry is None else (plan.filters[entry].index, plan.filters[entry].meter_index)
        if said != want or (sfi is None) != (said[0] is None) or (fmi is None) != (said[1] is None):
            shown = ["none" if v is None else str(v) for v in (sfi, fmi, *want)]
            raise UsageError(f"{script.source}: the rule of ISDX {n} (stream {handle} on {port}) binds SFID_VAL "
                             f"{shown[0]} and POLICE_IDX {shown[1]}, but the `psfp` lines make stream-filter "
                             f"{shown[2]} with flow-meter {shown[3]} apply there")


def parse_lan966x_file(path: str | Path) -> tuple[dict[str, Any], NodeConfig]:
    """parse_lan966x of a script file."""
    return parse_lan966x(read_text(path, "LAN966x script"), str(path))

