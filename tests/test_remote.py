"""Real hosts over SSH, against a real OpenSSH server (tests/sshd.py): sshd runs in a network
namespace of its own with host and client keys made for the test, reached over a veth from
this namespace (198.18.3.0/30). Commands, parallel runs, files fetched back, background processes stopped
when the session ends (also after an error), jump hosts, pre-flight, and the faults: host
unreachable, authentication refused, host key unknown, a tool missing, a process killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NEEDS_BPF, processes_naming
from sshd import PORT, SSHD, OpenSshServer
from frerlab.netns import Namespaces
from frerlab.remote.hosts import Hosts, SshTarget
from frerlab.remote.preflight import clock_state, one_way_latency_allowed, preflight
from frerlab.remote.ssh import RemoteError, Session

pytestmark = [*NEEDS_BPF, pytest.mark.sshd, pytest.mark.skipif(not Path(SSHD).exists(),
                                            reason="OpenSSH server not installed (Debian: openssh-server)")]
SERVER_IP, CLIENT_IP = "198.18.3.2", "198.18.3.1"
CLI = [sys.executable, "-m", "frerlab.cli"]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """An sshd in namespace `fsshPID-server` listening on SERVER_IP:PORT; yields its directory
    and namespace; removes the server, the veth and the namespace afterwards."""
    with Namespaces(f"fssh{os.getpid()}") as net:
        net.add("server")
        with OpenSshServer(net.ns["server"], f"fssh{os.getpid() % 100000}", CLIENT_IP, SERVER_IP,
                           tmp_path_factory.mktemp("sshd")) as server:
            yield {"dir": server.tmp, "ns": net.ns["server"]}


def target(sshd, **changes) -> SshTarget:
    base = dict(host=SERVER_IP, port=PORT, user="root", key=sshd["dir"] / "client_key",
                known_hosts=sshd["dir"] / "known_hosts", interface="mgmt", connect_timeout_s=5)
    return SshTarget(**{**base, **changes})


def hosts(sshd, **changes) -> Hosts:
    return Hosts(talker=target(sshd, **changes), listener=target(sshd, **changes))


def in_namespace(sshd, pattern: str) -> list[str]:
    """Processes whose command line holds `pattern` in the server's namespace (only there)."""
    return sorted(line.split()[0] for line in processes_naming(pattern, namespace=sshd["ns"]))


@pytest.mark.timing
def test_commands_run_in_parallel_and_files_come_back(sshd, tmp_path):
    with Session(hosts(sshd)) as s:
        started = time.monotonic()
        done = s.run_all({"talker": ["sh", "-c", "sleep 1; echo t"], "listener": ["sh", "-c", "sleep 1; echo l"]})
        assert time.monotonic() - started < 1.9, "the two commands ran one after the other"
        assert (done["talker"].stdout, done["listener"].stdout) == ("t\n", "l\n")
        assert s.run("talker", ["ip", "-4", "-o", "addr", "show", "dev", "mgmt"]).stdout.split()[3] == f"{SERVER_IP}/30"
        s.run("listener", ["sh", "-c", "echo '{\"x\": 1}' > /tmp/frerlab-remote-test.json"])
        s.fetch("listener", "/tmp/frerlab-remote-test.json", tmp_path / "got.json")
        s.run("listener", ["rm", "/tmp/frerlab-remote-test.json"])
    assert json.loads((tmp_path / "got.json").read_text()) == {"x": 1}


def test_started_processes_are_stopped_when_the_session_ends_also_on_error(sshd):
    with pytest.raises(RuntimeError, match="boom"):
        with Session(hosts(sshd)) as s:
            process = s.start("talker", ["sleep", "301"])
            assert process.pid > 0 and in_namespace(sshd, "sleep 301")
            raise RuntimeError("boom")
    assert in_namespace(sshd, "sleep 301") == []


