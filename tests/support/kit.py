"""Real runs in tests: small generated data, the patched sources, and settings pointing at them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from reprokit.judge.claims import load_claims
from reprokit.options import Options, Request
from reprokit.programs import PROGRAMS
from reprokit.report.results import ArticleFigures
from reprokit.run.backends import Backend
from reprokit.run.cluster import make_layout
from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Watchdog
from reprokit.settings import Settings, from_mapping
from tests.support import REPO

RULES = REPO / "expected_logs" / "rules.yaml"
# Small, fast runs: 200 records per generated file, steps 0..20 (three step lines).
RECORDS = 200
STEPS = 21
# A fault after step 10 leaves 40 steps: time for a restarted server to import TensorFlow and serve.
FAULT_STEPS = 51
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
    """invoke.yaml's settings, with runs, data and sources under the test's folders; without the
    update check, which its own tests run (tests/updates), so that the other tests' runs are
    not each 40 seconds longer."""
    return {**repo_config(), "runs_dir": str(runs_dir), "data_dir": str(inputs.data_dir),
            "sources_dir": str(inputs.sources_dir), "synthetic_records": RECORDS, "update_check": False}


def article_figures() -> ArticleFigures:
    """The article's figures as the kit reads them, from expected_logs/claims.yaml."""
    return ArticleFigures.of(load_claims(REPO / "expected_logs" / "claims.yaml"), REPO / "expected_logs" / "article")


def kit_watchdog(**changes: float) -> Watchdog:
    """invoke.yaml's watchdog, with ``changes`` (a short ``probe_s`` for a server that never answers)."""
    return replace(from_mapping(repo_config(), root=REPO).watchdog, **changes)


def kit_options(steps: int = STEPS, workers: int = 2, **changes: Any) -> Options:
    """A run's options as invoke.yaml makes them (its program, tuning and layout, one pair), on
    generated data of RECORDS records, with ``changes``."""
    settings = from_mapping(repo_config(), root=REPO)
    asked = Request(steps=steps, workers=workers, source="synthetic").options(settings)
    return replace(asked, **{"synthetic_records": RECORDS, **changes})


def kit_settings(runs_dir: Path, inputs: KitInputs) -> Settings:
    return from_mapping(kit_config(runs_dir, inputs), root=REPO)


def real_roles(backend: Backend, inputs: KitInputs, run_dir: Path, mode: str = "cluster", steps: int = STEPS,
               workers: int = 2, program: str = "article") -> list[RoleSpec]:
    """A mode's roles exactly as a reproduction builds them (ps, workers and client; or standalone)."""
    options = kit_options(steps, workers, program=program)
    return PROGRAMS[program].roles(mode, options.steps, options.workers, options.tuning, make_layout("spread", workers),
                                   backend, inputs.sources_dir, inputs.data_dir, run_dir / f"train_{mode}")
