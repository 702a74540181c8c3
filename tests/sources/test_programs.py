"""The programs a run can train are facts about patches/series: the series must make each one."""

from __future__ import annotations

import pytest

import tasks
from reprokit.errors import KitError
from reprokit.names import MODES
from reprokit.programs import NAMES, PROGRAMS, program
from reprokit.sources import series
from tests.support import REPO


def test_every_trainer_a_program_runs_is_one_the_series_makes() -> None:
    """Each file a program names is the target of a patch in patches/series."""
    made = {patch.target_name for patch, _ in series.walk(REPO / "upstream", REPO / "patches", strict=True).applied()}
    assert set() == {p.trainer(mode) for p in PROGRAMS.values() for mode in MODES} - made


def test_the_programs_are_the_five_the_kit_teaches_and_the_help_names_each() -> None:
    assert ["article", "lesson", "lesson-resumable", "tf2-mirrored", "tf2-ps"] == list(PROGRAMS)
    assert "article, lesson, lesson-resumable, tf2-mirrored or tf2-ps" == NAMES
    assert all(name == p.name for name, p in PROGRAMS.items())


def test_an_unknown_program_is_a_kit_error_naming_the_known_ones() -> None:
    with pytest.raises(KitError, match="unknown program 'tf3'") as raised:
        program("tf3")
    assert NAMES in raised.value.hint
    assert PROGRAMS["lesson"] is program("lesson")


def test_the_tf2_programs_are_each_a_strategy_on_one_port_of_the_lessons_standalone() -> None:
    """Both tf.distribute programs are measured against one TF2 standalone, the port of the
    lesson's standalone trainer; each cluster trainer is a diff against that port, so that the
    diff shows only what the strategy changes (under about 150 changed lines)."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    port = PROGRAMS["tf2-mirrored"].standalone
    assert port == PROGRAMS["tf2-ps"].standalone
    assert PROGRAMS["lesson"].standalone == walked.making(port)[0].source_name
    for name in ("tf2-mirrored", "tf2-ps"):
        patch = walked.making(PROGRAMS[name].cluster)[0]
        assert port == patch.source_name
        assert patch.added + patch.removed <= 150, (name, patch.added, patch.removed)


def test_the_main_role_is_the_one_that_logs_the_steps() -> None:
    assert ["standalone", "client", "client", "worker0", "client"] == [
        PROGRAMS["article"].main_role("standalone"), PROGRAMS["article"].main_role("cluster"),
        PROGRAMS["lesson"].main_role("cluster"), PROGRAMS["tf2-mirrored"].main_role("cluster"),
        PROGRAMS["tf2-ps"].main_role("cluster")]
    assert [False, False, False, False, True] == [p.asynchronous for p in PROGRAMS.values()]
    # Restarted as a whole, from the cluster's last checkpoint: the lesson made resumable, and the
    # all-reduce, whose PreemptionCheckpointHandler saves one on a preemption notice.
    assert ["lesson-resumable", "tf2-mirrored"] == [p.name for p in PROGRAMS.values() if p.resumes_whole]


def test_the_lesson_programs_trainers_are_stacked_on_the_articles() -> None:
    """The lesson's trainer for each mode is made from the article's trainer for that mode."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    assert {mode: PROGRAMS["article"].trainer(mode) for mode in MODES} == {
        mode: walked.making(PROGRAMS["lesson"].trainer(mode))[0].source_name for mode in MODES}
    # The resumable lesson: the lesson's standalone, and its cluster trainer with checkpoints.
    resumable = PROGRAMS["lesson-resumable"]
    assert resumable.standalone == PROGRAMS["lesson"].standalone
    assert PROGRAMS["lesson"].cluster == walked.making(resumable.cluster)[0].source_name


def test_every_help_text_and_setting_that_takes_programs_names_each_of_them() -> None:
    """The names are typed in reprokit/programs.py; the help reads them, invoke.yaml's comments
    are held to them here."""
    helps = [t.help[option] for t, option in ((tasks.reproduce, "program"), (tasks.mutants, "programs"),
                                               (tasks.bench, "programs"), (tasks.sweep, "program"))]
    comments = [line for line in (REPO / "invoke.yaml").read_text().splitlines()
                if line.strip().startswith(("program:", "bench_programs:", "sweep_programs:"))]
    assert 3 == len(comments)
    for text in helps + comments:
        assert all(name in text for name in PROGRAMS), text
