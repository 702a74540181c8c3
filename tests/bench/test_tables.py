"""The benchmark's tables and plots, from a real bench.json (no training): every figure with its
95% interval, and a line saying what the brackets are."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reprokit.bench.comparison import bench_rows, lever_rows, rows_for
from reprokit.bench.findings import (
    NO_LEVER,
    BenchResults,
    SweepPoint,
    SweepProgram,
    SweepResults,
    ceiling_of,
)
from reprokit.bench.tables import (
    bench_bars,
    bench_lines,
    ceiling_name,
    interval_line,
    plot_bench,
    plot_sweep,
    speedup_cell,
    sweep_lines,
    thread_lines,
)
from reprokit.judge.speed import Estimate, format_estimate
from reprokit.run.thread_cpu import MAIN_THREAD, ThreadCpu, ThreadGroup
from tests.bench.test_findings import TF2_REPS
from tests.support import SAMPLES
from tests.support.kit import article_figures

BENCH = BenchResults.load(SAMPLES / "bench" / "bench.json")
SPEEDUP = Estimate(1.34, 1.21, 1.49, 3, 60, 20, "between 3 repetitions (t)")


def test_a_figure_prints_with_its_interval() -> None:
    assert ("1.34x (1.21-1.49)", "n/a") == (format_estimate(SPEEDUP, brief=True), format_estimate(None, brief=True))
    assert "+34% (+21% to +49%)" == format_estimate(SPEEDUP, "%", 0, brief=True, change=True)


def test_the_line_above_a_table_says_what_the_brackets_are() -> None:
    assert ("speed-ups: 95% CI in brackets, n = 3; method: between 3 repetitions (t); 60 rates behind "
            "each figure") == interval_line([SPEEDUP, None], "speed-ups")


def test_the_table_has_the_three_rows_and_the_article() -> None:
    text = "\n".join(bench_lines(BENCH, article_figures()))
    for row in ("article program, default settings", "article program, tuned settings",
                "lesson program, default settings", "the article (2017) | 98 | 170 | 1.74x"):
        assert f"| {row}" in text


def test_each_rows_speedup_is_printed_with_its_interval_under_a_line_naming_the_method() -> None:
    lines = bench_lines(BENCH, article_figures())
    for row in BENCH.rows:
        shown = f"| {format_estimate(row.speedup, brief=True)} |"
        assert any(line.startswith(f"| {row.name} |") and shown in line for line in lines)
    method = BENCH.rows[0].speedup.method if BENCH.rows[0].speedup else ""
    assert f"95% CI in brackets, n = {BENCH.repetitions}; method: {method};" in lines[1]


def test_the_baseline_and_the_target_are_judged_in_words() -> None:
    lines = bench_lines(BENCH, article_figures())
    baseline = next(line for line in lines if line.startswith("the lesson's baseline:"))
    assert BENCH.baseline is not None and ("TOO WEAK" in baseline) == (not BENCH.baseline.ok)
    target = next(line for line in lines if line.startswith("target: 1.85x on 2 workers"))
    assert ("short" in target) == (not BENCH.target.met)


def test_the_ablation_shows_each_change_alone_then_all() -> None:
    text = "\n".join(bench_lines(BENCH, article_figures()))
    assert "| none (the article's program) |" in text and "| reference |" in text
    assert "| input-pipeline alone |" in text and "| variables-on-ps alone |" in text
    lesson, article = BENCH.rows[-1], BENCH.rows[0]
    assert (f"| all (the lesson) | {format_estimate(lesson.cluster_rate, '', 1, brief=True)} | "
            f"{format_estimate(article.cluster_rate, '', 1, brief=True)} | "
            f"{format_estimate(lesson.speedup, brief=True)} |") in text


def test_where_the_variables_live_and_where_the_time_goes_are_shown() -> None:
    text = "\n".join(bench_lines(BENCH, article_figures()))
    assert "the article program's variables live on /job:worker/task:0" in text
    assert "the lesson program's variables live on /job:ps/task:0" in text
    assert "one traced lesson cluster step:" in text


def test_the_plot_is_a_png(tmp_path: Path) -> None:
    assert plot_bench(BENCH, tmp_path / "bench.png", article_figures()).read_bytes().startswith(b"\x89PNG")


def with_a_ceiling() -> BenchResults:
    """The sample with every program's rows and the ceiling, from made-up runs."""
    ceiling = ceiling_of("tf2-mirrored", TF2_REPS)
    rows = bench_rows(rows_for(["article", "lesson", "tf2-mirrored", "tf2-ps"]), TF2_REPS, 2, ceiling)
    return replace(BENCH, repetition_results=TF2_REPS, rows=rows, ceiling=ceiling)


