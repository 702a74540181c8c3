"""What a backend is: the protocol the experiment, the benchmark and `invoke client` see.

A backend turns roles into running things (processes, containers, processes in host namespaces)
and hands them to the runner. Every backend imports this module and nothing imports a backend
from here: registry.py builds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reprokit.run.cluster import Cluster
from reprokit.run.process_handle import still_running
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress

BACKENDS = ("local", "docker", "hosts", "swarm")


@dataclass(frozen=True)
class Exposure:
    """Where a backend's servers listen, said before they start; `beyond_run` when anything
    outside the run itself can reach them (the verdict line then repeats it)."""

    where: str
    beyond_run: bool


class Backend(Protocol):
    name: str
    python: str  # the interpreter that runs a role, as the role sees it
    role_server: str  # role_server.py, as the role sees it
    client_waits: bool  # the client itself waits for every server (when the backend cannot start it later)

    def cluster(self, workers: int) -> Cluster: ...
    def exposure(self, cluster: Cluster) -> Exposure: ...
    def facts(self) -> dict[str, str]: ...
    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome: ...
    def teardown(self) -> list[str]: ...


def left_running(backend: Backend, outcomes: dict[str, Outcome]) -> list[str]:
    """What a reproduction leaves behind at its end (should be nothing): what the backend's
    teardown could not remove, then the PIDs of any role of its runs still alive."""
    return backend.teardown() + [str(pid) for pid in still_running(outcomes)]
