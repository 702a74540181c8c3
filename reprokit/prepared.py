"""The one road to a run: everything a run needs, made in one place before anything starts.

Every task that makes runs (reproduce, standalone, client, stack-file, bench, sweep) calls
:func:`prepare` with its plan, checked at the boundary (reprokit.options). It checks the CPU
layout, applies the patches, builds the request-id fix, and only then makes the run folder and
writes run.json, so that a bad option, a drifted upstream or a corrupt patch leaves no half-made
folder behind. What it returns is all the run needs, the plan included: the stages take the
prepared run, and nothing is read back from disk or asked of the request again. A reproduction
and a bench then run the same first two stages, `input_stages`: what preparing did, and the data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from reprokit.data.download import DownloadProgress
from reprokit.data.prepare import DataResult, prepare_data
from reprokit.names import MODES
from reprokit.options import Options, RunPlan
from reprokit.programs import PROGRAMS, Program
from reprokit.run import request_ids
from reprokit.run.backends import Backend
from reprokit.run.cluster import CpuLayout, make_layout
from reprokit.run.request_ids import RequestIdFix
from reprokit.run_folders import RUN_KINDS, RunInfo, new_run_dir
from reprokit.settings import Settings
from reprokit.sources import workspace
from reprokit.sources.mutants import mutant_of
from reprokit.stages import Stages


@dataclass(frozen=True)
class Prepared:
    """A plan made ready: its run folder with its run.json, the patched sources, the fix, the CPU
    layout and the program."""

    plan: RunPlan
    run_dir: Path
    info: RunInfo
    sources: Path
    fix: RequestIdFix
    layout: CpuLayout
    lines: tuple[str, ...]  # what preparing did, for the prepare stage's log
    trainers: dict[str, str]  # the trainer file of each mode: the program's, or a mutant's for the cluster

    @property
    def options(self) -> Options:
        return self.plan.options

    @property
    def backend(self) -> Backend:
        return self.plan.backend

    @property
    def program(self) -> Program:
        return PROGRAMS[self.plan.options.program]


def prepare(settings: Settings, plan: RunPlan, kind: str = "run") -> Prepared:
    """Check the layout, apply the patches, build the fix, then make the run folder (``kind``:
    a run, which `compare-logs` and `report` find, or a bench, sweep or network folder)."""
    if kind not in RUN_KINDS:
        raise ValueError(f"unknown run kind {kind!r}")
    started = time.monotonic()
    options = plan.options
    mutant = None if options.mutant is None else mutant_of(settings.mutants_dir, options.mutant, options.program)
    layout = make_layout(options.layout, options.workers, explicit=options.cpus)
    trainers = {mode: PROGRAMS[options.program].trainer(mode) for mode in MODES}
    if mutant is None:
        sources = settings.sources_dir
        applied = workspace.apply_all(settings.upstream_dir, settings.patches_dir, sources)
    else:  # the catalogue's own folder: build/patched stays exactly what patches/series makes
        sources = settings.build_dir / "mutants"
        applied = workspace.apply_all(settings.upstream_dir, settings.patches_dir, sources,
                                      stacked=settings.mutants_dir)
        trainers["cluster"] = mutant.trainer
    fix = request_ids.build(settings.build_dir, settings.request_id_fix)
    run_dir = new_run_dir(settings.runs_dir, options.run_id).resolve()
    info = RunInfo(options.steps, options.workers, list(options.modes), options.program, options.tuning.name,
                   layout.name, layout.cpus, options.data_source, datetime.now().isoformat(timespec="seconds"),
                   kind, options.mutant, options.repetitions)
    info.save(run_dir)
    lines = (f"patched sources in {applied.out_dir}: " + ("already applied" if applied.already_applied else "applied"),
             f"request-id fix: {fix.summary}",
             f"run folder {run_dir} and its run.json, in {time.monotonic() - started:.1f} s")
    return Prepared(plan, run_dir, info, sources.resolve(), fix, layout, lines, trainers)


def input_stages(stages: Stages, settings: Settings, prepared: Prepared,
                 download: DownloadProgress | None) -> DataResult:
    """The first stages of every run folder: "prepare" logs what preparing did, "data" gets the
    data set (downloaded, copied or generated, and checked)."""
    with stages.stage("prepare") as say:
        for line in prepared.lines:
            say(line)
    with stages.stage("data") as say:
        data = prepare_data(prepared.options.data_source, settings.data_dir,
                            records_per_file=prepared.options.synthetic_records, progress=download)
        say(f"data: {data.source} in {data.batches_dir}")
        if data.notice:
            say("NOTICE: " + data.notice)
    return data
