"""One traced step as a Chrome trace: a file chrome://tracing and https://ui.perfetto.dev open.

The probe keeps every device's op times from the step's RunMetadata (see reprokit.bench.timeline's
`Trace`); here they become the Trace Event Format: {"traceEvents": [...]} with one process per
device, an "X" (complete) event per op with its start and duration in microseconds, and "M"
(metadata) events naming the processes and threads. The trainer's own Session.run call is one more
process: in a cluster the client has no device of its own in the step stats, and this row shows
the step as the client waited for it.

A device runs ops on several threads at once, and a viewer stacks the events of one thread as if
they nested, so each device's ops are dealt out to lanes (the "threads" here) in which no two
overlap. Times start at the step's first event, so the file reads from 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.bench.timeline import Op, Trace, is_input, op_type
from reprokit.files import write_text

CLIENT = "the trainer's Session.run (client)"
# A viewer's events: strings and numbers, and args (a string-valued dict) to show on a click.
Event = dict[str, str | int | dict[str, str | int]]


def lanes(spans: list[tuple[int, int]]) -> list[int]:
    """Each span's lane, the lowest one free when it starts: no two spans of a lane overlap."""
    lane_ends: list[int] = []
    assigned = [0] * len(spans)
    for index in sorted(range(len(spans)), key=lambda i: spans[i]):
        start, stop = spans[index]
        free = next((lane for lane, end in enumerate(lane_ends) if end <= start), len(lane_ends))
        if free == len(lane_ends):
            lane_ends.append(stop)
        else:
            lane_ends[free] = stop
        assigned[index] = free
    return assigned


def _names(pid: int, process: str, threads: int, thread: str) -> list[Event]:
    """The "M" events that name a process, keep it in this order, and name its lanes."""
    events: list[Event] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process}},
        {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
    return events + [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                      "args": {"name": f"{thread} {tid}"}} for tid in range(threads)]


def _op_event(op: Op, pid: int, tid: int, origin_us: int) -> Event:
    args: dict[str, str | int] = {"node": op["name"], "label": op["label"]}
    if "all_us" in op:
        args["all_end_rel_us"] = op["all_us"]  # later than the op's end for async ops (receives, get_next)
    return {"name": op_type(op["label"]), "cat": "input" if is_input(op["label"]) else "compute", "ph": "X",
            "ts": op["start_us"] - origin_us, "dur": op["us"], "pid": pid, "tid": tid, "args": args}


def chrome_trace(trace: Trace) -> dict[str, list[Event] | dict[str, float]]:
    """The step's Chrome trace: the client's call (when the probe timed it), then each device."""
    starts = [o["start_us"] for ops in trace["devices"].values() for o in ops]
    run_start = trace.get("run_start_us")
    origin = min(starts + ([run_start] if run_start is not None else []), default=0)
    events: list[Event] = []
    if run_start is not None:
        events += _names(0, CLIENT, 1, "call")
        events.append({"name": "Session.run", "cat": "client", "ph": "X", "ts": run_start - origin,
                       "dur": round(trace["wall_s"] * 1e6), "pid": 0, "tid": 0,
                       "args": {"step": trace.get("step", -1)}})
    for pid, (device, ops) in enumerate(sorted(trace["devices"].items()), start=1):
        assigned = lanes([(o["start_us"], o["start_us"] + o["us"]) for o in ops])
        events += _names(pid, device, max(assigned, default=-1) + 1, "ops, lane")
        events += [_op_event(op, pid, tid, origin) for op, tid in zip(ops, assigned)]
    return {"traceEvents": events, "otherData": {"step": trace.get("step", -1), "origin_us": origin,
                                                  "wall_ms": round(trace["wall_s"] * 1000, 1)}}


def write_chrome_trace(trace: Trace, path: Path) -> Path:
    """Write the step's Chrome trace to ``path``, whole or not at all."""
    return write_text(path, json.dumps(chrome_trace(trace)))
