"""The local backend: every role a process on this machine.

The cluster runs inside a private network namespace when the OS allows one
(see netns.py); the standalone trainer needs no network and runs beside it.
The supervisor process does the starting, probing and tearing down; this side
starts it, follows the main role's log for progress and reads its outcome.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reprokit import PACKAGE_PARENT
from reprokit.errors import ClusterError
from reprokit.judge.logs import parse_line
from reprokit.run import netns
from reprokit.run.cluster import Cluster, local_cluster, require_free_ports
from reprokit.run.roles import RoleSpec
from reprokit.run.supervisor import Outcome, Plan, log_path

Progress = Callable[[str, int, float], None]  # role, step, examples/sec


@dataclass(frozen=True)
class Isolation:
    """Whether the cluster gets its own network namespace, and why not if not."""

    isolated: bool
    reason: str = ""


def choose_isolation(mode: str) -> Isolation:
    """`auto`: a namespace where possible; `netns`: required; `none`: host network."""
    if mode == "none":
        return Isolation(False, "--isolation none was asked for")
    available, reason = netns.isolation_available()
    if available:
        return Isolation(True)
    if mode == "netns":
        raise ClusterError(f"no private network namespace: {reason}",
                           "run as root or allow unprivileged user namespaces, or pass --isolation none")
    return Isolation(False, reason)


class _Follower:
    """Reads new step lines from a growing log and reports them."""

    def __init__(self, path: Path, role: str, progress: Progress | None) -> None:
        self.path, self.role, self.progress, self.offset = path, role, progress, 0

    def poll(self) -> None:
        if self.progress is None or not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        for raw in complete.decode(errors="replace").splitlines():
            kind, fields, _, _ = parse_line(raw)
            if kind == "step" and fields is not None:
                self.progress(self.role, fields.step, fields.examples_per_sec)


def run_plan(plan: Plan, *, isolation: Isolation, progress: Progress | None = None) -> Outcome:
    """Run a plan under a supervisor process; Ctrl-C or SIGTERM stop every role."""
    run_dir = Path(plan.run_dir)
    plan_path = run_dir / f"{plan.main}.plan.json"
    plan_path.write_text(plan.to_json())
    argv = [sys.executable, "-m", "reprokit.run.supervisor", str(plan_path)]
    if isolation.isolated:
        argv = netns.unshare_prefix() + argv
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_PARENT, os.environ.get("PYTHONPATH")]))}
    follower = _Follower(log_path(run_dir, plan.main), plan.main, progress)
    with (run_dir / f"{plan.main}.supervisor.log").open("w") as sup_log:
        # Its own session: a Ctrl-C reaches only us, and we stop it in order.
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=sup_log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            while proc.poll() is None:
                follower.poll()
                time.sleep(0.5)
            follower.poll()
        except BaseException:  # Ctrl-C, SIGTERM, or following the log failed: stop, never leave it
            _stop(proc)
            raise
        finally:
            signal.signal(signal.SIGTERM, previous)
    return _read_outcome(run_dir, plan.main, proc.returncode)


def _raise_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()  # its roles die with it (PR_SET_PDEATHSIG)
        proc.wait()


def _read_outcome(run_dir: Path, main: str, code: int | None) -> Outcome:
    path = run_dir / f"{main}.outcome.json"
    if not path.is_file():
        raise ClusterError(f"the supervisor of {main} exited with code {code} and wrote no outcome",
                           f"see {run_dir / (main + '.supervisor.log')}")
    return Outcome(**json.loads(path.read_text()))


class LocalBackend:
    """Roles as processes here; the cluster in its own network namespace when possible."""

    name = "local"

    def __init__(self, isolation: str = "auto", first_port: int = 2222, probe_timeout_s: float = 60.0) -> None:
        self.isolation = choose_isolation(isolation)
        self.first_port = first_port
        self.probe_timeout_s = probe_timeout_s
        self.python = sys.executable
        self.role_server = str(Path(__file__).resolve().with_name("role_server.py"))

    def cluster(self, workers: int) -> Cluster:
        return local_cluster(workers, first_port=self.first_port)

    def facts(self) -> dict:
        return {
            "backend": self.name,
            "isolation": "private network namespace" if self.isolation.isolated else "none",
            "isolation_note": self.isolation.reason,
            "exposed": "nothing: the servers' only interface is the namespace's own loopback"
            if self.isolation.isolated
            else f"the servers listen on every interface of this machine, ports {self.first_port} and up",
        }

    def run(self, plan_run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        has_servers = any(r.is_server for r in roles)
        isolated = self.isolation.isolated and has_servers
        if has_servers and not isolated:
            require_free_ports({r.name: r.address for r in roles if r.address})
        plan = Plan(str(plan_run_dir), roles, main, self.probe_timeout_s, isolated)
        return run_plan(plan, isolation=Isolation(isolated, self.isolation.reason), progress=progress)

    def teardown(self) -> list[str]:
        """Nothing is left to remove: the supervisor stopped every process it started."""
        return []
