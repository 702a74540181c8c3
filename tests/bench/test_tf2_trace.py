"""A TF2 trainer's traced step: TensorFlow's profile (an XSpace) to the probe's ops (fast, on a real
XSpace proto), the task from TF_CONFIG, and real traced steps of the tf2 standalone and of both
workers of the all-reduce cluster, through the bench (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.bench.harness import Bench
from reprokit.bench.tf2_trace import join_worker_traces, task_device, xspace_ops
from reprokit.bench.timeline import Trace, breakdown, is_collective
from reprokit.run.process_backend import Loopback, ProcessBackend
from tests.support.kit import KitInputs, kit_options, kit_settings

WORKER = "/job:worker/replica:0/task:{}/device:CPU:0"


def xspace(events: list[tuple[str, int, int]], line_start_ns: int, plane: str = "/host:CPU",
           thread: str = "tf_Compute/42") -> bytes:
    """A serialized XSpace with one plane, one thread (line) and these (name, offset us, duration us)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    host = space.planes.add(id=1, name=plane)
    line = host.lines.add(id=42, name=thread, timestamp_ns=line_start_ns)
    for index, (name, offset_us, duration_us) in enumerate(events, start=1):
        host.event_metadata[index].id = index
        host.event_metadata[index].name = name
        line.events.add(metadata_id=index, offset_ps=offset_us * 1_000_000, duration_ps=duration_us * 1_000_000)
    return space.SerializeToString()


def test_the_profiles_tensorflow_ops_inside_the_step_become_the_probes_ops() -> None:
    """Ops named "<node>:<type>" (metadata after # dropped); framework events and ops outside the
    step's window are left out; times are the wall clock's microseconds."""
    space = xspace([("cifar10/conv1/Conv2D:Conv2D", 100, 30), ("FunctionRun", 90, 500),
                    ("CollectiveReduceV2:CollectiveReduceV2#id=7,step=3#", 200, 60),
                    ("early/MatMul:MatMul", 0, 5)], line_start_ns=5_000_000_000)
    ops = xspace_ops(space, 5_000_050, 5_000_400)
    assert [{"name": "cifar10/conv1/Conv2D", "label": "cifar10/conv1/Conv2D = Conv2D()", "start_us": 5_000_100,
             "us": 30, "thread": 42},
            {"name": "CollectiveReduceV2", "label": "CollectiveReduceV2 = CollectiveReduceV2()",
             "start_us": 5_000_200, "us": 60, "thread": 42}] == ops


def test_a_profile_timed_from_its_own_start_is_moved_to_the_wall_clock() -> None:
    space = xspace([("a/MatMul:MatMul", 300, 5)], line_start_ns=1_000)
    (op,) = xspace_ops(space, 2_000_000_100, 2_000_000_900, profiler_started_us=2_000_000_000)
    assert 2_000_000_301 == op["start_us"]


def test_tf_datas_own_threads_are_left_out_they_work_ahead_of_the_step() -> None:
    space = xspace([("transpose:Transpose", 10, 5)], 1_000_000, thread="tf_data_private_threadpool/7")
    assert [] == xspace_ops(space, 0, 10**12)


def test_only_the_host_plane_is_read() -> None:
    space = xspace([("a/MatMul:MatMul", 10, 5)], 1_000_000, plane="/device:GPU:0")
    assert [] == xspace_ops(space, 0, 10**12)


def test_the_task_comes_from_tf_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert ("/job:localhost/replica:0/task:0/device:CPU:0", "") == task_device()
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}))
    assert (WORKER.format(1), "-worker1") == task_device()
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}}))
    assert (WORKER.format(0), "") == task_device()


def test_an_all_reduce_counts_as_transfers_and_waiting_not_compute() -> None:
    """Each worker computes 100 us and waits 300 us in its collective: the step is 400 us, of
    which compute is 100 us and the rest transfers and waiting."""
    def worker(start: int) -> list:
        return [{"name": "c", "label": "c = Conv2D()", "start_us": start, "us": 100},
                {"name": "r", "label": "r = CollectiveReduceV2()", "start_us": start + 100, "us": 300}]
    trace: Trace = {"wall_s": 0.0004, "devices": {WORKER.format(0): worker(0)}}
    joined = join_worker_traces(trace, [{"wall_s": 0.0004, "devices": {WORKER.format(1): worker(5)}}])
    found = breakdown(joined)
    assert [WORKER.format(0), WORKER.format(1)] == [d.device for d in found.devices]
    assert (100.0 / 1000, 0.0, 300.0 / 1000) == (found.compute_ms, found.ps_ms, found.other_ms)
    assert is_collective("r = CollectiveReduceV2()") and not is_collective("c = Conv2D()")


