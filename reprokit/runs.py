"""Run folders: one per reproduction, never reused, never overwritten."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from reprokit.errors import KitError, RunFolderExistsError


def new_run_dir(runs_root: Path, run_id: str | None = None, now: datetime | None = None) -> Path:
    """Create runs/<run-id>; a generated id gets a suffix rather than touching an old run."""
    runs_root.mkdir(parents=True, exist_ok=True)
    if run_id:
        path = runs_root / run_id
        try:
            path.mkdir()
        except FileExistsError:
            raise RunFolderExistsError(
                f"run folder {path} already exists (from an earlier run)",
                "choose another --run-id, or leave it out for a fresh one; old runs are never overwritten",
            ) from None
        return path
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = runs_root / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise KitError(f"could not find a free run folder name under {runs_root}")


def find_run(runs_root: Path, name: str) -> Path:
    """A finished run by id, path, or 'latest'."""
    if name == "latest":
        # Reproductions only: a benchmark's folder (no run.json) is not a run to judge or report.
        runs = sorted((p for p in runs_root.glob("*") if (p / "run.json").is_file()),
                      key=lambda p: p.stat().st_mtime)
        if not runs:
            raise KitError(f"no runs under {runs_root}", "run `invoke reproduce` first")
        return runs[-1]
    for candidate in (Path(name), runs_root / name):
        if candidate.is_dir():
            return candidate
    raise KitError(f"no run folder {name!r} (looked in {runs_root})", "list them with `ls runs/`")
