"""The hosts backend: a network namespace, an address and a shaped link per role, inside a
namespace of the run's own; bytes per step; nothing left behind.

The quick tests use small Python programs as roles (a listener stands in for a server); the
slow one trains for real. Every address used lives in namespaces the tests' runs made.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.errors import KitError
from reprokit.experiment import reproduce
from reprokit.options import RunPlan
from reprokit.run import netns
from reprokit.run.links import parse_link, parse_links
from reprokit.run.process_backend import ProcessBackend, SimulatedHosts, role_addresses
from reprokit.run.process_handle import still_running
from reprokit.run.roles import RoleSpec
from tests.support import REPO
from tests.support.cli import invoke
from tests.support.kit import STEPS, KitInputs, kit_options, kit_settings, kit_watchdog
from tests.support.processes import alive, log_has, our_processes, wait_for

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
needs_netns = pytest.mark.skipif(not netns.isolation_available()[0], reason="no network namespace can be made here")
PY = sys.executable
# A server: says which namespace and interfaces it has, and counts what it is sent.
LISTENER = ("import os, socket, subprocess, sys\n"
            "s = socket.create_server(('', int(sys.argv[1])))\n"
            "print('netns', os.readlink('/proc/self/ns/net'), [n for _, n in socket.if_nameindex()], flush=True)\n"
            "print(subprocess.run(['tc', 'qdisc', 'show', 'dev', 'eth0'], capture_output=True, text=True).stdout,"
            " flush=True)\n"
            "while True:\n"
            "    c, peer = s.accept()\n"
            "    n = 0\n"
            "    while (d := c.recv(1 << 16)):\n"
            "        n += len(d)\n"
            "    print('got', n, 'from', peer[0], flush=True)\n")
# The client: sends 3 MB to the ps between two step lines, so that bytes per step can be read.
STEP = "2026-12-03 10:00:00.000000: step {}, loss = 4.60 (900.0 examples/sec; 0.142 sec/batch)"
CLIENT = ("import socket, sys, time\n"
          f"print({STEP.format(0)!r}, flush=True)\n"
          f"print({STEP.format(10)!r}, flush=True); time.sleep(0.5)\n"
          "s = socket.create_connection((sys.argv[1], 2222)); s.sendall(b'x' * 3_000_000); s.close()\n"
          "time.sleep(0.5)\n"
          f"print({STEP.format(20)!r}, flush=True); time.sleep(0.5)\n")


def test_links_parse_into_rates_and_tc_commands():
    """1gbit is 10^9 bit/s, shaped by a token bucket big enough for a tick at full rate; none is unshaped."""
    link = parse_link("1gbit")
    assert (1e9, 1_250_000) == (link.bits_per_s, link.burst)
    assert ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "1000000000bit", "burst", "1250000",
            "latency", "100ms"] == link.tc_argv("eth0")
    assert [] == parse_link("none").tc_argv("eth0")
    assert 128 * 1024 == parse_link("100mbit").burst
    assert ["none", "10gbit", "250mbit"] == [l.name for l in parse_links("none, 10gbit,250mbit")]


@pytest.mark.parametrize("text", ["fast", "0mbit", "1gb", ""])
def test_a_link_that_is_not_a_bandwidth_is_refused(text: str):
    with pytest.raises(KitError, match="is not a bandwidth|names no link"):
        parse_links(text) if not text else parse_link(text)


def test_each_role_gets_an_address_and_a_client_that_serves_the_ps_is_the_ps_host():
    roles = [RoleSpec(n, [], "", {}, "x:1") for n in ("ps", "worker0", "worker1")] + [RoleSpec("client", [], "")]
    assert {"ps": "10.231.0.10", "worker0": "10.231.0.11", "worker1": "10.231.0.12", "client": "10.231.0.13"} \
        == role_addresses(roles)
    hosted = [r for r in roles if r.name != "ps"]
    assert "10.231.0.10" == role_addresses(hosted)["client"]


@needs_netns
def test_every_role_has_a_namespace_an_address_and_a_shaped_link_of_its_own(tmp_path: Path):
    """Two servers and a client, 100mbit links: the servers see only lo and eth0, each its own
    namespace, a tbf qdisc; the ps hears the client's 3 MB from the client's address; the link
    counters show them; everything is gone afterwards."""
    backend = ProcessBackend(SimulatedHosts.shaped("100mbit"), kit_watchdog(probe_s=60))
    cluster = backend.cluster(1)
    roles = [RoleSpec("ps", [PY, "-c", LISTENER, "2222"], "", {}, cluster.ps),
             RoleSpec("worker0", [PY, "-c", LISTENER, "2222"], "", {}, cluster.workers[0]),
             RoleSpec("client", [PY, "-c", CLIENT, cluster.ps_host], "", {"PYTHONUNBUFFERED": "1"})]
    outcome = backend.run(tmp_path, roles, "client", None)
    assert outcome.ok, outcome.message
    ps_log, worker_log = (tmp_path / "ps.log").read_text(), (tmp_path / "worker0.log").read_text()
    namespaces = {log.split("netns ", 1)[1].split()[0] for log in (ps_log, worker_log)}
    assert 2 == len(namespaces) and (Path("/proc/self/ns/net").readlink().name not in namespaces)
    assert "['lo', 'eth0']" in ps_log or "['eth0', 'lo']" in ps_log
    assert "qdisc tbf" in ps_log and "rate 100Mbit" in ps_log
    assert "got 3000000 from 10.231.0.12" in ps_log  # the client is the third host: .12
    hosts = outcome.network["hosts"]
    assert ("100mbit", "10.231.0.10") == (outcome.network["link"], hosts["ps"]["address"])
    assert hosts["client"]["sent_per_step"] >= 3_000_000 // 10  # 3 MB between step 10 and step 20
    assert hosts["ps"]["received"] >= 3_000_000 and hosts["client"]["sent"] >= 3_000_000
    assert [] == still_running({"cluster": outcome})


@needs_netns
def test_a_server_that_never_listens_fails_the_run_and_its_namespaces_go(tmp_path: Path):
    """The probe from the run's bridge times out; teardown removes the hosts all the same."""
    backend = ProcessBackend(SimulatedHosts.shaped("none"), kit_watchdog(probe_s=3))
    cluster = backend.cluster(1)
    silent = RoleSpec("ps", [PY, "-c", "import time; time.sleep(60)"], "", {}, cluster.ps)
    outcome = backend.run(tmp_path, [silent, RoleSpec("client", [PY, "-c", "pass"], "")], "client", None)
    assert not outcome.ok
    assert outcome.message.startswith(f"the ps role ({cluster.ps}) is not reachable after 3 s")
    assert [] == still_running({"cluster": outcome})


