"""A role as a container: the Docker backend's `RoleHandle`.

Output is streamed from the engine into runs/<id>/<role>.log, each line stamped with the time
the engine received it. A server is probed from inside its own container: its name resolves
on the run's network and its port listens. When the engine itself stops answering, the role
counts as ended, with the engine's error as the reason, and the run fails naming it. A role the
fault plan restarts (faults.py) comes back as a new container under the same network alias,
named and logged by its incarnation (worker1.2.log).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from signal import Signals

import docker.errors
import requests
from docker.models.containers import Container

import docker
from reprokit import commands
from reprokit.errors import DockerError
from reprokit.names import log_path
from reprokit.run.containers.engine_json import ContainerState, ContainerStats
from reprokit.run.containers.specs import (
    PROBE_OK,
    Placement,
    container_kwargs,
    docker_run_argv,
    log_lines,
    probe_argv,
)
from reprokit.run.logfiles import LogPump, now_stamp, stamped
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import signal_phrase

SDK_ERRORS = (docker.errors.APIError, requests.exceptions.RequestException)
_GONE = ("exited", "dead", "removing")
ENGINE_DOWN = -1  # the exit code a role gets when the engine cannot say how it ended


class ContainerHandle:
    """One role as a container of the run's image, on the run's network."""

    pid: int | None = None  # not a process of this machine's kit

    def __init__(self, client: docker.DockerClient, role: RoleSpec, place: Placement, run_dir: str | Path,
                 python: str, incarnation: int = 1) -> None:
        self.client, self.spec, self.place, self.python = client, role, place, python
        self.run_dir = run_dir
        self.kwargs = container_kwargs(role, place)
        if incarnation > 1:  # the earlier one keeps its name until the runner removes it
            self.kwargs["name"] = f"{self.kwargs['name']}.{incarnation}"
        self.container: Container | None = None
        self.pump = LogPump(log_path(run_dir, role.name, incarnation))
        self.engine_error = ""
        self.last: ContainerState = {}  # the state when last read: death() is asked after teardown

    def again(self, incarnation: int) -> ContainerHandle:
        return ContainerHandle(self.client, self.spec, self.place, self.run_dir, self.python, incarnation)

    def start(self) -> None:
        self.pump.note(commands.shown(docker_run_argv(self.kwargs)))
        try:
            self.container = self.client.containers.create(**self.kwargs)
            self.container.start()
        except SDK_ERRORS as error:
            raise DockerError(f"could not start the {self.spec.name} container {self.kwargs['name']} "
                              f"(cpuset {self.spec.cpus or 'all'}): {error}",
                              f"is the CPU list valid here (`nproc`)? is {self.place.image} intact? "
                              f"see {self.pump.path}") from error
        self.pump.start(self._lines(self.container))

    def _lines(self, container: Container) -> Iterator[str]:
        # The engine stamps every line as it arrives; the stream ends when the container stops.
        try:
            for frame in container.logs(stream=True, follow=True, timestamps=True):
                yield from log_lines(frame, now_stamp())
        except SDK_ERRORS as error:
            yield stamped(f"reprokit: the log stream ended early: {error}")

    def state(self) -> ContainerState:
        if self.container is None:
            return {}
        try:
            self.container.reload()
        except docker.errors.NotFound:
            if self.last.get("Status") in _GONE:  # it ended, then our teardown removed it
                return self.last
            return {"Status": "removing", "ExitCode": None, "Gone": True}
        except SDK_ERRORS as error:
            self.engine_error = str(error)
            return {"Status": "unknown", "ExitCode": ENGINE_DOWN}
        self.last = self.container.attrs.get("State", {})
        return self.last

    def returncode(self) -> int | None:
        state = self.state()
        if state.get("Status") in _GONE or self.engine_error:
            code = state.get("ExitCode")
            return ENGINE_DOWN if code is None else int(code)
        return None

    def unreachable(self) -> str:
        assert self.spec.address is not None and self.container is not None
        try:
            code, output = self.container.exec_run(probe_argv(self.python, self.spec.address))
        except SDK_ERRORS as error:
            return str(error)  # stopped meanwhile: the runner's exit check says so
        said = output.decode(errors="replace").strip()  # not streamed: bytes
        if code == 0 and said == PROBE_OK:
            return ""
        return said or f"the probe ended with code {code} and no output (did the container stop?)"

    def cpu_seconds(self) -> float | None:
        """From one cheap stats read (no two-sample wait); a stopped container reads as 0."""
        if self.container is None:
            return None
        try:
            stats: ContainerStats = self.container.stats(stream=False, one_shot=True)
            used = stats["cpu_stats"]["cpu_usage"]["total_usage"]
        except (*SDK_ERRORS, KeyError, TypeError):
            return None
        return used / 1e9 if used else None

    def terminate(self) -> None:
        self._signal("SIGTERM")

    def kill(self) -> None:
        self._signal("SIGKILL")

    def signal(self, signum: Signals) -> None:
        self._signal(signum.name)

    def _signal(self, name: str) -> None:
        if self.container is not None:
            try:
                self.container.kill(signal=name)
            except SDK_ERRORS:
                pass  # not running: nothing to stop

    def wait(self, timeout: float) -> int | None:
        if self.container is None:
            return 0
        try:
            code = int(self.container.wait(timeout=max(1, int(timeout)))["StatusCode"])
        except SDK_ERRORS:
            return self.returncode()
        self.state()  # keep how it ended: the container is removed next
        return code

    def death(self) -> str:
        name = self.kwargs["name"]
        if self.engine_error:
            return f"(container {name}) is lost: the Docker engine stopped answering ({self.engine_error})"
        state = self.state()
        code = state.get("ExitCode")
        how = "was removed from outside" if state.get("Gone") else f"exited with code {code}"
        if isinstance(code, int) and code > 128:
            how += signal_phrase(code)
        if state.get("OOMKilled"):
            how += " (killed by the kernel: out of memory)"
        return f"(container {name}) {how}"

    def pump_error(self) -> str:
        return self.pump.error

    def release(self) -> list[str]:
        self.pump.join()
        if self.container is None:
            return []
        try:
            self.container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except SDK_ERRORS as error:
            return [f"container {self.container.name} ({error})"]
        return []
