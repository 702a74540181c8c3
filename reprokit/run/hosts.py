"""The hosts backend: every role on a simulated host of its own, as on separate machines on one LAN.

Each role runs in a network namespace of its own with its own address (10.231.0.10 for the ps,
.11 for worker0, ...) on a private bridge, every server on its own port 2222 as in the article,
and its link shaped to `--link`'s bandwidth. All of it lives inside a network namespace of the
run's own (and, for a normal user, a user namespace), made by the supervisor's `unshare`: nothing
outside the run can reach it, it never falls back to the host network, and it is gone with the
run's processes. The supervisor (supervisor.py, topology.py) builds it and counts each host's bytes.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from reprokit.errors import ClusterError
from reprokit.names import CLIENT, PS, ROLE_SERVER, cluster_roles, worker_index
from reprokit.run import netns
from reprokit.run.backends import Exposure
from reprokit.run.cluster import SERVER_PORT, Cluster
from reprokit.run.links import parse_link
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Watchdog
from reprokit.run.supervisor import Isolation, Plan, run_plan
from reprokit.run.topology import BRIDGE_ADDRESS, PREFIX, SUBNET, host_addresses


def role_addresses(roles: list[RoleSpec]) -> dict[str, str]:
    """Each role's host address; a client that serves the ps itself (client_hosts_ps) is the ps host."""
    workers = sum(worker_index(r.name) is not None for r in roles)
    addresses = host_addresses(cluster_roles(workers))
    names = {r.name for r in roles}
    if CLIENT in names and PS not in names:
        addresses[CLIENT] = addresses[PS]
    return {name: address for name, address in addresses.items() if name in names}


class HostsBackend:
    """Roles as processes, each in a namespace of its own on the run's private, shaped LAN."""

    name = "hosts"
    python = sys.executable
    role_server = str(ROLE_SERVER)
    client_waits = False

    def __init__(self, link: str = "none", *, watchdog: Watchdog) -> None:
        self.link = parse_link(link)
        available, reason = netns.isolation_available()
        if not available:
            raise ClusterError(f"the hosts backend needs network namespaces, and none can be made here: {reason}",
                               f"it never falls back to the host network: {netns.NAMESPACE_FIXES}, "
                               "or use --backend docker")
        missing = [tool for tool in ("ip", "tc", "nsenter") if shutil.which(tool) is None]
        if missing:
            raise ClusterError(f"the hosts backend needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
                               "not installed", "install iproute2 and util-linux (apt-get install iproute2 util-linux)")
        self.watchdog = watchdog
        self.addresses: dict[str, str] = {}

    def cluster(self, workers: int) -> Cluster:
        hosts = host_addresses(cluster_roles(workers))
        return Cluster(f"{hosts[PS]}:{SERVER_PORT}",
                       tuple(f"{hosts[f'worker{i}']}:{SERVER_PORT}" for i in range(workers)),
                       f"{hosts[CLIENT]}:{SERVER_PORT}")

    def exposure(self, cluster: Cluster) -> Exposure:
        return Exposure(f"each role's own namespace on the run's private bridge ({SUBNET}.0/{PREFIX}), inside a "
                        "network namespace of the run's own: nothing outside the run", beyond_run=False)

    def facts(self) -> dict[str, str]:
        return {"backend": self.name, "link": self.link.name + ("" if self.link.bits_per_s else " (unshaped)"),
                "hosts": ", ".join(f"{role} {address}" for role, address in self.addresses.items()),
                "bridge": f"{BRIDGE_ADDRESS}/{PREFIX} (the supervisor's end)",
                "exposed": self.exposure(self.cluster(1)).where}

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        hosts = role_addresses(roles) if any(r.listens for r in roles) else {}
        self.addresses.update(hosts)
        plan = Plan(str(run_dir), roles, main, self.watchdog, True, hosts, self.link.name)
        return run_plan(plan, isolation=Isolation(True), progress=progress)

    def teardown(self) -> list[str]:
        """Nothing is left to remove: the topology lived inside the supervisor's namespace."""
        return []
