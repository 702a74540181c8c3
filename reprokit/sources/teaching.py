"""The patches as teaching material: hunk by hunk with the why, or as a normal diff."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from reprokit.errors import KitError
from reprokit.sources import series
from reprokit.sources.patches import Patch


class Block(NamedTuple):
    """One change as `diff` (normal format) names it, e.g. '51c52', and where it lands."""

    name: str
    removed: list[str]
    added: list[str]
    at: int  # 0-based line of the patched file where the change starts (or would be inserted)


def _span(start: int, end: int) -> str:
    """A normal-diff line range: 1-based; 'start,end' or one number."""
    return str(start) if end - start <= 1 else f"{start + 1},{end}"


def normal_blocks(before: list[str], after: list[str]) -> list[Block]:
    """Change blocks as `diff` (normal format) names them: Block('51c52', removed, added, at)."""
    blocks = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "insert":
            name = f"{i1}a{_span(j1, j2) if j2 - j1 > 1 else j2}"
        elif tag == "delete":
            name = f"{_span(i1, i2) if i2 - i1 > 1 else i2}d{j1}"
        else:
            name = f"{_span(i1, i2) if i2 - i1 > 1 else i2}c{_span(j1, j2) if j2 - j1 > 1 else j2}"
        blocks.append(Block(name, before[i1:i2], after[j1:j2], j1))
    return blocks


def normal_diff(before: list[str], after: list[str]) -> str:
    """The whole normal diff, as the article prints it."""
    out = []
    for name, removed, added, _ in normal_blocks(before, after):
        out.append(name)
        out.extend("< " + l for l in removed)
        if removed and added:
            out.append("---")
        out.extend("> " + l for l in added)
    return "\n".join(out) + ("\n" if out else "")


def explain(patch: Patch, before: list[str], after: list[str]) -> str:
    """The teaching view: the patch's why, then every hunk and every change with its why. A change
    belongs to the hunk whose lines of the patched file it lands in (difflib and diff may cut a
    hunk into changes differently, so changes are placed by position, not counted)."""
    whys = patch.changes_why()
    blocks = normal_blocks(before, after)
    lines = [f"== {patch.name}: {patch.summary}", ""]
    lines += ["   " + l for l in patch.fields["Description"].splitlines()[1:]]
    lines.append("")
    for number, hunk in enumerate(patch.hunks, start=1):
        title = hunk.section_header or ""
        lines.append(f"-- hunk {number}/{len(patch.hunks)}  @@ -{hunk.source_start},{hunk.source_length} "
                     f"+{hunk.target_start},{hunk.target_length} @@  {title}")
        lines.extend("   " + str(l).rstrip("\n") for l in hunk)
        first = hunk.target_start - 1
        for block in blocks:
            if first <= block.at <= first + hunk.target_length:
                why = whys.get(block.name, "(no Change- field explains this change)")
                lines.append(f"   {block.name}: " + why.replace("\n", "\n" + " " * (len(block.name) + 5)))
        lines.append("")
    return "\n".join(lines)


def patches_making(walked: series.Walk, targets: Sequence[str]) -> list[str]:
    """The names of the patches that make ``targets`` (trainer files), each file back to upstream,
    in series order: what a student reads to get from the tutorial's trainer to a program."""
    wanted: set[str] = set()
    made = {patch.target_name: patch for patch, _ in walked.applied()}
    for target in targets:
        while target in made:
            wanted.add(made[target].name)
            target = made[target].source_name
    return [patch.name for patch, _ in walked.applied() if patch.name in wanted]


def lessons(upstream_dir: Path, patches_dir: Path, *, normal: bool = False, patch: str | None = None,
            making: Sequence[str] = ()) -> list[str]:
    """Every patch of the series as a lesson, or as the normal diff the article prints, each
    against the file it is applied to: upstream's, or the trainer an earlier patch made. ``patch``
    (a file name, with or without .patch) shows that one alone; ``making`` (trainer files) the
    patches that make them, in series order."""
    built = series.walk(upstream_dir, patches_dir, strict=True)
    names = [p.name for p, _ in built.applied()]
    only: Sequence[str] | None = patches_making(built, making) if making else None
    if patch is not None:
        wanted = patch if patch.endswith(".patch") else patch + ".patch"
        if wanted not in names:
            raise KitError(f"no patch named {patch} in patches/series", f"name one of: {', '.join(names)}")
        only = [wanted]
    upstream = {p.name for p in upstream_dir.glob("*.py")}
    texts = []
    for applied, before in built.applied():
        if only is not None and applied.name not in only:
            continue
        after = built.files[applied.target_name].splitlines()
        if normal:
            source, target = applied.source_name, applied.target_name
            shown = f"upstream/{source}" if source in upstream else source
            texts.append(f"$ diff {shown} {target}\n" + normal_diff(before, after).rstrip("\n"))
        else:
            texts.append(explain(applied, before, after))
    return texts
