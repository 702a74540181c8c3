"""The one place the kit runs external commands: it echoes what it runs and keeps the evidence.

`run` waits for a command and raises with its output on failure; `attempt` waits and returns the
exit code and output for the caller to judge; `spawn` starts a long-running one (a role, a
supervisor) and returns the process. Each echoes the command as a person could type it again.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from reprokit.errors import CommandError

Echo = Callable[[str], None]


def silent(_: str) -> None:
    """An Echo that shows nothing."""


def shown(argv: Sequence[str]) -> str:
    """The command line as a person would type it, quoted where the shell needs it."""
    return "$ " + shlex.join(str(a) for a in argv)


def attempt(argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
            echo: Echo = silent, timeout: float | None = None, live: bool = False) -> tuple[int, str]:
    """Run ``argv`` to completion; its exit code and combined output (code 127: not installed).

    ``live``: each line of output is also echoed as it comes, indented, so that a command that
    works for minutes (pip, debootstrap) shows that it works."""
    argv = [str(a) for a in argv]
    echo(shown(argv))
    if live:
        return _attempt_live(argv, cwd, env, echo)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=None if env is None else dict(env), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout)
    except FileNotFoundError as error:
        return 127, str(error)
    except subprocess.TimeoutExpired as error:
        output = error.output.decode(errors="replace") if isinstance(error.output, bytes) else (error.output or "")
        return 124, output + f"\n(stopped after {timeout} s)"
    return proc.returncode, proc.stdout


def _attempt_live(argv: list[str], cwd: Path | None, env: Mapping[str, str] | None, echo: Echo) -> tuple[int, str]:
    lines: list[str] = []
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=None if env is None else dict(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    except FileNotFoundError as error:
        return 127, str(error)
    with proc:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            echo("  " + line.rstrip())
    return proc.returncode, "".join(lines)


def run(argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
        echo: Echo = silent, hint: str = "", tail_lines: int = 20, timeout: float | None = None,
        live: bool = False) -> str:
    """Run ``argv`` to completion and return its combined output; raise CommandError on failure."""
    code, output = attempt(argv, cwd=cwd, env=env, echo=echo, timeout=timeout, live=live)
    if code != 0:
        tail = "\n".join(output.splitlines()[-tail_lines:])
        raise CommandError([str(a) for a in argv], code, tail, hint)
    return output


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None, echo: Echo = silent,
          stdout: int | IO[Any] | None = subprocess.PIPE, stderr: int | IO[Any] | None = subprocess.STDOUT,
          new_session: bool = False, text: bool = True) -> subprocess.Popen:
    """Start ``argv`` and return the process: stdin closed, stderr merged into stdout unless given.

    No ``preexec_fn``: it is not safe while other threads run (ours pump logs). What a child
    must do before it runs (die with its parent, a CPU set) is done by a prefix program
    (setpriv, taskset) in ``argv`` itself.
    """
    argv = [str(a) for a in argv]
    echo(shown(argv))
    return subprocess.Popen(argv, env=None if env is None else dict(env), stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr, text=text,
                            errors="replace" if text else None, start_new_session=new_session)
