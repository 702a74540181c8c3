"""prepare_data: every source, every fallback, and bad inputs that leave nothing half-made.

Downloads use file:// URLs (urllib's own handler, no network) and a closed loopback port for
"the network is down"; test_download.py covers HTTP itself.
"""

from __future__ import annotations

import hashlib
import io
import socket
import tarfile
from pathlib import Path

import pytest

from reprokit.data.cifar_format import (
    BATCHES_FOLDER,
    DATA_FILES,
    RECORD_BYTES,
    verify_batches,
)
from reprokit.data.download import CIFAR10, ArchiveSpec
from reprokit.data.prepare import DataResult, prepare_data
from reprokit.data.synthetic import (
    MARKER_FILE,
    NOTE_FILE,
    SyntheticParams,
    write_synthetic,
)
from reprokit.errors import DataError

GENERATED = ("using GENERATED data: precision compares the modes' learning but says nothing about CIFAR-10; speed "
             "comparisons still hold.")


def _real_looking_folder(folder: Path, records: int = 20) -> Path:
    """A batches folder without the generated-data marker, as a user's real copy would be."""
    write_synthetic(folder, records_per_file=records)
    (folder / MARKER_FILE).unlink()
    (folder / NOTE_FILE).unlink()
    return folder


def _archive(tmp_path: Path, url: str = "") -> tuple[Path, ArchiveSpec]:
    """A small archive laid out like the official one, and the spec it satisfies."""
    source = _real_looking_folder(tmp_path / "made" / BATCHES_FOLDER)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(source, arcname=BATCHES_FOLDER)
    body = buffer.getvalue()
    path = tmp_path / "made" / "cifar-10-binary.tar.gz"
    path.write_bytes(body)
    spec = ArchiveSpec(url=url or path.as_uri(), size=len(body), md5=hashlib.md5(body).hexdigest())
    return path, spec


