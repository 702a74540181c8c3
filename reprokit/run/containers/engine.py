"""The Docker engine: connect with errors a person can act on, and sweep up what runs left behind.

Everything the kit starts in Docker carries the label ``reprokit.run`` (its value names the run),
so leftovers of a crashed run can be found and removed by label alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import docker.errors

import docker
from reprokit.commands import Echo, silent
from reprokit.errors import DockerError

RUN_LABEL = "reprokit.run"
OWNER_LABEL = "reprokit.owner"  # the kit process that made it: see owners.py
DEFAULT_ENDPOINT = "unix:///var/run/docker.sock"
LOCAL_BACKEND_HINT = "or run without Docker: --backend local"



def endpoint() -> str:
    """The engine address the SDK will use: ``DOCKER_HOST`` or the default unix socket."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_ENDPOINT


def diagnose(error: BaseException, where: str) -> DockerError:
    """Turn the SDK's connection error into a DockerError that says what is wrong and what to do.

    The SDK wraps the socket error in several layers of requests/urllib3 exceptions; their text
    is the one stable thing to read, so this reads the whole chain's text.
    """
    texts: list[str] = []
    current: BaseException | None = error
    while current is not None and len(texts) < 10:
        texts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    evidence = " | ".join(texts)
    socket = where.removeprefix("unix://")
    if "PermissionError" in evidence or "Permission denied" in evidence:
        return DockerError(
            f"permission denied on the Docker socket {socket}",
            "add yourself to the docker group (sudo usermod -aG docker $USER, then log in again), "
            + LOCAL_BACKEND_HINT,
        )
    if "FileNotFoundError" in evidence or "No such file" in evidence:
        return DockerError(
            f"no Docker engine: the socket {socket} does not exist",
            "install Docker and start the daemon (sudo systemctl start docker, "
            "or sudo dockerd >/tmp/dockerd.log 2>&1 &), " + LOCAL_BACKEND_HINT,
        )
    if "Connection refused" in evidence:
        return DockerError(
            f"the Docker engine at {where} refuses connections: is dockerd running?",
            "start the daemon (sudo systemctl start docker, or sudo dockerd &), "
            + LOCAL_BACKEND_HINT,
        )
    return DockerError(
        f"the Docker engine at {where} is not reachable: {evidence}",
        "check `docker info`; " + LOCAL_BACKEND_HINT,
    )


def connect(timeout: int = 120) -> docker.DockerClient:
    """A client for the engine named by the environment, pinged once; DockerError if unusable."""
    where = endpoint()
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as error:
        raise diagnose(error, where) from error
    except OSError as error:
        raise diagnose(error, where) from error
    return client


@dataclass(frozen=True)
class Leftover:
    """One container or network that carries the kit's label."""

    kind: str  # "container" or "network"
    name: str
    id: str
    run: str  # the reprokit.run label: which run made it
    status: str = ""
    owner: str = ""  # the reprokit.owner label: which kit process made it (see owners.py)


@dataclass
class Sweep:
    """What remove_leftovers removed, and what it could not remove (with the reason)."""

    removed: list[Leftover] = field(default_factory=list)
    failed: list[tuple[Leftover, str]] = field(default_factory=list)


def find_leftovers(
    client: docker.DockerClient, label: str = RUN_LABEL, value: str | None = None
) -> list[Leftover]:
    """Containers (running or not) and networks carrying ``label`` (``=value`` if given)."""
    filters = {"label": label if value is None else f"{label}={value}"}
    found = []
    for c in client.containers.list(all=True, filters=filters):
        labels = c.labels or {}
        found.append(Leftover("container", c.name or "", c.id or "", labels.get(RUN_LABEL, ""), c.status,
                              labels.get(OWNER_LABEL, "")))
    for n in client.networks.list(filters=filters):
        labels = n.attrs.get("Labels") or {}
        found.append(Leftover("network", n.name or "", n.id or "", labels.get(RUN_LABEL, ""), "",
                              labels.get(OWNER_LABEL, "")))
    return found


def remove_leftovers(
    client: docker.DockerClient, leftovers: list[Leftover], echo: Echo = silent
) -> Sweep:
    """Remove containers first (forcefully, with their anonymous volumes), then networks."""
    sweep = Sweep()
    ordered = sorted(leftovers, key=lambda item: item.kind != "container")
    for item in ordered:
        echo(f"removing {item.kind} {item.name} ({RUN_LABEL}={item.run})")
        try:
            if item.kind == "container":
                client.containers.get(item.id).remove(force=True, v=True)
            else:
                client.networks.get(item.id).remove()
        except docker.errors.NotFound:
            pass  # gone already (an auto-removed container): that is the goal
        except docker.errors.APIError as error:
            sweep.failed.append((item, str(error)))
            continue
        sweep.removed.append(item)
    return sweep
