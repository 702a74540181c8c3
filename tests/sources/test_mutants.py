"""mutants/: the catalogue of wrong programs, read and applied as strictly as patches/series."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reprokit.errors import KitError, PatchError
from reprokit.programs import PROGRAMS
from reprokit.sources import series
from reprokit.sources.mutants import EFFECTS, load_catalogue, mutant_of
from tests.support import REPO

MUTANTS = REPO / "mutants"
# The bugs the verdicts issue asks the catalogue to hold at least, and the plain slow learner.
REQUIRED = {"summed", "divided-twice", "one-worker-dropped", "stale", "same-examples", "no-all-reduce", "fifth-rate"}


def test_the_catalogue_holds_every_required_bug_each_planted_in_a_programs_cluster_trainer() -> None:
    catalogue = load_catalogue(MUTANTS)
    assert REQUIRED <= {m.slug for m in catalogue}
    for mutant in catalogue:
        assert mutant.program in PROGRAMS and mutant.effect in EFFECTS
        assert mutant.trainer == f"cifar10_mutant_{mutant.slug.replace('-', '_')}_train.py"
        assert mutant.bug and len(mutant.why) > 100, f"{mutant.slug}: say why the bug is realistic"
    assert {"article", "tf2-mirrored"} <= {m.program for m in catalogue}


def test_every_mutant_applies_strictly_after_the_series_and_says_what_is_wrong_in_the_code() -> None:
    """Each mutant file differs from its program's true cluster trainer, and marks the bug."""
    files = series.walk(REPO / "upstream", REPO / "patches", strict=True, stacked=MUTANTS).files
    for mutant in load_catalogue(MUTANTS):
        true_trainer = files[PROGRAMS[mutant.program].cluster]
        assert files[mutant.trainer] != true_trainer
        assert "# MUTANT:" in files[mutant.trainer]
        compile(files[mutant.trainer], mutant.trainer, "exec")


def test_the_series_alone_makes_no_mutant() -> None:
    """build/patched stays what patches/series makes: the catalogue goes to a folder of its own."""
    files = series.walk(REPO / "upstream", REPO / "patches", strict=True).files
    assert not any(name.startswith("cifar10_mutant_") for name in files)


def _catalogue_with(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "mutants"
    shutil.copytree(MUTANTS, folder)
    patch = folder / "fifth-rate.patch"
    patch.write_text(patch.read_text().replace(old, new, 1))
    return folder


@pytest.mark.parametrize("old, new, expected", [
    ("Mutant-Program: article", "Mutant-Program: articel", "Mutant-Program 'articel' is not a program"),
    ("Mutant-Effect: slower", "Mutant-Effect: slow", "Mutant-Effect 'slow' is not one of slower, faster"),
    ("--- a/cifar10_cluster_train.py", "--- a/cifar10_standalone_train.py",
     "patches cifar10_standalone_train.py, not the article program's cluster trainer cifar10_cluster_train.py"),
])
def test_a_mutant_with_a_wrong_header_is_refused_naming_the_field(tmp_path: Path, old: str, new: str,
                                                                   expected: str) -> None:
    with pytest.raises(PatchError) as caught:
        load_catalogue(_catalogue_with(tmp_path, old, new))
    assert expected in caught.value.message and "fifth-rate.patch" in caught.value.message


def test_a_mutant_is_asked_for_by_name_and_program() -> None:
    assert "cifar10_mutant_fifth_rate_train.py" == mutant_of(MUTANTS, "fifth-rate", "article").trainer
    with pytest.raises(KitError, match="no mutant 'fifth'"):
        mutant_of(MUTANTS, "fifth", "article")
    with pytest.raises(KitError, match="is planted in the article program, not in lesson"):
        mutant_of(MUTANTS, "fifth-rate", "lesson")
