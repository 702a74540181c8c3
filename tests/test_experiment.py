"""A whole reproduction: standalone, then ps + 2 workers + client, judged and reported.

The slow tests train for real (21 steps on generated data, about a minute in all); one
reproduction is shared by the tests that read its run folder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from reprokit.errors import RunFolderExistsError
from reprokit.experiment import Reproduction, reproduce
from reprokit.judge.judgement import judge_run
from reprokit.judge.logs import parse_log, step_fields
from reprokit.names import PLOT, REPORT, RESULTS
from reprokit.options import Options, RunPlan
from reprokit.report.results import RunResults
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.run_folders import RunInfo
from tests.support import REPO
from tests.support.kit import (
    FILLING_QUEUE,
    RULES,
    STEPS,
    KitInputs,
    kit_config,
    kit_options,
    kit_settings,
)
from tests.support.processes import alive, log_has, processes_mentioning, wait_for

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

STAGES = ["prepare", "data", "standalone", "cluster", "eval", "check", "teardown", "report"]


def options(run_id: str, modes: tuple[str, ...] = ("standalone", "cluster")) -> Options:
    return kit_options(STEPS, 2, run_id=run_id, modes=modes)


@dataclass
class Finished:
    result: Reproduction
    said: list[str]
    progress: list[tuple[str, int]]
    backend: ProcessBackend


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, kit_inputs: KitInputs) -> Finished:
    """One real reproduction, through the local backend (its own network namespace where possible)."""
    settings = kit_settings(tmp_path_factory.mktemp("runs"), kit_inputs)
    said: list[str] = []
    progress: list[tuple[str, int]] = []
    backend = ProcessBackend(Loopback.choose(settings.isolation), settings.watchdog)
    result = reproduce(settings, RunPlan(options("it"), backend), said.append,
                       lambda role, step, rate: progress.append((role, step)))
    return Finished(result, said, progress, backend)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_short_reproduction_passes_every_rule(finished: Finished):
    """21 steps each way on generated data: the judge says PASS, and so does the result."""
    result = finished.result
    assert "" == result.error
    assert result.passed
    judgement = judge_run(result.run_dir, RULES)
    assert judgement.passed, "\n".join(judgement.summary.lines)
    assert "PASS" == judgement.summary.lines[-1]
    assert judgement.speed is not None and judgement.speed.cluster.value > 0


@pytest.mark.slow
def test_the_run_folder_holds_results_report_and_plot(finished: Finished):
    """results.json (its headline the three verdicts, the run passed), report.md and speed.png are written."""
    run_dir = finished.result.run_dir
    for name in (RESULTS, REPORT, PLOT):
        assert (run_dir / name).stat().st_size > 0, name
    results = json.loads((run_dir / RESULTS).read_text())
    assert (True, RunResults.FORMAT_VERSION) == (results["passed"], results["format_version"])
    assert results["verdict"].startswith("logs PASS, claim ") and ", learning " in results["verdict"]
    info = RunInfo.load(run_dir)  # the options live in run.json alone
    assert (STEPS, 2, ["standalone", "cluster"], "synthetic", "article") == \
        (info.steps, info.workers, info.modes, info.data_source, info.program)
    assert "options" not in results
    assert (run_dir / PLOT).read_bytes().startswith(b"\x89PNG")
    assert "PASS" in (run_dir / REPORT).read_text()


@pytest.mark.slow
def test_the_client_log_shows_both_towers_filling_and_steps_0_10_20(finished: Finished):
    """The cluster trainer fills one queue per worker tower, then logs every 10 steps."""
    records = parse_log(finished.result.run_dir / "client.log", "client")
    assert 2 == sum(r.kind == "filling_queue" for r in records)
    assert [0, 10, 20] == [f.step for f in step_fields(records)]


@pytest.mark.slow
def test_the_standalone_log_shows_one_tower_and_steps_0_10_20(finished: Finished):
    """The standalone trainer has one tower, one queue."""
    records = parse_log(finished.result.run_dir / "standalone.log", "standalone")
    assert 1 == sum(r.kind == "filling_queue" for r in records)
    assert [0, 10, 20] == [f.step for f in step_fields(records)]


@pytest.mark.slow
def test_both_runs_ended_ok_and_every_cluster_server_stopped_cleanly(finished: Finished):
    """The outcomes are ok; ps and workers end on the supervisor's SIGTERM as a process it ended does
    (143: a restart policy must not read a stopped server as finished); none still runs."""
    run_dir = finished.result.run_dir
    cluster = json.loads((run_dir / "client.outcome.json").read_text())
    standalone = json.loads((run_dir / "standalone.outcome.json").read_text())
    assert (True, True) == (cluster["ok"], standalone["ok"])
    assert {"ps": 143, "worker0": 143, "worker1": 143, "client": 0} == cluster["exit_codes"]
    assert not any(alive(pid) for pid in [*cluster["pids"].values(), *standalone["pids"].values()])
    for role in ("ps", "worker0", "worker1"):
        assert log_has(run_dir / f"{role}.log", "serving /job:")


@pytest.mark.slow
def test_the_cluster_ran_in_a_private_network_namespace_when_there_is_one(finished: Finished):
    """The results say how the servers were exposed: with a namespace, nowhere."""
    backend = json.loads((finished.result.run_dir / RESULTS).read_text())["backend"]
    assert finished.backend.facts() == backend
    if finished.backend.network.isolated:
        assert "private network namespace" == backend["isolation"]
    else:
        assert finished.backend.network.reason == backend["isolation_note"]


@pytest.mark.slow
def test_every_stage_ran_in_order_with_its_own_log(finished: Finished):
    """prepare, data, standalone, cluster, eval, check, teardown, report; each has a log that opens with its name;
    the report's own record says how it ended (it is written once the stage has closed)."""
    result = finished.result
    assert STAGES == [s.name for s in result.stages]
    assert all("ok" == s.status for s in result.stages), [(s.name, s.status, s.error) for s in result.stages]
    for stage in result.stages:
        assert (result.run_dir / stage.log).read_text().split(" ", 1)[1].startswith(f"== {stage.name}")
    assert "nothing left running" in (result.run_dir / result.stages[6].log).read_text()
    recorded = json.loads((result.run_dir / RESULTS).read_text())["stages"]
    assert [(name, "ok") for name in STAGES] == [(s["name"], s["status"]) for s in recorded]


