"""The Swarm backend: the article's cluster as a stack on the current swarm, one service per role.

Going from one machine to several changes the swarm (`docker swarm join`) and, if wanted, the
placement in the cluster file; nothing else. Each run of a mode deploys its own stack, written
first into the run folder (stack-<mode>.yml), and removes it at the end whatever happened; a
stack that a killed kit left is removed by the next run (its owner label says the kit is gone).
Before anything is deployed, every node that may run a role is checked for the image and the
mounted folders, so a deploy never fails halfway.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import docker
from reprokit import commands
from reprokit.errors import DockerError
from reprokit.files import write_text
from reprokit.names import IMAGE_ROLE_SERVER
from reprokit.run.backends import Exposure
from reprokit.run.cluster import Cluster
from reprokit.run.containers.engine import OWNER_LABEL, connect
from reprokit.run.containers.image import choose_image
from reprokit.run.containers.mounts import RunInputs, run_mounts
from reprokit.run.containers.owners import judge_owner, owner_token
from reprokit.run.containers.specs import docker_cluster
from reprokit.run.faults import NO_FAULTS, FaultPlan
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, Progress, Runner, Watchdog
from reprokit.run.signals import sigterm_interrupts
from reprokit.run.swarm.handle import ServiceHandle
from reprokit.run.swarm.nodes import require_image_on_nodes
from reprokit.run.swarm.stack import (
    STACK_LABEL,
    StackSpec,
    dump,
    stack_file,
    stack_name,
)

GONE_S = 60.0
USAGE = """The stack file of reprokit run {run_id} ({mode}), as the kit deployed it.
Deploy it yourself on a swarm whose nodes have the image and these paths:
  docker stack deploy --resolve-image never -c {file} {stack}
