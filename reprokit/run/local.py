"""The local backend: every role a process on this machine.

The cluster runs inside a private network namespace (see netns.py): its only interface is its
own loopback, so nothing outside the run can reach the unauthenticated TensorFlow servers. The
host network is used only when asked for (`--isolation none`). The standalone trainer needs no
network and runs beside it. A supervisor process (supervisor.py) runs the roles with the runner
inside the namespace; supervised.py starts it, relays its progress and reads its outcome.
"""

from __future__ import annotations

import sys
from pathlib import Path

from reprokit.errors import ClusterError, KitError
from reprokit.names import ROLE_SERVER
from reprokit.run import netns
from reprokit.run.backends import Exposure
from reprokit.run.cluster import SERVER_PORT, Cluster, local_cluster, require_free_ports
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Watchdog
from reprokit.run.supervisor import Isolation, Plan, run_plan

ISOLATION_MODES = ("auto", "netns", "none")
ISOLATION_FIXES = (netns.NAMESPACE_FIXES + ", or pass --isolation none to run the servers on this machine's "
                   "network, reachable by anyone who can reach it")


def choose_isolation(mode: str) -> Isolation:
    """`auto` and `netns`: a private namespace, or an error saying how to get one; `none`: the
    host network, because it was asked for. `auto` never falls back to the host network: an
    unauthenticated TensorFlow master on a LAN runs any op it is sent, file reads included."""
    if mode not in ISOLATION_MODES:
        raise KitError(f"unknown isolation {mode!r}", f"choose one of {', '.join(ISOLATION_MODES)}")
    if mode == "none":
        return Isolation(False, "--isolation none was asked for")
    available, reason = netns.isolation_available()
    if available:
        return Isolation(True)
    raise ClusterError(f"no private network namespace for the cluster: {reason}", ISOLATION_FIXES)


class LocalBackend:
    """Roles as processes here; the cluster in its own network namespace unless told otherwise."""

    name = "local"
    python = sys.executable
    role_server = str(ROLE_SERVER)
    client_waits = False

    def __init__(self, isolation: str, first_port: int = SERVER_PORT, *, watchdog: Watchdog) -> None:
        self.isolation = choose_isolation(isolation)
        self.first_port = first_port
        self.watchdog = watchdog

    def cluster(self, workers: int) -> Cluster:
        return local_cluster(workers, first_port=self.first_port)

    def exposure(self, cluster: Cluster) -> Exposure:
        if self.isolation.isolated:
            return Exposure("this run's private network namespace only (its own loopback)", beyond_run=False)
        addresses = [*cluster.addresses().values(), *([cluster.chief] if cluster.chief else [])]
        ports = sorted(int(a.rsplit(":", 1)[1]) for a in addresses)
        return Exposure(f"every interface of this machine, TCP ports {ports[0]}-{ports[-1]} "
                        f"(unauthenticated; {self.isolation.reason})", beyond_run=True)

    def facts(self) -> dict[str, str]:
        return {
            "backend": self.name,
            "isolation": "private network namespace" if self.isolation.isolated else "none",
            "isolation_note": self.isolation.reason,
            "exposed": self.exposure(self.cluster(1)).where,
        }

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        listening = {r.name: r.address or r.peer_address for r in roles if r.listens}
        isolated = self.isolation.isolated and bool(listening)
        if listening and not isolated:
            require_free_ports({name: address for name, address in listening.items() if address})
        plan = Plan(str(run_dir), roles, main, self.watchdog, isolated)
        return run_plan(plan, isolation=Isolation(isolated, self.isolation.reason), progress=progress)

    def teardown(self) -> list[str]:
        """Nothing is left to remove: the supervisor stopped every process it started."""
        return []
