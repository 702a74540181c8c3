"""The generated sources: upstream/ plus each patched trainer, built atomically.

The folder (build/patched by default) is only ever replaced whole: it is built
beside itself, the old one is renamed aside, the new one renamed in, and the old
one removed (reprokit.files.staged_folder), so a failed apply leaves the old one
(or none) and never a half-written one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from reprokit.errors import KitError, PatchError
from reprokit.files import staged_folder, write_json, write_text
from reprokit.sources import patches as patchlib
from reprokit.sources.upstream import read_lines, require_pristine

MARKER = ".reprokit-generated.json"


@dataclass(frozen=True)
class PatchState:
    """Whether one patch's output in the generated folder is there and current."""

    patch: str
    target: str
    state: str  # "applied" | "not applied" | "conflicting"
    detail: str = ""


@dataclass(frozen=True)
class ApplyResult:
    out_dir: Path
    files: list[str]
    already_applied: bool
    dry_run: bool


def expected_files(upstream_dir: Path, patches_dir: Path) -> dict[str, str]:
    """Every file the generated folder must hold, by name, with its content.

    A patch applies to the file it names: an upstream file, or the trainer an earlier patch of
    the series made (the lesson's patches are stacked on the article's trainers)."""
    require_pristine(upstream_dir)
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted(upstream_dir.glob("*.py"))}
    for path in patchlib.read_series(patches_dir):
        patch = patchlib.parse_patch(path)
        if patch.source_name not in files:
            raise PatchError(f"{patch.name} patches {patch.source_name}, which neither upstream/ nor an earlier "
                             "patch of the series makes", "fix the patch's --- line, or the order in patches/series",
                             patch=patch.name)
        if patch.target_name in files:
            raise PatchError(f"{patch.name} would overwrite {patch.target_name}", patch=patch.name)
        files[patch.target_name] = "\n".join(patchlib.apply(patch, files[patch.source_name].splitlines())) + "\n"
    return files


def source_lines(upstream_dir: Path, patches_dir: Path, patch: patchlib.Patch) -> list[str] | None:
    """What ``patch`` applies to, as lines: the upstream file, or what the earlier patches of the
    series make of upstream's files (None when neither is there, or an earlier patch fails).
    No checksum is asked for: verify reports a drifted upstream file in its own line."""
    upstream = upstream_dir / patch.source_name
    if upstream.is_file():
        return read_lines(upstream)
    made: dict[str, list[str]] = {}
    try:
        for path in patchlib.read_series(patches_dir):
            earlier = patchlib.parse_patch(path)
            if earlier.name == patch.name:
                break
            base = upstream_dir / earlier.source_name
            lines = read_lines(base) if base.is_file() else made.get(earlier.source_name)
            if lines is None or patchlib.problems(earlier, lines):
                return None
            made[earlier.target_name] = patchlib.apply(earlier, lines)
    except KitError:  # an earlier patch is malformed: its own check says how
        return None
    return made.get(patch.source_name)


def _fingerprint(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return digest.hexdigest()


def states(upstream_dir: Path, patches_dir: Path, out_dir: Path) -> list[PatchState]:
    """One line per patch: applied, not applied, or conflicting (with what differs)."""
    files = expected_files(upstream_dir, patches_dir)
    result = []
    for path in patchlib.read_series(patches_dir):
        patch = patchlib.parse_patch(path)
        target = out_dir / patch.target_name
        if not target.is_file():
            result.append(PatchState(patch.name, patch.target_name, "not applied"))
        elif target.read_text(encoding="utf-8") == files[patch.target_name]:
            result.append(PatchState(patch.name, patch.target_name, "applied"))
        else:
            result.append(
                PatchState(
                    patch.name, patch.target_name, "conflicting",
                    f"{target} differs from upstream + patch: run `invoke apply-patches --force`",
                )
            )
    return result


def apply_all(
    upstream_dir: Path, patches_dir: Path, out_dir: Path, *, dry_run: bool = False, force: bool = False
) -> ApplyResult:
    """Build the generated folder; report 'already applied' when it is current."""
    files = expected_files(upstream_dir, patches_dir)
    names = sorted(files)
    if _is_current(out_dir, files):
        return ApplyResult(out_dir, names, already_applied=True, dry_run=dry_run)
    if out_dir.exists() and not (out_dir / MARKER).is_file() and not force:
        raise KitError(
            f"{out_dir} exists but was not made by the kit",
            "move it away, or pass --force to replace it",
        )
    edited = _edited_by_hand(out_dir) if out_dir.exists() and not force else []
    if edited:
        raise KitError(
            f"{out_dir} was edited by hand since the kit wrote it: {', '.join(edited)}",
            "copy your changes elsewhere, or pass --force to replace them",
        )
    blocker = next((p for p in out_dir.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise KitError(f"{blocker} is a file, so {out_dir} cannot be made",
                       "move the file away, or set reprokit.sources_dir elsewhere in invoke.yaml")
    if dry_run:
        return ApplyResult(out_dir, names, already_applied=False, dry_run=True)
    with staged_folder(out_dir) as staging:
        for name, text in files.items():
            write_text(staging / name, text)
        sums = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in files.items()}
        write_json(staging / MARKER, {"fingerprint": _fingerprint(files), "files": names, "sha256": sums})
    return ApplyResult(out_dir, names, already_applied=False, dry_run=False)


def _is_current(out_dir: Path, files: dict[str, str]) -> bool:
    marker = out_dir / MARKER
    if not marker.is_file():
        return False
    if json.loads(marker.read_text()).get("fingerprint") != _fingerprint(files):
        return False
    return all(
        (out_dir / n).is_file() and (out_dir / n).read_text(encoding="utf-8") == t for n, t in files.items()
    )


def _edited_by_hand(out_dir: Path) -> list[str]:
    """The files the kit wrote into `out_dir` whose content changed since (a deleted one is no loss)."""
    marker = out_dir / MARKER
    if not marker.is_file():
        return []
    recorded = json.loads(marker.read_text()).get("sha256", {})
    return sorted(n for n, digest in recorded.items()
                  if (out_dir / n).is_file() and hashlib.sha256((out_dir / n).read_bytes()).hexdigest() != digest)


def clean(out_dir: Path, *, dry_run: bool = False) -> bool:
    """Undo: remove the generated folder (only one the kit made). True if removed (dry run: would be)."""
    if not out_dir.exists():
        return False
    if not (out_dir / MARKER).is_file():
        raise KitError(f"{out_dir} was not made by the kit; not removing it", "remove it by hand if you mean to")
    if not dry_run:
        shutil.rmtree(out_dir)
    return True
