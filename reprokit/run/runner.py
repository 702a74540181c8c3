"""The one loop every backend runs: start the servers, wait until each answers, start the rest,
watch them all while the main role runs, and always tear every one of them down.

A backend provides one `RoleHandle` (reprokit.run.roles) per role (a process here, a container,
a process in a host namespace) and calls `Runner.run`; the loop, its errors, its timings and its
watchdog are the same everywhere. The runner follows the main role's log: each step line is progress, and a run
whose step lines stop coming is stopped by the watchdog, with the evidence.
"""

from __future__ import annotations

import signal
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprokit.errors import ClusterError, KitError
from reprokit.names import log_path
from reprokit.records import from_json
from reprokit.run.faults import Recovery
from reprokit.run.logfiles import LogFollower, tail
from reprokit.run.roles import RoleHandle
from reprokit.run.thread_cpu import ThreadCpu, ThreadSampler

Progress = Callable[[str, int, float], None]  # role, step, examples/sec
TERM_GRACE_S = 5.0
TICK_S = 0.25


@dataclass
class Outcome:
    """How a run of roles ended: the evidence the report and the tests read."""

    ok: bool
    message: str
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)  # processes on this machine (local backends)
    timings: dict[str, float] = field(default_factory=dict)  # seconds since the start; epoch_started
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per role, last sample before it ended
    interfaces: list[str] = field(default_factory=list)  # the network the roles saw: ['lo'] when isolated
    left: list[str] = field(default_factory=list)  # what teardown could not remove, with the reason
    network: dict[str, object] = field(default_factory=dict)  # the hosts backend: addresses, link, bytes
    recovery: dict[str, Any] = field(default_factory=dict)  # faults, restarts, their timeline (faults.py), as JSON
    threads: ThreadCpu | None = None  # each role's CPU by thread group while steps were logged (processes here)

    @classmethod
    def from_json(cls, data: object) -> Outcome:
        """An outcome as asdict wrote it (outcome.json, the supervisor's last event)."""
        return from_json(cls, data, "outcome")

    def add_leftovers(self, left: list[str]) -> None:
        """What a teardown could not remove: the run fails, and its message names each one."""
        if left:
            self.ok, self.left = False, self.left + left
            self.message = (self.message + "\n" if self.message else "") + "could not remove: " + ", ".join(left)


@dataclass(frozen=True)
class Watchdog:
    """When a run is stuck: a server that does not answer within `probe_s` (they import TensorFlow
    first), or no step line for too long. Its values are invoke.yaml's (Settings.watchdog), never
    defaults typed here.

    Step lines come every 10 steps. Before the first one the main role may build its graph and
    fill its queues (the article's step 0 took 10 s of 1.3 s steps): `first_step_s` is the ceiling
    there and for the second line. After that the limit is `factor` times the median time between
    step lines so far, but never less than `floor_s`, so a checkpoint or a busy machine is no stall.
    """

    probe_s: float
    first_step_s: float
    factor: float
    floor_s: float

    def limit(self, gaps: Sequence[float]) -> float:
        if not gaps:
            return self.first_step_s
        return max(self.floor_s, self.factor * statistics.median(gaps))

    def explain(self, gaps: Sequence[float]) -> str:
        if not gaps:
            return f"the first two step lines may take up to {self.first_step_s:.0f} s"
        return (f"the median time between step lines is {statistics.median(gaps):.1f} s; "
                f"the watchdog allows {self.factor:g} times that, at least {self.floor_s:.0f} s")


def signal_phrase(code: int | None) -> str:
    """' (killed by SIGKILL)' for a code that says a signal ended it (-9, or 137 from a shell)."""
    if code is None:
        return ""
    number = -code if code < 0 else code - 128 if code > 128 else 0
    if number and number in signal.valid_signals():
        return f" (killed by {signal.Signals(number).name})"
    return ""


class _Died(Exception):
    """A role ended when it should not have; the message is made once its log is complete."""

    def __init__(self, role: str, when: str) -> None:
        super().__init__(role, when)
        self.role, self.when = role, when


