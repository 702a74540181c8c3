"""The kit's YAML data files (rules, eval rules, claims): read, and their one top-level key checked.

Each file documents its vocabulary in a comment block at its top; every complaint points there.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from reprokit.errors import KitError


def vocabulary_hint(path: Path) -> str:
    return f"see the vocabulary in the comment block at the top of {path}"


def load_section(path: Path, key: str, kind: type[list[object]] | type[dict[object, object]],
                 error: type[KitError], what: str) -> object:
    """The value under ``key``, the file's one top-level key, which must be a ``kind``; ``error``
    (naming ``what`` file it is) when the file cannot be read, is not YAML, or has another shape."""
    hint = vocabulary_hint(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise error(f"cannot read the {what} file {path}: {err}") from None
    except yaml.YAMLError as err:
        raise error(f"{path} is not valid YAML: {err}", hint) from None
    if not isinstance(data, dict) or set(data) != {key} or not isinstance(data[key], kind):
        shape = "a list" if kind is list else "a mapping"
        raise error(f"{path}: expected one top-level key, '{key}', holding {shape}", hint)
    return data[key]
