"""The kit's fix for TensorFlow 2.21's duplicate RunGraph aborts: build the preload library
(native/request_ids.c, which says why) and the environment that applies it.

The library is built once per source with the machine's C compiler into build/native/, keyed by
the source's hash. Where there is no compiler the fix is off, the run says so, and the report
counts the dead input threads it then costs (about 5 per 1000 steps of the article's program).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from reprokit import commands
from reprokit.files import make_folder

SOURCE = Path(__file__).resolve().parent / "native" / "request_ids.c"


def native_dir(build_dir: Path) -> Path:
    """Where the built library goes (containers mount it at the same path)."""
    return build_dir / "native"


@dataclass(frozen=True)
class RequestIdFix:
    """The built library, or why there is none."""

    library: Path | None
    why_not: str = ""

    def env(self) -> dict[str, str]:
        """What a TensorFlow process's environment gets: the library preloaded, or nothing."""
        return {"LD_PRELOAD": str(self.library)} if self.library else {}

    @property
    def summary(self) -> str:
        return f"on ({self.library})" if self.library else f"off: {self.why_not}"


def build(build_dir: Path, enabled: bool = True) -> RequestIdFix:
    """The library for this source, compiled now if it is not already there."""
    if not enabled:
        return RequestIdFix(None, "turned off (request_id_fix: false in invoke.yaml)")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return RequestIdFix(None, "no C compiler (cc) here to build it; install gcc to turn it on")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    library = make_folder(native_dir(build_dir)) / f"librequest_ids-{digest}.so"
    if not library.is_file():
        partial = library.with_suffix(".so.partial")
        code, output = commands.attempt([compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(SOURCE)])
        if code != 0:
            partial.unlink(missing_ok=True)
            return RequestIdFix(None, f"{compiler} could not build {SOURCE.name}: {output.strip()[-300:]}")
        partial.replace(library)
        library.chmod(0o755)
    return RequestIdFix(library)
