"""Faults injected into a run and the restart policy that answers them (reprokit/run/faults.py).

The runner's part runs small Python programs as roles (a listener standing in for a server, a
client that writes step lines), so it takes seconds; the last test runs a real tf2-ps cluster
through a whole reproduction and kills a worker in it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from reprokit.errors import KitError
from reprokit.experiment import Reproduction, reproduce
from reprokit.judge.logs import resumed_log, step_fields
from reprokit.names import log_path
from reprokit.options import Request, RunPlan, fault_plan
from reprokit.run.faults import (
    Fault,
    FaultPlan,
    exit_status,
    parse_fault,
    retryable_codes,
)
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.run.roles import RoleSpec
from reprokit.run.supervisor import Plan, supervise
from reprokit.settings import from_mapping
from tests.support import REPO
from tests.support.kit import (
    KitInputs,
    kit_options,
    kit_settings,
    kit_watchdog,
    repo_config,
)
from tests.support.processes import free_port

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
PY = sys.executable
CPU = str(min(os.sched_getaffinity(0)))
ROLES = ["standalone", "ps", "worker0", "worker1", "client"]
SETTINGS = from_mapping(repo_config(), root=REPO)
# Listens, says so, and waits; with a delay, kills itself with SIGKILL that long after it listens.
LISTENER = ("import os, signal, socket, sys, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
            "print('listening on', sys.argv[1], flush=True)\n"
            "if float(sys.argv[2]): time.sleep(float(sys.argv[2])); os.kill(os.getpid(), signal.SIGKILL)\n"
            "time.sleep(120)")
# A client that logs step 0, 10, ..., 90, 0.4 s apart, and ends with 0; after step 40 it says,
# as a coordinator would, that it put a function back.
MARKER = "put back, to run again"
CLIENT = ("import time\n"
          "for step in range(0, 100, 10):\n"
          "    print(f'2026-12-06 10:00:00.000000: step {step}, loss = 4.60 (900.0 examples/sec; "
          "0.142 sec/batch)', flush=True)\n"
          "    print('put back, ' + 'to run again' if step == 40 else '', flush=True)\n"  # not in its argv
          "    time.sleep(0.4)\n")


def server(name: str, dies_after_s: float = 0, code: str = LISTENER) -> RoleSpec:
    port = free_port()
    return RoleSpec(name, [PY, "-c", code, str(port), str(dies_after_s)], CPU, {}, f"127.0.0.1:{port}")


def client() -> RoleSpec:
    return RoleSpec("client", [PY, "-c", CLIENT], CPU, {"PYTHONUNBUFFERED": "1"})


# An all-reduce cluster in small, as PreemptionCheckpointHandler runs one: worker 1, sent SIGTERM,
# leaves a notice and exits with 143; worker 0, the main role, sees the notice before its next step,
# saves the count of steps it ran and exits with 143 too; started again, it resumes from that count.
# It logs every 10th of 100 steps, and saves there too (a periodic checkpoint), each step
# ``step_s`` long.
RESUMING_MAIN = ("import os, sys, time\n"
                 "saved, notice = sys.argv[1] + '/saved', sys.argv[1] + '/notice'\n"
                 "start = int(open(saved).read()) if os.path.exists(saved) else 0\n"
                 "for step in range(start, 100):\n"
                 "    if os.path.exists(notice):\n"
                 "        open(saved, 'w').write(str(step)); os.remove(notice); sys.exit(143)\n"
                 "    if step % 10 == 0:\n"
                 "        open(saved, 'w').write(str(step))\n"
                 "        print(f'2026-12-07 05:00:00.000000: step {step}, loss = 4.60 (900.0 examples/sec; "
                 "0.142 sec/batch)', flush=True)\n"
                 "    time.sleep(float(sys.argv[2]))\n")
NOTICING_WORKER = ("import signal, sys, time\n"
                   "def notice(*_):\n"
                   "    open(sys.argv[1] + '/notice', 'w').close(); sys.exit(143)\n"
                   "signal.signal(signal.SIGTERM, notice)\n"
                   "print('training', flush=True)\n"
                   "time.sleep(120)\n")


STEP_LINE = re.compile(r": step (\d+), loss")  # not the argv's line, which has {step}


def all_reduce(folder: Path, step_s: float = 0.05) -> list[RoleSpec]:
    folder.mkdir(exist_ok=True)
    return [RoleSpec("worker1", [PY, "-c", NOTICING_WORKER, str(folder)], CPU, {}),
            RoleSpec("worker0", [PY, "-c", RESUMING_MAIN, str(folder), str(step_s)], CPU, {})]


def policy(*faults: Fault, restartable: tuple[str, ...] = ("worker1",), limit: int = 3,
           whole: bool = False) -> FaultPlan:
    return FaultPlan(faults, restartable, {"ps": "the ps holds the variables", "worker1": "it saved nothing"},
                     (130, 137, 143), limit, 0.1, MARKER, whole)


def run(tmp_path: Path, roles: list[RoleSpec], faults: FaultPlan):
    return supervise(Plan(str(tmp_path), roles, "client", kit_watchdog(probe_s=20), faults=faults))


# --- what a fault and a policy are ---------------------------------------------------------

def test_a_fault_is_signal_role_and_step():
    assert Fault("kill", "worker1", 20) == parse_fault("kill:worker1@20", ROLES, 51)
    assert signal.SIGTERM == parse_fault(" term:ps@0 ", ROLES, 51).signum
    assert "int:client@50" == str(parse_fault("int:client@50", ROLES, 51))


@pytest.mark.parametrize("text, says, fix", [
    ("worker1@20", "is not SIGNAL:ROLE@STEP", "e.g. --fault kill:ps@20"),
    ("hup:worker1@20", "unknown signal 'hup'", "use one of kill, term, int"),
    ("kill:worker2@20", "this run has no role 'worker2'", "its roles are standalone, ps, worker0, worker1, client"),
    ("kill:worker1@51", "the run logs steps 0 to 50", "give a step below 51, or more --steps"),
])
def test_a_bad_fault_is_refused_naming_what_would_do(text: str, says: str, fix: str):
    with pytest.raises(KitError) as raised:
        parse_fault(text, ROLES, 51)
    assert says in raised.value.message and fix == raised.value.hint


def test_exit_codes_are_read_as_a_shell_reads_them():
    assert (137, 143, 130, 1, 0) == tuple(exit_status(c) for c in (-9, -15, -2, 1, 0))
    assert (130, 137, 143) == retryable_codes("130, 137,143")
    for bad in ("137,x", "", "0", "256"):
        with pytest.raises(KitError, match="retryable_exit_codes"):
            retryable_codes(bad)


def test_the_policy_restarts_only_a_retryable_death_of_a_role_the_program_takes_back():
    plan = policy(limit=2)
    assert "" == plan.refusal("worker1", -signal.SIGKILL, 0)
    assert "" == plan.refusal("worker1", 143, 1)
    assert plan.refusal("worker1", 1, 0).startswith("exit code 1 is permanent (retried: 130, 137, 143")
    assert plan.refusal("worker1", 139, 0).startswith("exit code 139 is permanent")
    assert plan.refusal("worker1", -9, 2).startswith("it was restarted 2 times already (backoff_limit 2")
    assert "the ps holds the variables" == plan.refusal("ps", -9, 0)


def test_a_plan_with_faults_survives_its_json_file(tmp_path: Path):
    plan = Plan(str(tmp_path), [client()], "client", kit_watchdog(), faults=policy(Fault("kill", "worker1", 20)))
    assert plan == Plan.from_json(plan.to_json())


def test_the_request_checks_faults_against_the_program_and_names_whom_it_takes_back():
    options = kit_options(51, program="tf2-ps")
    plan = fault_plan(SETTINGS, options, ["kill:worker1@20", "term:ps@30"], "local")
    assert (Fault("kill", "worker1", 20), Fault("term", "ps", 30)) == plan.faults
    assert ("worker0", "worker1") == plan.restartable
    assert {"ps", "client"} == set(plan.why_not)
    assert (SETTINGS.backoff_limit, SETTINGS.restart_backoff_s) == (plan.backoff_limit, plan.backoff_s)
    assert "Putting back a closure after it failed" == plan.rerun_marker  # TensorFlow's coordinator's line
    article = fault_plan(SETTINGS, kit_options(51, program="article"), [], "local")
    assert ((), "", False) == (article.restartable, article.rerun_marker, article.whole)
    assert "nothing to start again from" in article.why_not["worker1"]
    mirrored = fault_plan(SETTINGS, kit_options(51, program="tf2-mirrored"), ["kill:worker1@20"], "local")
    assert ["worker0", "worker1"] == sorted(mirrored.why_not)  # no client, no ps in an all-reduce cluster
    assert (True, False) == (mirrored.whole, plan.whole)  # an all-reduce cluster is restarted as a whole
    # The swarm restarts one task at a time, by its own policy: there the cluster is not restarted.
    assert not any(fault_plan(SETTINGS, kit_options(51, program="tf2-mirrored"), [], name).whole
                   for name in ("swarm", "docker"))


def test_reproduce_refuses_a_fault_naming_a_role_the_program_does_not_start():
    request = Request(quick=True, program="tf2-mirrored", faults=("kill:client@20",), isolation="none")
    with pytest.raises(KitError, match="this run has no role 'client'"):
        request.plan(SETTINGS)


# --- the runner injects them and restarts -----------------------------------------------------

def test_a_killed_worker_the_program_takes_back_is_restarted_and_the_run_goes_on(tmp_path: Path):
    outcome = run(tmp_path, [server("ps"), server("worker1"), client()], policy(Fault("kill", "worker1", 30)))
    assert (True, "") == (outcome.ok, outcome.message)
    events = [(e["role"], e["what"]) for e in outcome.recovery["events"]]
    assert [("worker1", "fault"), ("worker1", "exited"), ("worker1", "restarted"), ("worker1", "serving")] == events
    assert {"worker1": 1} == outcome.recovery["restarts"]
    assert 1 == outcome.recovery["functions_run_again"]  # the client's marker lines, counted
    fault = outcome.recovery["events"][0]
    assert (30, "SIGKILL sent (kill:worker1@30)") == (fault["step"], fault["detail"])
    assert "exit code 137" == outcome.recovery["events"][1]["detail"]
    assert 0 <= outcome.recovery["seconds_lost"] < 2  # the client does not wait for worker1 here
    # Each incarnation its own log; the second is the one the teardown stopped.
    assert "listening on" in log_path(tmp_path, "worker1").read_text()
    assert "listening on" in log_path(tmp_path, "worker1", 2).read_text()
    assert -signal.SIGTERM == outcome.exit_codes["worker1"]


def test_a_restart_still_due_when_the_run_finishes_is_said_not_to_have_happened(tmp_path: Path):
    """worker1 killed after step 80, its backoff longer than the client's last steps: the run
    passes, and the timeline says the restart never came, rather than ending at 'exited'."""
    slow = FaultPlan((Fault("kill", "worker1", 80),), ("worker1",), {}, (130, 137, 143), 3, 30.0, "", False)
    outcome = run(tmp_path, [server("ps"), server("worker1"), client()], slow)
    assert (True, "") == (outcome.ok, outcome.message)
    events = [(e["role"], e["what"]) for e in outcome.recovery["events"]]
    assert [("worker1", "fault"), ("worker1", "exited"), ("worker1", "not restarted")] == events
    assert "still due when the run finished" in outcome.recovery["events"][-1]["detail"]
    assert not log_path(tmp_path, "worker1", 2).exists()


def test_a_killed_role_the_program_cannot_take_back_ends_the_run_saying_why(tmp_path: Path):
    outcome = run(tmp_path, [server("ps"), server("worker1"), client()], policy(Fault("kill", "ps", 10)))
    assert not outcome.ok
    assert outcome.message.startswith("the ps role exited with code -9 (killed by SIGKILL) while the client was "
                                      "running; not restarted: the ps holds the variables")
    assert [("ps", "fault"), ("ps", "exited"), ("ps", "not restarted")] == \
        [(e["role"], e["what"]) for e in outcome.recovery["events"]]


def test_a_permanent_exit_code_is_not_retried(tmp_path: Path):
    exits_1 = LISTENER.replace("os.kill(os.getpid(), signal.SIGKILL)", "os._exit(1)")
    outcome = run(tmp_path, [server("worker1", 0.5, exits_1), client()], policy())
    assert not outcome.ok
    assert "the worker1 role exited with code 1 while the client was running; not restarted: exit code 1 is " \
           "permanent" in outcome.message
    assert not log_path(tmp_path, "worker1", 2).exists()


def test_the_backoff_limit_holds_and_nothing_is_left_running(tmp_path: Path):
    """A worker that kills itself half a second after it listens, every time: two restarts, then the
    run fails; three logs, one per incarnation (the fixture checks that no process is left)."""
    outcome = run(tmp_path, [server("worker1", 0.5), client()], policy(limit=2))
    assert not outcome.ok
    assert "not restarted: it was restarted 2 times already (backoff_limit 2, invoke.yaml)" in outcome.message
    assert f"see {log_path(tmp_path, 'worker1', 3)}" in outcome.message
    assert {"worker1": 2} == outcome.recovery["restarts"]
    assert [1, 2, 3] == [n for n in (1, 2, 3, 4) if log_path(tmp_path, "worker1", n).exists()]


def test_a_preempted_all_reduce_cluster_is_restarted_as_a_whole_and_resumes(tmp_path: Path):
    """SIGTERM to worker 1: both workers end with 143, every role is started again as its second
    incarnation, and worker 0 resumes where it saved: every planned step logged once, across its
    two logs."""
    plan = Plan(str(tmp_path), all_reduce(tmp_path / "state"), "worker0", kit_watchdog(probe_s=20),
                faults=policy(Fault("term", "worker1", 30), restartable=(), whole=True))
    outcome = supervise(plan)
    assert (True, "") == (outcome.ok, outcome.message)
    events = [(e["role"], e["what"]) for e in outcome.recovery["events"]]
    assert ("worker1", "fault") == events[0]
    assert {("worker1", "exited"), ("worker0", "exited")} == set(events[1:3])
    assert ("cluster", "restarted") == events[3] and 4 == len(events)
    assert {"cluster": 1} == outcome.recovery["restarts"]
    steps = [int(step) for path in (log_path(tmp_path, "worker0"), log_path(tmp_path, "worker0", 2))
             for step in STEP_LINE.findall(path.read_text())]
    assert list(range(0, 100, 10)) == steps
    assert "training" in log_path(tmp_path, "worker1", 2).read_text()
    assert 0 == outcome.recovery["steps_redone"]


def test_an_all_reduce_worker_lost_without_a_notice_restarts_the_cluster_from_its_last_checkpoint(tmp_path: Path):
    """SIGKILL to worker 1: no notice, so worker 0 saves nothing more; the kit stops it and
    restarts the cluster, which resumes from the last periodic checkpoint and logs its step again."""
    plan = Plan(str(tmp_path), all_reduce(tmp_path / "state", step_s=0.1), "worker0", kit_watchdog(probe_s=20),
                faults=policy(Fault("kill", "worker1", 30), restartable=(), whole=True))
    outcome = supervise(plan)
    assert (True, "") == (outcome.ok, outcome.message)
    events = [(e["role"], e["what"], e["detail"]) for e in outcome.recovery["events"]]
    assert ("worker1", "exited", "exit code 137") == events[1]
    assert ("worker0", "exited", "exit code 143, stopped for the restart") == events[2]  # the kit's SIGTERM
    first, second = (STEP_LINE.findall(log_path(tmp_path, "worker0", n).read_text()) for n in (1, 2))
    assert ["0", "10", "20", "30"] == first[:4] and "30" == second[0]  # resumed from step 30's checkpoint
    assert 1 <= outcome.recovery["steps_redone"] <= 10


def test_a_whole_cluster_is_not_restarted_on_a_permanent_code_nor_past_the_backoff_limit(tmp_path: Path):
    """worker 0 sent SIGTERM twice: with a backoff limit of 1 the first restart is taken, and the
    second end fails the run, naming the limit."""
    plan = Plan(str(tmp_path), all_reduce(tmp_path / "state"), "worker0", kit_watchdog(probe_s=20),
                faults=policy(Fault("term", "worker1", 20), Fault("term", "worker1", 60), restartable=(), whole=True,
                              limit=1))
    outcome = supervise(plan)
    assert not outcome.ok
    assert "not restarted: it was restarted 1 times already (backoff_limit 1, invoke.yaml)" in outcome.message
    assert log_path(tmp_path, "worker0", 2).exists() and not log_path(tmp_path, "worker0", 3).exists()
    (tmp_path / "permanent").mkdir()
    exits_1 = Plan(str(tmp_path / "permanent"), [RoleSpec("worker0", [PY, "-c", "import sys; sys.exit(1)"], CPU, {})],
                   "worker0", kit_watchdog(probe_s=20), faults=policy(restartable=(), whole=True))
    outcome = supervise(exits_1)
    assert "the worker0 role exited with code 1 and was not restarted: exit code 1 is permanent" in outcome.message
    assert not log_path(tmp_path / "permanent", "worker0", 2).exists()


# --- a real cluster --------------------------------------------------------------------------

def faulted(tmp_path: Path, kit_inputs: KitInputs, program: str, fault: str,
            workers: int = 2) -> tuple[Reproduction, dict]:
    """A quick reproduction of ``program`` on the local backend with ``fault``; it must pass.
    The reproduction, and its cluster run's recovery as results.json keeps it."""
    settings = kit_settings(tmp_path, kit_inputs)
    options = kit_options(settings.quick_steps, workers, program=program, run_id=program)
    backend = ProcessBackend(Loopback.choose(settings.isolation), settings.watchdog,
                             fault_plan(settings, options, [fault], "local"))
    result = reproduce(settings, RunPlan(options, backend), lambda line: None)
    assert result.passed, result.error
    results = json.loads((result.run_dir / "results.json").read_text())
    assert {} == results["modes"]["standalone"]["outcome"]["recovery"]  # no fault is aimed at it
    return result, results["modes"]["cluster"]["outcome"]["recovery"]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("fault, code", [("kill:worker0@20", 137), ("term:worker0@20", 143)])
