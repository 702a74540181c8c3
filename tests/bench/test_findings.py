"""The bench's results: one estimator for every figure, and files that carry their format."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from statistics import median

import pytest

from reprokit.bench.comparison import (
    ablation_rows,
    baseline,
    bench_rows,
    lever_rows,
    rows_for,
)
from reprokit.bench.findings import (
    ALL_CHANGES,
    NO_LEVER,
    NONE_CHANGE,
    BenchResults,
    BenchRun,
    NetworkResults,
    Repetition,
    SweepResults,
    ceiling_of,
)
from reprokit.judge.speed import rate_estimate, ratio_estimate
from reprokit.records import ResultsFormatError
from tests.support import SAMPLES

SAMPLE = SAMPLES / "bench" / "bench.json"


def run(mode: str, program: str, *rates: float) -> BenchRun:
    median = sorted(rates)[len(rates) // 2] if rates else None
    return BenchRun(mode, 2, program, f"{mode}-{program}", median, list(rates),
                    timings={"client_started": 0.0, "main_exited": 10.0}, cpu_seconds={"client": 5.0})


def repetition(scale: float) -> Repetition:
    """Three rows' clusters and both standalones; the article's cluster with each change alone."""
    return Repetition(
        {"article": run("standalone", "article", *(100 * scale + d for d in (-2, 0, 1, 3, -1))),
         "lesson": run("standalone", "lesson", *(98 * scale + d for d in (-1, 0, 2, 1, -2)))},
        [run("cluster", "article", *(120 * scale + d for d in (-3, 0, 2, 4, -1))),
         run("cluster", "article", *(130 * scale + d for d in (-2, 1, 0, 3, -4))),
         run("cluster", "lesson", *(170 * scale + d for d in (-5, 0, 2, 4, -2)))],
        {"input-pipeline": run("cluster", "article", *(150 * scale + d for d in (-1, 2, 0, 3, -2))),
         "variables-on-ps": run("cluster", "article", *(135 * scale + d for d in (-2, 1, 0, 2, -3)))})


REPS = [repetition(1.0), repetition(0.9), repetition(1.05)]
ROWS = rows_for(["article", "lesson"], ["default", "tuned"])  # the three rows of repetition()


def test_a_rows_speedup_is_the_one_estimator_over_its_repetitions_pairs() -> None:
    """Each repetition pairs a row's cluster with its own program's standalone of that repetition."""
    table = bench_rows(ROWS, REPS, workers=2)
    lesson = table[2]
    expected = ratio_estimate([(rep.clusters[2].step_rates, rep.standalone["lesson"].step_rates) for rep in REPS])
    assert expected == lesson.speedup
    assert rate_estimate([rep.standalone["lesson"].step_rates for rep in REPS]) == lesson.standalone_rate
    assert rate_estimate([rep.clusters[2].step_rates for rep in REPS]) == lesson.cluster_rate
    assert pytest.approx(expected.value / 2) == lesson.efficiency
    assert [median(rep.clusters[2].step_rates) / median(rep.standalone["lesson"].step_rates) for rep in REPS] \
        == lesson.per_repetition
    assert 3 == expected.n and "between 3 repetitions (t)" == expected.method


def test_the_ablations_first_and_last_rows_are_the_article_and_lesson_rows_themselves() -> None:
    """One set of runs gives one figure: 'all (the lesson)' IS the lesson row's speed-up."""
    table = bench_rows(ROWS, REPS, workers=2)
    ablation = ablation_rows(ROWS, table, REPS, [(rep.variants, rep) for rep in REPS])
    assert [NONE_CHANGE, "input-pipeline alone", "variables-on-ps alone", ALL_CHANGES] == \
        [a.change for a in ablation]
    assert (table[0].speedup, table[0].cluster_rate) == (ablation[0].speedup, ablation[0].cluster_rate)
    assert (table[2].speedup, table[2].cluster_rate) == (ablation[-1].speedup, ablation[-1].cluster_rate)
    assert ablation[0].gain is None  # the reference: the article's program over itself


