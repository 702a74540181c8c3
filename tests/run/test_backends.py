"""What every backend shares: what a reproduction leaves running at its end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reprokit.run.backends import Exposure, left_running
from reprokit.run.cluster import Cluster, local_cluster
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress


class LeavesANetwork:
    """A backend whose teardown could not remove one network."""

    name, python, role_server, client_waits = "fake", sys.executable, "role_server.py", False

    def cluster(self, workers: int) -> Cluster:
        return local_cluster(workers)

    def exposure(self, cluster: Cluster) -> Exposure:
        return Exposure("nowhere", beyond_run=False)

    def facts(self) -> dict:
        return {}

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        return Outcome(True, "")

    def teardown(self) -> list[str]:
        return ["network n (in use)"]


def test_left_running_lists_the_teardowns_leftovers_then_live_roles() -> None:
    """The backend's own leftovers first, then the PID of a role still alive; a finished one is not listed."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    try:
        outcomes = {"standalone": Outcome(True, "", pids={"standalone": done.pid}),
                    "cluster": Outcome(True, "", pids={"ps": live.pid})}
        assert ["network n (in use)", str(live.pid)] == left_running(LeavesANetwork(), outcomes)
    finally:
        live.kill()
        live.wait()
