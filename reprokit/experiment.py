"""A reproduction as named stages: prepare, data, updates, standalone, cluster, eval, check,
teardown, report.

A plan, checked where the request came in (reprokit.options), is prepared once (reprokit.prepared);
every stage then takes the prepared run and calls only down, into the data, the roles, the
backend, the judge and the report. Each stage writes its own log (runs/<id>/stages/NN-<stage>.log);
teardown and the report always run, and an error in them never hides the error that came before.
Each mode's roles are its program's (reprokit.programs).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reprokit.commands import Echo
from reprokit.data.download import DownloadProgress
from reprokit.data.prepare import DataResult, prepare_data
from reprokit.errors import ClusterError, KitError
from reprokit.judge.claims import (
    Claims,
    ClaimVerdict,
    headline,
    judge_learning,
    judge_speedup,
    load_claims,
    loss_course,
    verdict_lines,
)
from reprokit.judge.evaluation import Evaluation, evaluate
from reprokit.judge.judgement import Judgement, judge_run
from reprokit.judge.logs import step_fields
from reprokit.judge.speed import speedup_ceiling
from reprokit.names import (
    PLOT,
    REPORT,
    RESULTS,
    eval_dir,
    eval_log,
    repetition_dir,
    train_dir,
)
from reprokit.options import Options, RunPlan, local_backend
from reprokit.prepared import Prepared, input_stages, prepare
from reprokit.programs import PROGRAMS
from reprokit.report import markdown as report
from reprokit.report.results import (
    ArticleFigures,
    RunResults,
    checksums,
    data_facts,
    machine_facts,
    mode_results,
    rule_results,
)
from reprokit.run.backends import Backend, Exposure, left_running
from reprokit.run.runner import Outcome, Progress
from reprokit.run_folders import RunInfo
from reprokit.settings import Settings
from reprokit.sources import workspace
from reprokit.stages import StageRecord, Stages
from reprokit.updates.check import UPDATES, Place, check_updates
from reprokit.updates.verdict import UpdatesVerdict, not_judged

if TYPE_CHECKING:  # the Docker SDK is loaded only by `invoke stack-file`
    from reprokit.run.swarm.backend import SwarmBackend


@dataclass
class Reproduction:
    run_dir: Path
    info: RunInfo
    stages: list[StageRecord]
    judgement: Judgement | None = None
    results: RunResults | None = None
    error: str = ""
    exposure: Exposure | None = None
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    claim: ClaimVerdict | None = None
    learning: ClaimVerdict | None = None
    updates: UpdatesVerdict | None = None
    verdict_lines: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.error and self.judgement is not None and self.judgement.passed


def reproduce(settings: Settings, plan: RunPlan, echo: Echo, progress: Progress | None = None,
              download: DownloadProgress | None = None) -> Reproduction:
    """Run every stage of ``plan`` (checked where the request came in, reprokit.options); the run
    folder holds the logs, results.json, report.md and the plot."""
    # Before any stage: a bad --cpus, a drifted upstream, a corrupt patch or claims file fails with no
    # folder made. From here on every stage takes the prepared run, which carries the plan.
    claims = load_claims(settings.claims, list(PROGRAMS))
    prepared = prepare(settings, plan)
    stages = Stages(prepared.run_dir, echo)
    result = Reproduction(prepared.run_dir, prepared.info, stages.records)
    outcomes: dict[str, Outcome] = {}
    data: DataResult | None = None
    try:
        data = input_stages(stages, settings, prepared, download)
        _check_updates(stages, settings, prepared, data, outcomes, result)
        # Pair 1 in the run folder, the others in repetitions/<n>/, every other pair cluster first,
        # so that a drift of the machine falls on both modes alike (as the bench pairs its runs).
        modes = prepared.options.modes
        for number in range(1, prepared.options.repetitions + 1):
            for mode in modes if number % 2 else modes[::-1]:
                _train(stages, prepared, data, number, mode, outcomes, result, progress)
        with stages.stage("eval") as say:
            for mode in modes:
                result.evaluations[mode] = _evaluate(mode, result.run_dir, prepared.sources, data,
                                                     prepared.options.workers, say)
        with stages.stage("check") as say:
            result.judgement = judge_run(result.run_dir, settings.rules, prepared.info)
            for line in result.judgement.summary.lines:
                say(line)
            _judge_claims(claims, result, prepared)
            for line in result.verdict_lines:
                say(line)
    except (KitError, OSError) as exc:
        result.error = str(exc) if isinstance(exc, KitError) else f"could not write in {result.run_dir}: {exc}"
    finally:
        _teardown(stages, prepared.backend, outcomes, result)
        _report(stages, settings, prepared, data, outcomes, result, claims)
    return result


def _train(stages: Stages, prepared: Prepared, data: DataResult, number: int, mode: str,
           outcomes: dict[str, Outcome], result: Reproduction, progress: Progress | None) -> None:
    """One mode of pair ``number``: its roles on the plan's backend, in the pair's folder, its
    outcome kept in ``outcomes`` (a failed one too: teardown and the report read it); a run that
    fails raises, with its logs kept."""
    name = mode if number == 1 else f"{mode}-{number}"
    folder = result.run_dir if number == 1 else repetition_dir(result.run_dir, number)
    options, backend, program = prepared.options, prepared.backend, prepared.program
    with stages.stage(name) as say:
        roles = program.roles(mode, options.steps, options.workers, options.tuning, prepared.layout, backend,
                              prepared.sources, data.data_dir, train_dir(folder, mode), fix=prepared.fix,
                              trainer_file=prepared.trainers[mode])
        for role in roles:
            say(f"{role.name}: cpus {role.cpus or 'any'}" + (f", {role.address}" if role.address else ""))
        if any(r.listens for r in roles):
            result.exposure = backend.exposure(backend.cluster(options.workers))
            say(f"servers listen on: {result.exposure.where}")
        folder.mkdir(parents=True, exist_ok=True)
        outcome = outcomes[name] = backend.run(folder, roles, program.main_role(mode), progress)
        for event in outcome.recovery.get("events", []):  # faults and restarts (run/faults.py)
            when = "before step 0" if event["step"] is None else f"after step {event['step']}"
            say(f"{event['role']}: {event['what']} at {event['t']:.1f} s, {when}: {event['detail']}")
        if not outcome.ok:
            raise ClusterError(f"the {name} run failed: {outcome.message}", f"logs are kept in {folder}")
        say(f"{name}: finished, logs in {folder}")


def _check_updates(stages: Stages, settings: Settings, prepared: Prepared, data: DataResult,
                   outcomes: dict[str, Outcome], result: Reproduction) -> None:
    """The fourth verdict, before the long runs: a few steps of the cluster held, exactly, to its
    standalone's (reprokit.updates); on this machine's processes whatever the plan's backend."""
    if "cluster" not in prepared.options.modes:
        return
    if not settings.update_check:
        result.updates = not_judged("the update check is off (invoke.yaml's update_check)")
        return
    with stages.stage("updates") as say:
        backend = prepared.backend if prepared.backend.name == "local" else local_backend(settings, None)
        checked = check_updates(prepared.program, Place(backend, prepared.sources, data.data_dir, prepared.fix),
                                result.run_dir / UPDATES, workers=prepared.options.workers,
                                cluster_trainer=prepared.trainers["cluster"], echo=say)
        outcomes.update(checked.outcomes)
        result.updates = checked.verdict
        say(f"{'updates:':<10}{result.updates.line}")


