"""reprokit.prepared: the one road to a run, and the settings it reads (every default in invoke.yaml)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from reprokit.errors import KitError
from reprokit.names import RUN_FILE
from reprokit.options import BenchRequest, Request, RunPlan, SweepRequest
from reprokit.prepared import prepare
from reprokit.programs import PROGRAMS
from reprokit.run_folders import RunInfo, find_run
from reprokit.settings import KIT_CONFIG, Settings, from_mapping
from tests.support import REPO


def test_prepare_applies_builds_and_writes_run_json_and_returns_what_the_run_needs(
        kit: Path, settings_for: Callable[[Path], Settings]) -> None:
    """The patched sources, the fix and the layout come back with the folder: nothing is read back."""
    settings = settings_for(kit)
    prepared = prepare(settings, Request(steps=31, run_id="one").plan(settings))
    assert (settings.sources_dir / "cifar10_cluster_train.py").is_file()
    assert prepared.sources == settings.sources_dir.resolve()
    assert prepared.info == RunInfo.load(prepared.run_dir)
    assert ("one", 31, "run") == (prepared.run_dir.name, prepared.info.steps, prepared.info.kind)
    assert {"ps", "worker0", "worker1", "client", "standalone"} <= set(prepared.layout.cpus)
    assert any(line.startswith("request-id fix: ") for line in prepared.lines)


def test_a_drifted_upstream_fails_before_any_run_folder_exists(
        kit: Path, settings_for: Callable[[Path], Settings]) -> None:
    """A patch that no longer applies is an error naming it, and runs/ gets no half-made folder."""
    trainer = kit / "upstream" / "cifar10_multi_gpu_train.py"
    trainer.write_text(trainer.read_text().replace("import os.path", "import os.path  # edited"))
    settings = settings_for(kit)
    with pytest.raises(KitError):
        prepare(settings, Request(steps=31).plan(settings))
    assert not settings.runs_dir.exists() or [] == list(settings.runs_dir.iterdir())


def test_a_bench_folder_is_prepared_the_same_way_but_is_not_a_run_to_report(
        kit: Path, settings_for: Callable[[Path], Settings]) -> None:
    """bench, sweep and network folders carry run.json with their kind; `latest` skips them."""
    settings = settings_for(kit)
    run = prepare(settings, Request(steps=31, run_id="a-run").plan(settings))
    asked = BenchRequest(steps=31).plan(settings)
    bench = prepare(settings, RunPlan(asked.options, asked.backend), "bench")
    assert "bench" == json.loads((bench.run_dir / RUN_FILE).read_text())["kind"]
    assert run.run_dir == find_run(settings.runs_dir, "latest")


def test_bench_and_sweep_options_are_checked_by_the_same_code_as_reproduces() -> None:
    """A bad --steps is the same error line whichever task it was given to."""
    settings = from_mapping({}, REPO)
    messages = []
    for check in (lambda: Request(steps="ten").options(settings), lambda: BenchRequest(steps="ten").plan(settings),
                  lambda: SweepRequest(steps="ten").plan(settings)):
        with pytest.raises(KitError) as caught:
            check()
        messages.append(caught.value.message)
    assert ["--steps 'ten' is not a whole number"] * 3 == messages


def test_bench_and_sweep_defaults_come_from_invoke_yaml() -> None:
    """Nothing given: the repetitions, steps, worker counts and programs are invoke.yaml's."""
    config = yaml.safe_load(KIT_CONFIG.read_text())["reprokit"]
    settings = from_mapping({}, REPO)
    bench, sweep = BenchRequest().plan(settings), SweepRequest().plan(settings)
    assert (config["bench_repetitions"], config["bench_steps"], config["bench_loss_steps"]) == \
        (bench.repetitions, bench.options.steps, bench.loss_steps)
    assert config["bench_programs"].split(",") == bench.programs
    assert ([int(n) for n in config["sweep_workers"].split(",")], config["sweep_steps"]) == \
        (sweep.worker_counts, sweep.options.steps)
    network = SweepRequest(link="none,1gbit").plan(settings)
    assert ([config["network_workers"]], ["none", "1gbit"]) == (network.worker_counts, [link.name for link, _ in network.links])


def test_bench_programs_are_named_like_the_sweeps_all_for_every_one() -> None:
    """--programs overrides invoke.yaml's bench_programs; 'all' is every program of patches/series."""
    settings = from_mapping({"bench_programs": "lesson"}, REPO)
    assert ["lesson"] == BenchRequest().plan(settings).programs
    assert list(PROGRAMS) == BenchRequest(programs="all").plan(settings).programs
    assert ["tf2-ps", "article"] == BenchRequest(programs="tf2-ps, article").plan(settings).programs
    with pytest.raises(KitError, match="unknown --program 'tf3'"):
        BenchRequest(programs="article,tf3").plan(settings)


def test_every_default_lives_in_invoke_yaml_and_nowhere_else() -> None:
    """Settings declares no default of its own, and every setting is in the kit's invoke.yaml."""
    config = yaml.safe_load(KIT_CONFIG.read_text())["reprokit"]
    declared = [f for f in fields(Settings) if f.name != "root"]
    assert [] == [f.name for f in declared if f.default is not f.default_factory]  # both MISSING
    assert sorted(f.name for f in declared) == sorted(config)


def test_tasks_py_holds_no_default_of_its_own() -> None:
    """No `x or 81` in tasks.py: a task passes what was typed, or None, to the package."""
    tasks = (REPO / "tasks.py").read_text()
    assert [] == re.findall(r"\bor\s+\d+\b|\bor\s+\"(?:default|article|all)\"", tasks)


def test_a_test_or_user_config_names_only_what_it_changes() -> None:
    """Values given are laid over invoke.yaml's; the rest keep the kit's defaults."""
    settings = from_mapping({"steps": 7}, REPO)
    assert (7, yaml.safe_load(KIT_CONFIG.read_text())["reprokit"]["quick_steps"]) == \
        (settings.steps, settings.quick_steps)
