"""The runner, with processes as its roles (the local backend's supervisor): start roles in
order, probe servers, watch, always tear down, write the outcome.

These run small Python programs as roles (a listener standing in for a TensorFlow server), so
they take seconds; test_local.py runs the real servers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from reprokit.commands import shown
from reprokit.names import log_path
from reprokit.run import runner as runnerlib
from reprokit.run.process_handle import ProcessHandle, role_argv, still_running
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome
from reprokit.run.supervisor import Plan, supervise
from tests.support import REPO
from tests.support.kit import kit_watchdog
from tests.support.processes import alive, free_port, log_has, pids_running, wait_for

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
PY = sys.executable
CPU = str(min(os.sched_getaffinity(0)))
# Listens like a server would, says so, then waits to be stopped.
LISTENER = ("import socket, sys, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
            "print('listening on', sys.argv[1], flush=True); time.sleep(120)")
SILENT = "import time; time.sleep(120)"


def listener(name: str, port: int | None = None) -> RoleSpec:
    port = port or free_port()
    return RoleSpec(name, [PY, "-c", LISTENER, str(port)], CPU, {}, f"127.0.0.1:{port}")


def program(name: str, code: str, cpus: str = CPU) -> RoleSpec:
    return RoleSpec(name, [PY, "-c", code], cpus, {"PYTHONUNBUFFERED": "1"})


# Servers of plain Python, not TensorFlow: reachable in well under 20 s even on a busy machine.
QUICK = kit_watchdog(probe_s=20)


def plan(tmp_path: Path, roles: list[RoleSpec], main: str = "client", watchdog: runnerlib.Watchdog = QUICK) -> Plan:
    return Plan(str(tmp_path), roles, main, watchdog)


def run(tmp_path: Path, roles: list[RoleSpec], main: str = "client", watchdog: runnerlib.Watchdog = QUICK,
        stop: threading.Event | None = None) -> Outcome:
    return supervise(plan(tmp_path, roles, main, watchdog), stop)


def test_a_plan_survives_its_json_file(tmp_path: Path):
    """Plan.to_json then from_json gives an equal plan: the supervisor reads it from a file."""
    original = Plan(str(tmp_path), [listener("ps", 2222), program("client", "pass")], "client",
                    kit_watchdog(probe_s=7.5), True)
    assert original == Plan.from_json(original.to_json())


def test_a_plan_whose_main_role_succeeds_is_ok_and_stops_every_role(tmp_path: Path):
    """Servers start and become reachable, then the main role; it exits 0; the servers are stopped."""
    roles = [listener("ps"), listener("worker0"), program("client", "print('trained')")]
    outcome = run(tmp_path, roles)
    assert (True, "") == (outcome.ok, outcome.message)
    assert {"ps": -signal.SIGTERM, "worker0": -signal.SIGTERM, "client": 0} == outcome.exit_codes
    assert ["ps", "worker0", "client"] == list(outcome.pids)
    assert [] == still_running({"cluster": outcome})


def test_the_timings_follow_the_stages_of_a_run(tmp_path: Path):
    """Started, reachable, main started and exited, teardown: in that order, seconds from the start."""
    roles = [listener("ps"), program("client", "pass")]
    before = time.time()
    timings = dict(run(tmp_path, roles).timings)
    started = timings.pop("epoch_started")  # wall clock, to set the others against the logs' times
    assert before - 1 <= started <= time.time()
    order = ["ps_started", "ps_reachable", "servers_reachable", "client_started", "main_exited",
             "teardown_started", "teardown_done"]
    assert order == list(timings)
    assert sorted(timings.values()) == [timings[k] for k in order]


def test_every_role_logs_to_its_own_file_each_line_timestamped(tmp_path: Path):
    """<role>.log opens with the command as run (dying with its parent, pinned by taskset, quoted
    for the shell), then the role's output."""
    role = program("client", "print('one'); print('two')")
    run(tmp_path, [role])
    lines = log_path(tmp_path, "client").read_text().splitlines()
    stamp = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6} \| "
    assert 3 == len(lines)
    command = f"$ setpriv --pdeathsig KILL -- taskset -c {CPU} {PY} -c 'print('\"'\"'one'\"'\"'); print('\"'\"'two'\"'\"')'"
    assert command == shown(role_argv(role))
    assert re.fullmatch(stamp + re.escape(f"reprokit: {command}"), lines[0])
    assert re.fullmatch(stamp + "one", lines[1])
    assert re.fullmatch(stamp + "two", lines[2])


def test_a_role_without_cpus_is_not_pinned(tmp_path: Path):
    """cpus '' runs the program itself, no taskset."""
    run(tmp_path, [program("client", "pass", cpus="")])
    first = log_path(tmp_path, "client").read_text().splitlines()[0]
    assert first.endswith(f"reprokit: $ setpriv --pdeathsig KILL -- {PY} -c pass")


