"""The CIFAR-10 binary layout and the checks on a batches folder, on real files in tmp_path."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from reprokit.data.cifar_format import (
    BATCHES_FOLDER,
    CLASS_NAMES,
    DATA_FILES,
    META_FILE,
    OFFICIAL_SHA256,
    RECORD_BYTES,
    BatchFile,
    encode_records,
    verify_batches,
)
from reprokit.errors import DataError
from tests.support.cifar import decode_records, train_and_test_records


def _write_batches(folder: Path, records: int = 20) -> Path:
    """Write a small but valid batches folder straight from the layout, with no generator."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for name in DATA_FILES:
        labels = (np.arange(records) % 10).astype(np.uint8)
        planes = rng.integers(0, 256, size=(records, 3, 32, 32), dtype=np.uint8)
        (folder / name).write_bytes(encode_records(labels, planes))
    (folder / META_FILE).write_text("\n".join(CLASS_NAMES) + "\n\n")
    return folder


def test_the_layout_facts_match_the_official_description() -> None:
    """A record is 3073 bytes and a batches folder has five training files and one test file."""
    assert 3073 == RECORD_BYTES
    assert "cifar-10-batches-bin" == BATCHES_FOLDER
    expected = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    assert expected == list(DATA_FILES)
    assert sorted(expected) == sorted(OFFICIAL_SHA256)


def test_encoding_puts_the_label_first_then_the_red_top_row() -> None:
    """Byte 0 is the label and bytes 1-32 are the red values of the first row."""
    planes = np.zeros((1, 3, 32, 32), dtype=np.uint8)
    planes[0, 0, 0, :] = np.arange(32)
    planes[0, 1, 0, 0] = 200  # first green byte
    data = encode_records(np.array([7], dtype=np.uint8), planes)
    assert RECORD_BYTES == len(data)
    assert 7 == data[0]
    assert bytes(range(32)) == data[1:33]
    assert 200 == data[1 + 1024]


def test_decoding_inverts_encoding() -> None:
    """Labels and planes come back unchanged from their bytes."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, size=5, dtype=np.uint8)
    planes = rng.integers(0, 256, size=(5, 3, 32, 32), dtype=np.uint8)
    decoded_labels, decoded_planes = decode_records(encode_records(labels, planes))
    assert labels.tolist() == decoded_labels.tolist()
    assert np.array_equal(planes, decoded_planes)


def test_verify_batches_counts_records_and_hashes_every_file(tmp_path: Path) -> None:
    """Each file's record count, size, sha256 and labels per class are reported."""
    folder = _write_batches(tmp_path / BATCHES_FOLDER, records=20)
    info = verify_batches(folder)
    assert list(DATA_FILES) == [f.name for f in info.files]
    assert [20] * 6 == [f.records for f in info.files]
    assert (100, 20) == train_and_test_records(info)
    first = info.files[0]
    assert hashlib.sha256((folder / first.name).read_bytes()).hexdigest() == first.sha256
    assert (2,) * 10 == first.label_counts
    assert False is info.official


def test_a_file_is_official_only_when_its_sha256_is_the_published_one() -> None:
    """The official flag compares against the published per-file checksums."""
    name = "test_batch.bin"
    assert True is BatchFile(name, 10000, 30730000, OFFICIAL_SHA256[name], (1000,) * 10).official
    assert False is BatchFile(name, 10000, 30730000, "0" * 64, (1000,) * 10).official


def test_verify_batches_names_a_truncated_file_and_its_size(tmp_path: Path) -> None:
    """A file cut short is reported with its name, its byte count and a way out."""
    folder = _write_batches(tmp_path / BATCHES_FOLDER)
    path = folder / "data_batch_2.bin"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError) as caught:
        verify_batches(folder)
    text = str(caught.value)
    assert str(path) in text
    assert f"{20 * RECORD_BYTES - 100} bytes" in text
    assert "not a positive multiple of 3073" in text
    assert "truncated?" in text
    assert "invoke data" in caught.value.hint


def test_verify_batches_names_an_empty_file(tmp_path: Path) -> None:
    """An empty file is not a valid batch, even though 0 is a multiple of 3073."""
    folder = _write_batches(tmp_path / BATCHES_FOLDER)
    (folder / "test_batch.bin").write_bytes(b"")
    with pytest.raises(DataError, match=r"test_batch\.bin is 0 bytes"):
        verify_batches(folder)


def test_verify_batches_names_the_record_with_a_label_above_9(tmp_path: Path) -> None:
    """A label byte of 12 is reported with the file, the record index and the value."""
    folder = _write_batches(tmp_path / BATCHES_FOLDER)
    path = folder / "data_batch_4.bin"
    data = bytearray(path.read_bytes())
    data[13 * RECORD_BYTES] = 12
    path.write_bytes(bytes(data))
    with pytest.raises(DataError) as caught:
        verify_batches(folder)
    assert f"{path}: record 13 " in caught.value.message
    assert "has label 12, expected 0-9" in caught.value.message


def test_verify_batches_reports_a_missing_folder_and_what_to_run(tmp_path: Path) -> None:
    """A folder that is not there is named, with `invoke data` as the way out."""
    with pytest.raises(DataError) as caught:
        verify_batches(tmp_path / BATCHES_FOLDER)
    assert f"{tmp_path / BATCHES_FOLDER} does not exist" in caught.value.message
    assert "run `invoke data` (see docs/article.md#the-data)" == caught.value.hint


def test_verify_batches_names_each_missing_file(tmp_path: Path) -> None:
    """Every missing file is listed by name."""
    folder = _write_batches(tmp_path / BATCHES_FOLDER)
    (folder / "data_batch_3.bin").unlink()
    (folder / META_FILE).unlink()
    with pytest.raises(DataError) as caught:
        verify_batches(folder)
    assert f"{folder} is missing data_batch_3.bin, batches.meta.txt" == caught.value.message


def test_verify_batches_rejects_a_meta_file_with_other_class_names(tmp_path: Path) -> None:
    """batches.meta.txt must list the ten CIFAR-10 classes in order."""
    folder = _write_batches(tmp_path / BATCHES_FOLDER)
    (folder / META_FILE).write_text("apple\naquarium_fish\n")
    with pytest.raises(DataError, match=r"batches\.meta\.txt lists classes \['apple'"):
        verify_batches(folder)


def test_verify_batches_can_name_files_as_the_caller_sees_them(tmp_path: Path) -> None:
    """shown_as replaces a staging path in messages with one the user recognises."""
    folder = _write_batches(tmp_path / "staging")
    (folder / "data_batch_1.bin").write_bytes(b"x")
    with pytest.raises(DataError) as caught:
        verify_batches(folder, shown_as="archive.tar.gz:cifar-10-batches-bin")
    assert caught.value.message.startswith("archive.tar.gz:cifar-10-batches-bin/data_batch_1.bin")
