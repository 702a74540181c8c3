"""A traced step as a Chrome trace a person opens: built from the real sample step stats."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from reprokit.bench.chrome_trace import CLIENT, lanes, write_chrome_trace
from reprokit.bench.timeline import Trace
from tests.support import SAMPLES

TRACES = SAMPLES / "traces"
Events = list[dict[str, object]]


def _written(sample: str, tmp_path: Path, run_start_us: int | None = None) -> tuple[Trace, Events]:
    """The sample's trace, and the events of its Chrome trace as json.load reads the file back."""
    trace: Trace = json.loads((TRACES / sample).read_text())["trace"]
    if run_start_us is not None:
        trace["run_start_us"] = run_start_us
    path = write_chrome_trace(trace, tmp_path / "trace-step20.json")
    with path.open() as stream:
        events: Events = json.load(stream)["traceEvents"]
    return trace, events


def _process_names(events: Events) -> dict[object, object]:
    return {e["pid"]: e["args"]["name"] for e in events  # type: ignore[index]
            if e["ph"] == "M" and e["name"] == "process_name"}


def test_each_device_is_a_process_with_one_complete_event_per_op(tmp_path: Path) -> None:
    """The cluster sample: ps, worker 0 and worker 1 are named processes, each with its ops as X events."""
    trace, events = _written("cluster_step.json", tmp_path)
    names = _process_names(events)
    per_device = Counter(names[e["pid"]] for e in events if e["ph"] == "X")
    assert {device: len(ops) for device, ops in trace["devices"].items()} == dict(per_device)


def test_complete_events_carry_what_a_viewer_needs_in_microseconds_from_the_first_op(tmp_path: Path) -> None:
    """name, ph, ts, dur, pid, tid on every X event; the earliest starts at 0, none before."""
    trace, events = _written("standalone_step.json", tmp_path)
    complete = [e for e in events if e["ph"] == "X"]
    assert all({"name", "ph", "ts", "dur", "pid", "tid"} <= set(e) for e in complete)
    assert 0 == min(int(str(e["ts"])) for e in complete)
    dequeue = next(e for e in complete if e["name"] == "QueueDequeueManyV2")
    op = next(o for o in trace["devices"][next(iter(trace["devices"]))] if o["name"] == "tower_0/shuffle_batch")
    assert (op["us"], "input") == (dequeue["dur"], dequeue["cat"])


def test_no_two_events_of_one_thread_overlap(tmp_path: Path) -> None:
    """Ops that ran at once on a device are on different lanes, so a viewer draws every one."""
    _, events = _written("cluster_step.json", tmp_path)
    by_thread: dict[tuple[object, object], list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "X":
            start, dur = int(str(e["ts"])), int(str(e["dur"]))
            by_thread.setdefault((e["pid"], e["tid"]), []).append((start, start + dur))
    overlaps = [key for key, spans in by_thread.items()
                if any(a[1] > b[0] for a, b in zip(sorted(spans), sorted(spans)[1:]))]
    assert [] == overlaps
    assert len(by_thread) > 3  # the devices did run ops at once


def test_the_trainers_session_run_is_the_clients_process(tmp_path: Path) -> None:
    """When the probe timed the call, the client is a process too, its one event as long as the wall time."""
    trace, events = _written("cluster_step.json", tmp_path, run_start_us=1796226094995000)
    client_pid = next(pid for pid, name in _process_names(events).items() if name == CLIENT)
    (call,) = [e for e in events if e["ph"] == "X" and e["pid"] == client_pid]
    assert (0, round(trace["wall_s"] * 1e6)) == (call["ts"], call["dur"])


def test_lanes_reuse_the_lowest_free_one() -> None:
    """An op starting when another ends shares its lane; one that overlaps takes the next."""
    assert [0, 1, 0, 1] == lanes([(0, 10), (5, 15), (10, 20), (15, 25)])
