"""`invoke bench`'s plan, without training: the rows the chosen programs make, the runs of one
repetition (each standalone trainer file once, the ceiling beside a tf2 program), and the
ceiling's two roles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reprokit.bench.comparison import (
    ROWS,
    TRACE_STEP,
    _extras,
    _repetition,
    ceiling_program,
    rows_for,
    standalone_runners,
)
from reprokit.bench.findings import BenchRun
from reprokit.bench.harness import CEILING_ROLES, ceiling_roles
from reprokit.errors import KitError
from reprokit.names import hostname
from reprokit.options import program_list, tuning_list
from reprokit.programs import PROGRAMS, Lever
from reprokit.run.cluster import make_layout
from reprokit.run.process_backend import Loopback, ProcessBackend
from reprokit.run.request_ids import RequestIdFix
from reprokit.run.tuning import Tuning
from tests.support.kit import kit_options, kit_watchdog

TF2 = ["tf2-mirrored", "tf2-ps"]


class FakeBench:
    """Records each run a repetition asks for, in order; every run logs the same step rates."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.trace_steps: list[int | None] = []  # each run's: None unprobed, -1 probed untraced

    def run(self, mode: str, workers: int = 2, label: str = "", *, program: str | None = None,
            tuning: Tuning | None = None, trace_step: int | None = None, levers: tuple[str, ...] = (),
            **_: object) -> BenchRun:
        name = program or "article"
        tuned = name if tuning is None or tuning.name == "default" else f"{name}/{tuning.name}"
        self.calls.append((mode, "+".join((tuned, *levers))))
        self.trace_steps.append(trace_step)
        return BenchRun(mode, workers, name, f"{len(self.calls):02d}-{mode}", 100.0, [99.0, 100.0, 101.0])

    def run_ceiling(self, program: str) -> list[BenchRun]:
        self.calls.append(("ceiling", program))
        return [BenchRun("standalone", 1, program, f"{len(self.calls):02d}-ceiling", 95.0, [95.0, 96.0])] * 2


def rows_of(programs: str, tunings: str = "default") -> list[str]:
    return [f"{row.program}/{row.tuning.name}" for row in rows_for(program_list(programs), tuning_list(tunings))]


def test_the_default_programs_make_two_rows_and_the_tuned_row_is_asked_for() -> None:
    """article,lesson: the article's program with TensorFlow's defaults, then the lesson's; the
    kit's tuned settings make a row only when asked for (--tunings default,tuned)."""
    assert ["article/default", "lesson/default"] == rows_of("article,lesson")
    assert ["article/default", "article/tuned", "lesson/default"] == rows_of("article,lesson", "default,tuned")
    assert ["article/tuned", "lesson/default"] == rows_of("article,lesson", "tuned,tuned")
    assert ROWS == rows_for(["article", "lesson"])


