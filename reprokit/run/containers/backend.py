"""The Docker backend: every role in its own container, as the article runs them.

Each run of a mode gets a user-defined bridge network of its own, on which the containers find
each other by the article's hostnames (tf_paramserver, tf_worker_1, ...: network aliases), each
server on its own port 2222. Nothing is published on this machine's interfaces. The sources,
data and run folders are mounted at the same absolute paths inside, so a role's argv reads the
same in both backends. Every container and network carries the label `reprokit.run=<run id>`
and is removed at the end, whatever happened (docker_supervisor.py does the running).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
from reprokit.errors import DockerError
from reprokit.run.cluster import Cluster
from reprokit.run.containers import image as imagelib
from reprokit.run.containers.engine import Leftover, connect, remove_leftovers
from reprokit.run.containers.specs import (
    OWNER_LABEL,
    Placement,
    docker_cluster,
    network_name,
    same_path_mounts,
)
from reprokit.run.containers.supervisor import ContainerSupervisor, Progress
from reprokit.run.roles import RoleSpec
from reprokit.run.supervisor import Outcome

IMAGE_ENV = "REPROKIT_IMAGE"
EXPOSED = "nothing (no port published; the bridge network is reachable from this host only)"


def choose_base(client: docker.DockerClient | None = None) -> str:
    """The registry base if it is here; else the offline base if that is here; else the
    registry base (which `build_image` then pulls)."""
    client = client or connect()
    if imagelib.find_image(imagelib.REGISTRY_BASE, client) is None and \
            imagelib.find_image(imagelib.OFFLINE_BASE, client) is not None:
        return imagelib.OFFLINE_BASE
    return imagelib.REGISTRY_BASE


def default_image(client: docker.DockerClient, root: Path = imagelib.ROOT) -> str:
    """The tag `invoke build-image` makes here, on `choose_base`'s base; a DockerError saying
    how to get a base when none is here. Nothing is pulled: picking an image must not
    download 2 GB behind a person's back."""
    base = choose_base(client)
    if imagelib.find_image(base, client) is None:
        raise DockerError(
            f"no base for the kit's image here: neither {imagelib.REGISTRY_BASE} nor {imagelib.OFFLINE_BASE}",
            "run `invoke build-image` (pulls the registry base); with no registry: `invoke build-base-image`, "
            "`invoke download-wheels`, then `invoke build-image`",
        )
    return imagelib.expected_tag(base, client, root)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive
    return True


def _owned(client: docker.DockerClient, owner: str | None = None) -> list[tuple[Leftover, str]]:
    """Every container and network with the owner label (`=owner` if given), with its owner."""
    label = OWNER_LABEL if owner is None else f"{OWNER_LABEL}={owner}"
    found = []
    for container in client.containers.list(all=True, filters={"label": label}):
        who = container.labels.get(OWNER_LABEL, "")
        found.append((Leftover("container", container.name or "", container.id or "", who), who))
    for network in client.networks.list(filters={"label": label}):
        who = (network.attrs.get("Labels") or {}).get(OWNER_LABEL, "")
        found.append((Leftover("network", network.name or "", network.id or "", who), who))
    return found


def orphans(client: docker.DockerClient, host: str) -> list[Leftover]:
    """What a kit process on this host started and did not live to remove (killed with -9)."""
    found = []
    for item, owner in _owned(client):
        owner_host, _, pid = owner.rpartition(":")
        if owner_host == host and pid.isdigit() and not _alive(int(pid)):
            found.append(item)
    return found


def _interrupt_once() -> Callable[..., None]:
    """A SIGTERM handler that raises KeyboardInterrupt once; a second SIGTERM must not cut the
    teardown that the first one started."""
    raised: list[bool] = []

    def handler(*_: object) -> None:
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt
    return handler


class DockerBackend:
    """Roles as containers of the kit's image, on a bridge network of their own per run."""

    name = "docker"
    python = "python3"
    role_server = "/opt/reprokit/role_server.py"

    def __init__(self, settings: Any, image: str | None = None, *, client: docker.DockerClient | None = None,
                 probe_timeout_s: float | None = None) -> None:
        self.settings = settings
        self.client = client or connect()
        self.probe_timeout_s: float = probe_timeout_s or float(getattr(settings, "probe_timeout_s", 60.0))
        tag = image or os.environ.get(IMAGE_ENV) or getattr(settings, "image", "") or default_image(self.client)
        self.image = imagelib.require_image(tag, self.client)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.networks: list[str] = []
        # A run killed with SIGKILL could not clean up; its owner is gone, so nobody else will.
        self.swept = remove_leftovers(self.client, orphans(self.client, socket.gethostname())).removed

    def cluster(self, workers: int) -> Cluster:
        return docker_cluster(workers)

    def placement(self, run_dir: Path) -> Placement:
        """Where this run's containers go; the sources and data are inputs, mounted read-only."""
        token = secrets.token_hex(3)
        inputs = [Path(self.settings.sources_dir).resolve(), Path(self.settings.data_dir).absolute()]
        return Placement(self.image.tag, network_name(run_dir.name, token), token, run_dir.name, self.owner,
                         same_path_mounts(inputs, [run_dir]), f"{os.getuid()}:{os.getgid()}")

    def facts(self) -> dict:
        return {
            "backend": self.name,
            "image": self.image.tag,
            "image_id": self.image.id,
            "image_base": self.image.base,
            "network": ", ".join(self.networks) + " (user-defined bridge, one per mode)" if self.networks else "",
            "exposed": EXPOSED,
            "leftovers_removed": ", ".join(f"{o.kind} {o.name}" for o in self.swept),
        }

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        """Servers first, each probed until reachable, then the main role; always torn down.
        SIGTERM is turned into KeyboardInterrupt meanwhile, so that a `kill` cleans up too."""
        place = self.placement(Path(run_dir))
        self.networks.append(place.network)
        supervisor = ContainerSupervisor(self.client, place, Path(run_dir), roles, main, progress,
                                         python=self.python, probe_timeout_s=self.probe_timeout_s)
        in_main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _interrupt_once()) if in_main_thread else None
        try:
            return supervisor.run()
        finally:
            if in_main_thread:
                signal.signal(signal.SIGTERM, previous)

    def teardown(self) -> list[str]:
        """What this process started and could not remove even now (should be nothing)."""
        sweep = remove_leftovers(self.client, [item for item, _ in _owned(self.client, self.owner)])
        return [f"{item.kind} {item.name}: {why}" for item, why in sweep.failed]
