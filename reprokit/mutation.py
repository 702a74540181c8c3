"""`invoke mutants`: the verdicts tried on programs whose answer is known.

For each program asked for, the true program runs first as a control, through every stage of
`invoke reproduce` (the update check, standalone and cluster, evaluation, logs, the four
verdicts); then each mutant of that program (reprokit.sources.mutants) runs its cluster alone,
through the same stages, and its learning is judged against the control's standalone run: the
same evaluation, the same loss course, the same claims file. The table says, for each row, what
the bug should do to learning, every verdict, and whether the verdict the catalogue names caught
it with the diagnosis it names. Nothing is judged differently from a reproduction: this is how a
reproduction's verdicts earn trust.

`--probe-only` runs the update check alone (reprokit.updates), over the whole catalogue and the
true programs, in minutes: every cluster first, then one oracle per standalone trainer for all of
them. A control, and a mutant that the catalogue says the logs catch (a program whose own figures
lie), runs CLOCK_STEPS steps, so that its log holds the intervals the logs' clock rule judges.
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
from reprokit.judge.checks import check_logs, clock_agreement
from reprokit.judge.speed import examples_per_step, run_speed
from reprokit.judge.judgement import judge_run
from reprokit.judge.logs import parse_log, step_fields
from reprokit.judge.rules import ClockCheck, Rule, load_rules, run_context
from reprokit.names import RESULTS, log_path
from reprokit.options import (
    Given,
    RunPlan,
    local_backend,
    one_of,
    program_list,
    run_options,
    whole_number,
)
from reprokit.prepared import prepare
from reprokit.programs import PROGRAMS
from reprokit.records import RunsTable
from reprokit.report.results import RunResults
from reprokit.run.runner import Progress
from reprokit.run_folders import RunInfo, find_run, new_run_dir
from reprokit.settings import Settings
from reprokit.sources import workspace
from reprokit.sources.mutants import Mutant, load_catalogue
from reprokit.updates.check import STEPS, ClusterRecord, Place, record_cluster, run_oracle
from reprokit.updates.verdict import UpdatesVerdict, not_judged

TABLE = "mutants.md"
CONTROL = "(true program)"
# What a row's verdicts mean: a control holds every promise; a mutant is caught when the verdict
# its catalogue entry names flags it with the diagnosis named (or another diagnosis, or another
# verdict flags it instead).
CAUGHT, CAUGHT_ELSE, CAUGHT_OTHER, MISSED, FALSE_ALARM, AS_EXPECTED, FAILED = (
    "caught", "caught, another diagnosis", "caught only by", "missed", "FALSE ALARM", "as expected", "run failed")
# The probe-only campaign's long runs: step lines 0, 10, 20, 30, the three intervals the logs'
# clock rule needs (reprokit.judge.checks.MIN_INTERVALS).
CLOCK_STEPS = 31


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
    probe_only: bool = False  # the update check alone (and the clock rule where the catalogue says)

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
        if self.control and self.probe_only:
            raise KitError("--control judges learning against a finished reproduction; --probe-only judges none",
                           "leave one of them out")
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
    logs: str  # PASS, FAIL (and the rules that failed), or not judged
    outcome: str  # CAUGHT, CAUGHT_ELSE, CAUGHT_OTHER, MISSED, FALSE_ALARM, AS_EXPECTED, FAILED, or told: ...
    run_dir: str
    error: str = ""
    precisions: tuple[float, float] | None = None  # standalone, cluster: precision @ 1 at the end
    updates: UpdatesVerdict | None = None  # the update check's verdict (older files: none)
    caught_by: str = ""  # the verdict the catalogue says must catch it (mutants only)
    diagnosis: str = ""  # what that verdict said of it
    speedup: str = ""  # its cluster over the control's standalone, by the kit's clock and by its own figures


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
    if request.probe_only:
        return _probe_only(settings, plan, programs, mutants, command, echo)
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
    return "PASS" if run.judgement.summary.passed else "FAIL: " + ", ".join(run.judgement.summary.failed)


def _precisions(standalone: Reproduction, cluster: Reproduction) -> tuple[float, float] | None:
    base, mine = standalone.evaluations.get("standalone"), cluster.evaluations.get("cluster")
    if base is None or mine is None or base.precision is None or mine.precision is None:
        return None
    return base.precision, mine.precision


def control_outcome(program: str, updates: UpdatesVerdict | None, learning: ClaimVerdict | None, logs: str) -> str:
    """A true program's row: every verdict as the program promises (updates EXACT, logs PASS,
    learning SAME where it is synchronous), or a FALSE ALARM naming the verdict that raised it."""
    alarms = [name for name, raised in (("updates", updates is not None and updates.status == "DIFFERENT"),
                                        ("logs", logs.startswith("FAIL"))) if raised]
    if learning is not None and not PROGRAMS[program].asynchronous and learning.status != "SAME":
        alarms.append(f"learning {learning.status}")
    if alarms:
        return f"{FALSE_ALARM} ({', '.join(alarms)})"
    if learning is not None and PROGRAMS[program].asynchronous:  # another algorithm: told, not counted
        return f"told: learning {learning.status}"
    return AS_EXPECTED


def mutant_outcome(mutant: Mutant, updates: UpdatesVerdict | None, learning: ClaimVerdict | None,
                   logs: str) -> tuple[str, str]:
    """Whether the verdict the catalogue names caught the mutant, with the diagnosis it names:
    (outcome, what the catching verdict said)."""
    said = {"updates": updates.diagnosis if updates is not None and updates.status == "DIFFERENT" else "",
            "logs": logs.removeprefix("FAIL: ") if logs.startswith("FAIL") else "",
            "learning": learning.reason if learning is not None and learning.status == "DIFFERENT" else ""}
    named = said[mutant.caught_by]
    if named and mutant.diagnosis in named:
        return CAUGHT, named
    if named:
        return CAUGHT_ELSE, named
    others = [name for name, text in said.items() if text]
    if others:
        return f"{CAUGHT_OTHER} {', '.join(others)}", said[others[0]]
    return MISSED, ""


def _control_row(program: str, run: Reproduction) -> Row:
    asynchronous = PROGRAMS[program].asynchronous
    expected = "as the standalone (SAME)" if not asynchronous else \
        "asynchronous: one worker's batch an update (docs/learning.md)"
    if run.error or run.learning is None:
        return Row(program, CONTROL, "", expected, run.learning, _logs(run), FAILED, str(run.run_dir), run.error,
                   updates=run.updates)
    logs = _logs(run)
    return Row(program, CONTROL, "", expected, run.learning, logs, control_outcome(program, run.updates, run.learning,
                                                                                     logs),
               str(run.run_dir), precisions=_precisions(run, run), updates=run.updates)


def _mutant_row(mutant: Mutant, run: Reproduction, control: Reproduction, claim: LearningClaim) -> Row:
    """The mutant's cluster judged against the control's standalone run."""
    base = control.evaluations.get("standalone")
    mine = run.evaluations.get("cluster")
    unevaluated = any(e is None or not e.ok for e in (base, mine))
    if run.error or unevaluated or control.judgement is None or run.judgement is None:
        why = run.error or control.error or "no evaluation of the mutant's or the control's run"
        return Row(mutant.program, mutant.slug, mutant.bug, mutant.expected, None, _logs(run), FAILED,
                   str(run.run_dir), why, updates=run.updates, caught_by=mutant.caught_by)
    course = loss_course(_losses(control, "standalone"), _losses(run, "cluster"), claim.loss_margin)
    verdict = judge_learning(claim, base, mine, course)
    logs = _logs(run)
    outcome, said = mutant_outcome(mutant, run.updates, verdict, logs)
    return Row(mutant.program, mutant.slug, mutant.bug, mutant.expected, verdict, logs, outcome,
               str(run.run_dir), precisions=_precisions(control, run), updates=run.updates,
               caught_by=mutant.caught_by, diagnosis=said, speedup=_speedups(control, run))


# --- the update check alone --------------------------------------------------------------------

def _probe_only(settings: Settings, plan: RunPlan, programs: list[str], mutants: list[Mutant], command: str,
                echo: Echo) -> MutantsResults:
    """Every cluster's update check, then one oracle per standalone trainer; the clock rule on the
    logs of the controls and of the mutants the logs catch."""
    prepared = prepare(settings, RunPlan(replace(plan.options, modes=("cluster",)), plan.backend), "mutants")
    folder = prepared.run_dir
    results = MutantsResults(str(folder), command, STEPS, datetime.now().isoformat(timespec="seconds"))
    place = Place(plan.backend, prepared.sources.parent / "mutants", settings.data_dir.resolve(), prepared.fix)
    workspace.apply_all(settings.upstream_dir, settings.patches_dir, place.sources, stacked=settings.mutants_dir)
    rows: list[tuple[str, Mutant | None]] = [row for program in programs for row in [(program, None), *((program, m) for m in mutants
                                                                        if m.program == program)]]
    echo(f"mutants --probe-only: {len(rows)} clusters' update checks, then one oracle per standalone trainer; "
         f"the table goes to {folder / TABLE}")
    records: list[tuple[str, Mutant | None, ClusterRecord]] = []
    for number, (program, mutant) in enumerate(rows, start=1):
        name = mutant.slug if mutant else program
        long = mutant is None or mutant.caught_by == "logs"
        echo(f"mutants: {number} of {len(rows)}: " + (f"{mutant.slug} ({program})" if mutant else
                                                       f"the true {program} program"))
        record = record_cluster(PROGRAMS[program], place, folder / name, workers=2,
                                cluster_trainer=mutant.trainer if mutant else None, echo=echo,
                                length=CLOCK_STEPS if long else STEPS)
        records.append((program, mutant, record))
    for trainer in dict.fromkeys(PROGRAMS[program].standalone for program, _, _ in records):
        family = [record for program, _, record in records if PROGRAMS[program].standalone == trainer]
        oracle = folder / f"oracle-{trainer.removesuffix('.py')}"
        oracle.mkdir()
        run_oracle(family, place, oracle, echo)
    rules = load_rules(settings.rules)
    for program, mutant, record in records:
        verdict = record.verdict or not_judged("the check did not finish")
        logs = _clock_logs(record, rules, program) if mutant is None or mutant.caught_by == "logs" else "not judged"
        if mutant is None:
            outcome = control_outcome(program, verdict, None, logs)
            results.rows.append(Row(program, CONTROL, "", "EXACT (its own promise)", None, logs, outcome,
                                    str(record.folder), updates=verdict))
        else:
            outcome, said = mutant_outcome(mutant, verdict, None, logs)
            results.rows.append(Row(program, mutant.slug, mutant.bug, mutant.expected, None, logs, outcome,
                                    str(record.folder), updates=verdict, caught_by=mutant.caught_by, diagnosis=said))
        _write(results)
    results.finished = datetime.now().isoformat(timespec="seconds")
    _write(results)
    return results


def _clock_logs(record: ClusterRecord, rules: list[Rule], program: str) -> str:
    """The logs' clock rule on the check's cluster log: its only rule that a log of the kit's
    batches can be held to (the input rules describe the program's own pipeline, replaced here)."""
    main = PROGRAMS[program].main_role("cluster")
    path = log_path(record.folder / "cluster", main)
    if record.check is None or not path.is_file():
        return "not judged"
    clock = [rule for rule in rules if isinstance(rule.check, ClockCheck)]
    records = parse_log(path, main)
    verdicts = check_logs("cluster", records, clock, run_context("cluster", CLOCK_STEPS, 2), {"run"},
                          program=program)
    failed = [v.rule for v in verdicts if not v.passed]
    agreement = clock_agreement(records, examples_per_step("cluster", 2))
    figure = f" ({agreement.ratio:.2f}x the kit's clock)" if agreement else ""
    return ("FAIL: " + ", ".join(failed) if failed else "PASS") + figure


def _speedups(control: Reproduction, run: Reproduction) -> str:
    """The mutant's cluster over the control's standalone: the kit's figure, and what the two
    programs' own figures say (a program whose timer or count lies shows it here)."""
    assert control.judgement is not None and run.judgement is not None
    try:
        speed = run_speed(control.judgement.records["standalone"], run.judgement.records["cluster"],
                          run.info.workers)
    except (KitError, KeyError):
        return ""
    own = f"; its own figures {speed.reported.value:.2f}x" if speed.reported else ""
    return f"{speed.speedup.value:.2f}x by the kit's clock{own}"


def _losses(run: Reproduction, mode: str) -> list[tuple[int, float]]:
    assert run.judgement is not None
    return [(f.step, f.loss) for f in step_fields(run.judgement.records.get(mode, []))]


def table_lines(results: MutantsResults) -> list[str]:
    """The table a person reads: one row per run, what it should do, what each verdict said, and
    whether the verdict the catalogue names caught it."""
    out = ["| program | mutant | the bug | what it should do to learning | logs | learning | "
           "precision @ 1: standalone, cluster (difference) | updates | kit |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in results.rows:
        status = row.learning.status if row.learning else "not judged"
        if row.precisions:
            base, mine = row.precisions
            figure = f"{base:.3f}, {mine:.3f} ({mine - base:+.3f})"
        else:
            figure = row.error.splitlines()[0][:80] if row.error else ""
        updates = row.updates.status if row.updates else "not judged"
        if row.updates and row.updates.diagnosis:
            updates += f": {row.updates.diagnosis.split(':')[0]}"
        elif row.updates and row.updates.largest is not None:
            updates += f" ({row.updates.largest:.0e})"
        kit = row.outcome + (f" by {row.caught_by}" if row.outcome in (CAUGHT, CAUGHT_ELSE) else "")
        out.append(f"| {row.program} | {row.mutant} | {row.bug} | {row.expected} | {row.logs} | {status} | "
                   f"{figure} | {updates} | {kit} |")
    return out


def report_lines(results: MutantsResults) -> list[str]:
    """mutants.md: the command, the table, and the reason of every verdict."""
    lines = [*results.heading("The verdicts on known answers"), *table_lines(results), ""]
    for row in results.rows:
        if row.updates is not None:
            lines.append(f"- **{row.program} / {row.mutant}: updates {row.updates.status}**: {row.updates.reason}.")
        if row.learning is not None:
            lines.append(f"- **{row.program} / {row.mutant}: learning {row.learning.status}**: {row.learning.reason}.")
        if row.speedup:
            lines.append(f"- **{row.program} / {row.mutant}: speed-up** over the control's standalone: {row.speedup}.")
    return lines


def _write(results: MutantsResults) -> None:
    results.keep(TABLE, report_lines(results))
