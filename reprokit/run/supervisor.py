"""Run a set of roles as processes: start them in order, probe the servers, watch
them all while the main role runs, and always tear every one of them down.

It runs as a process of its own (`python -m reprokit.run.supervisor PLAN`), inside
the private network namespace when the local backend has one, and writes its
outcome as JSON: the launcher outside only starts it, follows the logs and
reads the outcome.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from reprokit.errors import ClusterError
from reprokit.run.roles import RoleSpec

TERM_GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Plan:
    """What to run: roles in start order; the run ends when `main` exits."""

    run_dir: str
    roles: list[RoleSpec]
    main: str
    probe_timeout_s: float = 60.0
    isolated: bool = False

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "roles": [r.to_json() for r in self.roles]}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        data = json.loads(text)
        data["roles"] = [RoleSpec.from_json(r) for r in data["roles"]]
        return cls(**data)


@dataclass
class Outcome:
    ok: bool
    message: str
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # seconds since the supervisor started
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per role, last sample before exit
    interfaces: list[str] = field(default_factory=list)  # the network the roles saw: ['lo'] when isolated


def log_path(run_dir: str | Path, role: str) -> Path:
    return Path(run_dir) / f"{role}.log"


def tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _die_with_parent() -> None:
    # If the supervisor itself is killed (SIGKILL), its roles must not outlive it.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Supervisor:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.procs: dict[str, subprocess.Popen] = {}
        self.pumps: list[threading.Thread] = []
        self.stop = threading.Event()
        self.started = time.monotonic()
        # The wall-clock start, so that timings can be set against the logs' timestamps.
        self.timings: dict[str, float] = {"epoch_started": round(time.time(), 3)}
        self.cpu: dict[str, float] = {}

    def mark(self, name: str) -> None:
        self.timings[name] = round(time.monotonic() - self.started, 3)

    def _pump(self, proc: subprocess.Popen, path: Path) -> None:
        # Each line gets the time it arrived: servers print few timestamps of their own.
        with path.open("a", encoding="utf-8") as log:
            for line in proc.stdout:  # type: ignore[union-attr]
                log.write(f"{datetime.now().isoformat(timespec='microseconds')} | {line}")
                log.flush()

    def start(self, role: RoleSpec) -> None:
        path = log_path(self.plan.run_dir, role.name)
        argv = (["taskset", "-c", role.cpus] if role.cpus else []) + role.argv
        with path.open("a", encoding="utf-8") as log:
            log.write(f"{datetime.now().isoformat(timespec='microseconds')} | reprokit: $ {' '.join(argv)}\n")
        proc = subprocess.Popen(
            argv, env={**os.environ, **role.env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace", preexec_fn=_die_with_parent,
        )
        self.procs[role.name] = proc
        pump = threading.Thread(target=self._pump, args=(proc, path), daemon=True)
        pump.start()
        self.pumps.append(pump)
        self.mark(f"{role.name}_started")

    def _died(self, name: str, when: str) -> ClusterError:
        path = log_path(self.plan.run_dir, name)
        code = self.procs[name].returncode
        return ClusterError(
            f"the {name} role exited with code {code} {when}",
            f"see {path}; its last lines:\n{tail(path)}",
        )

    def wait_reachable(self, role: RoleSpec) -> None:
        assert role.address is not None
        host, port = role.address.rsplit(":", 1)
        deadline = time.monotonic() + self.plan.probe_timeout_s
        while not self.stop.is_set():
            if self.procs[role.name].poll() is not None:
                raise self._died(role.name, f"before {role.address} became reachable")
            try:
                with socket.create_connection((host, int(port)), timeout=1):
                    self.mark(f"{role.name}_reachable")
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the {role.name} role ({role.address}) is not reachable after "
                    f"{self.plan.probe_timeout_s:.0f} s",
                    f"is the {role.name} server running? see {log_path(self.plan.run_dir, role.name)}",
                )
            time.sleep(0.2)

    def watch(self) -> int:
        """Wait for the main role; fail as soon as any other role dies."""
        main = self.procs[self.plan.main]
        while not self.stop.is_set():
            self.cpu.update(self.cpu_seconds())  # sampled: a reaped process has no /proc entry
            code = main.poll()
            if code is not None:
                self.mark("main_exited")
                return code
            for name, proc in self.procs.items():
                if name != self.plan.main and proc.poll() is not None:
                    raise self._died(name, f"while the {self.plan.main} was running")
            time.sleep(0.2)
        raise ClusterError("interrupted: every role was stopped")

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) each live role has used so far, from /proc (Linux)."""
        ticks = os.sysconf("SC_CLK_TCK")
        used = {}
        for name, proc in self.procs.items():
            try:
                fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            used[name] = round((int(fields[11]) + int(fields[12])) / ticks, 2)
        return used

    def teardown(self) -> dict[str, int | None]:
        self.cpu.update(self.cpu_seconds())  # before the roles are stopped: /proc forgets them
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + TERM_GRACE_S
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pump in self.pumps:
            pump.join(timeout=2)
        self.mark("teardown_done")
        return {name: proc.returncode for name, proc in self.procs.items()}

    def run(self) -> Outcome:
        ok, message = False, ""
        try:
            # Servers start in order without waiting for each other (TensorFlow's
            # import takes seconds); all must be reachable before the main role.
            servers = [r for r in self.plan.roles if r.is_server]
            for role in servers:
                self.start(role)
            for role in servers:
                self.wait_reachable(role)
            self.mark("servers_reachable")
            for role in self.plan.roles:
                if self.stop.is_set():
                    raise ClusterError("interrupted: every role was stopped")
                if not role.is_server:
                    self.start(role)
            code = self.watch()
            ok = code == 0
            message = "" if ok else str(self._died(self.plan.main, ""))
        except ClusterError as exc:
            message = str(exc)
        finally:
            self.mark("teardown_started")
            codes = self.teardown()
        return Outcome(ok, message, codes, {n: p.pid for n, p in self.procs.items()}, self.timings, self.cpu)


def main(plan_path: str) -> int:
    plan = Plan.from_json(Path(plan_path).read_text())
    if plan.isolated:
        from reprokit.run.netns import bring_loopback_up

        bring_loopback_up()
    _die_with_parent()
    supervisor = Supervisor(plan)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: supervisor.stop.set())
    outcome = supervisor.run()
    from reprokit.run.netns import interfaces

    outcome.interfaces = interfaces()
    out = Path(plan.run_dir) / f"{plan.main}.outcome.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(outcome), indent=1))
    tmp.rename(out)
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))


def still_running(outcomes: "dict[str, Outcome]") -> list[int]:
    """PIDs of any role of these outcomes that is somehow still alive (should be none)."""
    alive = []
    for outcome in outcomes.values():
        for pid in outcome.pids.values():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            alive.append(pid)
    return alive