CALLER = ("import sys; from pathlib import Path\n"
          "from reprokit.run.process_backend import ProcessBackend, SimulatedHosts\n"
          "from reprokit.run.roles import RoleSpec\n"
          "from tests.support.kit import kit_watchdog\n"
          "backend = ProcessBackend(SimulatedHosts.shaped('1gbit'), kit_watchdog())\n"
          "roles = [RoleSpec.from_json(r) for r in __import__('json').loads(Path(sys.argv[1]).read_text())]\n"
          "backend.run(Path(sys.argv[2]), roles, 'client', None)\n")


@needs_netns
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_kit_stopped_by_sigterm_or_killed_leaves_no_host_behind(tmp_path: Path, sig: int):
    """The roles, the namespaces' holders and the supervisor go with the kit, even after kill -9:
    the whole topology lived in processes that die with their parent."""
    cluster = ProcessBackend(SimulatedHosts.shaped("none"), kit_watchdog()).cluster(1)
    roles = [RoleSpec("ps", [PY, "-c", LISTENER, "2222"], "", {}, cluster.ps),
             RoleSpec("client", [PY, "-c", "print('training', flush=True); import time; time.sleep(120)"], "",
                      {"PYTHONUNBUFFERED": "1"})]
    (tmp_path / "roles.json").write_text(json.dumps([r.to_json() for r in roles]))
    caller = subprocess.Popen([PY, "-c", CALLER, str(tmp_path / "roles.json"), str(tmp_path)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: log_has(tmp_path / "client.log", "training"), 120, "the client never started")
    ours = [p.pid for p in our_processes() if "sleep infinity" in p.cmdline or str(tmp_path) in p.cmdline]
    assert ours, "no process of the run was found"
    caller.send_signal(sig)
    caller.wait(timeout=60)
    wait_for(lambda: not any(alive(pid) for pid in ours), 30, f"processes {ours} outlived the kit")


# The article's way on three machines: servers and client started by hand, each on its own host,
# from one cluster file. Runs inside a network namespace of its own (the test's hosts live there).
BY_HAND = """
import json, os, signal, socket, subprocess, sys, time
from pathlib import Path
from reprokit.run.links import parse_link
from reprokit.run.topology import Topology, host_addresses
kit = Path(sys.argv[1])
addresses = host_addresses(["ps", "worker0", "worker1", "client"])
topology = Topology(addresses, parse_link("none"))
topology.build()
cluster = kit / "cluster.json"
cluster.write_text(json.dumps({"ps": [addresses["ps"] + ":2222"],
                               "worker": [addresses["worker0"] + ":2222", addresses["worker1"] + ":2222"]}))
invoke = [sys.executable, "-m", "invoke"]
servers = []
for role, task in (("ps", ["ps"]), ("worker0", ["worker", "--index", "0"]), ("worker1", ["worker", "--index", "1"])):
    log = open(kit / f"by-hand-{role}.out", "w")
    servers.append(subprocess.Popen(topology.enter(role) + invoke + task + ["--cluster", str(cluster)], cwd=kit,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
for address in addresses["ps"], addresses["worker0"], addresses["worker1"]:  # as a person waits for "serving"
    deadline = time.monotonic() + 300
    while True:
        try:
            socket.create_connection((address, 2222), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, f"{address}:2222 never listened"
            time.sleep(0.5)
client = subprocess.run(topology.enter("client") + invoke + ["client", "--cluster", str(cluster), "--steps", "21",
                        "--source", "synthetic"], cwd=kit, capture_output=True, text=True)
print(client.stdout)
print(client.stderr, file=sys.stderr)
for server in servers:  # Ctrl-C, as a person stops a server in its terminal
    os.killpg(server.pid, signal.SIGINT)
    server.wait(timeout=60)
topology.close()
sys.exit(client.returncode)
"""


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_ps_workers_and_client_started_by_hand_on_three_hosts_train_together(cli_kit: Path):
    """`invoke ps`, `invoke worker --index 0|1` and `invoke client`, each in its own host's
    namespace, one cluster file: the client's run passes the rules, as `compare-logs` says."""
    config = cli_kit / "invoke.yaml"
    config.write_text(config.read_text().replace("synthetic_records: 10000", "synthetic_records: 200"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(cli_kit)}
    done = subprocess.run([*netns.unshare_prefix(), PY, "-c", BY_HAND, str(cli_kit)], cwd=cli_kit, env=env,
                          capture_output=True, text=True, timeout=840)
    assert 0 == done.returncode, done.stdout[-3000:] + done.stderr[-3000:]
    assert "\nlogs:     PASS  (" in done.stdout  # the client's run: the three-part verdict's first line
    assert "client: session on grpc://10.231.0.10:2222" in done.stdout
    (run,) = [p for p in (cli_kit / "runs").iterdir() if (p / "run.json").is_file()]
    assert ["cluster"] == json.loads((run / "run.json").read_text())["modes"]
    judged = invoke(cli_kit, "compare-logs", "--run", run.name)
    assert (0, "PASS") == (judged.returncode, judged.stdout.splitlines()[-1]), judged.stdout
    assert "serving /job:worker/task:1 at 10.231.0.12:2222" in (cli_kit / "by-hand-worker1.out").read_text()


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_short_reproduction_on_simulated_hosts_passes_and_reports_addresses_links_and_bytes(
        tmp_path: Path, kit_inputs: KitInputs):
    """Standalone, then the cluster with a host per role on 1gbit links: PASS by the rules; the
    report shows each host's address, the link and the bytes per step."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    options = kit_options(STEPS, 2, run_id="hosts")
    backend = ProcessBackend(SimulatedHosts.shaped("1gbit"), settings.watchdog)
    result = reproduce(settings, RunPlan(options, backend), lambda line: None)
    assert result.passed, result.error
    network = result.results.modes["cluster"].outcome.network
    assert "1gbit" == network["link"]
    assert {"ps": "10.231.0.10", "worker0": "10.231.0.11", "worker1": "10.231.0.12", "client": "10.231.0.13"} == \
        {role: row["address"] for role, row in network["hosts"].items()}
    assert network["hosts"]["worker1"]["received_per_step"] > 1e6  # it pulls the variables every step
    report = (result.run_dir / "report.md").read_text()
    assert "## Hosts and links" in report and "| worker1 | 10.231.0.12 |" in report


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("program, roles", [("tf2-mirrored", {"worker0", "worker1"}),
                                            ("tf2-ps", {"ps", "worker0", "worker1", "client"})])
def test_each_tf2_program_trains_on_simulated_hosts_told_the_cluster_by_tf_config(
        tmp_path: Path, kit_inputs: KitInputs, program: str, roles: set[str]):
    """Only the cluster mode: each role a host of its own; every role that listens is on the LAN."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    options = kit_options(STEPS, 2, run_id=program, modes=("cluster",), program=program)
    backend = ProcessBackend(SimulatedHosts.shaped("1gbit"), settings.watchdog)
    result = reproduce(settings, RunPlan(options, backend), lambda line: None)
    assert result.passed, result.error
    assert roles == set(result.results.modes["cluster"].outcome.network["hosts"])
