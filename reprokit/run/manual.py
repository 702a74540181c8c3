"""The article's own way across machines: one role per machine, started by hand.

`invoke ps` and `invoke worker` serve one task of a cluster in the foreground (`serve`);
`invoke client` trains against servers started elsewhere. The client's run is an ordinary
reproduction of the cluster mode on the process backend whose network is the external servers
(processes.ExternalServers), which starts only the client: it gets the same stages, run folder,
rules verdict and report as `invoke reproduce`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess

from reprokit import commands
from reprokit.errors import ClusterError, KitError
from reprokit.names import ROLE_SERVER
from reprokit.run.cluster import Cluster
from reprokit.run.roles import RoleSpec, server_role
from reprokit.run.runner import signal_phrase

SERVE_WARNING = ("TensorFlow's gRPC server is unauthenticated and listens on every interface of this "
                 "machine: anyone who can reach {port} can run any op on it, file reads and writes included")


def serving_role(cluster: Cluster, job: str, task: int, python: str) -> RoleSpec:
    """The role that serves /job:<job>/task:<task>; a task the cluster has not is refused."""
    tasks = 1 if job == "ps" else len(cluster.workers)
    if not 0 <= task < tasks:
        raise KitError(f"the cluster has no {job} task {task}: its {job} tasks are 0..{tasks - 1} "
                       f"({cluster.spec})", f"pass --index between 0 and {tasks - 1}, or add the worker to the cluster")
    return server_role(cluster, job, task, python=python, role_server=str(ROLE_SERVER), cpus="")


def serve(role: RoleSpec, echo: commands.Echo) -> int:
    """Run one server in the foreground until it ends or Ctrl-C; its exit code (0 when stopped)."""
    assert role.address is not None
    echo(f"serving {role.name} at {role.address}; Ctrl-C stops it")
    echo("WARNING: " + SERVE_WARNING.format(port=role.address))
    proc = commands.spawn(role.argv, env={**os.environ, **role.env}, stdout=None, echo=echo)
    try:
        code = proc.wait()
    except KeyboardInterrupt:  # the server got the same Ctrl-C; let it stop cleanly
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            code = proc.wait()
    if code != 0:
        raise ClusterError(f"the {role.name} server exited with code {code}{signal_phrase(code)}",
                           "see its output above")
    return code


def require_reachable(cluster: Cluster, timeout: float = 5.0) -> None:
    """The client needs the ps (its master) to answer before anything else is prepared."""
    try:
        with socket.create_connection((cluster.ps_host, cluster.ps_port), timeout=timeout):
            pass
    except OSError as exc:
        raise ClusterError(f"the ps at {cluster.ps} is not reachable: {exc}",
                           "start it first with `invoke ps --cluster FILE` on that machine") from None
