"""Each role of a run: what it runs (`RoleSpec`, and the pure builders of each one's command
line: ps, worker, client, standalone) and what a backend hands the runner for it (`RoleHandle`).

Nothing here runs anything; the backends run what these return. A trainer role is built from
parts (the program, its flags, where the ps is served, the instruments the benchmark attaches),
so that every way of starting a trainer is one function of those parts, never an argv taken
apart again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

from reprokit import PACKAGE_PARENT
from reprokit.errors import KitError
from reprokit.names import CLIENT, PS, STANDALONE, hostname, server_name, worker
from reprokit.run.cluster import Cluster

# Unbuffered output: the kit follows the step lines while a run is going.
BASE_ENV = {"PYTHONUNBUFFERED": "1"}


class RoleJson(TypedDict):
    """A RoleSpec as the supervisor's plan file holds it."""

    name: str
    argv: list[str]
    cpus: str
    env: dict[str, str]
    address: str | None
    peer_address: str | None
    ends_itself: bool
    stall_hint: str


@dataclass(frozen=True)
class RoleSpec:
    """One process of a run: what it runs, with which environment, on which CPUs."""

    name: str
    argv: list[str]
    cpus: str
    env: dict[str, str] = field(default_factory=dict)
    address: str | None = None  # servers: the host:port to probe before going on
    # A trainer that also listens (an all-reduce worker): its address, never probed, since the
    # trainer waits for its peers itself.
    peer_address: str | None = None
    ends_itself: bool = False  # a trainer among peers: exiting with 0 is its end, not a death
    stall_hint: str = ""  # what a stall of this (main) role usually means, for the watchdog's message

    @property
    def is_server(self) -> bool:
        return self.address is not None

    @property
    def listens(self) -> bool:
        """Whether it opens a port: a server, or a trainer that is a peer of a cluster."""
        return self.address is not None or self.peer_address is not None

    @property
    def hostname(self) -> str:
        return hostname(self.name)

    def to_json(self) -> RoleJson:
        return {"name": self.name, "argv": self.argv, "cpus": self.cpus, "env": self.env, "address": self.address,
                "peer_address": self.peer_address, "ends_itself": self.ends_itself, "stall_hint": self.stall_hint}

    @classmethod
    def from_json(cls, data: RoleJson) -> "RoleSpec":
        return cls(data["name"], list(data["argv"]), data["cpus"], dict(data["env"]), data["address"],
                   data["peer_address"], data["ends_itself"], data["stall_hint"])


class RoleHandle(Protocol):
    """One role as a backend runs it. Every method but `start` must not raise."""

    spec: RoleSpec
    pid: int | None

    def start(self) -> None:
        """Start the role and its log pump; raise a KitError naming what went wrong."""

    def returncode(self) -> int | None:
        """Its exit code once it has ended, else None."""

    def unreachable(self) -> str:
        """Servers: '' once a client can connect to its address, else what the probe saw."""

    def cpu_seconds(self) -> float | None:
        """CPU time used so far (user + system), or None when it cannot be read now."""

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM)."""

    def kill(self) -> None:
        """Stop it now (SIGKILL)."""

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for it to end; its exit code, or None if it still runs."""

    def death(self) -> str:
        """How it ended, as a phrase: 'exited with code 1', '... (killed by SIGKILL)'."""

    def pump_error(self) -> str:
        """'' while its log is being written; the reason once its log pump has failed."""

    def release(self) -> list[str]:
        """Finish its log and remove what the backend made for it; what could not be removed."""


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


class Instrument(Protocol):
    """What the kit attaches to a trainer run: a module of the kit that imports the trainer and
    runs it with its files unchanged (the bench's probe, the update check's probe)."""

    @property
    def module(self) -> str:
        """The module run with `python -m`."""

    def flags(self) -> list[str]:
        """Its own flags, before the `--` that the trainer's follow."""


@dataclass(frozen=True)
class Instruments:
    """What the benchmark attaches to a trainer run (reprokit.bench.probe): the trainer's files
    stay as they are; the probe imports it and writes its findings to `out`."""

    out: str
    trace_step: int = -1
    input_free: bool = False
    variables_on_ps: bool = False

    @property
    def module(self) -> str:
        return "reprokit.bench.probe"

    def flags(self) -> list[str]:
        return (["--out", self.out, "--trace-step", str(self.trace_step)]
                + (["--input-free"] if self.input_free else [])
                + (["--variables-on-ps"] if self.variables_on_ps else []))


@dataclass(frozen=True)
class UpdateProbe:
    """What the update check attaches to a trainer run (reprokit.updates.probe): the kit's known
    batches in place of the data set, and the weights recorded step by step into `out`; with
    `jobs`, the oracle's steps from given weights."""

    out: str
    seed: int
    jobs: str = ""
    snapshots: int = 0  # the most it records (0: one before the first step and one after every step)

    @property
    def module(self) -> str:
        return "reprokit.updates.probe"

    def flags(self) -> list[str]:
        return (["--out", self.out, "--seed", str(self.seed)] + (["--jobs", self.jobs] if self.jobs else [])
                + (["--snapshots", str(self.snapshots)] if self.snapshots else []))