@pytest.mark.slow
def test_each_mode_is_evaluated_above_chance_and_the_verdict_has_four_parts(finished: Finished):
    """precision @ 1 of each mode's checkpoint with its interval; logs, claim and learning judged,
    and the update check off here (tests/test_mutants.py runs it) and saying so."""
    result = finished.result
    for mode in ("standalone", "cluster"):
        e = result.evaluations[mode]
        assert ("", STEPS - 1) == (e.error, e.step)
        assert e.low is not None and e.low > 0.10 and e.low <= (e.precision or 0) <= (e.high or 0)
    assert ["logs:", "claim:", "learning:", "updates:"] == [line.split()[0] for line in result.verdict_lines]
    # 21 steps log three step rates in all, two after warm-up: too few to judge the claim.
    assert result.claim is not None and "INCONCLUSIVE" == result.claim.status
    assert result.learning is not None and result.learning.status in ("SAME", "DIFFERENT", "INCONCLUSIVE")
    assert all(line in finished.said for line in result.verdict_lines)  # the check stage said them
    assert "updates:  NOT JUDGED  the update check is off (invoke.yaml's update_check)" == result.verdict_lines[3]


@pytest.mark.slow
def test_progress_reports_each_modes_step_lines(finished: Finished):
    """The standalone's and the client's step lines reach the progress callback as they are written."""
    assert [("standalone", 0), ("standalone", 10), ("standalone", 20),
            ("client", 0), ("client", 10), ("client", 20)] == finished.progress
    assert "PASS" in finished.said