def _unreachable(spec: ArchiveSpec = CIFAR10) -> ArchiveSpec:
    """The same archive, at a loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return ArchiveSpec(f"http://127.0.0.1:{port}/cifar-10-binary.tar.gz", spec.size, spec.md5)


def _contents(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _records(result: DataResult) -> list[int]:
    return [f.records for f in result.files]


def test_synthetic_source_generates_and_says_so(tmp_path: Path) -> None:
    """--source synthetic writes generated data and a notice nobody can miss."""
    result = prepare_data("synthetic", tmp_path / "data", records_per_file=20)
    assert "synthetic" == result.source
    assert True is result.synthetic
    assert SyntheticParams(20, 0) == result.synthetic_params
    assert tmp_path / "data" / BATCHES_FOLDER == result.batches_dir
    assert tmp_path / "data" == result.data_dir
    assert [20] * 6 == _records(result)
    assert "GENERATED" in result.notice and "says nothing about CIFAR-10" in result.notice
    assert False is result.official


def test_synthetic_source_reuses_matching_generated_data(tmp_path: Path) -> None:
    """Asking again with the same size keeps the files instead of writing them anew."""
    first = prepare_data("synthetic", tmp_path, records_per_file=20)
    inode = (first.batches_dir / DATA_FILES[0]).stat().st_ino
    second = prepare_data("synthetic", tmp_path, records_per_file=20)
    assert inode == (second.batches_dir / DATA_FILES[0]).stat().st_ino
    assert "left in" in second.notice


def test_synthetic_source_refuses_to_replace_real_data(tmp_path: Path) -> None:
    """Generated data never overwrites a folder the generator did not write."""
    _real_looking_folder(tmp_path / BATCHES_FOLDER)
    with pytest.raises(DataError, match="refusing to replace it"):
        prepare_data("synthetic", tmp_path, records_per_file=30)
    assert [20] * 6 == [f.records for f in verify_batches(tmp_path / BATCHES_FOLDER).files]


def test_auto_uses_a_valid_folder_already_in_place(tmp_path: Path) -> None:
    """An intact real folder is used as it is, with no download attempted."""
    _real_looking_folder(tmp_path / BATCHES_FOLDER)
    result = prepare_data("auto", tmp_path, archive=_unreachable())
    assert ("folder", False, "") == (result.source, result.synthetic, result.notice)


def test_auto_refuses_a_damaged_folder_in_place(tmp_path: Path) -> None:
    """A real folder with a truncated file is reported, not silently replaced."""
    folder = _real_looking_folder(tmp_path / BATCHES_FOLDER)
    (folder / "data_batch_5.bin").write_bytes(b"\0" * 100)
    with pytest.raises(DataError) as caught:
        prepare_data("auto", tmp_path, archive=_unreachable())
    assert f"{folder / 'data_batch_5.bin'} is 100 bytes" in caught.value.message
    assert f"delete {folder}" in caught.value.hint


def test_auto_extracts_the_archive_in_the_data_folder(tmp_path: Path) -> None:
    """A verified archive already in data_dir is unpacked, with no download attempted."""
    made, spec = _archive(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / spec.name).write_bytes(made.read_bytes())
    result = prepare_data("auto", data_dir, archive=_unreachable(spec))
    assert ("archive", False) == (result.source, result.synthetic)
    assert [BATCHES_FOLDER, spec.name] == _contents(data_dir)


def test_auto_refuses_a_bad_archive_in_the_data_folder(tmp_path: Path) -> None:
    """A cut-short archive in data_dir is named with a way out, and nothing is unpacked."""
    made, spec = _archive(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / spec.name).write_bytes(made.read_bytes()[:-10])
    with pytest.raises(DataError) as caught:
        prepare_data("auto", data_dir, archive=_unreachable(spec))
    assert f"is {spec.size - 10} bytes, expected {spec.size}: truncated?" in caught.value.message
    assert f"delete {data_dir / spec.name}" in caught.value.hint
    assert [spec.name] == _contents(data_dir)


def test_auto_downloads_when_nothing_is_there(tmp_path: Path) -> None:
    """With no folder and no archive the archive is downloaded, kept and unpacked."""
    _, spec = _archive(tmp_path)
    calls: list[tuple[int, int]] = []
    result = prepare_data("auto", tmp_path / "data", archive=spec,
                          progress=lambda done, total: calls.append((done, total)))
    assert ("download", False) == (result.source, result.synthetic)
    assert (spec.size, spec.size) == calls[-1]
    assert [BATCHES_FOLDER, spec.name] == _contents(tmp_path / "data")


def test_auto_falls_back_to_generated_data_with_a_loud_notice(tmp_path: Path) -> None:
    """When the download fails, generated data is used and the notice gives the reason."""
    result = prepare_data("auto", tmp_path, records_per_file=20, archive=_unreachable())
    assert ("synthetic", True) == (result.source, result.synthetic)
    assert result.notice.startswith("CIFAR-10 could not be downloaded (http://127.0.0.1:")
    assert "refused" in result.notice.lower()
    assert result.notice.endswith(f"); {GENERATED}")
    assert [BATCHES_FOLDER] == _contents(tmp_path)


def test_auto_regenerates_generated_data_of_another_size(tmp_path: Path) -> None:
    """Generated data made with 20 records per file is remade when 30 are asked for."""
    prepare_data("synthetic", tmp_path, records_per_file=20)
    result = prepare_data("auto", tmp_path, records_per_file=30, archive=_unreachable())
    assert [30] * 6 == _records(result)
    assert SyntheticParams(30, 0) == result.synthetic_params


def test_auto_prefers_a_real_archive_to_generated_data(tmp_path: Path) -> None:
    """An archive dropped next to generated data replaces it."""
    made, spec = _archive(tmp_path)
    data_dir = tmp_path / "data"
    prepare_data("synthetic", data_dir, records_per_file=30)
    (data_dir / spec.name).write_bytes(made.read_bytes())
    result = prepare_data("auto", data_dir, records_per_file=30, archive=_unreachable(spec))
    assert ("archive", False, [20] * 6) == (result.source, result.synthetic, _records(result))


def test_ctrl_c_during_an_auto_download_does_not_fall_back(tmp_path: Path) -> None:
    """An interrupt means stop: no generated data appears behind the user's back."""
    _, spec = _archive(tmp_path)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(DataError, match="interrupted"):
        prepare_data("auto", tmp_path / "data", archive=spec, progress=interrupt)
    assert [] == _contents(tmp_path / "data")


def test_url_source_fails_loudly_instead_of_falling_back(tmp_path: Path) -> None:
    """--source url raises when the download fails and leaves no partial file."""
    with pytest.raises(DataError) as caught:
        prepare_data("url", tmp_path, archive=_unreachable())
    assert "could not download http://127.0.0.1:" in caught.value.message
    assert "--source synthetic" in caught.value.hint
    assert [] == _contents(tmp_path)


def test_url_source_reuses_a_verified_archive(tmp_path: Path) -> None:
    """A good archive from an earlier download is not fetched again."""
    made, spec = _archive(tmp_path)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / spec.name).write_bytes(made.read_bytes())
    result = prepare_data("url", data_dir, archive=_unreachable(spec))
    assert "archive" == result.source


def test_a_path_to_an_archive_is_verified_and_unpacked(tmp_path: Path) -> None:
    """--source PATH.tar.gz unpacks a verified archive into data_dir."""
    made, spec = _archive(tmp_path)
    result = prepare_data(str(made), tmp_path / "data", archive=spec)
    assert ("archive", [20] * 6) == (result.source, _records(result))
    assert [BATCHES_FOLDER] == _contents(tmp_path / "data")


def test_a_tarball_with_the_wrong_checksum_is_refused(tmp_path: Path) -> None:
    """A user's archive that is not the official one is named with both md5s; nothing is made."""
    made, spec = _archive(tmp_path)
    wrong = ArchiveSpec(spec.url, spec.size, "0" * 32)
    with pytest.raises(DataError) as caught:
        prepare_data(str(made), tmp_path / "data", archive=wrong)
    assert f"{made} has md5 {spec.md5}, expected {'0' * 32}" in caught.value.message
    assert "invoke data --source" in caught.value.hint
    assert [] == _contents(tmp_path / "data")