def test_a_failing_main_role_is_reported_with_its_code_and_last_lines(tmp_path: Path):
    """Exit code 3: not ok; the message names the role, the code, its log and its last output."""
    roles = [listener("ps"), program("client", "print('loss = nan'); raise SystemExit(3)")]
    outcome = run(tmp_path, roles)
    assert not outcome.ok
    assert outcome.message.startswith("the client role exited with code 3")
    assert f"see {tmp_path / 'client.log'}; its last lines:" in outcome.message
    assert "loss = nan" in outcome.message
    assert -signal.SIGTERM == outcome.exit_codes["ps"]


def test_a_server_that_dies_before_it_listens_is_reported_and_the_main_role_never_starts(tmp_path: Path):
    """The worker exits 2 during start-up: named, with its code; the client is not started."""
    dead = RoleSpec("worker0", [PY, "-c", "print('bad flag'); raise SystemExit(2)"], CPU, {},
                    f"127.0.0.1:{free_port()}")
    outcome = run(tmp_path, [listener("ps"), dead, program("client", "pass")])
    assert not outcome.ok
    assert outcome.message.startswith(f"the worker0 role exited with code 2 before {dead.address} became reachable")
    assert "bad flag" in outcome.message
    assert "client" not in outcome.pids
    assert not log_path(tmp_path, "client").exists()


def test_a_server_that_never_listens_is_a_cluster_error_naming_role_address_and_log(tmp_path: Path):
    """Nobody listens at its address: after probe_timeout_s, what, where, and which log to read."""
    silent = RoleSpec("ps", [PY, "-c", SILENT], CPU, {}, f"127.0.0.1:{free_port()}")
    started = time.monotonic()
    outcome = run(tmp_path, [silent, program("client", "pass")], watchdog=kit_watchdog(probe_s=3))
    assert 3 <= time.monotonic() - started < 30  # an upper bound only: the machine may be busy
    first, hint = outcome.message.split("\n  -> ", 1)
    assert first.startswith(f"the ps role ({silent.address}) is not reachable after 3 s (")
    assert "Connection refused" in first
    assert hint.startswith(f"is the ps server running? see {tmp_path / 'ps.log'}")
    assert {"ps": -signal.SIGTERM} == outcome.exit_codes


def test_a_run_with_an_unreachable_server_fails_without_starting_the_main_role(tmp_path: Path):
    """The same error becomes the outcome's message; the silent server is stopped."""
    silent = RoleSpec("ps", [PY, "-c", SILENT], CPU, {}, f"127.0.0.1:{free_port()}")
    outcome = run(tmp_path, [silent, program("client", "pass")], watchdog=kit_watchdog(probe_s=3))
    assert not outcome.ok
    assert f"the ps role ({silent.address}) is not reachable after 3 s" in outcome.message
    assert str(tmp_path / "ps.log") in outcome.message
    assert ["ps"] == list(outcome.pids)
    assert [] == still_running({"cluster": outcome})


def test_a_role_that_dies_while_the_main_role_runs_fails_the_run_at_once(tmp_path: Path):
    """worker0 exits 1 after a second: the run fails naming worker0, and the client is stopped."""
    port = free_port()
    flaky = RoleSpec("worker0", [PY, "-c", LISTENER.replace("time.sleep(120)", "time.sleep(1); raise SystemExit(1)"),
                                 str(port)], CPU, {}, f"127.0.0.1:{port}")
    started = time.monotonic()
    outcome = run(tmp_path, [listener("ps"), flaky, program("client", SILENT)])
    assert time.monotonic() - started < 30  # long before the client would end by itself (120 s)
    assert not outcome.ok
    assert outcome.message.startswith("the worker0 role exited with code 1 while the client was running")
    assert -signal.SIGTERM == outcome.exit_codes["client"]


