"""Results files that carry their format: written as `asdict` of a dataclass, read back into it.

A benchmark's JSON (bench.json, sweep.json, network.json) is the dataclass that tables and plots
take, with a `format_version`. Reading one back checks the version first, so that a file of
another kit is refused with what to do rather than misread; reprokit.records then rebuilds every
nested dataclass, naming where a file does not fit.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from reprokit.errors import KitError
from reprokit.files import write_json
from reprokit.records import from_json

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class ResultsFormatError(KitError):
    """A results file cannot be read, or is of another format version."""


D = TypeVar("D", bound="Document")


class Document:
    """Mixin of a results dataclass: its file name, its format version, write and load."""

    FILE: ClassVar[str]
    FORMAT_VERSION: ClassVar[int]

    def write(self, folder: Path) -> Path:
        """``folder``/FILE: `asdict` of the results, as JSON."""
        document: DataclassInstance = self  # type: ignore[assignment]  # every Document is a dataclass
        return write_json(folder / self.FILE, dataclasses.asdict(document))

    @classmethod
    def load(cls: type[D], path: Path) -> D:
        """The results in ``path``, if it is of this kit's format version."""
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise ResultsFormatError(f"cannot read {path}: {error}", "run the benchmark again to write it") from None
        version = data.get("format_version") if isinstance(data, dict) else None
        if version != cls.FORMAT_VERSION:
            raise ResultsFormatError(
                f"{path} is {cls.FILE} format version {version}; this kit reads version {cls.FORMAT_VERSION}",
                "run the benchmark again with this kit to write it in this format "
                "(or read it with the kit that wrote it)")
        return from_json(cls, data, path.name)
