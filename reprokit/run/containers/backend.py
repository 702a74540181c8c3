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

from docker.models.networks import Network

import docker
from reprokit.errors import DockerError
from reprokit.names import IMAGE_ROLE_SERVER
from reprokit.run.backends import Exposure
from reprokit.run.cluster import Cluster
from reprokit.run.containers.engine import (
    OWNER_LABEL,
    Leftover,
    connect,
    find_leftovers,
    remove_leftovers,
)
from reprokit.run.containers.handle import SDK_ERRORS, ContainerHandle
from reprokit.run.containers.image import choose_image
from reprokit.run.containers.mounts import RunInputs, run_mounts
from reprokit.run.containers.owners import judge_owner, owner_token
from reprokit.run.containers.specs import (
    Placement,
    docker_cluster,
    labels,
    network_name,
)
from reprokit.run.faults import NO_FAULTS, FaultPlan
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Runner, Watchdog
from reprokit.run.signals import sigterm_interrupts


def orphans(client: docker.DockerClient) -> tuple[list[Leftover], list[tuple[Leftover, str]]]:
    """What kit processes that are gone left behind (killed with -9), and what is left alone."""
    gone, kept = [], []
    for item in find_leftovers(client, OWNER_LABEL):
        ownership = judge_owner(item.owner)
        (gone.append(item) if ownership.orphan else kept.append((item, ownership.why)))
    return gone, kept


class DockerBackend:
    """Roles as containers of the kit's image, on a bridge network of their own per run."""

    name = "docker"
    python = "python3"
    role_server = IMAGE_ROLE_SERVER
    client_waits = False

    def __init__(self, inputs: RunInputs, image: str | None = None, *, client: docker.DockerClient | None = None,
                 watchdog: Watchdog, faults: FaultPlan = NO_FAULTS) -> None:
        """``image``: a tag; None picks one (`choose_image`). ``faults``: injected and answered by
        the kit's runner, as on the process backend (docs/faults.md says why not Docker's policy)."""
        self.inputs = inputs
        self.client = client or connect()
        self.watchdog, self.faults = watchdog, faults
        self.image = choose_image(image, self.client)
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
                         run_mounts(self.inputs, run_dir), f"{os.getuid()}:{os.getgid()}")

    def facts(self) -> dict[str, str]:
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

    def _create_network(self, place: Placement) -> Network:
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
                outcome = Runner(Path(run_dir), handles, main, watchdog=self.watchdog, progress=progress,
                                 recovery=self.faults.recovery(handles)).run()
            finally:
                left = self._remove_network(network, place)
        outcome.add_leftovers(left)
        return outcome

    def _remove_network(self, network: Network, place: Placement) -> list[str]:
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
