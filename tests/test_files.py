"""reprokit.files: atomic writes, staged folders and checksums, on real files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from reprokit.files import (
    file_digest,
    make_folder,
    staged_folder,
    write_json,
    write_text,
)


def test_a_staged_folder_replaces_the_target_only_when_complete(tmp_path: Path) -> None:
    """On success the new folder takes the target's place and nothing else is left."""
    target = tmp_path / "batches"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with staged_folder(target) as staging:
        (staging / "new.txt").write_text("new")
        assert ["old.txt"] == [p.name for p in target.iterdir()]
    assert ["new.txt"] == [p.name for p in target.iterdir()]
    assert ["batches"] == [p.name for p in tmp_path.iterdir()]
    assert 0o755 == target.stat().st_mode & 0o777


def test_a_failed_staged_folder_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    """An exception inside the block removes the staging folder and keeps the old target."""
    target = tmp_path / "batches"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with staged_folder(target) as staging:
            (staging / "half.txt").write_text("half")
            raise KeyboardInterrupt
    assert ["old.txt"] == [p.name for p in target.iterdir()]
    assert ["batches"] == [p.name for p in tmp_path.iterdir()]


def test_an_atomic_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    """The old content stays until the new one is complete; then only the file is there."""
    path = tmp_path / "results.json"
    path.write_text("old")
    write_json(path, {"verdict": "PASS"})
    assert '{\n "verdict": "PASS"\n}\n' == path.read_text()
    assert ["results.json"] == [p.name for p in tmp_path.iterdir()]
    assert 0o644 == path.stat().st_mode & 0o777


def test_a_write_that_fails_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    """A value that cannot be encoded fails before the rename: the old report survives."""
    path = tmp_path / "report.md"
    path.write_text("the old report")
    with pytest.raises(UnicodeEncodeError):
        write_text(path, "half \udc80 written")
    assert "the old report" == path.read_text()
    assert ["report.md"] == [p.name for p in tmp_path.iterdir()]


def test_a_folder_gets_0755_whatever_the_umask(tmp_path: Path) -> None:
    """Generated folders are readable by the containers' user, as data/ is."""
    old = os.umask(0o077)
    try:
        folder = make_folder(tmp_path / "a" / "b")
    finally:
        os.umask(old)
    assert 0o755 == folder.stat().st_mode & 0o777


def test_the_digest_of_a_file_is_hashlibs_of_its_bytes(tmp_path: Path) -> None:
    """Read a megabyte at a time, the digest is the same as of the whole bytes."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 3_000_000)
    assert hashlib.sha256(b"x" * 3_000_000).hexdigest() == file_digest(path)
    assert hashlib.md5(b"x" * 3_000_000).hexdigest() == file_digest(path, "md5")
