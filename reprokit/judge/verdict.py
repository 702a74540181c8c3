"""The verdict types: one rule's verdict with its evidence, all of them folded into a summary,
and a run's judgement (its logs' verdicts and its speed figures).

Rules are read by reprokit.judge.rules, checked by reprokit.judge.checks, and a run is judged by
reprokit.judge.judgement; they all speak these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from reprokit.judge.logs import LogRecord
from reprokit.judge.speedup import RunSpeed


class Evidence(NamedTuple):
    """A line that shows why; ``line`` is None when the evidence is a whole file searched."""

    path: Path
    line: int | None
    text: str


@dataclass(frozen=True)
class Verdict:
    rule: str
    mode: str
    passed: bool
    message: str
    evidence: list[Evidence]
    severity: str = "error"


@dataclass(frozen=True)
class Summary:
    """All verdicts folded: ``lines`` end with ``PASS`` or ``FAIL``; ``text`` joins them."""

    passed: bool
    checked: int
    failed: list[str]
    lines: list[str]
    warned: list[str] = field(default_factory=list)  # warning rules that did not hold

    @property
    def text(self) -> str:
        return "\n".join(self.lines)
@dataclass(frozen=True)
class Judgement:
    """A run's logs checked, every verdict with its evidence, and both modes' speed figures."""

    verdicts: list[Verdict]
    summary: Summary
    records: dict[str, list[LogRecord]]
    speed: RunSpeed | None
    speed_error: str = ""

    @property
    def passed(self) -> bool:
        compared = {"standalone", "cluster"} <= set(self.records)
        return self.summary.passed and (self.speed is not None or not compared)
