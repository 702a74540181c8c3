"""Judge a finished run against expected_logs/: every rule, every failure with evidence."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprokit.errors import KitError
from reprokit.judge import checks
from reprokit.judge import rules as ruleslib
from reprokit.judge.logs import LogRecord, parse_log, step_fields
from reprokit.judge.speed import SpeedComparison, compare_speed
from reprokit.names import MAIN_ROLE, trainer_log
from reprokit.runs import RunInfo


@dataclass(frozen=True)
class Judgement:
    verdicts: list[ruleslib.Verdict]
    summary: ruleslib.Summary
    records: dict[str, list[LogRecord]]
    speed: SpeedComparison | None
    speed_error: str = ""

    @property
    def passed(self) -> bool:
        compared = {"standalone", "cluster"} <= set(self.records)
        return self.summary.passed and (self.speed is not None or not compared)


def judge_run(run_dir: Path, rules_path: Path) -> Judgement:
    """Check both modes' trainer logs, then compare their speeds."""
    run = RunInfo.load(run_dir)
    rules = ruleslib.load_rules(rules_path)
    verdicts: list[ruleslib.Verdict] = []
    records: dict[str, list[LogRecord]] = {}
    for mode in run.modes:
        path = trainer_log(run_dir, mode)
        records[mode] = parse_log(path, MAIN_ROLE[mode]) if path.is_file() else []
        context = ruleslib.run_context(mode, run.steps, run.workers)
        verdicts += checks.check_logs(mode, records[mode], rules, context, {"format", "run"},
                                      sources=[path], program=run.program)
    speed, error = None, ""
    if {"standalone", "cluster"} <= set(records):
        try:
            speed = compare_speed(step_fields(records["standalone"]), step_fields(records["cluster"]),
                                  run.workers)
        except KitError as exc:
            error = str(exc)
    return Judgement(verdicts, checks.summarize(verdicts), records, speed, error)


def judge_article(article_dir: Path, rules_path: Path, workers: int = 2) -> ruleslib.Summary:
    """The article's own excerpts must pass every format rule: the rules describe real logs."""
    rules = ruleslib.load_rules(rules_path)
    verdicts = []
    for mode, name in (("standalone", "standalone.log"), ("cluster", "cluster.log")):
        path = article_dir / name
        verdicts += checks.check_logs(mode, parse_log(path, mode), rules,
                                        ruleslib.article_context(mode, workers), {"format"}, sources=[path])
    return checks.summarize(verdicts)
