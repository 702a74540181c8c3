"""Helpers for the tests that start processes: supervised roles, real TensorFlow servers, runs.

Every process this test session starts carries MARKER in its environment (children inherit
it), so the ``no_leftover_processes`` fixture (tests/conftest.py) can tell our processes from
anyone else's, even after they have been re-parented.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MARKER_NAME = "REPROKIT_TEST_SESSION"
# A fresh value each session: a parent that happens to carry an older one is not ours.
os.environ[MARKER_NAME] = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
MARKER = f"{MARKER_NAME}={os.environ[MARKER_NAME]}".encode()


# --- processes ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Proc:
    pid: int
    argv: list[str]

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


def _read_proc(pid_dir: Path) -> tuple[list[str], list[bytes]] | None:
    """A live process's argv and environment; None for zombies and processes gone meanwhile."""
    try:
        state = (pid_dir / "stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):  # exited, waiting to be reaped: nothing of it runs
            return None
        argv = (pid_dir / "cmdline").read_bytes().split(b"\0")
    except (OSError, IndexError):
        return None
    try:
        env = (pid_dir / "environ").read_bytes().split(b"\0")
    except OSError:  # not ours to read (pid 1 here): then it is not ours either
        env = []
    return [a.decode(errors="replace") for a in argv if a], env


def _processes() -> Iterator[tuple[int, list[str], list[bytes]]]:
    for pid_dir in Path("/proc").glob("[0-9]*"):
        if int(pid_dir.name) == os.getpid():
            continue
        info = _read_proc(pid_dir)
        if info is not None:
            yield int(pid_dir.name), *info


def our_processes(*needles: str) -> list[Proc]:
    """Processes this session started (MARKER in their environment) or whose command line
    contains one of ``needles``; never this process itself."""
    return [Proc(pid, argv) for pid, argv, env in _processes()
            if MARKER in env or any(n in " ".join(argv) for n in needles)]


def processes_mentioning(text: str) -> list[Proc]:
    """Any process, ours or not, whose command line contains ``text`` (a run folder, say)."""
    return [Proc(pid, argv) for pid, argv, _ in _processes() if text in " ".join(argv)]


def pids_running(argv: list[str]) -> list[int]:
    """PIDs of our processes running exactly ``argv`` (taskset execs it, so the argv stays)."""
    return [p.pid for p in our_processes() if p.argv == argv]


def alive(pid: int) -> bool:
    return _read_proc(Path(f"/proc/{pid}")) is not None


def wait_for(predicate: Callable[[], object], timeout: float, what: str, every: float = 0.2) -> object:
    """Poll until ``predicate()`` is truthy and return it; fail saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"after {timeout:.0f} s: {what}")
        time.sleep(every)


def log_has(path: Path, text: str) -> bool:
    try:
        return text in path.read_text(errors="replace")
    except OSError:
        return False


def free_port() -> int:
    """A TCP port nobody on 127.0.0.1 holds right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a fault injector that runs beside a blocking call ---------------------------------

@dataclass
class KillWhen:
    """In a thread: once ``log`` shows ``text``, SIGKILL our process running ``argv``."""

    log: Path
    text: str
    argv: list[str]
    timeout: float = 180.0
    sig: int = signal.SIGKILL
    pid: int | None = None
    netns: str | None = None  # the victim's network namespace, read just before the kill
    error: str = ""
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> "KillWhen":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        deadline = time.monotonic() + self.timeout
        while not log_has(self.log, self.text):
            if time.monotonic() > deadline:
                self.error = f"{self.log} never showed {self.text!r}"
                return
            time.sleep(0.1)
        pids = pids_running(self.argv)
        if len(pids) != 1:
            self.error = f"expected one process running {self.argv}, found {pids}"
            return
        self.pid = pids[0]
        try:
            self.netns = os.readlink(f"/proc/{self.pid}/ns/net")
        except OSError:
            pass
        os.kill(self.pid, self.sig)

    def join(self) -> None:
        assert self._thread is not None
        self._thread.join(timeout=30)
        assert not self.error, self.error
        assert self.pid is not None, "the victim was never killed"
