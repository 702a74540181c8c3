"""Real runs in tests: small generated data, the patched sources, and settings pointing at them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from reprokit.options import Options
from reprokit.programs import PROGRAMS
from reprokit.run.backends import Backend
from reprokit.run.cluster import make_layout
from reprokit.run.roles import RoleSpec
from reprokit.settings import Settings, from_mapping
from tests.support import REPO

RULES = REPO / "expected_logs" / "rules.yaml"
# Small, fast runs: 200 records per generated file, steps 0..20 (three step lines).
RECORDS = 200
STEPS = 21
FILLING_QUEUE = "Filling queue with"


@dataclass(frozen=True)
class KitInputs:
    """Generated data and patched sources, made once per test session (the kit_inputs fixture)."""

    data_dir: Path  # the folder that holds cifar-10-batches-bin (Settings.data_dir, --data_dir)
    sources_dir: Path  # the patched trainers


def repo_config() -> dict:
    """The `reprokit:` section of the repository's invoke.yaml: the settings a user gets."""
    return dict(yaml.safe_load((REPO / "invoke.yaml").read_text())["reprokit"])


def kit_config(runs_dir: Path, inputs: KitInputs) -> dict:
    """invoke.yaml's settings, with runs, data and sources under the test's folders."""
    return {**repo_config(), "runs_dir": str(runs_dir), "data_dir": str(inputs.data_dir),
            "sources_dir": str(inputs.sources_dir), "synthetic_records": RECORDS}


def kit_settings(runs_dir: Path, inputs: KitInputs) -> Settings:
    return from_mapping(kit_config(runs_dir, inputs), root=REPO)


def real_roles(backend: Backend, inputs: KitInputs, run_dir: Path, mode: str = "cluster", steps: int = STEPS,
               workers: int = 2, program: str = "article") -> list[RoleSpec]:
    """A mode's roles exactly as a reproduction builds them (ps, workers and client; or standalone)."""
    options = Options(steps, workers, "spread", "synthetic", RECORDS, program=program)
    return PROGRAMS[program].roles(mode, options, make_layout("spread", workers), backend, inputs.sources_dir,
                                   inputs.data_dir, run_dir / f"train_{mode}")
