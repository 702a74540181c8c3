"""The process backend: every role a process of this machine, run by a supervisor, on a network
that is a value of its own.

One mechanism, three networks:
- `Loopback` (the local backend): the cluster on a loopback; the run's own private network
  namespace (netns.py) unless `--isolation none` asks for the host network;
- `SimulatedHosts` (the hosts backend): each role on a host of its own (10.231.0.10 for the ps,
  .11 for worker0, ...) on a private bridge, every server on port 2222 as in the article, each
  link shaped to `--link`'s bandwidth; all of it inside a network namespace of the run's own,
  built by the supervisor (topology.py), which also counts each host's bytes;
- `ExternalServers` (`invoke client`): the servers run elsewhere, started by hand (manual.py);
  only the client runs here, on the host network, the only one that reaches them.

TensorFlow's gRPC servers are unauthenticated and listen on every interface: no network but the
asked-for host network lets anything outside the run reach them, and none falls back to it.
The supervisor (supervisor.py) runs the roles with the runner and stops every one of them: a
process backend leaves nothing to tear down.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Protocol

from reprokit.errors import ClusterError, KitError
from reprokit.names import CLIENT, PS, ROLE_SERVER, cluster_role_names, worker_index
from reprokit.run import netns
from reprokit.run.backends import Exposure
from reprokit.run.cluster import SERVER_PORT, Cluster, local_cluster, require_free_ports
from reprokit.run.faults import NO_FAULTS, FaultPlan
from reprokit.run.links import Link, parse_link
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Watchdog
from reprokit.run.supervisor import Plan, run_plan
from reprokit.run.topology import BRIDGE_ADDRESS, PREFIX, SUBNET, host_addresses

ISOLATION_MODES = ("auto", "netns", "none")
ISOLATION_FIXES = (netns.NAMESPACE_FIXES + ", or pass --isolation none to run the servers on this machine's "
                   "network, reachable by anyone who can reach it")


class Network(Protocol):
    """Where a process backend's roles run, and what can reach them."""

    @property
    def backend_name(self) -> str: ...  # the name the run's facts give the backend

    def cluster(self, workers: int) -> Cluster: ...
    def exposure(self, cluster: Cluster) -> Exposure: ...
    def facts(self) -> dict[str, str]: ...  # what the run's results say of it, "exposed" last
    def plan(self, run_dir: Path, roles: list[RoleSpec], main: str, watchdog: Watchdog) -> Plan: ...


@dataclass(frozen=True)
class Loopback:
    """Every server on a loopback port from `first_port` on: the run's own namespace when
    `isolated`, else the host's (`reason` says why)."""

    isolated: bool
    reason: str = ""
    first_port: int = SERVER_PORT
    backend_name: ClassVar[str] = "local"

    @classmethod
    def choose(cls, mode: str, first_port: int = SERVER_PORT) -> Loopback:
        """`auto` and `netns`: a private namespace, or an error saying how to get one; `none`: the
        host network, because it was asked for. `auto` never falls back to the host network: an
        unauthenticated TensorFlow master on a LAN runs any op it is sent, file reads included.
        ``mode`` is one of ISOLATION_MODES, checked with the request (reprokit.options)."""
        if mode == "none":
            return cls(False, "--isolation none was asked for", first_port)
        available, reason = netns.isolation_available()
        if available:
            return cls(True, "", first_port)
        raise ClusterError(f"no private network namespace for the cluster: {reason}", ISOLATION_FIXES)

    def cluster(self, workers: int) -> Cluster:
        return local_cluster(workers, first_port=self.first_port)

    def exposure(self, cluster: Cluster) -> Exposure:
        if self.isolated:
            return Exposure("this run's private network namespace only (its own loopback)", beyond_run=False)
        addresses = [*cluster.addresses().values(), *([cluster.chief] if cluster.chief else [])]
        ports = sorted(int(a.rsplit(":", 1)[1]) for a in addresses)
        return Exposure(f"every interface of this machine, TCP ports {ports[0]}-{ports[-1]} "
                        f"(unauthenticated; {self.reason})", beyond_run=True)

    def facts(self) -> dict[str, str]:
        return {"isolation": "private network namespace" if self.isolated else "none", "isolation_note": self.reason,
                "exposed": self.exposure(self.cluster(1)).where}

    def plan(self, run_dir: Path, roles: list[RoleSpec], main: str, watchdog: Watchdog) -> Plan:
        listening = {r.name: r.address or r.peer_address for r in roles if r.listens}
        # A run without servers (the standalone) needs no namespace of its own.
        isolated = self.isolated and bool(listening)
        if listening and not isolated:
            require_free_ports({name: address for name, address in listening.items() if address})
        return Plan(str(run_dir), roles, main, watchdog, isolated)


def role_addresses(roles: list[RoleSpec]) -> dict[str, str]:
    """Each role's host address; a client that serves the ps itself (client_hosts_ps) is the ps host."""
    workers = sum(worker_index(r.name) is not None for r in roles)
    addresses = host_addresses(cluster_role_names(workers))
    names = {r.name for r in roles}
    if CLIENT in names and PS not in names:
        addresses[CLIENT] = addresses[PS]
    return {name: address for name, address in addresses.items() if name in names}


