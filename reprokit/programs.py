"""The programs a run can train, each one whole: its trainer files, how its cluster runs, the roles
it starts and the role whose log holds its steps.

The article's two trainers; the lesson's, stacked on them, whose standalone trainer is its cluster
trainer's fair baseline; and today's TensorFlow (tf2): the lesson's standalone ported to TF2, and
on that port two strategies, all-reduce (MultiWorkerMirroredStrategy) and a coordinator
(ParameterServerStrategy), both against the port as their standalone. The trainer files are facts about
patches/series; a test keeps them true (every file named here is one the series makes). This is the
only place a program is typed: options, help texts, the bench, mutants and claims.yaml's check
read the names from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reprokit.errors import KitError
from reprokit.names import CLIENT, PS, STANDALONE, cluster_role_names, worker
from reprokit.run.request_ids import RequestIdFix
from reprokit.run.roles import (
    Instrument,
    RoleSpec,
    Trainer,
    TrainingArgs,
    all_reduce_roles,
    cluster_roles,
    coordinated_roles,
    standalone_role,
)

if TYPE_CHECKING:
    from reprokit.run.backends import Backend
    from reprokit.run.cluster import CpuLayout
    from reprokit.run.tuning import Tuning

# How a program's cluster runs; reprokit.run.roles builds the roles of each shape.
#   session:     ps and worker servers, and a client whose session runs the graph on grpc://<ps>
#   all-reduce:  every worker runs the trainer, told the cluster by TF_CONFIG; worker 0 logs
#   coordinator: ps and worker servers told the cluster by TF_CONFIG, and the trainer as the
#                coordinator (TF_CONFIG's job "chief", the article's client), which schedules steps
SESSION, ALL_REDUCE, COORDINATOR = "session", "all-reduce", "coordinator"
# What ParameterServerStrategy's coordinator logs for each function it puts back in its queue
# after the worker running it was lost: the function runs again, on whichever worker is free.
PUT_BACK = "Putting back a closure after it failed"


@dataclass(frozen=True)
class Lever:
    """A setting of a program's cluster trainer that keeps its model, its hyperparameters and what
    it learns (a flag its patch defines, off by default): the bench measures each as a row of its
    own, alone and with the program's other levers. It reaches the cluster only; its standalone,
    the baseline of every row of the program, stays as it is."""

    name: str
    flags: tuple[str, ...]

    @staticmethod
    def label(names: Sequence[str]) -> str:
        """How a run with these levers is named: 'lever pack', 'lever a+b'."""
        return "lever " + "+".join(names)


@dataclass(frozen=True)
class Program:
    name: str
    standalone: str  # the standalone trainer file patches/series makes
    cluster: str  # the cluster trainer file
    shape: str  # SESSION, ALL_REDUCE or COORDINATOR
    placement: str  # where its cluster trainer asks its variables to live and its ops to run
    levers: tuple[Lever, ...] = ()
    # Its cluster survives a lost worker only as a whole: every role started again resumes from the
    # cluster's last checkpoint (reprokit.run.faults). No single role of it is restarted.
    resumes_whole: bool = False

    def lever_flags(self, names: Sequence[str]) -> tuple[str, ...]:
        """The cluster trainer's flags for the levers ``names``; a KitError for a lever it lacks."""
        known = {lever.name: lever for lever in self.levers}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise KitError(f"the {self.name} program has no lever {', '.join(unknown)}",
                           f"its levers: {', '.join(known) or 'none'}")
        return tuple(flag for name in names for flag in known[name].flags)

    def trainer(self, mode: str) -> str:
        return self.standalone if mode == STANDALONE else self.cluster

    @property
    def asynchronous(self) -> bool:
        """Workers update apart (one worker's batch an update), not as one synchronous step."""
        return self.shape == COORDINATOR

    def role_names(self, mode: str, workers: int) -> list[str]:
        """The roles one mode of it starts: the standalone; every worker of an all-reduce cluster;
        else the ps, the workers and the client."""
        if mode == STANDALONE:
            return [STANDALONE]
        if self.shape == ALL_REDUCE:
            return [worker(i) for i in range(workers)]
        return cluster_role_names(workers)

    @property
    def rerun_marker(self) -> str:
        """The main role's log line for a function run again after a lost worker ('' if it has none)."""
        return PUT_BACK if self.shape == COORDINATOR else ""

    def why_not_restarted(self, role: str) -> str:
        """'' for a role its cluster takes back when it is restarted (reprokit.run.faults); else
        why a restart would not help, told where the run fails."""
        if role in (STANDALONE, self.main_role("cluster")):
            return f"the {role} runs the training loop: the run is its run"
        if self.resumes_whole:
            return ("a lost role is taken back only with the whole cluster, restarted from its last checkpoint, "
                    "which the kit does on the local and hosts backends")
        if self.shape == COORDINATOR:
            if role == PS:
                return ("the ps holds the variables, and ParameterServerStrategy's coordinator ends with "
                        "UnavailableError when it is lost; taking it back needs the cluster restarted from "
                        "a checkpoint, which the kit does not do yet")
            return ""  # a worker: the coordinator puts its functions back and uses it again once it serves
        return (f"the {self.name} program's client runs every step as one session call across the cluster, "
                "and a restarted server holds none of the step's state; the program saves its first checkpoint "
                "at step 0 and the next at its end, so there is nothing to start again from")

    def main_role(self, mode: str) -> str:
        """The role whose log holds the trainer's step lines: the standalone, the client (which
        builds the graph, or coordinates), or worker 0, the chief of an all-reduce cluster."""
        if mode == STANDALONE:
            return STANDALONE
        return worker(0) if self.shape == ALL_REDUCE else CLIENT

    def roles(self, mode: str, steps: int, workers: int, tuning: Tuning, layout: CpuLayout, backend: Backend,
              sources: Path, data_dir: Path, train_dir: Path, instruments: Instrument | None = None,
              fix: RequestIdFix = RequestIdFix(None), trainer_file: str | None = None,
              levers: Sequence[str] = ()) -> list[RoleSpec]:
        """The roles of one mode, in start order: what a reproduction and the benchmark both run.
        Every TensorFlow process gets the request-id fix when there is one (request_ids.py).
        ``trainer_file``: another trainer in ``sources`` than this program's (a mutant's, or the
        benchmark's ablation); ``levers``: the cluster trainer's levers to set."""
        flags = self.lever_flags(levers) if mode != STANDALONE else ()
        training = TrainingArgs(steps, str(data_dir), str(train_dir), flags)
        trainer = Trainer(backend.python, str(sources), trainer_file or self.trainer(mode), instruments)
        env, server_env = {**tuning.env, **fix.env()}, {**tuning.server_env, **fix.env()}
        if mode == STANDALONE:
            return [standalone_role(training, trainer, cpus=layout.for_role(STANDALONE), env=env)]
        if self.shape != SESSION and tuning.client_hosts_ps:
            raise KitError(f"the {tuning.name!r} settings put the ps inside the client's session, and the "
                           f"{self.name} program has no session", "run it with --tuning default")
        cluster = backend.cluster(workers)
        if self.shape == ALL_REDUCE:
            return all_reduce_roles(cluster, training, trainer, layout.cpus, env=env)
        if self.shape == COORDINATOR:
            return coordinated_roles(cluster, training, trainer, layout.cpus, role_server=backend.role_server,
                                     threads=tuning.server_threads, env=env, server_env=server_env,
                                     client_waits=backend.client_waits)
        return cluster_roles(cluster, training, trainer, layout.cpus,
                             role_server=backend.role_server, threads=tuning.server_threads, env=env,
                             server_env=server_env, client_hosts_ps=tuning.client_hosts_ps,
                             client_waits=backend.client_waits)