def test_a_change_alone_is_paired_like_a_row_with_the_articles_runs_of_its_repetition() -> None:
    table = bench_rows(ROWS, REPS, workers=2)
    pipeline = ablation_rows(ROWS, table, REPS, [(rep.variants, rep) for rep in REPS])[1]
    variant = [rep.variants["input-pipeline"].step_rates for rep in REPS]
    assert ratio_estimate([(v, rep.standalone["article"].step_rates) for v, rep in zip(variant, REPS)]) \
        == pipeline.speedup
    assert ratio_estimate([(v, rep.clusters[0].step_rates) for v, rep in zip(variant, REPS)]) == pipeline.gain
    assert [rep.variants["input-pipeline"].folder for rep in REPS] == pipeline.folders


def test_changes_run_once_are_paired_with_that_one_repetition() -> None:
    table = bench_rows(ROWS, REPS, workers=2)
    once = {"input-pipeline": REPS[0].variants["input-pipeline"]}
    (change,) = ablation_rows(ROWS, table, REPS, [(once, REPS[-1])])[1:-1]
    expected = ratio_estimate([(once["input-pipeline"].step_rates, REPS[-1].clusters[0].step_rates)])
    assert (expected, 1) == (change.gain, change.gain.n if change.gain else 0)


@pytest.mark.parametrize("each_repetition", [True, False], ids=["every repetition", "once, in the last"])
def test_each_gain_is_its_rows_rate_over_the_reference_printed_beside_it(each_repetition: bool) -> None:
    """A gain pairs the rows it is printed beside: its cluster rate over the article's cluster of
    the same repetitions, shown in the next column (run once, that is the last repetition's, not
    the article row's rate over all of them)."""
    table = bench_rows(ROWS, REPS, workers=2)
    variants = [(rep.variants, rep) for rep in REPS] if each_repetition else [(REPS[-1].variants, REPS[-1])]
    ablation = ablation_rows(ROWS, table, REPS, variants)
    for row in ablation[1:]:
        assert row.gain is not None and row.cluster_rate is not None and row.reference is not None
        assert pytest.approx(row.cluster_rate.value / row.reference.value, rel=1e-9) == row.gain.value, row.change
    assert table[0].cluster_rate == ablation[0].reference == ablation[-1].reference
    assert (ablation[1].reference == table[0].cluster_rate) is each_repetition


def test_the_baseline_is_the_lessons_standalone_over_the_articles_paired_by_repetition() -> None:
    found = baseline(REPS)
    assert found is not None and found.ratio is not None
    expected = ratio_estimate([(rep.standalone["lesson"].step_rates, rep.standalone["article"].step_rates)
                               for rep in REPS])
    assert (expected, expected.value >= 0.95) == (found.ratio, found.ok)


def test_a_run_without_step_rates_has_no_figure_rather_than_a_wrong_one() -> None:
    reps = [repetition(1.0)]
    reps[0].clusters[2] = run("cluster", "lesson")
    assert bench_rows(ROWS, reps, workers=2)[2].speedup is None


def test_the_sample_bench_reads_back_into_its_dataclasses_unchanged(tmp_path: Path) -> None:
    results = BenchResults.load(SAMPLE)
    assert json.loads(SAMPLE.read_text()) == json.loads(results.write(tmp_path).read_text())


def test_the_sample_rows_figures_are_the_estimator_over_their_stored_step_rates() -> None:
    """The file keeps the samples behind every figure: each can be recomputed from it."""
    results = BenchResults.load(SAMPLE)
    for i, row in enumerate(results.rows):
        pairs = [(rep.clusters[i].step_rates, rep.standalone[row.program].step_rates)
                 for rep in results.repetition_results]
        assert ratio_estimate(pairs) == row.speedup
    lesson = next(row for row in results.rows if row.program == "lesson")
    assert lesson.speedup == results.ablation[-1].speedup == results.target.lesson_speedup


