"""run.json and results.json: typed, versioned, read back as written (on real sample runs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reprokit.errors import KitError
from reprokit.report.results import RunResults
from reprokit.run_folders import RunInfo
from tests.support import SAMPLES

RUNS = SAMPLES / "runs"


def test_a_runs_options_are_read_from_run_json():
    info = RunInfo.load(RUNS / "lesson-quick")
    assert (51, 2, ["standalone", "cluster"], "lesson", "default", "spread") == \
        (info.steps, info.workers, info.modes, info.program, info.tuning, info.layout)


def test_results_read_back_as_a_dataclass_of_this_format(tmp_path: Path):
    results = RunResults.load(RUNS / "lesson-quick" / "results.json")
    assert (RunResults.FORMAT_VERSION, "logs PASS, claim REPRODUCED, learning SAME", True) == (
        results.format_version, results.verdict, results.passed)
    assert results.speed is not None and results.claim is not None
    assert (1.76, "REPRODUCED") == (round(results.speed.speedup.value, 2), results.claim.status)
    assert 0.890 == results.modes["cluster"].evaluation.precision
    assert results == RunResults.load(results.write(tmp_path))


def test_results_of_another_format_are_refused_with_what_to_do(tmp_path: Path):
    data = json.loads((RUNS / "lesson-quick" / "results.json").read_text())
    data.pop("format_version")  # as the kit's first version wrote it
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(KitError) as caught:
        RunResults.load(tmp_path / "results.json")
    expected = f"results.json format version None; this kit reads version {RunResults.FORMAT_VERSION}"
    assert expected in caught.value.message
    assert "run the experiment again" in caught.value.hint


def test_results_that_do_not_fit_the_format_are_refused_naming_the_field(tmp_path: Path):
    data = json.loads((RUNS / "lesson-quick" / "results.json").read_text())
    data["speed"]["speedup"]["low"] = "low"
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(KitError, match=r"speed\.speedup\.low: expected float"):
        RunResults.load(tmp_path / "results.json")


def test_a_folder_without_run_json_is_not_a_run(tmp_path: Path):
    with pytest.raises(KitError, match="run.json is missing"):
        RunInfo.load(tmp_path)


def test_a_run_json_of_another_shape_is_refused(tmp_path: Path):
    shutil.copy(RUNS / "lesson-quick" / "run.json", tmp_path)
    (tmp_path / "run.json").write_text('{"steps": 10}')
    with pytest.raises(KitError, match="is not a run.json of this kit version"):
        RunInfo.load(tmp_path)
