"""The patches as teaching material: hunk by hunk with the why, or as a normal diff."""

from __future__ import annotations

import difflib
from pathlib import Path

from reprokit.sources import series
from reprokit.sources.patches import Patch


def _span(start: int, end: int) -> str:
    """A normal-diff line range: 1-based; 'start,end' or one number."""
    return str(start) if end - start <= 1 else f"{start + 1},{end}"


def normal_blocks(before: list[str], after: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """Change blocks as `diff` (normal format) names them: ('51c52', removed, added)."""
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
        blocks.append((name, before[i1:i2], after[j1:j2]))
    return blocks


def normal_diff(before: list[str], after: list[str]) -> str:
    """The whole normal diff, as the article prints it."""
    out = []
    for name, removed, added in normal_blocks(before, after):
        out.append(name)
        out.extend("< " + l for l in removed)
        if removed and added:
            out.append("---")
        out.extend("> " + l for l in added)
    return "\n".join(out) + ("\n" if out else "")


def explain(patch: Patch, before: list[str], after: list[str]) -> str:
    """The teaching view: the patch's why, then every hunk and every change with its why."""
    whys = patch.changes_why()
    blocks = normal_blocks(before, after)
    lines = [f"== {patch.name}: {patch.summary}", ""]
    lines += ["   " + l for l in patch.fields["Description"].splitlines()[1:]]
    lines.append("")
    block_iter = iter(blocks)
    for number, hunk in enumerate(patch.hunks, start=1):
        changed = sum(1 for l in hunk if l.line_type in "+-")
        title = hunk.section_header or ""
        lines.append(f"-- hunk {number}/{len(patch.hunks)}  @@ -{hunk.source_start},{hunk.source_length} "
                     f"+{hunk.target_start},{hunk.target_length} @@  {title}")
        lines.extend("   " + str(l).rstrip("\n") for l in hunk)
        taken = 0
        while taken < changed:
            name, removed, added = next(block_iter)
            taken += len(removed) + len(added)
            why = whys.get(name, "(no Change- field explains this change)")
            lines.append(f"   {name}: " + why.replace("\n", "\n" + " " * (len(name) + 5)))
        lines.append("")
    return "\n".join(lines)


def lessons(upstream_dir: Path, patches_dir: Path, *, normal: bool = False) -> list[str]:
    """Every patch of the series as a lesson (or as the normal diff the article prints), each
    against the file it is applied to: upstream's, or the trainer an earlier patch made."""
    built = series.walk(upstream_dir, patches_dir, strict=True)
    upstream = {p.name for p in upstream_dir.glob("*.py")}
    texts = []
    for patch, before in built.applied():
        after = built.files[patch.target_name].splitlines()
        if normal:
            shown = f"upstream/{patch.source_name}" if patch.source_name in upstream else patch.source_name
            texts.append(f"$ diff {shown} {patch.target_name}\n" + normal_diff(before, after).rstrip("\n"))
        else:
            texts.append(explain(patch, before, after))
    return texts
