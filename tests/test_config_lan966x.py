"""`frerlab config export --target lan966x`: golden scripts of the shipped configurations the
switch can run (tests/fixtures/lan966x/, reviewed line by line), the parser reading them back
into the same configuration, and clear refusals of what the switch cannot do, each limit with
where it comes from."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from frerlab.cli import main
from frerlab.config.lan966x import export_lan966x, parse_lan966x
from frerlab.dataplane.config import load_config, parse_config
from frerlab.errors import UsageError
from frerlab.remote.cli import script_commands
from frerlab.testbed import plan

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs" / "dataplane"
GOLDEN = ROOT / "tests" / "fixtures" / "lan966x"
EXPORTED = ["lan966x-sw1", "lan966x-sw2"]


@pytest.mark.parametrize("name", EXPORTED)
def test_the_script_of_each_switch_config_is_the_reviewed_one(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the script names its source as given on the command line
    out = tmp_path / f"{name}.sh"
    assert main(["config", "export", f"configs/dataplane/{name}.yaml", "--target", "lan966x", "-o", str(out)]) == 0
    assert out.read_text() == (GOLDEN / f"{name}.sh").read_text()


@pytest.mark.parametrize("name", EXPORTED)
def test_the_parser_reads_the_script_back_into_the_same_config(name, tmp_path, capsys):
    yaml_file = tmp_path / f"{name}.yaml"
    assert main(["config", "import", str(GOLDEN / f"{name}.sh"), "-o", str(yaml_file)]) == 0
    assert load_config(yaml_file).model_dump() == load_config(CONFIGS / f"{name}.yaml").model_dump()


def test_hosts_push_runs_the_script_as_one_command_per_line():
    commands = [c for _, c in script_commands(GOLDEN / "lan966x-sw2.sh")]
    assert [c.split()[0] for c in commands] == ["vcap", "vcap", "frer", "MS=$(frer", "MS=$(frer"]
    # a member stream's id is printed by `frer msa`, so it is allocated and used on one line
    assert all("$MS" not in c or c.startswith("MS=$(frer msa ") for c in commands)


BASE = {"name": "sw", "ports": ["eth0", "eth1", "eth2"],
        "stream-identity": [{"index": 1, "handle": 1, "out-facing": {"input-port": ["eth1", "eth2"]},
                             "null-stream-identification": {"destination-mac": "02:00:00:00:00:02", "vlan": 10}}],
        "sequence-recovery": [{"index": 1, "stream": [1], "history-length": 32, "reset-timeout": 100}],
        "stream-forwarding": [{"stream": 1, "output-port": ["eth0"]}]}


def _config(change=None):
    data = copy.deepcopy(BASE)
    if change:
        change(data)
    return parse_config(data, "test")


def test_every_identification_type_the_switch_has_keys_for_round_trips():
    data = copy.deepcopy(BASE)
    data["stream-identity"] += [
        {"index": 2, "handle": 2, "out-facing": {"input-port": ["eth0"]},
         "smac-vlan-stream-identification": {"source-mac": "02:00:00:00:00:03", "tagged": "tagged"}},
        {"index": 3, "handle": 3, "out-facing": {"input-port": ["eth2"]},
         "dmac-vlan-stream-identification": {"down": {"destination-mac": "02:00:00:00:00:04", "vlan": 20, "priority": 3},
                                             "up": {"destination-mac": "02:00:00:00:00:04", "vlan": 10, "priority": 5}}},
        {"index": 4, "handle": 4, "out-facing": {"input-port": ["eth0"]},
         "ip-stream-identification": {"ip-source": "10.0.0.1", "ip-destination": "10.0.0.2", "dscp": 46,
                                      "next-protocol": "tcp", "source-port": 7, "destination-port": 9}}]
    data["sequence-generation"] = [{"index": 5, "stream": [2, 4]}]
    data["stream-forwarding"] += [{"stream": 2, "output-port": ["eth1", "eth2"]}, {"stream": 3, "output-port": ["eth0"]},
                                  {"stream": 4, "output-port": ["eth2"]}]
    cfg = parse_config(data, "test")
    text = export_lan966x(cfg, {"eth0": 4})
    assert "IF_IGR_PORT_MASK 0x10 0x1ff L2_SMAC 0x020000000003 0xffffffffffff 8021Q_VLAN_TAGGED_IS 1 1" in text
    assert "VID_REPLACE_ENA 1 VID_VAL 0xa PCP_DEI_ENA 1 PCP_VAL 5 DEI_VAL 0" in text
    assert ("L3_IP4_DIP 0xa000002 0xffffffff L3_IP4_SIP 0xa000001 0xffffffff L3_DSCP 0x2e 0x3f "
            "L3_IP_PROTO 0x6 0xff IP_PAYLOAD_5TUPLE 0x70009 0xffffffff") in text
    assert parse_lan966x(text, "test")[1].model_dump() == cfg.model_dump()


def _policed_sw2() -> dict:
    """The shipped lan966x-sw2 with the policing the testbed gives its SW2 (one filter and flow
    meter per path: `frerlab testbed` with police_bps 4 Mbit/s, burst 24000 octets), its ports
    p1 and p2 on the switch's eth1 and eth2. (The testbed's SW2 itself splits and detects latent
    errors, which the switch cannot do.)"""
    import yaml

    testbed = plan.node_configs("frer", recovery=plan.Recovery(police_bps=4_000_000, police_burst=24_000))["sw2"]
    data = yaml.safe_load((CONFIGS / "lan966x-sw2.yaml").read_text())
    on_switch = {"p1": "eth1", "p2": "eth2"}
    data["stream-filter"] = [{**f.model_dump(by_alias=True, exclude_defaults=True),
                              "port": [on_switch[p] for p in f.port]} for f in testbed.stream_filter]
    data["flow-meter"] = [m.model_dump(by_alias=True, exclude_defaults=True) for m in testbed.flow_meter]
    return data


def test_a_policed_node_gets_psfp_lines_and_rules_bound_to_them():
    text = export_lan966x(parse_config(_policed_sw2(), "test"))
    lines = text.splitlines()
    # flow meters and stream filters come first, so no rule ever points at one not yet configured
    assert lines.index("psfp fm 81 --enable 1 --cir 4000 --cbs 24000 --eir 0 --ebs 0 --cf 0 --drop_on_yellow 0 "
                       "--mark_red_enable 0 --mark_red 0 # flow-meter 11") < lines.index(
        "psfp sf 0 --enable 1 --max_sdu 0 --block_oversize_enable 0 --block_oversize 0 # stream-filter 11 stream 1 "
        "port eth1 flow-meter 11") < next(n for n, line in enumerate(lines) if line.startswith("vcap"))
    assert "psfp fm 82 --enable 1 --cir 4000 --cbs 24000" in text
    assert "psfp sf 1 --enable 1 --max_sdu 0 --block_oversize_enable 0 --block_oversize 0 # stream-filter 12" in text
    # the rule of each path binds its frames to that path's filter and meter
    assert ("IF_IGR_PORT_MASK 0x2 0x1ff" in lines[-5] and lines[-5].endswith(
        "VCAP_AFS_S1 ISDX_REPLACE_ENA 1 ISDX_ADD_VAL 1 SFID_ENA 1 SFID_VAL 0 POLICE_ENA 1 POLICE_IDX 81 "
        "# stream-identity 1 handle 1"))
    assert "ISDX_ADD_VAL 2 SFID_ENA 1 SFID_VAL 1 POLICE_ENA 1 POLICE_IDX 82 # stream-identity 1 handle 1" in lines[-4]
    assert "# PSFP (802.1Qci): `psfp fm FMI` (flow meter) and `psfp sf SFI` (stream filter) follow the psfp" in text
    assert "psfp" not in (GOLDEN / "lan966x-sw2.sh").read_text()  # and only a policed node has them


def test_a_policed_node_round_trips():
    cfg = parse_config(_policed_sw2(), "test")
    assert parse_lan966x(export_lan966x(cfg), "test")[1].model_dump() == cfg.model_dump()
    # a filter of every port, shadowed by a lower index on eth1, one without meter, a shared meter, max-sdu
    data = copy.deepcopy(BASE)
    data["stream-filter"] = [{"index": 5, "stream": [1], "port": ["eth1"], "max-sdu-size": 1500, "flow-meter": 2},
                             {"index": 7, "stream": [1], "flow-meter": 2},
                             {"index": 9, "stream": [1], "port": ["eth2"], "max-sdu-size": 65535}]
    data["flow-meter"] = [{"index": 2, "committed-information-rate": 0, "committed-burst-size": 1,
                           "drop-on-yellow": True}, {"index": 3, "committed-information-rate": 2_184_500_000,
                                                     "committed-burst-size": 245_760}]
    cfg = parse_config(data, "test")
    text = export_lan966x(cfg)
    assert "ISDX_ADD_VAL 1 SFID_ENA 1 SFID_VAL 0 POLICE_ENA 1 POLICE_IDX 81 #" in text  # eth1: filter 5
    assert "ISDX_ADD_VAL 2 SFID_ENA 1 SFID_VAL 1 POLICE_ENA 1 POLICE_IDX 81 #" in text  # eth2: filter 7
    assert "psfp fm 82 --enable 1 --cir 2184500 --cbs 245760" in text  # the limits themselves
    assert "psfp sf 2 --enable 1 --max_sdu 65535 --block_oversize_enable 0 --block_oversize 0 # stream-filter 9 " \
           "stream 1 port eth2\n" in text
    assert parse_lan966x(text, "test")[1].model_dump() == cfg.model_dump()


def test_a_policed_config_exports_and_imports_on_the_command_line(tmp_path, capsys):
    import yaml

    source, script, back = tmp_path / "sw2.yaml", tmp_path / "sw2.sh", tmp_path / "back.yaml"
    source.write_text(yaml.safe_dump(_policed_sw2()))
    assert main(["config", "export", str(source), "--target", "lan966x", "-o", str(script)]) == 0
    assert "SFID_VAL 1 POLICE_ENA 1 POLICE_IDX 82" in script.read_text()
    assert main(["config", "import", str(script), "-o", str(back)]) == 0
    assert load_config(back).model_dump() == load_config(source).model_dump()


def test_a_script_whose_rule_binds_another_filter_is_refused(capsys):
    text = export_lan966x(parse_config(_policed_sw2(), "test"))
    with pytest.raises(UsageError, match=r"x.sh: the rule of ISDX 2 \(stream 1 on eth2\) binds SFID_VAL 0 and "
                                         r"POLICE_IDX 82, but the `psfp` lines make stream-filter 12 with flow-meter "
                                         r"12 apply there"):
        parse_lan966x(text.replace("SFID_VAL 1 ", "SFID_VAL 0 "), "x.sh")
    with pytest.raises(UsageError, match="binds SFID_VAL none and POLICE_IDX none, but the `psfp` lines make "
                                         "stream-filter 11 with flow-meter 11"):
        parse_lan966x(text.replace(" SFID_ENA 1 SFID_VAL 0 POLICE_ENA 1 POLICE_IDX 81", ""), "x.sh")
    fm = next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith("psfp fm"))
    with pytest.raises(UsageError, match=rf"x.sh:{fm}: --eir 5 is not what frerlab writes \(--eir 0\)"):
        parse_lan966x(text.replace("--eir 0", "--eir 5"), "x.sh")
    with pytest.raises(UsageError, match=rf"x.sh:{fm}: a flow meter needs --cir, --cbs and its `# flow-meter N`"):
        parse_lan966x(text.replace("# flow-meter 11", ""), "x.sh")
    with pytest.raises(UsageError, match=rf"x.sh:{fm + 2}: a stream filter needs its `# stream-filter N stream"):
        parse_lan966x(text.replace("# stream-filter 11 stream 1 port eth1 flow-meter 11", ""), "x.sh")


def _filters(count):
    return lambda d: d.update({"stream-filter": [{"index": i, "stream": [1]} for i in range(count)]})


def _meters(count, cir=8000, cbs=1000):
    return lambda d: d.update({"flow-meter": [{"index": i, "committed-information-rate": cir,
                                               "committed-burst-size": cbs} for i in range(count)]})


REFUSED = {
    # what the hardware or the tools cannot do, and where the limit comes from
    "history 33": (lambda d: d["sequence-recovery"][0].update({"history-length": 33}),
                   "history-length 33 is out of range for lan966x: 2..32 (the LAN966x recovery's range"),
    "reset 4096 ms": (lambda d: d["sequence-recovery"][0].update({"reset-timeout": 4096}),
                      "reset-timeout 4096 ms is out of range for lan966x: 1..4095 ms (LAN966X_FRER_RESET_MAX in the "
                      "BSP kernel's lan966x_qos.h: the driver refuses a larger reset_time)"),
    "no timeout": (lambda d: d["sequence-recovery"][0].update({"reset-timeout": "never"}),
                   "reset-timeout never is out of range for lan966x"),
    "three copies": (lambda d: d.update({"ports": ["eth0", "eth1", "eth2", "eth3"],
                                         "stream-forwarding": [{"stream": 1, "output-port": ["eth0", "eth1", "eth3"]}],
                                         "sequence-recovery": []}),
                     "3 output ports is out of range for lan966x: at most 2 output ports (LAN966X_FRER_MAX_PORTS"),
    "latent errors": (lambda d: d["sequence-recovery"][0].update({
        "latent-error-detection": True, "latent-error-detection-parameters": {"difference": 5, "paths": 2}}),
                      "latent-error-detection is not exported: the LAN966x frer tool has no latent error detection"),
    "recovery on ports": (lambda d: d["sequence-recovery"][0].update({"port": ["eth1"]}),
                          "sequence recovery placed on ports (eth1) is not exported"),
    "individual alone": (lambda d: d.update({"sequence-recovery": [
        {"index": 1, "stream": [1], "port": ["eth1"], "individual-recovery": True}]}),
        "individual recovery without a sequence recovery function of stream 1 on this node is not exported"),
    "individual on a port without identity": (lambda d: d.update({"sequence-recovery": [
        *d["sequence-recovery"], {"index": 2, "stream": [1], "port": ["eth0"], "individual-recovery": True}]}),
        "sequence-recovery 2: stream 1 is not identified on port eth0"),
    "priority tagged": (lambda d: d["stream-identity"][0]["null-stream-identification"].update(
        {"tagged": "priority", "vlan": 0}), "tagged: priority is not exported to lan966x"),
    "dmac rewrite": (lambda d: d["stream-identity"].__setitem__(0, {
        "index": 1, "handle": 1, "out-facing": {"input-port": ["eth1"]}, "dmac-vlan-stream-identification": {
            "down": {"destination-mac": "02:00:00:00:00:0b", "vlan": 20},
            "up": {"destination-mac": "02:00:00:00:00:02", "vlan": 10}}}),
        "rewrites the destination MAC (02:00:00:00:00:0b -> 02:00:00:00:00:02), which the LAN966x cannot do"),
    "ipv6": (lambda d: d["stream-identity"][0].update({"null-stream-identification": None,
                                                       "ip-stream-identification": {"ip-destination": "2001:db8::2"}}),
             "IPv6 identification is not exported to lan966x"),
    "ip and mac": (lambda d: d["stream-identity"][0].update({"null-stream-identification": None,
                                                             "ip-stream-identification": {
                                                                 "ip-destination": "10.0.0.2",
                                                                 "destination-mac": "02:00:00:00:00:02"}}),
                   "the LAN966x IS1 key for IPv4 5-tuples (VCAP_KFS_5TUPLE_IP4) has no destination MAC"),
    "to this host": (lambda d: d.update({"stream-forwarding": [{"stream": 1, "output-port": ["local"]}]}),
                     "'local' (this host) is not a switch port"),
    "split": (lambda d: d.update({"stream-split": [{"port": "eth0", "input-id": [1], "output-id": [1]}]}),
              "stream-split is not exported to lan966x: a LAN966x split sends one copy per port"),
    "pvid": (lambda d: d.update({"port-settings": [{"port": "eth0", "pvid": 5}]}),
             "port-settings is not exported to lan966x: set a port's PVID with `bridge vlan add ... pvid`"),
    "max-sdu 65536": (lambda d: d.update({"stream-filter": [{"index": 4, "stream": [1], "max-sdu-size": 65536}]}),
                      "stream-filter 4: max-sdu-size 65536 is out of range for lan966x: 0..65535 octets (max_sdu "
                      "is a 16-bit number in the psfp tool's lan966x_psfp_sf_conf)"),
    "257 filters": (_filters(257), "257 stream filters is out of range for lan966x: at most 256 "
                                   "(LAN966X_PSFP_NUM_SFI in the BSP kernel's lan966x_qos.h)"),
    "264 meters": (_meters(264), "264 flow meters is out of range for lan966x: at most 263 (policers 81..343, "
                                 "the BSP kernel's pool of PSFP and IS2 policers"),
    "rate in bit/s": (_meters(1, cir=1500), "flow-meter 0: committed-information-rate 1500 bit/s is out of range "
                                            "for lan966x: a multiple of 1000 bit/s, 0..2184500000 (`psfp fm --cir` "
                                            "is in kbit/s; the BSP kernel's policer_conf_set takes at most 65535 "
                                            "units of 33 1/3 kbit/s)"),
    "rate above the policer's": (_meters(1, cir=2_184_501_000), "committed-information-rate 2184501000 bit/s is out "
                                                                "of range for lan966x"),
    "burst above the policer's": (_meters(1, cbs=245_761), "flow-meter 0: committed-burst-size 245761 octets is out "
                                                           "of range for lan966x: 1..245760 octets (the BSP kernel's "
                                                           "policer_conf_set takes at most 60 units of 4096 octets)"),
}


def _drop_none(data):
    for ident in data["stream-identity"]:
        for key in [k for k, v in ident.items() if v is None]:
            del ident[key]


@pytest.mark.parametrize("name", REFUSED)
def test_what_the_switch_cannot_do_is_refused_saying_why(name):
    change, message = REFUSED[name]
    data = copy.deepcopy(BASE)
    change(data)
    _drop_none(data)
    cfg = parse_config(data, "test")
    with pytest.raises(UsageError) as err:
        export_lan966x(cfg)
    assert message in str(err.value)


def test_the_limits_themselves_are_exported():
    cfg = _config(lambda d: d["sequence-recovery"][0].update({"history-length": 2, "reset-timeout": 4095}))
    assert "--hlen 2 --reset_time 4095" in export_lan966x(cfg)
    cfg = _config(lambda d: d["sequence-recovery"][0].update({"history-length": 32, "reset-timeout": 1}))
    assert "--hlen 32 --reset_time 1" in export_lan966x(cfg)


@pytest.mark.parametrize("config, message", [
    ("sw1-replicate", "stream-identity 2: identification of frames sent out of a port (in-facing input-port: frames "
     "this host sends; out-facing output-port: a per-port rewrite"),
    ("sw2-eliminate", "stream-identity 1: dmac-vlan-stream-identification rewrites the destination MAC"),
    ("talker-two-nics", "stream-identity 1: identification of frames sent out of a port"),
    ("listener-two-nics", "sequence-recovery 1: history-length 1024 is out of range for lan966x: 2..32"),
])
def test_the_other_shipped_configs_are_refused_in_one_line(config, message, capsys):
    assert main(["config", "export", str(CONFIGS / f"{config}.yaml"), "--target", "lan966x"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_chip_ports_are_checked(capsys):
    cfg = _config()
    assert "IF_IGR_PORT_MASK 0x100 0x1ff" in export_lan966x(cfg, {"eth1": 8})
    for chip, message in [({"eth1": 9}, "chip port 9 of port eth1 is out of range: 0..8 (IF_IGR_PORT_MASK is 9 bits"),
                          ({"eth1": 2}, "two ports have the same chip port"),
                          ({"eth7": 1}, "--chip-port eth7=1: eth7 is not one of ports")]:
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            export_lan966x(cfg, chip)
    assert main(["config", "export", str(CONFIGS / "lan966x-sw1.yaml"), "--target", "lan966x",
                 "--chip-port", "eth1"]) == 2
    assert "--chip-port 'eth1' is not PORT=N" in capsys.readouterr().err


def test_a_script_frerlab_did_not_write_is_refused_naming_the_line(tmp_path, capsys):
    text = (GOLDEN / "lan966x-sw1.sh").read_text()
    lines = text.splitlines()
    rule, iflow = (next(n for n, line in enumerate(lines, 1) if line.startswith(c)) for c in ("vcap", "frer iflow"))
    with pytest.raises(UsageError, match=rf"x.sh:{len(lines) + 1}: `frer vlan` is not a command frerlab writes"):
        parse_lan966x(text + "frer vlan 10 --flood_disable 1\n", "x.sh")
    with pytest.raises(UsageError, match=rf"x.sh:{iflow}: option --split_mask is not one frerlab writes"):
        parse_lan966x(text.replace("--pop 0", "--split_mask 3"), "x.sh")
    with pytest.raises(UsageError, match=rf"x.sh:{iflow}: option \(a word of 40 characters\) is not one"):
        parse_lan966x(text.replace("--pop", "--" + "x" * 38), "x.sh")
    with pytest.raises(UsageError, match=rf"x.sh:{rule}: IF_IGR_PORT_MASK 0x1 is not one of the chip ports"):
        parse_lan966x(text.replace("# frerlab: ports", "# ports"), "x.sh")
    with pytest.raises(UsageError, match="no `# frerlab: ports NAME=CHIP ...` line"):
        parse_lan966x("# a script of someone else\n", "x.sh")
    path = tmp_path / "x.txt"
    path.write_text(text)
    assert main(["config", "import", str(path)]) == 2
    assert "say what it is with --from yang-json or --from lan966x" in capsys.readouterr().err
    assert main(["config", "import", str(path), "--from", "lan966x"]) == 0


def test_damaged_scripts_are_refused_never_crash():
    import random

    rng = random.Random(15)
    words = ["0xzz", "99999999999999999999", "-", "#", "&&", "$MS", "--enable", "1", "is1", "frer", "vcap", ")",
             "MS=$(frer", "frame-rate", "x", "0x1ffffffffffffff", "0", "psfp", "sf", "fm", "1,x", "SFID_VAL"]
    texts = [(GOLDEN / f"{name}.sh").read_text().split(" ") for name in EXPORTED]
    texts.append(export_lan966x(parse_config(_policed_sw2(), "test")).split(" "))
    for _ in range(1500):
        text = list(rng.choice(texts))
        for _ in range(rng.randint(1, 3)):
            text[rng.randrange(len(text))] = rng.choice(words)
        try:
            parse_lan966x(" ".join(text), "damaged.sh")
        except UsageError:
            pass
