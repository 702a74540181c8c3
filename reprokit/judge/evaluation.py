"""Evaluation the tutorial's way: ``cifar10_eval.py`` on a trainer's checkpoint, precision @ 1.

The kit judges training by its loss; the tutorial judges the model by how often its top
prediction is the label on the test batch. This module builds the eval program's command line,
runs it once through :mod:`reprokit.commands` into a log file, reads the precision back from the
log, and gives it a 95% Wilson interval, so that "above chance" (0.10 for ten classes) is a
statement about the interval, not about one number.

The eval program prints ``%s: precision @ 1 = %.3f`` (``datetime.now()``), after counting
``ceil(num_examples / 128)`` whole batches: the last batch wraps around to the first records, so
10000 examples count as 10112 and 200 as 256. The log's rules are ``expected_logs/eval_rules.yaml``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from statsmodels.stats.proportion import proportion_confint

from reprokit.commands import Echo, attempt, shown, silent
from reprokit.errors import KitError
from reprokit.judge.checks import Verdict, check_logs
from reprokit.judge.logs import parse_log
from reprokit.judge.rules import Rule
from reprokit.judge.speed import ALPHA, BATCH_SIZE  # the eval counts whole batches of it

EVAL_PROGRAM = "cifar10_eval.py"
CHECKPOINT_STATE = "checkpoint"  # the file tf.train.Saver keeps beside model.ckpt-<step>
EVAL_SCOPES = {"format", "run"}

# 2026-12-03 17:14:24.966871: precision @ 1 = 0.871   (str(datetime) drops a zero fraction)
_PRECISION = re.compile(
    r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{6})?: precision @ 1 = (?P<precision>\d\.\d{3})\s*$")
_NO_CHECKPOINT = "No checkpoint file found"
# model_checkpoint_path: "/runs/x/train_standalone/model.ckpt-20" in the checkpoint state file, and
# TensorFlow's "Restoring parameters from /runs/x/train_standalone/model.ckpt-20" in the log.
_STATE_PATH = re.compile(r'^model_checkpoint_path: "(?P<path>[^"]*)"', re.MULTILINE)
_RESTORING = re.compile(r"Restoring parameters from (?P<path>\S+)")
_STEP_IN_NAME = re.compile(r"-(?P<step>\d+)$")


class EvalError(KitError):
    """The evaluation could not be run on what it was given."""


class NoCheckpointError(EvalError):
    """The folder holds no checkpoint for the eval program to restore."""


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of one mode's checkpoint, as results.json keeps it and the learning verdict
    judges it: precision @ 1 = correct / counted on the test set, with its 95% Wilson interval, of
    the checkpoint of ``step`` (0-based: step + 1 steps trained), which showed the model
    ``examples_seen`` examples ((step + 1) x 128 x towers).

    ``correct`` is recovered from the printed three-decimal precision, so it is exact to within
    ``counted / 2000`` examples. ``error`` is empty when the log holds a precision; otherwise it
    says what went wrong, the precision and its interval are None and ``correct`` is 0.
    """

    step: int | None
    precision: float | None
    correct: int
    counted: int
    low: float | None
    high: float | None
    examples_seen: int
    log: Path
    error: str = ""

    def __post_init__(self) -> None:
        # Numbers that contradict each other are a wiring bug: refused before a verdict rests on them.
        if self.precision is None:
            return
        if self.counted < 1 or not 0 <= self.correct <= self.counted:
            raise EvalError(f"an evaluation needs 0 <= correct <= counted and counted >= 1; "
                            f"got correct={self.correct}, counted={self.counted}")
        # cifar10_eval prints the precision with 3 decimals: allow that rounding, nothing more.
        if abs(self.precision - self.correct / self.counted) > 0.0005 + 1e-9:
            raise EvalError(f"precision {self.precision} is not correct / counted = "
                            f"{self.correct}/{self.counted} = {self.correct / self.counted:.4f}",
                            "build the Evaluation from the eval log's own counts")
        if self.low is None or self.high is None:
            raise EvalError("an evaluation with a precision carries its interval (low and high)")

    @property
    def ok(self) -> bool:
        """A precision to judge: read without error, of a checkpoint whose step is known."""
        return not self.error and self.precision is not None and self.step is not None


def eval_argv(python: str, sources: Path, checkpoint_dir: Path, eval_dir: Path, data_dir: Path,
              num_examples: int) -> list[str]:
    """The eval program once on the newest checkpoint in ``checkpoint_dir``.

    ``data_dir`` holds ``cifar-10-batches-bin`` (the trainers' --data_dir); ``num_examples`` is the
    number of records in its test batch. The program wipes ``eval_dir`` before it writes there."""
    if num_examples < 1:
        raise EvalError(f"num_examples must be at least 1, got {num_examples}")
    return [python, str(sources / EVAL_PROGRAM), f"--checkpoint_dir={checkpoint_dir}",
            f"--eval_dir={eval_dir}", f"--data_dir={data_dir}", f"--num_examples={num_examples}",
            "--run_once"]


