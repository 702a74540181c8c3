"""The cluster: which roles exist, where they listen, and which CPUs they get."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.errors import KitError, PortBusyError

# Every server of the article's cluster listens on port 2222 of its own host (or container).
SERVER_PORT = 2222
LAYOUTS = ("article", "spread")


@dataclass(frozen=True)
class Cluster:
    """A ClusterSpec: one ps and N workers, each `host:port`; and where the client would listen
    if it served too (TF_CONFIG's "chief", a coordinator's), None where the cluster gives none."""

    ps: str
    workers: tuple[str, ...]
    chief: str | None = None

    @property
    def spec(self) -> dict[str, list[str]]:
        return {"ps": [self.ps], "worker": list(self.workers)}

    @property
    def ps_host(self) -> str:
        return self.ps.rsplit(":", 1)[0]

    @property
    def ps_port(self) -> int:
        return int(self.ps.rsplit(":", 1)[1])

    def addresses(self) -> dict[str, str]:
        """Role name -> address: 'ps', 'worker0', 'worker1', ..."""
        return {"ps": self.ps, **{f"worker{i}": a for i, a in enumerate(self.workers)}}


def local_cluster(workers: int, host: str = "127.0.0.1", first_port: int = SERVER_PORT) -> Cluster:
    """All roles on one host: ps on first_port, worker i on first_port + 1 + i, then the client."""
    if workers < 1:
        raise KitError(f"a cluster needs at least 1 worker, got {workers}")
    return Cluster(f"{host}:{first_port}", tuple(f"{host}:{first_port + 1 + i}" for i in range(workers)),
                   f"{host}:{first_port + 1 + workers}")


def _check_address(address: str, what: str) -> str:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise KitError(f"{what}: {address!r} is not host:port", "write it like 172.17.0.2:2222")
    return address


def load_cluster(path: Path) -> tuple[Cluster, dict[str, str]]:
    """A cluster file, read once: JSON {"ps": ["host:port"], "worker": ["host:port", ...]}, the
    article's shape, and its optional "placement" {role: node hostname, or a Swarm constraint}."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise KitError(f"{path}: cannot read a cluster description: {exc}",
                       'write JSON like {"ps": ["172.17.0.2:2222"], "worker": ["172.17.0.3:2222"]}') from exc
    if not isinstance(data, dict):
        raise KitError(f"{path}: a cluster description is a JSON object, not {type(data).__name__}",
                       'write JSON like {"ps": ["172.17.0.2:2222"], "worker": ["172.17.0.3:2222"]}')
    ps, workers, placement = data.get("ps", []), data.get("worker", []), data.get("placement", {})
    if len(ps) != 1 or not workers:
        raise KitError(f"{path}: needs exactly one ps and at least one worker, found {len(ps)} and {len(workers)}")
    if not isinstance(placement, dict) or not all(isinstance(v, str) for v in placement.values()):
        raise KitError(f"{path}: placement must map roles to node names or constraints",
                       'e.g. "placement": {"ps": "node-a", "worker0": "node.labels.zone == b"}')
    cluster = Cluster(_check_address(ps[0], f"{path} ps"), tuple(_check_address(w, f"{path} worker") for w in workers))
    return cluster, placement


def cluster_from(cluster_file: str | None, ps: str | None, workers: str | None) -> Cluster:
    """The cluster a person names: a cluster file, or --ps and --workers (not both)."""
    if cluster_file and (ps or workers):
        raise KitError("both --cluster and --ps/--workers given", "pass one of them")
    if cluster_file:
        return load_cluster(Path(cluster_file))[0]
    if ps and workers:
        return Cluster(_check_address(ps, "--ps"),
                       tuple(_check_address(w.strip(), "--workers") for w in workers.split(",") if w.strip()))
    raise KitError("no cluster given", 'pass --cluster FILE (JSON like {"ps": ["172.17.0.2:2222"], "worker": '
                   '["172.17.0.3:2222", "172.17.0.4:2222"]}) or --ps HOST:PORT --workers HOST:PORT,HOST:PORT')


@dataclass(frozen=True)
class CpuLayout:
    """Which CPUs (a taskset/cpuset list such as '0' or '0-1') each role is pinned to."""

    name: str
    cpus: dict[str, str] = field(default_factory=dict)

    def for_role(self, role: str) -> str:
        return self.cpus[role]

    def held(self, roles: Sequence[str]) -> int:
        """How many CPUs ``roles`` hold between them: '0' and '1' hold 2, '0-1' and '0' hold 2."""
        held: set[int] = set()
        for role in roles:
            for part in filter(None, self.cpus[role].split(",")):
                first, _, last = part.partition("-")
                held.update(range(int(first), int(last or first) + 1))
        return len(held)


def available_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def make_layout(name: str, workers: int, cpus: list[int] | None = None,
                explicit: dict[str, str] | None = None) -> CpuLayout:
    """`article`: everything on the first CPU, as the article's commands pin it.
    `spread`: standalone on one CPU, each worker on its own CPU (round robin when
    there are fewer CPUs than workers), ps and client sharing the CPU after the
    workers' when one is left, else sharing all of them."""
    cpus = cpus or available_cpus()
    roles = ["standalone", "ps", "client"] + [f"worker{i}" for i in range(workers)]
    if name == "article":
        table = {r: str(cpus[0]) for r in roles}
    elif name == "spread":
        table = {"standalone": str(cpus[0])}
        table.update({f"worker{i}": str(cpus[i % len(cpus)]) for i in range(workers)})
        shared = str(cpus[workers]) if len(cpus) > workers else ",".join(map(str, cpus))
        table.update(ps=shared, client=shared)
    else:
        raise KitError(f"unknown CPU layout {name!r}", f"choose one of {', '.join(LAYOUTS)}")
    for role, value in (explicit or {}).items():
        if role not in table:
            raise KitError(f"--cpus names role {role!r}, which this run has not",
                           f"roles: {', '.join(roles)}")
        table[role] = value
    return CpuLayout(name if not explicit else name + "+explicit", table)


def parse_cpu_overrides(text: str) -> dict[str, str]:
    """'ps=0,worker0=1' -> {'ps': '0', 'worker0': '1'}; ranges as '0-1' or '0:1'."""
    result = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        role, sep, value = item.partition("=")
        if not sep or not value:
            raise KitError(f"--cpus item {item!r} is not role=cpus", "e.g. --cpus ps=0,worker0=1,worker1=1")
        result[role.strip()] = value.strip().replace(":", ",")
    return result


def port_holder(port: int) -> str:
    """Best effort: which process listens on a TCP port, from /proc (Linux)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    for pid_dir in Path("/proc").glob("[0-9]*"):
        try:
            for fd in (pid_dir / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    cmd = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                    return f"pid {pid_dir.name} ({cmd[:80]})"
        except OSError:
            continue
    return "an unknown process"


def require_free_ports(addresses: dict[str, str]) -> None:
    """Raise PortBusyError naming the role, port and holder if a port cannot be bound."""
    for role, address in addresses.items():
        port = int(address.rsplit(":", 1)[1])
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            # As TF's gRPC servers bind: connections of a run that just ended linger in
            # TIME_WAIT for a minute and do not stop a server; only a listener does.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("0.0.0.0", port))  # TF's servers bind every interface
            except OSError:
                raise PortBusyError(
                    f"port {port} for the {role} role ({address}) is already in use by {port_holder(port)}",
                    "stop that process (or wait for the run that holds it to end), or run with --isolation netns, "
                    "where the servers get a network of their own and no port can clash",
                ) from None
