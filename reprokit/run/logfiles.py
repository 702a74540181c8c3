"""The roles' logs: a pump writes each role's output into runs/<id>/<role>.log, a follower reads
the main role's step lines back as they come.

Every line is stamped `<iso time> | ` when it arrives (servers print few timestamps of their
own); the parser strips the stamp again (reprokit.judge.logs).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from reprokit.judge.logs import parse_line

JOIN_S = 5.0


def now_stamp() -> str:
    return datetime.now().isoformat(timespec="microseconds")


def stamped(line: str, at: str | None = None) -> str:
    """One log line as the kit writes it: '<time> | <text>\\n'."""
    return f"{at or now_stamp()} | {line.rstrip(chr(10))}\n"


class LogPump:
    """Writes a role's lines into its log from a thread of its own; never raises.

    A pump that cannot write (a full disk, a removed folder) stops and keeps the reason in
    `error`: the runner then fails the run at once, instead of letting the role block on a pipe
    that nobody drains any more.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error = ""
        self._thread: threading.Thread | None = None

    def note(self, text: str) -> None:
        """One line of the kit's own ('reprokit: $ <command>'), before or after the role's."""
        try:
            with self.path.open("a", encoding="utf-8") as log:
                log.write(stamped(f"reprokit: {text}"))
        except OSError as error:
            self.error = self.error or str(error)

    def start(self, lines: Iterable[str]) -> None:
        """Copy ``lines`` (each already stamped) into the log until they end."""
        self._thread = threading.Thread(target=self._copy, args=(lines,), daemon=True,
                                        name=f"log pump {self.path.name}")
        self._thread.start()

    def _copy(self, lines: Iterable[str]) -> None:
        try:
            with self.path.open("a", encoding="utf-8") as log:
                for line in lines:
                    log.write(line)
                    log.flush()
        except Exception as error:  # the pump's end must be seen, whatever ended it
            self.error = f"{type(error).__name__}: {error}"

    def join(self, timeout: float = JOIN_S) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


class LogFollower:
    """Reads the complete new lines of a growing log and hands on its step lines."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def steps(self) -> list[tuple[int, float]]:
        """(step, examples/sec) of each step line written since the last call."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        found = []
        for raw in complete.decode(errors="replace").splitlines():
            kind, fields, _, _ = parse_line(raw)
            if kind == "step" and fields is not None:
                found.append((fields.step, fields.examples_per_sec))
        return found


def tail(path: Path, lines: int = 8) -> str:
    """The last lines of a log, for an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
