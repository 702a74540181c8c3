"""The probe's traced step: step stats to JSON (fast, shaped like TensorFlow's), and a real
cluster step written as a Chrome trace (slow)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from reprokit.bench.chrome_trace import CLIENT
from reprokit.bench.probe import NodeStats, step_trace
from reprokit.programs import PROGRAMS
from reprokit.run.cluster import make_layout
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.run.roles import Instruments
from tests.support.kit import STEPS, KitInputs, kit_options, kit_watchdog
from tests.support.processes import free_port

PS = "/job:ps/replica:0/task:0/device:CPU:0"
WORKER = "/job:worker/replica:0/task:{}/device:CPU:0"


@dataclass
class Node:
    """The fields of TensorFlow's NodeExecStats that the probe reads."""

    node_name: str
    timeline_label: str
    all_start_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    thread_id: int = 7


@dataclass
class Device:
    """The fields of TensorFlow's DeviceStepStats that the probe reads."""

    device: str
    node_stats: Iterable[NodeStats] = ()


def test_step_stats_become_every_devices_ops_and_the_clients_call() -> None:
    """Names, labels, start and both ends of each op, per device; the call's start in microseconds."""
    get_next = Node("t/IteratorGetNext", "t/IteratorGetNext = IteratorGetNext(t/It)", 1_000_500, 40, 900)
    trace = step_trace([Device(WORKER.format(0), [get_next]), Device(PS)], 25, 1.0, 1.25)
    expected = {"step": 25, "wall_s": 0.25, "run_start_us": 1_000_000, "devices": {
        WORKER.format(0): [{"name": "t/IteratorGetNext", "label": "t/IteratorGetNext = IteratorGetNext(t/It)",
                            "start_us": 1_000_500, "us": 40, "all_us": 900, "thread": 7}],
        PS: []}}
    assert expected == trace


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.usefixtures("no_leftover_processes")
def test_a_real_traced_cluster_step_opens_as_a_chrome_trace_of_every_role(kit_inputs: KitInputs,
                                                                         tmp_path: Path) -> None:
    """ps, 2 workers and the client, one step traced: probe.json names trace-step<N>.json beside
    it, which json.load reads, with op events on the ps's and both workers' devices and the
    client's Session.run."""
    backend = ProcessBackend(Loopback.choose("auto", first_port=free_port()), kit_watchdog())
    options = kit_options(STEPS, 2)
    traced_step = STEPS - 1
    roles = PROGRAMS["article"].roles("cluster", options.steps, options.workers, options.tuning,
                                      make_layout("spread", 2), backend, kit_inputs.sources_dir, kit_inputs.data_dir,
                                      tmp_path / "train", Instruments(str(tmp_path / "probe.json"), traced_step))
    outcome = backend.run(tmp_path, roles, "client", None)
    assert outcome.ok, outcome.message
    probe = json.loads((tmp_path / "probe.json").read_text())
    assert f"trace-step{traced_step}.json" == probe["trace"]["chrome_trace"]
    with (tmp_path / probe["trace"]["chrome_trace"]).open() as stream:
        events = json.load(stream)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    with_ops = {names[e["pid"]] for e in events if e["ph"] == "X"}
    assert {CLIENT, PS, WORKER.format(0), WORKER.format(1)} <= with_ops
