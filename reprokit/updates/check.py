"""The update check, run: a few steps of a program's real cluster on the kit's known batches, then
its standalone trainer as the oracle of each step, and the verdict (reprokit.updates.verdict).

The cluster is the program's own, as patched (a mutant's cluster trainer where the plan names
one): its ps, workers and client, or its all-reduce workers, or its coordinator, each a real
TensorFlow server or trainer on this machine, with the update probe (reprokit.updates.probe) in
the trainers' processes: the kit's batches in place of the data set, the weights recorded. It
runs on the local backend whatever backend the plan names: what it checks is the program's
arithmetic, which no backend changes, and the probe runs where the kit's package is. Then the
oracle, the program's standalone trainer, takes one step from each recorded state for each job;
one oracle serves any number of clusters whose programs share a standalone trainer
(`invoke mutants --probe-only` runs one per trainer). Nothing here reads the data set; each check
keeps, in its folder, both runs' logs, the snapshots and the jobs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reprokit.commands import Echo
from reprokit.errors import KitError
from reprokit.names import STANDALONE
from reprokit.programs import ALL_REDUCE, Program
from reprokit.run.backends import Backend
from reprokit.run.cluster import make_layout
from reprokit.run.request_ids import RequestIdFix
from reprokit.run.roles import UpdateProbe
from reprokit.run.runner import Outcome
from reprokit.run.tuning import PROFILES
from reprokit.updates.probe import GLOBAL_STEP, MODEL
from reprokit.updates.verdict import UpdateCheck, UpdatesVerdict, Weights, not_judged

UPDATES = "updates"  # a run folder's sub-folder
# Two steps: the first shows an update made at all, the second one made from the first's weights
# (what a stale gradient gets wrong). tf2-ps schedules one function per worker a step, each checked
# against every batch a worker could read next (one oracle step per candidate: 1 + 2 + ... + n),
# so its two steps are four functions. Seconds a program, most of them TensorFlow's start.
STEPS = 2
SEED = 20171010  # the article's date: any fixed number draws the same batches in every process
WORKERS = 2  # the oracle's batch holds two workers' batches


@dataclass(frozen=True)
class Place:
    """Where a check runs and with what: the local backend, the patched sources, the fix."""

    backend: Backend
    sources: Path
    data_dir: Path
    fix: RequestIdFix


@dataclass
class ClusterRecord:
    """A check's cluster run: its folder and program, what it recorded (None if it failed, and
    then ``verdict`` says why), and its outcome (for the caller's teardown)."""

    folder: Path
    program: Program
    check: UpdateCheck | None
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    verdict: UpdatesVerdict | None = None


def record_cluster(program: Program, place: Place, folder: Path, *, workers: int, cluster_trainer: str | None,
                   echo: Echo, length: int = STEPS) -> ClusterRecord:
    """``program``'s cluster (its trainer ``cluster_trainer``, a mutant's, if given) for ``length``
    steps on the kit's batches, its weights recorded for the first STEPS; its files in ``folder``/cluster."""
    if workers != WORKERS:
        why = f"the check combines {WORKERS} workers' batches, and this run has {workers}"
        return ClusterRecord(folder, program, None, verdict=not_judged(why))
    cluster_dir = folder / "cluster"
    record = ClusterRecord(folder, program, None)
    try:
        cluster_dir.mkdir(parents=True)
        echo(f"updates: {length} steps of the {program.name} cluster on the kit's batches, weights recorded"
             + (f" for the first {STEPS}" if length > STEPS else ""))
        probe = UpdateProbe(str(cluster_dir), SEED, snapshots=_snapshots(program, workers))
        roles = program.roles("cluster", length, workers, PROFILES["default"], make_layout("spread", workers),
                              place.backend, place.sources, place.data_dir, cluster_dir / "train", probe, place.fix,
                              cluster_trainer)
        outcome = record.outcomes["updates-cluster"] = place.backend.run(cluster_dir, roles,
                                                                         program.main_role("cluster"), None)
        if not outcome.ok:
            record.verdict = not_judged(f"the cluster's run failed: {outcome.message.splitlines()[0]} "
                                        f"(see {cluster_dir})")
            return record
        record.check = recorded_check(folder, program, workers)
    except (KitError, OSError) as error:
        record.verdict = not_judged(f"the check could not be made: {error}")
    return record


def run_oracle(records: Sequence[ClusterRecord], place: Place, folder: Path, echo: Echo) -> dict[str, Outcome]:
    """One oracle for every record that recorded a check, all of whose programs share a
    standalone trainer: it takes every job of every check in turn; each check's verdict is then
    set from its slice of the answers (or says why there is none). Its files in ``folder``."""
    ready = [r for r in records if r.check is not None]
    if not ready:
        return {}
    trainers = {r.program.standalone for r in ready}
    if len(trainers) != 1:
        raise ValueError(f"one oracle runs one standalone trainer, not {sorted(trainers)}")
    program = ready[0].program
    jobs = _write_jobs(folder / "jobs.json", [r.check for r in ready if r.check is not None])
    total = sum(len(r.check.jobs) for r in ready if r.check is not None)
    echo(f"updates: the {program.standalone} trainer takes {total} steps from the recorded weights")
    probe = UpdateProbe(str(folder), SEED, jobs=str(jobs))
    # One CPU, as each worker has: TensorFlow sums a convolution's gradient in as many parts as it
    # has threads, and another order of float32 sums moves an update (conv1's, summed over 147,456
    # terms that largely cancel) by a thousandth where the same order moves it by a millionth.
    roles = program.roles(STANDALONE, total, 1, PROFILES["default"], make_layout("spread", 1), place.backend,
                          place.sources, place.data_dir, folder / "train", probe, place.fix)
    outcome = place.backend.run(folder, roles, STANDALONE, None)
    start = 0
    for record in ready:
        assert record.check is not None
        count = len(record.check.jobs)
        try:
            if not outcome.ok:
                raise KitError(f"the oracle's run failed: {outcome.message.splitlines()[0]} (see {folder})")
            answers = [_load(folder / f"oracle-{j}.npz") for j in range(start, start + count)]
            record.verdict = record.check.verdict(answers)
        except (KitError, OSError, ValueError) as error:
            record.verdict = not_judged(str(error).splitlines()[0])
        start += count
    return {"updates-oracle": outcome}


@dataclass
class UpdatesRun:
    """One check's verdict and the outcomes of its two runs (for the reproduction's teardown)."""

    verdict: UpdatesVerdict
    outcomes: dict[str, Outcome] = field(default_factory=dict)


def check_updates(program: Program, place: Place, folder: Path, *, workers: int, cluster_trainer: str | None,
                  echo: Echo) -> UpdatesRun:
    """The verdict on one cluster: its run, then its own oracle (a reproduction's updates stage)."""
    record = record_cluster(program, place, folder, workers=workers, cluster_trainer=cluster_trainer, echo=echo)
    outcomes = dict(record.outcomes)
    if record.check is not None:
        (folder / "oracle").mkdir()
        outcomes.update(run_oracle([record], place, folder / "oracle", echo))
    return UpdatesRun(record.verdict or not_judged("the check did not finish"), outcomes)


def _snapshots(program: Program, workers: int) -> int:
    """How many snapshots the probe writes: before the first update and after each of the first
    STEPS steps (for tf2-ps, after each of their functions, one per worker a step)."""
    return STEPS * (workers if program.asynchronous else 1) + 1


def recorded_check(folder: Path, program: Program, workers: int) -> UpdateCheck:
    """The check of the cluster recorded in ``folder``/cluster: each copy's snapshots (every
    worker's of an all-reduce cluster, else the one process that holds the model's handle: the
    client, the coordinator) and what its data layer built, with the oracle steps that judge them."""
    cluster_dir = folder / "cluster"
    names = [f"worker{i}" for i in range(workers)] if program.shape == ALL_REDUCE else ["main"]
    expected, copies = _snapshots(program, workers), {}
    for name in names:
        count = len(list(cluster_dir.glob(f"{name}-*.npz")))
        if count != expected:
            raise KitError(f"the update probe of {name} wrote {count} of {expected} snapshots in {cluster_dir}",
                           f"see the logs in {cluster_dir}")
        copies[name] = [_load(cluster_dir / f"{name}-{n}.npz") for n in range(count)]
    pipelines = sum(int(json.loads((cluster_dir / f"{name}.json").read_text()).get("pipelines", 0)) for name in copies)
    return UpdateCheck(copies, workers, program.asynchronous, pipelines)


def _load(path: Path) -> Weights:
    if not path.is_file():
        raise KitError(f"the update probe wrote no {path.name}", f"see the logs in {path.parent}")
    with np.load(path) as found:
        return {name: found[name] for name in (*MODEL, GLOBAL_STEP)}


def _write_jobs(path: Path, checks: Sequence[UpdateCheck]) -> Path:
    """jobs.json (each job's two batches) and jobs.npz (each job's weights, `<j>/<name>`), every
    check's jobs one after the other."""
    states: dict[str, Any] = {}
    listed: list[dict[str, Any]] = []
    for check in checks:
        for job in check.jobs:
            j = len(listed)
            states.update({f"{j}/{name}": check.copies[job.copy][job.step][name] for name in (*MODEL, GLOBAL_STEP)})
            listed.append({"copy": job.copy, "step": job.step, "batches": [list(p) for p in job.parts]})
    np.savez(path.with_suffix(".npz"), **states)
    path.write_text(json.dumps(listed, indent=1))
    return path
