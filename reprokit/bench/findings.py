"""What `invoke bench` and `invoke sweep` find, typed: bench.json, sweep.json and network.json are
`asdict` of these dataclasses, and the tables and plots read them back as such.

Every speed figure is an Estimate of the kit's one estimator (reprokit.judge.speed) with its
95% interval, and every run keeps its rates by the kit's clock: the samples behind the figures,
so that any figure can be recomputed from the file. A file written before the kit timed runs
itself holds the programs' own figures there, and says so (``BenchRun.rates_by``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from reprokit.bench.timeline import StepBreakdown
from reprokit.judge.speed import Estimate, rate_estimate, ratio_estimate
from reprokit.records import Document
from reprokit.run.thread_cpu import ThreadCpu
from reprokit.run.tuning import Tuning


@dataclass(frozen=True)
class LastLoss:
    step: int
    loss: float


# What a run's step_rates were timed by: the kit's clock, or (files of an older kit) the
# programs' own examples/sec.
KIT_CLOCK, PROGRAMS_OWN = "kit clock", "programs' own figures"


@dataclass
class BenchRun:
    """One run of one mode: its figure (the median of its rates) and the rates behind it."""

    mode: str
    workers: int
    program: str
    folder: str
    rate: float | None  # the run's own figure: the median of step_rates
    step_rates: list[float]  # each timed interval's examples/sec by the kit's clock, in step order
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    first_step_after_ready_s: float | None = None
    last_loss: LastLoss | None = None  # the last logged step's loss
    dead_input_threads: int = 0
    probe: dict[str, object] = field(default_factory=dict)  # probe.json, as the probe wrote it
    network: dict[str, object] = field(default_factory=dict)  # the hosts backend's hosts and bytes
    threads: ThreadCpu | None = None  # each role's CPU by thread group (processes only; older files lack it)
    reported_rates: list[float] = field(default_factory=list)  # what the program printed, step 0 left out
    rates_by: str = PROGRAMS_OWN  # what timed step_rates: KIT_CLOCK in every file this kit writes


def speedup_of(pairs: Sequence[tuple[BenchRun, BenchRun]]) -> Estimate | None:
    """The one estimator over (numerator run, denominator run) pairs, one a repetition; None
    when a run logged no step after warm-up."""
    if not pairs or any(not run.step_rates for pair in pairs for run in pair):
        return None
    return ratio_estimate([(num.step_rates, den.step_rates) for num, den in pairs])


def rate_of(runs: Sequence[BenchRun]) -> Estimate | None:
    """A rate from runs' step rates by the one estimator; None when a run has none."""
    if not runs or any(not run.step_rates for run in runs):
        return None
    return rate_estimate([run.step_rates for run in runs])


@dataclass
class CpuShare:
    """Average cores each role kept busy while the main role ran (from its CPU seconds)."""

    cpus: int
    wall_s: float
    roles: dict[str, float]


# --- invoke bench ---------------------------------------------------------------------------


@dataclass
class Repetition:
    """One repetition: each program's standalone (programs of one trainer file share its one
    run), each row's cluster (in the rows' order), when the changes of the ablation run per
    repetition the article's cluster with each alone, and, when a tf2 program is benched, the
    machine's ceiling: two of its standalones at once, one per CPU."""

    standalone: dict[str, BenchRun]
    clusters: list[BenchRun]
    variants: dict[str, BenchRun] = field(default_factory=dict)
    ceiling: list[BenchRun] = field(default_factory=list)


@dataclass
class BenchRow:
    name: str
    program: str
    tuning: str
    speedup: Estimate | None  # cluster over its own program's standalone, paired by repetition
    standalone_rate: Estimate | None
    cluster_rate: Estimate | None
    efficiency: float | None  # speed-up / workers
    per_repetition: list[float | None]  # each repetition's ratio of medians
    cpu_share: CpuShare  # of the middle repetition's cluster
    # Its speed-up over the ceiling's: a ratio of two estimates, shown without an interval of its own.
    share_of_ceiling: float | None = None
    levers: list[str] = field(default_factory=list)  # set in its cluster trainer (reprokit.programs.Lever)


CEILING_CPUS = 2  # the ceiling's concurrent standalones, one per CPU


def two_cpus(runs: Sequence[BenchRun]) -> list[float]:
    """Concurrent one-CPU runs as two CPUs' worth: their step rates pooled, each doubled, so
    that the median is twice the median per-CPU rate."""
    return [CEILING_CPUS * rate for run in runs for rate in run.step_rates]


@dataclass
class Ceiling:
    """What this machine's first two CPUs give with no cluster between them: two of a program's
    standalones at once, one pinned to each, over its standalone alone, paired by repetition.
    It is about the most a cluster of two one-CPU workers can reach here, and shows what the two
    CPUs lose to each other (shared caches, memory bandwidth, clock) before any cluster overhead."""

    program: str
    speedup: Estimate | None  # two CPUs' worth over the standalone alone
    standalone_rate: Estimate | None
    two_cpus_rate: Estimate | None  # both concurrent runs' step rates pooled, doubled
    per_repetition: list[float | None]  # each repetition's ratio of medians
    folders: list[str]


def ceiling_of(program: str, reps: Sequence[Repetition]) -> Ceiling | None:
    """The one estimator over the repetitions' (both concurrent runs, ``program``'s standalone
    alone) pairs; None when no repetition ran the ceiling."""
    measured = [rep for rep in reps if rep.ceiling]
    if not measured:
        return None
    pairs = [(rep.ceiling, rep.standalone[program]) for rep in measured]
    complete = all(run.step_rates for runs, alone in pairs for run in (*runs, alone))
    doubled = [(two_cpus(runs), alone) for runs, alone in pairs]
    return Ceiling(
        program, ratio_estimate([(both, alone.step_rates) for both, alone in doubled]) if complete else None,
        rate_of([alone for _, alone in pairs]),
        rate_estimate([both for both, _ in doubled]) if complete else None,
        [statistics.median(both) / alone.rate if both and alone.rate else None for both, alone in doubled],
        [run.folder for runs, _ in pairs for run in runs])


