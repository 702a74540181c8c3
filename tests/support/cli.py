"""The verbs as a person runs them: `python -m invoke ...` in a runnable copy of the kit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def invoke(kit: Path, *args: str, env: Mapping[str, str] | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run a task of the kit copy in ``kit`` as a subprocess; its exit code and output."""
    full = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    full.pop("PYTHONPATH", None)  # the copy's own reprokit/, found beside its tasks.py
    return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=kit, env=full,
                          capture_output=True, text=True, timeout=timeout)


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one `error:` line a failing task prints, with the hint lines that follow it."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert 1 == len(errors), result.stderr
    return result.stderr[result.stderr.index("error: "):]
