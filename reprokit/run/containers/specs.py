"""Pure builders for the Docker backend: names, labels, mounts, one container's settings.

The article starts each role by hand (`docker run -it --rm --cpuset-cpus 0 -h tf_paramserver
-v ~/code:/tmp/code ...`); `container_kwargs` is that command as the SDK's keyword arguments,
and `docker_run_argv` prints it back as the command a person would type. Nothing here talks to
the engine, so all of it is tested without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from reprokit.run.cluster import Cluster
from reprokit.run.containers.engine import OWNER_LABEL, RUN_LABEL
from reprokit.run.roles import RoleSpec, hostname

SERVER_PORT = 2222  # every container listens on its own 2222, as in the article
ROLE_LABEL = "reprokit.role"
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")
# A self-check from inside the server's own container: its name resolves on the run's network
# and something listens there. Exit 0 means reachable.
PROBE_SCRIPT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).close()\n"
    "except OSError as error:\n"
    "    print(error)\n"
    "    sys.exit(1)\n"
)


def docker_cluster(workers: int) -> Cluster:
    """tf_paramserver:2222 and tf_worker_1:2222, ...: the article's hosts, by name, not by IP."""
    names = [hostname(f"worker{i}") for i in range(workers)]
    return Cluster(f"{hostname('ps')}:{SERVER_PORT}", tuple(f"{n}:{SERVER_PORT}" for n in names))


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


def same_path_mounts(read_only: list[Path], read_write: list[Path]) -> dict[str, dict[str, str]]:
    """Each host folder at the same absolute path inside: the roles' argv name host paths.

    A folder given both ways is mounted read-write; equal paths are mounted once.
    """
    mounts: dict[str, dict[str, str]] = {}
    for mode, paths in (("ro", read_only), ("rw", read_write)):
        for path in paths:
            text = str(Path(path).absolute())
            mounts[text] = {"bind": text, "mode": mode}
    return dict(sorted(mounts.items()))


def run_mounts(settings: Any, run_dir: Path) -> dict[str, dict[str, str]]:
    """A run's folders as a container or service sees them: its inputs read-only (the patched
    sources, the data, and the kit's native fixes once built: an LD_PRELOAD path must read the
    same inside) and the run folder read-write."""
    inputs = [Path(settings.sources_dir).resolve(), Path(settings.data_dir).absolute()]
    native = Path(settings.build_dir).resolve() / "native"
    inputs += [native] if native.is_dir() else []
    return same_path_mounts(inputs, [run_dir])


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


HARDENING: dict[str, Any] = {
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "read_only": True,
    "tmpfs": {"/tmp": "rw,size=512m,mode=1777"},
    "pids_limit": 2048,
}


def container_kwargs(role: RoleSpec, place: Placement) -> dict[str, Any]:
    """Keyword arguments of `client.containers.create` for one role.

    No port is published: the servers are reachable on the run's bridge network only, by
    their article hostnames (network aliases). `init` gives PID 1 to docker-init, so a SIGTERM
    reaches the role and zombies are reaped. Hardened: no capabilities, no privilege gained
    through setuid files, a read-only root with a tmpfs where Python and TensorFlow write their
    temporaries, and a cap on processes and threads (TensorFlow starts a few hundred at most).
    """
    kwargs: dict[str, Any] = {
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


def docker_run_argv(kwargs: dict[str, Any]) -> list[str]:
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
