"""upstream/ and its recorded checksums: drift is caught before any patch is applied."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from reprokit.errors import UpstreamDriftError
from reprokit.sources.upstream import (
    CHECKSUM_FILE,
    check_upstream,
    read_checksums,
    require_pristine,
    sha256_file,
)
from tests.support import REPO, read_lines

ROOT = REPO
UPSTREAM = ROOT / "upstream"
FILES = ["cifar10.py", "cifar10_eval.py", "cifar10_input.py", "cifar10_multi_gpu_train.py"]


def test_sha256sums_records_the_four_upstream_files():
    """SHA256SUMS lists exactly the two modules, the trainer and the evaluation, each with a 64-digit sum."""
    sums = read_checksums(UPSTREAM)
    assert FILES == sorted(sums)
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in sums.values())


def test_the_committed_upstream_matches_its_recorded_checksums():
    """Every upstream file is as it was reviewed: require_pristine passes and every check is ok."""
    checks = require_pristine(UPSTREAM)
    assert FILES == sorted(c.name for c in checks)
    assert all(c.ok for c in checks)


def test_sha256sums_is_in_the_format_sha256sum_checks():
    """`sha256sum -c SHA256SUMS` in upstream/ agrees that every file is OK."""
    tool = shutil.which("sha256sum")
    if tool is None:
        pytest.skip("`sha256sum` is not installed: cannot cross-check SHA256SUMS with it")
    result = subprocess.run([tool, "-c", CHECKSUM_FILE], cwd=UPSTREAM, capture_output=True, text=True)
    assert 0 == result.returncode, result.stdout + result.stderr
    assert [f"{n}: OK" for n in FILES] == sorted(result.stdout.splitlines())


def test_sha256_file_is_the_sha256_of_the_bytes(tmp_path):
    """sha256_file gives hashlib's digest of the file's content."""
    path = tmp_path / "f"
    path.write_bytes(b"abc\n" * 1000)
    assert hashlib.sha256(b"abc\n" * 1000).hexdigest() == sha256_file(path)


def test_read_lines_gives_the_lines_without_their_newlines(tmp_path):
    """read_lines splits on newlines and keeps the lines' text."""
    path = tmp_path / "f.py"
    path.write_text("a\n  b\n\nc\n")
    assert ["a", "  b", "", "c"] == read_lines(path)


@pytest.fixture
def upstream(kit: Path) -> Path:
    return kit / "upstream"


def test_a_changed_upstream_file_raises_drift_naming_the_file_both_sums_and_what_to_do(upstream):
    """One byte added to cifar10.py: UpstreamDriftError names upstream/cifar10.py, found and expected sums."""
    path = upstream / "cifar10.py"
    path.write_bytes(path.read_bytes() + b"\n")
    expected_sum = read_checksums(upstream)["cifar10.py"]
    with pytest.raises(UpstreamDriftError) as caught:
        require_pristine(upstream)
    message = str(caught.value)
    assert f"upstream/cifar10.py has sha256 {sha256_file(path)}, expected {expected_sum}" in message
    assert "git checkout upstream/" in message
    assert "record the new sum in upstream/SHA256SUMS" in message


def test_check_upstream_marks_only_the_changed_file(upstream):
    """check_upstream gives one verdict per file: the edited one is not ok, the others are."""
    path = upstream / "cifar10_input.py"
    path.write_text(path.read_text() + "# a local edit\n")
    verdicts = {c.name: c.ok for c in check_upstream(upstream)}
    assert {"cifar10.py": True, "cifar10_eval.py": True, "cifar10_input.py": False,
            "cifar10_multi_gpu_train.py": True} == verdicts


def test_a_missing_upstream_file_is_reported_as_missing(upstream):
    """A deleted trainer: its check has no sum, and require_pristine says it is missing."""
    (upstream / "cifar10_multi_gpu_train.py").unlink()
    (check,) = [c for c in check_upstream(upstream) if c.name == "cifar10_multi_gpu_train.py"]
    assert (None, False) == (check.found, check.ok)
    with pytest.raises(UpstreamDriftError, match=r"upstream/cifar10_multi_gpu_train\.py is missing"):
        require_pristine(upstream)


def test_a_missing_checksum_file_is_reported_with_how_to_restore_it(upstream):
    """Without SHA256SUMS nothing can be verified: the error says so and how to restore it."""
    (upstream / CHECKSUM_FILE).unlink()
    with pytest.raises(UpstreamDriftError) as caught:
        read_checksums(upstream)
    assert f"{upstream / CHECKSUM_FILE} is missing" in str(caught.value)
    assert "git checkout upstream/" in str(caught.value)


def test_a_malformed_checksum_line_is_named_by_its_line_number(upstream):
    """A line that is not '<sha256>  <file>' is reported with its number and text."""
    path = upstream / CHECKSUM_FILE
    path.write_text(path.read_text() + "deadbeef  cifar10_extra.py\n")
    with pytest.raises(UpstreamDriftError) as caught:
        read_checksums(upstream)
    assert f"{path}:5: not '<sha256>  <file>': 'deadbeef  cifar10_extra.py'" == str(caught.value)


def test_the_binary_mode_star_of_sha256sum_is_accepted(upstream):
    """'<sum> *<file>' (sha256sum -b) names the same file as '<sum>  <file>'."""
    path = upstream / CHECKSUM_FILE
    path.write_text(path.read_text().replace("  cifar10.py", " *cifar10.py"))
    assert read_checksums(UPSTREAM) == read_checksums(upstream)
