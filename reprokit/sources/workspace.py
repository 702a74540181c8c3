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

from reprokit.errors import KitError
from reprokit.files import staged_folder, write_json, write_text
from reprokit.sources import series

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


def expected_files(upstream_dir: Path, patches_dir: Path, stacked: Path | None = None) -> dict[str, str]:
    """Every file the generated folder must hold, by name, with its content: upstream's files and
    what the series makes of them (reprokit.sources.series, strictly), and what a ``stacked``
    series (the mutant catalogue) makes on top of those."""
    return series.walk(upstream_dir, patches_dir, strict=True, stacked=stacked).files


def _fingerprint(files: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return digest.hexdigest()


def states(upstream_dir: Path, patches_dir: Path, out_dir: Path) -> list[PatchState]:
    """One line per patch: applied, not applied, or conflicting (with what differs)."""
    built = series.walk(upstream_dir, patches_dir, strict=True)
    result = []
    for patch, _ in built.applied():
        target = out_dir / patch.target_name
        if not target.is_file():
            result.append(PatchState(patch.name, patch.target_name, "not applied"))
        elif target.read_text(encoding="utf-8") == built.files[patch.target_name]:
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
    upstream_dir: Path, patches_dir: Path, out_dir: Path, *, dry_run: bool = False, force: bool = False,
    stacked: Path | None = None,
) -> ApplyResult:
    """Build the generated folder; report 'already applied' when it is current. ``stacked``: a
    series applied after patches/ (the mutant catalogue, into a folder of its own)."""
    files = expected_files(upstream_dir, patches_dir, stacked)
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