class Runner:
    """One run of roles: servers first, each probed until it answers, then the rest; the run
    ends when the main role ends, when any other role dies, when it stalls, or on `stop`."""

    def __init__(self, run_dir: Path, handles: Sequence[RoleHandle], main: str, *, watchdog: Watchdog,
                 progress: Progress | None = None, stop: threading.Event | None = None,
                 recovery: Recovery | None = None) -> None:
        self.run_dir, self.main = Path(run_dir), main
        self.handles = {h.spec.name: h for h in handles}
        if main not in self.handles:
            raise KitError(f"the main role {main!r} is not among the roles {list(self.handles)}")
        self.watchdog, self.progress = watchdog, progress
        self.recovery = recovery  # faults to inject and roles to restart; None: every death ends the run
        self.stop = stop or threading.Event()
        self.started_at = time.monotonic()
        # The wall-clock start, so that timings can be set against the logs' timestamps.
        self.timings: dict[str, float] = {"epoch_started": round(time.time(), 3)}
        self.cpu: dict[str, float] = {}
        self.threads = ThreadSampler()
        self.started: list[RoleHandle] = []
        self.left: list[str] = []  # what the release of an earlier incarnation could not remove
        self.follower = LogFollower(log_path(self.run_dir, main))

    def mark(self, name: str) -> None:
        self.timings[name] = round(time.monotonic() - self.started_at, 3)

    def run(self) -> Outcome:
        ok, message, left = False, "", []
        died: _Died | None = None
        try:
            self._start_all()
            code = self._watch()
            while code != 0:  # None: another role ended, and the cluster is restarted as a whole
                if code is not None:
                    refusal = self.recovery.on_main_exit(self.main, code) if self.recovery is not None else None
                    if refusal is None or refusal:
                        raise _Died(self.main, f"and was not restarted: {refusal}" if refusal else "")
                self._restart_all()
                code = self._watch()
            if self.recovery is not None:
                self.recovery.on_main_finished()
            ok = True
        except _Died as exc:
            died = exc
        except KitError as exc:
            message = str(exc)
        finally:
            left = self.left + self._teardown()
        self._progress()  # the last step lines, written while the roles stopped
        if died is not None:  # after teardown: the role's log pump has written its last lines
            message = str(self._death(died.role, died.when))
        outcome = Outcome(ok, message, {n: h.returncode() for n, h in self.handles.items() if h in self.started},
                          {h.spec.name: h.pid for h in self.started if h.pid is not None}, self.timings, self.cpu)
        if self.recovery is not None:
            outcome.recovery = self.recovery.summary(log_path(self.run_dir, self.main))
        outcome.threads = self.threads.result()
        outcome.add_leftovers(left)
        return outcome

    # -- the stages -------------------------------------------------------------------------

    def _interrupted(self) -> None:
        if self.stop.is_set():
            raise ClusterError("interrupted: every role was stopped")

    def _start_all(self) -> None:
        """Servers first, all at once (each spends seconds importing TensorFlow), each probed until
        it answers; then the rest."""
        servers = [h for h in self.handles.values() if h.spec.is_server]
        for handle in servers:
            self._start(handle)
        for handle in servers:
            self._wait_reachable(handle)
        self.mark("servers_reachable")
        for handle in self.handles.values():
            if not handle.spec.is_server:
                self._start(handle)

    def _restart_all(self) -> None:
        """The cluster restarted as a whole (faults.py): every role stopped and released, then,
        after the backoff, each started again as its next incarnation, in the same order as at
        the start; the main role's new log is the one followed from then on."""
        assert self.recovery is not None
        self._stop(self.started)
        for step in self._progress():  # the last step lines of the incarnation that ended
            self.recovery.on_step(step)
        codes = {name: handle.returncode() for name, handle in self.handles.items()}
        self.left += [item for handle in self.started for item in handle.release()]
        self.started = []
        fresh = self.recovery.restart_all(codes)
        if self.stop.wait(self.recovery.plan.backoff_s):
            self._interrupted()
        self.handles = {handle.spec.name: handle for handle in fresh}
        self.mark("restarted")
        self._start_all()
        self.follower = LogFollower(log_path(self.run_dir, self.main, self.recovery.incarnation(self.main)))

    def _start(self, handle: RoleHandle) -> None:
        self._interrupted()
        self.started.append(handle)  # before start: a half-started role is torn down too
        handle.start()
        self.mark(f"{handle.spec.name}_started")

    def _death(self, name: str, when: str) -> ClusterError:
        handle = self.handles[name]
        path = log_path(self.run_dir, name, self.recovery.incarnation(name) if self.recovery else 1)
        return ClusterError(f"the {name} role {handle.death()} {when}".rstrip(),
                            f"see {path}; its last lines:\n{tail(path)}")

    def _wait_reachable(self, handle: RoleHandle) -> None:
        role = handle.spec
        deadline = time.monotonic() + self.watchdog.probe_s
        while True:
            self._interrupted()
            if handle.returncode() is not None:
                raise _Died(role.name, f"before {role.address} became reachable")
            self._check_pumps()
            seen = handle.unreachable()
            # A server that exits while it is probed is not serving, whatever the probe saw.
            if handle.returncode() is not None:
                raise _Died(role.name, f"before {role.address} became reachable")
            if not seen:
                self.mark(f"{role.name}_reachable")
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the {role.name} role ({role.address}) is not reachable after "
                    f"{self.watchdog.probe_s:.0f} s ({seen})",
                    f"is the {role.name} server running? see {log_path(self.run_dir, role.name)}")
            time.sleep(TICK_S)

    def _check_pumps(self) -> None:
        for name, handle in self.handles.items():
            error = handle.pump_error() if handle in self.started else ""
            if error:
                raise ClusterError(f"the log of the {name} role cannot be written: {error}",
                                   f"free space where {log_path(self.run_dir, name)} is, then run again; "
                                   "the run was stopped rather than left to block on its output")

    def _watch(self) -> int | None:
        """Wait for the main role, and return its exit code; fail as soon as another role dies
        (servers first: a dead worker makes the client fail too, and the worker is the cause) or
        the run stalls; None when another role's end restarts the cluster as a whole."""
        last_line, gaps, last_step = time.monotonic(), [], None
        last_sample = 0.0
        while True:
            self._interrupted()
            for name, handle in self.handles.items():
                code = handle.returncode()
                if name != self.main and code is not None and not (handle.spec.ends_itself and code == 0):
                    self._answer_death(name, code)
            if self.recovery is not None and self.recovery.whole_due:
                return None
            self._check_pumps()
            now = time.monotonic()
            steps = self._progress()
            for step in steps:
                if last_step is not None:
                    gaps.append(now - last_line)
                last_line, last_step = now, step
                if self.recovery is not None:
                    self.recovery.on_step(step)
            if steps:  # the thread table's window: from the first step line to the last
                self._sample_threads(steps[-1])
            if self.recovery is not None:
                for handle in self.recovery.restart_due():
                    self.handles[handle.spec.name] = handle
                    self._start(handle)
                self.recovery.check_serving()
            if now - last_sample > 1.0:
                self._sample_cpu()
                last_sample = now
            code = self.handles[self.main].returncode()
            if code is not None:
                self.mark("main_exited")
                return code
            limit = self.watchdog.limit(gaps[1:])  # the gap after step 0 is warm-up, not pace
            if now - last_line > limit:
                self.mark("stalled")
                raise self._stalled(now - last_line, last_step, gaps[1:])
            time.sleep(TICK_S)

    def _answer_death(self, name: str, code: int) -> None:
        """A role other than the main one ended: restarted by the recovery's policy, or the run ends."""
        if self.recovery is None:
            raise _Died(name, f"while the {self.main} was running")
        if self.recovery.pending(name):
            return
        refusal = self.recovery.on_death(name, code)
        if refusal:
            raise _Died(name, f"while the {self.main} was running; not restarted: {refusal}")

    def _progress(self) -> list[int]:
        """The main role's new step lines, each handed to the progress callback; their steps."""
        steps = []
        for step, rate in self.follower.steps():
            steps.append(step)
            if self.progress is not None:
                self.progress(self.main, step, rate)
        return steps

    def _stalled(self, quiet: float, last_step: int | None, gaps: list[float]) -> ClusterError:
        path = log_path(self.run_dir, self.main)
        since = "since it started" if last_step is None else f"after step {last_step}"
        cpu = ", ".join(f"{n} {s:.1f} s" for n, s in self.cpu.items()) or "n/a"
        known = self.handles[self.main].spec.stall_hint
        return ClusterError(
            f"the run stalled: the {self.main} wrote no step line for {quiet:.0f} s {since} "
            f"({self.watchdog.explain(gaps)}); CPU used so far: {cpu}" + (f". {known}" if known else ""),
            f"every role was stopped; see {path} (a dead input thread shows as a Traceback); "
            f"its last lines:\n{tail(path)}")

    def _sample_cpu(self) -> None:
        for name, handle in self.handles.items():
            if handle in self.started:
                used = handle.cpu_seconds()
                if used:  # an ended role reads as nothing: keep its last real sample
                    self.cpu[name] = round(used, 2)

    def _sample_threads(self, step: int) -> None:
        pids = {name: h.pid for name, h in self.handles.items() if h in self.started and h.pid is not None}
        self.threads.sample(pids, time.monotonic(), step)

    @staticmethod
    def _stop(handles: Sequence[RoleHandle]) -> None:
        """SIGTERM to each, the last started first; SIGKILL to each still running after the grace."""
        for handle in reversed(handles):
            handle.terminate()
        deadline = time.monotonic() + TERM_GRACE_S
        for handle in handles:
            if handle.wait(max(0.0, deadline - time.monotonic())) is None:
                handle.kill()
                handle.wait(TERM_GRACE_S)

    def _teardown(self) -> list[str]:
        self.mark("teardown_started")
        self._sample_cpu()  # before the roles are stopped: an ended role has no CPU time to read
        self._stop(self.started)
        left = [item for handle in self.started for item in handle.release()]
        self.mark("teardown_done")
        return left
