"""The README and the book in docs/ stay honest: their commands, tasks, links and cited tests agree
with the code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import tasks
from tests.support import REPO

ROOT = REPO
README = (ROOT / "README.md").read_text()

# The book: README.md and the chapters in docs/, checked together.
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
CHAPTERS = [p for p in sorted(DOCS.glob("*.md")) if p.name != "README.md"]
README_MAX_LINES = 200
TASK_CELL_MAX_CHARS = 120

FENCED_BLOCK = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
# A cell separator is a `|` that is not escaped (`spread\|article` stays inside its cell).
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")
# [text](target) and ![alt](target); text may hold inline code, the target holds no space.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^)\s]+)\)")
# `tests/run/test_hosts.py`, `tests/run/test_hosts.py::test_name`, or `...::test_name`: the
# file of the cite before it, as the faults table writes a second test of the same file.
TEST_CITE = re.compile(r"`(tests/[\w/]+\.py|\.\.\.)(?:::(\w+))?`")


def _first_commands() -> list[str]:
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    return [l.strip() for l in block.splitlines() if l.strip() and not l.strip().startswith("#")]


def test_readme_starts_with_the_main_job_and_the_test_command() -> None:
    """The README's first code block holds exactly two commands: the main job, then the tests."""
    commands = _first_commands()
    assert 2 == len(commands)
    assert commands[0].endswith("invoke reproduce")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    """.ci/run calls the same test command the README gives."""
    assert _first_commands()[1] in (ROOT / ".ci" / "run").read_text()


def test_every_patch_in_series_has_a_description() -> None:
    """Every patch named in patches/series opens with a DEP-3 Description: field."""
    series = [l.split("#")[0].strip() for l in (ROOT / "patches" / "series").read_text().splitlines()]
    for name in filter(None, series):
        head = (ROOT / "patches" / name).read_text().split("\n---", 1)[0]
        assert re.search(r"^Description: \S", head, re.M), name


def test_changelog_has_an_unreleased_section() -> None:
    """CHANGELOG.md follows Keep a Changelog, with an Unreleased section on top."""
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text


def _prose(page: Path) -> str:
    """The page without its fenced code blocks, whose `#` lines are no headings and hold no links."""
    return FENCED_BLOCK.sub("", page.read_text())


def _github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower-case, punctuation dropped, each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives the page's headings; a repeated heading gets -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", _prose(page), re.M):
        anchor = _github_anchor(heading)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        anchors.add(anchor if count == 0 else f"{anchor}-{count}")
    return anchors


def _relative_links(page: Path) -> list[str]:
    """The page's link targets that point into the repository (not http:, https:, mailto:)."""
    targets = LINK.findall(_prose(page))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def _broken_link(page: Path, target: str) -> str | None:
    """Why `target`, written on `page`, does not resolve; None when it does."""
    path, _, anchor = target.partition("#")
    destination = (page.parent / path).resolve() if path else page
    if not destination.exists():
        return f"{target}: {destination} does not exist"
    if anchor and anchor not in _anchors(destination):
        return f"{target}: {destination.name} has no heading with anchor #{anchor}"
    return None


def _table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of each body row of the first table under `## heading`."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [l.strip() for l in section.splitlines() if l.strip().startswith("|")]
    body = lines[2:]  # the header row and the --- row
    return [[c.strip() for c in CELL_SEPARATOR.split(l)[1:-1]] for l in body]


def test_readme_has_at_most_200_lines() -> None:
    """The README is the front page, short enough to read; the chapters live in docs/."""
    assert len(README.splitlines()) <= README_MAX_LINES


def test_every_task_has_a_row_of_its_own_in_the_readme_tasks_table() -> None:
    """Each task of the collection, and each alias, is named once as `invoke <name>` in the first
    cell of a row, and no row names a task the collection lacks."""
    named = [re.findall(r"`invoke ([\w-]+)", row[0]) for row in _table_rows(README, "Tasks")]
    documented = sorted(name for names in named for name in names)
    aliases = [alias for names in tasks.ns.task_names.values() for alias in names]
    expected = sorted([*tasks.ns.task_names, *aliases])
    assert expected == documented


def test_the_readme_tasks_table_has_short_cells() -> None:
    """No cell of the tasks table is longer than a line a newcomer reads at a glance."""
    long_cells = [c for row in _table_rows(README, "Tasks") for c in row if len(c) > TASK_CELL_MAX_CHARS]
    assert [] == long_cells


