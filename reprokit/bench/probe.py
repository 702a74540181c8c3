"""Run a patched trainer with instruments attached, unchanged otherwise.

    python -m reprokit.bench.probe --sources build/patched --trainer cifar10_cluster_train \
        --out probe.json [--trace-step 20] [--input-free] [--variables-on-ps] -- <trainer flags>

It imports the trainer as a module and changes nothing in its files:
- `--trace-step N` runs training step N with a full trace (RunMetadata step stats), writes
  each device's op times to the JSON, for the "where the time goes" breakdown, and the same step
  as a Chrome trace beside it (`trace-stepN.json`, named in the JSON) for a person to open; a
  TF2 trainer's step N is traced by TensorFlow's profiler instead (reprokit.bench.tf2_trace);
- `--input-free` replaces `cifar10.distorted_inputs()` with an in-memory batch: the same graph
  without the input pipeline, the bound one core reaches with no input work at all;
- `--variables-on-ps` puts the model variables on the ps, for the placement lesson's comparison;
- `--placement-only` builds the graph, writes where its variables are placed, and stops before
  the session is made: no server and no data reading are needed.
The devices of the model variables are written in every case: as the graph requests them, or, for
a TF2 trainer, as each variable was made (every worker of an all-reduce cluster writes its own).
Like role_server.py it needs only the standard library, numpy and TensorFlow (and the kit's
own standard-library modules: timeline, chrome_trace, files).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from reprokit.bench.chrome_trace import write_chrome_trace
from reprokit.bench.tf2_trace import task_device, wrap_step_functions
from reprokit.bench.timeline import Op, Trace
from reprokit.files import write_json


# What the probe reads of TensorFlow's objects (TensorFlow publishes no types for them).
class NodeStats(Protocol):
    node_name: str
    timeline_label: str
    all_start_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    thread_id: int


class DeviceStats(Protocol):
    device: str
    node_stats: Iterable[NodeStats]


class _OpOfVariable(Protocol):
    name: str


class _Variable(Protocol):
    op: _OpOfVariable
    device: str


class _Graph(Protocol):
    def get_collection(self, key: str) -> list[_Variable]: ...


class _Session(Protocol):
    graph: _Graph


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        cut = argv.index("--")
        argv, flags = argv[:cut], argv[cut + 1:]
    else:
        flags = []
    parser = argparse.ArgumentParser(description="run a patched trainer with instruments")
    parser.add_argument("--sources", required=True)
    parser.add_argument("--trainer", required=True, help="module name, e.g. cifar10_cluster_train")
    parser.add_argument("--out", required=True)
    parser.add_argument("--trace-step", type=int, default=-1)
    parser.add_argument("--input-free", action="store_true")
    parser.add_argument("--variables-on-ps", action="store_true")
    parser.add_argument("--placement-only", action="store_true")
    parser.add_argument("--serve-ps", metavar="CLUSTER_JSON",
                        help="first start the ps server of this cluster in-process (client hosts the ps)")
    parser.add_argument("--ps-threads", default="0,0", help="intra,inter-op threads of that server")
    return parser.parse_args(argv), flags


def step_trace(dev_stats: Iterable[DeviceStats], step: int, started_s: float, ended_s: float) -> Trace:
    """A traced step's RunMetadata.step_stats.dev_stats as the JSON the bench reads: every
    device's ops, and the trainer's Session.run call on the same (wall) clock as the ops."""
    devices: dict[str, list[Op]] = {}
    for dev in dev_stats:
        devices[dev.device] = [{"name": node.node_name, "label": node.timeline_label,
                                "start_us": node.all_start_micros, "us": node.op_end_rel_micros,
                                "all_us": node.all_end_rel_micros, "thread": node.thread_id}
                               for node in dev.node_stats]
    return {"step": step, "wall_s": ended_s - started_s, "run_start_us": round(started_s * 1e6),
            "devices": devices}


def variable_devices(graph: _Graph) -> dict[str, str]:
    """Where the graph asks for each model variable to live."""
    return {v.op.name: v.device for v in graph.get_collection("trainable_variables")}


def main(argv: list[str]) -> None:
    args, flags = parse_args(argv)
    if args.serve_ps:
        import tensorflow as tf2

        intra, inter = (int(n) for n in args.ps_threads.split(","))
        config = tf2.compat.v1.ConfigProto(intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter)
        server = tf2.distribute.Server(tf2.train.ClusterSpec(json.loads(args.serve_ps)), job_name="ps",
                                       task_index=0, config=config, start=True)
        print(f"probe: serving /job:ps/task:0 in-process (target {server.target})", flush=True)
    sys.path.insert(0, str(Path(args.sources).resolve()))
    sys.argv = [f"{args.trainer}.py", *flags]
    trainer = importlib.import_module(args.trainer)
    import cifar10
    import numpy as np
    import tensorflow.compat.v1 as tf

    report: dict[str, object] = {"trainer": args.trainer, "input_free": args.input_free,
                    "variables_on_ps": args.variables_on_ps}
    out = Path(args.out)

    if args.input_free:
        def in_memory_inputs() -> tuple[object, object]:
            rng = np.random.default_rng(0)
            batch = tf.app.flags.FLAGS.batch_size
            with tf.device("/cpu:0"):
                images = tf.constant(rng.standard_normal((batch, 24, 24, 3), dtype=np.float32))
                labels = tf.constant(rng.integers(0, 10, batch, dtype=np.int32))
            return images, labels
        cifar10.distorted_inputs = in_memory_inputs

    if args.variables_on_ps:
        original_variable = cifar10._variable_on_cpu

        def variable_on_ps(name: str, shape: list[int], initializer: object) -> object:
            with tf.device("/job:ps/task:0/cpu:0"):
                return original_variable(name, shape, initializer)
        cifar10._variable_on_cpu = variable_on_ps

    if args.placement_only:
        def stop_before_session(self: object, *_: object, **__: object) -> None:
            report["variables"] = variable_devices(tf.get_default_graph())
            write_json(out, report)
            sys.stdout.flush()
            os._exit(0)  # the graph is all we wanted; nothing to tear down
        tf.Session.__init__ = stop_before_session

    original_run = tf.Session.run
    train_calls = [0]

    def run(self: _Session, fetches: object, feed_dict: object = None, options: object = None,
            run_metadata: object = None) -> object:
        # Only the training loop's own `sess.run([train_op, loss])`, not the queue threads'.
        is_step = threading.current_thread() is threading.main_thread() and isinstance(fetches, list) \
            and len(fetches) == 2
        if not is_step:
            return original_run(self, fetches, feed_dict, options, run_metadata)
        step = train_calls[0]
        train_calls[0] += 1
        if step == 0:
            report["variables"] = variable_devices(self.graph)
            write_json(out, report)
        if step != args.trace_step:
            return original_run(self, fetches, feed_dict, options, run_metadata)
        metadata = tf.RunMetadata()
        full_trace = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        started = time.time()
        result = original_run(self, fetches, feed_dict, full_trace, metadata)
        traced = step_trace(metadata.step_stats.dev_stats, step, started, time.time())
        chrome = write_chrome_trace(traced, out.with_name(f"trace-step{step}.json"))
        traced["chrome_trace"] = chrome.name  # beside probe.json, wherever the run folder goes
        report["trace"] = traced
        write_json(out, report)
        return result

    tf.Session.run = run
    import tensorflow

    if not tensorflow.executing_eagerly():
        tf.app.run(trainer.main)  # a session trainer: its first step writes the variables
        return
    if args.trace_step >= 0:
        _trace_tf2_step(args.trace_step, out, report)
    with tensorflow.variable_creator_scope(_tf2_variable_recorder(out, report)):
        tf.app.run(trainer.main)


def _tf2_variable_recorder(out: Path, report: dict[str, object]) -> Callable[..., Any]:
    """A TF2 trainer has no graph to ask: every trainable variable it creates passes through this
    creator, below any strategy's, so it sees the variable each device really holds (a ps's, or
    each worker's own copy of a mirrored one). Written as they come: the run may end any time."""
    mine, _ = _own_file(out)
    variables: dict[str, str] = {}

    def record(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        made = next_creator(**kwargs)
        if kwargs.get("trainable", True):
            variables[made.name.split(":")[0]] = made.device
            report["variables"] = variables
            write_json(mine, report)
        return made
    return record


def _trace_tf2_step(trace_step: int, out: Path, report: dict[str, object]) -> None:
    """A TF2 trainer has no session: its `train_step` tf.function is traced instead
    (reprokit.bench.tf2_trace); each worker of an all-reduce cluster writes its own file."""
    import tensorflow

    mine, suffix = _own_file(out)

    def on_trace(traced: Trace) -> None:
        step = traced.get("step", trace_step)
        chrome = write_chrome_trace(traced, mine.with_name(f"trace-step{step}{suffix}.json"))
        traced["chrome_trace"] = chrome.name
        report["trace"] = traced
        write_json(mine, report)

    wrap_step_functions(tensorflow, trace_step, out.parent, on_trace)


def _own_file(out: Path) -> tuple[Path, str]:
    """This task's probe file and its suffix: worker 0's (or a lone process's) is ``out``, worker i's
    ``probe-worker<i>.json`` beside it."""
    _, suffix = task_device()
    return out.with_name(f"{out.stem}{suffix}{out.suffix}"), suffix


if __name__ == "__main__":
    main(sys.argv[1:])
