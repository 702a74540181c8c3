"""What a backend is, and the one place that builds one from its name.

A backend turns roles into running things (processes, containers, processes in host namespaces)
and hands them to the runner. The experiment, the benchmark and `invoke client` see only this
protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from reprokit import commands
from reprokit.errors import KitError
from reprokit.run.cluster import Cluster
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
    def facts(self) -> dict: ...
    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome: ...
    def teardown(self) -> list[str]: ...


def make_backend(settings: Any, name: str, isolation: str = "auto", link: str = "none",
                 placement: dict[str, str] | None = None, echo: commands.Echo | None = None) -> Backend:
    """The backend called ``name``, with the settings' probe timeout and watchdog; `isolation`
    is the local backend's, `link` the hosts backend's, `placement` the swarm backend's."""
    watchdog = settings.watchdog
    if name == "local":
        from reprokit.run.local import LocalBackend

        return LocalBackend(isolation, probe_timeout_s=settings.probe_timeout_s, watchdog=watchdog)
    if name == "docker":
        from reprokit.run.containers.backend import DockerBackend

        return DockerBackend(settings, watchdog=watchdog)
    if name == "hosts":
        from reprokit.run.hosts import HostsBackend

        return HostsBackend(link, probe_timeout_s=settings.probe_timeout_s, watchdog=watchdog)
    if name == "swarm":
        from reprokit.run.swarm.backend import SwarmBackend

        return SwarmBackend(settings, placement=placement, watchdog=watchdog, echo=echo or commands.silent)
    raise KitError(f"unknown backend {name!r}", f"choose one of {', '.join(BACKENDS)}")
