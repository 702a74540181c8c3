"""The Docker backend: every role in its own container, as the article runs them.

Each run of a mode gets a user-defined bridge network of its own, on which the containers find
each other by the article's hostnames (tf_paramserver, tf_worker_1, ...: network aliases), each
server on its own port 2222. Nothing is published on this machine's interfaces. The sources,
data and run folders are mounted at the same absolute paths inside, so a role's argv reads the
same in both backends. Every container and network carries the labels `reprokit.run=<run id>`
and `reprokit.owner=<kit process>`; the runner removes the containers at the end of a mode,
whatever happened, and this backend removes the network.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import docker
from reprokit.errors import DockerError
from reprokit.names import IMAGE_ROLE_SERVER
from reprokit.run.backends import Exposure
from reprokit.run.cluster import Cluster
from reprokit.run.containers import image as imagelib
from reprokit.run.containers.engine import (
    OWNER_LABEL,
    Leftover,
    connect,
    find_leftovers,
    remove_leftovers,
)
from reprokit.run.containers.handle import SDK_ERRORS, ContainerHandle
from reprokit.run.containers.owners import judge_owner, owner_token
from reprokit.run.containers.specs import (
    Placement,
    docker_cluster,
    labels,
    network_name,
    run_mounts,
)
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Runner, Watchdog
from reprokit.run.signals import sigterm_interrupts

IMAGE_ENV = "REPROKIT_IMAGE"


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


def orphans(client: docker.DockerClient) -> tuple[list[Leftover], list[tuple[Leftover, str]]]:
    """What kit processes that are gone left behind (killed with -9), and what is left alone."""
    gone, kept = [], []
    for item in find_leftovers(client, OWNER_LABEL):
        verdict = judge_owner(item.owner)
        (gone.append(item) if verdict.orphan else kept.append((item, verdict.why)))
    return gone, kept


class DockerBackend:
    """Roles as containers of the kit's image, on a bridge network of their own per run."""

    name = "docker"
    python = "python3"
    role_server = IMAGE_ROLE_SERVER
    client_waits = False

    def __init__(self, settings: Any, image: str | None = None, *, client: docker.DockerClient | None = None,
                 probe_timeout_s: float | None = None, watchdog: Watchdog = Watchdog()) -> None:
        self.settings = settings
        self.client = client or connect()
        self.probe_timeout_s: float = probe_timeout_s or float(getattr(settings, "probe_timeout_s", 60.0))
        self.watchdog = watchdog
        tag = image or os.environ.get(IMAGE_ENV) or getattr(settings, "image", "") or default_image(self.client)
        self.image = imagelib.require_image(tag, self.client)
        self.owner = owner_token()
        self.networks: list[str] = []
        # A run killed with SIGKILL could not clean up; its owner is gone, so nobody else will.
        gone, self.kept = orphans(self.client)
        self.swept = remove_leftovers(self.client, gone).removed

    def cluster(self, workers: int) -> Cluster:
        return docker_cluster(workers)

    def exposure(self, cluster: Cluster) -> Exposure:
        return Exposure("the run's own internal bridge network only (no port published, no route out): "
                        "its containers, and this host's root and docker group", beyond_run=False)

    def placement(self, run_dir: Path) -> Placement:
        """Where this run's containers go, with the run's folders at the same paths as here."""
        token = secrets.token_hex(3)
        return Placement(self.image.tag, network_name(run_dir.name, token), token, run_dir.name, self.owner,
                         run_mounts(self.settings, run_dir), f"{os.getuid()}:{os.getgid()}")

    def facts(self) -> dict:
        return {
            "backend": self.name,
            "image": self.image.tag,
            "image_id": self.image.id,
            "image_base": self.image.base,
            "network": ", ".join(self.networks) + " (user-defined bridge, one per mode)" if self.networks else "",
            "exposed": self.exposure(self.cluster(1)).where,
            "leftovers_removed": ", ".join(f"{o.kind} {o.name}" for o in self.swept),
            "leftovers_kept": "; ".join(f"{o.kind} {o.name}: {why}" for o, why in self.kept),
        }

    def _create_network(self, place: Placement) -> Any:
        try:
            # internal: no route out of it; the roles need none, and nothing they run reaches out.
            return self.client.networks.create(place.network, driver="bridge", internal=True,
                                               labels=labels(place.run_id, place.owner))
        except SDK_ERRORS as error:
            raise DockerError(f"could not create the bridge network {place.network}: {error}",
                              "too many networks left by killed runs? see `docker network ls --filter "
                              "label=reprokit.run`; `docker network prune` removes unused ones") from error

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        """The runner over one container per role, on a network made for this run and removed
        after it. SIGTERM is turned into KeyboardInterrupt meanwhile, so that a `kill` cleans up too."""
        place = self.placement(Path(run_dir))
        with sigterm_interrupts():
            network = self._create_network(place)
            self.networks.append(place.network)
            try:
                handles = [ContainerHandle(self.client, role, place, run_dir, self.python) for role in roles]
                outcome = Runner(Path(run_dir), handles, main, probe_timeout_s=self.probe_timeout_s,
                                 watchdog=self.watchdog, progress=progress).run()
            finally:
                left = self._remove_network(network, place)
        if left:
            outcome.left += left
            outcome.ok = False
            outcome.message = (outcome.message + "\n" if outcome.message else "") + "could not remove: " + \
                ", ".join(left)
        return outcome

    def _remove_network(self, network: Any, place: Placement) -> list[str]:
        try:
            network.remove()
        except docker.errors.NotFound:
            pass
        except SDK_ERRORS as error:
            return [f"network {place.network} ({error})"]
        return []

    def teardown(self) -> list[str]:
        """What this process started and could not remove even now (should be nothing)."""
        sweep = remove_leftovers(self.client, find_leftovers(self.client, OWNER_LABEL, self.owner))
        return [f"{item.kind} {item.name}: {why}" for item, why in sweep.failed]
