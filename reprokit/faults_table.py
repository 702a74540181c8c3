"""`invoke faults`: each program under each kind of fault, side by side, in one table.

For every program asked for and every fault that applies to it (a worker killed, a worker
preempted, the ps killed; an all-reduce cluster has no ps), one short reproduction runs with that
fault injected half way through its cluster run (reprokit/run/faults.py), through every stage of
`invoke reproduce`. The table says whether the run survived, what the kit restarted, what the
fault cost, the learning verdict against the same reproduction's standalone run, and, for a run
that failed, the reason the program gave. It is the measured side of docs/faults.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import ClassVar

from reprokit.commands import Echo
from reprokit.data.download import DownloadProgress
from reprokit.experiment import Reproduction, reproduce
from reprokit.names import PS, worker
from reprokit.options import (
    Given,
    RunPlan,
    fault_plan,
    local_backend,
    program_list,
    run_options,
    whole_number,
)
from reprokit.programs import PROGRAMS
from reprokit.records import RunsTable
from reprokit.run.runner import Progress
from reprokit.run_folders import new_run_dir
from reprokit.settings import Settings

TABLE = "faults.md"
# Each kind of fault: what it stands for, the signal, and the role it is sent to.
KINDS = {"worker killed": ("kill", worker(1)), "worker preempted": ("term", worker(1)), "ps killed": ("kill", PS)}


@dataclass(frozen=True)
class FaultsRequest:
    """`invoke faults` as typed: None where invoke.yaml's setting applies."""

    steps: Given = None
    programs: str | None = None
    source: str | None = None
    isolation: str | None = None

    def steps_of(self, s: Settings) -> int:
        # Short runs by default: the fault's effect, not the verdicts' power, is what is measured.
        return whole_number(self.steps if self.steps is not None else s.quick_steps, "steps", minimum=31)

    def programs_of(self) -> list[str]:
        return program_list(self.programs or "all")


def fault_step(steps: int) -> int:
    """The logged step half way through a run of ``steps`` (step lines come every 10 steps)."""
    return (steps - 1) // 2 // 10 * 10


@dataclass
class Row:
    program: str
    kind: str  # a key of KINDS
    fault: str  # SIGNAL:ROLE@STEP
    survived: bool
    run_dir: str
    learning: str = "not judged"
    restarts: dict[str, int] = field(default_factory=dict)
    seconds_lost: float | None = None
    functions_run_again: int | None = None
    steps_redone: int | None = None  # a cluster restarted as a whole: at least these steps ran again
    why: str = ""  # a failed run's reason, as the kit printed it


@dataclass
class FaultsResults(RunsTable):
    FILE: ClassVar[str] = "faults.json"
    FORMAT_VERSION: ClassVar[int] = 1
    AGAIN: ClassVar[str] = "run `invoke faults` again with this kit"

    rows: list[Row] = field(default_factory=list)
    format_version: int = field(default=FORMAT_VERSION, kw_only=True)


def cells(programs: list[str], steps: int) -> list[tuple[str, str, str]]:
    """(program, kind, fault) for every kind of fault that applies to each program."""
    step = fault_step(steps)
    found = []
    for program in programs:
        roles = PROGRAMS[program].role_names("cluster", 2)
        for kind, (signal, role) in KINDS.items():
            if role in roles:
                found.append((program, kind, f"{signal}:{role}@{step}"))
    return found


def run_faults(settings: Settings, request: FaultsRequest, command: str, echo: Echo,
               progress: Progress | None = None, download: DownloadProgress | None = None) -> FaultsResults:
    """Every cell asked for, in order; the table is written after each, so an interrupted table
    keeps what it measured."""
    steps, programs = request.steps_of(settings), request.programs_of()
    options = run_options(settings, steps=steps, workers=2, layout="spread", cpus="",
                          source=request.source or settings.data_source, run_id=None, tuning="default",
                          program="article", repetitions=1)
    local_backend(settings, request.isolation)  # --isolation checked before any folder is made
    todo = cells(programs, steps)
    folder = new_run_dir(settings.runs_dir)
    results = FaultsResults(str(folder), command, steps, datetime.now().isoformat(timespec="seconds"))
    echo(f"faults: {len(todo)} runs of {steps} steps, each with one fault; the table goes to {folder / TABLE}")
    for number, (program, kind, fault) in enumerate(todo, 1):
        echo(f"faults: {number} of {len(todo)}: {program}, {kind} ({fault})")
        asked = replace(options, program=program, run_id=f"{folder.name}-{program}-{kind.replace(' ', '-')}")
        backend = local_backend(settings, request.isolation, fault_plan(settings, asked, [fault], "local"))
        results.rows.append(_row(program, kind, fault, reproduce(settings, RunPlan(asked, backend), echo, progress,
                                                                 download)))
        _write(results)
    results.finished = datetime.now().isoformat(timespec="seconds")
    _write(results)
    return results


def _row(program: str, kind: str, fault: str, run: Reproduction) -> Row:
    cluster = run.results.modes.get("cluster") if run.results else None
    recovery = cluster.outcome.recovery if cluster and cluster.outcome else {}
    return Row(program, kind, fault, run.passed, str(run.run_dir),
               run.learning.status if run.learning else "not judged",
               dict(recovery.get("restarts") or {}), recovery.get("seconds_lost"),
               recovery.get("functions_run_again"), recovery.get("steps_redone"),
               "" if run.passed else run.error)


def table_lines(results: FaultsResults) -> list[str]:
    out = ["| program | fault | survived | restarted | run again | seconds lost | learning |",
           "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for r in results.rows:
        restarted = ", ".join(f"{role} x{n}" for role, n in r.restarts.items()) or "nothing"
        again = ("" if r.functions_run_again is None else f"{r.functions_run_again} functions") or \
                ("" if r.steps_redone is None else f"{r.steps_redone} steps")
        lost = "" if r.seconds_lost is None else f"{r.seconds_lost:.1f}"
        out.append(f"| {r.program} | {r.kind} (`{r.fault}`) | {'yes' if r.survived else 'no'} | {restarted} | "
                   f"{again} | {lost} | {r.learning} |")
    return out


def report_lines(results: FaultsResults) -> list[str]:
    """faults.md: the command, the table, and why each run that failed did."""
    lines = [*results.heading("Surviving a lost worker"), *table_lines(results), ""]
    for r in results.rows:
        if not r.survived:
            lines.append(f"- **{r.program}, {r.kind}: failed**: {_reason(r.why)}")
    return lines


def _reason(error: str) -> str:
    """The failed run's message, without its log excerpt (its first line)."""
    return error.splitlines()[0] if error else "no reason recorded"


def _write(results: FaultsResults) -> None:
    results.keep(TABLE, report_lines(results))
