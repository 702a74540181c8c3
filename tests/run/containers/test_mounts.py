"""A run's folders as its containers see them: inputs read-only, the run folder read-write."""

from __future__ import annotations

from pathlib import Path

from reprokit.run.containers.mounts import RunInputs, run_mounts


def test_a_run_mounts_its_inputs_read_only_and_its_folder_read_write(tmp_path: Path) -> None:
    """Before the native fixes are built there is no folder of them to mount."""
    inputs = RunInputs(tmp_path / "patched", tmp_path / "data", tmp_path / "native")
    run_dir = tmp_path / "runs" / "r1"
    expected = {str(tmp_path / "data"): {"bind": str(tmp_path / "data"), "mode": "ro"},
                str(tmp_path / "patched"): {"bind": str(tmp_path / "patched"), "mode": "ro"},
                str(run_dir): {"bind": str(run_dir), "mode": "rw"}}
    assert expected == run_mounts(inputs, run_dir)


def test_the_native_fixes_are_mounted_once_built(tmp_path: Path) -> None:
    """An LD_PRELOAD path names a host path: it must read the same inside."""
    (tmp_path / "native").mkdir()
    mounts = run_mounts(RunInputs(tmp_path / "patched", tmp_path / "data", tmp_path / "native"), tmp_path / "run")
    assert {"bind": str(tmp_path / "native"), "mode": "ro"} == mounts[str(tmp_path / "native")]
