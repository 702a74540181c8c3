"""Before a deploy: does every node that may run a role have the image and the mounted folders?

Without a registry each node needs the image loaded (`docker save TAG | ssh NODE docker load`),
and the sources, data and run folders at the same paths (a shared file system, or copies). A
global service with the run's image and mounts, which does nothing, answers for every node at
once: a node that lacks either rejects its task, saying which. Then it is removed. On a swarm of
one node, this node's own checks suffice.
"""

from __future__ import annotations

import secrets
import time

from docker.models.services import Service
from docker.types import Mount, RestartPolicy, ServiceMode

import docker
from reprokit import commands
from reprokit.errors import DockerError
from reprokit.run.containers.engine import OWNER_LABEL, RUN_LABEL
from reprokit.run.containers.engine_json import Node
from reprokit.run.swarm.stack import StackSpec

CHECK_S = 120.0


def ready_nodes(client: docker.DockerClient) -> list[Node]:
    return [n.attrs for n in client.nodes.list()
            if n.attrs["Status"]["State"] == "ready" and n.attrs["Spec"].get("Availability") == "active"]


def require_image_on_nodes(client: docker.DockerClient, image: str, spec: StackSpec,
                           echo: commands.Echo = commands.silent) -> None:
    """A DockerError naming every node that lacks the image or a folder, before anything is deployed."""
    if len(ready_nodes(client)) <= 1:
        return  # this node: the image was found here, and the folders are this run's own
    lacking = {host: why for host, why in node_verdicts(client, image, spec, echo).items() if why}
    if lacking:
        raise DockerError("nothing was deployed: " + "; ".join(f"node {h}: {w}" for h, w in lacking.items()),
                          f"load the image on each (`docker save {image} | ssh NODE docker load`) and make the "
                          f"folders {', '.join(m['bind'] for m in spec.mounts.values())} exist there "
                          "(a shared file system, or copies at the same paths)")


def node_verdicts(client: docker.DockerClient, image: str, spec: StackSpec,
                  echo: commands.Echo = commands.silent) -> dict[str, str]:
    """Node hostname -> '' when a task of ``image`` with the run's mounts ran there, else why not."""
    nodes = ready_nodes(client)
    name = f"reprokit-check-{secrets.token_hex(3)}"
    mounts = [Mount(m["bind"], path, type="bind", read_only=True) for path, m in spec.mounts.items()]
    echo(f"checking {len(nodes)} nodes for {image} and the run's folders ({name})")
    check = client.services.create(image, ["true"], name=name, mode=ServiceMode("global"), mounts=mounts,
                                   restart_policy=RestartPolicy("none"),
                                   labels={RUN_LABEL: spec.run_id, OWNER_LABEL: spec.owner})
    try:
        return _await(check, {n["ID"]: n["Description"]["Hostname"] for n in nodes})
    finally:
        check.remove()


def _await(check: Service, hosts: dict[str, str]) -> dict[str, str]:
    """Node hostname -> '' once its task ran, or why it could not."""
    deadline = time.monotonic() + CHECK_S
    verdicts: dict[str, str] = {}
    while time.monotonic() < deadline and len(verdicts) < len(hosts):
        for task in check.tasks():
            host = hosts.get(task.get("NodeID", ""), "")
            state = task["Status"]["State"]
            if host and state in ("complete", "failed", "rejected", "shutdown"):
                verdicts[host] = "" if state == "complete" else task["Status"].get("Err", state)
        time.sleep(1)
    for host in hosts.values():
        verdicts.setdefault(host, f"no answer within {CHECK_S:.0f} s")
    return verdicts
