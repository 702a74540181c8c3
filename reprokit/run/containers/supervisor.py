"""The Docker counterpart of supervisor.py: start a run's containers in order, probe the servers
from inside, watch them all while the main role runs, and always remove every one of them.

One `ContainerSupervisor` per `run` call. Output is streamed from the engine into
runs/<id>/<role>.log, each line stamped `<iso time> | ` as the local supervisor stamps it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import docker.errors
import requests
from docker.models.containers import Container

import docker
from reprokit.errors import ClusterError, DockerError
from reprokit.judge.logs import parse_line
from reprokit.run.containers.specs import (
    Placement,
    container_kwargs,
    docker_run_argv,
    labels,
    log_lines,
    probe_argv,
)
from reprokit.run.roles import RoleSpec
from reprokit.run.supervisor import Outcome, log_path, tail

Progress = Callable[[str, int, float], None]  # role, step, examples/sec
TERM_GRACE_S = 5.0
_GONE = ("exited", "dead", "removing")
SDK_ERRORS = (docker.errors.APIError, requests.exceptions.RequestException)


def _now() -> str:
    return datetime.now().isoformat(timespec="microseconds")


class ContainerSupervisor:
    """One run of a mode: its network, its containers (in `roles` order), its logs, its end."""

    def __init__(self, client: docker.DockerClient, place: Placement, run_dir: Path, roles: list[RoleSpec],
                 main: str, progress: Progress | None, *, python: str, probe_timeout_s: float) -> None:
        self.client, self.place, self.run_dir = client, place, run_dir
        self.roles, self.main, self.progress = {r.name: r for r in roles}, main, progress
        self.python, self.probe_timeout_s = python, probe_timeout_s
        self.network: Any = None
        self.containers: dict[str, Container] = {}
        self.pumps: dict[str, threading.Thread] = {}
        self.started = time.monotonic()
        self.timings: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.left: list[str] = []  # what teardown could not remove, with the engine's reason

    def mark(self, name: str) -> None:
        self.timings[name] = round(time.monotonic() - self.started, 3)

    def create_network(self) -> None:
        try:
            self.network = self.client.networks.create(
                self.place.network, driver="bridge", labels=labels(self.place.run_id, self.place.owner))
        except SDK_ERRORS as error:
            raise DockerError(f"could not create the bridge network {self.place.network}: {error}",
                              "too many networks left by killed runs? see `docker network ls --filter "
                              "label=reprokit.run`; `docker network prune` removes unused ones") from error

    def start(self, role: RoleSpec) -> None:
        kwargs = container_kwargs(role, self.place)
        path = log_path(self.run_dir, role.name)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"{_now()} | reprokit: $ {' '.join(docker_run_argv(kwargs))}\n")
        try:
            container = self.client.containers.create(**kwargs)
            self.containers[role.name] = container
            container.start()
        except SDK_ERRORS as error:
            raise DockerError(f"could not start the {role.name} container {kwargs['name']} "
                              f"(cpuset {role.cpus or 'all'}): {error}",
                              f"is the CPU list valid here (`nproc`)? is {self.place.image} intact? "
                              f"see {path}") from error
        pump = threading.Thread(target=self._pump, args=(role.name, container, path), daemon=True)
        pump.start()
        self.pumps[role.name] = pump
        self.mark(f"{role.name}_started")

    def _pump(self, name: str, container: Container, path: Path) -> None:
        # The engine stamps every line as it arrives; the stream ends when the container stops.
        report = self.progress if name == self.main else None
        with path.open("a", encoding="utf-8") as log:
            try:
                for frame in container.logs(stream=True, follow=True, timestamps=True):
                    for line in log_lines(frame, _now()):
                        log.write(line)
                        kind, fields, _, _ = parse_line(line.rstrip("\n"))
                        if report and kind == "step" and fields is not None:
                            report(name, fields.step, fields.examples_per_sec)
                    log.flush()
            except SDK_ERRORS as error:
                log.write(f"{_now()} | reprokit: the log stream ended early: {error}\n")

    def _state(self, name: str) -> dict[str, Any]:
        try:
            self.containers[name].reload()
        except docker.errors.NotFound:
            return {"Status": "removing", "ExitCode": None, "Gone": True}
        return self.containers[name].attrs.get("State", {})

    def _died(self, name: str, when: str) -> ClusterError:
        state = self._state(name)
        if name in self.pumps:
            self.pumps[name].join(timeout=5)  # the rest of its log
        path = log_path(self.run_dir, name)
        code = state.get("ExitCode")
        how = "was removed from outside" if state.get("Gone") else f"exited with code {code}"
        if isinstance(code, int) and code > 128 and code - 128 in signal.valid_signals():
            how += f" (killed by {signal.Signals(code - 128).name})"
        if state.get("OOMKilled"):
            how += " (killed by the kernel: out of memory)"
        return ClusterError(f"the {name} role (container {self.containers[name].name}) {how} {when}".rstrip(),
                            f"see {path}; its last lines:\n{tail(path)}")

    def wait_reachable(self, role: RoleSpec) -> None:
        """A probe from inside the role's own container: its name resolves, its port listens."""
        assert role.address is not None
        timeout = self.probe_timeout_s
        deadline, last = time.monotonic() + timeout, ""
        while True:
            if self._state(role.name).get("Status") in _GONE:
                raise self._died(role.name, f"before {role.address} became reachable")
            try:
                code, output = self.containers[role.name].exec_run(probe_argv(self.python, role.address))
                if code == 0:
                    self.mark(f"{role.name}_reachable")
                    return
                last = output.decode(errors="replace").strip()  # not streamed: bytes
            except SDK_ERRORS as error:
                last = str(error)  # stopped meanwhile: the state check above says so
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the {role.name} role ({role.address}) is not reachable after {timeout:.0f} s "
                    f"(probed inside its container {self.containers[role.name].name}: {last})",
                    f"is the {role.name} server running? see {log_path(self.run_dir, role.name)}")
            time.sleep(0.5)

    def sample_cpu(self) -> None:
        """CPU seconds per container so far, from one cheap stats read (no two-sample wait)."""
        for name, container in self.containers.items():
            try:
                stats: dict = container.stats(stream=False, one_shot=True)
                used = stats["cpu_stats"]["cpu_usage"]["total_usage"]
            except (*SDK_ERRORS, KeyError, TypeError):
                continue
            if used:  # a stopped container reports 0: keep the last real sample
                self.cpu[name] = round(used / 1e9, 2)

    def watch(self) -> int:
        """Wait for the main container; fail as soon as a server dies (servers first: a dead
        worker makes the client fail too, and the worker is the cause)."""
        last_sample = 0.0
        while True:
            for name in self.containers:
                if name != self.main and self._state(name).get("Status") in _GONE:
                    raise self._died(name, f"while the {self.main} was running")
            state = self._state(self.main)
            if state.get("Status") in _GONE:
                self.mark("main_exited")
                code = state.get("ExitCode")
                return -1 if code is None else int(code)
            if time.monotonic() - last_sample > 1.0:
                self.sample_cpu()
                last_sample = time.monotonic()
            time.sleep(0.5)

    def teardown(self) -> dict[str, int | None]:
        self.mark("teardown_started")
        self.sample_cpu()
        for container in reversed(list(self.containers.values())):
            try:
                container.kill(signal="SIGTERM")
            except SDK_ERRORS:
                pass  # not running: nothing to stop
        deadline = time.monotonic() + TERM_GRACE_S
        for container in self.containers.values():
            try:
                container.wait(timeout=max(1, int(deadline - time.monotonic())))
            except SDK_ERRORS:
                try:
                    container.kill()
                except SDK_ERRORS:
                    pass
        codes = {name: self._state(name).get("ExitCode") for name in self.containers}
        for pump in self.pumps.values():
            pump.join(timeout=5)
        for container in self.containers.values():
            try:
                container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
            except SDK_ERRORS as error:
                self.left.append(f"container {container.name} ({error})")
        if self.network is not None:
            try:
                self.network.remove()
            except docker.errors.NotFound:
                pass
            except SDK_ERRORS as error:
                self.left.append(f"network {self.place.network} ({error})")
        self.mark("teardown_done")
        return codes

    def run(self) -> Outcome:
        ok, message = False, ""
        try:
            self.create_network()
            servers = [r for r in self.roles.values() if r.is_server]
            for role in servers:  # all start at once: each spends seconds importing TensorFlow
                self.start(role)
            for role in servers:
                self.wait_reachable(role)
            self.mark("servers_reachable")
            for role in self.roles.values():
                if not role.is_server:
                    self.start(role)
            code = self.watch()
            ok = code == 0
            message = "" if ok else str(self._died(self.main, ""))
        except (ClusterError, DockerError) as exc:
            message = str(exc)
        finally:
            codes = self.teardown()
        if self.left:
            message = (message + "\n" if message else "") + "could not remove: " + ", ".join(self.left)
        return Outcome(ok and not self.left, message, codes, {}, self.timings, self.cpu)