def _teardown(stages: Stages, backend: Backend, outcomes: dict[str, Outcome], result: Reproduction) -> None:
    with stages.stage("teardown") as say:
        left = left_running(backend, outcomes)
        say("nothing left running" if not left else "left running: " + ", ".join(left))
        if left and not result.error:
            result.error = "teardown left things running: " + ", ".join(left)


def _evaluate(mode: str, run_dir: Path, sources: Path, data: DataResult, workers: int, say: Echo) -> Evaluation:
    """precision @ 1 of the mode's last checkpoint on test_batch.bin, the tutorial's way (run on
    this machine, whatever the backend: the checkpoints are in the run folder)."""
    test = next((f.records for f in data.files if f.name == "test_batch.bin"), 0)
    found = evaluate(sys.executable, sources, train_dir(run_dir, mode), eval_dir(run_dir, mode),
                     data.data_dir, test, eval_log(run_dir, mode), say, towers=workers if mode == "cluster" else 1)
    say(f"{mode}: " + (found.error or f"precision @ 1 = {found.precision:.3f} (95% CI {found.low:.3f}-{found.high:.3f},"
                       f" {found.correct} of {found.counted}) at step {found.step}, after {found.examples_seen:,} "
                       "examples"))
    return found


def evaluate_run(settings: Settings, run_dir: Path, echo: Echo) -> dict[str, Evaluation]:
    """`invoke eval`: each mode of a finished run evaluated again from its last checkpoint."""
    info = RunInfo.load(run_dir)
    data = prepare_data(info.data_source, settings.data_dir, records_per_file=settings.synthetic_records)
    sources = workspace.apply_all(settings.upstream_dir, settings.patches_dir, settings.sources_dir).out_dir.resolve()
    found = {}
    for mode in info.modes:
        found[mode] = _evaluate(mode, run_dir, sources, data, info.workers, echo)
    return found


