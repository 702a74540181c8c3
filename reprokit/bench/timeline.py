"""Where one training step's time goes, from TensorFlow's step stats (a full trace).

TensorFlow records, per device, when each op ran. A person wants four numbers per step:
compute (the model's ops), input (a tower waiting on its input pipeline), the ps's work
(gradient averaging), and the rest of the step's wall time: transfers of gradients and
variables between the tasks (an all-reduce's collectives too), and waiting. Op times overlap
across threads, so busy time is the union of the op intervals, not their sum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

# The ops whose time is input, not compute: while one runs, a tower waits for its batch. Both
# programs must be counted alike or their breakdowns do not compare: the article's program reads
# through queues (shuffle_batch dequeues), the lesson's through tf.data (an iterator's get_next,
# which waits on the dataset's own ops; those count too whenever a step's stats show them).
QUEUE_INPUT_OPS = ("QueueDequeueManyV2", "QueueDequeueMany", "QueueDequeueUpToV2", "QueueDequeueUpTo",
                   "QueueDequeueV2", "QueueDequeue")
TF_DATA_INPUT_OPS = ("IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional",
                     "MultiDeviceIteratorGetNextFromShard")
TF_DATA_DATASET_OP = re.compile(r"\w+Dataset(V\d+)?")  # MapDataset, PrefetchDataset, ShuffleDatasetV3...
# An all-reduce's collective ops (CollectiveReduceV2, ...) are transfers and waiting for the peer
# workers, not compute: they count in neither part, so they land in "transfers and waiting".
COLLECTIVE_OP = re.compile(r"Collective\w+")


class _OpRequired(TypedDict):
    name: str  # the node's name, e.g. tower_0/conv1/Conv2D
    label: str  # TensorFlow's timeline label: "<name> = <op type>(<inputs>)"
    start_us: int  # when it started, microseconds of the host's wall clock
    us: int  # until its computation ended (op_end_rel_micros)


class Op(_OpRequired, total=False):
    all_us: int  # until its outputs were delivered (all_end_rel_micros): longer for async ops
    thread: int  # the thread that ran it


class _TraceRequired(TypedDict):
    wall_s: float  # the trainer's Session.run call, start to return
    devices: dict[str, list[Op]]  # every device's ops, as the step stats name the device


class Trace(_TraceRequired, total=False):
    """One traced step as the probe writes it to probe.json (older files lack the optional keys)."""

    step: int
    run_start_us: int  # when the trainer called Session.run, on the same clock as the ops
    chrome_trace: str  # the Chrome trace of this step, a file beside probe.json


@dataclass(frozen=True)
class DeviceTime:
    device: str
    busy_ms: float  # union of all op intervals except the input ops
    input_ms: float  # union of the input ops' intervals: waiting for the input pipeline
    ops: int
    longest_idle_ms: float = 0.0  # the longest stretch with no op running, inside the step
    idle_from_ms: float = 0.0  # when that stretch began, from the step's first op anywhere
    # When its last compute op ended, and each collective op's (start, ms), from the same origin:
    # whether an all-reduce's packs ran beside the backward pass or after it. Older files lack them.
    compute_end_ms: float = 0.0
    collectives: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class StepBreakdown:
    wall_ms: float
    devices: list[DeviceTime]
    compute_ms: float  # the busiest worker's (or the single machine's) compute
    input_ms: float  # the longest input wait of any tower
    ps_ms: float  # the ps's own busy time (0 standalone)
    other_ms: float  # wall - compute - input - ps: transfers, coordination, waiting

    def rows(self) -> list[tuple[str, float, float]]:
        """(part, ms, share of wall) for a table."""
        parts = [("compute", self.compute_ms), ("input pipeline wait", self.input_ms),
                 ("ps (averaging, updates)", self.ps_ms), ("transfers and waiting", self.other_ms)]
        return [(name, ms, ms / self.wall_ms if self.wall_ms else 0.0) for name, ms in parts]


def _union_us(spans: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for start, stop in sorted(spans):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def op_type(label: str) -> str:
    """The op type in a timeline label, e.g. 'QueueDequeueManyV2' in
    '[mklcpu 0.8MB 0.8MB] tower_0/shuffle_batch = QueueDequeueManyV2(tower_0/shuffle_batch/...'."""
    return label.split("=", 1)[-1].strip().split("(", 1)[0]


def is_input(label: str) -> bool:
    op = op_type(label)
    return op in QUEUE_INPUT_OPS or op in TF_DATA_INPUT_OPS or TF_DATA_DATASET_OP.fullmatch(op) is not None


def _longest_gap(spans: list[tuple[int, int]]) -> tuple[int, int]:
    """(length, start) of the longest time between ops, in microseconds."""
    best, at, end = 0, 0, None
    for start, stop in sorted(spans):
        if end is not None and start - end > best:
            best, at = start - end, end
        end = stop if end is None else max(end, stop)
    return best, at


def is_collective(label: str) -> bool:
    return COLLECTIVE_OP.fullmatch(op_type(label)) is not None


def device_time(device: str, ops: list[Op], step_start_us: int | None = None) -> DeviceTime:
    compute = [(o["start_us"], o["start_us"] + o["us"]) for o in ops
               if not is_input(o["label"]) and not is_collective(o["label"])]
    waiting = [(o["start_us"], o["start_us"] + o["us"]) for o in ops if is_input(o["label"])]
    gap, at = _longest_gap([(o["start_us"], o["start_us"] + o["us"]) for o in ops])
    origin = step_start_us if step_start_us is not None else min((s for s, _ in compute), default=0)
    collectives = sorted((o["start_us"], o["us"]) for o in ops if is_collective(o["label"]))
    return DeviceTime(device, _union_us(compute) / 1000, _union_us(waiting) / 1000, len(ops),
                      round(gap / 1000, 1), round((at - origin) / 1000, 1) if gap else 0.0,
                      round((max((stop for _, stop in compute), default=origin) - origin) / 1000, 1),
                      tuple((round((start - origin) / 1000, 1), round(us / 1000, 1)) for start, us in collectives))


def breakdown(trace: Trace) -> StepBreakdown:
    """From the probe's trace JSON: {'wall_s': ..., 'devices': {device: [ops]}}."""
    start = min((o["start_us"] for ops in trace["devices"].values() for o in ops), default=0)
    devices = [device_time(name, ops, start) for name, ops in sorted(trace["devices"].items())]
    ps = [d for d in devices if "/job:ps/" in d.device]
    workers = [d for d in devices if d not in ps] or devices
    compute = max(d.busy_ms for d in workers)
    input_ms = max(d.input_ms for d in workers)
    ps_ms = sum(d.busy_ms for d in ps)
    wall = trace["wall_s"] * 1000
    return StepBreakdown(round(wall, 1), devices, round(compute, 1), round(input_ms, 1), round(ps_ms, 1),
                         round(max(0.0, wall - compute - input_ms - ps_ms), 1))
