"""Parse a trainer's log once into records: one per line, with the step report's fields.

A trainer (upstream ``cifar10_multi_gpu_train.py`` and our two patched variants) prints, every
10 steps from step 0::

    2017-10-10 20:21:50.442159: step 10, loss = 4.65 (171.5 examples/sec; 0.746 sec/batch)

(``'%s: step %d, loss = %.2f (%.1f examples/sec; %.3f sec/batch)'`` with ``%s`` =
``str(datetime.now())``), once per input tower the "Filling queue with 20000 CIFAR images ..."
line, and, on the merged stderr, whatever TensorFlow warns about. Our launcher may prefix every
line with its own ISO timestamp and ``" | "``; the prefix is stripped and kept apart, so rules see
the trainer's text as the article shows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from reprokit.errors import KitError

# Upstream logs every LOG_EVERY steps (``step % 10 == 0``), step 0 included.
LOG_EVERY = 10

Kind = Literal["step", "filling_queue", "other"]

# The launcher's prefix: "2026-12-02T15:40:00.123456 | " (the fraction may be absent).
_PREFIX = re.compile(r"^(?P<at>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?) \| ")

# "%.2f" and friends print nan, inf and negative numbers too; accept them here so that the
# numeric rules, not the parser, say what is wrong with them.
_NUMBER = r"[-+]?(?:\d+(?:\.\d+)?|nan|inf)"
_STEP = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?: )?"
    rf"step (?P<step>\d+), loss = (?P<loss>{_NUMBER}) "
    rf"\((?P<eps>{_NUMBER}) examples/sec; (?P<spb>{_NUMBER}) sec/batch\)\s*$"
)
# The input fill announcement: the tutorial's queue, or the lesson's shuffle buffer.
_FILLING = re.compile(r"^Filling (?:queue with \d+ CIFAR images|shuffle buffer with \d+ CIFAR records) before "
                      r"starting to train\.")


class LogError(KitError):
    """A log file the kit was asked to read is missing or unreadable."""


@dataclass(frozen=True)
class StepFields:
    """The numbers of one step report, as the rules read them and results.json keeps them.

    The trainer's own datetime on the line is not among them: the rules judge it in the text.
    """

    step: int
    loss: float
    examples_per_sec: float
    sec_per_batch: float


@dataclass(frozen=True)
class LogRecord:
    """One line of one role's log: where it is, what it says, and what kind of line it is.

    ``line`` counts from 1, as editors and ``grep -n`` do; ``text`` is the line without the
    launcher's prefix and without the line break; ``logged_at`` is the prefix's time, if any.
    """

    path: Path
    line: int
    role: str
    text: str
    kind: Kind
    step: StepFields | None = None
    logged_at: datetime | None = None

    @property
    def where(self) -> str:
        """``path:line``, the form a person can paste into an editor."""
        return f"{self.path}:{self.line}"


def parse_line(text: str) -> tuple[Kind, StepFields | None, str, datetime | None]:
    """Classify one line; return its kind, step fields, prefix-free text and prefix time."""
    logged_at = None
    prefix = _PREFIX.match(text)
    if prefix:
        logged_at = datetime.fromisoformat(prefix["at"])
        text = text[prefix.end():]
    match = _STEP.match(text)
    if match:
        fields = StepFields(
            step=int(match["step"]),
            loss=float(match["loss"]),
            examples_per_sec=float(match["eps"]),
            sec_per_batch=float(match["spb"]),
        )
        return "step", fields, text, logged_at
    if _FILLING.match(text):
        return "filling_queue", None, text, logged_at
    return "other", None, text, logged_at


def parse_log(path: Path, role: str) -> list[LogRecord]:
    """Read ``path`` once and return one record per line, in file order.

    Lines are split on ``\\n`` only: the download progress bar's ``\\r`` stays inside its line,
    so line numbers agree with ``grep -n``. Undecodable bytes become U+FFFD rather than failing:
    a log is evidence and is read whole.
    """
    try:
        # Bytes, then decode: text mode would turn a lone \r into a line break.
        content = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise LogError(
            f"log file not found: {path} (role {role})",
            f"did the {role} role start? list the run folder {path.parent} to see what it wrote",
        ) from None
    except OSError as err:
        raise LogError(f"cannot read log file {path} (role {role}): {err}") from None
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records = []
    for number, raw in enumerate(lines, start=1):
        kind, fields, text, logged_at = parse_line(raw.rstrip("\r"))
        records.append(LogRecord(path, number, role, text, kind, fields, logged_at))
    return records


def resumed_log(paths: Sequence[Path], role: str) -> list[LogRecord]:
    """The logs of a role's incarnations (a cluster restarted as a whole) read as one run: each
    incarnation's lines up to its first step line that the next incarnation logged again, since it
    resumed from a checkpoint taken before that step; the next one's lines from there."""
    logs = [parse_log(path, role) for path in paths]
    records: list[LogRecord] = []
    for number, log in enumerate(logs):
        resumed = next((r.step.step for later in logs[number + 1:] for r in later if r.step is not None), None)
        for record in log:
            if resumed is not None and record.step is not None and record.step.step >= resumed:
                break
            records.append(record)
    return records


def step_fields(records: Iterable[LogRecord]) -> list[StepFields]:
    """The step reports among ``records``, in the order given."""
    return [r.step for r in records if r.step is not None]
