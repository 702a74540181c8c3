"""The Docker engine's JSON documents, as far as the kit reads them.

The Docker SDK hands back the engine's answers as plain dicts (``Container.attrs``,
``Service.tasks()``, ``Node.attrs``, the build stream, a stats read). These TypedDicts name only
the keys the kit reads, all optional unless the engine always sends them, so that a misspelt key
is a mypy error rather than a silent ``None``. They describe; nothing checks them at run time.
"""

from __future__ import annotations

from typing import TypedDict


class ErrorDetail(TypedDict, total=False):
    message: str


class BuildChunk(TypedDict, total=False):
    """One decoded chunk of ``client.api.build(..., decode=True)``."""

    stream: str  # a piece of the build's output; lines may span chunks
    status: str  # a pull by FROM: "Pulling fs layer", "Downloading", ...
    progress: str  # the pull's progress bar
    id: str  # the layer a status is about
    error: str
    errorDetail: ErrorDetail


class ContainerState(TypedDict, total=False):
    """``Container.attrs["State"]``, plus the kit's own mark for a container removed from outside."""

    Status: str  # created, running, exited, dead, removing, ...
    ExitCode: int | None
    OOMKilled: bool
    Gone: bool  # not the engine's: the container vanished before it was seen to end


class CpuUsage(TypedDict):
    total_usage: int  # nanoseconds


class CpuStats(TypedDict):
    cpu_usage: CpuUsage


class ContainerStats(TypedDict):
    """One read of ``Container.stats(stream=False)``."""

    cpu_stats: CpuStats


class TaskContainerStatus(TypedDict, total=False):
    ContainerID: str
    ExitCode: int | None


class TaskStatus(TypedDict, total=False):
    State: str  # new, pending, running, complete, failed, shutdown, rejected, ...
    Err: str
    ContainerStatus: TaskContainerStatus


class Task(TypedDict, total=False):
    """One task of ``Service.tasks()``: a service's replica on a node."""

    ID: str
    CreatedAt: str
    NodeID: str
    Status: TaskStatus


class NodeStatus(TypedDict):
    State: str  # ready, down, ...


class NodeSpec(TypedDict, total=False):
    Availability: str  # active, pause, drain


class NodeDescription(TypedDict):
    Hostname: str


class Node(TypedDict):
    """``Node.attrs``: a member of the swarm."""

    ID: str
    Status: NodeStatus
    Spec: NodeSpec
    Description: NodeDescription
