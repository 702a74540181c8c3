"""Helpers the tests share; their fixtures are registered in tests/conftest.py."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "samples"
