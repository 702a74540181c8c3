"""The one place that builds a backend by its name, from one typed config.

Each backend takes its own part of `BackendConfig`; the config is filled, and every option of it
checked, once, where a request becomes a plan (reprokit.options). The Docker and Swarm backends
are imported only when one is built: a local run never loads the Docker SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reprokit.commands import Echo, silent
from reprokit.run import request_ids
from reprokit.run.backends import Backend
from reprokit.run.cluster import Cluster
from reprokit.run.containers.mounts import RunInputs
from reprokit.run.faults import NO_FAULTS, FaultPlan
from reprokit.run.process_backend import (
    ExternalServers,
    Loopback,
    ProcessBackend,
    SimulatedHosts,
)
from reprokit.run.runner import Watchdog
from reprokit.settings import Settings

if TYPE_CHECKING:  # the Docker SDK is loaded only when a container backend is built
    from reprokit.run.swarm.backend import SwarmBackend

EXTERNAL = "external"  # `invoke client`: the servers run elsewhere; not a backend a person names


@dataclass(frozen=True)
class BackendConfig:
    """Everything any backend is built from; each reads its own part."""

    name: str  # one of backends.BACKENDS, or EXTERNAL
    inputs: RunInputs  # docker, swarm: the folders the containers mount
    watchdog: Watchdog  # every backend: invoke.yaml's probe timeout and stall limits
    isolation: str  # local: one of processes.ISOLATION_MODES
    link: str = "none"  # hosts: each role's link bandwidth
    placement: dict[str, str] = field(default_factory=dict)  # swarm: role -> node name or constraint
    image: str | None = None  # docker, swarm: a tag; None picks one (containers.image.choose_image)
    deploys: bool = True  # swarm: False only writes stack files (`invoke stack-file`), no swarm needed
    echo: Echo = silent  # swarm: the docker commands it runs
    cluster: Cluster | None = None  # external: the servers started elsewhere
    faults: FaultPlan = NO_FAULTS  # every backend but external: faults to inject and the restart policy (faults.py)


def build_backend(config: BackendConfig) -> Backend:
    """The backend called ``config.name``, whose options were checked with the request."""
    if config.name == "local":
        return ProcessBackend(Loopback.choose(config.isolation), config.watchdog, config.faults)
    if config.name == "hosts":
        return ProcessBackend(SimulatedHosts.shaped(config.link), config.watchdog, config.faults)
    if config.name == EXTERNAL:
        assert config.cluster is not None, "an external cluster is built with its servers' addresses"
        return ProcessBackend(ExternalServers(config.cluster), config.watchdog)
    if config.name == "docker":
        from reprokit.run.containers.backend import DockerBackend

        return DockerBackend(config.inputs, config.image, watchdog=config.watchdog, faults=config.faults)
    assert config.name == "swarm", f"the request's check lets no backend {config.name!r} through"
    return build_swarm(config)


def build_swarm(config: BackendConfig) -> SwarmBackend:
    """The Swarm backend itself (it writes stack files, which the protocol does not say)."""
    from reprokit.run.swarm.backend import SwarmBackend

    return SwarmBackend(config.inputs, config.image, placement=config.placement,
                        watchdog=config.watchdog, echo=config.echo,
                        deploys=config.deploys, faults=config.faults)


def run_inputs(settings: Settings) -> RunInputs:
    """The folders every run reads, as the settings place them."""
    return RunInputs(settings.sources_dir, settings.data_dir, request_ids.native_dir(settings.build_dir))
