"""Faults injected into a run, the restart policy that answers them, and the timeline of both.

A fault is `SIGNAL:ROLE@STEP` (`kill:worker1@20`): once the main role has logged step STEP or a
later one, ROLE is sent SIGKILL, SIGTERM or SIGINT. A role that then ends is judged by its exit
code as Kubeflow's TFJob judges a replica under its `ExitCode` policy: a code in
`retryable_exit_codes` (130, 137, 143: ended by SIGINT, SIGKILL, SIGTERM) is restarted after
`restart_backoff_s`, at most `backoff_limit` times per role; any other code is permanent, and the
run fails as before. Only the roles the program can take back are restarted (`Program.why_not_restarted`):
a TF1 session or an all-reduce ring cannot take a restarted worker into its running step, and a
restart there would only turn a clear failure into a hang.

A cluster that resumes only as a whole (`Program.resumes_whole`: tf2-mirrored's all-reduce, the
resumable lesson) is restarted as a whole instead: once any of its roles has ended with a retryable
code, every role is stopped and, after the backoff, started again as its next incarnation, which
resumes from the cluster's last checkpoint. A preemption notice (SIGTERM) to a tf2-mirrored worker
makes every worker save one after the same step and exit with 143, so that nothing is redone; a
role lost without a notice leaves the last checkpoint the program saved before, or none, and the
steps since run again (`steps_redone` in the summary).

Each incarnation of a role writes a log of its own (worker1.log, then worker1.2.log, ...), so
nothing is overwritten. `Recovery` is what the runner consults while it watches the run; its
timeline and summary go into the run's outcome, and from there into results.json and the report.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from signal import SIGINT, SIGKILL, SIGTERM, Signals
from typing import Any, Protocol

from reprokit.errors import KitError
from reprokit.run.roles import RoleHandle

SIGNALS = {"kill": SIGKILL, "term": SIGTERM, "int": SIGINT}
_FAULT = re.compile(r"^(?P<signal>[a-z]+):(?P<role>[a-z0-9]+)@(?P<step>\d+)$")


@dataclass(frozen=True)
class Fault:
    """Send `signal` (a key of SIGNALS) to `role` once the main role has logged `step`."""

    signal: str
    role: str
    step: int

    def __str__(self) -> str:
        return f"{self.signal}:{self.role}@{self.step}"

    @property
    def signum(self) -> Signals:
        return SIGNALS[self.signal]


def parse_fault(text: str, roles: Sequence[str], steps: int) -> Fault:
    """`kill:worker1@20` as a Fault, its role one of ``roles`` and its step one the run logs."""
    match = _FAULT.match(text.strip())
    example = f"e.g. --fault kill:{roles[1] if len(roles) > 1 else roles[0]}@20"
    if match is None:
        raise KitError(f"--fault {text!r} is not SIGNAL:ROLE@STEP", example)
    fault = Fault(match["signal"], match["role"], int(match["step"]))
    if fault.signal not in SIGNALS:
        raise KitError(f"--fault {text!r}: unknown signal {fault.signal!r}", f"use one of {', '.join(SIGNALS)}")
    if fault.role not in roles:
        raise KitError(f"--fault {text!r}: this run has no role {fault.role!r}", f"its roles are {', '.join(roles)}")
    # Step lines come every 10 steps, and the last step is steps - 1.
    if fault.step > steps - 1:
        raise KitError(f"--fault {text!r}: the run logs steps 0 to {steps - 1}",
                       f"give a step below {steps}, or more --steps")
    return fault


def retryable_codes(text: str) -> tuple[int, ...]:
    """'130,137,143' -> (130, 137, 143): invoke.yaml's retryable_exit_codes, checked."""
    try:
        codes = tuple(int(item) for item in str(text).split(",") if item.strip())
    except ValueError:
        raise KitError(f"invoke.yaml: retryable_exit_codes {text!r} is not a list of exit codes",
                       "give codes like 130,137,143") from None
    if not codes or any(not 0 < code < 256 for code in codes):
        raise KitError(f"invoke.yaml: retryable_exit_codes {text!r} must name codes from 1 to 255",
                       "give codes like 130,137,143")
    return codes


def exit_status(code: int) -> int:
    """A process's exit code as a shell and Kubernetes report it: killed by signal N is 128 + N."""
    return 128 - code if code < 0 else code


