"""Helpers the tests share; their fixtures are registered in tests/conftest.py."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "samples"


def read_lines(path: Path) -> list[str]:
    """A text file's lines, as the patch code takes them."""
    return path.read_text(encoding="utf-8").splitlines()
