"""`invoke mutants`, for real: a true program and a mutant through reproduce's stages, and the
whole catalogue through the update check alone (`--probe-only`).

At 21 steps the learning verdict has no power (docs/learning.md has the table at the article's
1000); the update check has all of it at any length: the control's updates are EXACT and the
mutant's are named. The mechanism: the control runs both modes, the mutant's own trainer runs as
the cluster, its learning is judged against the control's standalone run, and the table and JSON
are written.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reprokit.mutation import (
    AS_EXPECTED,
    CAUGHT,
    CONTROL,
    TABLE,
    MutantsRequest,
    MutantsResults,
    run_mutants,
    table_lines,
)
from reprokit.experiment import reproduce
from reprokit.options import RunPlan
from reprokit.programs import PROGRAMS
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.run_folders import RunInfo
from reprokit.sources.mutants import load_catalogue
from tests.support import REPO
from tests.support.kit import STEPS, KitInputs, kit_options, kit_settings

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_quick_catalogue_runs_the_control_then_the_mutant_and_tabulates_both(
    tmp_path: Path, kit_inputs: KitInputs
) -> None:
    settings = replace(kit_settings(tmp_path / "runs", kit_inputs), update_check=True)
    said: list[str] = []
    results = run_mutants(settings, MutantsRequest(steps=STEPS, only="fifth-rate", source="synthetic"),
                          "invoke mutants --only fifth-rate", said.append)
    control, mutant = results.rows
    assert ("article", CONTROL, "article", "fifth-rate") == (control.program, control.mutant, mutant.program,
                                                             mutant.mutant)
    assert "" == control.error == mutant.error
    assert control.learning is not None and mutant.learning is not None
    # Every reproduction checks its updates first: the true program's are EXACT, the mutant's a fifth.
    assert control.updates is not None and "EXACT" == control.updates.status
    assert (CAUGHT, "updates") == (mutant.outcome, mutant.caught_by)
    assert mutant.diagnosis.startswith("the update scaled by 0.20 (a fifth of the rate)")
    assert "PASS" == control.logs == mutant.logs
    info = RunInfo.load(Path(mutant.run_dir))
    assert ("fifth-rate", ["cluster"]) == (info.mutant, info.modes)
    # The mutant's own trainer ran as the cluster's client; build/patched has no mutant in it.
    assert "cifar10_mutant_fifth_rate_train.py" in (Path(mutant.run_dir) / "client.plan.json").read_text()
    assert not list(kit_inputs.sources_dir.glob("cifar10_mutant_*"))
    saved = json.loads((Path(results.folder) / MutantsResults.FILE).read_text())
    assert ["(true program)", "fifth-rate"] == [row["mutant"] for row in saved["rows"]]
    table = (Path(results.folder) / TABLE).read_text()
    assert all(line in table for line in table_lines(results))
    assert any(line.startswith("mutants: 2 of 2: fifth-rate (article)") for line in said)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_update_check_alone_catches_every_mutant_with_its_diagnosis_and_passes_every_true_program(
    tmp_path: Path, kit_inputs: KitInputs
) -> None:
    """`invoke mutants --probe-only`, the catalogue's done-when: every true program EXACT (tf2-ps
    by its own promise) and its own figures agreeing with the kit's clock; every mutant caught by
    the verdict its header names, with the diagnosis it names."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    said: list[str] = []
    results = run_mutants(settings, MutantsRequest(probe_only=True), "invoke mutants --probe-only", said.append)
    controls = {row.program: row for row in results.rows if row.mutant == CONTROL}
    assert set(PROGRAMS) == set(controls)
    assert {program: (AS_EXPECTED, "EXACT", "PASS") for program in PROGRAMS} == {
        program: (row.outcome, row.updates.status if row.updates else None, row.logs.split(" ")[0])
        for program, row in controls.items()}
    catalogue = {m.slug: m for m in load_catalogue(settings.mutants_dir)}
    mutants = {row.mutant: row for row in results.rows if row.mutant != CONTROL}
    assert set(catalogue) == set(mutants)
    assert {slug: (CAUGHT, m.caught_by) for slug, m in catalogue.items()} == {
        slug: (row.outcome, row.caught_by) for slug, row in mutants.items()}
    for slug, row in mutants.items():
        assert catalogue[slug].diagnosis in row.diagnosis, (slug, row.diagnosis)
    table = (Path(results.folder) / TABLE).read_text()
    assert "| article | summed |" in table and "updates DIFFERENT" in table


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_cluster_whose_own_timer_lies_is_timed_by_the_kit_and_its_logs_name_the_disagreement(
    tmp_path: Path, kit_inputs: KitInputs
) -> None:
    """The article's program with the `cpu-clock` mutant as its cluster trainer, both modes, 31
    steps: its step lines claim many times the speed it trains at; the kit's speed-up is the
    cluster's true one (under 1x here, where the article's cluster is slower than one CPU), the
    programs' own figure is only named beside it, and the logs fail on the clock rule with both
    figures in the evidence."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    backend = ProcessBackend(Loopback.choose(settings.isolation), settings.watchdog)
    result = reproduce(settings, RunPlan(kit_options(31, mutant="cpu-clock", run_id="lying"), backend),
                       lambda line: None)
    assert result.judgement is not None and result.judgement.speed is not None
    speed = result.judgement.speed
    assert speed.reported is not None and speed.reported.value > 10 * speed.speedup.value
    assert speed.speedup.value < 1.3
    assert ["reported_speed_agrees_with_kit_clock"] == result.judgement.summary.failed
    failure = next(v for v in result.judgement.verdicts if not v.passed)
    assert "cluster" == failure.mode
    assert "x the kit's clock" in failure.message and "its timer or its count of examples disagrees" in failure.message
    assert result.claim is not None
    assert (f"; the programs' own figures say {speed.reported.value:.2f}x, beyond the 2.00x this plan can do"
            in result.claim.line)


def test_a_control_run_that_does_not_match_the_mutants_is_refused(tmp_path: Path) -> None:
    """--control names a finished run; a lesson run of 51 steps cannot judge the article's mutants
    at 1000 steps, and the refusal comes before any folder is made."""
    import shutil

    from reprokit.errors import KitError
    from reprokit.settings import from_mapping
    from tests.support import SAMPLES

    settings = from_mapping({"runs_dir": str(tmp_path / "runs")}, root=REPO)
    shutil.copytree(SAMPLES / "runs" / "lesson-quick", tmp_path / "runs" / "lesson-quick")
    with pytest.raises(KitError, match="is a run of the lesson program") as caught:
        MutantsRequest(only="fifth-rate", control="lesson-quick").plan(settings)
    assert "pass --programs (or --only) and --steps that match it" in caught.value.hint
    assert ["lesson-quick"] == [p.name for p in (tmp_path / "runs").iterdir()]