@pytest.mark.parametrize("kind", [BenchResults, SweepResults, NetworkResults])
def test_a_file_of_another_format_version_is_refused_with_what_to_do(tmp_path: Path, kind: type[BenchResults]) -> None:
    path = tmp_path / kind.FILE
    path.write_text(json.dumps({**json.loads(SAMPLE.read_text()), "format_version": kind.FORMAT_VERSION + 1}))
    newer = kind.FORMAT_VERSION + 1
    with pytest.raises(ResultsFormatError, match=f"(?s)format version {newer}.*run the benchmark again"):
        kind.load(path)


def test_a_file_without_a_format_version_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({key: value for key, value in json.loads(SAMPLE.read_text()).items()
                                if key != "format_version"}))
    with pytest.raises(ResultsFormatError, match="format version None"):
        BenchResults.load(path)


# --- the machine's ceiling ------------------------------------------------------------------

TF2_ROWS = rows_for(["article", "lesson", "tf2-mirrored", "tf2-ps"], ["default", "tuned"])


def tf2_repetition(scale: float) -> Repetition:
    """The three rows' runs, the tf2 programs' one standalone and clusters, and the ceiling's two
    concurrent standalones (each a little slower than one alone)."""
    base = repetition(scale)
    tf2 = run("standalone", "tf2-mirrored", *(80 * scale + d for d in (-1, 0, 2, 1, -2)))
    return Repetition(
        {**base.standalone, "tf2-mirrored": tf2, "tf2-ps": tf2},
        [*base.clusters, run("cluster", "tf2-mirrored", *(140 * scale + d for d in (-2, 0, 3, 1, -1))),
         run("cluster", "tf2-ps", *(110 * scale + d for d in (-3, 1, 0, 2, -1)))],
        ceiling=[run("standalone", "tf2-mirrored", *(76 * scale + d for d in (-1, 0, 1, 2, -2))),
                 run("standalone", "tf2-mirrored", *(74 * scale + d for d in (0, 1, -1, 2, -2)))])


TF2_REPS = [tf2_repetition(1.0), tf2_repetition(0.95), tf2_repetition(1.1)]


def test_the_ceiling_is_the_one_estimator_over_both_concurrent_runs_doubled_against_one_alone() -> None:
    """Two CPUs' worth: each concurrent run's step rates, pooled and doubled, over the tf2
    standalone alone of the same repetition."""
    found = ceiling_of("tf2-mirrored", TF2_REPS)
    assert found is not None and found.speedup is not None
    two_cpus = [[2 * r for run in rep.ceiling for r in run.step_rates] for rep in TF2_REPS]
    assert ratio_estimate([(both, rep.standalone["tf2-mirrored"].step_rates)
                           for both, rep in zip(two_cpus, TF2_REPS)]) == found.speedup
    assert rate_estimate(two_cpus) == found.two_cpus_rate
    assert rate_estimate([rep.standalone["tf2-mirrored"].step_rates for rep in TF2_REPS]) == found.standalone_rate
    assert [median(both) / median(rep.standalone["tf2-mirrored"].step_rates)
            for both, rep in zip(two_cpus, TF2_REPS)] == pytest.approx(found.per_repetition)
    assert 3 == found.speedup.n and 1.8 < found.speedup.value < 2.0
    assert 6 == len(found.folders)


def test_without_ceiling_runs_there_is_no_ceiling_and_without_step_rates_no_figure() -> None:
    assert ceiling_of("tf2-mirrored", REPS) is None
    reps = [tf2_repetition(1.0)]
    reps[0].ceiling[1] = run("standalone", "tf2-mirrored")
    found = ceiling_of("tf2-mirrored", reps)
    assert found is not None and (None, None) == (found.speedup, found.two_cpus_rate)


