"""The upstream trainer files and the checksums they were reviewed against."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprokit.errors import UpstreamDriftError
from reprokit.files import file_digest

CHECKSUM_FILE = "SHA256SUMS"


@dataclass(frozen=True)
class FileCheck:
    """One upstream file's checksum verdict."""

    name: str
    expected: str
    found: str | None  # None: the file is missing

    @property
    def ok(self) -> bool:
        return self.expected == self.found


def sha256_file(path: Path) -> str:
    return file_digest(path, "sha256")


def read_checksums(upstream_dir: Path) -> dict[str, str]:
    """Parse `sha256sum`-format lines: '<hex>  <name>'."""
    path = upstream_dir / CHECKSUM_FILE
    if not path.is_file():
        raise UpstreamDriftError(f"{path} is missing", "restore it with `git checkout upstream/`")
    sums = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise UpstreamDriftError(f"{path}:{number}: not '<sha256>  <file>': {line!r}")
        sums[parts[1].lstrip("*")] = parts[0]
    return sums


def check_upstream(upstream_dir: Path) -> list[FileCheck]:
    """Each listed file's expected and found sha256."""
    checks = []
    for name, expected in read_checksums(upstream_dir).items():
        path = upstream_dir / name
        checks.append(FileCheck(name, expected, sha256_file(path) if path.is_file() else None))
    return checks


def require_pristine(upstream_dir: Path) -> list[FileCheck]:
    """Raise on the first drifted or missing file; return the checks otherwise."""
    checks = check_upstream(upstream_dir)
    for c in checks:
        if not c.ok:
            state = "is missing" if c.found is None else f"has sha256 {c.found}, expected {c.expected}"
            raise UpstreamDriftError(
                f"upstream/{c.name} {state}",
                "the patches were reviewed against the recorded file: restore it with "
                "`git checkout upstream/`, or, after reviewing the patches again, "
                "record the new sum in upstream/SHA256SUMS",
            )
    return checks
