"""The kit's settings: paths and defaults, read once from invoke.yaml by tasks.py.

Every default lives in the kit's invoke.yaml and nowhere else: :func:`from_mapping` lays the
values it is given over that file's, so a test or a user's own invoke.yaml names only what it
changes, and no default is written twice (not here, not in tasks.py, not in a view).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from reprokit.errors import KitError
from reprokit.run.runner import Watchdog

KIT_CONFIG = Path(__file__).resolve().parent.parent / "invoke.yaml"


@dataclass(frozen=True)
class Settings:
    root: Path
    upstream_dir: Path
    patches_dir: Path
    mutants_dir: Path
    sources_dir: Path
    data_dir: Path
    runs_dir: Path
    records_dir: Path
    rules: Path
    steps: int
    quick_steps: int
    repetitions: int
    workers: int
    layout: str
    data_source: str
    synthetic_records: int
    backend: str
    isolation: str
    program: str
    tuning: str
    bench_repetitions: int
    bench_steps: int
    bench_loss_steps: int
    bench_ablation_each_repetition: bool
    bench_programs: str
    bench_tunings: str
    bench_levers: bool
    sweep_steps: int
    sweep_workers: str
    network_workers: int
    sweep_programs: str
    probe_timeout_s: float
    first_step_timeout_s: float
    stall_factor: float
    stall_floor_s: float
    request_id_fix: bool
    retryable_exit_codes: str
    backoff_limit: int
    restart_backoff_s: float
    update_check: bool

    @property
    def watchdog(self) -> Watchdog:
        return Watchdog(self.probe_timeout_s, self.first_step_timeout_s, self.stall_factor, self.stall_floor_s)

    @property
    def build_dir(self) -> Path:
        """Where the kit builds what is not a source: the patched sources' parent folder."""
        return self.sources_dir.parent

    @property
    def article_logs(self) -> Path:
        return self.rules.parent / "article"

    @property
    def claims(self) -> Path:
        return self.rules.parent / "claims.yaml"

    @property
    def eval_rules(self) -> Path:
        return self.rules.parent / "eval_rules.yaml"


def kit_defaults() -> dict[str, object]:
    """The `reprokit:` section of the kit's own invoke.yaml: the one home of every default."""
    try:
        section = (yaml.safe_load(KIT_CONFIG.read_text(encoding="utf-8")) or {}).get("reprokit")
    except (OSError, yaml.YAMLError) as error:
        raise KitError(f"cannot read the kit's defaults in {KIT_CONFIG}: {error}",
                       "restore it (`git checkout invoke.yaml`)") from None
    if not isinstance(section, dict):
        raise KitError(f"{KIT_CONFIG} has no `reprokit:` section", "restore it (`git checkout invoke.yaml`)")
    return section


def from_mapping(values: Mapping[str, object], root: Path) -> Settings:
    """Settings from invoke's `reprokit:` config laid over the kit's defaults; relative paths are
    under root.

    An unknown key is refused, naming the known ones: a misspelt `stall_factr` must not leave
    the default silently in force. Values are checked against each setting's type."""
    known = {f.name: f for f in fields(Settings) if f.name != "root"}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise KitError(f"invoke.yaml: unknown setting{'s' if len(unknown) > 1 else ''} under `reprokit:`: "
                       f"{', '.join(unknown)}", f"the settings are: {', '.join(known)}")
    merged = {**kit_defaults(), **values}
    missing = [name for name in known if name not in merged]
    if missing:
        raise KitError(f"invoke.yaml: `reprokit:` lacks {', '.join(missing)}",
                       "restore the repository's invoke.yaml (`git checkout invoke.yaml`)")
    typed = {key: _typed(key, str(known[key].type), merged[key], root) for key in known}
    return Settings(root=root, **typed)  # type: ignore[arg-type]  # each value checked by _typed


def _typed(key: str, kind: str, value: object, root: Path) -> object:
    kinds: dict[str, type] = {"Path": Path, "int": int, "float": float, "str": str, "bool": bool}
    convert = kinds.get(kind, str)
    if convert is bool:
        if not isinstance(value, bool):
            raise KitError(f"invoke.yaml: reprokit.{key} = {value!r} is not true or false", "fix that line of invoke.yaml")
        return value
    try:
        if convert is Path:
            path = Path(str(value))
            return path if path.is_absolute() else root / path
        if convert in (int, float) and isinstance(value, bool):
            raise ValueError("a yes/no where a number belongs")
        return convert(value)
    except (TypeError, ValueError) as error:
        raise KitError(f"invoke.yaml: reprokit.{key} = {value!r} is not a {convert.__name__} ({error})",
                       "fix that line of invoke.yaml") from None
