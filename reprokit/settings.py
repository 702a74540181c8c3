"""The kit's settings: paths and defaults, read once from invoke.yaml by tasks.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


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

    @property
    def role_server(self) -> Path:
        return Path(__file__).parent / "run" / "role_server.py"

    @property
    def article_logs(self) -> Path:
        return self.rules.parent / "article"


def from_mapping(values: Mapping[str, Any], root: Path) -> Settings:
    """Build Settings from invoke's `reprokit:` config; relative paths are under root."""
    known = {f.name: f for f in fields(Settings)}
    kwargs: dict[str, Any] = {"root": root}
    for key, value in values.items():
        if key not in known or key == "root":
            continue
        if known[key].type in ("Path",):
            value = Path(value) if Path(value).is_absolute() else root / value
        kwargs[key] = value
    return Settings(**kwargs)
