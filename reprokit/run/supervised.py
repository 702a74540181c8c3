"""A plan run under a supervisor process (supervisor.py), in a network namespace of its own or not.

The local, hosts and external-cluster backends all run their roles this way: this side writes
the plan, starts the supervisor, relays its progress, reads its outcome, and stops it on Ctrl-C
or SIGTERM. Which roles and which network are the backends' own business.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from reprokit import PACKAGE_PARENT, commands
from reprokit.errors import ClusterError
from reprokit.files import write_text
from reprokit.run import netns
from reprokit.run.runner import Outcome, Progress
from reprokit.run.signals import sigterm_interrupts
from reprokit.run.supervisor import PARENT_ENV, Plan

STOP_GRACE_S = 20.0


@dataclass(frozen=True)
class Isolation:
    """Whether the supervisor gets its own network namespace, and why not if not."""

    isolated: bool
    reason: str = ""


def run_plan(plan: Plan, *, isolation: Isolation, progress: Progress | None = None) -> Outcome:
    """Run a plan under a supervisor process; Ctrl-C or SIGTERM stop every role."""
    run_dir = Path(plan.run_dir)
    plan_path = run_dir / f"{plan.main}.plan.json"
    write_text(plan_path, plan.to_json())
    argv = [sys.executable, "-m", "reprokit.run.supervisor", str(plan_path)]
    if isolation.isolated:
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
                    outcome = Outcome(**event["outcome"])
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