@dataclass(frozen=True)
class HostedPs:
    """The ps task served by the trainer's own process (the kit's `client_hosts_ps` setting)."""

    cluster: Cluster
    role_server: str
    threads: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class WaitFor:
    """The servers a trainer waits for before it trains (a Swarm client: role_server --wait-for)."""

    addresses: tuple[str, ...]
    role_server: str


@dataclass(frozen=True)
class Trainer:
    """One trainer program of a run: where its file is and how it is started."""

    python: str
    sources: str
    file: str  # e.g. cifar10_cluster_train.py, in `sources`
    instruments: Instrument | None = None

    def argv(self, flags: list[str], hosted: HostedPs | None = None, wait: WaitFor | None = None) -> list[str]:
        """The trainer with ``flags``; with ``hosted`` the same process first serves the ps task;
        with ``wait`` it first waits until every server answers."""
        if self.instruments is not None:
            if hosted is not None and not isinstance(self.instruments, Instruments):
                raise KitError(f"{self.instruments.module} cannot serve the ps inside the trainer's process",
                               "run it with --tuning default")
            serve = [] if hosted is None else ["--serve-ps", json.dumps(hosted.cluster.spec),
                                               "--ps-threads", ",".join(map(str, hosted.threads))]
            return [self.python, "-m", self.instruments.module, "--sources", self.sources,
                    "--trainer", self.file.removesuffix(".py"), *self.instruments.flags(), *serve, "--", *flags]
        path = f"{self.sources}/{self.file}"
        if wait is not None:
            return [self.python, wait.role_server, "--wait-for", ",".join(wait.addresses), "--run-trainer", path,
                    "--", *flags]
        if hosted is None:
            return [self.python, path, *flags]
        server = server_args(hosted.cluster, "ps", 0, python=self.python, role_server=hosted.role_server,
                             threads=hosted.threads)
        return [*server, "--run-trainer", path, "--", *flags]

    def env(self) -> dict[str, str]:
        # The probe is a module of the kit: the trainer's process must find the package.
        return {"PYTHONPATH": PACKAGE_PARENT} if self.instruments is not None else {}


def server_args(cluster: Cluster, job: str, task: int, *, python: str, role_server: str,
                threads: tuple[int, int] = (0, 0), from_tf_config: bool = False) -> list[str]:
    """role_server.py serving one task of the ClusterSpec, told by its flags or, with
    ``from_tf_config``, by the TF_CONFIG of its environment; with its thread pools if set."""
    told = ["--from-tf-config"] if from_tf_config else [
        "--cluster", json.dumps(cluster.spec), "--job", job, "--task", str(task)]
    argv = [python, role_server, *told]
    if threads != (0, 0):
        argv += ["--intra-op-threads", str(threads[0]), "--inter-op-threads", str(threads[1])]
    return argv


def server_role(cluster: Cluster, job: str, task: int, *, python: str, role_server: str, cpus: str,
                threads: tuple[int, int] = (0, 0), env: dict[str, str] | None = None,
                config: str | None = None) -> RoleSpec:
    """A ps or worker task: role_server.py serving its slot of the ClusterSpec, or, given a
    TF_CONFIG ``config``, the slot that TF_CONFIG names."""
    name = server_name(job, task)
    argv = server_args(cluster, job, task, python=python, role_server=role_server, threads=threads,
                       from_tf_config=config is not None)
    told = {} if config is None else {"TF_CONFIG": config}
    return RoleSpec(name, argv, cpus, {**BASE_ENV, **(env or {}), **told}, cluster.addresses()[name])


def client_role(cluster: Cluster, training: TrainingArgs, trainer: Trainer, *, cpus: str,
                env: dict[str, str] | None = None, hosted: HostedPs | None = None,
                wait: WaitFor | None = None) -> RoleSpec:
    """The patched cluster trainer, its session on grpc://<ps>: PS_NODE and PS_PORT say where.
    With ``hosted``, the same process serves the ps task first: the session's target is then
    that in-process server's own, so TensorFlow hands its calls to the master directly."""
    flags = [*training.flags(), f"--num_workers={len(cluster.workers)}"]
    role_env = {**BASE_ENV, **trainer.env(), **(env or {}),
                "PS_NODE": cluster.ps_host, "PS_PORT": str(cluster.ps_port)}
    return RoleSpec(CLIENT, trainer.argv(flags, hosted, wait), cpus, role_env)


def standalone_role(training: TrainingArgs, trainer: Trainer, *, cpus: str,
                    env: dict[str, str] | None = None) -> RoleSpec:
    """The patched standalone trainer: one tower, on the CPUs it is pinned to."""
    return RoleSpec(STANDALONE, trainer.argv(training.flags()), cpus, {**BASE_ENV, **trainer.env(), **(env or {})})


