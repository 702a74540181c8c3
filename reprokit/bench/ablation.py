"""The lesson's ablation: the article's cluster trainer with one named change of the lesson alone.

The lesson's cluster patch names its changes as groups of hunks (`Ablation-<name>: 1 2 4`). For
each, its hunks alone are applied, strictly, to the article's cluster trainer, and the result is
written beside the patched sources as `<lesson trainer>_only_<name>.py`: the same program with
that change and no other, so that the benchmark measures what each change buys.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from reprokit.errors import KitError
from reprokit.files import write_text
from reprokit.programs import PROGRAMS
from reprokit.sources import patches as patchlib
from reprokit.sources import series


def lesson_patch(upstream_dir: Path, patches_dir: Path) -> tuple[patchlib.Patch, list[str]]:
    """The series' patch that makes the lesson's cluster trainer, with the lines it applies to
    (the article's cluster trainer), from one strict walk of the series."""
    return series.walk(upstream_dir, patches_dir, strict=True).making(PROGRAMS["lesson"].cluster)


def variant_name(change: str) -> str:
    return PROGRAMS["lesson"].cluster.removesuffix(".py") + "_only_" + change.replace("-", "_") + ".py"


def build_variants(upstream_dir: Path, patches_dir: Path, sources: Path, folder: Path) -> dict[str, str]:
    """A copy of the patched ``sources`` in ``folder``, plus one trainer per named change:
    {change: the trainer file's name}."""
    patch, source = lesson_patch(upstream_dir, patches_dir)
    groups = patch.ablation()
    if not groups:
        raise KitError(f"{patch.path} names no change (no Ablation- field)",
                       "name each change's hunks: `Ablation-<name>: 1 2 4`")
    shutil.copytree(sources, folder, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    variants = {}
    for change, hunks in groups.items():
        variants[change] = variant_name(change)
        write_text(folder / variants[change], "\n".join(patchlib.apply(patch, source, hunks)) + "\n")
    return variants