def test_every_chapter_is_linked_from_the_readme_and_from_the_docs_index() -> None:
    """A chapter that no index links to is a chapter nobody finds."""
    readme_links = {(ROOT / t.partition("#")[0]).resolve() for t in _relative_links(ROOT / "README.md")}
    index_links = {(DOCS / t.partition("#")[0]).resolve() for t in _relative_links(DOCS / "README.md")}
    chapters = {p.resolve() for p in CHAPTERS}
    assert set() == chapters - readme_links
    assert set() == chapters - index_links


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    """Links between pages, to images and to repository files, and their #anchors, all land."""
    links = [(page, target) for page in PAGES for target in _relative_links(page)]
    assert len(links) > 30
    broken = [f"{page.relative_to(ROOT)}: {why}" for page, target in links
              if (why := _broken_link(page, target)) is not None]
    assert [] == broken


def test_every_test_the_readme_or_the_docs_cite_exists() -> None:
    """Each cited `file::name` (or `...::name`, the file of the cite before it) is a test
    function in that file, and each cited file exists."""
    missing, count = [], 0
    for page in PAGES:
        current = ""
        for path, name in TEST_CITE.findall(page.read_text()):
            count += 1
            current = current if path == "..." else path
            source = ROOT / current
            if not source.is_file():
                missing.append(f"{page.name}: {current}")
            elif name and not re.search(rf"^\s*(?:async\s+)?def {name}\(", source.read_text(), re.M):
                missing.append(f"{page.name}: {current}::{name}")
    assert count > 20
    assert [] == missing


def test_the_faults_table_names_a_test_for_every_fault() -> None:
    """Each row of the faults table cites at least one test as its evidence."""
    rows = _table_rows((DOCS / "faults-and-security.md").read_text(), "Faults and what you see")
    assert len(rows) > 15
    without_evidence = [row[0] for row in rows if not TEST_CITE.search(row[-1])]
    assert [] == without_evidence


def test_the_github_anchor_rule_drops_punctuation_and_joins_words_with_hyphens() -> None:
    """The anchor rule the link check relies on, on headings this book has."""
    swarm = "Swarm: beyond one machine (`--backend swarm`)"
    assert "swarm-beyond-one-machine---backend-swarm" == _github_anchor(swarm)
    target = "Why not 1.85x (the target) on these 2 CPUs"
    assert "why-not-185x-the-target-on-these-2-cpus" == _github_anchor(target)
    assert "the-articles-commands-and-the-kits" == _github_anchor("The article's commands and the kit's")


# "see <path>[#anchor]" in help texts, errors, patch headers, upstream/ and the docs: each names a
# file of this repository (from its root, or beside the file that says it) and a heading there.
POINTER = re.compile(r"\bsee:?\s+(?:the\s+|its\s+)?`?((?:\.\./)*[\w.-]+(?:/[\w.-]+)*\.(?:md|py|yaml|patch|json)"
                     r"|[\w-]+/[\w./-]*)(#[\w-]+)?", re.IGNORECASE)
# A pointer at a README section by its words rots when the section moves (they did, to docs/).
VAGUE_POINTER = re.compile(r"\bsee\b[^.;:()]{0,20}\bREADME\b(?!\.md)|\bREADME's\s+[A-Z]\w+|\bkit's\s+README\b")


def _pointing_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in listed.split() if not name.startswith("tests/") and name != "CHANGELOG.md"
            and Path(name).suffix in (".py", ".md", ".patch", ".yaml", "") and (ROOT / name).is_file()]


def _broken_pointers(path: Path) -> list[str]:
    """The pointers of one file that lead nowhere, each with why."""
    text = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
    broken = [f"a README section named in words: ...{m.group(0)}..." for m in VAGUE_POINTER.finditer(text)]
    for match in POINTER.finditer(text):
        target, anchor = match.group(1).rstrip("./"), (match.group(2) or "")[1:]
        found = [p for p in (ROOT / target, path.parent / target) if p.resolve().is_relative_to(ROOT) and p.exists()]
        if not found:
            broken.append(f"{target}: no such file in the repository")
        elif anchor and anchor not in _anchors(found[0]):
            broken.append(f"{target}#{anchor}: no such heading")
    return broken


def test_every_see_pointer_resolves_inside_the_repository() -> None:
    broken = {str(p.relative_to(ROOT)): found for p in _pointing_files() if (found := _broken_pointers(p))}
    assert {} == broken


def test_the_pointer_check_fails_on_a_missing_file_a_missing_heading_and_a_vague_readme(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('hint = "see docs/nowhere.md"\nother = "see docs/article.md#no-such-part"\n'
                      'third = "run it (see README)"\nfine = "see docs/article.md#the-articles-set-up"\n'
                      'outside = "see ../shared/spec/upstream.md"\n')
    assert ["a README section named in words: ...see README...", "docs/nowhere.md: no such file in the repository",
            "docs/article.md#no-such-part: no such heading",
            "../shared/spec/upstream.md: no such file in the repository"] == _broken_pointers(sample)
