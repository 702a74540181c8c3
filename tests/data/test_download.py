"""Download, archive check and extraction, against a real HTTP server on 127.0.0.1 only."""

from __future__ import annotations

import hashlib
import http.server
import io
import socket
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprokit.data.cifar_format import BATCHES_FOLDER, DATA_FILES, verify_batches
from reprokit.data.download import (
    CIFAR10,
    download_archive,
    extract_archive,
    verify_archive,
)
from reprokit.data.synthetic import write_synthetic
from reprokit.errors import DataError

LOOPBACK = "127.0.0.1"  # the tests never listen on, or connect to, anything else


class _Routes(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, bytes]] = {}
    release = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
        if self.path == "/stall":  # sends the headers and a little, then goes quiet
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.wfile.flush()
            self.release.wait(10)
            return
        status, body = self.routes.get(self.path, (404, b"not found"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep the test output clean


@pytest.fixture
def server() -> Iterator[str]:
    """A threaded HTTP server bound to the loopback address; yields its base URL."""
    httpd = http.server.ThreadingHTTPServer((LOOPBACK, 0), _Routes)
    httpd.daemon_threads = True
    _Routes.release.clear()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://{LOOPBACK}:{httpd.server_address[1]}"
    _Routes.release.set()
    httpd.shutdown()
    httpd.server_close()
    _Routes.routes = {}


def _fake_archive(tmp_path: Path, records: int = 20) -> bytes:
    """A small archive laid out like the official one, around generated data."""
    source = tmp_path / "source" / BATCHES_FOLDER
    write_synthetic(source, records_per_file=records)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(source, arcname=BATCHES_FOLDER)
    return buffer.getvalue()


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_the_official_archive_facts_are_kept() -> None:
    """URL, size, md5 and sha256 of cifar-10-binary.tar.gz are the published ones."""
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz" == CIFAR10.url
    assert 170052171 == CIFAR10.size
    assert "c32a1d4ab5d03f1284b67883e8d87530" == CIFAR10.md5
    assert "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd" == CIFAR10.sha256


def test_a_download_lands_in_place_and_reports_progress(tmp_path: Path, server: str) -> None:
    """The archive is streamed, checked and renamed; progress ends at (size, size)."""
    body = _fake_archive(tmp_path)
    _Routes.routes = {"/cifar.tar.gz": (200, body)}
    dest = tmp_path / "data" / "cifar-10-binary.tar.gz"
    calls: list[tuple[int, int]] = []
    result = download_archive(dest, f"{server}/cifar.tar.gz", lambda d, t: calls.append((d, t)),
                              expected_size=len(body), expected_md5=_md5(body))
    assert dest == result
    assert body == dest.read_bytes()
    assert (len(body), len(body)) == calls[-1]
    assert ["cifar-10-binary.tar.gz"] == [p.name for p in dest.parent.iterdir()]


def test_a_wrong_checksum_removes_the_part_file(tmp_path: Path, server: str) -> None:
    """Bytes of the right length but the wrong md5 are refused, naming both checksums."""
    body = _fake_archive(tmp_path)
    _Routes.routes = {"/cifar.tar.gz": (200, body)}
    dest = tmp_path / "data" / "cifar-10-binary.tar.gz"
    with pytest.raises(DataError) as caught:
        download_archive(dest, f"{server}/cifar.tar.gz", expected_size=len(body),
                         expected_md5="0" * 32)
    text = caught.value.message
    assert f"has md5 {_md5(body)}, expected {'0' * 32}" in text
    assert f"{server}/cifar.tar.gz" in text
    assert "--source synthetic" in caught.value.hint
    assert [] == list(dest.parent.iterdir())


def test_a_short_download_is_reported_as_truncated(tmp_path: Path, server: str) -> None:
    """A server sending fewer bytes than expected gives a truncated? error and no file."""
    _Routes.routes = {"/cifar.tar.gz": (200, b"short")}
    dest = tmp_path / "cifar-10-binary.tar.gz"
    with pytest.raises(DataError, match=r"is 5 bytes, expected 100: truncated\?"):
        download_archive(dest, f"{server}/cifar.tar.gz", expected_size=100, expected_md5="0" * 32)
    assert [] == list(tmp_path.iterdir())


def test_a_server_error_is_reported_with_its_status(tmp_path: Path, server: str) -> None:
    """HTTP 500 becomes a DataError naming the URL, the status and the other sources."""
    _Routes.routes = {"/cifar.tar.gz": (500, b"boom")}
    dest = tmp_path / "cifar-10-binary.tar.gz"
    with pytest.raises(DataError) as caught:
        download_archive(dest, f"{server}/cifar.tar.gz", expected_size=4,
                         expected_md5=_md5(b"boom"))
    assert (f"could not download {server}/cifar.tar.gz: the server answered HTTP 500 "
            "Internal Server Error") == caught.value.message
    assert "`invoke data --source PATH`" in caught.value.hint
    assert [] == list(tmp_path.iterdir())


def test_a_refused_connection_is_reported(tmp_path: Path) -> None:
    """Nobody listening on the port gives a DataError naming the URL and the refusal."""
    url = f"http://{LOOPBACK}:{_closed_port()}/cifar.tar.gz"
    with pytest.raises(DataError) as caught:
        download_archive(tmp_path / "a.tar.gz", url, expected_size=4, expected_md5="0" * 32)
    assert caught.value.message.startswith(f"could not download {url}: ")
    assert "refused" in caught.value.message.lower()
    assert [] == list(tmp_path.iterdir())


def test_a_stalled_server_times_out(tmp_path: Path, server: str) -> None:
    """A server that stops sending mid-stream is given up on after the timeout."""
    with pytest.raises(DataError, match=r"no answer within 0\.3 s"):
        download_archive(tmp_path / "a.tar.gz", f"{server}/stall", timeout=0.3,
                         expected_size=1000, expected_md5="0" * 32)
    assert [] == list(tmp_path.iterdir())


def test_ctrl_c_removes_the_part_file_and_keeps_the_interrupt(tmp_path: Path, server: str) -> None:
    """An interrupt mid-download leaves nothing and can be told apart from a network error."""
    body = _fake_archive(tmp_path)
    _Routes.routes = {"/cifar.tar.gz": (200, body)}
    dest = tmp_path / "data" / "cifar-10-binary.tar.gz"

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(DataError, match="was interrupted") as caught:
        download_archive(dest, f"{server}/cifar.tar.gz", interrupt,
                         expected_size=len(body), expected_md5=_md5(body))
    assert isinstance(caught.value.__cause__, KeyboardInterrupt)
    assert [] == list(dest.parent.iterdir())


def test_a_failed_download_keeps_the_archive_already_there(tmp_path: Path, server: str) -> None:
    """The old file is replaced only by a download that passed its checks."""
    _Routes.routes = {"/cifar.tar.gz": (500, b"boom")}
    dest = tmp_path / "cifar-10-binary.tar.gz"
    dest.write_bytes(b"earlier")
    with pytest.raises(DataError):
        download_archive(dest, f"{server}/cifar.tar.gz", expected_size=4, expected_md5="0" * 32)
    assert b"earlier" == dest.read_bytes()


def test_verify_archive_accepts_the_expected_file_and_no_other(tmp_path: Path) -> None:
    """A file of the expected size and md5 passes; one changed byte does not."""
    path = tmp_path / "a.tar.gz"
    path.write_bytes(b"0123456789")
    verify_archive(path, expected_size=10, expected_md5=_md5(b"0123456789"))
    path.write_bytes(b"0123456780")
    with pytest.raises(DataError, match="has md5"):
        verify_archive(path, expected_size=10, expected_md5=_md5(b"0123456789"))


def test_verify_archive_names_expected_and_found_size(tmp_path: Path) -> None:
    """A wrong size is reported with the file and both byte counts."""
    path = tmp_path / "a.tar.gz"
    path.write_bytes(b"0123")
    with pytest.raises(DataError) as caught:
        verify_archive(path)
    assert f"{path} is 4 bytes, expected 170052171: truncated?" == caught.value.message


def test_verify_archive_names_expected_and_found_md5(tmp_path: Path) -> None:
    """A wrong md5 is reported with the file and both checksums."""
    path = tmp_path / "a.tar.gz"
    path.write_bytes(b"0123")
    with pytest.raises(DataError) as caught:
        verify_archive(path, expected_size=4, expected_md5="f" * 32)
    assert (f"{path} has md5 {_md5(b'0123')}, expected {'f' * 32}: corrupt or wrong file"
            == caught.value.message)


def test_verify_archive_reports_a_missing_file(tmp_path: Path) -> None:
    """An archive that is not there is named, with `invoke data` as the way out."""
    with pytest.raises(DataError, match="does not exist"):
        verify_archive(tmp_path / "cifar-10-binary.tar.gz")


def test_extraction_installs_a_verified_batches_folder(tmp_path: Path) -> None:
    """The known members land in data_dir/cifar-10-batches-bin, which then verifies."""
    archive = tmp_path / "cifar-10-binary.tar.gz"
    archive.write_bytes(_fake_archive(tmp_path))
    data_dir = tmp_path / "data"
    batches = extract_archive(archive, data_dir)
    assert data_dir / BATCHES_FOLDER == batches
    assert [20] * 6 == [f.records for f in verify_batches(batches).files]
    assert [BATCHES_FOLDER] == [p.name for p in data_dir.iterdir()]


def test_extraction_ignores_members_outside_the_known_names(tmp_path: Path) -> None:
    """A member aiming outside the folder, or unknown, is never written anywhere."""
    source = tmp_path / "source" / BATCHES_FOLDER
    write_synthetic(source, records_per_file=20)
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname=BATCHES_FOLDER)
        _add_member(tar, f"{BATCHES_FOLDER}/../../escaped.txt", b"gotcha")
        _add_member(tar, "/tmp/absolute.txt", b"gotcha")
        _add_member(tar, f"{BATCHES_FOLDER}/extra.txt", b"unknown")
    data_dir = tmp_path / "deep" / "data"
    batches = extract_archive(archive, data_dir)
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "deep" / "escaped.txt").exists()
    assert not (batches / "extra.txt").exists()
    assert [BATCHES_FOLDER] == [p.name for p in data_dir.iterdir()]


