"""Today's TensorFlow: a quick real reproduction of each tf.distribute program, through the local
backend, judged and evaluated like the article's (21 steps on generated data, a minute or two each).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from reprokit.experiment import Reproduction, reproduce
from reprokit.options import RunPlan
from reprokit.run.process_backend import Loopback, ProcessBackend
from tests.support.kit import STEPS, KitInputs, kit_options, kit_settings

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]

PROGRAMS = ("tf2-mirrored", "tf2-ps")


@dataclass
class Finished:
    result: Reproduction
    said: list[str]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, kit_inputs: KitInputs) -> dict[str, Finished]:
    """One real reproduction of each program, each in its own runs folder."""
    found = {}
    for program in PROGRAMS:
        settings = kit_settings(tmp_path_factory.mktemp(program), kit_inputs)
        said: list[str] = []
        backend = ProcessBackend(Loopback.choose(settings.isolation), settings.watchdog)
        options = kit_options(STEPS, 2, run_id=program, program=program)
        found[program] = Finished(reproduce(settings, RunPlan(options, backend), said.append), said)
    return found


def _plan(run_dir: Path, role: str) -> dict[str, object]:
    plan: dict[str, object] = json.loads((run_dir / f"{role}.plan.json").read_text())
    return plan


@pytest.mark.timeout(900)
@pytest.mark.parametrize("program", PROGRAMS)
def test_a_quick_reproduction_ends_in_four_verdicts_with_logs_passing(finished, program):
    result = finished[program].result
    assert result.passed, result.error
    assert ["logs:", "claim:", "learning:", "updates:"] == [line.split()[0] for line in result.verdict_lines]
    assert result.verdict_lines[0].split()[1] == "PASS"
    for mode in ("standalone", "cluster"):
        e = result.evaluations[mode]
        assert ("", STEPS - 1) == (e.error, e.step)
        assert e.low is not None and e.low > 0.10  # above chance, with its interval


@pytest.mark.timeout(900)
def test_every_all_reduce_worker_trains_and_worker0_logs_the_steps(finished):
    run_dir = finished["tf2-mirrored"].result.run_dir
    worker0 = (run_dir / "worker0.log").read_text()
    assert "step 20, loss = " in worker0
    assert "step 0, loss = " not in (run_dir / "worker1.log").read_text()  # only the chief prints steps
    assert not (run_dir / "ps.log").exists() and not (run_dir / "client.log").exists()
    roles = {role["name"]: role for role in _plan(run_dir, "worker0")["roles"]}  # type: ignore[index]
    configs = {name: json.loads(role["env"]["TF_CONFIG"]) for name, role in roles.items()}
    assert {"worker0": 0, "worker1": 1} == {name: config["task"]["index"] for name, config in configs.items()}


@pytest.mark.timeout(900)
def test_the_coordinator_is_the_client_and_the_servers_read_tf_config(finished):
    run_dir = finished["tf2-ps"].result.run_dir
    assert "step 20, loss = " in (run_dir / "client.log").read_text()
    roles = {role["name"]: role for role in _plan(run_dir, "client")["roles"]}  # type: ignore[index]
    tasks = {name: json.loads(role["env"]["TF_CONFIG"])["task"] for name, role in roles.items()}
    assert {"ps": "ps", "worker0": "worker", "worker1": "worker", "client": "chief"} == \
        {name: task["type"] for name, task in tasks.items()}
    assert "serving /job:worker/task:1" in (run_dir / "worker1.log").read_text()