def test_a_programs_levers_make_a_row_each_and_one_with_all_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each lever alone after its program's own row, then all of them together; a program without
    levers, or a bench that does not ask for them, keeps its one row."""
    assert ["tf2-mirrored", "tf2-mirrored+pack", "tf2-ps", "lesson"] == \
        ["+".join((row.program, *row.levers)) for row in rows_for(["tf2-mirrored", "tf2-ps", "lesson"], levers=True)]
    assert [()] == [row.levers for row in rows_for(["tf2-mirrored"])]
    two = replace(PROGRAMS["tf2-mirrored"], levers=(Lever("a", ("--a=1",)), Lever("b", ("--b=2",))))
    monkeypatch.setitem(PROGRAMS, "tf2-mirrored", two)
    rows = rows_for(["tf2-mirrored"], levers=True)
    assert [(), ("a",), ("b",), ("a", "b")] == [row.levers for row in rows]
    assert "tf2-mirrored program, default settings, lever a+b" == rows[-1].name
    assert ("--a=1", "--b=2") == two.lever_flags(["a", "b"])


def test_a_lever_reaches_the_cluster_trainer_of_every_worker_and_not_the_standalone(tmp_path: Path) -> None:
    options = kit_options(31, 2, synthetic_records=100, program="tf2-mirrored")
    backend = ProcessBackend(Loopback.choose("none"), kit_watchdog())
    mirrored = PROGRAMS["tf2-mirrored"]

    def argvs(mode: str, levers: tuple[str, ...]) -> list[list[str]]:
        return [role.argv for role in mirrored.roles(mode, options.steps, options.workers, options.tuning,
                                                     make_layout("spread", 2), backend, tmp_path,
                                                     tmp_path / "data", tmp_path / "train", levers=levers)]

    assert [True, True] == ["--bytes_per_pack=262144" in argv for argv in argvs("cluster", ("pack",))]
    assert not any("--bytes_per_pack=262144" in argv for argv in argvs("cluster", ()) + argvs("standalone", ("pack",)))
    with pytest.raises(KitError, match="no lever threads") as refused:
        argvs("cluster", ("threads",))
    assert "its levers: pack" == refused.value.hint
    with pytest.raises(KitError, match="its levers: none"):
        PROGRAMS["tf2-ps"].lever_flags(["pack"])


def test_a_lever_row_runs_beside_its_programs_own_cluster_and_standalone() -> None:
    bench = FakeBench()
    _repetition(bench, rows_for(["tf2-mirrored"], levers=True), 2, False, None)  # type: ignore[arg-type]
    assert [("standalone", "tf2-mirrored"), ("cluster", "tf2-mirrored"), ("cluster", "tf2-mirrored+pack"),
            ("ceiling", "tf2-mirrored")] == bench.calls


def test_an_unknown_tuning_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(KitError, match="(?s)unknown tuning profile 'fast'.*default, tuned"):
        tuning_list("default,fast")


def test_every_program_but_the_articles_gets_one_row_with_its_defaults() -> None:
    assert ["article/default", "article/tuned", "lesson/default", "lesson-resumable/default", "tf2-mirrored/default",
            "tf2-ps/default"] == rows_of("all", "default,tuned")
    assert ["tf2-ps/default", "lesson/default"] == rows_of("tf2-ps,lesson,tf2-ps", "default,tuned")


def test_the_tf2_programs_share_one_standalone_run_as_they_share_its_trainer_file() -> None:
    assert {"article": "article", "lesson": "lesson", "lesson-resumable": "lesson", "tf2-mirrored": "tf2-mirrored",
            "tf2-ps": "tf2-mirrored"} == standalone_runners(rows_for(program_list("all")))
    assert {"tf2-ps": "tf2-ps", "tf2-mirrored": "tf2-ps"} == standalone_runners(rows_for(["tf2-ps", "tf2-mirrored"]))


def test_only_a_tf2_program_brings_the_ceiling() -> None:
    assert (None, "tf2-mirrored") == (ceiling_program(ROWS), ceiling_program(rows_for(program_list("all"))))


def test_a_repetition_runs_each_standalone_then_the_clusters_it_is_the_baseline_of() -> None:
    """Each cluster runs next to its own standalone, so that drift touches a pair alike; the tf2
    programs' shared standalone is followed by both their clusters and the ceiling."""
    bench = FakeBench()
    rows = rows_for(program_list("all"), tuning_list("default,tuned"))
    rep = _repetition(bench, rows, 2, False, None)  # type: ignore[arg-type]  # the fake has Bench's two calls
    assert [("standalone", "article"), ("cluster", "article"), ("cluster", "article/tuned"),
            ("standalone", "lesson"), ("cluster", "lesson"), ("cluster", "lesson-resumable"),
            ("standalone", "tf2-mirrored"), ("cluster", "tf2-mirrored"), ("cluster", "tf2-ps"),
            ("ceiling", "tf2-mirrored")] == bench.calls
    assert rep.standalone["tf2-ps"] is rep.standalone["tf2-mirrored"]
    assert [row.program for row in rows] == [run.program for run in rep.clusters]
    assert 2 == len(rep.ceiling)


