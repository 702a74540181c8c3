"""Who takes a role's CPU: each of its threads' CPU time, from /proc, grouped by what its name says.

A role pinned to one CPU shares it with every thread of its process, and the trace shows the ops,
not who else ran. Linux keeps each thread's CPU time and name (`/proc/<pid>/task/<tid>/stat`);
TensorFlow names the threads of its pools and gRPC names its own, while a thread that nobody
names keeps the name of the process it was started in (Python's threads among them: Python does
not name its threads for the kernel). Measured on 2026-12-06, a tf2-mirrored worker ran its ops on
ten `tf_Compute` threads, its all-reduce on `collective_ops`, gRPC on `event_engine`, and kept about
ninety unnamed threads that used little.

The runner samples every role whenever its main role writes step lines; the table is the
difference between the first sample and the last: what each role's threads used while the main
role logged steps (not while it imported TensorFlow, built its graph, or saved and ended).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

# A thread's group by the start of its name (the kernel keeps 15 characters of it).
NAMED_GROUPS = (
    ("model ops", ("tf_Compute",)),  # TensorFlow's inter-op pool: where the graph's kernels run
    ("collectives", ("collective_ops",)),  # the all-reduce's executor
    ("gRPC", ("event_engine", "grpc", "lifeguard")),  # gRPC's pollers, timers and server
)
MAIN_THREAD = "main thread"  # the Python interpreter's: it drives the session or the tf.function
UNNAMED = "unnamed"  # threads nobody named: Python's (queue runners), and TensorFlow's own
OTHER = "other named"
ENDED = "ended threads"  # threads gone by the last sample: the process keeps their time, not their names
GROUPS = (*(name for name, _ in NAMED_GROUPS), MAIN_THREAD, UNNAMED, OTHER, ENDED)


class ThreadTimes(NamedTuple):
    total: float  # the process's CPU seconds so far, its ended threads' included
    threads: dict[int, tuple[str, float]]  # each live thread's id -> (its name, its CPU seconds so far)


def _stat(path: str) -> tuple[str, float]:
    """The name and CPU seconds (user + system) in a /proc stat file."""
    text = Path(path).read_text()
    # "<id> (<name>) <state> ...": the name may hold spaces and parentheses, the fields do not.
    fields = text[text.rindex(")") + 2:].split()
    return text[text.index("(") + 1:text.rindex(")")], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_threads(pid: int) -> ThreadTimes | None:
    """Process ``pid``'s CPU time and each of its threads' with its name; None once the process
    is gone. A thread that ends while it is read is left out (its time stays in the total)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        total = _stat(f"/proc/{pid}/stat")[1]
    except OSError:
        return None
    threads = {}
    for tid in tids:
        try:
            threads[int(tid)] = _stat(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue
    return ThreadTimes(total, threads)


def group_of(tid: int, name: str, pid: int, process_name: str) -> str:
    """The group of a thread named ``name`` in a process whose main thread is named ``process_name``."""
    if tid == pid:
        return MAIN_THREAD
    for group, prefixes in NAMED_GROUPS:
        if name.startswith(prefixes):
            return group
    return UNNAMED if name == process_name else OTHER


@dataclass
class ThreadGroup:
    cpu_s: float  # CPU seconds its threads used between the two samples
    threads: int  # how many threads of the group ran at the second sample


def grouped(pid: int, first: ThreadTimes, last: ThreadTimes) -> dict[str, ThreadGroup]:
    """What each group used from ``first`` to ``last``: a thread born in between counts whole,
    and what the process used beyond its live threads went to threads that ended in between.
    Groups in GROUPS' order, the empty ones left out."""
    process_name = last.threads.get(pid, first.threads.get(pid, ("", 0.0)))[0]
    groups = {name: ThreadGroup(0.0, 0) for name in GROUPS}
    for tid, (name, cpu) in last.threads.items():
        group = groups[group_of(tid, name, pid, process_name)]
        group.cpu_s += cpu - first.threads.get(tid, (name, 0.0))[1]
        group.threads += 1
    ended = (last.total - first.total) - sum(g.cpu_s for g in groups.values())
    # Clock ticks are read file by file: below two ticks' worth is the reading's own rounding.
    if ended > 2 / os.sysconf("SC_CLK_TCK"):
        groups[ENDED] = ThreadGroup(ended, len(set(first.threads) - set(last.threads)))
    return {name: ThreadGroup(round(g.cpu_s, 2), g.threads) for name, g in groups.items() if g.cpu_s or g.threads}


@dataclass
class ThreadCpu:
    """Each role's CPU by thread group while the main role logged steps: from its first step line
    (``first_step``) to its last (``last_step``), ``wall_s`` apart."""

    wall_s: float
    first_step: int
    last_step: int
    roles: dict[str, dict[str, ThreadGroup]] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return self.last_step - self.first_step

    def cpu_s(self, role: str, groups: Iterable[str]) -> float:
        """The CPU seconds these groups of the role used (0 for a group that did not run)."""
        found = self.roles.get(role, {})
        return sum(found[g].cpu_s for g in groups if g in found)

    def cores(self, role: str, groups: Iterable[str]) -> float:
        """The cores the groups kept busy on average."""
        return self.cpu_s(role, groups) / self.wall_s if self.wall_s > 0 else 0.0

    def ms_per_step(self, role: str, groups: Iterable[str]) -> float | None:
        """The groups' CPU milliseconds per step of the main role; None without a step between."""
        return self.cpu_s(role, groups) * 1000 / self.steps if self.steps > 0 else None

    def wall_ms_per_step(self) -> float | None:
        """The window's wall time per step of the main role; None without a step between."""
        return self.wall_s * 1000 / self.steps if self.steps > 0 else None


class ThreadSampler:
    """The runner's samples of its roles' threads: the first at the main role's first step line,
    the last at its last one."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[int, ThreadTimes]] = {}  # role -> (its pid, its threads)
        self.last: dict[str, tuple[int, ThreadTimes]] = {}
        self.first_at = self.last_at = 0.0
        self.first_step = self.last_step = 0

    def sample(self, pids: Mapping[str, int], now: float, step: int) -> None:
        """Read the threads of each role's process (``pids``: role -> pid of this machine)."""
        taken = {role: (pid, times) for role, pid in pids.items() if (times := read_threads(pid)) is not None}
        if not taken:
            return
        if not self.first:
            self.first, self.first_at, self.first_step = taken, now, step
        # A role that has ended keeps its last sample; one restarted since the first is left out.
        self.last = {**self.last, **taken}
        self.last_at, self.last_step = now, step

    def result(self) -> ThreadCpu | None:
        if not self.first or self.last_at <= self.first_at:
            return None
        roles = {role: grouped(pid, self.first[role][1], times) for role, (pid, times) in self.last.items()
                 if role in self.first and self.first[role][0] == pid}
        return ThreadCpu(round(self.last_at - self.first_at, 2), self.first_step, self.last_step, roles)
