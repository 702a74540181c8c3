"""Where one step's time goes, read from real traces captured by reprokit.bench.probe."""

from __future__ import annotations

import json

from reprokit.bench.timeline import (
    Op,
    Trace,
    _union_us,
    breakdown,
    device_time,
    is_input,
)
from tests.support import SAMPLES as ALL_SAMPLES

SAMPLES = ALL_SAMPLES / "traces"
LOCALHOST = "/job:localhost/replica:0/task:0/device:CPU:0"


def _trace(name: str) -> Trace:
    trace: Trace = json.loads((SAMPLES / name).read_text())["trace"]
    return trace


def _op(label: str, start_us: int, us: int) -> Op:
    return {"name": label.split(" = ", 1)[0], "label": label, "start_us": start_us, "us": us}


def test_busy_time_is_the_union_of_overlapping_op_intervals() -> None:
    """Two overlapping ops and a disjoint one count their covered time once."""
    assert 25 == _union_us([(0, 10), (5, 15), (20, 30)])


def test_the_input_dequeue_counts_as_input_wait_not_compute() -> None:
    """A QueueDequeueManyV2 op is input time; everything else on the device is compute."""
    ops = [_op("t/shuffle_batch = QueueDequeueManyV2(x)", 0, 4000), _op("t/conv = Conv2D(a, b)", 4000, 6000)]
    dev = device_time(LOCALHOST, ops)
    assert (6.0, 4.0) == (dev.busy_ms, dev.input_ms)


def test_tf_datas_get_next_counts_as_input_wait_like_the_queue_dequeue() -> None:
    """The lesson's IteratorGetNext waits for its batch as the article's dequeue does: input, not compute."""
    ops = [_op("t/IteratorGetNext = IteratorGetNext(t/OneShotIterator)", 0, 4000),
           _op("t/conv = Conv2D(a, b)", 4000, 6000)]
    dev = device_time(LOCALHOST, ops)
    assert (6.0, 4.0) == (dev.busy_ms, dev.input_ms)


def test_every_tf_data_wait_and_dataset_op_is_input_and_model_ops_are_not() -> None:
    """get_next in its three forms and dataset ops (with a version suffix or not) are input."""
    inputs = ["a = IteratorGetNextSync(i)", "b = MultiDeviceIteratorGetNextFromShard(i, n)",
              "c = PrefetchDataset(d, n)", "d = ShuffleDatasetV3(d, n, s, t, r)", "e = QueueDequeueUpToV2(q, n)",
              "[mklcpu 0.8MB 0.8MB] f = QueueDequeueManyV2(q, n)"]
    model = ["g = Conv2D(a, b)", "h = _MklNativeFusedMatMul(a, b)", "i = DatasetToGraph(d)", "j = Identity(x)"]
    assert [True] * len(inputs) + [False] * len(model) == [is_input(label) for label in inputs + model]


def test_the_input_wait_of_overlapping_input_ops_is_counted_once() -> None:
    """A get_next and the dataset op it waits on, running at once, are one wait."""
    ops = [_op("t/IteratorGetNext = IteratorGetNext(t/Iterator)", 0, 5000),
           _op("t/MapDataset = MapDataset(t/Range)", 1000, 2000)]
    assert 5.0 == device_time(LOCALHOST, ops).input_ms


def test_a_standalone_step_is_mostly_compute() -> None:
    """The real standalone trace: one device, no ps, compute the largest part of the wall time."""
    b = breakdown(_trace("standalone_step.json"))
    assert 1 == len(b.devices)
    assert 0 == b.ps_ms
    assert b.compute_ms > 0.8 * b.wall_ms


def test_a_cluster_step_shows_both_workers_and_the_ps() -> None:
    """The real cluster trace: ps and two workers; the parts add up to the wall time."""
    b = breakdown(_trace("cluster_step.json"))
    jobs = sorted(d.device.split("/replica")[0] for d in b.devices)
    assert ["/job:ps", "/job:worker", "/job:worker"] == jobs
    assert b.ps_ms > 0
    parts = sum(ms for _, ms, _ in b.rows())
    assert abs(b.wall_ms - parts) < 0.5


def test_the_sample_cluster_step_shows_worker_1_waiting_for_worker_0() -> None:
    """With the variables on worker 0, worker 1 idles early in the step, for much of it."""
    b = breakdown(_trace("cluster_step.json"))
    worker1 = next(d for d in b.devices if "/job:worker/replica:0/task:1" in d.device)
    assert worker1.longest_idle_ms > b.wall_ms / 3
    assert worker1.idle_from_ms < b.wall_ms / 10


def test_the_lessons_tf_data_wait_is_counted_as_input_like_the_articles_dequeue() -> None:
    """The real lesson cluster trace: each worker's IteratorGetNext is its input time, so the
    lesson's breakdown compares with the article's, whose QueueDequeueManyV2 is input too."""
    trace = _trace("lesson_cluster_step.json")
    workers = {name: ops for name, ops in trace["devices"].items() if "/job:worker/" in name}
    expected = {name: sum(o["us"] for o in ops if o["label"].split(" = ")[1].startswith("IteratorGetNext(")) / 1000
                for name, ops in workers.items()}
    lesson = breakdown(trace)
    assert expected == {d.device: d.input_ms for d in lesson.devices if d.device in workers}
    assert round(max(expected.values()), 1) == lesson.input_ms > 0
    assert breakdown(_trace("cluster_step.json")).input_ms > 0


def test_each_collective_is_placed_against_the_end_of_its_devices_compute() -> None:
    """An all-reduce in two packs: the first starts before the backward pass ends (it ran beside
    it), the second after; both count as transfers and waiting, not compute."""
    ops = [_op("conv1/Conv2D = Conv2D(x)", 1_000, 40_000),
           _op("grads/local3 = MatMul(g)", 41_000, 30_000),
           _op("allreduce/pack0 = CollectiveReduceV2(g)", 60_000, 5_000),
           _op("grads/conv1 = Conv2DBackpropFilter(g)", 71_000, 20_000),
           _op("allreduce/pack1 = CollectiveReduceV2(g)", 91_000, 3_000)]
    found = device_time(LOCALHOST, ops, step_start_us=0)
    assert (91.0, ((60.0, 5.0), (91.0, 3.0))) == (found.compute_end_ms, found.collectives)
    assert 90.0 == found.busy_ms
    assert () == device_time(LOCALHOST, ops[:2], step_start_us=0).collectives
