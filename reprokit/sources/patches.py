"""The article's patches: parse them with unidiff and apply them strictly.

Strict means the dpkg-source policy: every context and removed line must match
the upstream file at the exact line the hunk names. No fuzz, no offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import unidiff

from reprokit.errors import PatchError

REQUIRED_FIELDS = ("Description", "Author", "Origin", "Forwarded", "Last-Update")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9,-]*):\s?(.*)$")
_FIX_PATCH = "fix the patch file (or restore it with `git checkout patches/`)"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?$")


@dataclass(frozen=True)
class Patch:
    """One reviewed patch: its DEP-3 header and the single file diff it holds."""

    name: str
    path: Path
    fields: dict[str, str]
    source_name: str
    target_name: str
    hunks: list[unidiff.Hunk] = field(repr=False)
    added: int
    removed: int

    @property
    def summary(self) -> str:
        return self.fields["Description"].splitlines()[0]

    def ablation(self) -> dict[str, list[int]]:
        """Named changes for an ablation: `Ablation-<name>: 1 2 4` fields, hunk numbers from 1."""
        groups = {k[len("Ablation-"):]: v for k, v in self.fields.items() if k.startswith("Ablation-")}
        try:
            return {name: [int(n) for n in hunks.split()] for name, hunks in groups.items()}
        except ValueError:
            raise PatchError(f"{self.path}: an Ablation- field lists something other than hunk numbers: {groups}",
                             "write them like `Ablation-input-pipeline: 1 2 4`", patch=self.name) from None

    def changes_why(self) -> dict[str, str]:
        """The per-change reasons: `Change-46a47: ...` fields keyed by '46a47'."""
        return {k[len("Change-"):]: v for k, v in self.fields.items() if k.startswith("Change-")}


def read_series(patches_dir: Path) -> list[Path]:
    """The patches named in `series`, in order (quilt style; '#' starts a comment)."""
    series = patches_dir / "series"
    if not series.is_file():
        raise PatchError(f"{series}: no series file", "create it: one patch file name per line")
    try:
        text = series.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise PatchError(f"{series}: not UTF-8 ({error.reason} at byte {error.start})",
                         "restore it with `git checkout patches/series`") from None
    names = [l.split("#", 1)[0].strip() for l in text.splitlines()]
    paths = [patches_dir / n for n in names if n]
    for p in paths:
        if not p.is_file():
            raise PatchError(f"{series} names {p.name}, which does not exist", _FIX_PATCH)
    return paths


def _parse_header(text: str, path: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("--- "):
            break
        if line[:1] in (" ", "\t") and current:
            body = line.strip()
            fields[current] += "\n" + ("" if body == "." else body)
            continue
        m = _FIELD.match(line)
        if m:
            current = m.group(1)
            fields[current] = m.group(2).strip()
        elif line.strip():
            current = None
    missing = [f for f in REQUIRED_FIELDS if f not in fields]
    if missing:
        raise PatchError(
            f"{path}: DEP-3 header lacks {', '.join(missing)}",
            "every patch opens with Description, Author, Origin, Forwarded and Last-Update",
            patch=path.name,
        )
    return fields


def parse_patch(path: Path) -> Patch:
    """Parse one patch file, rejecting anything a strict reviewer would."""
    raw = path.read_bytes()
    if b"\r\n" in raw:
        line_no = raw[: raw.index(b"\r\n")].count(b"\n") + 1
        raise PatchError(
            f"{path}: CRLF line ending at line {line_no}",
            "convert the patch to LF endings (e.g. `dos2unix " + str(path) + "`)",
            patch=path.name,
            line=line_no,
        )
    if not raw.strip():
        raise PatchError(f"{path}: is empty", "write the patch (DEP-3 header, then the unified diff) "
                         "or remove it from patches/series", patch=path.name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line_no = raw[: error.start].count(b"\n") + 1
        raise PatchError(
            f"{path}: line {line_no} is not UTF-8 (byte {raw[error.start:error.start + 1]!r} at offset {error.start})",
            "save the patch as UTF-8 (e.g. `iconv -f latin1 -t utf-8`), or restore it with `git checkout patches/`",
            patch=path.name, line=line_no,
        ) from None
    fields = _parse_header(text, path)
    _check_structure(text, path)
    try:
        patch_set = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise PatchError(f"{path}: not a valid unified diff: {exc}", _FIX_PATCH, patch=path.name) from exc
    if len(patch_set) != 1:
        raise PatchError(
            f"{path}: holds {len(patch_set)} file diffs, expected exactly 1", _FIX_PATCH, patch=path.name
        )
    (diff,) = patch_set
    if not list(diff):
        raise PatchError(f"{path}: has no hunks", _FIX_PATCH, patch=path.name)
    return Patch(
        name=path.name,
        path=path,
        fields=fields,
        source_name=_strip_prefix(diff.source_file),
        target_name=_strip_prefix(diff.target_file),
        hunks=list(diff),
        added=diff.added,
        removed=diff.removed,
    )


def _check_structure(text: str, path: Path) -> None:
    """Every line after the header is a file line, a hunk header or a line its hunk's counts promise.

    unidiff skips lines it cannot read, so a broken hunk header or a wrong count would
    silently drop a hunk or some lines; a strict reviewer rejects the file instead.
    """
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    first = next((i for i, l in enumerate(lines) if l.startswith("--- ")), len(lines))
    hunk, header, old, new = 0, "", 0, 0  # old, new: the lines the current hunk still owes

    def counts_error(what: str, number: int, expected: str, found: str) -> PatchError:
        return PatchError(f"{path}: hunk {hunk} ({header}) {what}",
                          "fix the counts in the hunk header (or restore it with `git checkout patches/`)",
                          patch=path.name, hunk=hunk, line=number, expected=expected, found=found)

    for number, line in enumerate(lines[first:], start=first + 1):
        if old or new:
            tag = line[:1]
            if tag not in (" ", "", "-", "+", "\\"):
                raise counts_error(f"ends at line {number}, short of its header's counts", number,
                                   f"{old} more source and {new} more target lines", line)
            old -= tag in (" ", "", "-")
            new -= tag in (" ", "", "+")
            if old < 0 or new < 0:
                raise counts_error(f"has more lines than its header counts, from line {number}", number,
                                   "no more lines in this hunk", line)
        elif line.startswith(("--- ", "+++ ")) or not line or (hunk and line.startswith("\\")):
            continue
        elif m := _HUNK_HEADER.match(line):
            hunk, header = hunk + 1, line[: line.index(" @@") + 3]
            old = int(m.group(2) if m.group(2) is not None else 1)
            new = int(m.group(4) if m.group(4) is not None else 1)
        elif hunk and line[:1] in (" ", "-", "+"):
            raise counts_error(f"has more lines than its header counts, from line {number}", number,
                               "the next hunk header or the end of the file", line)
        else:
            raise PatchError(f"{path}: line {number}: hunk {hunk + 1} has a broken header", _FIX_PATCH,
                             patch=path.name, hunk=hunk + 1, line=number,
                             expected="@@ -START,COUNT +START,COUNT @@", found=line)
    if old or new:
        raise counts_error("ends at the end of the file, short of its header's counts", len(lines),
                           f"{old} more source and {new} more target lines", "<end of file>")


def _strip_prefix(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def _side(hunk: unidiff.Hunk, keep: str) -> list[str]:
    return [l.value.rstrip("\n") for l in hunk if l.line_type in (" ", keep)]


def mismatches(patch: Patch, source: list[str]) -> list[PatchError]:
    """Every hunk line that does not match `source` at its stated place (empty: applies)."""
    errors = []
    for number, hunk in enumerate(patch.hunks, start=1):
        expected = _side(hunk, "-")
        start = hunk.source_start if hunk.source_length else hunk.source_start + 1
        for offset, want in enumerate(expected):
            line_no = start + offset
            found = source[line_no - 1] if line_no <= len(source) else None
            if found != want:
                errors.append(
                    PatchError(
                        f"{patch.name}: hunk {number} (@@ -{hunk.source_start},{hunk.source_length} @@) "
                        f"does not match {patch.source_name} at line {line_no}",
                        "upstream drifted from the reviewed patch: restore upstream/ "
                        "(`git checkout upstream/`) or re-review the patch",
                        patch=patch.name,
                        hunk=number,
                        line=line_no,
                        expected=want,
                        found="<end of file>" if found is None else found,
                    )
                )
                break
    return errors


def applied_to(patch: Patch, lines: list[str]) -> bool:
    """Whether `lines` already show every hunk's result at its target place."""
    for hunk in patch.hunks:
        start = hunk.target_start if hunk.target_length else hunk.target_start + 1
        want = _side(hunk, "+")
        if lines[start - 1 : start - 1 + len(want)] != want:
            return False
    return True


def problems(patch: Patch, source: list[str]) -> list[PatchError]:
    """Why `patch` does not apply strictly to `source`: 'already applied', or every mismatch."""
    errors = mismatches(patch, source)
    if errors and applied_to(patch, source):
        return [PatchError(
            f"{patch.name} is already applied to {patch.source_name}",
            "upstream/ must stay the original: restore it with `git checkout upstream/`",
            patch=patch.name,
        )]
    return errors


def apply(patch: Patch, source: list[str], hunks: list[int] | None = None) -> list[str]:
    """The patched lines; raises 'already applied' or the first mismatch (all via `problems`).
    With ``hunks`` (numbers from 1), only those hunks: one change of an ablation."""
    errors = problems(patch, source)
    if errors:
        raise errors[0]
    result: list[str] = []
    cursor = 0  # lines of `source` consumed so far
    for hunk in (h for n, h in enumerate(patch.hunks, start=1) if hunks is None or n in hunks):
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        result.extend(source[cursor:start])
        result.extend(_side(hunk, "+"))
        cursor = start + hunk.source_length
    result.extend(source[cursor:])
    return result
