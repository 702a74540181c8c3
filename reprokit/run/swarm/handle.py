"""A role as a Swarm service: the Swarm backend's `RoleHandle`.

The stack is deployed before the runner starts; `start` attaches to the role's service and
streams its logs (from the beginning) into runs/<id>/<role>.log. A server counts as reachable
once its log says it serves and a probe container on the stack's overlay network connects to
it: from inside the overlay, as the other roles will. A service's one task ending, for any
reason, ends the role; stopping a role removes its service (Swarm sends SIGTERM, then SIGKILL).

A role the swarm restarts (stack.restart_policy) gets a new task; its next handle (`again`) follows
that task only, and logs it beside the first (worker1.2.log): the service's log stream is one for
all its tasks, so each handle keeps the lines whose task id is its own (the stream's details).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from signal import Signals

import docker.errors
from docker.models.services import Service

import docker
from reprokit.errors import DockerError
from reprokit.names import log_path
from reprokit.run.containers.engine_json import ContainerStats, Task, TaskStatus
from reprokit.run.containers.handle import ENGINE_DOWN, SDK_ERRORS
from reprokit.run.containers.specs import log_lines, probe_argv
from reprokit.run.logfiles import LogPump, now_stamp, stamped
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import signal_phrase
from reprokit.run.swarm.stack import RUN_LABEL

_ENDED = ("complete", "failed", "shutdown", "rejected", "orphaned", "remove")
SERVING = "serving /job:"
_TASK_ID = "com.docker.swarm.task.id="


def task_of(frame: bytes) -> tuple[str, bytes]:
    """A frame of `service.logs(timestamps=True, details=True)`: '<time> <details> <text>', the
    details a comma-separated list of key=value that names the task. The task id, and the frame
    without its details (as `log_lines` reads it); a frame without them is kept whole."""
    head, _, rest = frame.partition(b" ")
    details, _, text = rest.partition(b" ")
    for item in details.decode(errors="replace").split(","):
        if item.startswith(_TASK_ID):
            return item[len(_TASK_ID):], head + b" " + text
    return "", frame



class ServiceHandle:
    """One role as the service `<stack>_<hostname>` of the run's stack."""

    pid: int | None = None  # not a process of this machine

    def __init__(self, client: docker.DockerClient, role: RoleSpec, stack: str, run_dir: str | Path,
                 image: str, python: str, run_id: str, incarnation: int = 1, earlier: tuple[str, ...] = ()) -> None:
        """``earlier``: the task ids of this role's earlier incarnations, which this one is not."""
        self.client, self.spec, self.stack, self.run_dir = client, role, stack, run_dir
        self.name = f"{stack}_{role.hostname}"
        self.image, self.python, self.run_id = image, python, run_id
        self.incarnation, self.earlier = incarnation, earlier
        self.own = ""  # this incarnation's task id, once the swarm has made it
        self.service: Service | None = None
        self.pump = LogPump(log_path(run_dir, role.name, incarnation))
        self.engine_error = ""
        self.gone = False
        self.last: TaskStatus = {}  # the task's status when last seen: death() is asked after teardown

    def again(self, incarnation: int) -> ServiceHandle:
        """The task the swarm starts after this one ended (its restart policy starts it, not the kit)."""
        self.task()
        return ServiceHandle(self.client, self.spec, self.stack, self.run_dir, self.image, self.python, self.run_id,
                             incarnation, self.earlier + ((self.own,) if self.own else ()))

    def start(self) -> None:
        try:
            self.service = self.client.services.get(self.name)
        except SDK_ERRORS as error:
            raise DockerError(f"the stack {self.stack} has no service {self.name}: {error}",
                              f"see `docker stack ps {self.stack} --no-trunc`") from error
        which = f"task {self.incarnation} of " if self.incarnation > 1 else ""
        self.pump.note(f"{which}service {self.name} of stack {self.stack} (docker service logs {self.name})")
        self.pump.start(self._lines(self.service))

    def _lines(self, service: Service) -> Iterator[str]:
        try:
            for frame in service.logs(stdout=True, stderr=True, follow=True, timestamps=True, details=True):
                task, frame = task_of(frame)
                if task and (task in self.earlier or (self.own and task != self.own)):
                    continue  # another incarnation's line: its own log has it
                self.own = self.own or task
                yield from log_lines(frame, now_stamp())
        except SDK_ERRORS as error:
            yield stamped(f"reprokit: the log stream ended early: {error}")

    def task(self) -> Task:
        """This incarnation's task (the service's first task that no earlier incarnation had), or
        {} when the swarm has not made it yet."""
        if self.service is None or self.gone:
            return {}
        try:
            tasks: list[Task] = self.service.tasks()
        except docker.errors.NotFound:
            self.gone = True
            return {}
        except SDK_ERRORS as error:
            self.engine_error = str(error)
            return {}
        mine = [t for t in tasks if t.get("ID") == self.own] if self.own else \
            [t for t in tasks if t.get("ID") not in self.earlier]
        found = min(mine, key=lambda t: t.get("CreatedAt", ""), default=Task())
        if found:
            self.own = self.own or found.get("ID", "")
            self.last = found.get("Status", {})
        return found

    def returncode(self) -> int | None:
        status = self.task().get("Status") or self.last
        if self.engine_error:
            return ENGINE_DOWN
        if status.get("State") in _ENDED:
            code = status.get("ContainerStatus", {}).get("ExitCode")
            return ENGINE_DOWN if code is None else int(code)
        return None

    def unreachable(self) -> str:
        assert self.spec.address is not None
        try:
            serving = SERVING in self.pump.path.read_text(errors="replace")
        except OSError:
            serving = False
        if not serving:
            status = self.task().get("Status", {})
            why = f": {status['Err']}" if status.get("Err") else ""
            return f"no '{SERVING}' line in its log yet (task {status.get('State', 'not scheduled')}{why})"
        try:  # from inside the overlay: a throwaway container on the stack's network
            self.client.containers.run(self.image, probe_argv(self.python, self.spec.address), remove=True,
                                       network=f"{self.stack}_cluster", labels={RUN_LABEL: self.run_id},
                                       read_only=True, cap_drop=["ALL"])
        except docker.errors.ContainerError as error:
            return f"serving, but not reachable on the overlay: {error.stderr!r}"
        except SDK_ERRORS as error:
            return str(error)
        return ""

    def cpu_seconds(self) -> float | None:
        """From the task's container when it runs on this node; None elsewhere."""
        container_id = self.task().get("Status", {}).get("ContainerStatus", {}).get("ContainerID")
        if not container_id:
            return None
        try:
            stats: ContainerStats = self.client.containers.get(container_id).stats(stream=False, one_shot=True)
            used = stats["cpu_stats"]["cpu_usage"]["total_usage"]
        except (*SDK_ERRORS, KeyError, TypeError):
            return None
        return used / 1e9 if used else None

    def terminate(self) -> None:
        """Remove the service: Swarm stops its task (SIGTERM, then SIGKILL after the stack's stop
        grace period). Swarm 20.10 keeps no record of a removed task, so a role stopped this way
        has no exit code to report (None), unlike one that ended by itself."""
        if self.returncode() is None:
            self._remove()

    def kill(self) -> None:
        self.terminate()  # the stack's stop grace period ends in SIGKILL

    def signal(self, signum: Signals) -> None:
        """A fault: ``signum`` to this task's container, which must run on this node."""
        container_id = self.task().get("Status", {}).get("ContainerStatus", {}).get("ContainerID")
        try:
            if container_id:
                self.client.containers.get(container_id).kill(signal=signum.name)
                return
            why = "its task has no container yet"
        except docker.errors.NotFound:
            why = "its task runs on another node (a fault is sent from the node that runs it)"
        except SDK_ERRORS as error:
            why = str(error)  # it ended meanwhile: the runner's exit check says so
        self.pump.note(f"{signum.name} not sent to {self.name}: {why}")

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.returncode()
            if code is not None or self.gone:
                return code
            time.sleep(0.25)
        return None

    def _remove(self) -> None:
        if self.service is not None and not self.gone:
            try:
                self.service.remove()
            except docker.errors.NotFound:
                pass
            except SDK_ERRORS as error:
                self.engine_error = self.engine_error or str(error)
            self.gone = True

    def death(self) -> str:
        if self.engine_error:
            return f"(service {self.name}) is lost: the Docker engine stopped answering ({self.engine_error})"
        status = self.task().get("Status") or self.last
        code = status.get("ContainerStatus", {}).get("ExitCode")
        state = status.get("State", "gone")
        if state == "rejected":
            return f"(service {self.name}) was rejected by Swarm: {status.get('Err', '')}"
        how = f"exited with code {code}{signal_phrase(code)}" if code is not None else f"ended ({state})"
        return f"(service {self.name}) {how}"

    def pump_error(self) -> str:
        return self.pump.error

    def release(self) -> list[str]:
        self._remove()
        self.pump.join()
        return [f"service {self.name} ({self.engine_error})"] if self.engine_error else []
