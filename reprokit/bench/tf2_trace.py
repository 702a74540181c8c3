"""One training step of a TensorFlow 2 trainer, traced: the probe's `--trace-step` for trainers
that have no session to pass RunOptions to.

A TF2 trainer runs each step as a call of its `train_step` tf.function. The probe wraps that
function as the trainer defines it (it patches `tf.function` before `train()` runs; the trainer's
files stay as they are). At step N the wrapper starts TensorFlow's profiler, calls the step,
waits for its result, and stops the profiler. The profile is an XSpace: per thread of this
process, when each op ran. Its TensorFlow ops become the same `Op` records as a session's step
stats (reprokit.bench.timeline), on this task's device, so one breakdown and one Chrome trace
serve every program. The profile itself stays in the run folder (`profile/`, worker i's in
`profile-worker<i>/`), which TensorBoard's profile tab opens.

Every worker of an all-reduce cluster runs the trainer, so every one traces its own step N:
worker 0 writes the probe's file, worker i `probe-worker<i>.json` beside it, and the bench joins
their devices (`join_worker_traces`).

Only a trainer that calls `train_step` itself can be traced this way: the coordinator of
ParameterServerStrategy hands it to `ClusterCoordinator.schedule()`, which needs the tf.function
itself and runs it on the workers, so the bench does not trace that program.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprokit.bench.timeline import Op, Trace

STEP_FUNCTION = "train_step"  # the name every kit TF2 trainer gives its step's tf.function
# A TensorFlow op's profiler event is named "<node name>:<op type>", e.g. "cifar10/conv1/Conv2D:Conv2D";
# the framework's own events (function runs, executor bookkeeping) have other names.
TF_OP_EVENT = re.compile(r"(?P<name>[^:\s]+):(?P<type>_?[A-Z][A-Za-z0-9_]*)")
# tf.data's own threads prepare batches ahead of the step (prefetch), beside it; the step waits
# for them only in its iterator op (IteratorGetNext...), which the breakdown counts as input.
TF_DATA_THREADS = "tf_data"
EPOCH_NS = 10**18  # below this, a line's start counts from the profiler's start (2001-09-09 in epoch ns)


def task_device() -> tuple[str, str]:
    """(this process's device as a session's step stats name it, the suffix of its probe file):
    the task TF_CONFIG gives, or the single machine's."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = config.get("task") or {}
    job, index = task.get("type"), int(task.get("index", 0))
    if not job:
        return "/job:localhost/replica:0/task:0/device:CPU:0", ""
    return f"/job:{job}/replica:0/task:{index}/device:CPU:0", "" if index == 0 else f"-{job}{index}"


def xspace_ops(space: bytes, started_us: int, ended_us: int, profiler_started_us: int = 0) -> list[Op]:
    """The TensorFlow ops of a serialized XSpace's host plane that ran inside [started, ended]
    (wall-clock microseconds), as timeline Ops; each thread of the process is one `thread`,
    except tf.data's, which work ahead of the step.
    A profile whose times count from the profiler's start, not from the epoch, is moved to the
    wall clock by ``profiler_started_us``."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # the profile's own format

    parsed = xplane_pb2.XSpace()
    parsed.ParseFromString(space)
    ops: list[Op] = []
    for plane in parsed.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            if line.name.startswith(TF_DATA_THREADS):
                continue
            origin = line.timestamp_ns // 1000 + (profiler_started_us if line.timestamp_ns < EPOCH_NS else 0)
            for event in line.events:
                # A TraceMe may carry "#key=value#" metadata after the name.
                found = TF_OP_EVENT.fullmatch(names.get(event.metadata_id, "").split("#", 1)[0])
                start = origin + event.offset_ps // 1_000_000
                if found is None or start < started_us or start > ended_us:
                    continue
                ops.append({"name": found["name"], "label": f"{found['name']} = {found['type']}()",
                            "start_us": start, "us": max(1, event.duration_ps // 1_000_000),
                            "thread": line.id})
    return sorted(ops, key=lambda op: op["start_us"])


class StepTracer:
    """Wraps a trainer's step function: call N runs under the profiler and becomes a Trace."""

    def __init__(self, step_function: Callable[..., Any], trace_step: int, folder: Path,
                 on_trace: Callable[[Trace], None]) -> None:
        self.step_function, self.trace_step, self.folder, self.on_trace = step_function, trace_step, folder, on_trace
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.step_function, name)  # the tf.function's own attributes, unchanged

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        step, self.calls = self.calls, self.calls + 1
        if step != self.trace_step:
            return self.step_function(*args, **kwargs)
        import tensorflow as tf

        device, suffix = task_device()
        # A folder per worker: the profiler names its file after the host and the second, so two
        # workers of one host would write, and read back, the same file.
        logdir = self.folder / f"profile{suffix}"
        profiler_started = time.time()
        tf.profiler.experimental.start(str(logdir), options=tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=2, python_tracer_level=0, device_tracer_level=0))
        started = time.time()
        result = self.step_function(*args, **kwargs)
        tf.nest.map_structure(lambda value: value.numpy() if hasattr(value, "numpy") else value, result)
        ended = time.time()
        tf.profiler.experimental.stop()
        spaces = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"), key=lambda p: p.stat().st_mtime)
        ops = xspace_ops(spaces[-1].read_bytes(), round(started * 1e6), round(ended * 1e6),
                         round(profiler_started * 1e6)) if spaces else []
        self.on_trace({"step": step, "wall_s": ended - started, "run_start_us": round(started * 1e6),
                       "devices": {device: ops}})
        return result


def wrap_step_functions(tf: Any, trace_step: int, folder: Path, on_trace: Callable[[Trace], None]) -> None:
    """Patch `tf.function` so that the trainer's `train_step` comes back wrapped in a StepTracer."""
    original = tf.function

    def function(func: Any = None, *args: Any, **kwargs: Any) -> Any:
        if func is None:  # @tf.function(...) with arguments: decorate later
            return lambda inner: function(inner, *args, **kwargs)
        made = original(func, *args, **kwargs)
        if getattr(func, "__name__", "") != STEP_FUNCTION:
            return made
        return StepTracer(made, trace_step, folder, on_trace)

    tf.function = function


def join_worker_traces(trace: Trace, siblings: list[Trace]) -> Trace:
    """Worker 0's traced step with the devices of the other workers' traces of the same step."""
    devices = dict(trace["devices"])
    for other in siblings:
        devices.update(other["devices"])
    return {**trace, "devices": devices}
