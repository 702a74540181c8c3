"""Files the kit writes: whole or not at all, and readable by the containers that read them.

Every generated file is written to a temporary name beside it and renamed into place, and every
generated folder is filled beside itself and swapped in, so that a crash, a full disk or Ctrl-C
leaves the previous version (or nothing), never half of one. Checksums live here too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_BLOCK = 1 << 20
FOLDER_MODE = 0o755  # as data/: roles in containers run as another uid and must read it
FILE_MODE = 0o644


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes, read a megabyte at a time."""
    digest = hashlib.new(algorithm, usedforsecurity=False) if algorithm == "md5" else hashlib.new(algorithm)
    with Path(path).open("rb") as stream:
        for block in iter(lambda: stream.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: a temporary sibling, flushed, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(tmp, FILE_MODE)  # mkstemp makes it 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, value: Any) -> Path:
    return write_text(path, json.dumps(value, indent=1, default=str) + "\n")


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Yield an empty hidden sibling of ``target`` to fill; on success it replaces ``target``.

    On any failure (Ctrl-C included) the sibling is removed and ``target`` is left as it was.
    The swap renames the old folder aside, renames the new one in, then removes the old one:
    a reader sees the old folder or the new one, never neither for longer than two renames,
    and never a mix.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        staging.chmod(FOLDER_MODE)  # mkdtemp makes it 0700
        yield staging
        _swap(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap(staging: Path, target: Path) -> None:
    if not target.exists() and not target.is_symlink():
        os.rename(staging, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    old.rmdir()
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)
        raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()


def make_folder(path: Path) -> Path:
    """A folder (and its parents) with the kit's permissions, whatever the umask."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(FOLDER_MODE)
    return path
