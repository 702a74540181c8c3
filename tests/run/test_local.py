"""The local backend: the cluster's processes on this machine, in a private network namespace
when the OS allows one; faults (busy port, a role killed mid-run, Ctrl-C) stop every role.

The fast tests use small Python programs as roles; the slow ones run real TensorFlow servers
and the patched cluster trainer on generated data.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.errors import ClusterError, KitError, PortBusyError
from reprokit.options import Request
from reprokit.run import netns
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.run.process_handle import still_running
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome
from reprokit.run.supervisor import Plan, run_plan
from reprokit.settings import from_mapping
from tests.support import REPO
from tests.support.kit import (
    FILLING_QUEUE,
    KitInputs,
    kit_watchdog,
    real_roles,
    repo_config,
)
from tests.support.processes import (
    KillWhen,
    alive,
    free_port,
    log_has,
    pids_running,
    processes_mentioning,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

PY = sys.executable
ISOLATION, WHY_NOT = netns.isolation_available()
needs_netns = pytest.mark.skipif(not ISOLATION, reason=f"no private network namespace here: {WHY_NOT}")
STEP_LINE = "2026-12-02 15:37:16.462662: step {}, loss = 4.67 ({}.5 examples/sec; 0.170 sec/batch)"
# The run_plan caller as a program of its own, so that it can be signalled like `invoke reproduce`.
CALLER = ("import sys; from pathlib import Path\n"
          "from reprokit.run.supervisor import Plan, run_plan\n"
          "run_plan(Plan.from_json(Path(sys.argv[1]).read_text()))")
LISTENER = ("import os, socket, sys, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
            "print('netns', os.readlink('/proc/self/ns/net'), flush=True); time.sleep(120)")
TRAINING = "print('training', flush=True); import time; time.sleep(120)"
# Servers of plain Python, not TensorFlow: reachable in well under 20 s even on a busy machine.
QUICK = kit_watchdog(probe_s=20)


def listener(name: str, port: int) -> RoleSpec:
    return RoleSpec(name, [PY, "-c", LISTENER, str(port)], "", {}, f"127.0.0.1:{port}")


def program(name: str, code: str) -> RoleSpec:
    return RoleSpec(name, [PY, "-c", code], "", {"PYTHONUNBUFFERED": "1"})


def _caller(tmp_path: Path, roles: list[RoleSpec]) -> subprocess.Popen:
    request = tmp_path / "request.json"
    request.write_text(Plan(str(tmp_path), roles, "client", QUICK).to_json())
    return subprocess.Popen([PY, "-c", CALLER, str(request)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _outcome(run_dir: Path, main: str = "client") -> Outcome:
    return Outcome.from_json(json.loads((run_dir / f"{main}.outcome.json").read_text()))


def test_isolation_none_is_the_host_network_and_says_why():
    """--isolation none: no namespace, and the reason is that it was asked for."""
    assert Loopback(False, "--isolation none was asked for") == Loopback.choose("none")


@pytest.mark.parametrize("mode", ["auto", "netns"])
def test_auto_and_netns_use_a_namespace_and_never_fall_back_to_the_host_network(mode: str, monkeypatch):
    """Where the machine allows a namespace the cluster gets one; where it does not, the run is
    refused with the ways out, --isolation none among them, instead of exposing the servers."""
    assert Loopback(True) == Loopback.choose(mode) if ISOLATION else True
    monkeypatch.setattr(netns, "isolation_available", lambda: (False, "`unshare --net` failed: Operation not permitted"))
    with pytest.raises(ClusterError) as caught:
        Loopback.choose(mode)
    assert "no private network namespace for the cluster: `unshare --net` failed" in caught.value.message
    assert "--isolation none" in caught.value.hint and "apparmor_restrict_unprivileged_userns" in caught.value.hint


def test_an_unknown_isolation_is_refused_with_the_request_naming_the_known_ones():
    settings = from_mapping(repo_config(), root=REPO)
    with pytest.raises(KitError) as caught:
        Request(isolation="container").plan(settings)
    assert ("unknown --isolation 'container'", "choose one of auto, netns, none") == (caught.value.message,
                                                                                    caught.value.hint)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_a_busy_port_is_refused_before_anything_starts(tmp_path: Path, host: str):
    """With the host network, a listener on the ps port is a PortBusyError naming port and holder;
    no plan, log or process is made."""
    with socket.socket() as holder:
        holder.bind((host, 0))
        holder.listen()
        port = holder.getsockname()[1]
        backend = ProcessBackend(Loopback.choose("none", first_port=port), kit_watchdog())
        roles = [listener("ps", port), program("client", "pass")]
        with pytest.raises(PortBusyError) as caught:
            backend.run(tmp_path, roles, "client", None)
    assert caught.value.message.startswith(f"port {port} for the ps role (127.0.0.1:{port}) is already in use "
                                           f"by pid {os.getpid()} (")
    assert [] == list(tmp_path.iterdir())


def test_a_server_nobody_can_reach_fails_the_run_naming_role_address_and_log(tmp_path: Path):
    """A ps that never listens: after probe_timeout_s the outcome says which role, where, and which log."""
    address = f"127.0.0.1:{free_port()}"
    silent = RoleSpec("ps", [PY, "-c", "import time; time.sleep(60)"], "", {}, address)
    backend = ProcessBackend(Loopback.choose("none"), kit_watchdog(probe_s=3))
    outcome = backend.run(tmp_path, [silent, program("client", "pass")], "client", None)
    assert not outcome.ok
    assert outcome.message.startswith(f"the ps role ({address}) is not reachable after 3 s (")
    assert outcome.message.endswith(f"\n  -> is the ps server running? see {tmp_path / 'ps.log'}")
    assert ["ps"] == list(outcome.pids)


def test_run_plan_reports_the_main_roles_step_lines_as_progress(tmp_path: Path):
    """Each step line of the main role's log reaches the progress callback: role, step, rate."""
    lines = "; ".join(f"print({STEP_LINE.format(s, s + 100)!r})" for s in (0, 10, 20))
    seen: list[tuple[str, int, float]] = []
    outcome = run_plan(Plan(str(tmp_path), [program("client", lines)], "client", QUICK),
                       progress=lambda role, step, rate: seen.append((role, step, rate)))
    assert outcome.ok
    assert [("client", 0, 100.5), ("client", 10, 110.5), ("client", 20, 120.5)] == seen
    assert outcome == _outcome(tmp_path)


