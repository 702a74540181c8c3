"""`invoke client`'s backend: only the client runs here, against servers started elsewhere."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from reprokit.names import log_path
from reprokit.run.cluster import Cluster
from reprokit.run.process_backend import ExternalServers, ProcessBackend
from reprokit.run.roles import RoleSpec
from tests.support.kit import kit_watchdog

CLUSTER = Cluster("10.0.0.1:2222", ("10.0.0.2:2222",))


def test_only_the_client_runs_here_on_any_cpu(tmp_path: Path) -> None:
    """The servers of the cluster file are not started; the client is not pinned to the layout's CPUs."""
    client = RoleSpec("client", [sys.executable, "-c", "import os; print(len(os.sched_getaffinity(0)))"], "0", {})
    server = RoleSpec("ps", [sys.executable, "-c", "import time; time.sleep(60)"], "0", {}, CLUSTER.ps)
    outcome = ProcessBackend(ExternalServers(CLUSTER), kit_watchdog(probe_s=3)).run(tmp_path, [server, client], "client", None)
    assert (True, ["client"]) == (outcome.ok, list(outcome.exit_codes))
    cpus = log_path(tmp_path, "client").read_text().splitlines()[-1].split("| ")[-1]
    assert len(os.sched_getaffinity(0)) == int(cpus)
    assert not log_path(tmp_path, "ps").exists()