def test_every_row_is_also_a_share_of_the_ceiling() -> None:
    """A row's speed-up over the ceiling's: the tf2 rows against the standalone they share."""
    ceiling = ceiling_of("tf2-mirrored", TF2_REPS)
    assert ceiling is not None and ceiling.speedup is not None
    table = bench_rows(TF2_ROWS, TF2_REPS, workers=2, ceiling=ceiling)
    for row in table:
        assert row.speedup is not None
        assert pytest.approx(row.speedup.value / ceiling.speedup.value) == row.share_of_ceiling
    tf2_ps = table[-1]
    assert ratio_estimate([(rep.clusters[-1].step_rates, rep.standalone["tf2-mirrored"].step_rates)
                           for rep in TF2_REPS]) == tf2_ps.speedup
    assert [None] * 3 == [row.share_of_ceiling for row in bench_rows(ROWS, REPS, workers=2)]


def test_the_tf2_rows_leave_the_ablation_and_the_baseline_as_they_were() -> None:
    """The ablation and the baseline are the article's and the lesson's: tf2 rows change neither."""
    table = bench_rows(TF2_ROWS, TF2_REPS, workers=2)
    ablation = ablation_rows(TF2_ROWS, table, TF2_REPS, [(rep.variants, rep) for rep in TF2_REPS])
    assert (table[2].speedup, table[0].speedup) == (ablation[-1].speedup, ablation[0].speedup)
    found = baseline(TF2_REPS)
    assert found is not None and found.ratio == ratio_estimate(
        [(rep.standalone["lesson"].step_rates, rep.standalone["article"].step_rates) for rep in TF2_REPS])


def test_a_bench_with_a_ceiling_reads_back_unchanged(tmp_path: Path) -> None:
    sample = BenchResults.load(SAMPLE)
    ceiling = ceiling_of("tf2-mirrored", TF2_REPS)
    results = replace(sample, repetition_results=TF2_REPS, ceiling=ceiling,
                      rows=bench_rows(TF2_ROWS, TF2_REPS, workers=2, ceiling=ceiling))
    assert results == BenchResults.load(results.write(tmp_path))
    assert 2 == json.loads((tmp_path / "bench.json").read_text())["format_version"]


def test_a_levers_gain_is_its_cluster_over_its_programs_own_cluster_paired_by_repetition() -> None:
    """tf2-mirrored with its lever: a row of its own, beside the program's own row in every
    repetition; the lever table starts with the program's own row and pairs the lever's cluster
    with it, not with the standalone or another program's cluster."""
    rows = rows_for(["tf2-mirrored", "tf2-ps"], levers=True)
    assert [(), ("pack",), ()] == [row.levers for row in rows]
    reps = []
    for rep in TF2_REPS:
        own, tf2_ps = rep.clusters[-2:]
        lever = run("cluster", "tf2-mirrored", *(1.1 * r for r in own.step_rates))
        reps.append(replace(rep, clusters=[own, lever, tf2_ps]))
    ceiling = ceiling_of("tf2-mirrored", reps)
    table = bench_rows(rows, reps, workers=2, ceiling=ceiling)
    found = lever_rows(rows, table, reps)
    assert ["tf2-mirrored"] == list(found)
    first, pack = found["tf2-mirrored"]
    assert (NO_LEVER, table[0].speedup, None, table[0].share_of_ceiling) == \
        (first.change, first.speedup, first.gain, first.share_of_ceiling)
    expected = ratio_estimate([(rep.clusters[1].step_rates, rep.clusters[0].step_rates) for rep in reps])
    assert ("pack", expected, table[1].speedup, table[0].cluster_rate) == (pack.change, pack.gain, pack.speedup,
                                                                          pack.reference)
    assert expected.value == pytest.approx(1.1) and ["pack"] == table[1].levers
    assert {} == lever_rows(TF2_ROWS, bench_rows(TF2_ROWS, TF2_REPS, workers=2), TF2_REPS)
