"""A run's folders as its containers and services see them: at the same absolute paths as here.

The roles' argv name host paths (the sources, the data, the run folder), so each folder is
mounted at its own path inside. Pure and free of the Docker SDK: the registry builds a
`RunInputs` for every backend without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def same_path_mounts(read_only: list[Path], read_write: list[Path]) -> dict[str, dict[str, str]]:
    """Each host folder at the same absolute path inside: the roles' argv name host paths.

    A folder given both ways is mounted read-write; equal paths are mounted once.
    """
    mounts: dict[str, dict[str, str]] = {}
    for mode, paths in (("ro", read_only), ("rw", read_write)):
        for path in paths:
            text = str(Path(path).absolute())
            mounts[text] = {"bind": text, "mode": mode}
    return dict(sorted(mounts.items()))


@dataclass(frozen=True)
class RunInputs:
    """The folders every run reads, which its containers or services mount read-only."""

    sources_dir: Path  # the patched sources
    data_dir: Path
    native_dir: Path  # the kit's native fixes, once built: an LD_PRELOAD path must read the same inside


def run_mounts(inputs: RunInputs, run_dir: Path) -> dict[str, dict[str, str]]:
    """A run's folders as a container or service sees them: its inputs read-only (the native
    fixes only once they are built) and the run folder read-write."""
    read_only = [inputs.sources_dir.resolve(), inputs.data_dir.absolute()]
    native = inputs.native_dir.resolve()
    read_only += [native] if native.is_dir() else []
    return same_path_mounts(read_only, [run_dir])
