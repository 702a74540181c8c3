"""Pure builders of each role's command line: ps, worker, client, standalone.

Nothing here runs anything; the backends run what these return.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from reprokit.run.cluster import Cluster

# The article's container hostnames.
HOSTNAMES = {"ps": "tf_paramserver", "client": "tf_client", "standalone": "tf_standalone"}
TRAINERS = {"standalone": "cifar10_standalone_train.py", "client": "cifar10_cluster_train.py"}
# Unbuffered output: the kit follows the step lines while a run is going.
BASE_ENV = {"PYTHONUNBUFFERED": "1"}


def hostname(role: str) -> str:
    """tf_paramserver, tf_worker_1 (for worker0), ..., as the article names them."""
    if role.startswith("worker"):
        return f"tf_worker_{int(role[len('worker'):]) + 1}"
    return HOSTNAMES[role]


@dataclass(frozen=True)
class RoleSpec:
    """One process of a run: what it runs, with which environment, on which CPUs."""

    name: str
    argv: list[str]
    cpus: str
    env: dict[str, str] = field(default_factory=dict)
    address: str | None = None  # servers: the host:port to probe before going on

    @property
    def is_server(self) -> bool:
        return self.address is not None

    @property
    def hostname(self) -> str:
        return hostname(self.name)

    def to_json(self) -> dict:
        return {"name": self.name, "argv": self.argv, "cpus": self.cpus, "env": self.env, "address": self.address}

    @classmethod
    def from_json(cls, data: dict) -> "RoleSpec":
        return cls(data["name"], list(data["argv"]), data["cpus"], dict(data["env"]), data["address"])


@dataclass(frozen=True)
class TrainingArgs:
    """What every trainer run is told, as the trainer's own flags."""

    steps: int
    data_dir: str
    train_dir: str
    extra_flags: tuple[str, ...] = ()

    def flags(self) -> list[str]:
        return [f"--max_steps={self.steps}", f"--data_dir={self.data_dir}",
                f"--train_dir={self.train_dir}", *self.extra_flags]


def server_role(cluster: Cluster, job: str, task: int, *, python: str, role_server: str, cpus: str,
                threads: tuple[int, int] = (0, 0)) -> RoleSpec:
    """A ps or worker task: role_server.py serving its slot of the ClusterSpec."""
    name = "ps" if job == "ps" else f"worker{task}"
    argv = [python, role_server, "--cluster", json.dumps(cluster.spec), "--job", job, "--task", str(task)]
    if threads != (0, 0):
        argv += ["--intra-op-threads", str(threads[0]), "--inter-op-threads", str(threads[1])]
    return RoleSpec(name, argv, cpus, dict(BASE_ENV), cluster.addresses()[name])


def client_role(cluster: Cluster, training: TrainingArgs, *, python: str, sources: str, cpus: str,
                env: dict[str, str] | None = None) -> RoleSpec:
    """The patched cluster trainer, its session on grpc://<ps>: PS_NODE and PS_PORT say where."""
    argv = [python, f"{sources}/{TRAINERS['client']}", *training.flags(), f"--num_workers={len(cluster.workers)}"]
    role_env = {**BASE_ENV, **(env or {}), "PS_NODE": cluster.ps_host, "PS_PORT": str(cluster.ps_port)}
    return RoleSpec("client", argv, cpus, role_env)


def standalone_role(training: TrainingArgs, *, python: str, sources: str, cpus: str,
                    env: dict[str, str] | None = None) -> RoleSpec:
    """The patched standalone trainer: one tower, on the CPUs it is pinned to."""
    argv = [python, f"{sources}/{TRAINERS['standalone']}", *training.flags()]
    return RoleSpec("standalone", argv, cpus, {**BASE_ENV, **(env or {})})


def client_hosting_ps_role(cluster: Cluster, training: TrainingArgs, *, python: str, sources: str,
                           role_server: str, cpus: str, threads: tuple[int, int] = (0, 0),
                           env: dict[str, str] | None = None) -> RoleSpec:
    """The ps server and the client in one process (role_server.py --run-trainer).

    The trainer is unchanged; its session targets grpc://<PS_NODE>:<PS_PORT>, which is the
    in-process server's own target, so TensorFlow hands its calls to that master directly."""
    server = server_role(cluster, "ps", 0, python=python, role_server=role_server, cpus=cpus, threads=threads)
    client = client_role(cluster, training, python=python, sources=sources, cpus=cpus, env=env)
    argv = [*server.argv, "--run-trainer", client.argv[1], "--", *client.argv[2:]]
    return RoleSpec("client", argv, cpus, client.env)


def cluster_roles(cluster: Cluster, training: TrainingArgs, cpus: dict[str, str], *, python: str,
                  sources: str, role_server: str, threads: tuple[int, int] = (0, 0),
                  env: dict[str, str] | None = None, client_hosts_ps: bool = False) -> list[RoleSpec]:
    """ps, workers, then the client: the order they must start in (the ps inside the client
    process when `client_hosts_ps`)."""
    workers = [server_role(cluster, "worker", i, python=python, role_server=role_server,
                           cpus=cpus[f"worker{i}"], threads=threads) for i in range(len(cluster.workers))]
    if client_hosts_ps:
        return workers + [client_hosting_ps_role(cluster, training, python=python, sources=sources,
                                                 role_server=role_server, cpus=cpus["client"],
                                                 threads=threads, env=env)]
    ps = server_role(cluster, "ps", 0, python=python, role_server=role_server, cpus=cpus["ps"], threads=threads)
    client = client_role(cluster, training, python=python, sources=sources, cpus=cpus["client"], env=env)
    return [ps, *workers, client]
