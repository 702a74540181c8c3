"""Fetch, check and unpack the official ``cifar-10-binary.tar.gz``.

Nothing half-done is ever left where a later step would trust it: the download streams into
``<archive>.part`` and is renamed only once size and md5 match; the archive is unpacked into a
hidden sibling folder that replaces ``cifar-10-batches-bin`` only after it verifies.
"""

from __future__ import annotations

import hashlib
import http.client
import shutil
import tarfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reprokit import __version__
from reprokit.data.cifar_format import (
    BATCHES_FOLDER,
    DATA_FILES,
    META_FILE,
    README_FILE,
    verify_batches,
)
from reprokit.errors import DataError
from reprokit.files import file_digest, staged_folder

DownloadProgress = Callable[[int, int], None]  # bytes done, bytes in all


@dataclass(frozen=True)
class ArchiveSpec:
    """Where an archive comes from and what it must look like once fetched."""

    url: str
    size: int
    md5: str
    sha256: str = ""  # kept as a fact; the official page publishes only the md5
    name: str = "cifar-10-binary.tar.gz"


# https: the http address the 2017 tutorial used now redirects (spec/upstream.md section 8).
CIFAR10 = ArchiveSpec(
    url="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
    size=170052171,
    md5="c32a1d4ab5d03f1284b67883e8d87530",
    sha256="c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
)

FALLBACK_HINT = (
    "check the network and retry, or fetch the archive yourself and run "
    "`invoke data --source PATH` (the .tar.gz or its extracted folder), "
    "or use generated data with `invoke data --source synthetic`"
)
ARCHIVE_HINT = (
    "delete it and download it afresh with `invoke data --source url`, "
    "or pass another `invoke data --source PATH`, or use `--source synthetic`"
)
_CHUNK = 1 << 20
_MEMBERS = DATA_FILES + (META_FILE,)
_OPTIONAL_MEMBERS = (README_FILE,)


def download_archive(
    dest: Path,
    url: str = CIFAR10.url,
    progress: DownloadProgress | None = None,
    timeout: float = 30,
    *,
    expected_size: int = CIFAR10.size,
    expected_md5: str = CIFAR10.md5,
) -> Path:
    """Download ``url`` to ``dest`` and check its size and md5; return ``dest``.

    ``progress(done, total)`` is called after every chunk. On any failure, Ctrl-C included,
    the ``.part`` file is removed and DataError is raised (``__cause__`` keeps the original
    exception, so a caller can tell an interrupt from a network error).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        size, md5 = _fetch(url, part, progress, timeout, expected_size)
        _compare(f"{part} (downloaded from {url})", size, md5, expected_size, expected_md5,
                 FALLBACK_HINT)
        part.replace(dest)
    except KeyboardInterrupt as interrupt:
        part.unlink(missing_ok=True)
        raise DataError(f"download of {url} was interrupted; removed {part}",
                        FALLBACK_HINT) from interrupt
    except DataError:
        part.unlink(missing_ok=True)
        raise
    except (OSError, http.client.HTTPException, ValueError) as err:
        # OSError covers URLError, HTTPError, refused connections, timeouts and a full disk.
        part.unlink(missing_ok=True)
        raise DataError(f"could not download {url}: {_reason(err, timeout)}",
                        FALLBACK_HINT) from err
    return dest


def verify_archive(
    path: Path, *, expected_size: int = CIFAR10.size, expected_md5: str = CIFAR10.md5
) -> None:
    """Raise DataError unless ``path`` has the expected size and md5."""
    if not path.is_file():
        raise DataError(f"archive {path} does not exist", "run `invoke data` (see docs/article.md#the-data)")
    size = path.stat().st_size
    if size != expected_size:  # cheap, and the usual failure: a cut-short download
        _compare(str(path), size, "", expected_size, expected_md5, ARCHIVE_HINT)
    _compare(str(path), size, file_digest(path, "md5"), expected_size, expected_md5, ARCHIVE_HINT)


def extract_archive(archive: Path, data_dir: Path) -> Path:
    """Unpack the CIFAR-10 files of ``archive`` into ``data_dir/cifar-10-batches-bin``.

    Only the known member names are read, each written under its own known name, so no
    member can land outside the folder; links and other odd members are refused.
    """
    target = data_dir / BATCHES_FOLDER
    shown = f"{archive}:{BATCHES_FOLDER}"
    try:
        with tarfile.open(archive, "r:gz") as tar, staged_folder(target) as staging:
            found = _extract_members(tar, archive, staging)
            missing = [n for n in _MEMBERS if n not in found]
            if missing:
                names = ", ".join(f"{BATCHES_FOLDER}/{n}" for n in missing)
                raise DataError(f"archive {archive} lacks {names}", ARCHIVE_HINT)
            verify_batches(staging, shown_as=shown)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as err:
        raise DataError(f"could not unpack {archive}: {err}", ARCHIVE_HINT) from err
    return target


def _extract_members(tar: tarfile.TarFile, archive: Path, staging: Path) -> set[str]:
    wanted = {f"{BATCHES_FOLDER}/{n}": n for n in _MEMBERS + _OPTIONAL_MEMBERS}
    found: set[str] = set()
    for member in tar:
        name = wanted.get(member.name.removeprefix("./"))
        if name is None:
            continue  # the folder entry itself, or something we have no use for
        source = tar.extractfile(member) if member.isreg() else None
        if source is None:
            raise DataError(f"archive {archive}: member {member.name} is not a regular file",
                            ARCHIVE_HINT)
        with source, open(staging / name, "wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
        found.add(name)
    return found


def _fetch(
    url: str, part: Path, progress: DownloadProgress | None, timeout: float, expected_size: int
) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"User-Agent": f"reprokit/{__version__}"})
    digest = hashlib.md5(usedforsecurity=False)
    done = 0
    with urllib.request.urlopen(request, timeout=timeout) as response, open(part, "wb") as out:
        announced = response.headers.get("Content-Length")
        total = int(announced) if announced and announced.isdigit() else expected_size
        if total != expected_size:  # fail before fetching megabytes of the wrong thing
            _compare(f"{url} (Content-Length)", total, "", expected_size, "", FALLBACK_HINT)
        while chunk := response.read(_CHUNK):
            out.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if done > expected_size:
                _compare(f"{part} (downloaded from {url})", done, "", expected_size, "",
                         FALLBACK_HINT)
            if progress is not None:
                progress(done, total)
    return done, digest.hexdigest()


def _compare(
    shown: str, size: int, md5: str, expected_size: int, expected_md5: str, hint: str
) -> None:
    if size != expected_size:
        verdict = "truncated?" if size < expected_size else "not the CIFAR-10 binary archive?"
        raise DataError(f"{shown} is {size} bytes, expected {expected_size}: {verdict}", hint)
    if md5 != expected_md5:
        raise DataError(f"{shown} has md5 {md5}, expected {expected_md5}: corrupt or wrong file",
                        hint)


def _reason(err: BaseException, timeout: float) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"the server answered HTTP {err.code} {err.reason}"
    if isinstance(err, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(err, urllib.error.URLError):
        return str(err.reason)
    return str(err) or type(err).__name__
