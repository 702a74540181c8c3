"""`invoke bench` and `invoke sweep` on tiny real runs of both programs: typed results whose
figures are the one estimator over the runs they keep, the ablation built from the lesson's
patch, no timed assertion."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reprokit.bench.ablation import build_variants, variant_name
from reprokit.bench.comparison import ROWS, bench_rows, lever_rows, rows_for, run_bench
from reprokit.bench.findings import BenchResults, Repetition, SweepResults
from reprokit.bench.harness import Bench
from reprokit.bench.sweep import run_sweep
from reprokit.bench.tables import plot_sweep, sweep_lines
from reprokit.judge.speed import METHOD, WARMUP_RULE, ratio_estimate
from reprokit.names import log_path
from reprokit.options import Options
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.sources.workspace import expected_files
from tests.support import REPO
from tests.support.kit import (
    KitInputs,
    article_figures,
    kit_options,
    kit_settings,
    kit_watchdog,
)


def test_the_ablation_builds_the_articles_trainer_with_each_change_alone(kit_inputs: KitInputs, tmp_path: Path) -> None:
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


def bench_options(workers: int = 2) -> Options:
    """What `invoke bench --steps 31` checks and passes on: 31 steps, the spread layout."""
    return kit_options(31, workers)


@pytest.fixture(scope="module")
def bench_results(kit_inputs: KitInputs, tmp_path_factory: pytest.TempPathFactory) -> BenchResults:
    runs = tmp_path_factory.mktemp("bench-runs")
    return run_bench(kit_settings(runs, kit_inputs), ProcessBackend(Loopback.choose("auto"), kit_watchdog()), bench_options(),
                     repetitions=1, echo=lambda line: None, variants_each_repetition=True)


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
def test_bench_reports_every_row_with_its_ratio(bench_results: BenchResults) -> None:
    """One repetition: each row's speed-up is the one estimator over its cluster and its own
    program's standalone of the same repetition; efficiency is speed-up / 2."""
    assert [row.name for row in ROWS] == [row.name for row in bench_results.rows]
    (rep,) = bench_results.repetition_results
    for i, row in enumerate(bench_results.rows):
        standalone, cluster = rep.standalone[row.program], rep.clusters[i]
        assert standalone.step_rates and cluster.step_rates
        assert ratio_estimate([(cluster.step_rates, standalone.step_rates)]) == row.speedup
        assert row.speedup is not None and row.efficiency == pytest.approx(row.speedup.value / 2)
        assert row.speedup.low <= row.speedup.value <= row.speedup.high
    assert (WARMUP_RULE, METHOD) == (bench_results.warmup_rule, bench_results.method)


@pytest.mark.slow
def test_bench_checks_the_lessons_baseline_and_its_target(bench_results: BenchResults) -> None:
    baseline = bench_results.baseline
    rep = bench_results.repetition_results[0].standalone
    assert baseline is not None and baseline.ratio is not None
    assert ratio_estimate([(rep["lesson"].step_rates, rep["article"].step_rates)]) == baseline.ratio
    assert baseline.ok == (baseline.ratio.value >= 0.95)
    lesson = bench_results.rows[-1]
    assert (1.85, lesson.speedup) == (bench_results.target.speedup, bench_results.target.lesson_speedup)


@pytest.mark.slow
def test_bench_runs_the_ablation_and_the_traces_of_both_programs(bench_results: BenchResults) -> None:
    changes = [a.change for a in bench_results.ablation]
    assert ["none (the article's program)", "input-pipeline alone", "variables-on-ps alone",
            "all (the lesson)"] == changes
    assert all(a.cluster_rate and a.cluster_rate.value > 0 for a in bench_results.ablation)
    assert {"input-pipeline", "variables-on-ps"} == set(bench_results.repetition_results[0].variants)
    assert {"article standalone", "article cluster", "lesson cluster"} == set(bench_results.breakdown)
    assert {"/job:ps/task:0/device:CPU:0"} == set(bench_results.placement["lesson"].values())
    assert {"/job:worker/task:0/device:CPU:0"} == set(bench_results.placement["article"].values())


@pytest.mark.slow
def test_bench_writes_its_json_and_measures_the_kit(bench_results: BenchResults) -> None:
    folder = Path(bench_results.folder)
    assert bench_results == BenchResults.load(folder / "bench.json")
    o = bench_results.overheads
    assert o.verify_and_apply_s >= 0 and (o.cluster_ready_to_first_step_s or 0) > 0 and o.teardown_s >= 0
    assert {"ps", "worker0", "worker1", "client"} == set(bench_results.rows[0].cpu_share.roles)
    assert bench_results.request_id_fix.startswith("on (")


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
def test_sweep_runs_each_programs_cluster_per_worker_count(kit_inputs: KitInputs, tmp_path: Path) -> None:
    """One worker, every program (today's TensorFlow's too): a rate, its speed-up over its
    program's standalone."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    programs = ("article", "lesson", "tf2-mirrored", "tf2-ps")
    results = run_sweep(settings, ProcessBackend(Loopback.choose("auto"), kit_watchdog()), bench_options(workers=1),
                        worker_counts=[1], echo=lambda _: None, programs=programs)
    assert programs == tuple(results.programs)
    for program in programs:
        data = results.programs[program]
        (point,) = data.points
        assert 1 == point.workers and point.rate and point.rate.value > 0 and not point.oversubscribed
        assert ratio_estimate([(point.cluster.step_rates, data.standalone.step_rates)]) == point.speedup
    assert results == SweepResults.load(Path(results.folder) / "sweep.json")
    assert "lesson: standalone (1 CPU)" in "\n".join(sweep_lines(results))
    assert b"\x89PNG" == plot_sweep(results, tmp_path / "sweep.png", article_figures()).read_bytes()[:4]


@pytest.mark.usefixtures("no_leftover_processes")
def test_the_pack_lever_reaches_the_all_reduce_of_a_real_cluster(kit_inputs: KitInputs, tmp_path: Path) -> None:
    """tf2-mirrored's own row sends its gradients in one pack, its lever row in several: the
    strategy says so in every worker's log; the lever's table pairs the two clusters."""
    bench = Bench(kit_settings(tmp_path / "runs", kit_inputs), ProcessBackend(Loopback.choose("auto"), kit_watchdog()),
                  kit_options(31, 2, program="tf2-mirrored"), lambda line: None)
    rows = rows_for(["tf2-mirrored"], levers=True)
    standalone = bench.run("standalone", program="tf2-mirrored")
    clusters = [bench.run("cluster", program=row.program, levers=row.levers) for row in rows]
    packs = [[set(re.findall(r"num_packs = (\d+)", log_path(bench.dir / run.folder, role).read_text()))
              for role in ("worker0", "worker1")] for run in clusters]
    assert [[{"1"}, {"1"}], [{"4"}, {"4"}]] == packs
    reps = [Repetition({"tf2-mirrored": standalone}, clusters)]
    own, pack = lever_rows(rows, bench_rows(rows, reps, workers=2), reps)["tf2-mirrored"]
    assert ratio_estimate([(clusters[1].step_rates, clusters[0].step_rates)]) == pack.gain
    assert ratio_estimate([(clusters[0].step_rates, standalone.step_rates)]) == own.speedup