def test_without_a_ceiling_the_table_has_no_share_column() -> None:
    lines = bench_lines(BENCH, article_figures())
    assert BENCH.ceiling is None
    assert "| row | standalone ex/s | cluster ex/s | speed-up | efficiency | per repetition |" in lines
    assert not any("ceiling" in line for line in lines)


def test_the_ceiling_is_a_row_and_every_row_shows_its_share_of_it() -> None:
    results = with_a_ceiling()
    assert results.ceiling is not None and results.ceiling.speedup is not None
    lines = bench_lines(results, article_figures())
    assert "| row | standalone ex/s | cluster ex/s | speed-up | efficiency | per repetition | share of ceiling |" \
        in lines
    (row,) = [line for line in lines if line.startswith(f"| {ceiling_name(results.ceiling)} |")]
    assert f"| {format_estimate(results.ceiling.speedup, brief=True)} |" in row and row.endswith("| 100.0% |")
    for bench_row in results.rows:
        (line,) = [line for line in lines if line.startswith(f"| {bench_row.name} |")]
        assert line.endswith(f" {100 * (bench_row.share_of_ceiling or 0):.1f}% |")
    assert any(line.startswith("ceiling: 2 tf2-mirrored standalones at once") and "without an interval" in line
               for line in lines)


def test_the_plot_has_the_ceiling_with_its_error_bar(tmp_path: Path) -> None:
    """A bar per row, then the ceiling's: each its speed-up (the error bar) and its repetitions."""
    results = with_a_ceiling()
    assert results.ceiling is not None
    bars = bench_bars(results)
    assert [row.speedup for row in results.rows] + [results.ceiling.speedup] == [speedup for _, speedup, _, _ in bars]
    assert ("ceiling\n2 at once", results.ceiling.per_repetition) == (bars[-1][0], bars[-1][2])
    assert len({colour for _, _, _, colour in bars}) == len(bars)
    assert plot_bench(results, tmp_path / "bench.png", article_figures()).read_bytes().startswith(b"\x89PNG")


def sweep_from_the_bench_sample() -> SweepResults:
    """A sweep of the sample's real runs: each program's standalone, its 2-worker cluster."""
    rep = BENCH.repetition_results[0]
    programs = {}
    for program, cluster in (("article", rep.clusters[0]), ("lesson", rep.clusters[2])):
        alone = rep.standalone[program]
        programs[program] = SweepProgram(alone, BENCH.rows[0].standalone_rate,
                                         [SweepPoint(2, cluster, None, BENCH.rows[0].speedup, False)])
    return SweepResults(BENCH.folder, BENCH.steps, BENCH.warmup_rule, BENCH.method, BENCH.tunings["default"], 2,
                        programs)


def test_the_sweep_table_prints_each_point_with_its_interval(tmp_path: Path) -> None:
    sweep = sweep_from_the_bench_sample()
    lines = sweep_lines(sweep)
    assert f"lesson: standalone (1 CPU) {format_estimate(BENCH.rows[0].standalone_rate, '', 1, brief=True)} ex/s" \
        in lines
    assert f"| 2 | n/a | {format_estimate(BENCH.rows[0].speedup, brief=True)} | 2.00x |  |" in lines
    assert "95% CI in brackets" in lines[1]
    assert plot_sweep(sweep, tmp_path / "sweep.png", article_figures()).read_bytes().startswith(b"\x89PNG")


def test_a_bench_whose_runs_read_no_threads_says_so_under_the_thread_heading() -> None:
    """The sample predates the thread table (and a container's threads are not read): one line says why."""
    lines = thread_lines(BENCH)
    assert lines[1].startswith("CPU per role by thread group while the main role logged steps (repetition 1): ")
    assert ["  not sampled: threads are read from /proc on the local and hosts backends only"] == lines[2:]


