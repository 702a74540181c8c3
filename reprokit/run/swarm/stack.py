"""Pure builders for the Swarm backend: a run's roles as a compose-format stack file.

The stack file is a product: the kit writes the one it deploys into the run folder, and
`invoke stack-file` writes one without running anything, for a person to read, keep, or
`docker stack deploy -c stack.yml NAME` on a swarm of their own.

- One service per role, named as the article names its containers (tf_paramserver,
  tf_worker_1, ..., tf_client), on an overlay network of the stack's own: `internal` (no route
  out) and `attachable` (the kit probes the servers from a container on it). No port is published.
- Swarm services have no `--cpuset-cpus`. Each role gets a CPU limit of as many CPUs as its
  layout's set has (the kernel's CFS quota enforces it), and a role that does not share its CPUs
  with the roles inside them (a worker of the `spread` layout, not the ps or client around them)
  also reserves them, so that the scheduler does not put two workers on one CPU's worth of a
  node. Within a node the role may run on any CPU.
- Placement: a role may be pinned to a node (`node.hostname == NAME`, or any constraint a
  person writes, e.g. `node.labels.zone == a`); without one, Swarm places it.
- Restarts are the swarm's own: a role that its program takes back (FaultPlan.restartable) is
  restarted `on-failure`, after invoke.yaml's restart_backoff_s, at most its backoff_limit times;
  every other role is not (`condition: none`), and its death fails the run, as in the other
  backends. The kit's runner watches the same deaths and keeps TFJob's permanent codes: a role that
  ends with one fails the run, and the stack is removed before the swarm's restart could matter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from reprokit.names import hostname
from reprokit.run.containers.engine import OWNER_LABEL, RUN_LABEL
from reprokit.run.containers.specs import safe_name
from reprokit.run.faults import NO_FAULTS, FaultPlan
from reprokit.run.roles import RoleSpec

NETWORK = "cluster"
STACK_LABEL = "com.docker.stack.namespace"
ROLE_LABEL = "reprokit.role"
STOP_GRACE = "5s"
TMP = "/tmp"
_OPERATOR = re.compile(r"==|!=")


def stack_name(run_id: str, mode: str) -> str:
    """reprokit-<run id>-<mode>: one stack per run of a mode, never reused."""
    return f"reprokit-{safe_name(run_id)}-{mode}".lower()[:63]


def constraint(where: str) -> str:
    """A node name becomes `node.hostname == NAME`; a written constraint stays as it is."""
    return where if _OPERATOR.search(where) else f"node.hostname == {where}"


def cpu_count(cpus: str) -> int:
    """How many CPUs a taskset list names: '0' -> 1, '0,1' -> 2, '0-3' -> 4."""
    return len(cpu_set(cpus))


@dataclass(frozen=True)
class StackSpec:
    """What every service of a run's stack shares."""

    image: str
    run_id: str
    owner: str
    mounts: dict[str, dict[str, str]]  # host path -> {"bind": path, "mode": "ro" | "rw"}
    user: str = ""
    placement: dict[str, str] = field(default_factory=dict)  # role -> node name or constraint
    faults: FaultPlan = NO_FAULTS  # which roles the swarm restarts, and how (restart_policy)


def cpu_set(cpus: str) -> set[int]:
    found: set[int] = set()
    for part in filter(None, cpus.split(",")):
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def restart_policy(role: str, faults: FaultPlan) -> dict[str, object]:
    """The swarm's restart policy for ``role``: the kit's policy (faults.py) where it restarts the role."""
    if role not in faults.restartable:
        return {"condition": "none"}
    return {"condition": "on-failure", "delay": f"{faults.backoff_s:g}s", "max_attempts": faults.backoff_limit}


def service(role: RoleSpec, spec: StackSpec, shared: bool = False) -> dict[str, object]:
    """One role as a service of the stack; ``shared``: another role has some of its CPUs."""
    labels = {RUN_LABEL: spec.run_id, OWNER_LABEL: spec.owner, ROLE_LABEL: role.name}
    deploy: dict[str, object] = {"replicas": 1, "restart_policy": restart_policy(role.name, spec.faults),
                                 "labels": dict(labels)}
    if role.cpus:
        count = str(cpu_count(role.cpus))
        deploy["resources"] = {"limits": {"cpus": count}, **({} if shared else {"reservations": {"cpus": count}})}
    if role.name in spec.placement:
        deploy["placement"] = {"constraints": [constraint(spec.placement[role.name])]}
    volumes = [{"type": "bind", "source": path, "target": mount["bind"], "read_only": mount["mode"] == "ro"}
               for path, mount in spec.mounts.items()]
    volumes.append({"type": "tmpfs", "target": TMP})
    body: dict[str, object] = {
        "image": spec.image,
        "command": list(role.argv),
        "hostname": role.hostname,
        "environment": dict(role.env),
        "networks": {NETWORK: {"aliases": [role.hostname]}},
        "volumes": volumes,
        "init": True,
        "read_only": True,
        "cap_drop": ["ALL"],
        "stop_grace_period": STOP_GRACE,
        "labels": labels,
        "deploy": deploy,
    }
    if spec.user:
        body["user"] = spec.user
    return body


def stack_file(roles: list[RoleSpec], spec: StackSpec) -> dict[str, object]:
    """The compose document (version 3.8) of a run's roles, in start order."""
    return {
        "version": "3.8",
        "services": {hostname(role.name): service(role, spec, _shares(role, roles)) for role in roles},
        "networks": {NETWORK: {"driver": "overlay", "attachable": True, "internal": True,
                               "labels": {RUN_LABEL: spec.run_id, OWNER_LABEL: spec.owner}}},
    }


def _shares(role: RoleSpec, roles: list[RoleSpec]) -> bool:
    """Whether another role's CPUs all lie within this one's: then this one shares them (the ps
    and the client of the spread layout, every role of the article layout) and reserves none."""
    mine = cpu_set(role.cpus)
    return any(other is not role and cpu_set(other.cpus) and cpu_set(other.cpus) <= mine for other in roles)


def dump(document: Mapping[str, object], comment: str = "") -> str:
    """The stack file's text: a comment saying how to use it, then the YAML."""
    head = "".join(f"# {line}\n" if line else "#\n" for line in comment.splitlines())
    return head + yaml.safe_dump(document, sort_keys=False, width=120)
