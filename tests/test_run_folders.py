"""Run folders: one per reproduction, never reused, never overwritten."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from reprokit.errors import KitError, RunFolderExistsError
from reprokit.run_folders import find_run, new_run_dir

NOW = datetime(2026, 12, 2, 15, 36, 33)


def test_a_named_run_gets_a_folder_of_that_name(tmp_path: Path):
    """--run-id first makes runs/first, creating runs/ as well."""
    runs = tmp_path / "runs"
    path = new_run_dir(runs, "first")
    assert runs / "first" == path
    assert path.is_dir()
    assert [] == list(path.iterdir())


def test_a_named_run_that_exists_is_refused_and_left_as_it_was(tmp_path: Path):
    """An old run with that name raises RunFolderExistsError; its files are untouched."""
    old = tmp_path / "first"
    old.mkdir()
    (old / "client.log").write_text("an older run's log\n")
    with pytest.raises(RunFolderExistsError) as caught:
        new_run_dir(tmp_path, "first")
    assert f"run folder {old} already exists (from an earlier run)" == caught.value.message
    assert "choose another --run-id" in caught.value.hint
    assert ["client.log"] == [p.name for p in old.iterdir()]
    assert "an older run's log\n" == (old / "client.log").read_text()


def test_an_unnamed_run_is_named_by_its_start_time(tmp_path: Path):
    """No --run-id: the folder is the date and time, second resolution."""
    assert tmp_path / "20261202-153633" == new_run_dir(tmp_path, now=NOW)


def test_unnamed_runs_in_the_same_second_get_a_suffix_not_the_same_folder(tmp_path: Path):
    """A second and third run in that second get -1 and -2; the first keeps its files."""
    first = new_run_dir(tmp_path, now=NOW)
    (first / "run.json").write_text("{}")
    second = new_run_dir(tmp_path, now=NOW)
    third = new_run_dir(tmp_path, now=NOW)
    assert [tmp_path / "20261202-153633-1", tmp_path / "20261202-153633-2"] == [second, third]
    assert "{}" == (first / "run.json").read_text()


def _runs(tmp_path: Path, *names: str) -> list[Path]:
    paths = []
    for age, name in enumerate(reversed(names)):
        path = tmp_path / name
        path.mkdir()
        (path / "run.json").write_text("{}")  # what makes a folder a reproduction's
        stamp = 1_800_000_000 - 60 * age  # the last name given is the newest
        os.utime(path, (stamp, stamp))
        paths.append(path)
    return list(reversed(paths))


def test_latest_is_the_run_folder_changed_last(tmp_path: Path):
    """'latest' goes by modification time, not by name."""
    old, new = _runs(tmp_path, "zzz-older", "aaa-newer")
    assert new == find_run(tmp_path, "latest")


def test_a_run_is_found_by_its_id_or_its_path(tmp_path: Path):
    """An id is looked up under runs/; a path is taken as it is."""
    (run,) = _runs(tmp_path, "r1")
    assert run == find_run(tmp_path, "r1")
    assert run == find_run(tmp_path / "elsewhere", str(run))


def test_latest_with_no_runs_says_to_reproduce_first(tmp_path: Path):
    """An empty runs/ is an error with the command to make a run."""
    with pytest.raises(KitError, match=f"no runs under {tmp_path}") as caught:
        find_run(tmp_path, "latest")
    assert "invoke reproduce" in caught.value.hint


def test_an_unknown_run_is_refused_naming_where_it_looked(tmp_path: Path):
    """The message names the id and the runs folder."""
    _runs(tmp_path, "r1")
    with pytest.raises(KitError, match=f"no run folder 'r2' \\(looked in {tmp_path}\\)"):
        find_run(tmp_path, "r2")


def test_latest_skips_folders_that_are_not_reproductions(tmp_path: Path):
    """A benchmark's folder (no run.json), even a newer one, is not what 'latest' means."""
    (run,) = _runs(tmp_path, "r1")
    (tmp_path / "bench-folder").mkdir()
    assert run == find_run(tmp_path, "latest")
