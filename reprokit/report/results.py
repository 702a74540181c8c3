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
from reprokit.judge.logs import StepFields, step_fields
from reprokit.judge.speed import RunSpeed
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


@dataclass(frozen=True)
class ArticleFigures:
    """The article's conclusion, beside which every run's figures are shown: its claim in
    claims.yaml, the one place its figures are written."""

    standalone_rate: float
    cluster_rate: float
    speedup: float
    workers: int

    @classmethod
    def of(cls, claims: Claims) -> ArticleFigures:
        claim = claims.speedup["article"]
        if claim.standalone_rate is None or claim.cluster_rate is None:
            raise ClaimsError("claims.yaml: the article's claim lacks standalone_rate or cluster_rate",
                              "restore expected_logs/claims.yaml (`git checkout expected_logs/claims.yaml`)")
        return cls(claim.standalone_rate, claim.cluster_rate, claim.value, claim.workers)


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


def mode_results(modes: tuple[str, ...], judgement: Judgement | None, outcomes: dict[str, Outcome],
                 evaluations: dict[str, Evaluation]) -> dict[str, ModeResult]:
    records = judgement.records if judgement else {}
    return {mode: ModeResult(step_fields(records.get(mode, [])), outcomes.get(mode),
                             dead_input_threads(records.get(mode, [])), evaluations.get(mode))
            for mode in modes}
