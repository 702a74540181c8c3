"""A reproduction as named stages: prepare, data, standalone, cluster, check, report, teardown.

Each stage writes its own log (runs/<id>/stages/NN-<stage>.log); teardown always runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from reprokit.data import prepare as datalib
from reprokit.errors import ClusterError, KitError
from reprokit.judge.verdict import RUN_FILE, Judgement, judge_run
from reprokit.report import markdown as report
from reprokit.report import results as resultslib
from reprokit.run.cluster import Cluster, make_layout
from reprokit.run.roles import RoleSpec, TrainingArgs, cluster_roles, standalone_role
from reprokit.run.supervisor import Outcome, still_running
from reprokit.run.tuning import PROFILES, Tuning
from reprokit.runs import new_run_dir
from reprokit.settings import Settings
from reprokit.sources import workspace

Echo = Callable[[str], None]
Progress = Callable[[str, int, float], None]


class Backend(Protocol):
    name: str
    python: str
    role_server: str

    def cluster(self, workers: int) -> Cluster: ...
    def facts(self) -> dict: ...
    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome: ...
    def teardown(self) -> list[str]: ...


@dataclass(frozen=True)
class Options:
    steps: int
    workers: int
    layout: str
    data_source: str
    synthetic_records: int
    cpus: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    modes: tuple[str, ...] = ("standalone", "cluster")
    tuning: Tuning = PROFILES["default"]


@dataclass
class StageRecord:
    name: str
    status: str = "not run"
    seconds: float = 0.0
    log: str = ""
    error: str = ""


@dataclass
class Reproduction:
    run_dir: Path
    stages: list[StageRecord]
    judgement: Judgement | None = None
    results: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and self.judgement is not None and self.judgement.passed


class _Stages:
    def __init__(self, run_dir: Path, echo: Echo) -> None:
        self.dir = run_dir / "stages"
        self.dir.mkdir()
        self.echo = echo
        self.records: list[StageRecord] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[Echo]:
        record = StageRecord(name, log=f"stages/{len(self.records) + 1:02d}-{name}.log")
        self.records.append(record)
        started = time.monotonic()
        with (self.dir.parent / record.log).open("w") as log:
            def say(line: str) -> None:
                log.write(f"{datetime.now().isoformat(timespec='seconds')} {line}\n")
                log.flush()
                self.echo(line)
            say(f"== {name}")
            try:
                yield say
                record.status = "ok"
            except BaseException as exc:
                record.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                record.error = str(exc) or type(exc).__name__
                say(f"{name} {record.status}: {record.error}")
                raise
            finally:
                record.seconds = round(time.monotonic() - started, 2)


def reproduce(settings: Settings, options: Options, backend: Backend, echo: Echo,
              progress: Progress | None = None) -> Reproduction:
    """Run every stage; the run folder holds the logs, results.json, report.md and the plot."""
    # The layout first: a bad --cpus must fail before a run folder exists.
    layout = make_layout(options.layout, options.workers, explicit=options.cpus)
    run_dir = new_run_dir(settings.runs_dir, options.run_id).resolve()
    stages = _Stages(run_dir, echo)
    result = Reproduction(run_dir, stages.records)
    run_info: dict[str, Any] = {"steps": options.steps, "workers": options.workers, "modes": list(options.modes),
                                "tuning": options.tuning.name,
                                "layout": layout.name, "cpus": layout.cpus, "started": datetime.now().isoformat()}
    (run_dir / RUN_FILE).write_text(json.dumps(run_info, indent=1))
    outcomes: dict[str, Outcome] = {}
    data_result = None
    try:
        with stages.stage("prepare") as say:
            applied = workspace.apply_all(settings.upstream_dir, settings.patches_dir, settings.sources_dir)
            say(f"patched sources in {applied.out_dir}: "
                + ("already applied" if applied.already_applied else "applied"))
        with stages.stage("data") as say:
            data_result = datalib.prepare_data(options.data_source, settings.data_dir,
                                               records_per_file=options.synthetic_records)
            say(f"data: {data_result.source} in {data_result.batches_dir}")
            if data_result.notice:
                say("NOTICE: " + data_result.notice)
        sources = str(settings.sources_dir.resolve())
        for mode in options.modes:
            with stages.stage(mode) as say:
                training = TrainingArgs(options.steps, str(data_result.data_dir), str(run_dir / f"train_{mode}"))
                tuning = options.tuning
                if mode == "standalone":
                    roles = [standalone_role(training, python=backend.python, sources=sources,
                                             cpus=layout.for_role("standalone"), env=tuning.env)]
                else:
                    roles = cluster_roles(backend.cluster(options.workers), training, layout.cpus,
                                          python=backend.python, sources=sources, role_server=backend.role_server,
                                          threads=tuning.server_threads, env=tuning.env,
                                          client_hosts_ps=tuning.client_hosts_ps)
                    roles = [replace(r, env={**r.env, **tuning.server_env}) if r.is_server else r for r in roles]
                for role in roles:
                    say(f"{role.name}: cpus {role.cpus}" + (f", {role.address}" if role.address else ""))
                main = roles[-1].name
                outcome = backend.run(run_dir, roles, main, progress)
                outcomes[mode] = outcome
                if not outcome.ok:
                    raise ClusterError(f"the {mode} run failed: {outcome.message}",
                                       f"logs are kept in {run_dir}")
                say(f"{mode}: finished, logs in {run_dir}")
        with stages.stage("check") as say:
            result.judgement = judge_run(run_dir, settings.rules)
            for line in result.judgement.summary.lines:
                say(line)
    except KitError as exc:
        result.error = str(exc)
    finally:
        with stages.stage("teardown") as say:
            left = backend.teardown() + still_running(outcomes)
            say("nothing left running" if not left else "left running: " + ", ".join(map(str, left)))
        with stages.stage("report") as say:
            result.results = resultslib.build_results(settings, options, layout, backend.facts(), data_result,
                                                  outcomes, result.judgement, stages.records, result.error)
            written = report.write_all(run_dir, result.results)
            say("wrote " + ", ".join(str(p.name) for p in written))
    return result