@dataclass(frozen=True)
class FaultPlan:
    """What a run injects and how it answers: checked with the request, carried in the supervisor's plan."""

    faults: tuple[Fault, ...]
    restartable: tuple[str, ...]  # the roles this program takes back after a restart
    why_not: dict[str, str]  # the other roles: why not (Program.why_not_restarted)
    retryable: tuple[int, ...]  # exit codes worth a restart; the rest are permanent (invoke.yaml)
    backoff_limit: int  # restarts per role (invoke.yaml)
    backoff_s: float  # seconds from a death to its restart (invoke.yaml)
    rerun_marker: str  # the main role's log line for a function run again (Program.rerun_marker), or ''
    whole: bool  # the cluster is restarted as a whole, from its checkpoint (Program.resumes_whole)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaultPlan:
        """The plan as `dataclasses.asdict` wrote it into the supervisor's plan file."""
        return cls(tuple(Fault(**f) for f in data["faults"]), tuple(data["restartable"]), dict(data["why_not"]),
                   tuple(data["retryable"]), int(data["backoff_limit"]), float(data["backoff_s"]),
                   str(data["rerun_marker"]), bool(data["whole"]))

    def refusal(self, role: str, code: int, restarts: int) -> str:
        """'' when a role that ended with ``code`` after ``restarts`` restarts is restarted (alone, or
        with the whole cluster); else why not."""
        status = exit_status(code)
        if role not in self.restartable and not self.whole:
            return self.why_not.get(role) or f"the program does not take the {role} role back"
        if status not in self.retryable:
            return (f"exit code {status} is permanent (retried: {', '.join(map(str, self.retryable))}, "
                    "invoke.yaml's retryable_exit_codes)")
        if restarts >= self.backoff_limit:
            return f"it was restarted {restarts} times already (backoff_limit {self.backoff_limit}, invoke.yaml)"
        return ""

    def recovery(self, handles: Sequence[Restartable]) -> Recovery | None:
        """The runner's part of this plan over a mode's ``handles``; None when it has nothing to
        inject and nothing to take back (every death ends the run)."""
        if not (self.faults or self.restartable or self.whole):
            return None
        return Recovery(self, {handle.spec.name: handle for handle in handles})


class Restartable(RoleHandle, Protocol):
    """A role handle that can be sent any signal and started again (every backend's but the
    external cluster's): a process, a container, a swarm task."""

    def signal(self, signum: Signals) -> None:
        """Send it ``signum``, if it still runs."""

    def again(self, incarnation: int) -> Restartable:
        """A handle, not yet started, for the same role's next incarnation, with a log of its own."""


# No fault, and no role restarted: the runs of the bench, the sweep and the mutants, and every
# backend that is not told otherwise.
NO_FAULTS = FaultPlan((), (), {}, (), 0, 0.0, "", False)


@dataclass
class Event:
    t: float  # seconds since the run started
    step: int | None  # the main role's last logged step
    role: str
    what: str  # fault, exited, restarted, serving, not restarted, not serving; cluster restarted
    detail: str = ""


