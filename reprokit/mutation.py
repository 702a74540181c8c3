"""`invoke mutants`: the learning verdict tried on programs whose answer is known.

For each program asked for, the true program runs first as a control, through every stage of
`invoke reproduce` (standalone and cluster, evaluation, logs, the three-part verdict); then each
mutant of that program (reprokit.sources.mutants) runs its cluster alone, through the same stages,
and its learning is judged against the control's standalone run: the same evaluation, the same
loss course, the same claims file. The table says, for each row, what the bug should do to
learning, the verdict, and whether the kit caught it. Nothing is judged differently from a
reproduction: this is how a reproduction's learning verdict earns trust.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from reprokit.commands import Echo
from reprokit.data.download import DownloadProgress
from reprokit.errors import KitError
from reprokit.experiment import Reproduction, reproduce
from reprokit.judge.claims import (
    ClaimVerdict,
    LearningClaim,
    judge_learning,
    load_claims,
    loss_course,
)
from reprokit.judge.judgement import judge_run
from reprokit.judge.logs import step_fields
from reprokit.names import RESULTS
from reprokit.options import (
    Given,
    RunPlan,
    local_backend,
    one_of,
    program_list,
    run_options,
    whole_number,
)
from reprokit.programs import PROGRAMS
from reprokit.records import RunsTable
from reprokit.report.results import RunResults
from reprokit.run.runner import Progress
from reprokit.run_folders import RunInfo, find_run, new_run_dir
from reprokit.settings import Settings
from reprokit.sources.mutants import Mutant, load_catalogue

TABLE = "mutants.md"
CONTROL = "(true program)"
# What each verdict means for a row: a control should be SAME; a mutant is caught when DIFFERENT.
CAUGHT, FLAGGED, MISSED, FALSE_ALARM, AS_EXPECTED, FAILED = (
    "caught", "flagged (INCONCLUSIVE)", "missed", "FALSE ALARM", "as expected", "run failed")


@dataclass(frozen=True)
class MutantsRequest:
    """`invoke mutants` as typed: None where invoke.yaml's setting applies."""

    steps: Given = None
    quick: bool = False
    programs: str | None = None
    only: str | None = None
    source: str | None = None
    isolation: str | None = None
    control: str | None = None  # a finished reproduction of the program to judge the mutants against

    def plan(self, s: Settings) -> tuple[RunPlan, list[str], list[Mutant]]:
        """The runs' options and backend, the programs (in order) and the mutants to run;
        refused before anything runs or any folder is made."""
        steps = self.steps if self.steps is not None else (s.quick_steps if self.quick else s.steps)
        options = run_options(s, steps=whole_number(steps, "steps", minimum=21), workers=2, layout="spread",
                              cpus="", source=self.source or s.data_source, run_id=None, tuning="default",
                              program="article", repetitions=1)
        catalogue = load_catalogue(s.mutants_dir)
        programs = program_list(self.programs) if self.programs else list(dict.fromkeys(
            [m.program for m in catalogue] + list(PROGRAMS)))
        mutants = [m for m in catalogue if m.program in programs]
        if self.only:
            names = [name.strip() for name in self.only.split(",") if name.strip()]
            for name in names:
                one_of(name, "only", [m.slug for m in mutants])
            mutants = [m for m in mutants if m.slug in names]
            programs = [p for p in programs if any(m.program == p for m in mutants)]
        if self.control:
            info = RunInfo.load(find_run(s.runs_dir, self.control))
            if len(programs) != 1 or info.program != programs[0] or set(info.modes) != {"standalone", "cluster"} \
                    or info.steps != options.steps or info.mutant is not None:
                raise KitError(f"--control {self.control} is a run of the {info.program} program ({info.steps} steps, "
                               f"{' and '.join(info.modes)}); the mutants asked for need one true program with "
                               f"both modes at {options.steps} steps", "pass --programs (or --only) and --steps "
                               "that match it, or leave --control out to run the control again")
        return RunPlan(options, local_backend(s, self.isolation)), programs, mutants


@dataclass
class Row:
    """One program run: a control (the true program) or a mutant, with its verdicts."""

    program: str
    mutant: str  # the slug, or CONTROL
    bug: str
    expected: str
    learning: ClaimVerdict | None
    logs: str  # PASS, FAIL, or not judged
    outcome: str  # one of CAUGHT, FLAGGED, MISSED, FALSE_ALARM, AS_EXPECTED, FAILED
    run_dir: str
    error: str = ""
    precisions: tuple[float, float] | None = None  # standalone, cluster: precision @ 1 at the end


@dataclass
class MutantsResults(RunsTable):
    FILE: ClassVar[str] = "mutants.json"
    FORMAT_VERSION: ClassVar[int] = 1
    AGAIN: ClassVar[str] = "run `invoke mutants` again with this kit"

    rows: list[Row] = field(default_factory=list)
    format_version: int = field(default=FORMAT_VERSION, kw_only=True)