PROGRAMS: dict[str, Program] = {p.name: p for p in (
    Program("article", "cifar10_standalone_train.py", "cifar10_cluster_train.py", SESSION,
            "The cluster trainer wraps each tower in tf.device('/job:worker/task:%d/cpu:0') and expects the ps "
            "to hold the shared model. But cifar10._variable_on_cpu opens its own tf.device('/cpu:0'), which "
            "names only a device type: TensorFlow merges it with the enclosing scope, so every variable is "
            "created where tower 0 is, on worker 0, and worker 1 fetches the whole model (1,068,298 parameters, "
            "4.27 MB) from worker 0 every step, which worker 0 serves while "
            "computing its own tower. The ps keeps only global_step, the learning rate and the gradient "
            "averaging."),
    Program("lesson", "cifar10_lesson_standalone_train.py", "cifar10_lesson_cluster_train.py", SESSION,
            "tf.train.replica_device_setter puts every variable on the ps and leaves each tower's ops on its "
            "own worker: a worker reads the model from the ps, computes its batch's gradients on its CPU and "
            "sends them back; the update is applied on the ps, beside the variables."),
    # The lesson with a checkpoint every few steps and a session that restores the last one: the TF1
    # way of surviving a lost worker or ps (docs/faults.md); its standalone is the lesson's.
    Program("lesson-resumable", "cifar10_lesson_standalone_train.py", "cifar10_lesson_resumable_train.py",
            SESSION, "As the lesson's: tf.train.replica_device_setter puts every variable on the ps; and every "
            "10 steps the client saves them, and restores the last save when the cluster is started again.",
            resumes_whole=True),
    Program("tf2-mirrored", "cifar10_tf2_standalone_train.py", "cifar10_tf2_mirrored_train.py", ALL_REDUCE,
            "MultiWorkerMirroredStrategy gives every worker its own copy of every variable, on its own CPU; "
            "each worker computes its batch's gradients there, a collective all-reduce sums them over the "
            "workers, and every worker applies the same update to its own copy. There is no ps.",
            # The all-reduce in packs of 256 KiB (4 packs of the model's 4.27 MB of gradients) instead
            # of one after the whole backward pass, so that the first packs can go while the rest is
            # computed.
            (Lever("pack", ("--bytes_per_pack=262144",)),), resumes_whole=True),
    Program("tf2-ps", "cifar10_tf2_standalone_train.py", "cifar10_tf2_ps_train.py", COORDINATOR,
            "ParameterServerStrategy creates every variable on a ps (round-robin over the ps tasks; here "
            "there is one). The coordinator only schedules: each step runs on a free worker's CPU, which "
            "reads the variables from the ps and writes its updates back to them, the moving averages' too."),
)}

# For help texts: "article, lesson, tf2-mirrored or tf2-ps".
NAMES = ", ".join(list(PROGRAMS)[:-1]) + " or " + list(PROGRAMS)[-1]


def program(name: str) -> Program:
    """The program called ``name``; a KitError naming the known ones otherwise."""
    try:
        return PROGRAMS[name]
    except KeyError:
        raise KitError(f"unknown program {name!r}", f"use one of: {NAMES}") from None