def test_the_thread_table_has_each_standalone_then_each_rows_roles_with_their_groups_cores() -> None:
    """Each group's CPU seconds per step of the window, and over its wall (cores on average); a
    group no role has is no column."""
    rep = BENCH.repetition_results[0]
    threads = ThreadCpu(10.0, 0, 100, {"worker0": {"model ops": ThreadGroup(8.0, 10), "gRPC": ThreadGroup(0.5, 4)},
                                       "ps": {MAIN_THREAD: ThreadGroup(1.0, 1)}})
    alone = ThreadCpu(20.0, 0, 100, {"standalone": {"model ops": ThreadGroup(19.0, 10)}})
    standalone = {name: replace(run, threads=alone) for name, run in rep.standalone.items()}
    clusters = [replace(run, threads=threads) for run in rep.clusters]
    results = replace(BENCH, repetition_results=[replace(rep, standalone=standalone, clusters=clusters)])
    lines = thread_lines(results)
    assert "| run | role | window | a step | threads | model ops | gRPC | main thread | all | one CPU's rest |" in lines
    assert ("| article standalone | standalone | 20 s, steps 0-100 | 200.0 ms | 10 | 190.0 ms (0.95) | - | - "
            "| 190.0 ms (0.95) | 10.0 ms |") in lines
    first = BENCH.rows[0].name
    assert (f"| {first} | worker0 | 10 s, steps 0-100 | 100.0 ms | 14 | 80.0 ms (0.80) | 5.0 ms (0.05) | - "
            "| 85.0 ms (0.85) | 15.0 ms |") in lines
    assert f"| {first} | ps | 10 s, steps 0-100 | 100.0 ms | 1 | - | - | 10.0 ms (0.10) | 10.0 ms (0.10) | 90.0 ms |" \
        in lines
    assert len(BENCH.rows) * 2 + 2 == sum(line.startswith("| ") and "steps 0-100" in line for line in lines)
    assert "| run | role |" in "\n".join(bench_lines(results, article_figures()))


def test_a_programs_levers_are_a_table_of_their_own_with_gain_and_share_of_ceiling(tmp_path: Path) -> None:
    """The program's own row is the reference; a lever row shows its gain over it, each its
    share of the ceiling; the plot's right panel has them beside the lesson's ablation."""
    rows = rows_for(["tf2-mirrored"], levers=True)
    reps = [replace(rep, clusters=rep.clusters[-2:]) for rep in TF2_REPS]  # tf2-mirrored's, and one as its lever's
    ceiling = ceiling_of("tf2-mirrored", reps)
    table = bench_rows(rows, reps, workers=2, ceiling=ceiling)
    results = replace(BENCH, rows=table, repetition_results=reps, ceiling=ceiling, ablation=[],
                      levers=lever_rows(rows, table, reps))
    lines = bench_lines(results, article_figures())
    at = lines.index("| change | cluster ex/s | the tf2-mirrored cluster, same repetitions | speed-up | gain "
                     "| share of ceiling |")
    own, pack = results.levers["tf2-mirrored"]
    assert lines[at + 2] == (f"| {NO_LEVER} | {format_estimate(own.cluster_rate, '', 1, brief=True)} | "
                             f"{format_estimate(own.reference, '', 1, brief=True)} | "
                             f"{format_estimate(own.speedup, brief=True)} | reference | "
                             f"{100 * (table[0].share_of_ceiling or 0):.1f}% |")
    assert lines[at + 3].startswith("| pack |") and lines[at + 3].endswith(
        f"| {format_estimate(pack.gain, '%', 0, brief=True, change=True)} | "
        f"{100 * (table[1].share_of_ceiling or 0):.1f}% |")
    assert "tf2-mirrored\npack" == bench_bars(results)[1][0]
    assert plot_bench(results, tmp_path / "bench.png", article_figures()).read_bytes().startswith(b"\x89PNG")


def test_a_traced_all_reduce_step_places_each_collective_against_the_end_of_compute() -> None:
    (name, step), *_ = BENCH.breakdown.items()
    device = replace(step.devices[0], compute_end_ms=223.2, collectives=((198.4, 2.5), (223.8, 12.1)))
    lines = bench_lines(replace(BENCH, breakdown={name: replace(step, devices=[device])}), article_figures())
    at = lines.index(f"one traced {name} step: {step.wall_ms} ms wall")
    assert "      its last compute op ends at +223.2 ms; its collectives start at +198.4 (2.5 ms), +223.8 (12.1 ms)" \
        == lines[at + 6]
    assert not any("collectives start" in line for line in bench_lines(BENCH, article_figures()))


def test_a_speedup_above_what_the_workers_and_cpus_can_do_is_marked_impossible():
    """2 workers on 2 CPUs can reach 2x at most: a row whose whole interval lies above is no finding."""
    beyond = Estimate(3.67, 3.5, 3.8, 3, 30, 5, "between 3 repetitions (t)")
    assert "3.67x (3.50-3.80) IMPOSSIBLE (above 2.00x)" == speedup_cell(beyond, 2, 2)
    assert "3.67x (3.50-3.80)" == speedup_cell(beyond, 4, 4)
    reaching = Estimate(1.98, 1.9, 2.05, 3, 30, 5, "between 3 repetitions (t)")
    assert "1.98x (1.90-2.05)" == speedup_cell(reaching, 2, 2)
    assert "n/a" == speedup_cell(None, 2, 2)
