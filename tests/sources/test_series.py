"""The one walk of patches/series: strict for the build, tolerant for verify's per-patch report."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from reprokit.errors import KitError, PatchError, UpstreamDriftError
from reprokit.sources import series
from tests.support import REPO, read_lines

TRAINER = "cifar10_multi_gpu_train.py"
SERIES = ["cifar10_standalone_train.patch", "cifar10_cluster_train.patch",
          "cifar10_lesson_standalone_train.patch", "cifar10_lesson_cluster_train.patch",
          "cifar10_tf2_standalone_train.patch", "cifar10_tf2_mirrored_train.patch", "cifar10_tf2_ps_train.patch",
          "cifar10_lesson_resumable_train.patch"]


def edit_line(path: Path, index: int, text: str) -> None:
    lines = read_lines(path)
    lines[index] = text
    path.write_text("\n".join(lines) + "\n")


def test_the_strict_walk_applies_every_patch_in_series_order_stacking_the_lessons_on_the_articles() -> None:
    """Each lesson patch applies to the trainer the article's patch before it made."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    assert SERIES == [patch.name for patch, _ in walked.applied()]
    assert [[] for _ in SERIES] == [step.errors for step in walked.steps]
    sources = {patch.name: source for patch, source in walked.applied()}
    assert walked.files["cifar10_standalone_train.py"].splitlines() == sources["cifar10_lesson_standalone_train.patch"]
    assert walked.files["cifar10_cluster_train.py"].splitlines() == sources["cifar10_lesson_cluster_train.patch"]
    assert read_lines(REPO / "upstream" / TRAINER) == sources["cifar10_cluster_train.patch"]


def test_the_strict_walk_holds_upstreams_files_as_they_are_then_each_made_file() -> None:
    """The files are upstream's *.py, byte for byte, then the eight trainers in series order."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    upstream = sorted(p.name for p in (REPO / "upstream").glob("*.py"))
    made = ["cifar10_standalone_train.py", "cifar10_cluster_train.py", "cifar10_lesson_standalone_train.py",
            "cifar10_lesson_cluster_train.py", "cifar10_tf2_standalone_train.py", "cifar10_tf2_mirrored_train.py",
            "cifar10_tf2_ps_train.py", "cifar10_lesson_resumable_train.py"]
    assert upstream + made == list(walked.files)
    assert (REPO / "upstream" / "cifar10.py").read_text() == walked.files["cifar10.py"]


def test_the_strict_walk_refuses_a_drifted_upstream_the_tolerant_one_walks_it(kit: Path) -> None:
    """A changed upstream trainer: strict raises the drift; tolerant reports the mismatching hunk."""
    edit_line(kit / "upstream" / TRAINER, 187, "    # edited")
    with pytest.raises(UpstreamDriftError, match=f"upstream/{TRAINER} has sha256"):
        series.walk(kit / "upstream", kit / "patches", strict=True)
    walked = series.walk(kit / "upstream", kit / "patches", strict=False)
    standalone, cluster, *_ = walked.steps
    assert [] == standalone.errors
    assert 1 == len(cluster.errors)
    error = cluster.errors[0]
    assert isinstance(error, PatchError)
    assert ("cifar10_cluster_train.patch", 4, 188, "    # edited") == (error.patch, error.hunk, error.line,
                                                                      error.found)


def test_the_strict_walk_raises_the_first_mismatch_with_hunk_line_and_found(
        kit: Path, record_sums: Callable[[Path], None]) -> None:
    """A drifted, re-recorded upstream: the build stops at the cluster patch's hunk 4, line 188."""
    edit_line(kit / "upstream" / TRAINER, 187, "    # edited")
    record_sums(kit / "upstream")
    with pytest.raises(PatchError) as caught:
        series.walk(kit / "upstream", kit / "patches", strict=True)
    assert ("cifar10_cluster_train.patch", 4, 188, "    # edited") == (
        caught.value.patch, caught.value.hunk, caught.value.line, caught.value.found)


def test_the_tolerant_walk_goes_on_past_a_failed_patch_to_the_patches_that_do_not_need_it(kit: Path) -> None:
    """The cluster patch fails: the lesson's cluster patch has no source; the lesson's standalone one applies."""
    edit_line(kit / "upstream" / TRAINER, 187, "    # edited")
    walked = series.walk(kit / "upstream", kit / "patches", strict=False)
    _, _, lesson_standalone, lesson_cluster, *_ = walked.steps
    assert (True, []) == (lesson_standalone.source is not None, lesson_standalone.errors)
    assert lesson_cluster.source is None
    assert ["cifar10_lesson_cluster_train.patch patches cifar10_cluster_train.py, which neither upstream/ nor an "
            "earlier patch of the series makes"] == [e.message for e in lesson_cluster.errors]
    assert "cifar10_cluster_train.py" not in walked.files
    # The edited line reaches the lesson's standalone too, and the tf2 patch rewrites it: it fails.
    assert ["cifar10_standalone_train.patch", "cifar10_lesson_standalone_train.patch"] == [
        patch.name for patch, _ in walked.applied()]


def test_the_tolerant_walk_records_a_malformed_patch_as_a_step_without_a_patch(
        kit: Path, patch_sample: Callable[[str], Path]) -> None:
    """A broken hunk header in the cluster patch: its step holds the parse error; the others are walked."""
    shutil.copy(patch_sample("last_hunk_header_broken.patch"), kit / "patches" / "cifar10_cluster_train.patch")
    walked = series.walk(kit / "upstream", kit / "patches", strict=False)
    assert SERIES == [step.path.name for step in walked.steps]
    broken = walked.steps[1]
    assert (None, None) == (broken.patch, broken.source)
    assert "line 103: hunk 5 has a broken header" in str(broken.errors[0])
    assert walked.steps[0].errors == [] and walked.steps[2].errors == []


def test_both_walks_raise_when_the_series_names_a_missing_file(kit: Path, patch_sample: Callable[[str], Path]) -> None:
    """No series to walk: strict and tolerant alike raise, naming the missing patch."""
    shutil.copy(patch_sample("missing_file.series"), kit / "patches" / "series")
    for strict in (True, False):
        with pytest.raises(PatchError, match="names cifar10_missing_train.patch, which does not exist"):
            series.walk(kit / "upstream", kit / "patches", strict=strict)


def test_a_patch_that_would_overwrite_a_file_is_a_fault_of_that_patch(kit: Path) -> None:
    """A series naming the standalone patch twice: the second would overwrite the first's trainer."""
    (kit / "patches" / "series").write_text("cifar10_standalone_train.patch\ncifar10_standalone_train.patch\n")
    walked = series.walk(kit / "upstream", kit / "patches", strict=False)
    assert ["cifar10_standalone_train.patch would overwrite cifar10_standalone_train.py"] == [
        e.message for e in walked.steps[1].errors]
    with pytest.raises(PatchError, match="would overwrite cifar10_standalone_train.py"):
        series.walk(kit / "upstream", kit / "patches", strict=True)


def test_making_names_the_patch_of_a_trainer_and_the_lines_it_applies_to() -> None:
    """The lesson's cluster trainer is made by the lesson's cluster patch, from the article's cluster trainer."""
    walked = series.walk(REPO / "upstream", REPO / "patches", strict=True)
    patch, source = walked.making("cifar10_lesson_cluster_train.py")
    assert "cifar10_lesson_cluster_train.patch" == patch.name
    assert walked.files["cifar10_cluster_train.py"].splitlines() == source
    with pytest.raises(KitError, match="no patch in patches/series makes cifar10_gone.py"):
        walked.making("cifar10_gone.py")
