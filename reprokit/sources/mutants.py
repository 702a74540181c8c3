"""The catalogue of wrong programs (``mutants/``): realistic distributed-training bugs, each a
small annotated patch stacked on one program's cluster trainer, as the lesson's patches are.

A verdict is trusted once it has been seen to fail on programs known to be wrong. Each patch's
DEP-3 header says what the bug is (``Description``), which program it is planted in
(``Mutant-Program``), what it should do to learning per step against a correct cluster
(``Mutant-Effect``), and which verdict must catch it (``Mutant-Caught-By``: the update check, or
the logs, for a program whose own figures lie) with which diagnosis (``Mutant-Diagnosis``: words
the update verdict's diagnosis holds, or the logs rule that fails). The patches are applied after patches/series, into a folder of their own
(reprokit.sources.workspace, ``stacked``), so build/patched stays what the series makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprokit.errors import KitError, PatchError
from reprokit.programs import PROGRAMS
from reprokit.sources import patches as patchlib

# What a bug should do to learning per step, against a correct cluster of the same program.
EFFECTS = {
    "slower": "learns more slowly",
    "faster": "takes larger steps: faster, or unstable",
    "as-one-worker": "learns as one worker does: the other's batches are wasted",
    "none": "no effect on learning that a run can measure",
}
# The verdicts a mutant may be caught by: the update check (reprokit.updates), or the logs' rules.
CATCHERS = ("updates", "logs")
_FIX = "see mutants/README.md for the fields every mutant's header carries"


@dataclass(frozen=True)
class Mutant:
    """One wrong program: ``slug`` names it (the patch file's stem), ``trainer`` is the file the
    patch makes from the program's cluster trainer."""

    slug: str
    program: str
    bug: str  # the Description's first line
    why: str  # the rest of the Description: why it is realistic, what it does
    effect: str  # one of EFFECTS
    trainer: str
    patch: Path
    caught_by: str  # one of CATCHERS
    diagnosis: str  # what the catching verdict must name: words of the update verdict's diagnosis, or a rule

    @property
    def expected(self) -> str:
        return EFFECTS[self.effect]


def load_catalogue(mutants_dir: Path) -> list[Mutant]:
    """Every mutant of ``mutants_dir/series``, in order, each header checked; PatchError names
    the patch and the field at fault."""
    return [_mutant(patchlib.parse_patch(path)) for path in patchlib.read_series(mutants_dir)]


def mutant_of(mutants_dir: Path, slug: str, program: str) -> Mutant:
    """The mutant named ``slug``, which must be planted in ``program``."""
    catalogue = {m.slug: m for m in load_catalogue(mutants_dir)}
    if slug not in catalogue:
        raise KitError(f"no mutant {slug!r} in {mutants_dir}/series", f"choose one of {', '.join(catalogue)}")
    mutant = catalogue[slug]
    if mutant.program != program:
        raise KitError(f"the mutant {slug!r} is planted in the {mutant.program} program, not in {program}",
                       f"run it with --program {mutant.program}")
    return mutant


def _mutant(patch: patchlib.Patch) -> Mutant:
    program = patch.fields.get("Mutant-Program", "")
    effect = patch.fields.get("Mutant-Effect", "")
    caught_by = patch.fields.get("Mutant-Caught-By", "")
    diagnosis = " ".join(patch.fields.get("Mutant-Diagnosis", "").split())
    if program not in PROGRAMS:
        raise PatchError(f"{patch.path}: Mutant-Program {program!r} is not a program (known: {', '.join(PROGRAMS)})",
                         _FIX, patch=patch.name)
    if effect not in EFFECTS:
        raise PatchError(f"{patch.path}: Mutant-Effect {effect!r} is not one of {', '.join(EFFECTS)}",
                         _FIX, patch=patch.name)
    if caught_by not in CATCHERS:
        raise PatchError(f"{patch.path}: Mutant-Caught-By {caught_by!r} is not one of {', '.join(CATCHERS)}",
                         _FIX, patch=patch.name)
    if not diagnosis:
        raise PatchError(f"{patch.path}: Mutant-Diagnosis is missing: what must the {caught_by} verdict name?",
                         _FIX, patch=patch.name)
    cluster = PROGRAMS[program].cluster
    if patch.source_name != cluster:
        raise PatchError(f"{patch.path}: patches {patch.source_name}, not the {program} program's cluster trainer "
                         f"{cluster}", _FIX, patch=patch.name)
    bug, _, why = patch.fields["Description"].partition("\n")
    return Mutant(patch.path.stem, program, bug.strip(), " ".join(why.split()), effect, patch.target_name, patch.path,
                  caught_by, diagnosis)
