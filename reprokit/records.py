"""Typed records and their JSON: dataclasses written with `asdict`, read back field by field.

results.json, bench.json, sweep.json, network.json and mutants.json are dataclasses all the way
down, each a :class:`Document` with its file name and format version: the one writer and reader
of the kit's JSON documents. Writing is `dataclasses.asdict`; reading checks the format version
first, so that a file of another kit is refused with what to do rather than misread, then
:func:`from_json` rebuilds every nested dataclass, checking each value against its field's
annotation, so that a report or a table reads typed fields and never a string key. A document
that does not fit is a KitError naming the path to the bad value.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    ClassVar,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from reprokit.errors import KitError
from reprokit.files import write_json, write_text

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")


class RecordError(KitError):
    """A JSON document does not fit the record it should hold."""


class ResultsFormatError(KitError):
    """A results document cannot be read, or is of another format version."""


D = TypeVar("D", bound="Document")


class Document:
    """Mixin of a results dataclass: its file name, its format version, what to do when a file
    cannot be read (``AGAIN``), write and load."""

    FILE: ClassVar[str]
    FORMAT_VERSION: ClassVar[int]
    AGAIN: ClassVar[str]  # the hint: how to write the document again with this kit

    def write(self, folder: Path) -> Path:
        """``folder``/FILE: `asdict` of the results, as JSON."""
        document: DataclassInstance = self  # type: ignore[assignment]  # every Document is a dataclass
        return write_json(Path(folder) / self.FILE, dataclasses.asdict(document))

    @classmethod
    def load(cls: type[D], path: Path) -> D:
        """The document in ``path`` (a FILE), if it is of this kit's format version."""
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise ResultsFormatError(f"cannot read {path}: {error}", cls.AGAIN) from None
        version = data.get("format_version") if isinstance(data, dict) else None
        if version != cls.FORMAT_VERSION:
            raise ResultsFormatError(
                f"{path} is {cls.FILE} format version {version}; this kit reads version {cls.FORMAT_VERSION}",
                f"{cls.AGAIN} (or read it with the kit that wrote it)")
        try:
            return from_json(cls, data, path.name)
        except RecordError as error:
            raise ResultsFormatError(f"{path} does not fit {cls.FILE} format {cls.FORMAT_VERSION}: {error}",
                                     cls.AGAIN) from None


@dataclasses.dataclass
class RunsTable(Document):
    """The document of a task that runs a catalogue of short reproductions and tabulates them
    (`invoke mutants`, `invoke faults`): where it wrote, the command, the steps a run, when; each
    task's class adds its rows and its format version."""

    folder: str
    command: str
    steps: int
    started: str
    finished: str = ""

    def heading(self, title: str) -> list[str]:
        """The first lines of the task's page: the title, then the command, when and how long a run."""
        return [f"# {title}", "", f"`{self.command}`, started {self.started}, {self.steps} steps a run.", ""]

    def keep(self, page: str, lines: list[str]) -> None:
        """The document and its page (``page``, made of ``lines``) written into its folder: after
        every run, so that an interrupted task keeps what it measured."""
        self.write(Path(self.folder))
        write_text(Path(self.folder) / page, "\n".join(lines) + "\n")


def from_json(cls: type[T], data: object, where: str = "$") -> T:
    """``data`` (parsed JSON) as an instance of the dataclass ``cls``."""
    return typing.cast(T, _value(cls, data, where))


def _value(kind: object, data: object, where: str) -> object:
    origin, args = get_origin(kind), get_args(kind)
    if kind is typing.Any or kind is object:
        return data
    if origin in (Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _value(option, data, where)
            except RecordError as error:
                errors.append(str(error))
        raise RecordError(f"{where}: {data!r} fits none of {kind}: " + "; ".join(errors))
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected an object for {kind.__name__}, got {type(data).__name__}")
        hints = get_type_hints(kind)
        names = {f.name for f in dataclasses.fields(kind) if f.init}
        unknown = sorted(set(data) - names)
        if unknown:
            raise RecordError(f"{where}: unknown keys for {kind.__name__}: {', '.join(unknown)}")
        missing = sorted(f.name for f in dataclasses.fields(kind) if f.init and f.name not in data
                         and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        if missing:
            raise RecordError(f"{where}: {kind.__name__} lacks {', '.join(missing)}")
        return kind(**{name: _value(hints[name], value, f"{where}.{name}") for name, value in data.items()})
    if origin is list:
        if not isinstance(data, list):
            raise RecordError(f"{where}: expected a list, got {type(data).__name__}")
        return [_value(args[0], item, f"{where}[{i}]") for i, item in enumerate(data)]
    if origin is tuple:
        if not isinstance(data, list):
            raise RecordError(f"{where}: expected a list, got {type(data).__name__}")
        items = args[:1] * len(data) if len(args) == 2 and args[1] is Ellipsis else args
        if len(items) != len(data):
            raise RecordError(f"{where}: expected {len(items)} items, got {len(data)}")
        return tuple(_value(k, item, f"{where}[{i}]") for i, (k, item) in enumerate(zip(items, data)))
    if origin is dict:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected an object, got {type(data).__name__}")
        return {key: _value(args[1], value, f"{where}.{key}") for key, value in data.items()}
    if kind is Path:
        if not isinstance(data, str):
            raise RecordError(f"{where}: expected a path, got {data!r}")
        return Path(data)
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if isinstance(kind, type) and isinstance(data, kind) and not (kind is int and isinstance(data, bool)):
        return data
    raise RecordError(f"{where}: expected {getattr(kind, '__name__', kind)}, got {data!r}")
