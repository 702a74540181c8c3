"""The update check's instrument inside a trainer process: the kit's data layer and a recorder.

    python -m reprokit.updates.probe --sources build/patched --trainer cifar10_cluster_train \
        --out runs/<id>/updates --seed 0 [--jobs runs/<id>/updates/jobs.json] -- <trainer flags>

It imports the patched trainer as a module and changes none of its files. Two things are put in
place before the trainer builds anything:

- **The data layer.** Every batch a trainer trains on comes from the kit, not from the data set:
  batch ``index`` of stream ``stream`` is 128 images (24x24x3, standardised, as the tutorial's
  input is) and labels drawn by TensorFlow's stateless generators from the seed ``(seed, stream,
  index)``, so that any process draws the same batch again, on whichever device it is built. Input
  pipeline k of a process (a TF1 tower's ``distorted_inputs()``, the k-th built) or worker k of an
  all-reduce cluster (its TF_CONFIG task) reads stream k, batch t at step t. A TF1 tower's input
  is drawn from a step number the probe feeds in every ``Session.run`` of the training loop; a TF2
  trainer's ``distorted_dataset()`` becomes a dataset of the stream's batches. A
  ParameterServerStrategy coordinator traces one dataset function for every worker, so its
  workers all read stream 0, each from its own iterator: worker w's n-th batch is batch n. No
  data set is read, or downloaded.
- **The recorder.** The model's ten weights and the global step are written before the first
  training step and after every one (``<who>-<n>.npz``, who being ``main``, ``worker<i>`` or the
  coordinator's ``main``), with what the data layer saw (``<who>.json``). A ParameterServerStrategy
  coordinator's scheduled functions are run one at a time (each ``schedule`` joined at once), so
  that every function is one update the recorder sees whole: the program's own asynchrony is then
  the order of the functions, not interleaved reads.

With ``--jobs`` the process is the oracle: the program's standalone trainer, told a batch size of
256 (two batches of 128, what a synchronous step of two workers combines), runs one step per job:
before it, the job's weights and global step are loaded into its variables; its batch is the
concatenation of the job's two (stream, index) batches; after it, the weights are written
(``oracle-<j>.npz``). One step from given weights on a given batch is the arithmetic the verdict
holds every cluster step to (reprokit.updates.verdict).

Like the bench's probe it needs only the standard library, numpy and TensorFlow: it also runs
where the kit is not installed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# The tutorial's model (cifar10.inference): its ten weights, by the names its checkpoints give them.
MODEL = tuple(f"{layer}/{part}" for layer in ("conv1", "conv2", "local3", "local4", "softmax_linear")
              for part in ("weights", "biases"))
GLOBAL_STEP = "global_step"
IMAGE = (24, 24, 3)  # cifar10.IMAGE_SIZE, cropped, with its three colours
CLASSES = 10
BATCH = 128  # cifar10.py's --batch_size: one tower's, or one worker's, batch
ORACLE_BATCH = 2 * BATCH  # two workers' batches side by side: what one synchronous step of both combines
STREAM_STRIDE = 1_000_000  # a stream's batches are numbered below this


def known_batch(tf: Any, seed: int, stream: Any, index: Any, size: int = BATCH) -> tuple[Any, Any]:
    """Batch ``index`` of stream ``stream`` as tensors: the same numbers in every process that asks
    (TensorFlow's stateless generators, seeded with the three numbers)."""
    key = tf.stack([tf.cast(seed, tf.int64), tf.cast(stream, tf.int64) * STREAM_STRIDE + tf.cast(index, tf.int64)])
    images = tf.random.stateless_normal([size, *IMAGE], seed=key, dtype=tf.float32)
    labels = tf.random.stateless_uniform([size], seed=key + 1, minval=0, maxval=CLASSES, dtype=tf.int32)
    return images, labels


def joined_batch(tf: Any, seed: int, parts: Any) -> tuple[Any, Any]:
    """An oracle job's batch: the two (stream, index) batches of ``parts`` one after the other."""
    first, second = known_batch(tf, seed, parts[0][0], parts[0][1]), known_batch(tf, seed, parts[1][0], parts[1][1])
    return tf.concat([first[0], second[0]], 0), tf.concat([first[1], second[1]], 0)


def tutorial_name(name: str) -> str | None:
    """'conv1/weights' for a TF1 variable of that name or a TF2 template's 'cifar10/conv1/weights:0';
    None for any other variable (a moving average, 'conv1/weights/ExponentialMovingAverage', among them)."""
    last = "/".join(name.split(":")[0].split("/")[-2:])
    return last if last in MODEL else None


def task_name() -> str:
    """Whose files these are: worker<i> for a worker that runs the trainer (an all-reduce
    cluster's), else main (a standalone, a client, a coordinator)."""
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {}
    return f"worker{int(task.get('index', 0))}" if task.get("type") == "worker" else "main"


def task_index() -> int:
    task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task") or {}
    return int(task.get("index", 0)) if task.get("type") == "worker" else 0


class Recorder:
    """Writes the weights as they are, numbered, and what the data layer saw."""

    def __init__(self, out: Path, prefix: str, limit: int = 0) -> None:
        self.out, self.prefix, self.count, self.limit = out, prefix, 0, limit
        self.facts: dict[str, Any] = {"pipelines": 0, "streams": []}
        out.mkdir(parents=True, exist_ok=True)

    def wants(self) -> bool:
        """Whether another snapshot is to be written (a run longer than the check records on)."""
        return not self.limit or self.count < self.limit

    def write(self, values: dict[str, np.ndarray]) -> None:
        missing = [name for name in (*MODEL, GLOBAL_STEP) if name not in values]
        if missing:
            raise RuntimeError(f"the update probe found no variable {missing[0]!r} in the trainer")
        arrays: dict[str, Any] = dict(values)  # savez's own keyword would clash with a name in the stubs
        np.savez(self.out / f"{self.prefix}-{self.count}.npz", **arrays)
        self.count += 1
        self.facts["snapshots"] = self.count
        (self.out / f"{self.prefix}.json").write_text(json.dumps(self.facts, indent=1))

    def pipeline(self, stream: int, size: int) -> None:
        self.facts["pipelines"] += 1
        self.facts["streams"].append(stream)
        self.facts["batch_size"] = size
        (self.out / f"{self.prefix}.json").write_text(json.dumps(self.facts, indent=1))


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description="the update check's data layer and recorder")
    parser.add_argument("--sources", required=True)
    parser.add_argument("--trainer", required=True, help="module name, e.g. cifar10_cluster_train")
    parser.add_argument("--out", required=True, help="the folder the snapshots go to")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--jobs", help="the oracle's jobs (jobs.json beside jobs.npz)")
    parser.add_argument("--snapshots", type=int, default=0, help="the most snapshots to write (0: all)")
    return parser.parse_args(argv[:cut]), argv[cut + 1:]


