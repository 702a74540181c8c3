"""One way to checksum a file: upstream sums, wheel manifests and the CIFAR-10 archive use it."""

from __future__ import annotations

import hashlib
from pathlib import Path

_BLOCK = 1 << 20


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes, read a megabyte at a time."""
    digest = hashlib.new(algorithm, usedforsecurity=False) if algorithm == "md5" else hashlib.new(algorithm)
    with Path(path).open("rb") as stream:
        for block in iter(lambda: stream.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
