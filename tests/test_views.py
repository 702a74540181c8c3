"""What the tasks show: the views over real sample runs, as a person reads them (no training)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reprokit import views
from reprokit.errors import KitError
from reprokit.experiment import Reproduction
from reprokit.judge.judgement import judge_run
from reprokit.report.results import RunResults
from reprokit.run.backends import Exposure
from reprokit.run_folders import RunInfo
from tests.support import REPO, SAMPLES
from tests.support.kit import article_figures

RUNS = SAMPLES / "runs"
RULES = REPO / "expected_logs" / "rules.yaml"


@pytest.fixture
def runs(tmp_path: Path, kit, settings_for) -> tuple[list[str], object]:
    """Settings whose runs/ holds a copy of the lesson sample run, and the lines a view writes."""
    settings = settings_for(kit)
    shutil.copytree(RUNS / "lesson-quick", settings.runs_dir / "lesson-quick")
    return [], settings


def test_compare_logs_judges_the_latest_run_line_by_line(runs):
    lines, settings = runs
    assert views.compare_logs(lines.append, settings, "latest")
    assert "PASS" == lines[-1]
    assert any(line.startswith("PASS filling_shuffle_buffer_once_per_tower [cluster]") for line in lines)


def test_report_says_what_it_wrote(runs):
    lines, settings = runs
    views.report(lines.append, settings, "lesson-quick")
    assert [f"wrote {settings.runs_dir / 'lesson-quick' / name}" for name in ("results.json", "speed.png",
                                                                                "report.md")] == lines


def test_a_run_that_is_not_there_is_an_error_naming_where_it_looked(runs):
    lines, settings = runs
    with pytest.raises(KitError, match="no run folder 'gone'"):
        views.report(lines.append, settings, "gone")


def finished(run_dir: Path, exposure: Exposure | None, error: str = "") -> Reproduction:
    """The sample run as a reproduction ends: judged again from its logs, with its results."""
    results = RunResults.load(run_dir / "results.json")
    return Reproduction(run_dir, RunInfo.load(run_dir), [], judgement=judge_run(run_dir, RULES), results=results,
                        error=error, exposure=exposure, claim=results.claim, learning=results.learning,
                        verdict_lines=results.verdict_lines)


def test_the_end_of_a_run_shows_table_threads_report_and_the_verdicts(tmp_path: Path):
    run = tmp_path / "lesson-quick"
    shutil.copytree(RUNS / "lesson-quick", run)
    lines: list[str] = []
    result = views.finish(lines.append, finished(run, Exposure("the run's namespace", beyond_run=False)))
    assert result.passed
    assert "| speed-up (cluster / standalone) | 1.74x | 1.76x (1.75-1.84) |" in lines
    assert "- cluster: no input thread died" in lines
    assert [f"run folder: {run}", f"report: {run / 'report.md'}"] == [lines[0], lines[-5]]
    assert ["logs:     PASS  (32 rules, 0 failed)", "claim:    REPRODUCED", "learning: SAME"] == \
        [lines[-4], lines[-3][:len("claim:    REPRODUCED")], lines[-2][:len("learning: SAME")]]
    # The last line carries every verdict; a run of an older kit had no update check.
    assert "verdict:  logs PASS, claim REPRODUCED, learning SAME, updates not judged" == lines[-1]


def test_a_failed_run_ends_in_fail_after_saying_its_servers_were_exposed(tmp_path: Path):
    run = tmp_path / "lesson-quick"
    shutil.copytree(RUNS / "lesson-quick", run)
    lines: list[str] = []
    views.finish(lines.append, finished(run, Exposure("every interface of this machine", beyond_run=True),
                                        error="the cluster run failed"))
    assert "error: the cluster run failed" == lines[0]
    assert ["the servers were reachable on every interface of this machine", "logs:     PASS  (32 rules, 0 failed)",
            "verdict:  run FAILED; logs PASS, claim REPRODUCED, learning SAME, updates not judged"] == lines[-3:]


def test_download_progress_draws_a_bar_every_five_percent():
    lines: list[str] = []
    progress = views.download_progress(lines.append)
    for done in range(0, 101, 1):
        progress(done * 1_000_000, 100_000_000)
    assert 21 == len(lines)
    assert "[####################] 100%" in lines[-1]


def test_a_benchmark_view_shows_its_table_then_where_its_json_and_plot_are(tmp_path: Path) -> None:
    """bench and sweep end alike: the table's lines, then the file the results were read from."""
    from reprokit.bench.findings import BenchResults
    from reprokit.bench.tables import bench_lines

    results = BenchResults.load(SAMPLES / "bench" / "bench.json")
    lines: list[str] = []
    views._show(lines.append, results, bench_lines(results, article_figures()), tmp_path / "bench.png")
    assert bench_lines(results, article_figures()) == lines[:-1]
    assert f"wrote {Path(results.folder) / 'bench.json'} and {tmp_path / 'bench.png'}" == lines[-1]