def main(argv: list[str]) -> None:
    args, flags = parse_args(argv)
    jobs = json.loads(Path(args.jobs).read_text()) if args.jobs else None
    states = np.load(Path(args.jobs).with_suffix(".npz")) if args.jobs else None
    out = Path(args.out)
    sys.path.insert(0, str(Path(args.sources).resolve()))
    if jobs is not None:  # the oracle: one step a job, each on two batches' worth
        flags = [f for f in flags if not f.startswith(("--max_steps=", "--batch_size="))]
        flags += [f"--max_steps={len(jobs)}", f"--batch_size={ORACLE_BATCH}"]
    sys.argv = [f"{args.trainer}.py", *flags]
    trainer = importlib.import_module(args.trainer)
    import cifar10
    import tensorflow

    cifar10.maybe_download_and_extract = lambda: None  # the data layer reads no data set

    recorder = Recorder(out, "oracle" if jobs is not None else task_name(), args.snapshots)
    if tensorflow.executing_eagerly():
        _tf2(trainer, args.seed, jobs, states, recorder)
    else:
        _tf1(trainer, args.seed, jobs, states, recorder)


# --- TF1: a session runs every step ---------------------------------------------------------------

def _tf1(trainer: Any, seed: int, jobs: list[dict[str, Any]] | None, states: Any, recorder: Recorder) -> None:
    import cifar10
    import tensorflow.compat.v1 as tf

    inputs: list[Any] = []  # each pipeline's placeholder: the step (cluster) or the job's parts (oracle)

    def placeholder_inputs() -> tuple[Any, Any]:
        # Drawn where the tower's device scope puts it: the batch is made on that device.
        stream = len(inputs)
        if jobs is not None:
            parts = tf.placeholder(tf.int64, [2, 2], name="kit_parts")
            inputs.append(parts)
            recorder.pipeline(stream, ORACLE_BATCH)
            return joined_batch(tf, seed, parts)
        step = tf.placeholder(tf.int64, [], name="kit_step")
        inputs.append(step)
        recorder.pipeline(stream, tf.app.flags.FLAGS.batch_size)
        return known_batch(tf, seed, stream, step, tf.app.flags.FLAGS.batch_size)

    cifar10.distorted_inputs = placeholder_inputs
    if hasattr(trainer, "distorted_inputs"):  # the lesson's tf.data pipeline, in its own module
        trainer.distorted_inputs = placeholder_inputs
    original_run = tf.Session.run
    steps = [0]

    def feeds(step: int) -> dict[Any, Any]:
        if jobs is not None:
            return {parts: jobs[min(step, len(jobs) - 1)]["batches"] for parts in inputs}
        return {placeholder: step for placeholder in inputs}

    def weights(session: Any) -> dict[str, Any]:
        found = {}
        for variable in session.graph.get_collection("variables"):
            name = variable.op.name if variable.op.name == GLOBAL_STEP else tutorial_name(variable.op.name)
            if name is not None and name not in found:
                found[name] = variable
        return found

    def snapshot(session: Any) -> None:
        if not recorder.wants():
            return
        found = weights(session)
        values = original_run(session, {name: v.value() for name, v in found.items()})
        recorder.write({name: np.asarray(value, dtype=np.float64) for name, value in values.items()})

    def run(self: Any, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        # The training loop's calls are on the main thread; `sess.run([train_op, loss])` is a step.
        if threading.current_thread() is not threading.main_thread() or not inputs:
            return original_run(self, fetches, feed_dict, options, run_metadata)
        is_step = isinstance(fetches, list) and len(fetches) == 2
        step = steps[0]
        fed = {**(feed_dict or {}), **feeds(step)}
        if not is_step:
            return original_run(self, fetches, fed, options, run_metadata)
        if jobs is not None:
            for name, variable in weights(self).items():
                variable.load(states[f"{step}/{name}"].astype(variable.dtype.base_dtype.as_numpy_dtype), self)
        elif step == 0:
            snapshot(self)
        result = original_run(self, fetches, fed, options, run_metadata)
        steps[0] += 1
        snapshot(self)
        return result

    tf.Session.run = run
    tf.app.run(trainer.main)


# --- TF2: a tf.function runs every step -----------------------------------------------------------

def _tf2(trainer: Any, seed: int, jobs: list[dict[str, Any]] | None, states: Any, recorder: Recorder) -> None:
    import tensorflow as tf

    variables: dict[str, Any] = {}

    def record(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        # Below any strategy's creator: the variable this process really holds (its own copy of a
        # mirrored one, or the ps's).
        made = next_creator(**kwargs)
        name = tutorial_name(made.name)
        if name is not None and kwargs.get("trainable", True):
            variables.setdefault(name, made)
        elif not kwargs.get("trainable", True) and made.dtype == tf.int64 and made.shape.rank == 0:
            variables.setdefault(GLOBAL_STEP, made)  # the trainers' step count, their only int64 scalar
        return made

    def snapshot() -> None:
        if recorder.wants():
            recorder.write({name: np.asarray(v.numpy(), dtype=np.float64) for name, v in variables.items()})

    def known_dataset() -> Any:
        if jobs is not None:
            recorder.pipeline(0, ORACLE_BATCH)
            parts = tf.data.Dataset.from_tensor_slices(np.asarray([job["batches"] for job in jobs], dtype=np.int64))
            return parts.map(lambda part: joined_batch(tf, seed, part))
        stream = task_index()
        recorder.pipeline(stream, BATCH)
        return tf.data.Dataset.range(STREAM_STRIDE).map(lambda index: known_batch(tf, seed, stream, index))

    trainer.distorted_dataset = known_dataset
    calls = [0]
    original_function = tf.function

    def function(*args: Any, **kwargs: Any) -> Any:
        made = original_function(*args, **kwargs)
        target = args[0] if args and callable(args[0]) else None
        if target is None or getattr(target, "__name__", "") != "train_step":
            return made

        def train_step(*step_args: Any, **step_kwargs: Any) -> Any:
            if jobs is not None:
                for name, variable in variables.items():
                    variable.assign(states[f"{calls[0]}/{name}"].astype(variable.dtype.as_numpy_dtype))
            elif calls[0] == 0:
                snapshot()
            result = made(*step_args, **step_kwargs)
            calls[0] += 1
            snapshot()
            return result
        return train_step

    tf.function = function
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator
    original_schedule = coordinator.schedule

    def schedule(self: Any, fn: Any, args: Any = None, kwargs: Any = None) -> Any:
        if not recorder.wants():  # past the recorded functions: the program's own asynchrony again
            return original_schedule(self, fn, args=args, kwargs=kwargs)
        if calls[0] == 0:
            snapshot()
        result = original_schedule(self, fn, args=args, kwargs=kwargs)
        self.join()  # one function at a time: each is one whole update the recorder sees
        calls[0] += 1
        snapshot()
        return result

    coordinator.schedule = schedule
    with tf.variable_creator_scope(record):
        tf.compat.v1.app.run(trainer.main)


if __name__ == "__main__":
    main(sys.argv[1:])