def cluster_roles(cluster: Cluster, training: TrainingArgs, trainer: Trainer, cpus: dict[str, str], *,
                  role_server: str, threads: tuple[int, int] = (0, 0), env: dict[str, str] | None = None,
                  server_env: dict[str, str] | None = None, client_hosts_ps: bool = False,
                  client_waits: bool = False) -> list[RoleSpec]:
    """ps, workers, then the client: the order they must start in (the ps inside the client
    process when `client_hosts_ps`; the client waiting for every server when `client_waits`)."""
    python = trainer.python
    workers = [server_role(cluster, "worker", i, python=python, role_server=role_server,
                           cpus=cpus[worker(i)], threads=threads, env=server_env)
               for i in range(len(cluster.workers))]
    if client_hosts_ps:
        hosted = HostedPs(cluster, role_server, threads)
        return workers + [client_role(cluster, training, trainer, cpus=cpus[CLIENT], env=env, hosted=hosted)]
    ps = server_role(cluster, "ps", 0, python=python, role_server=role_server, cpus=cpus[PS], threads=threads,
                     env=server_env)
    wait = WaitFor(tuple(cluster.addresses().values()), role_server) if client_waits else None
    return [ps, *workers, client_role(cluster, training, trainer, cpus=cpus[CLIENT], env=env, wait=wait)]


# --- today's TensorFlow: the cluster told by TF_CONFIG (reprokit.programs' shapes) ---------

# ParameterServerStrategy's workers hang, with no error, when their server has one inter-op thread
# (a worker pinned to one CPU gets one by default): the scheduled step and its receives need two.
COORDINATED_SERVER_INTER_OP = 2
ALL_REDUCE_STALL = (
    "MultiWorkerMirroredStrategy's all-reduce waits for every worker: a collective that never completes, "
    "a known failure of it on CPU, stops every worker at the same step with no error. Compare the last "
    "lines of each worker's log; if every worker is alive and silent, run again")


def tf_config(cluster: dict[str, list[str]], job: str, task: int) -> str:
    """TF_CONFIG, as TensorFlow's cluster resolver (and Kubeflow's TFJob) has it: the whole
    cluster, and which task of which job this process is."""
    return json.dumps({"cluster": cluster, "task": {"type": job, "index": task}}, sort_keys=True)


def all_reduce_roles(cluster: Cluster, training: TrainingArgs, trainer: Trainer, cpus: dict[str, str], *,
                     env: dict[str, str] | None = None) -> list[RoleSpec]:
    """Every worker runs the trainer (MultiWorkerMirroredStrategy), at its worker address; worker 0,
    the chief, logs the steps and is the main role. Listed worker 0 last, so it starts last."""
    spec = {"worker": list(cluster.workers)}
    roles = []
    for i, address in enumerate(cluster.workers):
        role_env = {**BASE_ENV, **trainer.env(), **(env or {}), "TF_CONFIG": tf_config(spec, "worker", i)}
        roles.append(RoleSpec(worker(i), trainer.argv(training.flags()), cpus[worker(i)], role_env,
                              peer_address=address, ends_itself=i > 0, stall_hint=ALL_REDUCE_STALL))
    return roles[1:] + roles[:1]


def coordinated_roles(cluster: Cluster, training: TrainingArgs, trainer: Trainer, cpus: dict[str, str], *,
                      role_server: str, threads: tuple[int, int] = (0, 0), env: dict[str, str] | None = None,
                      server_env: dict[str, str] | None = None, client_waits: bool = False) -> list[RoleSpec]:
    """ps and worker servers, each told its task by TF_CONFIG, then the trainer as the coordinator
    (job "chief", at the client's address: ParameterServerStrategy's coordinator serves too)."""
    if cluster.chief is None:
        raise KitError("a coordinator needs an address of its own in the cluster (TF_CONFIG's chief), "
                       "and this cluster has none", "run the tf2-ps program on the local, hosts, docker or "
                       "swarm backend, which give the client one")
    spec = {"chief": [cluster.chief], "ps": [cluster.ps], "worker": list(cluster.workers)}
    threads = (threads[0], max(threads[1], COORDINATED_SERVER_INTER_OP))
    servers = [server_role(cluster, job, task, python=trainer.python, role_server=role_server,
                           cpus=cpus[server_name(job, task)], threads=threads, env=server_env,
                           config=tf_config(spec, job, task))
               for job, task in [("ps", 0), *(("worker", i) for i in range(len(cluster.workers)))]]
    wait = WaitFor(tuple(cluster.addresses().values()), role_server) if client_waits else None
    client_env = {**BASE_ENV, **trainer.env(), **(env or {}), "TF_CONFIG": tf_config(spec, "chief", 0)}
    client = RoleSpec(CLIENT, trainer.argv(training.flags(), wait=wait), cpus[CLIENT], client_env,
                      peer_address=cluster.chief)
    return [*servers, client]
