"""The one place the kit runs external commands: it echoes what it runs and keeps the evidence."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from reprokit.errors import CommandError

Echo = Callable[[str], None]


def _silent(_: str) -> None:
    pass


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    echo: Echo = _silent,
    hint: str = "",
    tail_lines: int = 20,
) -> str:
    """Run ``argv`` to completion and return its combined output; raise CommandError on failure."""
    argv = [str(a) for a in argv]
    echo("$ " + shlex.join(argv))
    proc = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-tail_lines:])
        raise CommandError(argv, proc.returncode, tail, hint)
    return proc.stdout
