"""A role as a process on this machine: the local backend's `RoleHandle`.

The process is started through two small prefix programs rather than a `preexec_fn` (which is
not safe while pump threads run): `setpriv --pdeathsig KILL` so that it dies with the
supervisor even if the supervisor is killed with SIGKILL, and `taskset -c CPUS` to pin it.
An `enter` prefix (`ip netns exec <ns>`, for the hosts backend) puts it into another network
namespace first.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from signal import SIGKILL, SIGTERM, Signals

from reprokit import commands
from reprokit.errors import ClusterError
from reprokit.names import log_path
from reprokit.run.logfiles import LogPump, stamped
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome, signal_phrase

DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL", "--"]


def role_argv(role: RoleSpec, enter: Sequence[str] = ()) -> list[str]:
    """The command line that runs ``role``: in its namespace, dying with us, pinned."""
    pin = ["taskset", "-c", role.cpus] if role.cpus else []
    return [*enter, *DIE_WITH_PARENT, *pin, *role.argv]


class ProcessHandle:
    """One role as a child process; its output is pumped into its log, line by line. A restart
    (faults.py) is a new handle of the same role, its next incarnation, with a log of its own."""

    def __init__(self, role: RoleSpec, run_dir: str | Path, *, enter: Sequence[str] = (),
                 probe_host: str | None = None, incarnation: int = 1) -> None:
        self.spec = role
        self.run_dir, self.enter = run_dir, tuple(enter)
        self.argv = role_argv(role, enter)
        self.pid: int | None = None
        self.proc: subprocess.Popen[str] | None = None
        self.pump = LogPump(log_path(run_dir, role.name, incarnation))
        self.probe_host = probe_host  # where to connect to probe it, if not the host of its address

    def again(self, incarnation: int) -> ProcessHandle:
        return ProcessHandle(self.spec, self.run_dir, enter=self.enter, probe_host=self.probe_host,
                             incarnation=incarnation)

    def start(self) -> None:
        self.pump.note(commands.shown(self.argv))
        try:
            self.proc = commands.spawn(self.argv, env={**os.environ, **self.spec.env})
        except OSError as error:
            raise ClusterError(f"could not start the {self.spec.name} role: {error}",
                               f"is `{self.argv[0]}` installed? (setpriv and taskset come with util-linux)") from error
        self.pid = self.proc.pid
        self.pump.start(stamped(line) for line in self.proc.stdout)  # type: ignore[union-attr]

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def unreachable(self) -> str:
        assert self.spec.address is not None
        host, port = self.spec.address.rsplit(":", 1)
        try:
            with socket.create_connection((self.probe_host or host, int(port)), timeout=1):
                return ""
        except OSError as error:
            return str(error)

    def cpu_seconds(self) -> float | None:
        """From /proc (Linux); None once the process is gone."""
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def terminate(self) -> None:
        self.signal(SIGTERM)

    def kill(self) -> None:
        self.signal(SIGKILL)

    def signal(self, signum: Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int | None:
        if self.proc is None:
            return 0
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def death(self) -> str:
        code = self.returncode()
        return f"exited with code {code}{signal_phrase(code)}"

    def pump_error(self) -> str:
        return self.pump.error

    def release(self) -> list[str]:
        self.pump.join()
        if self.proc is not None and self.proc.poll() is None:
            return [f"process {self.pid} ({self.spec.name}) still runs after SIGKILL"]
        return []


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (someone else's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def still_running(outcomes: dict[str, Outcome]) -> list[int]:
    """PIDs of any role of these outcomes that is somehow still alive (should be none)."""
    return [pid for outcome in outcomes.values() for pid in outcome.pids.values() if pid_alive(pid)]
