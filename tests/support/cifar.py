"""Reading the CIFAR-10 binary format back, for tests only: the kit writes it (encode_records) and
TensorFlow's reader in the trainers reads it; the tests need a reader of their own to look inside."""

from __future__ import annotations

import numpy as np

from reprokit.data.cifar_format import (
    DEPTH,
    HEIGHT,
    LABEL_BYTES,
    RECORD_BYTES,
    TEST_FILE,
    WIDTH,
    BatchesInfo,
)


def decode_records(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Unpack bytes into labels ``[n]`` and images ``[n, 3, 32, 32]``; the inverse of encode_records."""
    records = np.frombuffer(data, dtype=np.uint8).reshape(-1, RECORD_BYTES)
    return records[:, 0].copy(), records[:, LABEL_BYTES:].reshape(-1, DEPTH, HEIGHT, WIDTH)


def train_and_test_records(info: BatchesInfo) -> tuple[int, int]:
    """How many records the training files and the test file hold."""
    return (sum(f.records for f in info.files if f.name != TEST_FILE),
            sum(f.records for f in info.files if f.name == TEST_FILE))
