"""`invoke mutants`, quick: a true program and a mutant through reproduce's stages, for real.

At 21 steps no verdict has power (docs/learning.md has the table at the article's 1000); this is
the mechanism: the control runs both modes, the mutant's own trainer runs as the cluster, its
learning is judged against the control's standalone run, and the table and JSON are written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.mutation import (
    CONTROL,
    TABLE,
    MutantsRequest,
    MutantsResults,
    run_mutants,
    table_lines,
)
from reprokit.run_folders import RunInfo
from tests.support import REPO
from tests.support.kit import STEPS, KitInputs, kit_settings

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_quick_catalogue_runs_the_control_then_the_mutant_and_tabulates_both(
    tmp_path: Path, kit_inputs: KitInputs
) -> None:
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    said: list[str] = []
    results = run_mutants(settings, MutantsRequest(steps=STEPS, only="fifth-rate", source="synthetic"),
                          "invoke mutants --only fifth-rate", said.append)
    control, mutant = results.rows
    assert ("article", CONTROL, "article", "fifth-rate") == (control.program, control.mutant, mutant.program,
                                                             mutant.mutant)
    assert "" == control.error == mutant.error
    assert control.learning is not None and mutant.learning is not None
    assert mutant.outcome in ("caught", "flagged (INCONCLUSIVE)", "missed")
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
