"""run.json and results.json: what a run was asked to do, and every figure of what came out."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import ClassVar

from reprokit.data.prepare import DataResult
from reprokit.judge.checks import MAX_EVIDENCE, Verdict
from reprokit.judge.claims import Claims, ClaimsError, ClaimVerdict
from reprokit.judge.evaluation import Evaluation
from reprokit.judge.judgement import Judgement
from reprokit.judge.logs import StepFields, parse_log, step_fields
from reprokit.judge.speed import Interval, RunSpeed, SpeedError, examples_per_step, intervals, rate_estimate
from reprokit.judge.threads import dead_input_threads
from reprokit.names import RESULTS
from reprokit.records import Document
from reprokit.run.backends import Exposure
from reprokit.run.runner import Outcome
from reprokit.run.tuning import Tuning
from reprokit.settings import Settings
from reprokit.sources.patches import read_series
from reprokit.sources.upstream import read_checksums, sha256_file
from reprokit.stages import StageRecord
from reprokit.updates.verdict import UpdatesVerdict


def package_version(*names: str) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@dataclass(frozen=True)
class MachineFacts:
    python: str
    tensorflow: str | None
    platform: str
    cpu_model: str
    cpu_count: int | None
    cpus_usable: int


def machine_facts() -> MachineFacts:
    return MachineFacts(sys.version.split()[0], package_version("tensorflow-cpu", "tensorflow"), platform.platform(),
                        cpu_model(), os.cpu_count(), len(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class DataFacts:
    source: str
    synthetic: bool
    notice: str
    official: bool
    batches_dir: str


@dataclass(frozen=True)
class ModeResult:
    steps: list[StepFields]
    outcome: Outcome | None
    dead_input_threads: dict[str, list[str]]  # tower -> the reason each dead thread died
    evaluation: Evaluation | None = None
    # The kit's clock: the timed intervals between step lines, and the examples a step as planned
    # (results.json of an older kit has neither: its plot shows the programs' own figures).
    intervals: list[Interval] = field(default_factory=list)
    examples_per_step: int = 0


@dataclass(frozen=True)
class ArticleFigures:
    """The article's conclusion, beside which every run's figures are shown: its claim in
    claims.yaml, the one place its figures are written; and what its own logs give timed as the
    kit times a run (the wall clock its trainers printed on each step line, the kit's rule)."""

    standalone_rate: float
    cluster_rate: float
    speedup: float
    workers: int
    standalone_line_rate: float | None = None  # results.json of an older kit has neither
    cluster_line_rate: float | None = None

    @classmethod
    def of(cls, claims: Claims, article_logs: Path | None = None) -> ArticleFigures:
        claim = claims.speedup["article"]
        if claim.standalone_rate is None or claim.cluster_rate is None:
            raise ClaimsError("claims.yaml: the article's claim lacks standalone_rate or cluster_rate",
                              "restore expected_logs/claims.yaml (`git checkout expected_logs/claims.yaml`)")
        lines = [None, None] if article_logs is None else [
            rate_estimate([[i.rate(examples_per_step(mode, claim.workers)) for i in intervals(
                parse_log(article_logs / f"{mode}.log", mode), by_trainer=True)]]).value
            for mode in ("standalone", "cluster")]
        return cls(claim.standalone_rate, claim.cluster_rate, claim.value, claim.workers, *lines)

    def line_times(self) -> str:
        """The sentence every report prints under its speed table: the article's figures are its
        programs' own; timed by its lines, the kit's way."""
        if self.standalone_line_rate is None or self.cluster_line_rate is None:
            return ""
        return (f"The article's figures are what its programs printed of themselves (each step line's one "
                f"`sess.run`); timed between its step lines by the wall clock its trainers printed on them, the "
                f"kit's rule, they are {self.standalone_line_rate:.1f} and {self.cluster_line_rate:.1f} "
                f"examples/sec, {self.cluster_line_rate / self.standalone_line_rate:.2f}x.")


def checksums(settings: Settings) -> dict[str, dict[str, str]]:
    return {
        "upstream": read_checksums(settings.upstream_dir),
        "patches": {p.name: sha256_file(p) for p in read_series(settings.patches_dir)},
    }


@dataclass
class RunResults(Document):
    """results.json: what came out of a run, and the facts needed to trust or repeat it.

    ``verdict`` is the headline: the three verdicts (logs, claim, learning) in one line, after
    ``run FAILED;`` when the run did not complete. ``passed`` is about the run alone: it completed
    and its logs pass; a claim that does not reproduce is a finding, not a failed run.
    ``verdict_lines`` are the three-part verdict as printed."""

    FILE: ClassVar[str] = RESULTS
    # 1: the untyped results.json of 0.1; 2: typed at the top only, speed without intervals;
    # 3: typed all the way down, every speed figure with its interval, the claim and learning verdicts.
    # 4: the verdict is the three-part headline, and `passed` says whether the run completed.
    FORMAT_VERSION: ClassVar[int] = 4
    AGAIN: ClassVar[str] = "run the experiment again with this kit to get its report"

    verdict: str
    passed: bool
    error: str
    finished: str
    tuning: Tuning
    backend: dict[str, str]
    exposure: Exposure | None
    data: DataFacts | None
    machine: MachineFacts
    checksums: dict[str, dict[str, str]]
    speed: RunSpeed | None
    article: ArticleFigures
    modes: dict[str, ModeResult]
    rules: list[Verdict]
    stages: list[StageRecord]
    claim: ClaimVerdict | None = None
    learning: ClaimVerdict | None = None
    verdict_lines: list[str] = field(default_factory=list)
    updates: UpdatesVerdict | None = None  # results.json of an older kit has none
    kit_fixes: dict[str, str] = field(default_factory=dict)  # what the kit mends in TensorFlow, and whether on
    format_version: int = field(default=FORMAT_VERSION, kw_only=True)



def data_facts(data: DataResult | None) -> DataFacts | None:
    if data is None:
        return None
    return DataFacts(data.source, data.synthetic, data.notice, data.official, str(data.batches_dir))


def rule_results(judgement: Judgement | None) -> list[Verdict]:
    """The run's verdicts as results.json keeps them: each with its first MAX_EVIDENCE lines of evidence."""
    if judgement is None:
        return []
    return [replace(v, evidence=v.evidence[:MAX_EVIDENCE]) for v in judgement.verdicts]


def mode_results(modes: tuple[str, ...], workers: int, judgement: Judgement | None, outcomes: dict[str, Outcome],
                 evaluations: dict[str, Evaluation]) -> dict[str, ModeResult]:
    records = judgement.records if judgement else {}
    found = {}
    for mode in modes:
        logged = records.get(mode, [])
        try:
            timed = intervals(logged)
        except SpeedError:  # no stamps: the judgement's speed_error says so
            timed = []
        found[mode] = ModeResult(step_fields(logged), outcomes.get(mode), dead_input_threads(logged),
                                 evaluations.get(mode), timed, examples_per_step(mode, workers))
    return found
