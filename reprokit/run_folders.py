"""Run folders: one per run, never reused, never overwritten; and run.json, what a run was asked."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from reprokit.errors import KitError, RunFolderExistsError
from reprokit.files import FOLDER_MODE, write_json
from reprokit.names import RUN_FILE

# What a folder under runs/ holds: a run (judged and reported), or a benchmark's runs.
RUN_KINDS = ("run", "bench", "sweep", "network", "mutants")


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
        path.chmod(FOLDER_MODE)  # whatever the umask: containers read it as the same user
        return path
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = runs_root / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        path.chmod(FOLDER_MODE)
        return path
    raise KitError(f"could not find a free run folder name under {runs_root}")


def find_run(runs_root: Path, name: str) -> Path:
    """A finished run by id, path, or 'latest'."""
    if name == "latest":
        # Runs only: a benchmark's folder is not a run to judge or report.
        runs = sorted((p for p in runs_root.glob("*") if _is_run(p)), key=lambda p: p.stat().st_mtime)
        if not runs:
            raise KitError(f"no runs under {runs_root}", "run `invoke reproduce` first")
        return runs[-1]
    for candidate in (Path(name), runs_root / name):
        if candidate.is_dir():
            return candidate
    raise KitError(f"no run folder {name!r} (looked in {runs_root})", "list them with `ls runs/`")


def _is_run(folder: Path) -> bool:
    try:
        return json.loads((folder / RUN_FILE).read_text()).get("kind", "run") == "run"
    except (OSError, ValueError, AttributeError):
        return False


@dataclass(frozen=True)
class RunInfo:
    """run.json: what a run was asked to do, written before anything runs; the judge and the
    report read the run's options from here and from nowhere else."""

    steps: int
    workers: int
    modes: list[str]
    program: str
    tuning: str
    layout: str
    cpus: dict[str, str]
    data_source: str
    started: str
    kind: str  # one of RUN_KINDS
    mutant: str | None  # the mutant (mutants/) whose trainer ran in place of the cluster's
    repetitions: int  # pairs of runs: the first in the run folder, the others in repetitions/<n>/

    def save(self, run_dir: Path) -> Path:
        return write_json(run_dir / RUN_FILE, asdict(self))

    @classmethod
    def load(cls, run_dir: Path) -> "RunInfo":
        path = run_dir / RUN_FILE
        if not path.is_file():
            raise KitError(f"{path} is missing: {run_dir} is not a run folder of the kit",
                           "give a folder made by `invoke reproduce`, `standalone` or `client` (see `ls runs/`)")
        try:
            # A run.json from before kinds, mutants and repetitions: a run of one pair.
            return cls(**{"kind": "run", "mutant": None, "repetitions": 1, **json.loads(path.read_text())})
        except (ValueError, TypeError) as error:
            raise KitError(f"{path} is not a run.json of this kit version: {error}",
                           "run the experiment again with this version") from None
