"""The programs a run can train are facts about patches/series: the series must make each one."""

from __future__ import annotations

from reprokit.names import MODES
from reprokit.sources import series
from reprokit.sources.programs import CLUSTER_SHAPES, PROGRAMS, main_role, trainer_files
from tests.support import REPO


def test_every_trainer_a_program_runs_is_one_the_series_makes() -> None:
    """Each file PROGRAMS names is the target of a patch in patches/series."""
    made = {patch.target_name for patch, _ in series.walk(REPO / "upstream", REPO / "patches", strict=True).applied()}
    assert set() == trainer_files() - made


def test_every_program_names_a_trainer_for_every_mode() -> None:
    """Every program runs a standalone and a cluster trainer, and says how its cluster runs."""
    assert {name: set(MODES) for name in ("article", "lesson", "tf2-mirrored", "tf2-ps")} == \
        {name: set(modes) for name, modes in PROGRAMS.items()}
    assert set(PROGRAMS) == set(CLUSTER_SHAPES)


def test_the_tf2_programs_share_one_standalone_stacked_on_the_lessons() -> None:
    """Both tf.distribute programs are measured against one TF2 standalone, made from the lesson's
    standalone; their cluster trainers are made from the lesson's cluster trainer."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    assert PROGRAMS["tf2-mirrored"]["standalone"] == PROGRAMS["tf2-ps"]["standalone"]
    assert {PROGRAMS["lesson"][mode] for mode in MODES} == {
        walked.making(PROGRAMS[program][mode])[0].source_name for program in ("tf2-mirrored", "tf2-ps")
        for mode in MODES}


def test_the_main_role_is_the_one_that_logs_the_steps() -> None:
    assert ["standalone", "client", "client", "worker0", "client"] == [
        main_role("article", "standalone"), main_role("article", "cluster"), main_role("lesson", "cluster"),
        main_role("tf2-mirrored", "cluster"), main_role("tf2-ps", "cluster")]


def test_the_lesson_programs_trainers_are_stacked_on_the_articles() -> None:
    """The lesson's trainer for each mode is made from the article's trainer for that mode."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    assert {mode: PROGRAMS["article"][mode] for mode in MODES} == {
        mode: walked.making(PROGRAMS["lesson"][mode])[0].source_name for mode in MODES}
