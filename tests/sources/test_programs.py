"""The programs a run can train are facts about patches/series: the series must make each one."""

from __future__ import annotations

from reprokit.names import MODES
from reprokit.sources import series
from reprokit.sources.programs import PROGRAMS, trainer_files
from tests.support import REPO


def test_every_trainer_a_program_runs_is_one_the_series_makes() -> None:
    """Each file PROGRAMS names is the target of a patch in patches/series."""
    made = {patch.target_name for patch, _ in series.walk(REPO / "upstream", REPO / "patches", strict=True).applied()}
    assert set() == trainer_files() - made


def test_every_program_names_a_trainer_for_every_mode() -> None:
    """The article's and the lesson's program each run a standalone and a cluster trainer."""
    assert {"article": set(MODES), "lesson": set(MODES)} == {name: set(modes) for name, modes in PROGRAMS.items()}


def test_the_lesson_programs_trainers_are_stacked_on_the_articles() -> None:
    """The lesson's trainer for each mode is made from the article's trainer for that mode."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    assert {mode: PROGRAMS["article"][mode] for mode in MODES} == {
        mode: walked.making(PROGRAMS["lesson"][mode])[0].source_name for mode in MODES}
