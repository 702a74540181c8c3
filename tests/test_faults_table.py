"""`invoke faults`: the matrix of programs and faults, its table, and its refusals.

The table's cells and rendering are checked on made rows; the last test runs the lesson's three
cells for real, each a short reproduction with one fault, and none of them can be survived (the
lesson keeps no checkpoint and the kit takes back no role of a session program).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.errors import KitError
from reprokit.faults_table import (
    TABLE,
    FaultsRequest,
    FaultsResults,
    Row,
    cells,
    fault_step,
    report_lines,
    run_faults,
    table_lines,
)
from reprokit.settings import from_mapping
from tests.support import REPO
from tests.support.kit import KitInputs, kit_settings, repo_config

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
SETTINGS = from_mapping(repo_config(), root=REPO)


def test_the_fault_comes_at_the_logged_step_half_way_through():
    # Step lines come every 10 steps: the fault is sent after one the run is sure to log.
    assert [10, 20, 20, 490] == [fault_step(n) for n in (31, 51, 60, 1000)]


def test_each_program_gets_the_faults_that_apply_to_its_roles():
    found = cells(["lesson", "tf2-mirrored"], 51)
    assert [("lesson", "worker killed", "kill:worker1@20"), ("lesson", "worker preempted", "term:worker1@20"),
            ("lesson", "ps killed", "kill:ps@20"),
            # An all-reduce cluster has no ps to kill.
            ("tf2-mirrored", "worker killed", "kill:worker1@20"),
            ("tf2-mirrored", "worker preempted", "term:worker1@20")] == found


def results(*rows: Row) -> FaultsResults:
    return FaultsResults("runs/x", "invoke faults --steps 51", 51, "2026-12-06T14:00:00", rows=list(rows))


SURVIVED = Row("tf2-ps", "worker killed", "kill:worker1@20", True, "runs/a", "SAME", {"worker1": 1}, 4.25, 2)
RESUMED = Row("tf2-mirrored", "worker killed", "kill:worker1@20", True, "runs/c", "SAME", {"cluster": 1}, 9.0,
              steps_redone=21)
FAILED = Row("lesson", "ps killed", "kill:ps@20", False, "runs/b",
             why="ps role exited with code -9 while the client was running\n  last lines of ps.log: ...")


def test_the_table_says_what_was_restarted_and_what_it_cost():
    lines = table_lines(results(SURVIVED, RESUMED, FAILED))
    assert "| tf2-ps | worker killed (`kill:worker1@20`) | yes | worker1 x1 | 2 functions | 4.2 | SAME |" == lines[2]
    assert "| tf2-mirrored | worker killed (`kill:worker1@20`) | yes | cluster x1 | 21 steps | 9.0 | SAME |" == lines[3]
    assert "| lesson | ps killed (`kill:ps@20`) | no | nothing |  |  | not judged |" == lines[4]


def test_the_report_gives_each_failed_run_its_reason_without_the_log_excerpt():
    report = report_lines(results(SURVIVED, FAILED))
    assert "`invoke faults --steps 51`, started 2026-12-06T14:00:00, 51 steps a run." in report
    reasons = [line for line in report if line.startswith("- ")]
    assert ["- **lesson, ps killed: failed**: ps role exited with code -9 while the client was running"] == reasons


def test_the_results_survive_their_json_file(tmp_path: Path):
    saved = results(SURVIVED, FAILED)
    saved.write(tmp_path)
    assert saved == FaultsResults.load(tmp_path / FaultsResults.FILE)


@pytest.mark.parametrize("request_, says", [
    (FaultsRequest(steps="30"), "--steps 30 is less than 31"),
    (FaultsRequest(programs="lesson,nope"), "nope"),
    (FaultsRequest(isolation="walls"), "walls"),
])
def test_a_bad_option_is_refused_before_any_run_folder_is_made(tmp_path: Path, request_: FaultsRequest,
                                                                says: str):
    settings = from_mapping({**repo_config(), "runs_dir": str(tmp_path / "runs")}, root=REPO)
    with pytest.raises(KitError, match=says):
        run_faults(settings, request_, "invoke faults", lambda line: None)
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_lessons_faults_each_end_its_run_clearly_and_the_table_says_why(tmp_path: Path,
                                                                            kit_inputs: KitInputs):
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    said: list[str] = []
    done = run_faults(settings, FaultsRequest(steps=31, programs="lesson", source="synthetic"),
                      "invoke faults --steps 31 --programs lesson", said.append)
    assert ["worker killed", "worker preempted", "ps killed"] == [row.kind for row in done.rows]
    assert not any(row.survived for row in done.rows)
    assert all(row.restarts == {} for row in done.rows)
    killed, preempted, ps = (row.why.splitlines()[0] for row in done.rows)
    assert "worker1" in killed and "-9" in killed
    assert "worker1" in preempted and "143" in preempted
    assert "ps" in ps and "-9" in ps
    saved = json.loads((Path(done.folder) / FaultsResults.FILE).read_text())
    assert done.finished and saved["finished"] == done.finished
    table = (Path(done.folder) / TABLE).read_text()
    assert all(line in table for line in table_lines(done))
    assert "faults: 3 of 3: lesson, ps killed (kill:ps@10)" in said