def _judge_claims(claims: Claims, result: Reproduction, prepared: Prepared) -> None:
    """The claim of the program that ran and the learning, judged apart from the logs: the
    three-part verdict. The speed-up is the kit's clock's, held below what the plan's workers
    and CPUs can do; the programs' own figure is named beside it."""
    judgement = result.judgement
    if judgement is None:
        return
    speed = judgement.speed.speedup if judgement.speed else None
    info = result.info
    layout, program = prepared.layout, prepared.program
    ceiling = speedup_ceiling(info.workers, layout.held(program.role_names("cluster", info.workers)),
                              layout.held(program.role_names("standalone", info.workers)))
    result.claim = judge_speedup(claims.speedup.get(info.program), speed, program=info.program,
                                 workers=info.workers, drift=claims.drift, ceiling=ceiling,
                                 reported=judgement.speed.reported if judgement.speed else None)
    losses = {mode: [(f.step, f.loss) for f in step_fields(records)] for mode, records in judgement.records.items()}
    course = loss_course(losses.get("standalone", []), losses.get("cluster", []), claims.learning.loss_margin)
    evaluations = result.evaluations
    result.learning = judge_learning(claims.learning, evaluations.get("standalone"), evaluations.get("cluster"), course)
    summary = judgement.summary
    result.verdict_lines = verdict_lines(summary.passed, summary.checked, len(summary.failed),
                                         result.claim, result.learning, result.updates)


def run_headline(result: Reproduction) -> str:
    """The four verdicts in one line, after what stopped the run if it did not complete."""
    logs = result.judgement.summary.passed if result.judgement else None
    line = headline(logs, result.claim, result.learning, result.updates)
    return line if result.passed else f"run FAILED; {line}"


def _report(stages: Stages, settings: Settings, prepared: Prepared, data: DataResult | None,
            outcomes: dict[str, Outcome], result: Reproduction, claims: Claims) -> None:
    """The report stage: its own failure is added to the run's error, never put in its place.
    The files are written once the stage has closed, so that its own record says how it ended."""
    try:
        with stages.stage("report") as say:
            judgement = result.judgement
            result.results = RunResults(
                verdict=run_headline(result), passed=result.passed,
                error=result.error or (judgement.speed_error if judgement else ""),
                finished=datetime.now().isoformat(timespec="seconds"),
                tuning=prepared.options.tuning, backend=prepared.backend.facts(), exposure=result.exposure,
                data=data_facts(data),
                machine=machine_facts(), checksums=checksums(settings),
                speed=judgement.speed if judgement else None, article=ArticleFigures.of(claims, settings.article_logs),
                modes=mode_results(prepared.options.modes, prepared.options.workers, judgement, outcomes,
                                   result.evaluations),
                rules=rule_results(judgement), stages=[], claim=result.claim, learning=result.learning,
                updates=result.updates,
                verdict_lines=result.verdict_lines, kit_fixes={"request_id_fix": prepared.fix.summary})
            say(f"writing {RESULTS}, {REPORT} and {PLOT}")
        result.results.stages = list(stages.records)
        report.write_all(result.run_dir, prepared.info, result.results)
    except (KitError, OSError) as exc:
        failure = f"the report could not be written: {exc}"
        result.error = f"{result.error}\n{failure}" if result.error else failure


def write_stack(settings: Settings, options: Options, backend: SwarmBackend, echo: Echo) -> Path:
    """`invoke stack-file`: the cluster mode's Swarm stack file in a new run folder, deployed by
    nobody: for a person to read, keep, or deploy on a swarm of their own."""
    prepared = prepare(settings, RunPlan(options, backend))
    roles = prepared.program.roles("cluster", options.steps, options.workers, options.tuning, prepared.layout,
                                   backend, prepared.sources, settings.data_dir.absolute(),
                                   train_dir(prepared.run_dir, "cluster"), fix=prepared.fix)
    _, path = backend.write_stack_file(prepared.run_dir, roles, "cluster")
    echo(f"the data must be in {settings.data_dir.absolute()} on every node (`invoke data` makes it here)")
    return path