def run_mutants(settings: Settings, request: MutantsRequest, command: str, echo: Echo,
                progress: Progress | None = None, download: DownloadProgress | None = None) -> MutantsResults:
    """Every control and mutant asked for, in order; the table is written after each row, so an
    interrupted catalogue keeps what it measured."""
    plan, programs, mutants = request.plan(settings)
    options, backend = plan.options, plan.backend
    claims = load_claims(settings.claims, list(PROGRAMS))
    folder = new_run_dir(settings.runs_dir)
    results = MutantsResults(str(folder), command, options.steps, datetime.now().isoformat(timespec="seconds"))
    total = len(programs) + len(mutants)
    echo(f"mutants: {len(programs)} true program{'s' if len(programs) != 1 else ''} and {len(mutants)} "
         f"mutant{'s' if len(mutants) != 1 else ''}, {options.steps} steps a run; the table goes to {folder / TABLE}")
    for program in programs:
        asked = replace(options, program=program, run_id=f"{folder.name}-{program}")
        if request.control:
            control = finished_run(settings, find_run(settings.runs_dir, request.control))
            echo(f"mutants: {len(results.rows) + 1} of {total}: the true {program} program, as run in {control.run_dir}")
        else:
            echo(f"mutants: {len(results.rows) + 1} of {total}: the true {program} program (standalone and cluster)")
            control = reproduce(settings, RunPlan(asked, backend), echo, progress, download)
        results.rows.append(_control_row(program, control))
        _write(results)
        for mutant in (m for m in mutants if m.program == program):
            echo(f"mutants: {len(results.rows) + 1} of {total}: {mutant.slug} ({program}): {mutant.bug}")
            mutated = replace(asked, modes=("cluster",), mutant=mutant.slug, run_id=f"{folder.name}-{mutant.slug}")
            run = reproduce(settings, RunPlan(mutated, backend), echo, progress, download)
            results.rows.append(_mutant_row(mutant, run, control, claims.learning))
            _write(results)
    results.finished = datetime.now().isoformat(timespec="seconds")
    _write(results)
    return results


def finished_run(settings: Settings, run_dir: Path) -> Reproduction:
    """A reproduction finished earlier, read back from its folder: its logs judged again, its
    evaluations and verdicts as results.json holds them."""
    info = RunInfo.load(run_dir)
    results = RunResults.load(run_dir / RESULTS)
    judgement = judge_run(run_dir, settings.rules, info)
    evaluations = {mode: m.evaluation for mode, m in results.modes.items() if m.evaluation is not None}
    return Reproduction(run_dir, info, [], judgement, results, "" if results.passed else results.error,
                        evaluations=evaluations, claim=results.claim, learning=results.learning)


def _logs(run: Reproduction) -> str:
    if run.judgement is None:
        return "not judged"
    return "PASS" if run.judgement.summary.passed else "FAIL"


def _precisions(standalone: Reproduction, cluster: Reproduction) -> tuple[float, float] | None:
    base, mine = standalone.evaluations.get("standalone"), cluster.evaluations.get("cluster")
    if base is None or mine is None or base.precision is None or mine.precision is None:
        return None
    return base.precision, mine.precision


def _control_row(program: str, run: Reproduction) -> Row:
    asynchronous = PROGRAMS[program].asynchronous
    expected = "as the standalone (SAME)" if not asynchronous else \
        "asynchronous: one worker's batch an update (docs/learning.md)"
    if run.error or run.learning is None:
        return Row(program, CONTROL, "", expected, run.learning, _logs(run), FAILED, str(run.run_dir), run.error)
    outcome = AS_EXPECTED if run.learning.status == "SAME" else FALSE_ALARM
    if asynchronous:  # another algorithm than the standalone's: its verdict is told, not counted
        outcome = f"told: {run.learning.status}"
    return Row(program, CONTROL, "", expected, run.learning, _logs(run), outcome, str(run.run_dir),
               precisions=_precisions(run, run))


def _mutant_row(mutant: Mutant, run: Reproduction, control: Reproduction, claim: LearningClaim) -> Row:
    """The mutant's cluster judged against the control's standalone run."""
    base = control.evaluations.get("standalone")
    mine = run.evaluations.get("cluster")
    unevaluated = any(e is None or not e.ok for e in (base, mine))
    if run.error or unevaluated or control.judgement is None or run.judgement is None:
        why = run.error or control.error or "no evaluation of the mutant's or the control's run"
        return Row(mutant.program, mutant.slug, mutant.bug, mutant.expected, None, _logs(run), FAILED,
                   str(run.run_dir), why)
    course = loss_course(_losses(control, "standalone"), _losses(run, "cluster"), claim.loss_margin)
    verdict = judge_learning(claim, base, mine, course)
    outcome = {"DIFFERENT": CAUGHT, "INCONCLUSIVE": FLAGGED, "SAME": MISSED}[verdict.status]
    return Row(mutant.program, mutant.slug, mutant.bug, mutant.expected, verdict, _logs(run), outcome,
               str(run.run_dir), precisions=_precisions(control, run))


def _losses(run: Reproduction, mode: str) -> list[tuple[int, float]]:
    assert run.judgement is not None
    return [(f.step, f.loss) for f in step_fields(run.judgement.records.get(mode, []))]


def table_lines(results: MutantsResults) -> list[str]:
    """The table a person reads: one row per run, what it should do, what the kit said."""
    out = ["| program | mutant | the bug | what it should do to learning | logs | learning | "
           "precision @ 1: standalone, cluster (difference) | kit |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in results.rows:
        status = row.learning.status if row.learning else "not judged"
        if row.precisions:
            base, mine = row.precisions
            figure = f"{base:.3f}, {mine:.3f} ({mine - base:+.3f})"
        else:
            figure = row.error.splitlines()[0][:80] if row.error else ""
        out.append(f"| {row.program} | {row.mutant} | {row.bug} | {row.expected} | {row.logs} | {status} | "
                   f"{figure} | {row.outcome} |")
    return out


def report_lines(results: MutantsResults) -> list[str]:
    """mutants.md: the command, the table, and the reason of every verdict."""
    lines = [*results.heading("The learning verdict on known answers"), *table_lines(results), ""]
    for row in results.rows:
        if row.learning is not None:
            lines.append(f"- **{row.program} / {row.mutant}: {row.learning.status}**: {row.learning.reason}.")
    return lines


def _write(results: MutantsResults) -> None:
    results.keep(TABLE, report_lines(results))
