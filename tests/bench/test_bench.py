"""`invoke bench` and `invoke sweep` on a tiny real run: well-formed results, no timed assertion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.bench.measure import run_bench, run_sweep
from reprokit.bench.tables import bench_lines, plot_bench, plot_sweep, sweep_lines
from reprokit.judge.speed import WARMUP_RULE
from reprokit.run.local import LocalBackend
from reprokit.run.tuning import PROFILES, profile
from tests.support.kit import KitInputs, kit_settings

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_leftover_processes")]


@pytest.fixture(scope="module")
def bench_results(kit_inputs: KitInputs, tmp_path_factory: pytest.TempPathFactory) -> dict:
    settings = kit_settings(tmp_path_factory.mktemp("bench-runs"), kit_inputs)
    lines: list[str] = []
    return run_bench(settings, LocalBackend("auto"), profile("tuned"), repetitions=1, steps=31,
                     echo=lines.append)


def test_bench_reports_positive_rates_and_their_ratio(bench_results: dict):
    """One repetition: both rates positive, speed-up = cluster / standalone, efficiency = speed-up / 2."""
    rep = bench_results["repetition_results"][0]
    assert rep["standalone"]["rate"] > 0 and rep["cluster"]["rate"] > 0
    assert rep["speedup"] == pytest.approx(rep["cluster"]["rate"] / rep["standalone"]["rate"])
    assert rep["efficiency"] == pytest.approx(rep["speedup"] / 2)
    assert bench_results["median"]["speedup"] == pytest.approx(rep["speedup"])
    assert WARMUP_RULE == bench_results["warmup_rule"]  # the one rule of every figure of the kit


def test_bench_writes_its_json_and_records_the_kit_settings(bench_results: dict):
    """bench.json is the same figures, with the tuning profile the kit chose."""
    folder = Path(bench_results["folder"])
    assert json.loads(json.dumps(bench_results)) == json.loads((folder / "bench.json").read_text())
    assert "tuned" == bench_results["tuning"]["name"]
    assert [1, 4] == list(bench_results["tuning"]["server_threads"])


def test_bench_breaks_a_step_of_each_mode_down(bench_results: dict):
    """The traced cluster step shows the ps and both workers; the standalone step one device."""
    cluster = bench_results["breakdown"]["cluster"]
    jobs = sorted(d["device"].split("/replica")[0] for d in cluster["devices"])
    assert ["/job:ps", "/job:worker", "/job:worker"] == jobs
    assert 1 == len(bench_results["breakdown"]["standalone"]["devices"])
    assert cluster["wall_ms"] > 0 and cluster["compute_ms"] > 0


def test_bench_shows_where_the_variables_live_and_the_input_free_bound(bench_results: dict):
    """The article's program puts every model variable on worker 0; the bound is a real rate."""
    devices = set(bench_results["placement"]["variables"].values())
    assert {"/job:worker/task:0/device:CPU:0"} == devices
    assert bench_results["placement"]["variables_on_ps_rate"] > 0
    assert bench_results["input_free_bound"]["rate"] > 0


def test_bench_measures_the_kits_overheads_and_cpu_use(bench_results: dict):
    """verify + apply, ready-to-first-step and teardown are measured; CPU use covers every role."""
    o = bench_results["overheads"]
    assert o["verify_and_apply_s"] >= 0 and o["cluster_ready_to_first_step_s"] > 0 and o["teardown_s"] >= 0
    assert {"worker0", "worker1", "client"} == set(bench_results["cpu_share"]["roles"])


def test_bench_renders_a_table_and_a_plot(bench_results: dict, tmp_path: Path):
    """The printed table has the median row and the article's; the plot is a PNG."""
    text = "\n".join(bench_lines(bench_results))
    assert "| **median** |" in text and "| article | 98 | 170 | 1.74x |" in text
    png = plot_bench(bench_results, tmp_path / "bench.png")
    assert b"\x89PNG" == png.read_bytes()[:4]


def test_sweep_runs_the_cluster_per_worker_count(kit_inputs: KitInputs, tmp_path: Path):
    """One worker: a rate, its speed-up over standalone, no oversubscription on 2 CPUs."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    results = run_sweep(settings, LocalBackend("auto"), PROFILES["default"], worker_counts=[1], steps=31,
                        echo=lambda _: None)
    (point,) = results["points"]
    assert 1 == point["workers"] and point["rate"] > 0 and not point["oversubscribed"]
    assert point["speedup"] == pytest.approx(point["rate"] / results["standalone_rate"])
    assert "| 1 |" in "\n".join(sweep_lines(results))
    assert b"\x89PNG" == plot_sweep(results, tmp_path / "sweep.png").read_bytes()[:4]
