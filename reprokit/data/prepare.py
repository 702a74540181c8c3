"""Put a verified ``cifar-10-batches-bin`` folder into the data folder, from wherever it comes.

Sources: ``auto`` (what is there, else the archive in the data folder, else the download, else
generated data with a loud notice), ``url`` (the download, no fallback), ``synthetic``, or a
path to a ``.tar.gz`` archive or an extracted folder (``cifar-10-batches-bin`` or its parent).
Every route verifies before it installs, and installs by renaming a complete folder into place.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from reprokit.data.cifar_format import (
    BATCHES_FOLDER,
    DATA_FILES,
    META_FILE,
    README_FILE,
    BatchesInfo,
    BatchFile,
    verify_batches,
)
from reprokit.data.download import (
    CIFAR10,
    ArchiveSpec,
    DownloadProgress,
    download_archive,
    extract_archive,
    verify_archive,
)
from reprokit.data.synthetic import (
    MARKER_FILE,
    NOTE_FILE,
    SyntheticParams,
    read_marker,
    write_synthetic,
)
from reprokit.errors import DataError
from reprokit.files import staged_folder

KEYWORDS = ("auto", "url", "synthetic")
MEANING = "precision compares the modes' learning but says nothing about CIFAR-10; speed comparisons still hold."


@dataclass(frozen=True)
class DataResult:
    """Which data the trainer will read, and what a person must be told about it."""

    source: str  # what was actually used: "folder", "archive", "download" or "synthetic"
    batches_dir: Path  # .../cifar-10-batches-bin, absolute
    data_dir: Path  # its parent: the trainer's --data_dir, absolute
    notice: str  # empty unless a user must know something (generated data, above all)
    files: tuple[BatchFile, ...]
    synthetic: bool
    synthetic_params: SyntheticParams | None = None

    @property
    def official(self) -> bool:
        """True when every file is byte-identical to the published CIFAR-10 data."""
        return BatchesInfo(self.batches_dir, self.files).official


def prepare_data(
    source: str,
    data_dir: Path,
    *,
    records_per_file: int = 10000,
    progress: DownloadProgress | None = None,
    archive: ArchiveSpec = CIFAR10,
    timeout: float = 30,
) -> DataResult:
    """Make ``data_dir/cifar-10-batches-bin`` hold verified data from ``source``.

    ``records_per_file`` applies to generated data only; ``archive`` and ``timeout`` say what
    to download and how long to wait for it (tests point them at a local server).
    """
    data_dir = Path(data_dir).absolute()
    if source == "auto":
        return _auto(data_dir, records_per_file, progress, archive, timeout)
    if source == "url":
        return _from_url(data_dir, progress, archive, timeout)
    if source == "synthetic":
        return _synthetic(data_dir, records_per_file,
                          f"using GENERATED data (--source synthetic): {MEANING}")
    return _from_path(Path(source).expanduser().absolute(), data_dir, archive)


def _auto(
    data_dir: Path, records: int, progress: DownloadProgress | None, archive: ArchiveSpec, timeout: float
) -> DataResult:
    target = data_dir / BATCHES_FOLDER
    archive_path = data_dir / archive.name
    params = read_marker(target) if target.is_dir() else None
    if target.exists() and params is None:
        return _result("folder", _verify_installed(target))
    if archive_path.exists():  # a real archive beats generated data left by an earlier run
        try:
            _verify(archive_path, archive)
        except DataError as err:
            raise DataError(err.message, f"delete {archive_path} and run `invoke data` again "
                                         "to download it afresh, or pass `--source PATH` or "
                                         "`--source synthetic`") from err
        return _result("archive", verify_batches(extract_archive(archive_path, data_dir)))
    if params is not None:
        reused = _reuse_synthetic(target, records)
        if reused is not None:
            return reused
    try:
        download_archive(archive_path, archive.url, progress, timeout,
                         expected_size=archive.size, expected_md5=archive.md5)
    except DataError as err:
        if isinstance(err.__cause__, KeyboardInterrupt):
            raise  # Ctrl-C means stop, not "carry on with generated data"
        # "could not download URL: why" reads better as "could not be downloaded (URL: why)"
        reason = err.message.removeprefix("could not download ").replace("\n", " ")
        return _synthetic(data_dir, records, f"CIFAR-10 could not be downloaded ({reason}); "
                                             f"using GENERATED data: {MEANING}")
    return _result("download", verify_batches(extract_archive(archive_path, data_dir)))


def _from_url(
    data_dir: Path, progress: DownloadProgress | None, archive: ArchiveSpec, timeout: float
) -> DataResult:
    archive_path = data_dir / archive.name
    source = "archive"
    try:
        _verify(archive_path, archive)  # a good archive from an earlier run saves 170 MB
    except DataError:
        download_archive(archive_path, archive.url, progress, timeout,
                         expected_size=archive.size, expected_md5=archive.md5)
        source = "download"
    return _result(source, verify_batches(extract_archive(archive_path, data_dir)))


def _from_path(path: Path, data_dir: Path, archive: ArchiveSpec) -> DataResult:
    if not path.exists():
        raise DataError(
            f"data source {path} does not exist",
            f"pass an existing .tar.gz or folder, or one of {', '.join(KEYWORDS)}",
        )
    if path.is_file():
        _verify(path, archive)
        return _result("archive", verify_batches(extract_archive(path, data_dir)))
    batches = _batches_in(path)
    target = data_dir / BATCHES_FOLDER
    if batches.resolve() == target.resolve():
        return _result("folder", verify_batches(target))
    info = verify_batches(batches)  # before anything is copied
    with staged_folder(target) as staging:
        extras = [n for n in (META_FILE, README_FILE, MARKER_FILE, NOTE_FILE)
                  if (batches / n).is_file()]
        for name in DATA_FILES + tuple(extras):
            shutil.copyfile(batches / name, staging / name)
        copied = verify_batches(staging, shown_as=f"copy of {batches}")
        if [f.sha256 for f in copied.files] != [f.sha256 for f in info.files]:
            raise DataError(f"{batches} changed while it was being copied",
                            "wait until nothing writes to it, then run `invoke data` again")
    return _result("folder", verify_batches(target))


def _batches_in(path: Path) -> Path:
    names = DATA_FILES + (META_FILE,)
    if path.name == BATCHES_FOLDER or any((path / n).exists() for n in names):
        return path
    if (path / BATCHES_FOLDER).is_dir():
        return path / BATCHES_FOLDER
    raise DataError(
        f"{path} holds neither the CIFAR-10 files ({DATA_FILES[0]} ...) "
        f"nor a {BATCHES_FOLDER} folder",
        f"pass the {BATCHES_FOLDER} folder, its parent, or the .tar.gz archive",
    )


def _synthetic(data_dir: Path, records: int, notice: str) -> DataResult:
    target = data_dir / BATCHES_FOLDER
    reused = _reuse_synthetic(target, records) if target.is_dir() else None
    if reused is not None:
        return reused
    write_synthetic(target, records)
    return _result("synthetic", verify_batches(target), notice)


def _reuse_synthetic(target: Path, records: int) -> DataResult | None:
    """The generated folder already in place, if it was made with these parameters and is intact."""
    params = read_marker(target)
    if params is None or params != SyntheticParams(records, params.seed):
        return None
    try:
        info = verify_batches(target)
    except DataError:
        return None  # ours and damaged: regenerate rather than complain
    return _result("synthetic", info,
                   f"using GENERATED data left in {target} by an earlier run: {MEANING} "
                   "Run `invoke data --source url` to replace it with CIFAR-10.")


def _verify_installed(target: Path) -> BatchesInfo:
    try:
        return verify_batches(target)
    except DataError as err:
        raise DataError(err.message, f"delete {target} and run `invoke data` again, "
                                     "or pass `--source PATH` or `--source synthetic`") from err


def _verify(path: Path, archive: ArchiveSpec) -> None:
    verify_archive(path, expected_size=archive.size, expected_md5=archive.md5)


def _result(source: str, info: BatchesInfo, notice: str = "") -> DataResult:
    params = read_marker(info.folder)
    if params is not None and not notice:
        notice = f"using GENERATED data ({info.folder} says so in {MARKER_FILE}): {MEANING}"
    return DataResult(
        source=source,
        batches_dir=info.folder,
        data_dir=info.folder.parent,
        notice=notice,
        files=info.files,
        synthetic=params is not None,
        synthetic_params=params,
    )
