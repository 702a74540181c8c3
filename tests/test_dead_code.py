"""No dead code: vulture finds nothing unused in the package and tasks.py, beyond the names
tests/support/vulture_allowlist.py excuses, each with its reason.

A function that only the tests call is dead too: the tests are left out of vulture's reading on
purpose, so that a test cannot keep a removed feature alive.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

ALLOWLIST = REPO / "tests" / "support" / "vulture_allowlist.py"


def vulture(*paths: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vulture", *map(str, paths)], cwd=REPO,
                          capture_output=True, text=True, check=False)


def test_vulture_finds_no_unused_code_in_the_package() -> None:
    result = vulture("reprokit", "tasks.py", ALLOWLIST)
    assert ("", 0) == (result.stdout, result.returncode), result.stderr


def test_vulture_finds_a_function_nothing_calls(tmp_path: Path) -> None:
    """The check fails where it should: on a module with a function no one calls."""
    module = tmp_path / "sample.py"
    module.write_text("def used() -> int:\n    return 1\n\n\ndef forgotten() -> int:\n    return 2\n\n\nprint(used())\n")
    result = vulture(module)
    assert 3 == result.returncode  # vulture's exit code for "dead code found"
    assert "unused function 'forgotten'" in result.stdout
    assert "'used'" not in result.stdout


def test_every_excused_name_is_still_defined_in_the_package() -> None:
    """An entry whose name left the package would excuse the next dead thing of that name."""
    names = re.findall(r"^_\.(\w+)$", ALLOWLIST.read_text(), re.MULTILINE)
    assert len(names) > 40
    package = "\n".join(p.read_text() for p in (REPO / "reprokit").rglob("*.py"))
    assert [] == [n for n in names if not re.search(rf"\b{n}\b", package)]
