"""Typed records and their JSON: dataclasses written with `asdict`, read back field by field.

results.json, bench.json, sweep.json and network.json are dataclasses all the way down. Writing
is `dataclasses.asdict`; :func:`from_json` reads a document back into the same classes, checking
each value against its field's annotation, so that a report or a table reads typed fields and
never a string key. A document that does not fit is a KitError naming the path to the bad value.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import TypeVar, Union, get_args, get_origin, get_type_hints

from reprokit.errors import KitError

T = TypeVar("T")


class RecordError(KitError):
    """A JSON document does not fit the record it should hold."""


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