Follow it with `docker stack ps {stack}` and `docker service logs -f {stack}_tf_client`;
remove it with `docker stack rm {stack}`."""


def require_swarm(client: docker.DockerClient) -> dict[str, object]:
    """The swarm this engine is a manager of (`docker info`'s Swarm part); a DockerError saying
    how to make one otherwise."""
    info: dict[str, object] = client.info().get("Swarm") or {}
    if info.get("LocalNodeState") != "active":
        raise DockerError("this Docker engine is not part of a swarm",
                          "make one: `docker swarm init` (on one machine: `docker swarm init --advertise-addr "
                          "127.0.0.1`), or join one; see docs/backends.md#swarm-beyond-one-machine---backend-swarm")
    if not info.get("ControlAvailable"):
        raise DockerError("this Docker engine is a swarm worker, not a manager: stacks are deployed from a manager",
                          "run the kit on a manager node (`docker node ls` there lists them)")
    return info


class SwarmBackend:
    """Roles as services of a stack per run, on an overlay network of the stack's own."""

    name = "swarm"
    python = "python3"
    role_server = IMAGE_ROLE_SERVER
    client_waits = True  # a stack starts every service at once; the client waits in its own task

    def __init__(self, inputs: RunInputs, image: str | None = None, *, client: docker.DockerClient | None = None,
                 placement: dict[str, str] | None = None, watchdog: Watchdog,
                 echo: commands.Echo = commands.silent, deploys: bool = True, faults: FaultPlan = NO_FAULTS) -> None:
        """``image``: a tag; None picks one (`choose_image`). ``deploys=False``: only to write
        stack files (`invoke stack-file`), no swarm needed. ``faults``: sent by the kit's runner;
        the roles they restart are restarted by the swarm (stack.restart_policy)."""
        self.inputs, self.echo = inputs, echo
        self.client = client or connect()
        self.swarm = require_swarm(self.client) if deploys else {}
        self.image = choose_image(image, self.client)
        self.placement = dict(placement or {})
        self.watchdog, self.faults = watchdog, faults
        self.owner = owner_token()
        self.stacks: list[str] = []
        self.swept = self._sweep_orphans() if deploys else []

    def cluster(self, workers: int) -> Cluster:
        """The services' names, each server on its own port 2222, as the article's containers."""
        return docker_cluster(workers)

    def exposure(self, cluster: Cluster) -> Exposure:
        return Exposure("the stack's own internal overlay network only (no port published): its tasks, on "
                        "whichever nodes run them", beyond_run=False)

    def facts(self) -> dict[str, str]:
        return {"backend": self.name, "image": self.image.tag, "image_id": self.image.id,
                "stacks": ", ".join(self.stacks), "nodes": str(self.swarm.get("Nodes", "")),
                "placement": ", ".join(f"{r}: {c}" for r, c in self.placement.items()) or "Swarm's own",
                "cpus": "limits and reservations per service (Swarm has no --cpuset-cpus)",
                "exposed": self.exposure(self.cluster(1)).where,
                "leftovers_removed": ", ".join(self.swept)}

    def spec(self, run_dir: Path) -> StackSpec:
        return StackSpec(self.image.tag, run_dir.name, self.owner, run_mounts(self.inputs, run_dir),
                         f"{os.getuid()}:{os.getgid()}", self.placement, self.faults)

    def write_stack_file(self, run_dir: Path, roles: list[RoleSpec], mode: str) -> tuple[str, Path]:
        """The stack's name and its file in the run folder (what `invoke stack-file` writes too)."""
        stack = stack_name(run_dir.name, mode)
        path = run_dir / f"stack-{mode}.yml"
        write_text(path, dump(stack_file(roles, self.spec(run_dir)),
                              USAGE.format(run_id=run_dir.name, mode=mode, file=path.name, stack=stack)))
        return stack, path

    def run(self, run_dir: Path, roles: list[RoleSpec], main: str, progress: Progress | None) -> Outcome:
        mode = "cluster" if any(r.listens for r in roles) else "standalone"
        stack, path = self.write_stack_file(Path(run_dir), roles, mode)
        require_image_on_nodes(self.client, self.image.tag, self.spec(Path(run_dir)), self.echo)
        with sigterm_interrupts():
            self.stacks.append(stack)
            try:
                commands.run(["docker", "stack", "deploy", "--resolve-image", "never", "--compose-file", str(path),
                              stack], echo=self.echo, hint=f"see `docker stack ps {stack} --no-trunc`")
                handles = [ServiceHandle(self.client, role, stack, run_dir, self.image.tag, self.python, run_dir.name)
                           for role in roles]
                outcome = Runner(Path(run_dir), handles, main, watchdog=self.watchdog, progress=progress,
                                 recovery=self.faults.recovery(handles)).run()
            finally:
                left = self._remove_stack(stack)
        outcome.add_leftovers(left)
        return outcome

    def _parts(self, stack: str) -> list[str]:
        label = {"label": f"{STACK_LABEL}={stack}"}
        return [f"service {s.name}" for s in self.client.services.list(filters=label)] + \
               [f"network {n.name}" for n in self.client.networks.list(filters=label)]

    def _remove_stack(self, stack: str) -> list[str]:
        """`docker stack rm`, then wait until its services and network are really gone."""
        try:
            if not self._parts(stack):
                return []
        except Exception as error:  # the engine itself: say so, do not hide the run's own error
            return [f"stack {stack} ({error})"]
        code, output = commands.attempt(["docker", "stack", "rm", stack], echo=self.echo)
        deadline = time.monotonic() + GONE_S
        while time.monotonic() < deadline:
            try:
                left = self._parts(stack)
            except Exception as error:  # the engine itself: say so, do not hide the run's own error
                return [f"stack {stack} ({error})"]
            if not left:
                return []
            time.sleep(0.5)
        return [f"{item} (still there {GONE_S:.0f} s after `docker stack rm`: {output.strip() or code})"
                for item in left]

    def _sweep_orphans(self) -> list[str]:
        """Stacks whose kit process is gone (killed with -9): removed now, nobody else will."""
        stacks = {s.attrs["Spec"]["Labels"].get(STACK_LABEL, ""): s.attrs["Spec"]["Labels"].get(OWNER_LABEL, "")
                  for s in self.client.services.list(filters={"label": OWNER_LABEL})}
        swept = []
        for stack, owner in stacks.items():
            if stack and judge_owner(owner).orphan:
                self._remove_stack(stack)
                swept.append(f"stack {stack}")
        return swept

    def teardown(self) -> list[str]:
        """Stacks of this process still there (should be none), removed now."""
        left: list[str] = []
        for stack in self.stacks:
            left += self._remove_stack(stack)
        return left
