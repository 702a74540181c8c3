"""What the kit controls in a run, applied to both modes alike, recorded in every result.

None of it changes the article's programs: only the environment and thread pools of the
processes that run them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tuning:
    name: str
    why: str
    server_threads: tuple[int, int] = (0, 0)  # intra-op, inter-op threads of ps and worker servers; 0: TF's
    env: dict[str, str] = field(default_factory=dict)  # for the trainers (standalone and client)
    server_env: dict[str, str] = field(default_factory=dict)  # for the ps and worker servers
    client_hosts_ps: bool = False  # the ps server runs inside the client's process


PROFILES = {
    "default": Tuning("default", "TensorFlow's defaults everywhere, as the article ran it"),
    "tuned": Tuning(
        "tuned",
        "servers with 1 intra-op and 4 inter-op threads, so a worker pinned to one CPU can serve "
        "its peer (sends, receives) while it computes; the ps inside the client's process, so the "
        "client's per-example queue runs reach the master without a gRPC hop",
        server_threads=(1, 4),
        client_hosts_ps=True,
    ),
}


def profile(name: str) -> Tuning:
    from reprokit.errors import KitError

    if name not in PROFILES:
        raise KitError(f"unknown tuning profile {name!r}", f"choose one of {', '.join(PROFILES)}")
    return PROFILES[name]
