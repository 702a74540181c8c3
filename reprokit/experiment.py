"""A reproduction as named stages: prepare, data, standalone, cluster, check, teardown, report.

Each stage writes its own log (runs/<id>/stages/NN-<stage>.log); teardown and the report always
run, and an error in them never hides the error that came before. `invoke reproduce`,
`invoke standalone`, `invoke client` and the benchmark all build their roles here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from reprokit.commands import Echo
from reprokit.data.download import DownloadProgress
from reprokit.data.prepare import DataResult, prepare_data
from reprokit.errors import ClusterError, KitError
from reprokit.judge.verdict import Judgement, judge_run
from reprokit.names import MAIN_ROLE, MODES, STANDALONE
from reprokit.options import Options, check_backend, run_options
from reprokit.report import markdown as report
from reprokit.report.results import RunResults, build_results
from reprokit.run import request_ids
from reprokit.run.backends import Backend, Exposure, make_backend
from reprokit.run.cluster import (
    Cluster,
    CpuLayout,
    load_cluster,
    load_placement,
    make_layout,
)
from reprokit.run.manual import ExternalCluster
from reprokit.run.process import still_running
from reprokit.run.request_ids import RequestIdFix
from reprokit.run.roles import (
    PROGRAMS,
    Instruments,
    RoleSpec,
    Trainer,
    TrainingArgs,
    cluster_roles,
    standalone_role,
)
from reprokit.run.runner import Outcome, Progress
from reprokit.runs import RunInfo, new_run_dir
from reprokit.settings import Settings
from reprokit.sources import workspace
from reprokit.stages import StageRecord, Stages


@dataclass(frozen=True)
class Request:
    """A run as a task was asked for it, before any checking: the command line's text, None
    where the person gave nothing (invoke.yaml's setting then applies)."""

    steps: Any = None
    quick: bool = False
    workers: Any = None
    layout: str | None = None
    cpus: str = ""
    source: str | None = None
    backend: str | None = None
    isolation: str | None = None
    run_id: str | None = None
    tuning: str | None = None
    program: str | None = None
    link: str = "none"
    cluster_file: str | None = None  # the swarm backend: worker count and placement from a cluster file
    modes: tuple[str, ...] = MODES

    def options(self, s: Settings, workers: Any = None) -> Options:
        steps = self.steps if self.steps is not None else (s.quick_steps if self.quick else s.steps)
        if workers is None and self.cluster_file:
            workers = len(load_cluster(Path(self.cluster_file)).workers)
        return run_options(s, steps=steps, workers=workers or self.workers or s.workers,
                           layout=self.layout or s.layout, cpus=self.cpus or "", source=self.source or s.data_source,
                           run_id=self.run_id, tuning=self.tuning or "default", program=self.program or "article",
                           modes=self.modes)

    def backend_name(self, s: Settings) -> str:
        return self.backend or s.backend

    def isolation_mode(self, s: Settings) -> str:
        return self.isolation or s.isolation

    def placement(self) -> dict[str, str]:
        """The cluster file's placement of roles on Swarm nodes; none without a cluster file."""
        return load_placement(Path(self.cluster_file)) if self.cluster_file else {}


@dataclass
class Reproduction:
    run_dir: Path
    stages: list[StageRecord]
    judgement: Judgement | None = None
    results: RunResults | None = None
    error: str = ""
    exposure: Exposure | None = None

    @property
    def passed(self) -> bool:
        return not self.error and self.judgement is not None and self.judgement.passed


def mode_roles(mode: str, options: Options, layout: CpuLayout, backend: Backend, sources: Path, data_dir: Path,
               train_dir: Path, instruments: Instruments | None = None,
               fix: RequestIdFix = RequestIdFix(None), trainer_file: str | None = None) -> list[RoleSpec]:
    """The roles of one mode, in start order: what a reproduction and the benchmark both run.
    Every TensorFlow process gets the request-id fix when there is one (request_ids.py).
    ``trainer_file``: another trainer in ``sources`` than the program's (the benchmark's ablation)."""
    training = TrainingArgs(options.steps, str(data_dir), str(train_dir))
    trainer = Trainer(backend.python, str(sources), trainer_file or PROGRAMS[options.program][mode], instruments)
    tuning = options.tuning
    env, server_env = {**tuning.env, **fix.env()}, {**tuning.server_env, **fix.env()}
    if mode == "standalone":
        return [standalone_role(training, trainer, cpus=layout.for_role(STANDALONE), env=env)]
    return cluster_roles(backend.cluster(options.workers), training, trainer, layout.cpus,
                         role_server=backend.role_server, threads=tuning.server_threads, env=env,
                         server_env=server_env, client_hosts_ps=tuning.client_hosts_ps,
                         client_waits=backend.client_waits)


def run(settings: Settings, request: Request, echo: Echo, progress: Progress | None = None,
        download: DownloadProgress | None = None) -> Reproduction:
    """Check the request, choose its backend, and reproduce."""
    options = request.options(settings)
    name, isolation = request.backend_name(settings), request.isolation_mode(settings)
    check_backend(name, isolation, options.tuning, request.link, request.cluster_file)
    backend = make_backend(settings, name, isolation, request.link, request.placement(), echo)
    return reproduce(settings, options, backend, echo, progress, download)


def run_client(settings: Settings, request: Request, cluster: Cluster, echo: Echo,
               progress: Progress | None = None, download: DownloadProgress | None = None) -> Reproduction:
    """The cluster mode against servers started elsewhere: only the client runs here."""
    options = request.options(settings, workers=len(cluster.workers))
    backend = ExternalCluster(cluster, settings.probe_timeout_s, settings.watchdog)
    return reproduce(settings, options, backend, echo, progress, download)


def reproduce(settings: Settings, options: Options, backend: Backend, echo: Echo,
              progress: Progress | None = None, download: DownloadProgress | None = None) -> Reproduction:
    """Run every stage; the run folder holds the logs, results.json, report.md and the plot."""
    # The layout first: a bad --cpus must fail before a run folder exists.
    layout = make_layout(options.layout, options.workers, explicit=options.cpus)
    run_dir = new_run_dir(settings.runs_dir, options.run_id).resolve()
    stages = Stages(run_dir, echo)
    result = Reproduction(run_dir, stages.records)
    outcomes: dict[str, Outcome] = {}
    data: DataResult | None = None
    fix = RequestIdFix(None, "not built: the run stopped before its prepare stage")
    try:
        RunInfo(options.steps, options.workers, list(options.modes), options.program, options.tuning.name,
                layout.name, layout.cpus, options.data_source, datetime.now().isoformat(timespec="seconds")
                ).save(run_dir)
        with stages.stage("prepare") as say:
            applied = workspace.apply_all(settings.upstream_dir, settings.patches_dir, settings.sources_dir)
            say(f"patched sources in {applied.out_dir}: "
                + ("already applied" if applied.already_applied else "applied"))
            fix = request_ids.build(settings.build_dir, settings.request_id_fix)
            say(f"request-id fix: {fix.summary}")
        with stages.stage("data") as say:
            data = prepare_data(options.data_source, settings.data_dir, records_per_file=options.synthetic_records,
                                progress=download)
            say(f"data: {data.source} in {data.batches_dir}")
            if data.notice:
                say("NOTICE: " + data.notice)
        for mode in options.modes:
            with stages.stage(mode) as say:
                roles = mode_roles(mode, options, layout, backend, settings.sources_dir.resolve(), data.data_dir,
                                   run_dir / f"train_{mode}", fix=fix)
                for role in roles:
                    say(f"{role.name}: cpus {role.cpus or 'any'}" + (f", {role.address}" if role.address else ""))
                if any(r.is_server for r in roles):
                    result.exposure = backend.exposure(backend.cluster(options.workers))
                    say(f"servers listen on: {result.exposure.where}")
                outcome = backend.run(run_dir, roles, MAIN_ROLE[mode], progress)
                outcomes[mode] = outcome
                if not outcome.ok:
                    raise ClusterError(f"the {mode} run failed: {outcome.message}", f"logs are kept in {run_dir}")
                say(f"{mode}: finished, logs in {run_dir}")
        with stages.stage("check") as say:
            result.judgement = judge_run(run_dir, settings.rules)
            for line in result.judgement.summary.lines:
                say(line)
    except (KitError, OSError) as exc:
        result.error = str(exc) if isinstance(exc, KitError) else f"could not write in {run_dir}: {exc}"
    finally:
        _teardown(stages, backend, outcomes, result)
        _report(stages, settings, options, backend, data, outcomes, result, fix)
    return result


def _teardown(stages: Stages, backend: Backend, outcomes: dict[str, Outcome], result: Reproduction) -> None:
    with stages.stage("teardown") as say:
        left = backend.teardown() + [str(pid) for pid in still_running(outcomes)]
        say("nothing left running" if not left else "left running: " + ", ".join(left))
        if left and not result.error:
            result.error = "teardown left things running: " + ", ".join(left)


def _report(stages: Stages, settings: Settings, options: Options, backend: Backend,
            data: DataResult | None, outcomes: dict[str, Outcome], result: Reproduction, fix: RequestIdFix) -> None:
    """The report stage: its own failure is added to the run's error, never put in its place."""
    try:
        with stages.stage("report") as say:
            result.results = build_results(settings, options, backend.facts(), data, outcomes, result.judgement,
                                           stages.records, result.error, result.exposure,
                                           {"request_id_fix": fix.summary})
            written = report.write_all(result.run_dir, result.results)
            say("wrote " + ", ".join(str(p.name) for p in written))
    except (KitError, OSError) as exc:
        failure = f"the report could not be written: {exc}"
        result.error = f"{result.error}\n{failure}" if result.error else failure


def write_stack(settings: Settings, request: Request, image: str | None, echo: Echo) -> Path:
    """`invoke stack-file`: the cluster mode's Swarm stack file in a new run folder, deployed by
    nobody: for a person to read, keep, or deploy on a swarm of their own."""
    from reprokit.run.swarm.backend import SwarmBackend

    options = request.options(settings)
    backend = SwarmBackend(settings, image, placement=request.placement(), deploys=False)
    layout = make_layout(options.layout, options.workers, explicit=options.cpus)
    run_dir = new_run_dir(settings.runs_dir, options.run_id).resolve()
    RunInfo(options.steps, options.workers, ["cluster"], options.program, options.tuning.name, layout.name,
            layout.cpus, options.data_source, datetime.now().isoformat(timespec="seconds")).save(run_dir)
    workspace.apply_all(settings.upstream_dir, settings.patches_dir, settings.sources_dir)
    fix = request_ids.build(settings.build_dir, settings.request_id_fix)
    roles = mode_roles("cluster", options, layout, backend, settings.sources_dir.resolve(), settings.data_dir.absolute(),
                       run_dir / "train_cluster", fix=fix)
    _, path = backend.write_stack_file(run_dir, roles, "cluster")
    echo(f"the data must be in {settings.data_dir.absolute()} on every node (`invoke data` makes it here)")
    return path