def _bench(kit_inputs: KitInputs, runs: Path) -> Bench:
    options = kit_options(11, 2)
    settings = kit_settings(runs, kit_inputs)
    return Bench(settings, ProcessBackend(Loopback.choose("auto"), settings.watchdog), options, lambda _: None, "bench")


def _chrome_processes(folder: Path, name: str) -> set[str]:
    events = json.loads((folder / name).read_text())["traceEvents"]
    named = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    return {named[e["pid"]] for e in events if e["ph"] == "X" and e["cat"] != "client"}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("no_leftover_processes")
def test_a_traced_tf2_step_has_every_workers_ops_and_a_chrome_trace_of_both(kit_inputs: KitInputs,
                                                                            tmp_path: Path) -> None:
    """The standalone's step 3 and the all-reduce cluster's: each worker traced its own step; the
    bench joined them; the Chrome trace has events for both workers' devices; the profile stays."""
    bench = _bench(kit_inputs, tmp_path / "runs")
    alone = bench.run("standalone", label="-trace", program="tf2-mirrored", trace_step=3)
    cluster = bench.run("cluster", 2, "-trace", program="tf2-mirrored", trace_step=3)

    alone_trace = alone.probe["trace"]
    assert isinstance(alone_trace, dict) and 3 == alone_trace["step"]
    assert ["/job:localhost/replica:0/task:0/device:CPU:0"] == list(alone_trace["devices"])
    alone_folder = bench.dir / alone.folder
    # oneDNN's kernels: _MklNativeFusedConv2D and the like
    assert any("Conv2D" in op["label"] for op in alone_trace["devices"]["/job:localhost/replica:0/task:0/device:CPU:0"])
    assert list((alone_folder / "profile").glob("plugins/profile/*/*.xplane.pb"))

    trace = cluster.probe["trace"]
    assert isinstance(trace, dict)
    assert {WORKER.format(0), WORKER.format(1)} == set(trace["devices"])
    steps = breakdown(trace)
    assert all(d.busy_ms > 0 for d in steps.devices) and 0 == steps.ps_ms
    assert 0 < steps.compute_ms and 0 < steps.wall_ms
    folder = bench.dir / cluster.folder
    assert {WORKER.format(0), WORKER.format(1)} == _chrome_processes(folder, trace["chrome_trace"])
    assert (folder / "probe-worker1.json").exists()
    # Each worker's own profile, read back by that worker alone: two processes never run the same
    # ops at the same microseconds (one profile read by both would give both devices one list).
    assert list((folder / "profile-worker1").glob("plugins/profile/*/*.xplane.pb"))
    starts = [[op["start_us"] for op in trace["devices"][WORKER.format(i)]] for i in (0, 1)]
    assert starts[0] != starts[1]
    # Each worker's own copy of every model variable, on its own device (no ps).
    variables = cluster.probe["variables"]
    assert isinstance(variables, dict) and 20 == len(variables)
    assert {WORKER.format(0), WORKER.format(1)} == set(variables.values())
    assert WORKER.format(1) == variables["cifar10/conv1/weights (worker1's copy)"]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("no_leftover_processes")
def test_the_coordinators_probe_sees_every_variable_made_on_the_ps(kit_inputs: KitInputs, tmp_path: Path) -> None:
    """tf2-ps probed untraced (the bench's placement run): the 10 trainable variables, each made on
    the ps by the strategy, none elsewhere; the trainer ran as it would without the probe."""
    bench = _bench(kit_inputs, tmp_path / "runs")
    placed = bench.run("cluster", 2, "-placement", program="tf2-ps", trace_step=-1)
    variables = placed.probe["variables"]
    assert isinstance(variables, dict) and 10 == len(variables) and "trace" not in placed.probe
    assert {"/job:ps/replica:0/task:0/device:CPU:0"} == set(variables.values())
    assert placed.step_rates
