"""The CIFAR-10 binary layout, and a check that a batches folder really holds it.

Each ``.bin`` file is a run of 3073-byte records with no header: one label byte (0-9), then
1024 red, 1024 green and 1024 blue bytes, each plane row-major (the first 32 bytes are the red
values of the top row). Facts from the data set's page, https://www.cs.toronto.edu/~kriz/cifar.html.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reprokit.errors import DataError

HEIGHT = 32
WIDTH = 32
DEPTH = 3
LABEL_BYTES = 1
IMAGE_BYTES = HEIGHT * WIDTH * DEPTH
RECORD_BYTES = LABEL_BYTES + IMAGE_BYTES  # 3073
NUM_CLASSES = 10

BATCHES_FOLDER = "cifar-10-batches-bin"
TRAIN_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_FILE = "test_batch.bin"
DATA_FILES = TRAIN_FILES + (TEST_FILE,)
META_FILE = "batches.meta.txt"
README_FILE = "readme.html"  # in the official archive; nothing reads it
CLASS_NAMES = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)

# Per-file sha256 of the official data; published by third-party loaders, not by the official
# page (whose only checksum is the archive's md5), so a mismatch is reported, never fatal.
OFFICIAL_SHA256 = {
    "data_batch_1.bin": "cee916563c9f80d84e3cc88e17fdc0941787f1244f00a67874d45b261883ada5",
    "data_batch_2.bin": "a591ca11fa1708a91ee40f54b3da4784ccd871ecf2137de63f51ada8b3fa57ed",
    "data_batch_3.bin": "bbe8596564c0f86427f876058170b84dac6670ddf06d79402899d93ceea26f67",
    "data_batch_4.bin": "014e562d6e23c72197cc727519169a60359f5eccd8945ad5a09d710285ff4e48",
    "data_batch_5.bin": "755304fc0b379caeae8c14f0dac912fbc7d6cd469eb67a1029a08a39453a9add",
    "test_batch.bin": "8e2eb146ae340b09e24670f29cabc6326dba54da8789dab6768acf480273f65b",
}

REFETCH_HINT = (
    "fetch the data again with `invoke data` (see docs/article.md#the-data), "
    "or use generated data with `invoke data --source synthetic`"
)


@dataclass(frozen=True)
class BatchFile:
    """One verified ``.bin`` file: its record count, size, checksum and labels per class."""

    name: str
    records: int
    size: int
    sha256: str
    label_counts: tuple[int, ...]

    @property
    def official(self) -> bool:
        return OFFICIAL_SHA256.get(self.name) == self.sha256


@dataclass(frozen=True)
class BatchesInfo:
    """What :func:`verify_batches` found in a ``cifar-10-batches-bin`` folder."""

    folder: Path
    files: tuple[BatchFile, ...]

    @property
    def official(self) -> bool:
        """True when every file is byte-identical to the published CIFAR-10 data."""
        return all(f.official for f in self.files)


def encode_records(labels: np.ndarray, planes: np.ndarray) -> bytes:
    """Pack labels ``[n]`` and images ``[n, 3, 32, 32]`` (channel planes, as on disk) into bytes."""
    n = len(labels)
    if planes.shape != (n, DEPTH, HEIGHT, WIDTH):
        raise ValueError(f"planes must have shape ({n}, 3, 32, 32), not {planes.shape}")
    records = np.empty((n, RECORD_BYTES), dtype=np.uint8)
    records[:, 0] = labels
    records[:, LABEL_BYTES:] = planes.reshape(n, IMAGE_BYTES)
    return records.tobytes()


def verify_batches(folder: Path, *, shown_as: str | None = None) -> BatchesInfo:
    """Check every file of a batches folder; raise DataError naming the first problem.

    ``shown_as`` replaces the folder path in messages (e.g. when checking a staging copy).
    """
    where = shown_as or str(folder)
    if not folder.is_dir():
        raise DataError(f"data folder {where} does not exist", "run `invoke data` (see docs/article.md#the-data)")
    missing = [n for n in DATA_FILES + (META_FILE,) if not (folder / n).is_file()]
    if missing:
        raise DataError(
            f"{where} is missing {', '.join(missing)}",
            "run `invoke data` (see docs/article.md#the-data) to fetch or generate the full set",
        )
    _check_meta(folder / META_FILE, f"{where}/{META_FILE}")
    return BatchesInfo(folder, tuple(_check_file(folder / n, f"{where}/{n}") for n in DATA_FILES))


def _check_file(path: Path, shown: str) -> BatchFile:
    data = path.read_bytes()
    size = len(data)
    if size == 0 or size % RECORD_BYTES:
        raise DataError(
            f"{shown} is {size} bytes, not a positive multiple of {RECORD_BYTES} "
            f"(one record = 1 label byte + 3072 image bytes): truncated?",
            REFETCH_HINT,
        )
    labels = np.frombuffer(data, dtype=np.uint8).reshape(-1, RECORD_BYTES)[:, 0]
    bad = np.flatnonzero(labels >= NUM_CLASSES)
    if bad.size:
        first = int(bad[0])
        raise DataError(
            f"{shown}: record {first} (byte offset {first * RECORD_BYTES}) has label "
            f"{int(labels[first])}, expected 0-9 ({bad.size} bad records in all): "
            "not CIFAR-10 binary data?",
            REFETCH_HINT,
        )
    counts = np.bincount(labels, minlength=NUM_CLASSES)
    return BatchFile(
        name=path.name,
        records=size // RECORD_BYTES,
        size=size,
        sha256=hashlib.sha256(data).hexdigest(),
        label_counts=tuple(int(c) for c in counts),
    )


def _check_meta(path: Path, shown: str) -> None:
    names = tuple(line.strip() for line in path.read_text("ascii", "replace").splitlines())
    found = tuple(n for n in names if n)
    if found != CLASS_NAMES:
        raise DataError(
            f"{shown} lists classes {list(found)}, expected {list(CLASS_NAMES)}",
            REFETCH_HINT,
        )