@pytest.mark.parametrize("given", ["batches folder", "its parent"])
def test_a_path_to_a_folder_is_verified_and_copied(tmp_path: Path, given: str) -> None:
    """Either the cifar-10-batches-bin folder or its parent may be given."""
    source = _real_looking_folder(tmp_path / "mine" / BATCHES_FOLDER)
    path = source if given == "batches folder" else source.parent
    result = prepare_data(str(path), tmp_path / "data")
    assert ("folder", False) == (result.source, result.synthetic)
    copied = [(result.batches_dir / n).read_bytes() for n in DATA_FILES]
    assert [(source / n).read_bytes() for n in DATA_FILES] == copied
    assert [BATCHES_FOLDER] == _contents(tmp_path / "data")


def test_a_copied_generated_folder_is_still_marked_generated(tmp_path: Path) -> None:
    """The marker travels with a copy, so the report still says the data is generated."""
    write_synthetic(tmp_path / "mine" / BATCHES_FOLDER, records_per_file=20)
    result = prepare_data(str(tmp_path / "mine"), tmp_path / "data")
    assert ("folder", True) == (result.source, result.synthetic)
    assert "GENERATED" in result.notice


def test_the_data_folder_itself_is_verified_in_place(tmp_path: Path) -> None:
    """Passing data_dir's own folder as the source copies nothing."""
    _real_looking_folder(tmp_path / BATCHES_FOLDER)
    result = prepare_data(str(tmp_path), tmp_path)
    assert ("folder", [BATCHES_FOLDER]) == (result.source, _contents(tmp_path))


def test_a_truncated_data_file_is_named_and_nothing_is_copied(tmp_path: Path) -> None:
    """A file whose size is not a multiple of 3073 stops the copy before it starts."""
    source = _real_looking_folder(tmp_path / BATCHES_FOLDER)
    path = source / "data_batch_1.bin"
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(DataError) as caught:
        prepare_data(str(source), tmp_path / "data")
    assert f"{path} is {20 * RECORD_BYTES - 1} bytes" in caught.value.message
    assert "truncated?" in caught.value.message
    assert "invoke data" in caught.value.hint
    assert [] == _contents(tmp_path / "data")


def test_a_label_above_9_is_named_and_nothing_is_copied(tmp_path: Path) -> None:
    """A label byte of 10 is reported with its file and record, and nothing is copied."""
    source = _real_looking_folder(tmp_path / BATCHES_FOLDER)
    path = source / "test_batch.bin"
    data = bytearray(path.read_bytes())
    data[3 * RECORD_BYTES] = 10
    path.write_bytes(bytes(data))
    with pytest.raises(DataError) as caught:
        prepare_data(str(source), tmp_path / "data")
    assert f"{path}: record 3 (byte offset {3 * RECORD_BYTES}) has label 10" in caught.value.message
    assert "invoke data" in caught.value.hint
    assert [] == _contents(tmp_path / "data")


def test_a_missing_data_folder_is_reported(tmp_path: Path) -> None:
    """A source path that does not exist is named, with the accepted sources as the way out."""
    with pytest.raises(DataError) as caught:
        prepare_data(str(tmp_path / "nowhere"), tmp_path / "data")
    assert f"data source {tmp_path / 'nowhere'} does not exist" == caught.value.message
    assert "auto, url, synthetic" in caught.value.hint
    assert [] == _contents(tmp_path / "data")


def test_a_folder_without_cifar_files_is_reported(tmp_path: Path) -> None:
    """A folder holding neither the files nor cifar-10-batches-bin says what to pass instead."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds neither the CIFAR-10 files"):
        prepare_data(str(tmp_path / "empty"), tmp_path / "data")
    assert [] == _contents(tmp_path / "data")


def test_a_missing_single_file_is_named_and_nothing_is_copied(tmp_path: Path) -> None:
    """A folder lacking data_batch_3.bin is refused by that name."""
    source = _real_looking_folder(tmp_path / BATCHES_FOLDER)
    (source / "data_batch_3.bin").unlink()
    with pytest.raises(DataError) as caught:
        prepare_data(str(source.parent), tmp_path / "data")
    assert f"{source} is missing data_batch_3.bin" == caught.value.message
    assert "invoke data" in caught.value.hint
    assert [] == _contents(tmp_path / "data")


def test_a_copy_replaces_earlier_data_whole(tmp_path: Path) -> None:
    """Copying over generated data leaves only the copied files, no marker from before."""
    prepare_data("synthetic", tmp_path / "data", records_per_file=30)
    source = _real_looking_folder(tmp_path / "mine" / BATCHES_FOLDER)
    result = prepare_data(str(source), tmp_path / "data")
    assert ([20] * 6, False) == (_records(result), result.synthetic)
    assert not (result.batches_dir / MARKER_FILE).exists()
