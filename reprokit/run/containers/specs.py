"""Pure builders for the Docker backend: names, labels, one container's settings (its mounts: mounts.py).

The article starts each role by hand (`docker run -it --rm --cpuset-cpus 0 -h tf_paramserver
-v ~/code:/tmp/code ...`); `container_kwargs` is that command as the SDK's keyword arguments,
and `docker_run_argv` prints it back as the command a person would type. Nothing here talks to
the engine, so all of it is tested without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import NotRequired, TypedDict

from reprokit.run.cluster import SERVER_PORT, Cluster
from reprokit.run.containers.engine import OWNER_LABEL, RUN_LABEL
from reprokit.run.roles import RoleSpec, hostname

ROLE_LABEL = "reprokit.role"
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")
# A self-check from inside the server's own container: its name resolves on the run's network
# and something listens there. Exit 0 means reachable.
# It prints PROBE_OK on success: an exec killed because its container died meanwhile can end
# with no exit code and no output, which must not read as "reachable".
PROBE_OK = "reachable"
PROBE_SCRIPT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).close()\n"
    "except OSError as error:\n"
    "    print(error)\n"
    "    sys.exit(1)\n"
    f"print({PROBE_OK!r})\n"
)


def docker_cluster(workers: int) -> Cluster:
    """tf_paramserver:2222 and tf_worker_1:2222, ...: the article's hosts, by name, not by IP."""
    names = [hostname(f"worker{i}") for i in range(workers)]
    return Cluster(f"{hostname('ps')}:{SERVER_PORT}", tuple(f"{n}:{SERVER_PORT}" for n in names),
                   f"{hostname('client')}:{SERVER_PORT}")


def safe_name(text: str) -> str:
    """Docker names allow [a-zA-Z0-9][a-zA-Z0-9_.-]*; anything else becomes '-'."""
    cleaned = _NAME_UNSAFE.sub("-", text).strip("-.") or "run"
    return cleaned if cleaned[0].isalnum() else "r" + cleaned


def network_name(run_id: str, token: str) -> str:
    """reprokit-<run id>-<token>: one network per run of a mode, never reused."""
    return f"reprokit-{safe_name(run_id)}-{token}"


def container_name(role: RoleSpec, token: str) -> str:
    """The article's hostname plus the run's token (tf_worker_1-3fa9c2), so no leftover clashes."""
    return f"{role.hostname}-{token}"


def labels(run_id: str, owner: str, role: str | None = None) -> dict[str, str]:
    found = {RUN_LABEL: run_id, OWNER_LABEL: owner}
    if role is not None:
        found[ROLE_LABEL] = role
    return found


@dataclass(frozen=True)
class Placement:
    """Where a run's containers go: the image, the network, the mounts, who owns what."""

    image: str
    network: str
    token: str
    run_id: str
    owner: str
    mounts: dict[str, dict[str, str]]
    user: str = ""  # "uid:gid": files in the run folder belong to whoever ran the kit


class Hardening(TypedDict):
    """What every role's container gives up (see `container_kwargs`)."""

    cap_drop: list[str]
    security_opt: list[str]
    read_only: bool
    tmpfs: dict[str, str]  # path -> mount options
    pids_limit: int


class ContainerKwargs(Hardening):
    """The keyword arguments of `client.containers.create` that the kit passes."""

    image: str
    command: list[str]
    name: str
    hostname: str
    labels: dict[str, str]
    environment: dict[str, str]
    network: str
    networking_config: dict[str, dict[str, list[str]]]  # network -> {"Aliases": [...]}
    volumes: dict[str, dict[str, str]]  # host path -> {"bind": path, "mode": "ro" | "rw"}
    init: bool
    auto_remove: bool
    detach: bool
    stdin_open: bool
    tty: bool
    cpuset_cpus: NotRequired[str]
    user: NotRequired[str]


HARDENING: Hardening = {
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "read_only": True,
    "tmpfs": {"/tmp": "rw,size=512m,mode=1777"},
    "pids_limit": 2048,
}


