"""The request-id fix: built from its C source, preloaded, it replaces TensorFlow's own function."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.run import request_ids
from reprokit.run.request_ids import RequestIdFix, build

SYMBOL = "_ZN3tsl6random16ThreadLocalNew64Ev"  # tsl::random::ThreadLocalNew64()
# In a TensorFlow process with the library preloaded: the process's own lookup of the symbol
# must find the library's definition, not libtensorflow_framework's.
WHICH = f"""
import ctypes, sys
import tensorflow  # loads libtensorflow_framework, which defines the symbol too
process = ctypes.cast(getattr(ctypes.CDLL(None), "{SYMBOL}"), ctypes.c_void_p).value
ours = ctypes.cast(getattr(ctypes.CDLL(sys.argv[1]), "{SYMBOL}"), ctypes.c_void_p).value
draw = getattr(ctypes.CDLL(None), "{SYMBOL}")
draw.restype = ctypes.c_uint64
print(process == ours, len({{draw() for _ in range(1000)}}))
"""


def test_the_library_is_built_once_per_source_and_defines_tensorflows_symbol(tmp_path: Path):
    fix = build(tmp_path)
    assert fix.library is not None and fix.library.is_file(), fix.why_not
    assert {"LD_PRELOAD": str(fix.library)} == fix.env()
    assert fix.summary.startswith("on (")
    symbols = subprocess.run(["nm", "-D", str(fix.library)], capture_output=True, text=True).stdout
    assert f"T {SYMBOL}" in symbols
    built = fix.library.stat().st_mtime_ns
    assert (fix.library, built) == (build(tmp_path).library, fix.library.stat().st_mtime_ns)  # not rebuilt


def test_without_a_compiler_or_when_turned_off_the_fix_is_off_and_says_why(tmp_path: Path, monkeypatch):
    assert RequestIdFix(None, "turned off (request_id_fix: false in invoke.yaml)") == build(tmp_path, enabled=False)
    monkeypatch.setattr(request_ids.shutil, "which", lambda _: None)
    off = build(tmp_path)
    assert (None, {}) == (off.library, off.env())
    assert off.summary == "off: no C compiler (cc) here to build it; install gcc to turn it on"


@pytest.mark.slow
def test_preloaded_into_tensorflow_it_replaces_tensorflows_function(tmp_path: Path):
    """The symbol TensorFlow's master calls through the PLT resolves to the library's, which
    draws 64-bit values (1000 draws, 1000 different values)."""
    fix = build(tmp_path)
    assert fix.library is not None
    done = subprocess.run([sys.executable, "-c", WHICH, str(fix.library)], capture_output=True, text=True,
                          env={**os.environ, **fix.env(), "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300)
    assert "True 1000" == done.stdout.strip(), done.stderr[-2000:]
