"""One walk of patches/series over upstream/, quilt style, for every reader of the series.

Each patch applies to a fresh copy of the file it names: an upstream file, or the file an earlier
patch of the series made (the lesson's patches are stacked on the article's trainers). The walk
parses the series once and serves two readers:

- strict (the build, the teaching view, the ablation): upstream must be as recorded and every
  patch must apply; the first fault raises, as the PatchError that names it;
- tolerant (``invoke verify``): no checksum is asked for and nothing raises past the series file
  itself; each patch's fault is recorded in its step and the walk goes on, so that verify reports
  every patch, even on a drifted upstream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reprokit.errors import KitError, PatchError
from reprokit.sources import patches as patchlib
from reprokit.sources.upstream import require_pristine


@dataclass(frozen=True)
class Step:
    """One patch of the series as the walk found it."""

    path: Path
    patch: patchlib.Patch | None = None  # None: the file does not parse (errors says why)
    source: list[str] | None = field(default=None, repr=False)  # None: nothing made what it patches
    errors: list[KitError] = field(default_factory=list)  # empty: it applies


@dataclass(frozen=True)
class Walk:
    """Every step, in series order, and every file there is after them: upstream's files as they
    are, then each file a patch made, by name."""

    steps: list[Step]
    files: dict[str, str]

    def applied(self) -> list[tuple[patchlib.Patch, list[str]]]:
        """Each patch that applies, with the lines it applies to: every patch, after a strict walk."""
        return [pair for pair in map(_applied, self.steps) if pair is not None]

    def making(self, target: str) -> tuple[patchlib.Patch, list[str]]:
        """The patch that makes ``target`` (a trainer file's name), with the lines it applies to."""
        for patch, source in self.applied():
            if patch.target_name == target:
                return patch, source
        raise KitError(f"no patch in patches/series makes {target}", "restore patches/ (`git checkout patches/`)")


def walk(upstream_dir: Path, patches_dir: Path, *, strict: bool, stacked: Path | None = None) -> Walk:
    """Walk the series over ``upstream_dir``'s files: strictly (raise the first fault) or not
    (record each patch's faults and go on). Raises in both modes when the series cannot be read.
    ``stacked``: a folder with a series of its own (the mutant catalogue) walked after patches/,
    on the files it made."""
    if strict:
        require_pristine(upstream_dir)
    paths = patchlib.read_series(patches_dir) + (patchlib.read_series(stacked) if stacked else [])
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted(upstream_dir.glob("*.py"))}
    steps = []
    for path in paths:
        step = _step(path, files)
        if strict and step.errors:
            raise step.errors[0]
        pair = _applied(step)
        if pair is not None:
            patch, source = pair
            files[patch.target_name] = "\n".join(patchlib.apply(patch, source)) + "\n"
        steps.append(step)
    return Walk(steps, files)


def _applied(step: Step) -> tuple[patchlib.Patch, list[str]] | None:
    """The step's patch and the lines it applies to, when it applies."""
    if step.patch is None or step.source is None or step.errors:
        return None
    return step.patch, step.source


def _step(path: Path, files: dict[str, str]) -> Step:
    """One patch against the files made so far: what it applies to, and why it does not apply."""
    try:
        patch = patchlib.parse_patch(path)
    except KitError as exc:
        return Step(path, errors=[exc])
    if patch.source_name not in files:
        return Step(path, patch, errors=[PatchError(
            f"{patch.name} patches {patch.source_name}, which neither upstream/ nor an earlier patch of the "
            "series makes", "fix the patch's --- line, or the order in patches/series", patch=patch.name)])
    source = files[patch.source_name].splitlines()
    if patch.target_name in files:
        return Step(path, patch, source, [PatchError(f"{patch.name} would overwrite {patch.target_name}",
                                                     patch=patch.name)])
    return Step(path, patch, source, list(patchlib.problems(patch, source)))