def test_a_run_folder_from_an_older_run_is_never_overwritten(tmp_path: Path, kit_inputs: KitInputs):
    """--run-id of an existing folder: RunFolderExistsError before any stage; its files unchanged."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    old = settings.runs_dir / "it"
    old.mkdir(parents=True)
    (old / "results.json").write_text('{"verdict": "PASS"}')
    with pytest.raises(RunFolderExistsError, match=f"run folder {old} already exists"):
        reproduce(settings, RunPlan(options("it"), ProcessBackend(Loopback.choose("none"), settings.watchdog)),
                  lambda line: None)
    assert ["results.json"] == [p.name for p in old.iterdir()]
    assert '{"verdict": "PASS"}' == (old / "results.json").read_text()


def test_a_failed_stage_still_tears_down_and_writes_the_report(tmp_path: Path, kit_inputs: KitInputs):
    """The ps port is taken: the cluster stage fails with the port's holder, teardown and report
    still run, and the verdict is FAIL with the error."""
    settings = kit_settings(tmp_path / "runs", kit_inputs)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        backend = ProcessBackend(Loopback.choose("none", first_port=port), settings.watchdog)
        result = reproduce(settings, RunPlan(options("busy", modes=("cluster",)), backend), lambda line: None)
    assert f"port {port} for the ps role" in result.error
    assert not result.passed
    statuses = {s.name: s.status for s in result.stages}
    assert {"prepare": "ok", "data": "ok", "cluster": "failed", "teardown": "ok"}.items() <= statuses.items()
    assert "check" not in statuses
    results = json.loads((result.run_dir / RESULTS).read_text())
    assert ("run FAILED; logs not judged, claim not judged, learning not judged, updates NOT JUDGED", False) == (
        results["verdict"], results["passed"])
    assert f"pid {os.getpid()}" in results["error"]
    assert results["modes"]["cluster"]["outcome"] is None  # refused before any role started
    assert (result.run_dir / REPORT).is_file()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ctrl_c_during_training_stops_every_process_of_the_run(tmp_path: Path, kit_inputs: KitInputs):
    """`invoke reproduce` gets SIGINT (Ctrl-C in its terminal) while the cluster trains: it exits 130,
    and no role, trainer or supervisor of the run is left."""
    config = tmp_path / "invoke.yaml"
    config.write_text(yaml.safe_dump({"reprokit": kit_config(tmp_path / "runs", kit_inputs)}))
    run_dir = tmp_path / "runs" / "interrupted"
    with (tmp_path / "invoke.out").open("w") as out:
        # Its own process group, as a terminal's foreground job: the signal reaches invoke, not us.
        proc = subprocess.Popen([sys.executable, "-m", "invoke", "-f", str(config), "reproduce",
                                 "--steps", str(STEPS), "--source", "synthetic", "--run-id", "interrupted"],
                                cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(lambda: proc.poll() is not None or log_has(run_dir / "client.log", FILLING_QUEUE), 240,
                     "the cluster trainer never started filling its queue")
            assert proc.poll() is None, (tmp_path / "invoke.out").read_text()
            os.killpg(proc.pid, signal.SIGINT)
            assert 130 == proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    output = (tmp_path / "invoke.out").read_text()
    assert "interrupted: every role was stopped" in output
    pids = []
    for main in ("standalone", "client"):
        outcome = json.loads((run_dir / f"{main}.outcome.json").read_text())
        pids += outcome["pids"].values()
    assert {"ps", "worker0", "worker1", "client"} == set(outcome["pids"])
    assert "interrupted: every role was stopped" == outcome["message"]
    assert [] == [pid for pid in pids if alive(pid)]
    assert [] == processes_mentioning(str(run_dir))
    stages = {s["name"]: s["status"] for s in json.loads((run_dir / RESULTS).read_text())["stages"]}
    assert ("ok", "interrupted", "ok") == (stages["standalone"], stages["cluster"], stages["teardown"])


def test_a_bad_cpus_override_fails_before_any_run_folder_exists(tmp_path: Path, kit_inputs: KitInputs):
    """--cpus naming a role the run has not is refused, and runs/ gets no empty folder."""
    from reprokit.errors import KitError

    settings = kit_settings(tmp_path / "runs", kit_inputs)
    options = kit_options(21, data_source="auto", cpus={"worker7": "0"})
    with pytest.raises(KitError, match="worker7"):
        reproduce(settings, RunPlan(options, ProcessBackend(Loopback.choose("none"), settings.watchdog)),
                  lambda _: None)
    assert not (tmp_path / "runs").exists() or [] == list((tmp_path / "runs").iterdir())


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_repetitions_alternate_the_pairs_and_judge_the_claim_on_all_of_them(tmp_path: Path,
                                                                           kit_inputs: KitInputs):
    """--repetitions 2: the second pair runs cluster first in repetitions/2/, its logs are checked,
    and the speed-up rests on both pairs (below 3, the steps' bootstrap widened by the drift)."""
    from dataclasses import replace

    from reprokit.names import repetition_dir

    settings = kit_settings(tmp_path / "runs", kit_inputs)
    backend = ProcessBackend(Loopback.choose(settings.isolation), settings.watchdog)
    said: list[str] = []
    result = reproduce(settings, RunPlan(replace(options("twice"), repetitions=2), backend), said.append)
    assert "" == result.error and result.passed
    stages = [s.name for s in result.stages]
    assert ["standalone", "cluster", "cluster-2", "standalone-2"] == [
        s for s in stages if s.startswith(("standalone", "cluster"))]
    second = repetition_dir(result.run_dir, 2)
    assert (second / "standalone.log").is_file() and (second / "client.log").is_file()
    assert result.judgement is not None and result.judgement.speed is not None
    assert 2 == result.judgement.speed.speedup.n
    assert result.claim is not None and "within 2 pairs" in result.claim.line
    assert 2 == RunInfo.load(result.run_dir).repetitions
    checked = [v for v in result.judgement.verdicts if any(str(second) in str(e.path) for e in v.evidence)]
    assert checked, "the second pair's logs were checked too"