def test_a_progress_callback_that_fails_still_stops_every_role(tmp_path: Path):
    """Following the log can fail (a closed terminal: BrokenPipeError); the run is stopped, not left."""
    def progress(role: str, step: int, rate: float) -> None:
        raise BrokenPipeError("stdout is gone")

    roles = [listener("ps", free_port()), program("client", f"print({STEP_LINE.format(0, 1)!r}); {TRAINING}")]
    with pytest.raises(BrokenPipeError):
        run_plan(Plan(str(tmp_path), roles, "client", QUICK), progress=progress)
    assert "interrupted: every role was stopped" == _outcome(tmp_path).message
    assert [] == still_running({"cluster": _outcome(tmp_path)})


def test_a_supervisor_that_sends_no_outcome_is_an_error_pointing_at_its_log(tmp_path: Path):
    """A plan whose main role is not among its roles crashes the supervisor: the error says where to look."""
    with pytest.raises(ClusterError) as caught:
        run_plan(Plan(str(tmp_path), [program("client", "pass")], "trainer", QUICK))
    assert caught.value.message.startswith("the supervisor of trainer exited with code 1 and sent no outcome")
    assert f"see {tmp_path / 'trainer.supervisor.log'}" == caught.value.hint
    assert "Traceback" in (tmp_path / "trainer.supervisor.log").read_text()


