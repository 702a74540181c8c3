"""The kit's settings: paths and defaults, read once from invoke.yaml by tasks.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from reprokit.errors import KitError
from reprokit.run.runner import Watchdog


@dataclass(frozen=True)
class Settings:
    root: Path
    upstream_dir: Path
    patches_dir: Path
    sources_dir: Path
    data_dir: Path
    runs_dir: Path
    rules: Path
    steps: int = 1000
    quick_steps: int = 51
    workers: int = 2
    layout: str = "spread"
    data_source: str = "auto"
    synthetic_records: int = 10000
    backend: str = "local"
    isolation: str = "auto"
    probe_timeout_s: float = 60.0
    first_step_timeout_s: float = 900.0
    stall_factor: float = 20.0
    stall_floor_s: float = 120.0
    request_id_fix: bool = True

    @property
    def watchdog(self) -> Watchdog:
        return Watchdog(self.first_step_timeout_s, self.stall_factor, self.stall_floor_s)

    @property
    def build_dir(self) -> Path:
        """Where the kit builds what is not a source: the patched sources' parent folder."""
        return self.sources_dir.parent

    @property
    def article_logs(self) -> Path:
        return self.rules.parent / "article"


def from_mapping(values: Mapping[str, Any], root: Path) -> Settings:
    """Settings from invoke's `reprokit:` config; relative paths are under root.

    An unknown key is refused, naming the known ones: a misspelt `stall_factr` must not leave
    the default silently in force. Values are checked against each setting's type."""
    known = {f.name: f for f in fields(Settings) if f.name != "root"}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise KitError(f"invoke.yaml: unknown setting{'s' if len(unknown) > 1 else ''} under `reprokit:`: "
                       f"{', '.join(unknown)}", f"the settings are: {', '.join(known)}")
    kwargs: dict[str, Any] = {"root": root}
    for key, value in values.items():
        kwargs[key] = _typed(key, known[key].type, value, root)
    missing = [name for name, f in known.items() if f.default is MISSING and name not in kwargs]
    if missing:
        raise KitError(f"invoke.yaml: `reprokit:` lacks {', '.join(missing)}",
                       "restore the repository's invoke.yaml (`git checkout invoke.yaml`)")
    return Settings(**kwargs)


def _typed(key: str, kind: Any, value: Any, root: Path) -> Any:
    kinds = {"Path": Path, "int": int, "float": float, "str": str, "bool": bool}
    convert = kinds.get(kind if isinstance(kind, str) else getattr(kind, "__name__", ""), str)
    if convert is bool:
        if not isinstance(value, bool):
            raise KitError(f"invoke.yaml: reprokit.{key} = {value!r} is not true or false", "fix that line of invoke.yaml")
        return value
    try:
        if convert is Path:
            return Path(value) if Path(value).is_absolute() else root / value
        if convert in (int, float) and isinstance(value, bool):
            raise ValueError("a yes/no where a number belongs")
        return convert(value)
    except (TypeError, ValueError) as error:
        raise KitError(f"invoke.yaml: reprokit.{key} = {value!r} is not a {convert.__name__} ({error})",
                       "fix that line of invoke.yaml") from None
