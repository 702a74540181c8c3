"""The programs a run can train: which trainer file patches/series makes for each program and mode,
and how each program's cluster runs.

The article's two trainers; the lesson's, stacked on them, whose standalone trainer is its cluster
trainer's fair baseline; and today's TensorFlow (tf2), stacked on the lesson's: the same model and
data with tf.distribute, all-reduce (MultiWorkerMirroredStrategy) and a coordinator
(ParameterServerStrategy), both against one TF2 standalone. These are facts about the series, so
they live beside it; a test keeps them true (every file named here is one the series makes).
"""

from __future__ import annotations

from reprokit.names import CLIENT, STANDALONE, worker

PROGRAMS: dict[str, dict[str, str]] = {
    "article": {"standalone": "cifar10_standalone_train.py", "cluster": "cifar10_cluster_train.py"},
    "lesson": {"standalone": "cifar10_lesson_standalone_train.py", "cluster": "cifar10_lesson_cluster_train.py"},
    "tf2-mirrored": {"standalone": "cifar10_tf2_standalone_train.py", "cluster": "cifar10_tf2_mirrored_train.py"},
    "tf2-ps": {"standalone": "cifar10_tf2_standalone_train.py", "cluster": "cifar10_tf2_ps_train.py"},
}

# How each program's cluster runs; reprokit.run.roles builds the roles of each shape.
#   session:     ps and worker servers, and a client whose session runs the graph on grpc://<ps>
#   all-reduce:  every worker runs the trainer, told the cluster by TF_CONFIG; worker 0 logs
#   coordinator: ps and worker servers told the cluster by TF_CONFIG, and the trainer as the
#                coordinator (TF_CONFIG's job "chief", the article's client), which schedules steps
SESSION, ALL_REDUCE, COORDINATOR = "session", "all-reduce", "coordinator"
CLUSTER_SHAPES: dict[str, str] = {"article": SESSION, "lesson": SESSION, "tf2-mirrored": ALL_REDUCE,
                                  "tf2-ps": COORDINATOR}


def trainer_files() -> set[str]:
    """Every trainer file a program runs, in any mode."""
    return {file for modes in PROGRAMS.values() for file in modes.values()}


def main_role(program: str, mode: str) -> str:
    """The role whose log holds the trainer's step lines: the standalone, the client (which
    builds the graph, or coordinates), or worker 0, the chief of an all-reduce cluster."""
    if mode == "standalone":
        return STANDALONE
    return worker(0) if CLUSTER_SHAPES[program] == ALL_REDUCE else CLIENT
