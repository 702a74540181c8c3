"""Named stages, each logging to its own file (runs/<id>/stages/NN-<stage>.log) and to the
terminal; a stage that fails or is interrupted says so in both, with its error.

Writing a stage's log never stops the run: on a full disk the lines still reach the terminal,
and the stage's record says its log is incomplete.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from reprokit.commands import Echo
from reprokit.names import STAGES


@dataclass
class StageRecord:
    name: str
    status: str = "not run"
    seconds: float = 0.0
    log: str = ""
    error: str = ""


class Stages:
    """The stages of one run, in order, with their records."""

    def __init__(self, run_dir: Path, echo: Echo) -> None:
        self.run_dir = run_dir
        (run_dir / STAGES).mkdir(exist_ok=True)
        self.echo = echo
        self.records: list[StageRecord] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[Echo]:
        record = StageRecord(name, log=f"{STAGES}/{len(self.records) + 1:02d}-{name}.log")
        self.records.append(record)
        started = time.monotonic()
        log: IO[str] | None = None
        try:
            log = (self.run_dir / record.log).open("w")
        except OSError as error:
            record.log += f" (not written: {error})"

        def say(line: str) -> None:
            nonlocal log
            if log is not None:
                try:
                    log.write(f"{datetime.now().isoformat(timespec='seconds')} {line}\n")
                    log.flush()
                except OSError as error:
                    record.log += f" (incomplete: {error})"
                    log = None
            self.echo(line)

        say(f"== {name}")
        try:
            yield say
            record.status = "ok"
        except BaseException as exc:
            record.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            record.error = str(exc) or type(exc).__name__
            say(f"{name} {record.status}: {record.error}")
            raise
        finally:
            record.seconds = round(time.monotonic() - started, 2)
            if log is not None:
                try:
                    log.close()
                except OSError:
                    pass