def test_every_other_repetition_runs_the_same_jobs_in_reverse() -> None:
    forward, backward = FakeBench(), FakeBench()
    rows = rows_for(program_list("all"))
    _repetition(forward, rows, 2, False, None)  # type: ignore[arg-type]
    _repetition(backward, rows, 2, True, None)  # type: ignore[arg-type]
    assert forward.calls[::-1] == backward.calls


def test_the_default_repetition_pairs_each_cluster_with_its_standalone_and_has_no_ceiling() -> None:
    bench = FakeBench()
    rep = _repetition(bench, ROWS, 2, False, None)  # type: ignore[arg-type]
    assert [("standalone", "article"), ("cluster", "article"), ("standalone", "lesson"),
            ("cluster", "lesson")] == bench.calls
    assert ({"article", "lesson"}, []) == (set(rep.standalone), rep.ceiling)


def test_the_ceiling_is_two_standalones_each_on_its_own_cpu_with_its_own_train_dir(tmp_path: Path) -> None:
    """The main role starts last; the other one's end (exit 0) is not a death."""
    options = kit_options(31, 1, synthetic_records=100, program="tf2-ps")
    backend = ProcessBackend(Loopback.choose("none"), kit_watchdog())
    second, first = ceiling_roles(options, backend, tmp_path / "src", tmp_path / "data", tmp_path / "run",
                                  RequestIdFix(None), [4, 7])
    assert (("standalone1", "7", True), ("standalone", "4", False)) == \
        ((second.name, second.cpus, second.ends_itself), (first.name, first.cpus, first.ends_itself))
    assert f"{tmp_path / 'src'}/cifar10_tf2_standalone_train.py" in first.argv
    assert f"--train_dir={tmp_path / 'run' / 'train0'}" in first.argv
    assert f"--train_dir={tmp_path / 'run' / 'train1'}" in second.argv
    assert ("tf_standalone", "tf_standalone1") == (hostname("standalone"), hostname("standalone1"))
    assert ("standalone", "standalone1") == CEILING_ROLES


def test_on_one_cpu_the_ceilings_standalones_share_it(tmp_path: Path) -> None:
    options = kit_options(31, 1, synthetic_records=100, program="tf2-mirrored")
    backend = ProcessBackend(Loopback.choose("none"), kit_watchdog())
    roles = ceiling_roles(options, backend, tmp_path, tmp_path, tmp_path, RequestIdFix(None), [3])
    assert ["3", "3"] == [role.cpus for role in roles]


def test_the_traced_steps_include_each_benched_program_that_can_be_traced() -> None:
    """The article's standalone and cluster always; the lesson's and the all-reduce cluster when
    benched; never tf2-ps, whose coordinator hands its steps to the workers: its cluster is probed
    untraced, for where its variables live; then the bound."""
    bench = FakeBench()
    _extras(bench, 2, rows_for(["article", "lesson", "tf2-mirrored", "tf2-ps"]))  # type: ignore[arg-type]
    assert [("standalone", "article"), ("cluster", "article"), ("cluster", "lesson"), ("cluster", "tf2-mirrored"),
            ("cluster", "tf2-ps"), ("standalone", "article")] == bench.calls
    assert [TRACE_STEP] * 4 + [-1, None] == bench.trace_steps
    only_article = FakeBench()
    _extras(only_article, 2, rows_for(["article", "tf2-ps"], levers=True))  # type: ignore[arg-type]
    assert [("standalone", "article"), ("cluster", "article"), ("cluster", "tf2-ps"), ("standalone", "article")] \
        == only_article.calls


def test_a_traced_program_with_levers_is_traced_with_all_of_them_too() -> None:
    bench = FakeBench()
    _extras(bench, 2, rows_for(["tf2-mirrored"], levers=True))  # type: ignore[arg-type]
    assert [("standalone", "article"), ("cluster", "article"), ("cluster", "tf2-mirrored"),
            ("cluster", "tf2-mirrored+pack"), ("standalone", "article")] == bench.calls
    assert [TRACE_STEP] * 4 + [None] == bench.trace_steps