def counted_examples(num_examples: int, batch_size: int = BATCH_SIZE) -> int:
    """How many examples the eval program counts: whole batches, ``ceil(num_examples / batch)``."""
    return math.ceil(num_examples / batch_size) * batch_size


def step_of(checkpoint_path: str) -> int | None:
    """The global step in a checkpoint's name: ``.../model.ckpt-999`` -> 999."""
    match = _STEP_IN_NAME.search(checkpoint_path.rstrip("/"))
    return int(match["step"]) if match else None


def latest_checkpoint(checkpoint_dir: Path) -> str | None:
    """The newest checkpoint's path as the ``checkpoint`` state file names it, or None."""
    state = checkpoint_dir / CHECKPOINT_STATE
    if not state.is_file():
        return None
    match = _STATE_PATH.search(state.read_text(encoding="utf-8", errors="replace"))
    return match["path"] if match and match["path"] else None


def require_checkpoint(checkpoint_dir: Path) -> str:
    """The newest checkpoint's path; NoCheckpointError naming the folder and the fix otherwise."""
    path = latest_checkpoint(checkpoint_dir)
    if path is None:
        raise NoCheckpointError(
            f"no checkpoint to evaluate in {checkpoint_dir}: it has no '{CHECKPOINT_STATE}' file naming "
            "a model.ckpt-<step>",
            "pass the train_dir of a finished training run (the trainers save a checkpoint every 1000 "
            "steps and after the last one), or train first, e.g. `invoke reproduce --quick`")
    return path


def wilson(correct: int, counted: int) -> tuple[float, float]:
    """Wilson's score interval (95%) for the proportion correct / counted, from statsmodels."""
    if counted < 1 or not 0 <= correct <= counted:
        raise EvalError(f"a proportion needs 0 <= correct <= counted, counted >= 1; got {correct}/{counted}")
    low, high = proportion_confint(correct, counted, alpha=ALPHA, method="wilson")
    return max(0.0, float(low)), min(1.0, float(high))


def parse_eval_log(text: str, num_examples: int, *, towers: int, log: Path,
                   checkpoint: str | None = None) -> Evaluation:
    """Read an eval log's text into an evaluation; the last precision line counts. ``towers``:
    the batches a step of the evaluated trainer took (its workers, one alone).

    The step comes from the checkpoint the log says it restored, else from ``checkpoint`` (the
    path the checkpoint state file names), else it is None."""
    counted = counted_examples(num_examples)
    restored = [m["path"] for m in _RESTORING.finditer(text)]
    source = restored[-1] if restored else checkpoint
    step = step_of(source) if source else None
    seen = 0 if step is None else (step + 1) * BATCH_SIZE * towers
    lines = text.splitlines()
    found = [m for m in map(_PRECISION.match, lines) if m]
    if not found:
        reason = (f"the eval program found no checkpoint ('{_NO_CHECKPOINT}')" if _NO_CHECKPOINT in text
                  else "the eval log has no 'precision @ 1 = ' line in the tutorial's format")
        return Evaluation(step, None, 0, counted, None, None, seen, log, f"{reason}; see {log}")
    precision = float(found[-1]["precision"])
    if not 0.0 <= precision <= 1.0:
        return Evaluation(step, None, 0, counted, None, None, seen, log,
                          f"precision {precision} is not a proportion; see {log}")
    correct = round(precision * counted)
    low, high = wilson(correct, counted)
    return Evaluation(step, precision, correct, counted, low, high, seen, log)


def eval_verdicts(log: Path, mode: str, rules: list[Rule], program: str) -> list[Verdict]:
    """An eval log of ``program`` checked against the eval rules under ``mode``: a verdict per
    rule. The run's judgement adds these to its trainers' verdicts."""
    return check_logs(mode, parse_log(log, "eval"), rules, {}, EVAL_SCOPES, program=program, sources=[log])


def evaluate(python: str, sources: Path, checkpoint_dir: Path, eval_dir: Path, data_dir: Path,
             num_examples: int, log: Path, echo: Echo = silent, *, towers: int,
             timeout: float | None = None) -> Evaluation:
    """Run the eval program once on the newest checkpoint in ``checkpoint_dir``; its output (stdout
    and stderr, as the program printed them) goes to ``log``, and the evaluation is read back from
    it (``towers`` as :func:`parse_eval_log` takes it).

    Raises NoCheckpointError before running anything when there is no checkpoint. A program that
    fails, or prints no precision, gives a result whose ``error`` says so, with its exit code."""
    checkpoint = require_checkpoint(checkpoint_dir)
    argv = eval_argv(python, sources, checkpoint_dir, eval_dir, data_dir, num_examples)
    code, output = attempt(argv, echo=echo, timeout=timeout)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(output, encoding="utf-8")
    result = parse_eval_log(output, num_examples, towers=towers, log=log, checkpoint=checkpoint)
    if code != 0:
        tail = "; ".join(output.strip().splitlines()[-3:])
        problem = f"{shown(argv)} exited with code {code} (last lines: {tail}); see {log}"
        return replace(result, precision=None, correct=0, low=None, high=None, error=problem)
    return result
