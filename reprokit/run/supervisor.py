"""The supervisor: a process of its own that runs a plan's roles with the runner, and the
launcher side that starts it (run_plan), through which the process backend (process_backend.py) runs
every network of its.

    python -m reprokit.run.supervisor PLAN.json

It runs inside the run's private network namespace when there is one (so its probes and its
roles see the same network), brings that namespace's network up, runs `Runner` over one
`ProcessHandle` per role, and reports to its parent on stdout, one JSON object per line:
`{"progress": [role, step, rate]}` as step lines come, then `{"outcome": {...}}`. It also keeps
the outcome in runs/<id>/<main>.outcome.json. SIGTERM or SIGINT stop the run in order.

The launcher side writes the plan, starts the supervisor (in a network namespace of its own or
not), relays its progress, reads its outcome, and stops it on Ctrl-C or SIGTERM. Which roles and
which network are the process backend's business.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reprokit import PACKAGE_PARENT, commands
from reprokit.errors import ClusterError, KitError
from reprokit.files import write_json, write_text
from reprokit.run import netns
from reprokit.run.faults import NO_FAULTS, FaultPlan
from reprokit.run.links import parse_link
from reprokit.run.process_handle import ProcessHandle
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Runner, Watchdog
from reprokit.run.signals import sigterm_interrupts
from reprokit.run.topology import Topology, TrafficMeter

OUTCOME_SUFFIX = ".outcome.json"
_PR_SET_PDEATHSIG = 1
PARENT_ENV = "REPROKIT_SUPERVISOR_PARENT"  # the launcher's pid


@dataclass(frozen=True)
class Plan:
    """What to run: roles in start order; the run ends when `main` ends."""

    run_dir: str
    roles: list[RoleSpec]
    main: str
    watchdog: Watchdog
    isolated: bool = False  # in a network namespace of its own: the launcher unshares, the supervisor brings lo up
    hosts: dict[str, str] = field(default_factory=dict)  # role -> address: a simulated host per role
    link: str = "none"  # the hosts' links' bandwidth (reprokit.run.links)
    faults: FaultPlan = NO_FAULTS  # faults to inject, roles to restart (faults.py)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "roles": [r.to_json() for r in self.roles]}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        data["roles"] = [RoleSpec.from_json(r) for r in data["roles"]]
        data["watchdog"] = Watchdog(**data["watchdog"])
        data["faults"] = FaultPlan.from_json(data["faults"])
        return cls(**data)


def outcome_path(run_dir: str | Path, main: str) -> Path:
    return Path(run_dir) / f"{main}{OUTCOME_SUFFIX}"


def _emit(event: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def supervise(plan: Plan, stop: threading.Event | None = None) -> Outcome:
    """Run the plan here, in this process's network; with `plan.hosts`, each role on a simulated
    host of its own, built here first and removed after."""
    if not plan.hosts:
        return _run(plan, [ProcessHandle(role, plan.run_dir) for role in plan.roles], stop)
    topology = Topology(plan.hosts, parse_link(plan.link))
    try:
        topology.build()
        meter = TrafficMeter(topology)
        handles = [ProcessHandle(role, plan.run_dir, enter=topology.enter(role.name)) for role in plan.roles]
        outcome = _run(plan, handles, stop, on_step=meter.on_step)
        outcome.network = meter.report()
    except KitError as error:  # the topology could not be built: nothing ran
        outcome = Outcome(False, str(error))
    finally:
        left = topology.close()
    outcome.add_leftovers(left)
    return outcome


def _run(plan: Plan, handles: list[ProcessHandle], stop: threading.Event | None,
         on_step: Callable[[int], None] | None = None) -> Outcome:
    def progress(role: str, step: int, rate: float) -> None:
        if on_step is not None:
            on_step(step)
        _emit({"progress": [role, step, rate]})

    runner = Runner(Path(plan.run_dir), handles, plan.main, watchdog=plan.watchdog, stop=stop, progress=progress,
                    recovery=plan.faults.recovery(handles))
    outcome = runner.run()
    outcome.interfaces = netns.interfaces()
    return outcome


def die_with_parent() -> None:
    """If the kit process that started us is killed (SIGKILL), we die too, and our roles with us.

    Done here, by the process itself, because `unshare --map-root-user` changes our
    credentials, which clears a death signal that a prefix program had set."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    expected = os.environ.get(PARENT_ENV)
    if expected and int(expected) != os.getppid():  # the parent died before the line above
        sys.exit(1)


def main(plan_path: str) -> int:
    die_with_parent()
    plan = Plan.from_json(Path(plan_path).read_text())
    if plan.isolated and not plan.hosts:  # the hosts' topology brings its own network up
        netns.bring_loopback_up()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    outcome = supervise(plan, stop)
    _emit({"outcome": asdict(outcome)})
    try:
        write_json(outcome_path(plan.run_dir, plan.main), asdict(outcome))
    except OSError:
        pass  # a full disk: the parent has the outcome from our stdout all the same
    return 0 if outcome.ok else 1


# --- the launcher side: run_plan ---------------------------------------------------------

STOP_GRACE_S = 20.0


def run_plan(plan: Plan, *, progress: Progress | None = None) -> Outcome:
    """Run a plan under a supervisor process; Ctrl-C or SIGTERM stop every role."""
    run_dir = Path(plan.run_dir)
    plan_path = run_dir / f"{plan.main}.plan.json"
    write_text(plan_path, plan.to_json())
    argv = [sys.executable, "-m", "reprokit.run.supervisor", str(plan_path)]
    if plan.isolated:
        argv = netns.unshare_prefix() + argv
    env = {**os.environ, PARENT_ENV: str(os.getpid()),
           "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_PARENT, os.environ.get("PYTHONPATH")]))}
    outcome: Outcome | None = None
    with (run_dir / f"{plan.main}.supervisor.log").open("w") as sup_log, sigterm_interrupts():
        # Its own session: a Ctrl-C reaches only us, and we stop it in order.
        proc = commands.spawn(argv, env=env, stderr=sup_log, new_session=True)
        try:
            for line in proc.stdout:  # type: ignore[union-attr]
                event = json.loads(line)
                if "progress" in event and progress is not None:
                    progress(*event["progress"])
                elif "outcome" in event:
                    outcome = Outcome.from_json(event["outcome"])
            proc.wait()
        except BaseException:  # Ctrl-C, SIGTERM, or a failing progress callback: stop, never leave it
            _stop(proc)
            raise
    if outcome is None:
        raise ClusterError(f"the supervisor of {plan.main} exited with code {proc.returncode} and sent no outcome",
                           f"see {run_dir / (plan.main + '.supervisor.log')}")
    return outcome


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()  # its roles die with it (their death signal)
        proc.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