@dataclass
class Recovery:
    """The runner's part of a FaultPlan: it sends the faults when their step comes, decides on
    each death, starts each restart when its backoff has passed, and keeps the timeline."""

    plan: FaultPlan
    handles: dict[str, Restartable]  # each role's current incarnation
    started_at: float = field(default_factory=time.monotonic)
    events: list[Event] = field(default_factory=list)
    sent: set[Fault] = field(default_factory=set)
    restarts: dict[str, int] = field(default_factory=dict)
    due: dict[str, float] = field(default_factory=dict)  # role -> when its restart may start
    waiting: set[str] = field(default_factory=set)  # restarted servers not yet serving
    ended: dict[str, int] = field(default_factory=dict)  # whole: roles ended since the last restart, their codes
    restarted_at: list[int] = field(default_factory=list)  # whole: len(step_times) at each restart
    step_times: list[tuple[int, float]] = field(default_factory=list)

    def _note(self, role: str, what: str, detail: str = "") -> None:
        last = self.step_times[-1][0] if self.step_times else None
        self.events.append(Event(round(time.monotonic() - self.started_at, 2), last, role, what, detail))

    def on_step(self, step: int) -> None:
        """The main role logged ``step``: send every fault whose step has come."""
        self.step_times.append((step, time.monotonic() - self.started_at))
        for fault in self.plan.faults:
            if fault not in self.sent and step >= fault.step and fault.role in self.handles:
                self.sent.add(fault)
                self.handles[fault.role].signal(fault.signum)
                self._note(fault.role, "fault", f"{fault.signum.name} sent ({fault})")

    def on_death(self, role: str, code: int) -> str:
        """A role other than the main one ended with ``code``: '' if it will be restarted (alone,
        or with its whole cluster at once: `whole_due`), else why not."""
        restarts = self.restarts.get(role, 0)
        refusal = self.plan.refusal(role, code, restarts)
        self._note(role, "exited", f"exit code {exit_status(code)}")
        if refusal:
            self._note(role, "not restarted", refusal)
            return refusal
        if self.plan.whole:
            self.ended[role] = code
        else:
            self.due[role] = time.monotonic() + self.plan.backoff_s
        return ""

    def pending(self, role: str) -> bool:
        return role in self.due or role in self.ended

    @property
    def whole_due(self) -> bool:
        """whole: a role has ended with a retryable code, and the cluster is to be restarted now."""
        return bool(self.ended)

    def on_main_exit(self, role: str, code: int) -> str | None:
        """The main role ended with ``code``, not 0: None where the plan does not restart the cluster
        as a whole; '' when it does now; else why not."""
        if not self.plan.whole:
            return None
        refusal = self.plan.refusal(role, code, self.restarts.get(role, 0))
        self._note(role, "exited", f"exit code {exit_status(code)}")
        if refusal:
            self._note(role, "not restarted", refusal)
        else:
            self.ended[role] = code
        return refusal

    def restart_all(self, codes: dict[str, int | None]) -> list[Restartable]:
        """whole: every role's next incarnation, not yet started; ``codes``, how the roles that the
        runner stopped ended (a role already noted as ended is not noted again)."""
        for role, code in codes.items():
            if role not in self.ended and code is not None:
                self._note(role, "exited", f"exit code {exit_status(code)}, stopped for the restart")
        for role in self.handles:
            self.restarts[role] = self.restarts.get(role, 0) + 1
            self.handles[role] = self.handles[role].again(self.restarts[role] + 1)
        restarts = max(self.restarts.values())
        self._note("cluster", "restarted", f"every role, incarnation {restarts + 1} (restart {restarts} of at most "
                                           f"{self.plan.backoff_limit}), from the cluster's last checkpoint, if any")
        self.ended = {}
        self.restarted_at.append(len(self.step_times))
        return list(self.handles.values())

    def incarnation(self, role: str) -> int:
        return self.restarts.get(role, 0) + 1

    def restart_due(self) -> list[Restartable]:
        """The next incarnations whose backoff has passed, for the runner to start."""
        now, ready = time.monotonic(), []
        for role in [r for r, when in self.due.items() if when <= now]:
            del self.due[role]
            self.restarts[role] = self.restarts.get(role, 0) + 1
            incarnation = self.restarts[role] + 1
            self.handles[role] = self.handles[role].again(incarnation)
            ready.append(self.handles[role])
            self._note(role, "restarted", f"incarnation {incarnation} "
                                          f"(restart {self.restarts[role]} of at most {self.plan.backoff_limit})")
            if self.handles[role].spec.is_server:
                self.waiting.add(role)
        return ready

    def check_serving(self) -> None:
        """Note each restarted server once its address answers again."""
        for role in sorted(self.waiting):
            handle = self.handles[role]
            if handle.returncode() is None and not handle.unreachable():
                self.waiting.discard(role)
                self._note(role, "serving", f"{handle.spec.address} answers again")

    def on_main_finished(self) -> None:
        """The main role ended with 0: a restart still in its backoff is not started, and a
        restarted server not yet answering is not waited for; the timeline says so, so that a run
        that finished before its restart does not read as one whose restart was never due."""
        for role in sorted(self.due):
            self._note(role, "not restarted", f"the {role} role's restart was still due when the run finished")
        for role in sorted(self.waiting):
            self._note(role, "not serving", f"the {role} role's next incarnation did not answer before the run finished")
        self.due.clear()
        self.waiting.clear()

    def steps_redone(self) -> int:
        """whole: the steps run again after the restarts, at least: from the step lines (every
        10th step), those from each incarnation's first logged step up to the last one logged
        before it, which the checkpoint it resumed from did not hold."""
        redone, bounds = 0, [0, *self.restarted_at, len(self.step_times)]
        for before, at, after in zip(bounds, bounds[1:], bounds[2:]):
            if before < at < after:
                last, first = self.step_times[at - 1][0], self.step_times[at][0]
                redone += max(0, last + 1 - first)
        return redone

    def summary(self, main_log: Path) -> dict[str, Any]:
        """The timeline and what the faults cost: restarts per role, and the seconds the main role's
        steps after the first fault took beyond its pace before it (the median seconds per step
        between step lines, the first line's warm-up left out); and, for a program that says so in
        ``main_log``, the functions it ran again. Nothing for a run that none of the faults is aimed
        at and in which no role was restarted."""
        faults = [f for f in self.plan.faults if f.role in self.handles]
        if not faults and not self.events:
            return {}
        # A cluster restarted as a whole counts as one: every role's restarts are its.
        restarts = {"cluster": max(self.restarts.values())} if self.plan.whole and self.restarts else self.restarts
        result: dict[str, Any] = {"faults": [str(f) for f in faults],
                                     "events": [asdict(e) for e in self.events], "restarts": dict(restarts)}
        first = min((e.step for e in self.events if e.what == "fault" and e.step is not None), default=None)
        before = [(s, t) for s, t in self.step_times if first is None or s <= first]
        after = [(s, t) for s, t in self.step_times if first is not None and s >= first]
        paces = [(t2 - t1) / (s2 - s1) for (s1, t1), (s2, t2) in zip(before[1:], before[2:]) if s2 > s1]
        if paces and len(after) > 1:
            pace = statistics.median(paces)
            (s0, t0), (s1, t1) = after[0], after[-1]
            result["pace_s_per_step"] = round(pace, 4)
            result["seconds_lost"] = round(max(0.0, (t1 - t0) - (s1 - s0) * pace), 1)
        if self.restarted_at:
            result["steps_redone"] = self.steps_redone()
        if self.plan.rerun_marker:
            try:
                result["functions_run_again"] = main_log.read_text(errors="replace").count(self.plan.rerun_marker)
            except OSError:
                pass  # no log: nothing counted, and the report says nothing of it
        return result