def test_tf2_ps_survives_a_lost_worker_with_the_planned_steps(tmp_path: Path, kit_inputs: KitInputs, fault: str,
                                                               code: int):
    """The faults issue's first done-when, on the local backend: `--program tf2-ps --quick --fault
    kill:worker0@20` passes with every planned step logged, and the report shows the kill and the
    restart. A preempted worker (SIGTERM) ends as a process ended by it, 143, and is restarted too.
    One worker: the coordinator has no other to go on with, so the restart is what the run waits
    for, however fast the machine trains."""
    result, recovery = faulted(tmp_path, kit_inputs, "tf2-ps", fault, workers=1)
    run_dir = result.run_dir
    assert ["fault", "exited", "restarted", "serving"] == [e["what"] for e in recovery["events"]]
    assert f"exit code {code}" == recovery["events"][1]["detail"]
    # The function worker 0 was running when it was lost: the coordinator ran it again.
    assert recovery["functions_run_again"] >= 1
    assert "step 50, loss = " in (run_dir / "client.log").read_text()
    assert "serving /job:worker/task:0" in log_path(run_dir, "worker0", 2).read_text()
    report = (run_dir / "report.md").read_text()
    assert fault in report and "restarted" in report


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tf2_mirrored_preempted_resumes_with_exactly_the_planned_steps(tmp_path: Path, kit_inputs: KitInputs):
    """The faults issue's second done-when: SIGTERM to worker 1 of a real MultiWorkerMirroredStrategy
    cluster; every worker saves and exits, the kit restarts the cluster, and worker 0 logs each
    planned step once across its two logs; the logs pass and the learning is judged."""
    result, recovery = faulted(tmp_path, kit_inputs, "tf2-mirrored", "term:worker1@20")
    run_dir = result.run_dir
    assert ("cluster", "restarted") in [(e["role"], e["what"]) for e in recovery["events"]]
    assert ({"cluster": 1}, 0) == (recovery["restarts"], recovery["steps_redone"])  # it resumed where it saved
    first, second = (log_path(run_dir, "worker0", n).read_text() for n in (1, 2))
    assert "PreemptionCheckpointHandler: checkpoint saved. Exiting." in first
    steps = [int(step) for text in (first, second) for step in STEP_LINE.findall(text)]
    assert list(range(0, result.info.steps, 10)) == steps
    assert result.learning is not None
    report = (run_dir / "report.md").read_text()
    assert "term:worker1@20; restarted: cluster 1 time;" in report and "| cluster | restarted |" in report


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_resumable_lesson_survives_a_killed_ps_from_its_last_checkpoint(tmp_path: Path, kit_inputs: KitInputs):
    """The faults issue's TF1 way: the ps killed after step 20 holds every variable, and nothing of
    it survives; the kit restarts the cluster, the client restores its last checkpoint into the new
    ps and goes on: read as the judge reads them, its logs have each planned step once, and at most
    the steps since that checkpoint (checkpoint_every, 10) ran again."""
    result, recovery = faulted(tmp_path, kit_inputs, "lesson-resumable", "kill:ps@20")
    run_dir = result.run_dir
    assert {"cluster": 1} == recovery["restarts"] and recovery["steps_redone"] <= 10
    second = log_path(run_dir, "client", 2).read_text()
    # The checkpoint of step 20, or of step 10 when the kill came while step 20's was being saved
    # (then the second client logs step 20 again, and the judge reads the first one's up to it).
    resumed = re.search(rf"Resuming from {run_dir / 'train_cluster'}/model\.ckpt-(10|20)\n", second)
    assert resumed, second
    assert [int(resumed[1]) + 10] == [int(step) for step in STEP_LINE.findall(second)][:1]
    paths = [log_path(run_dir, "client", n) for n in (1, 2)]
    assert list(range(0, result.info.steps, 10)) == [f.step for f in step_fields(resumed_log(paths, "client"))]
    assert "serving /job:ps/task:0" in log_path(run_dir, "ps", 2).read_text()