@needs_netns
def test_isolated_servers_listen_in_a_network_namespace_of_their_own(tmp_path: Path):
    """In the namespace the client reaches the ps at 127.0.0.1; the ps's namespace is not ours."""
    reach = "import socket; socket.create_connection(('127.0.0.1', 2222), timeout=5).close(); print('reached')"
    plan = Plan(str(tmp_path), [listener("ps", 2222), program("client", reach)], "client", QUICK, isolated=True)
    outcome = run_plan(plan)
    assert outcome.ok, outcome.message
    assert log_has(tmp_path / "client.log", "reached")
    theirs = (tmp_path / "ps.log").read_text().split("netns ", 1)[1].split()[0]
    assert os.readlink("/proc/self/ns/net") != theirs
    assert ["lo"] == outcome.interfaces  # the evidence the report shows: nothing but loopback


def test_sigterm_to_the_caller_of_run_plan_stops_every_role(tmp_path: Path):
    """run_plan turns SIGTERM into KeyboardInterrupt, stops its supervisor, which stops the roles."""
    caller = _caller(tmp_path, [listener("ps", free_port()), program("client", TRAINING)])
    wait_for(lambda: log_has(tmp_path / "client.log", "training"), 60, "the client never started")
    caller.send_signal(signal.SIGTERM)
    output, _ = caller.communicate(timeout=60)
    assert 0 != caller.returncode
    assert "KeyboardInterrupt" in output
    outcome = _outcome(tmp_path)
    assert "interrupted: every role was stopped" == outcome.message
    assert [] == still_running({"cluster": outcome})


def test_sigkill_to_the_caller_of_run_plan_leaves_no_role_behind(tmp_path: Path):
    """With no chance to clean up, the supervisor and its roles die with their parent."""
    roles = [listener("ps", free_port()), program("client", TRAINING)]
    caller = _caller(tmp_path, roles)
    wait_for(lambda: log_has(tmp_path / "client.log", "training"), 60, "the client never started")
    pids = pids_running(roles[0].argv) + pids_running(roles[1].argv)
    supervisor = [p.pid for p in processes_mentioning(str(tmp_path)) if p.argv[1:3] == ["-m", "reprokit.run.supervisor"]]
    assert (2, 1) == (len(pids), len(supervisor))
    caller.kill()
    caller.communicate()
    wait_for(lambda: not any(alive(p) for p in pids + supervisor), 10,
             f"supervisor {supervisor} or roles {pids} outlived the killed caller")


def _assert_stopped_with_logs_kept(run_dir: Path, outcome: Outcome) -> None:
    assert [] == still_running({"cluster": outcome})
    assert {"ps", "worker0", "worker1", "client"} == set(outcome.pids)
    for role in outcome.pids:
        assert "reprokit: $ " in (run_dir / f"{role}.log").read_text()
    assert log_has(run_dir / "client.log", FILLING_QUEUE)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("victim", ["worker1", "ps"])
def test_a_server_killed_mid_run_fails_the_run_naming_it(tmp_path: Path, kit_inputs: KitInputs,
                                                       victim: str):
    """Real ps, 2 workers and client: SIGKILL one server once the client fills its queue; the run
    fails naming that role, every role is stopped, the logs stay."""
    backend = ProcessBackend(Loopback.choose("auto", first_port=free_port()), kit_watchdog())
    roles = real_roles(backend, kit_inputs, tmp_path)
    killer = KillWhen(tmp_path / "client.log", FILLING_QUEUE, next(r.argv for r in roles if r.name == victim))
    killer.start()
    outcome = backend.run(tmp_path, roles, "client", None)
    killer.join()
    assert not outcome.ok
    assert outcome.message.startswith(f"the {victim} role exited with code -9 (killed by SIGKILL) while the client was running")
    assert f"see {tmp_path / (victim + '.log')}" in outcome.message
    assert killer.pid == outcome.pids[victim]
    assert -signal.SIGKILL == outcome.exit_codes[victim]
    _assert_stopped_with_logs_kept(tmp_path, outcome)
    if backend.network.isolated:
        assert os.readlink("/proc/self/ns/net") != killer.netns
