"""The README stays honest: its commands, its task list and CI agree with the code."""

from __future__ import annotations

import re

import tasks
from tests.support import REPO

ROOT = REPO
README = (ROOT / "README.md").read_text()


def _first_commands() -> list[str]:
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    return [l.strip() for l in block.splitlines() if l.strip() and not l.strip().startswith("#")]


def test_readme_starts_with_the_main_job_and_the_test_command():
    """The README's first code block holds exactly two commands: the main job, then the tests."""
    commands = _first_commands()
    assert 2 == len(commands)
    assert commands[0].endswith("invoke reproduce")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run calls the same test command the README gives."""
    assert _first_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_every_task_is_in_the_readme():
    """Each task of the collection is listed in the README as `invoke <name>`."""
    names = sorted(tasks.ns.task_names)
    missing = [n for n in names if f"invoke {n}" not in README]
    assert [] == missing


def test_every_patch_in_series_has_a_description():
    """Every patch named in patches/series opens with a DEP-3 Description: field."""
    series = [l.split("#")[0].strip() for l in (ROOT / "patches" / "series").read_text().splitlines()]
    for name in filter(None, series):
        head = (ROOT / "patches" / name).read_text().split("\n---", 1)[0]
        assert re.search(r"^Description: \S", head, re.M), name


def test_changelog_has_an_unreleased_section():
    """CHANGELOG.md follows Keep a Changelog, with an Unreleased section on top."""
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text


def test_every_test_the_readme_cites_exists():
    """The faults table names tests as evidence: each `file::name` (or `...::name`, the file of
    the cite before it) is a test function in that file, and each cited file exists."""
    cited = re.findall(r"`(tests/[\w/]+\.py|\.\.\.)(?:::(\w+))?`", README)
    assert len(cited) > 20
    missing, current = [], ""
    for path, name in cited:
        current = current if path == "..." else path
        source = ROOT / current
        if not source.is_file():
            missing.append(current)
        elif name and not re.search(rf"^def {name}\(", source.read_text(), re.M):
            missing.append(f"{current}::{name}")
    assert [] == missing