def test_extraction_refuses_a_link_in_place_of_a_data_file(tmp_path: Path) -> None:
    """A symlink named like a data file is refused and nothing is installed."""
    archive = tmp_path / "link.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        link = tarfile.TarInfo(f"{BATCHES_FOLDER}/data_batch_1.bin")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    data_dir = tmp_path / "data"
    with pytest.raises(DataError, match="data_batch_1.bin is not a regular file"):
        extract_archive(archive, data_dir)
    assert [] == list(data_dir.iterdir())


def test_extraction_names_missing_members_and_installs_nothing(tmp_path: Path) -> None:
    """An archive without test_batch.bin is refused by name."""
    archive = tmp_path / "partial.tar.gz"
    source = tmp_path / "source" / BATCHES_FOLDER
    write_synthetic(source, records_per_file=20)
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(source.iterdir()):
            if path.name != "test_batch.bin":
                tar.add(path, arcname=f"{BATCHES_FOLDER}/{path.name}")
    data_dir = tmp_path / "data"
    with pytest.raises(DataError, match=f"lacks {BATCHES_FOLDER}/test_batch.bin"):
        extract_archive(archive, data_dir)
    assert [] == list(data_dir.iterdir())


def test_extraction_names_a_truncated_member_inside_the_archive(tmp_path: Path) -> None:
    """A member cut short is named as archive:folder/file, and the old folder survives."""
    source = tmp_path / "source" / BATCHES_FOLDER
    write_synthetic(source, records_per_file=20)
    archive = tmp_path / "bad.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(source.iterdir()):
            data = path.read_bytes()
            _add_member(tar, f"{BATCHES_FOLDER}/{path.name}",
                        data[:-7] if path.name == DATA_FILES[1] else data)
    data_dir = tmp_path / "data"
    write_synthetic(data_dir / BATCHES_FOLDER, records_per_file=30)
    with pytest.raises(DataError) as caught:
        extract_archive(archive, data_dir)
    shown = f"{archive}:{BATCHES_FOLDER}/{DATA_FILES[1]}"
    assert f"{shown} is {20 * 3073 - 7} bytes" in caught.value.message
    assert [30] * 6 == [f.records for f in verify_batches(data_dir / BATCHES_FOLDER).files]
    assert [BATCHES_FOLDER] == [p.name for p in data_dir.iterdir()]


def test_extraction_reports_an_archive_that_is_not_gzip(tmp_path: Path) -> None:
    """Garbage in place of the archive is a DataError naming it, not a traceback."""
    archive = tmp_path / "cifar-10-binary.tar.gz"
    archive.write_bytes(b"<html>captive portal</html>")
    with pytest.raises(DataError, match=f"could not unpack {archive}"):
        extract_archive(archive, tmp_path / "data")
    assert not (tmp_path / "data" / BATCHES_FOLDER).exists()