def container_kwargs(role: RoleSpec, place: Placement) -> ContainerKwargs:
    """Keyword arguments of `client.containers.create` for one role.

    No port is published: the servers are reachable on the run's bridge network only, by
    their article hostnames (network aliases). `init` gives PID 1 to docker-init, so a SIGTERM
    reaches the role and zombies are reaped. Hardened: no capabilities, no privilege gained
    through setuid files, a read-only root with a tmpfs where Python and TensorFlow write their
    temporaries, and a cap on processes and threads (TensorFlow starts a few hundred at most).
    """
    kwargs: ContainerKwargs = {
        "image": place.image,
        "command": list(role.argv),
        "name": container_name(role, place.token),
        "hostname": role.hostname,
        "labels": labels(place.run_id, place.owner, role.name),
        "environment": dict(role.env),
        "network": place.network,
        "networking_config": {place.network: {"Aliases": [role.hostname]}},
        "volumes": {path: dict(spec) for path, spec in place.mounts.items()},
        "init": True,
        **HARDENING,
        "auto_remove": False,  # removed at teardown, after its log has been read
        "detach": True,
        "stdin_open": False,
        "tty": False,
    }
    if role.cpus:
        kwargs["cpuset_cpus"] = role.cpus
    if place.user:
        kwargs["user"] = place.user
    return kwargs


def docker_run_argv(kwargs: ContainerKwargs) -> list[str]:
    """The `docker run` command that does what `kwargs` asks (for logs and the README)."""
    argv = ["docker", "run", "--init", "--name", kwargs["name"], "-h", kwargs["hostname"]]
    argv += [f"--cap-drop={c}" for c in kwargs["cap_drop"]] + [f"--security-opt={o}" for o in kwargs["security_opt"]]
    argv += ["--read-only"] if kwargs["read_only"] else []
    argv += [f"--tmpfs={path}:{options}" for path, options in kwargs["tmpfs"].items()]
    argv += [f"--pids-limit={kwargs['pids_limit']}"]
    if "cpuset_cpus" in kwargs:
        argv += ["--cpuset-cpus", kwargs["cpuset_cpus"]]
    argv += ["--network", kwargs["network"], "--network-alias", kwargs["hostname"]]
    if "user" in kwargs:
        argv += ["--user", kwargs["user"]]
    for key, value in kwargs["labels"].items():
        argv += ["--label", f"{key}={value}"]
    for key, value in kwargs["environment"].items():
        argv += ["-e", f"{key}={value}"]
    for path, spec in kwargs["volumes"].items():
        argv += ["-v", f"{path}:{spec['bind']}" + (":ro" if spec["mode"] == "ro" else "")]
    return argv + ["-d", kwargs["image"], *kwargs["command"]]


def probe_argv(python: str, address: str) -> list[str]:
    host, port = address.rsplit(":", 1)
    return [python, "-c", PROBE_SCRIPT, host, port]


def local_time(docker_timestamp: str) -> str:
    """The engine's RFC 3339 UTC time (nanoseconds, trailing zeros dropped) as this machine's
    local time, the way the local backend stamps its lines: 2026-12-02T10:15:00.123456."""
    stamp = docker_timestamp.strip().removesuffix("Z")
    whole, _, fraction = stamp.partition(".")
    moment = datetime.fromisoformat(whole).replace(tzinfo=timezone.utc)
    micros = int((fraction[:6] or "0").ljust(6, "0"))
    moment = moment.replace(microsecond=micros).astimezone().replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds")


def log_lines(frame: bytes, now: str) -> list[str]:
    """One frame of `logs(stream=True, timestamps=True)` as `<time> | <text>` log lines.

    The engine stores a line per entry and prefixes its time; a frame without a readable time
    gets `now` instead of being lost.
    """
    text = frame.decode(errors="replace")
    head, _, rest = text.partition(" ")
    try:
        at = local_time(head)
    except ValueError:
        at, rest = now, text
    body = rest[:-1] if rest.endswith("\n") else rest
    return [f"{at} | {line}\n" for line in body.split("\n")]
