"""Who made a container: a token that says which kit process on which machine, so that the
sweep of leftovers removes only what a dead kit process left, never a live run's containers.

The token is `<hostname>/<boot id>/<pid>/<start time>`. A pid alone is not enough: pids are
reused, and another machine (or a container) with the same hostname may talk to the same
engine. A leftover is an orphan only when its token names this machine in this boot, and its
pid is gone or now belongs to a process that started at another time.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown-boot"


def start_ticks(pid: int) -> str | None:
    """When a process started, in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_token(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{boot_id()}/{pid}/{start_ticks(pid) or '?'}"


@dataclass(frozen=True)
class Ownership:
    """Whether a leftover's owner (a kit process) is gone, and how we know."""

    orphan: bool
    why: str


def judge_owner(token: str) -> Ownership:
    """Whether the kit process that ``token`` names is gone, so that its leftovers may go."""
    parts = token.split("/")
    if len(parts) != 4 or not parts[2].isdigit():
        return Ownership(False, f"owner {token!r} is not a token of this kit version: left alone")
    host, boot, pid, started = parts
    if host != socket.gethostname() or boot != boot_id():
        return Ownership(False, f"made on {host} (boot {boot[:8]}), not by this machine in this boot: left alone")
    now = start_ticks(int(pid))
    if now is None:
        return Ownership(True, f"its kit process {pid} is gone")
    if now != started:
        return Ownership(True, f"its kit process {pid} is gone (that pid is now another process)")
    return Ownership(False, f"its kit process {pid} still runs")
