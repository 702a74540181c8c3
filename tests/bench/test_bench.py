"""`invoke bench` and `invoke sweep` on tiny real runs of both programs: well-formed results,
the ablation built from the lesson's patch, no timed assertion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.bench.ablation import build_variants, variant_name
from reprokit.bench.comparison import ROWS, run_bench
from reprokit.bench.sweep import run_sweep
from reprokit.bench.tables import plot_sweep, sweep_lines
from reprokit.judge.speed import WARMUP_RULE
from reprokit.run.local import LocalBackend
from reprokit.run.tuning import PROFILES
from reprokit.sources.workspace import expected_files
from tests.support import REPO
from tests.support.kit import KitInputs, kit_settings


def test_the_ablation_builds_the_articles_trainer_with_each_change_alone(kit_inputs: KitInputs, tmp_path: Path):
    """One trainer per named change: the article's cluster trainer plus only that change's hunks."""
    variants = build_variants(REPO / "upstream", REPO / "patches", kit_inputs.sources_dir, tmp_path / "ablation")
    assert {"input-pipeline": variant_name("input-pipeline"), "variables-on-ps": variant_name("variables-on-ps")} \
        == variants
    files = expected_files(REPO / "upstream", REPO / "patches")
    placement = (tmp_path / "ablation" / variants["variables-on-ps"]).read_text()
    pipeline = (tmp_path / "ablation" / variants["input-pipeline"]).read_text()
    assert "replica_device_setter" in placement and "tf.data" not in placement
    assert "tf.data" in pipeline and "replica_device_setter" not in pipeline
    assert files["cifar10_cluster_train.py"] == (tmp_path / "ablation" / "cifar10_cluster_train.py").read_text()


@pytest.fixture(scope="module")
def bench_results(kit_inputs: KitInputs, tmp_path_factory: pytest.TempPathFactory) -> dict:
    settings = kit_settings(tmp_path_factory.mktemp("bench-runs"), kit_inputs)
    return run_bench(settings, LocalBackend("auto"), repetitions=1, steps=31, echo=lambda line: None)


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
def test_bench_reports_every_row_with_its_ratio(bench_results: dict):
    """One repetition: each row's rates are positive; its speed-up is its cluster over its own
    program's standalone of the same repetition; efficiency is speed-up / 2."""
    assert [row.name for row in ROWS] == [row["name"] for row in bench_results["rows"]]
    rep = bench_results["repetition_results"][0]
    for i, row in enumerate(bench_results["rows"]):
        standalone = rep["standalone"][row["program"]]["rate"]
        cluster = rep["rows"][i]["cluster"]["rate"]
        assert standalone > 0 and cluster > 0
        assert row["speedup"] == pytest.approx(cluster / standalone)
        assert row["efficiency"] == pytest.approx(row["speedup"] / 2)
    assert WARMUP_RULE == bench_results["warmup_rule"]  # the one rule of every figure of the kit


@pytest.mark.slow
def test_bench_checks_the_lessons_baseline_and_its_target(bench_results: dict):
    baseline = bench_results["baseline"]
    rep = bench_results["repetition_results"][0]["standalone"]
    assert baseline["median"] == pytest.approx(rep["lesson"]["rate"] / rep["article"]["rate"])
    assert baseline["ok"] == (baseline["median"] >= 0.95)
    lesson = bench_results["rows"][-1]
    assert (1.85, lesson["speedup"]) == (bench_results["target"]["speedup"], bench_results["target"]["lesson_speedup"])


@pytest.mark.slow
def test_bench_runs_the_ablation_and_the_traces_of_both_programs(bench_results: dict):
    changes = [a["change"] for a in bench_results["ablation"]]
    assert ["none (the article's program)", "input-pipeline alone", "variables-on-ps alone",
            "all (the lesson)"] == changes
    assert all(a["cluster_rate"] > 0 for a in bench_results["ablation"])
    assert {"article standalone", "article cluster", "lesson cluster"} == set(bench_results["breakdown"])
    assert {"/job:ps/task:0/device:CPU:0"} == set(bench_results["placement"]["lesson"].values())
    assert {"/job:worker/task:0/device:CPU:0"} == set(bench_results["placement"]["article"].values())


@pytest.mark.slow
def test_bench_writes_its_json_and_measures_the_kit(bench_results: dict):
    folder = Path(bench_results["folder"])
    assert json.loads(json.dumps(bench_results)) == json.loads((folder / "bench.json").read_text())
    o = bench_results["overheads"]
    assert o["verify_and_apply_s"] >= 0 and o["cluster_ready_to_first_step_s"] > 0 and o["teardown_s"] >= 0
    assert {"ps", "worker0", "worker1", "client"} == set(bench_results["rows"][0]["cpu_share"]["roles"])
    assert bench_results["kit_fixes"]["request_id_fix"].startswith("on (")


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
def test_sweep_runs_each_programs_cluster_per_worker_count(kit_inputs: KitInputs, tmp_path: Path):
    """One worker, both programs: a rate, its speed-up over its program's standalone."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    results = run_sweep(settings, LocalBackend("auto"), PROFILES["default"], worker_counts=[1], steps=31,
                        echo=lambda _: None, programs=("article", "lesson"))
    for program in ("article", "lesson"):
        (point,) = results["programs"][program]["points"]
        assert 1 == point["workers"] and point["rate"] > 0 and not point["oversubscribed"]
        assert point["speedup"] == pytest.approx(point["rate"] / results["programs"][program]["standalone_rate"])
    assert "lesson: standalone (1 CPU)" in "\n".join(sweep_lines(results))
    assert b"\x89PNG" == plot_sweep(results, tmp_path / "sweep.png").read_bytes()[:4]