@dataclass
class SimulatedHosts:
    """Each role a host of its own on the run's private, shaped LAN; `addresses` keeps the hosts
    each run used, for the facts."""

    link: Link
    addresses: dict[str, str] = field(default_factory=dict)
    backend_name: ClassVar[str] = "hosts"

    @classmethod
    def shaped(cls, link: str) -> SimulatedHosts:
        """The hosts with links of ``link``'s bandwidth; an error naming the fix where this machine
        cannot make namespaces or lacks the tools that build and shape them."""
        available, reason = netns.isolation_available()
        if not available:
            raise ClusterError(f"the hosts backend needs network namespaces, and none can be made here: {reason}",
                               f"it never falls back to the host network: {netns.NAMESPACE_FIXES}, "
                               "or use --backend docker")
        missing = [tool for tool in ("ip", "tc", "nsenter") if shutil.which(tool) is None]
        if missing:
            raise ClusterError(f"the hosts backend needs {', '.join(missing)}, which "
                               f"{'is' if len(missing) == 1 else 'are'} not installed",
                               "install iproute2 and util-linux (apt-get install iproute2 util-linux)")
        return cls(parse_link(link))

    def cluster(self, workers: int) -> Cluster:
        hosts = host_addresses(cluster_role_names(workers))
        return Cluster(f"{hosts[PS]}:{SERVER_PORT}",
                       tuple(f"{hosts[f'worker{i}']}:{SERVER_PORT}" for i in range(workers)),
                       f"{hosts[CLIENT]}:{SERVER_PORT}")

    def exposure(self, cluster: Cluster) -> Exposure:
        return Exposure(f"each role's own namespace on the run's private bridge ({SUBNET}.0/{PREFIX}), inside a "
                        "network namespace of the run's own: nothing outside the run", beyond_run=False)

    def facts(self) -> dict[str, str]:
        return {"link": self.link.name + ("" if self.link.bits_per_s else " (unshaped)"),
                "hosts": ", ".join(f"{role} {address}" for role, address in self.addresses.items()),
                "bridge": f"{BRIDGE_ADDRESS}/{PREFIX} (the supervisor's end)",
                "exposed": self.exposure(self.cluster(1)).where}

    def plan(self, run_dir: Path, roles: list[RoleSpec], main: str, watchdog: Watchdog) -> Plan:
        hosts = role_addresses(roles) if any(r.listens for r in roles) else {}
        self.addresses.update(hosts)
        # Isolated always: the hosts' topology lives in the supervisor's own namespace.
        return Plan(str(run_dir), roles, main, watchdog, True, hosts, self.link.name)


@dataclass(frozen=True)
class ExternalServers:
    """A cluster whose servers run elsewhere (`invoke ps`, `invoke worker`): only the client runs here."""

    given: Cluster
    backend_name: ClassVar[str] = "external"

    def cluster(self, workers: int) -> Cluster:
        if workers != len(self.given.workers):
            raise KitError(f"the cluster file has {len(self.given.workers)} workers, the run asked for {workers}")
        return self.given

    def exposure(self, cluster: Cluster) -> Exposure:
        return Exposure(f"no server is started here; the cluster's servers ({', '.join(cluster.addresses().values())})"
                        " listen where `invoke ps` and `invoke worker` started them", beyond_run=False)

    def facts(self) -> dict[str, str]:
        return {"cluster": str(self.given.spec), "exposed": self.exposure(self.given).where}

    def plan(self, run_dir: Path, roles: list[RoleSpec], main: str, watchdog: Watchdog) -> Plan:
        # The client alone, on any CPU: this machine runs nothing else of the cluster.
        client = [replace(r, cpus="") for r in roles if r.name == main]
        return Plan(str(run_dir), client, main, watchdog, False)


class ProcessBackend:
    """Roles as processes here, under a supervisor, on ``network``."""

    python = sys.executable
    role_server = str(ROLE_SERVER)
    client_waits = False

    def __init__(self, network: Network, watchdog: Watchdog, faults: FaultPlan = NO_FAULTS) -> None:
        self.network = network
        self.watchdog = watchdog
        self.faults = faults  # the supervisor injects them and restarts by its policy
        self.name = network.backend_name

    def cluster(self, workers: int) -> Cluster:
        return self.network.cluster(workers)

    def exposure(self, cluster: Cluster) -> Exposure:
        return self.network.exposure(cluster)

    def facts(self) -> dict[str, str]:
        return {"backend": self.name, **self.network.facts()}

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        return run_plan(replace(self.network.plan(run_dir, roles, main, self.watchdog), faults=self.faults),
                        progress=progress)

    def teardown(self) -> list[str]:
        """Nothing is left to remove: the supervisor stopped every process it started, and the
        namespaces lived and died with it."""
        return []
