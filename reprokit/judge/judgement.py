"""Judge a finished run against expected_logs/: every rule, every failure with evidence, and
both modes' speed figures with their intervals."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprokit.errors import KitError
from reprokit.judge import checks
from reprokit.judge import rules as ruleslib
from reprokit.judge.checks import Summary, Verdict
from reprokit.judge.evaluation import eval_verdicts
from reprokit.judge.logs import LogRecord, parse_log, resumed_log
from reprokit.judge.speed import RunSpeed, run_speed
from reprokit.names import (
    EVAL_RULES,
    eval_log,
    incarnation_logs,
    log_path,
    repetition_dir,
)
from reprokit.programs import program
from reprokit.run_folders import RunInfo


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


def judge_run(run_dir: Path, rules_path: Path, run: RunInfo | None = None) -> Judgement:
    """Check both modes' trainer logs and their eval logs (where the run has them), then compare
    their speeds; ``run`` is the run's run.json as prepared (read from the folder when not given,
    as `compare-logs` does). The eval rules are ``eval_rules.yaml`` beside ``rules_path``."""
    run = run or RunInfo.load(run_dir)
    rules = ruleslib.load_rules(rules_path)
    eval_rules = ruleslib.load_rules(rules_path.parent / EVAL_RULES)
    verdicts: list[Verdict] = []
    records: dict[str, list[LogRecord]] = {}
    trained = program(run.program)  # an unknown name, in a folder from elsewhere, is a clear error
    for mode in run.modes:
        records[mode], checked = _checked_log(run_dir, mode, trained.main_role(mode), rules, run)
        verdicts += checked
        evaluated = eval_log(run_dir, mode)
        if evaluated.is_file():
            verdicts += eval_verdicts(evaluated, mode, eval_rules, run.program)
    more = []  # the other pairs of a run with --repetitions: their logs checked too, their speed counted
    for number in range(2, run.repetitions + 1):
        folder = repetition_dir(run_dir, number)
        pair: dict[str, list[LogRecord]] = {}
        for mode in run.modes:
            pair[mode], checked = _checked_log(folder, mode, trained.main_role(mode), rules, run)
            verdicts += checked
        more.append((pair.get("standalone", []), pair.get("cluster", [])))
    speed: RunSpeed | None = None
    error = ""
    if {"standalone", "cluster"} <= set(records):
        try:
            speed = run_speed(records["standalone"], records["cluster"], run.workers, more)
        except KitError as exc:
            error = str(exc)
    return Judgement(verdicts, checks.summarize(verdicts), records, speed, error)


def _checked_log(folder: Path, mode: str, main: str, rules: list[ruleslib.Rule],
                 run: RunInfo) -> tuple[list[LogRecord], list[Verdict]]:
    """One mode's trainer log in ``folder`` (the main role's, across the incarnations of a cluster
    restarted as a whole, read as one run) and the rules' verdicts on it."""
    paths = incarnation_logs(folder, main)
    records = resumed_log(paths, main)
    context = ruleslib.run_context(mode, run.steps, run.workers)
    incarnations = max(1, len(paths))
    context.update(incarnations=incarnations, tower_starts=context["towers"] * incarnations)
    verdicts = checks.check_logs(mode, records, rules, context, {"format", "run"},
                                 sources=paths or [log_path(folder, main)], program=run.program)
    return records, verdicts


def judge_article(article_dir: Path, rules_path: Path, workers: int) -> Summary:
    """The article's own excerpts (of its ``workers``-worker cluster) must pass every format rule:
    the rules describe real logs."""
    rules = ruleslib.load_rules(rules_path)
    verdicts = []
    for mode, name in (("standalone", "standalone.log"), ("cluster", "cluster.log")):
        path = article_dir / name
        verdicts += checks.check_logs(mode, parse_log(path, mode), rules,
                                      ruleslib.article_context(mode, workers), {"format"}, program="article",
                                      sources=[path])
    return checks.summarize(verdicts)
