"""Where one step's time goes, read from real traces captured by reprokit.bench.probe."""

from __future__ import annotations

import json

from reprokit.bench.timeline import _union_us, breakdown, device_time
from tests.support import SAMPLES as ALL_SAMPLES

SAMPLES = ALL_SAMPLES / "traces"


def _trace(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())["trace"]


def test_busy_time_is_the_union_of_overlapping_op_intervals():
    """Two overlapping ops and a disjoint one count their covered time once."""
    assert 25 == _union_us([(0, 10), (5, 15), (20, 30)])


def test_the_input_dequeue_counts_as_input_wait_not_compute():
    """A QueueDequeueManyV2 op is input time; everything else on the device is compute."""
    ops = [{"label": "t/shuffle_batch = QueueDequeueManyV2(x)", "start_us": 0, "us": 4000},
           {"label": "t/conv = Conv2D(a, b)", "start_us": 4000, "us": 6000}]
    dev = device_time("/job:localhost/replica:0/task:0/device:CPU:0", ops)
    assert (6.0, 4.0) == (dev.busy_ms, dev.input_ms)


def test_a_standalone_step_is_mostly_compute():
    """The real standalone trace: one device, no ps, compute the largest part of the wall time."""
    b = breakdown(_trace("standalone_step.json"))
    assert 1 == len(b.devices)
    assert 0 == b.ps_ms
    assert b.compute_ms > 0.8 * b.wall_ms


def test_a_cluster_step_shows_both_workers_and_the_ps():
    """The real cluster trace: ps and two workers; the parts add up to the wall time."""
    b = breakdown(_trace("cluster_step.json"))
    jobs = sorted(d.device.split("/replica")[0] for d in b.devices)
    assert ["/job:ps", "/job:worker", "/job:worker"] == jobs
    assert b.ps_ms > 0
    parts = sum(ms for _, ms, _ in b.rows())
    assert abs(b.wall_ms - parts) < 0.5


def test_the_sample_cluster_step_shows_worker_1_waiting_for_worker_0():
    """With the variables on worker 0, worker 1 idles early in the step, for much of it."""
    b = breakdown(_trace("cluster_step.json"))
    worker1 = next(d for d in b.devices if "/job:worker/replica:0/task:1" in d.device)
    assert worker1.longest_idle_ms > b.wall_ms / 3
    assert worker1.idle_from_ms < b.wall_ms / 10
