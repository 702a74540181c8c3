"""Fixtures shared by the tests of the patch engine, the workspace, verify and the CLI."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from reprokit.settings import Settings, from_mapping
from reprokit.sources.upstream import CHECKSUM_FILE, sha256_file

ROOT = Path(__file__).resolve().parents[1]
PATCH_SAMPLES = ROOT / "tests" / "samples" / "patches"


@pytest.fixture
def repo_root() -> Path:
    """The real checkout: upstream/, patches/ and expected_logs/ as committed."""
    return ROOT


@pytest.fixture
def patch_sample() -> Callable[[str], Path]:
    """The path of one bad sample under tests/samples/patches/, which must exist."""

    def sample(name: str) -> Path:
        path = PATCH_SAMPLES / name
        assert path.is_file(), f"missing sample {path}"
        return path

    return sample


@pytest.fixture
def kit(tmp_path: Path) -> Path:
    """A scratch copy of the kit's inputs (upstream/, patches/, expected_logs/) to break at will."""
    root = tmp_path / "kit"
    for name in ("upstream", "patches", "expected_logs"):
        shutil.copytree(ROOT / name, root / name)
    return root


@pytest.fixture
def settings_for() -> Callable[[Path], Settings]:
    """Settings as invoke.yaml gives them, with every path under `root`."""

    def settings(root: Path) -> Settings:
        return from_mapping({"upstream_dir": "upstream", "patches_dir": "patches",
                             "sources_dir": "build/patched", "data_dir": "data", "runs_dir": "runs",
                             "rules": "expected_logs/rules.yaml"}, root)

    return settings


@pytest.fixture
def record_sums() -> Callable[[Path], None]:
    """Re-record upstream/SHA256SUMS from the files as they are: what a reviewer does after a change."""

    def record(upstream_dir: Path) -> None:
        names = [l.split()[1] for l in (upstream_dir / CHECKSUM_FILE).read_text().splitlines() if l.strip()]
        (upstream_dir / CHECKSUM_FILE).write_text(
            "".join(f"{sha256_file(upstream_dir / n)}  {n}\n" for n in names))

    return record
