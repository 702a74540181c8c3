"""reprokit.records: typed records written with asdict and read back field by field."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from reprokit.records import RecordError, from_json


@dataclass(frozen=True)
class Inner:
    rate: float
    where: Path


@dataclass
class Outer:
    name: str
    inner: Inner | None
    items: list[Inner]
    table: dict[str, list[int]]
    pair: tuple[int, int]
    note: str = ""
    tags: list[str] = field(default_factory=list)


def test_a_record_survives_json_and_comes_back_equal() -> None:
    """Nested dataclasses, lists, dicts, tuples, paths and optionals round-trip."""
    record = Outer("x", Inner(1.5, Path("/a")), [Inner(2.0, Path("b"))], {"k": [1, 2]}, (3, 4), tags=["t"])
    assert record == from_json(Outer, json.loads(json.dumps(asdict(record), default=str)))


def test_a_whole_number_where_a_float_belongs_is_read_as_a_float() -> None:
    """JSON writes 2.0 as 2 in some writers: the field still gets a float."""
    assert 2.0 == from_json(Inner, {"rate": 2, "where": "/a"}).rate
    assert isinstance(from_json(Inner, {"rate": 2, "where": "/a"}).rate, float)


@pytest.mark.parametrize("data, where", [
    ({"rate": "fast", "where": "/a"}, "$.rate"),
    ({"rate": 1.0, "where": "/a", "extra": 1}, "unknown keys for Inner: extra"),
    ({"rate": True, "where": "/a"}, "$.rate"),
    ([1, 2], "expected an object for Inner"),
])
def test_a_value_that_does_not_fit_is_an_error_naming_where_it_is(data: object, where: str) -> None:
    """The error's path leads to the bad value."""
    with pytest.raises(RecordError, match=__import__("re").escape(where)):
        from_json(Inner, data)


def test_a_missing_required_field_is_an_error() -> None:
    """A record without one of its fields is not silently half-made."""
    with pytest.raises(RecordError, match=r"\$: Inner lacks where"):
        from_json(Inner, {"rate": 1.0})
