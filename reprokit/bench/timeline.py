"""Where one training step's time goes, from TensorFlow's step stats (a full trace).

TensorFlow records, per device, when each op ran. A person wants four numbers per step:
compute (the model's ops), input (a tower waiting on its input queue), the ps's work
(gradient averaging), and the rest of the step's wall time: transfers of gradients and
variables between the tasks, and waiting. Op times overlap across threads, so busy time is
the union of the op intervals, not their sum.
"""

from __future__ import annotations

from dataclasses import dataclass

INPUT_OPS = ("QueueDequeueMany", "QueueDequeue")


@dataclass(frozen=True)
class DeviceTime:
    device: str
    busy_ms: float  # union of all op intervals except the input dequeue
    input_ms: float  # time the dequeue of a batch took: waiting for the input pipeline
    ops: int
    longest_idle_ms: float = 0.0  # the longest stretch with no op running, inside the step
    idle_from_ms: float = 0.0  # when that stretch began, from the step's first op anywhere


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


def _is_input(label: str) -> bool:
    op = label.split("=", 1)[-1].strip().split("(", 1)[0]
    return op.startswith(INPUT_OPS)


def _longest_gap(spans: list[tuple[int, int]]) -> tuple[int, int]:
    """(length, start) of the longest time between ops, in microseconds."""
    best, at, end = 0, 0, None
    for start, stop in sorted(spans):
        if end is not None and start - end > best:
            best, at = start - end, end
        end = stop if end is None else max(end, stop)
    return best, at


def device_time(device: str, ops: list[dict], step_start_us: int | None = None) -> DeviceTime:
    compute = [(o["start_us"], o["start_us"] + o["us"]) for o in ops if not _is_input(o["label"])]
    waiting = [o["us"] for o in ops if _is_input(o["label"])]
    gap, at = _longest_gap([(o["start_us"], o["start_us"] + o["us"]) for o in ops])
    origin = step_start_us if step_start_us is not None else min((s for s, _ in compute), default=0)
    return DeviceTime(device, _union_us(compute) / 1000, max(waiting, default=0) / 1000, len(ops),
                      round(gap / 1000, 1), round((at - origin) / 1000, 1) if gap else 0.0)


def breakdown(trace: dict) -> StepBreakdown:
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