def test_a_role_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path, monkeypatch):
    """Teardown sends SIGTERM, waits TERM_GRACE_S, then SIGKILL: nothing outlives the run."""
    monkeypatch.setattr(runnerlib, "TERM_GRACE_S", 1.0)
    stubborn = program("helper", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ignoring SIGTERM', flush=True); time.sleep(120)")
    main = program("client", "import time; time.sleep(1.5)")
    outcome = run(tmp_path, [stubborn, main])
    assert outcome.ok
    assert log_has(tmp_path / "helper.log", "ignoring SIGTERM")
    assert -signal.SIGKILL == outcome.exit_codes["helper"]
    assert 0.9 <= outcome.timings["teardown_done"] - outcome.timings["teardown_started"] < 10


def test_a_stop_request_interrupts_the_run_and_stops_every_role(tmp_path: Path):
    """SIGTERM/SIGINT set the stop event: the outcome says interrupted, every role is stopped."""
    stop = threading.Event()

    def stop_once_the_client_runs() -> None:
        wait_for(lambda: log_path(tmp_path, "client").exists(), 60, "the client never started")
        stop.set()

    threading.Thread(target=stop_once_the_client_runs, daemon=True).start()
    outcome = run(tmp_path, [listener("ps"), program("client", SILENT)], stop=stop)
    assert (False, "interrupted: every role was stopped") == (outcome.ok, outcome.message)
    assert {"ps": -signal.SIGTERM, "client": -signal.SIGTERM} == outcome.exit_codes


def test_leftovers_fail_an_outcome_and_are_named_after_its_own_message():
    """Each teardown's leftovers add up; a run that passed fails once anything is left."""
    outcome = Outcome(True, "worker0 died", left=["container a (busy)"])
    outcome.add_leftovers(["network n (in use)"])
    assert (False, "worker0 died\ncould not remove: network n (in use)", ["container a (busy)", "network n (in use)"]) \
        == (outcome.ok, outcome.message, outcome.left)


def test_no_leftovers_leave_an_outcome_as_it_was():
    outcome = Outcome(True, "")
    outcome.add_leftovers([])
    assert Outcome(True, "") == outcome


def test_still_running_lists_only_live_pids(tmp_path: Path):
    """A live process's pid is listed, a finished one's is not."""
    live = subprocess.Popen([PY, "-c", SILENT])
    done = subprocess.Popen([PY, "-c", "pass"])
    done.wait()
    try:
        outcomes = {"a": Outcome(True, "", pids={"x": live.pid}), "b": Outcome(True, "", pids={"y": done.pid})}
        assert [live.pid] == still_running(outcomes)
    finally:
        live.kill()
        live.wait()


def _supervisor_process(tmp_path: Path, the_plan: Plan) -> subprocess.Popen:
    plan_path = tmp_path / "client.plan.json"
    plan_path.write_text(the_plan.to_json())
    return subprocess.Popen([PY, "-m", "reprokit.run.supervisor", str(plan_path)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_the_supervisor_program_writes_the_outcome_as_json(tmp_path: Path):
    """`python -m reprokit.run.supervisor PLAN` writes <main>.outcome.json and exits 0 when ok, 1 when not."""
    good = _supervisor_process(tmp_path, plan(tmp_path, [listener("ps"), program("client", "pass")]))
    assert 0 == good.wait(timeout=60)
    outcome = Outcome.from_json(json.loads((tmp_path / "client.outcome.json").read_text()))
    assert outcome.ok
    assert {"ps", "client"} == set(outcome.pids)
    bad = _supervisor_process(tmp_path, plan(tmp_path, [program("client", "raise SystemExit(4)")]))
    assert 1 == bad.wait(timeout=60)
    outcome = Outcome.from_json(json.loads((tmp_path / "client.outcome.json").read_text()))
    assert not outcome.ok and "code 4" in outcome.message
    assert [] == list(tmp_path.glob(".client.outcome.json.*"))  # written whole, no temporary left


def test_sigterm_to_the_supervisor_program_stops_every_role_and_still_writes_the_outcome(tmp_path: Path):
    """Its signal handler stops the run in order: the outcome says interrupted."""
    server, main = listener("ps"), program("client", "print('training', flush=True); import time; time.sleep(120)")
    proc = _supervisor_process(tmp_path, plan(tmp_path, [server, main]))
    wait_for(lambda: log_has(tmp_path / "client.log", "training"), 60, "the client never started")
    proc.send_signal(signal.SIGTERM)
    assert 1 == proc.wait(timeout=30)
    outcome = json.loads((tmp_path / "client.outcome.json").read_text())
    assert "interrupted: every role was stopped" == outcome["message"]
    assert not any(alive(pid) for pid in outcome["pids"].values())


def test_roles_die_with_a_supervisor_that_is_killed(tmp_path: Path):
    """SIGKILL leaves the supervisor no time to tear down: PR_SET_PDEATHSIG kills its roles."""
    server, main = listener("ps"), program("client", "print('training', flush=True); import time; time.sleep(120)")
    proc = _supervisor_process(tmp_path, plan(tmp_path, [server, main]))
    wait_for(lambda: log_has(tmp_path / "client.log", "training"), 60, "the client never started")
    pids = pids_running(server.argv) + pids_running(main.argv)
    assert 2 == len(pids)
    proc.kill()
    proc.wait()
    wait_for(lambda: not any(alive(p) for p in pids), 5, f"roles {pids} outlived their supervisor")
    assert not (tmp_path / "client.outcome.json").exists()


def test_an_outcome_round_trips_through_json():
    """What the supervisor writes, the launcher reads back as an equal Outcome."""
    outcome = Outcome(False, "the ps role exited with code -9", {"ps": -9}, {"ps": 42}, {"ps_started": 0.1})
    assert outcome == Outcome.from_json(json.loads(json.dumps(asdict(outcome))))


# --- the watchdog and the logs ------------------------------------------------------------

STEPS_THEN_SILENCE = ("import time\n"
                      "for step in range(0, 40, 10):\n"
                      "    print(f'2026-12-03 10:00:00.000000: step {step}, loss = 4.60 (900.0 examples/sec; "
                      "0.142 sec/batch)', flush=True)\n"
                      "    time.sleep(0.3)\n"
                      "time.sleep(120)")


def test_a_run_whose_step_lines_stop_is_stopped_by_the_watchdog_with_the_evidence(tmp_path: Path):
    """Four step lines 0.3 s apart, then silence: the watchdog (5 x the median gap, at least 2 s)
    stops the run long before the client would end, names the last step and stops every role."""
    watchdog = kit_watchdog(probe_s=20, first_step_s=60, factor=5, floor_s=2)
    started = time.monotonic()
    outcome = supervise(Plan(str(tmp_path), [listener("ps"), program("client", STEPS_THEN_SILENCE)], "client",
                             watchdog))
    assert time.monotonic() - started < 60
    assert not outcome.ok
    assert outcome.message.startswith("the run stalled: the client wrote no step line for ")
    assert "after step 30" in outcome.message
    assert "the watchdog allows 5 times that, at least 2 s" in outcome.message
    assert f"see {tmp_path / 'client.log'}" in outcome.message
    assert {"ps": -signal.SIGTERM, "client": -signal.SIGTERM} == outcome.exit_codes
    assert "stalled" in outcome.timings


def test_a_peer_that_ends_by_itself_with_0_is_not_a_death_but_with_1_it_is(tmp_path: Path):
    """All-reduce workers are trainers: worker1 may finish before worker0, the main role, does."""
    def peer(code: int) -> RoleSpec:
        return RoleSpec("worker1", [PY, "-c", f"raise SystemExit({code})"], CPU, {}, ends_itself=True)
    main = program("worker0", "import time; time.sleep(3)")
    (tmp_path / "ok").mkdir(), (tmp_path / "bad").mkdir()
    assert run(tmp_path / "ok", [peer(0), main], "worker0").ok
    failed = run(tmp_path / "bad", [peer(1), main], "worker0")
    assert failed.message.startswith("the worker1 role exited with code 1 while the worker0 was running")


def test_a_stall_of_a_main_role_with_a_known_cause_names_it(tmp_path: Path):
    """The all-reduce workers' hint: a collective that never completes stalls every worker."""
    watchdog = kit_watchdog(probe_s=20, first_step_s=2, factor=5, floor_s=1)
    silent = RoleSpec("worker0", [PY, "-c", SILENT], CPU, {}, stall_hint="a collective that never completes")
    outcome = supervise(Plan(str(tmp_path), [silent], "worker0", watchdog))
    assert "wrote no step line for 2 s since it started" in outcome.message
    assert "a collective that never completes" in outcome.message


def test_a_main_role_that_never_writes_a_step_line_is_stopped_at_the_first_step_ceiling(tmp_path: Path):
    """No step line at all within first_step_s: stalled 'since it started'."""
    watchdog = kit_watchdog(probe_s=20, first_step_s=2, factor=5, floor_s=1)
    outcome = supervise(Plan(str(tmp_path), [program("client", SILENT)], "client", watchdog))
    assert not outcome.ok
    assert "wrote no step line for 2 s since it started" in outcome.message
    assert "the first two step lines may take up to 2 s" in outcome.message


def test_a_progress_line_reaches_the_callback_as_the_main_role_writes_it(tmp_path: Path):
    """The runner follows the main role's log: each step line becomes (role, step, rate)."""
    seen: list[tuple[str, int, float]] = []
    handles = [ProcessHandle(program("client", STEPS_THEN_SILENCE.replace("time.sleep(120)", "")), tmp_path)]
    runnerlib.Runner(tmp_path, handles, "client", watchdog=QUICK, progress=lambda *a: seen.append(a)).run()
    assert [("client", s, 900.0) for s in (0, 10, 20, 30)] == seen


def test_a_log_that_cannot_be_written_fails_the_run_instead_of_blocking_it(tmp_path: Path, small_disk):
    """The run folder on a 64 KiB disk that the client's output fills: the run fails at once,
    naming the role, the log and the reason; every role is stopped."""
    disk = small_disk(64)
    chatty = program("client", "import time\nwhile True:\n    print('x' * 1000, flush=True)")
    started = time.monotonic()
    outcome = supervise(Plan(str(disk), [listener("ps"), chatty], "client", QUICK))
    assert time.monotonic() - started < 60
    assert not outcome.ok
    assert outcome.message.startswith("the log of the client role cannot be written: ")
    assert "No space left on device" in outcome.message
    assert [] == still_running({"cluster": outcome})