@pytest.mark.timing
def test_remote_exec_stops_its_remote_command_promptly_on_sigterm(sshd, tmp_path):
    """`python -m frerlab.remote.exec` (docs/remote.md): SIGTERM to it stops the command it runs
    on the host before it exits, within 2 s, and it exits 143 (128 + SIGTERM)."""
    t = {"host": SERVER_IP, "port": PORT, "key": str(sshd["dir"] / "client_key"),
         "known_hosts": str(sshd["dir"] / "known_hosts")}
    (tmp_path / "hosts.yaml").write_text(json.dumps({"talker": t, "listener": t}))
    local = subprocess.Popen([sys.executable, "-m", "frerlab.remote.exec", str(tmp_path / "hosts.yaml"), "talker",
                              "--", "sleep", "304"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not in_namespace(sshd, "sleep 304"):
            assert time.monotonic() < deadline and local.poll() is None, local.communicate()
            time.sleep(0.05)
        asked = time.monotonic()
        local.send_signal(signal.SIGTERM)
        code = local.wait(timeout=30)
        took = time.monotonic() - asked
    finally:
        local.kill()
        local.communicate()
    assert code == 128 + signal.SIGTERM and took < 2.0, f"exit {code} after {took:.2f} s"
    assert in_namespace(sshd, "sleep 304") == [], "the remote command outlived frerlab.remote.exec"


def test_a_process_killed_mid_run_is_reported_as_killed(sshd):
    with Session(hosts(sshd)) as s:
        process = s.start("listener", ["sleep", "302"])
        s.run("talker", ["kill", "-KILL", str(process.pid)])
        with pytest.raises(RemoteError, match="sleep 302 on listener was killed by signal 9"):
            process.wait(timeout_s=10)


def test_a_missing_tool_names_itself_and_the_host(sshd):
    with Session(hosts(sshd)) as s:
        with pytest.raises(RemoteError, match="frerlab-no-such-tool is not installed on talker"):
            s.run("talker", ["frerlab-no-such-tool", "--version"])
        assert s.run("talker", ["true"]).returncode == 0  # the session is still usable


@pytest.mark.parametrize("changes, message", [
    ({"port": PORT + 1}, f"talker: cannot reach root@{SERVER_IP}:{PORT + 1}"),
    ({"host": "198.18.3.6", "connect_timeout_s": 1}, "talker: cannot reach root@198.18.3.6"),
    ({"key": "OTHER"}, f"talker: authentication refused for root@{SERVER_IP}:{PORT} with key"),
    ({"known_hosts": "EMPTY"}, f"talker: the host key of root@{SERVER_IP}:{PORT} is not known"),
])
def test_faults_give_a_clear_error_naming_role_and_target(sshd, changes, message, tmp_path):
    if changes.get("key") == "OTHER":
        changes["key"] = sshd["dir"] / "other_key"
    if changes.get("known_hosts") == "EMPTY":
        (tmp_path / "empty").write_text("")
        changes["known_hosts"] = tmp_path / "empty"
    with pytest.raises(RemoteError) as err:
        with Session(hosts(sshd, **changes)):
            pass
    assert message in str(err.value)


def test_a_jump_host_reaches_the_target(sshd):
    via = target(sshd, jump=target(sshd, interface=None))
    with Session(Hosts(talker=via, listener=target(sshd))) as s:
        assert s.run("talker", ["hostname"]).returncode == 0


def test_preflight_records_tools_interface_governor_and_clock(sshd):
    with Session(hosts(sshd)) as s:
        report = preflight(s)
    talker = report["talker"]
    assert talker["tools"]["iperf3"].startswith("iperf 3") and talker["tools"]["python3"].startswith("Python 3")
    i = talker["interface"]
    assert (i["present"], i["up"], i["mtu"]) == (True, True, 1500)
    assert i["speed_mbps"] == 10000 and i["duplex"] == "full"  # what a veth reports
    assert set(i["offloads"]) >= {"tcp-segmentation-offload", "generic-receive-offload"}
    ok, why = one_way_latency_allowed(report)
    assert not ok and "clock synchronisation unknown" in why  # no chrony on these hosts


def test_the_clock_allows_one_way_latency_only_within_its_error_bound():
    # chronyc -c tracking fields: ref id, name, stratum, ref time, offset, last offset, RMS
    # offset, frequency, residual frequency, skew, root delay, root dispersion, interval, leap
    line = "C0A80001,192.168.0.1,3,1795532635.0,{offset},0.0,0.0,1.0,0.0,0.1,{delay},{dispersion},64.0,{leap}"
    good = clock_state(line.format(offset="0.000001", delay="0.000004", dispersion="0.000001", leap="Normal"))
    assert good["one_way_ok"] and good["error_bound_us"] == pytest.approx(4.0)
    far = clock_state(line.format(offset="0.00002", delay="0.000004", dispersion="0.000001", leap="Normal"))
    assert not far["one_way_ok"] and "above 5 µs" in far["why"]
    lost = clock_state(line.format(offset="0", delay="0", dispersion="0", leap="Not synchronised"))
    assert not lost["one_way_ok"] and lost["why"] == "chrony is not synchronised"


def test_hosts_check_command(sshd, tmp_path):
    t = {"host": SERVER_IP, "port": PORT, "key": str(sshd["dir"] / "client_key"),
         "known_hosts": str(sshd["dir"] / "known_hosts"), "interface": "mgmt"}
    (tmp_path / "hosts.yaml").write_text(json.dumps({"talker": t, "listener": t}))
    done = subprocess.run([*CLI, "hosts", "check", str(tmp_path / "hosts.yaml")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"talker root@{SERVER_IP}:{PORT}: iperf3 iperf 3" in done.stdout
    assert "interface mgmt: up, MTU 1500, 10000 Mb/s full duplex" in done.stdout
    assert "one-way latency: no, RTT/2 instead" in done.stdout
    (tmp_path / "bad.yaml").write_text(json.dumps({"talker": {**t, "port": 0}, "listener": t}))
    bad = subprocess.run([*CLI, "hosts", "check", str(tmp_path / "bad.yaml")], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "talker.port" in bad.stderr
    (tmp_path / "wrong.yaml").write_text(json.dumps({"talker": {**t, "port": PORT + 1}, "listener": t}))
    wrong = subprocess.run([*CLI, "hosts", "check", str(tmp_path / "wrong.yaml")], capture_output=True, text=True,
                           timeout=60)
    assert wrong.returncode == 4 and wrong.stderr.count("\n") == 1 and "cannot reach" in wrong.stderr


def test_push_runs_a_switch_script_line_by_line_and_stops_at_the_first_failure(sshd, tmp_path):
    t = {"host": SERVER_IP, "port": PORT, "key": str(sshd["dir"] / "client_key"),
         "known_hosts": str(sshd["dir"] / "known_hosts")}
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(json.dumps({"talker": t, "listener": t, "switch": t}))
    marker = f"/tmp/frerlab-push-{os.getpid()}"
    script = tmp_path / "sw1.sh"
    script.write_text(f"# FRER on the switch\necho configured > {marker}\n\ntest -s {marker}\nfalse\necho never >> {marker}\n")
    dry = subprocess.run([*CLI, "hosts", "push", str(hosts), str(script), "--dry-run"], capture_output=True,
                         text=True, timeout=60)
    assert dry.returncode == 0 and f"would run on switch root@{SERVER_IP}:{PORT}" in dry.stdout
    assert f"{script}:2: echo configured > {marker}" in dry.stdout and f"{script}:5: false" in dry.stdout
    assert not Path(marker).exists(), "a dry run runs nothing"
    try:
        done = subprocess.run([*CLI, "hosts", "push", str(hosts), str(script)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 4 and f"{script}:5: `false` failed on the switch with status 1" in done.stderr
        assert f"{script}:4: ok" in done.stdout
        assert Path(marker).read_text() == "configured\n", "the push stopped at the failing line"
    finally:
        Path(marker).unlink(missing_ok=True)
    (tmp_path / "noswitch.yaml").write_text(json.dumps({"talker": t, "listener": t}))
    refused = subprocess.run([*CLI, "hosts", "push", str(tmp_path / "noswitch.yaml"), str(script), "--dry-run"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "has no `switch` entry" in refused.stderr
