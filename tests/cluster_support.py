"""Helpers for the tests that start processes: supervised roles, real TensorFlow servers, runs.

Every process this test session starts carries MARKER in its environment (children inherit
it), so the ``no_leftover_processes`` fixture can tell our processes from anyone else's,
even after they have been re-parented. Import the fixtures into a test module with
``from cluster_support import kit_inputs, no_leftover_processes``; pytest puts tests/ on
sys.path, as for docker_support.
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
import yaml

from reprokit.data.prepare import prepare_data
from reprokit.run.cluster import make_layout
from reprokit.run.local import LocalBackend
from reprokit.run.roles import RoleSpec, TrainingArgs, cluster_roles
from reprokit.settings import Settings, from_mapping
from reprokit.sources.workspace import apply_all

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "expected_logs" / "rules.yaml"
# Small, fast runs: 200 records per generated file, steps 0..20 (three step lines).
RECORDS = 200
STEPS = 21
FILLING_QUEUE = "Filling queue with"

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


@pytest.fixture(autouse=True)
def no_leftover_processes(tmp_path: Path) -> Iterator[None]:
    """After the test, no process it started may still run (role servers, trainers, supervisors)."""
    yield
    needles = (str(tmp_path),)
    deadline = time.monotonic() + 5  # a SIGKILL by PR_SET_PDEATHSIG is delivered asynchronously
    left = our_processes(*needles)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = our_processes(*needles)
    for proc in left:  # don't let one failure spoil the tests after it
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert [] == [f"{p.pid}: {p.cmdline[:200]}" for p in left], "processes left running after the test"


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


# --- real runs: shared inputs ------------------------------------------------------------

@dataclass(frozen=True)
class KitInputs:
    """Generated data and patched sources, made once per test session."""

    data_dir: Path  # the folder that holds cifar-10-batches-bin (Settings.data_dir, --data_dir)
    sources_dir: Path  # the patched trainers


@pytest.fixture(scope="session")
def kit_inputs(tmp_path_factory: pytest.TempPathFactory) -> KitInputs:
    root = tmp_path_factory.mktemp("kit-inputs")
    data = prepare_data("synthetic", root / "data", records_per_file=RECORDS)
    applied = apply_all(REPO / "upstream", REPO / "patches", root / "patched")
    return KitInputs(data.data_dir, applied.out_dir.resolve())


def repo_config() -> dict:
    """The `reprokit:` section of the repository's invoke.yaml: the settings a user gets."""
    return dict(yaml.safe_load((REPO / "invoke.yaml").read_text())["reprokit"])


def kit_config(runs_dir: Path, inputs: KitInputs) -> dict:
    """invoke.yaml's settings, with runs, data and sources under the test's folders."""
    return {**repo_config(), "runs_dir": str(runs_dir), "data_dir": str(inputs.data_dir),
            "sources_dir": str(inputs.sources_dir), "synthetic_records": RECORDS}


def kit_settings(runs_dir: Path, inputs: KitInputs) -> Settings:
    return from_mapping(kit_config(runs_dir, inputs), root=REPO)


def real_cluster_roles(backend: LocalBackend, inputs: KitInputs, run_dir: Path,
                       steps: int = STEPS, workers: int = 2) -> list[RoleSpec]:
    """ps, workers and client, as the cluster stage of a reproduction builds them."""
    training = TrainingArgs(steps, str(inputs.data_dir), str(run_dir / "train_cluster"))
    layout = make_layout("spread", workers)
    return cluster_roles(backend.cluster(workers), training, layout.cpus, python=backend.python,
                         sources=str(inputs.sources_dir), role_server=backend.role_server)