@dataclass
class Baseline:
    """The lesson's standalone over the article's: a fair baseline is at least the floor."""

    ratio: Estimate | None
    per_repetition: list[float | None]
    floor: float
    ok: bool


# The ablation's first and last rows: the article's and the lesson's rows themselves.
NONE_CHANGE, ALL_CHANGES = "none (the article's program)", "all (the lesson)"
# A program's lever table's first row: its own row, as its patch runs it.
NO_LEVER = "none (the program's own row)"


@dataclass
class AblationRow:
    change: str
    speedup: Estimate | None  # over its program's standalone (the article's, but for the lesson)
    cluster_rate: Estimate | None
    gain: Estimate | None  # its cluster over the reference cluster (the article's; a lever's program's), paired
    folders: list[str] = field(default_factory=list)
    # The reference cluster over the same repetitions as this row's runs: the rate the gain is
    # over (the geometric means make gain = cluster_rate / reference exactly). Older files lack it.
    reference: Estimate | None = None
    share_of_ceiling: float | None = None  # a lever row's, as its BenchRow's


@dataclass
class Target:
    speedup: float
    lesson_speedup: Estimate | None
    met: bool


@dataclass
class InputFreeBound:
    rate: Estimate | None  # one standalone run without the input pipeline
    standalone_share: float | None  # the article's standalone rate over it


@dataclass
class ProgramLoss:
    step: int | None
    loss: float | None
    dead_input_threads: int
    folder: str


@dataclass
class LossCheck:
    steps: int
    programs: dict[str, ProgramLoss]


@dataclass
class Overheads:
    verify_and_apply_s: float
    cluster_ready_to_first_step_s: float | None
    teardown_s: float


@dataclass
class Measured(Document):
    """What every benchmark's results open with: where its runs are, how long each ran, and the
    rules its figures follow."""

    AGAIN: ClassVar[str] = "run the benchmark again with this kit to write it in this format"

    folder: str
    steps: int
    warmup_rule: str
    method: str  # the estimator and its intervals, in words (reprokit.judge.speed.METHOD)


@dataclass
class BenchResults(Measured):
    FILE: ClassVar[str] = "bench.json"
    FORMAT_VERSION: ClassVar[int] = 2  # 2: the machine's ceiling, and each row's share of it

    repetitions: int
    workers: int
    data: str
    request_id_fix: str
    variants_each_repetition: bool
    tunings: dict[str, Tuning]
    repetition_results: list[Repetition]
    rows: list[BenchRow]
    baseline: Baseline | None
    ablation: list[AblationRow]
    target: Target
    input_free_bound: InputFreeBound
    breakdown: dict[str, StepBreakdown]  # one traced step of each, by name
    placement: dict[str, dict[str, str]]  # program -> variable -> device
    loss: LossCheck | None
    overheads: Overheads
    ceiling: Ceiling | None  # when a tf2 program is benched
    # program -> its levers in the ablation's form: its own row first (`invoke bench --levers`)
    levers: dict[str, list[AblationRow]] = field(default_factory=dict, kw_only=True)
    format_version: int = field(default=FORMAT_VERSION, kw_only=True)


# --- invoke sweep ---------------------------------------------------------------------------


@dataclass
class SweepPoint:
    workers: int
    cluster: BenchRun
    rate: Estimate | None
    speedup: Estimate | None  # over the program's standalone: one pair, the within-run interval
    oversubscribed: bool


@dataclass
class SweepProgram:
    standalone: BenchRun
    standalone_rate: Estimate | None
    points: list[SweepPoint]


@dataclass
class SweepResults(Measured):
    FILE: ClassVar[str] = "sweep.json"
    FORMAT_VERSION: ClassVar[int] = 1

    tuning: Tuning
    cpus: int
    programs: dict[str, SweepProgram]
    format_version: int = field(default=FORMAT_VERSION, kw_only=True)


# --- invoke sweep --link: the network sweep ---------------------------------------------------


@dataclass
class NetworkPoint:
    link: str
    bits_per_s: float | None  # None: an unshaped link
    cluster: BenchRun
    rate: Estimate | None
    speedup: Estimate | None


@dataclass
class Prediction:
    """Predicted examples/sec per link, from the unshaped run's step time and the busiest host's
    bytes per step; ``why_not`` says why there is none."""

    why_not: str | None = None
    compute_step_s: float | None = None
    busiest_host: str | None = None
    bytes_per_step: int | None = None
    points: dict[str, float] = field(default_factory=dict)  # link -> predicted examples/sec
    curve: list[tuple[float, float]] = field(default_factory=list)  # (bits/s, examples/sec)
    beats_one_cpu_above_bits_per_s: float | None = None
    never_beats_one_cpu: bool = False


@dataclass
class NetworkProgram:
    standalone: BenchRun
    standalone_rate: Estimate | None
    points: list[NetworkPoint]
    prediction: Prediction


@dataclass
class NetworkResults(Measured):
    FILE: ClassVar[str] = "network.json"
    FORMAT_VERSION: ClassVar[int] = 1

    workers: int
    tuning: Tuning
    links: list[str]
    programs: dict[str, NetworkProgram]
    format_version: int = field(default=FORMAT_VERSION, kw_only=True)
