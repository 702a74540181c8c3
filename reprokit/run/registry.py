"""The one place that builds a backend by its name, from one typed config.

Each backend takes its own part of `BackendConfig` as typed arguments; `make_backend` fills
the config from the kit's settings. The Docker and Swarm backends are imported only when one
is built: a local run never loads the Docker SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reprokit.commands import Echo, silent
from reprokit.errors import KitError
from reprokit.run import request_ids
from reprokit.run.backends import BACKENDS, Backend
from reprokit.run.containers.mounts import RunInputs
from reprokit.run.hosts import HostsBackend
from reprokit.run.local import LocalBackend
from reprokit.run.runner import Watchdog
from reprokit.settings import Settings

if TYPE_CHECKING:  # the Docker SDK is loaded only when a container backend is built
    from reprokit.run.swarm.backend import SwarmBackend


@dataclass(frozen=True)
class BackendConfig:
    """Everything any backend is built from; each reads its own part."""

    name: str  # one of BACKENDS
    inputs: RunInputs  # docker, swarm: the folders the containers mount
    watchdog: Watchdog  # every backend: invoke.yaml's probe timeout and stall limits
    isolation: str  # local: see local.ISOLATION_MODES
    link: str = "none"  # hosts: each role's link bandwidth
    placement: dict[str, str] = field(default_factory=dict)  # swarm: role -> node name or constraint
    image: str | None = None  # docker, swarm: a tag; None picks one (containers.image.choose_image)
    deploys: bool = True  # swarm: False only writes stack files (`invoke stack-file`), no swarm needed
    echo: Echo = silent  # swarm: the docker commands it runs


def build_backend(config: BackendConfig) -> Backend:
    """The backend called ``config.name``; a KitError naming the backends when there is none."""
    if config.name == "local":
        return LocalBackend(config.isolation, watchdog=config.watchdog)
    if config.name == "hosts":
        return HostsBackend(config.link, watchdog=config.watchdog)
    if config.name == "docker":
        from reprokit.run.containers.backend import DockerBackend

        return DockerBackend(config.inputs, config.image, watchdog=config.watchdog)
    if config.name == "swarm":
        return build_swarm(config)
    raise KitError(f"unknown backend {config.name!r}", f"choose one of {', '.join(BACKENDS)}")


def build_swarm(config: BackendConfig) -> SwarmBackend:
    """The Swarm backend itself (it writes stack files, which the protocol does not say)."""
    from reprokit.run.swarm.backend import SwarmBackend

    return SwarmBackend(config.inputs, config.image, placement=config.placement,
                        watchdog=config.watchdog, echo=config.echo,
                        deploys=config.deploys)


def run_inputs(settings: Settings) -> RunInputs:
    """The folders every run reads, as the settings place them."""
    return RunInputs(settings.sources_dir, settings.data_dir, request_ids.native_dir(settings.build_dir))


def backend_config(settings: Settings, name: str, isolation: str, link: str = "none",
                   placement: dict[str, str] | None = None, echo: Echo | None = None, image: str | None = None,
                   deploys: bool = True) -> BackendConfig:
    """The config of backend ``name`` with the settings' folders, probe timeout and watchdog."""
    return BackendConfig(name, run_inputs(settings), settings.watchdog, isolation, link, dict(placement or {}),
                         image, deploys, echo or silent)


def make_backend(settings: Settings, name: str, isolation: str, link: str = "none",
                 placement: dict[str, str] | None = None, echo: Echo | None = None,
                 image: str | None = None) -> Backend:
    """The backend called ``name``, with the settings' folders, probe timeout and watchdog;
    `isolation` is the local backend's, `link` the hosts backend's, `placement` the swarm
    backend's, `image` the container backends'."""
    return build_backend(backend_config(settings, name, isolation, link, placement, echo, image))


def stack_writer(settings: Settings, placement: dict[str, str] | None = None,
                 image: str | None = None) -> SwarmBackend:
    """A Swarm backend that only writes stack files (`invoke stack-file`): no swarm needed."""
    return build_swarm(backend_config(settings, "swarm", settings.isolation, placement=placement, image=image,
                                      deploys=False))
