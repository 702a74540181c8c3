"""reprokit.judge.rules and expected_logs/rules.yaml: every rule passes a good log and fails a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprokit.judge.checks import Evidence, Verdict, check_logs, summarize
from reprokit.judge.logs import LogRecord, parse_log
from reprokit.judge.rules import (
    Rule,
    RulesError,
    article_context,
    load_rules,
    run_context,
)
from tests.support import REPO
from tests.support import SAMPLES as ALL_SAMPLES

ROOT = REPO
RULES = ROOT / "expected_logs" / "rules.yaml"
ARTICLE = ROOT / "expected_logs" / "article"
SAMPLES = ALL_SAMPLES
LOGS = SAMPLES / "logs"
BOTH = {"format", "run"}

# Good samples: (file, mode, max_steps, program). Each passes every rule of its program, both scopes.
GOOD_RUNS = [("standalone_run.log", "standalone", 30, "article"), ("cluster_run.log", "cluster", 60, "article"),
             ("lesson_standalone_run.log", "standalone", 51, "lesson"),
             ("lesson_cluster_run.log", "cluster", 51, "lesson"),
             ("tf2_standalone_run.log", "standalone", 21, "tf2-mirrored"),
             ("tf2_mirrored_run.log", "cluster", 21, "tf2-mirrored"), ("tf2_ps_run.log", "cluster", 21, "tf2-ps")]

# Bad samples: (file, mode, max_steps, scope, the rules that fail, and nothing else).
BAD = [
    ("missing_filling_queue.log", "standalone", 30, BOTH, {"filling_queue_once_per_tower"}),
    ("filling_queue_once_on_cluster.log", "cluster", 60, BOTH, {"filling_queue_once_per_tower"}),
    ("step_before_filling_queue.log", "standalone", 30, BOTH, {"filling_queue_before_first_step"}),
    # The garbled step 10 is not a step line, so both step sequences miss step 10.
    ("malformed_step_line.log", "standalone", 30, BOTH,
     {"step_lines_well_formed", "steps_every_ten_from_zero", "steps_reach_last_logged_step"}),
    ("untimestamped_steps.log", "standalone", 30, BOTH, {"step_lines_timestamped"}),
    # Format scope only: on a run, steps_reach_last_logged_step reports the same gap.
    ("skipped_step.log", "standalone", 50, {"format"}, {"steps_every_ten_from_zero"}),
    ("repeated_step.log", "standalone", 50, {"format"}, {"steps_every_ten_from_zero"}),
    ("stopped_early.log", "standalone", 100, BOTH, {"steps_reach_last_logged_step"}),
    ("first_loss_high.log", "standalone", 30, BOTH, {"first_loss_near_initial"}),
    ("loss_rising.log", "standalone", 51, BOTH, {"loss_falls"}),
    # A clock stepping back makes the duration negative: both rates go negative together.
    ("negative_rate.log", "standalone", 30, BOTH,
     {"examples_per_sec_positive", "sec_per_batch_positive"}),
    ("stalled_step.log", "standalone", 30, BOTH, {"examples_per_sec_positive"}),
    ("zero_sec_per_batch.log", "standalone", 30, BOTH, {"sec_per_batch_positive"}),
    ("traceback_after_last_step.log", "standalone", 30, BOTH, {"no_python_traceback"}),
    ("lesson_buffer_once_on_cluster.log", "cluster", 51, BOTH, {"filling_shuffle_buffer_once_per_tower"}, "lesson"),
    ("lesson_step_before_buffer.log", "standalone", 51, BOTH, {"filling_shuffle_buffer_before_first_step"},
     "lesson"),
    ("lesson_with_queue.log", "standalone", 51, BOTH, {"no_queue_in_the_lesson"}, "lesson"),
    ("tf2_buffer_twice.log", "cluster", 21, BOTH, {"filling_shuffle_buffer_once"}, "tf2-mirrored"),
    # The lesson's real standalone log, each line claiming twice the speed the kit's stamps show.
    ("timer_runs_slow.log", "standalone", 51, BOTH, {"reported_speed_agrees_with_kit_clock"}, "lesson"),
]
# The rules a program's logs are not checked by (the others describe another program's input).
NOT_FOR = {
    "article": {"filling_shuffle_buffer_once_per_tower", "filling_shuffle_buffer_once",
                "filling_shuffle_buffer_before_first_step", "no_queue_in_the_lesson"},
    "lesson": {"filling_queue_once_per_tower", "filling_queue_before_first_step", "filling_shuffle_buffer_once"},
    "tf2-mirrored": {"filling_queue_once_per_tower", "filling_queue_before_first_step",
                     "filling_shuffle_buffer_once_per_tower"},
}
NOT_FOR["tf2-ps"] = NOT_FOR["tf2-mirrored"]

RULE_NAMES = [
    "filling_queue_once_per_tower",
    "filling_queue_before_first_step",
    "filling_shuffle_buffer_once_per_tower",
    "filling_shuffle_buffer_once",
    "filling_shuffle_buffer_before_first_step",
    "no_queue_in_the_lesson",
    "step_lines_well_formed",
    "step_lines_timestamped",
    "steps_every_ten_from_zero",
    "steps_reach_last_logged_step",
    "first_loss_near_initial",
    "loss_falls",
    "examples_per_sec_positive",
    "reported_speed_agrees_with_kit_clock",
    "sec_per_batch_positive",
    "no_python_traceback",
]


@pytest.fixture(scope="module")
def rules() -> list[Rule]:
    return load_rules(RULES)


def trainer_log(name: str, mode: str) -> list[LogRecord]:
    return parse_log(LOGS / name, "standalone" if mode == "standalone" else "client")


def failed(verdicts: list[Verdict]) -> set[str]:
    return {v.rule for v in verdicts if not v.passed}


def test_the_rules_file_holds_the_documented_rules_in_order(rules: list[Rule]) -> None:
    """The kit's rules file loads, and its rule names are the ones this suite covers."""
    assert RULE_NAMES == [r.name for r in rules]


def test_only_what_an_excerpt_cannot_show_needs_a_finished_run(rules: list[Rule]) -> None:
    """Run scope is for what an excerpt cannot show: how far the run got, how it ended, and the
    kit's own clock, which stamps only the logs its runner writes."""
    assert {"steps_reach_last_logged_step", "no_python_traceback", "reported_speed_agrees_with_kit_clock"} \
        == {r.name for r in rules if r.scope == "run"}


@pytest.mark.parametrize("mode", ["standalone", "cluster"])
def test_the_article_logs_pass_every_format_rule(rules: list[Rule], mode: str) -> None:
    """The article's excerpts are the reference: all format rules hold for them."""
    records = parse_log(ARTICLE / f"{mode}.log", mode)
    verdicts = check_logs(mode, records, rules, article_context(mode, 2), {"format"}, program="article")
    assert [] == [v.message for v in verdicts if not v.passed]
    assert 9 == len(verdicts)
    assert "PASS" == summarize(verdicts).lines[-1]


@pytest.mark.parametrize("name, mode, max_steps, program", GOOD_RUNS)
def test_a_good_run_passes_every_format_and_run_rule(
    rules: list[Rule], name: str, mode: str, max_steps: int, program: str
) -> None:
    """A finished run that logged every tenth step up to its last passes all the rules of its
    program: the article's announce a queue, the lesson's a shuffle buffer."""
    verdicts = check_logs(mode, trainer_log(name, mode), rules, run_context(mode, max_steps, 2), BOTH, program=program)
    assert set() == failed(verdicts)
    assert [n for n in RULE_NAMES if n not in NOT_FOR[program]] == [v.rule for v in verdicts]


@pytest.mark.parametrize("name, mode, max_steps, scope, expected, program",
                         [(*case, "article")[:6] for case in BAD])
def test_a_bad_sample_fails_exactly_the_rules_it_breaks(
    rules: list[Rule], name: str, mode: str, max_steps: int, scope: set[str], expected: set[str], program: str
) -> None:
    """Each bad sample breaks one thing and is caught by the rule that checks it."""
    verdicts = check_logs(mode, trainer_log(name, mode), rules, run_context(mode, max_steps, 2), scope, program=program)
    assert expected == failed(verdicts)


def test_every_rule_has_a_bad_sample() -> None:
    """No rule goes untested: some bad sample makes each one fail."""
    assert set(RULE_NAMES) == set().union(*(case[4] for case in BAD))


def test_every_failure_carries_evidence_with_a_file(rules: list[Rule]) -> None:
    """Each failing verdict of each bad sample names at least one file, line or text."""
    for name, mode, max_steps, scope, _, program in [(*case, "article")[:6] for case in BAD]:
        verdicts = check_logs(mode, trainer_log(name, mode), rules,
                              run_context(mode, max_steps, 2), scope, program=program)
        for v in verdicts:
            if not v.passed:
                assert v.evidence, f"{name}: {v.rule} failed without evidence"
                assert {LOGS / name} == {e.path for e in v.evidence}


def test_a_missing_line_says_what_was_expected_and_where_it_was_looked_for(
    rules: list[Rule],
) -> None:
    """No Filling queue line: the message gives the count expected and the file searched."""
    verdicts = check_logs("standalone", trainer_log("missing_filling_queue.log", "standalone"),
                          rules, article_context("standalone", 2), {"format"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "filling_queue_once_per_tower")
    assert "expected exactly 1 (towers)" in verdict.message
    assert f"looked in {LOGS / 'missing_filling_queue.log'} (9 lines)" in verdict.message
    assert [Evidence(LOGS / "missing_filling_queue.log", None, "no matching line in this file")] \
        == verdict.evidence


def test_a_cluster_with_one_filling_queue_line_shows_the_one_it_found(rules: list[Rule]) -> None:
    """Two towers should announce two queues; the evidence is the single line found."""
    records = trainer_log("filling_queue_once_on_cluster.log", "cluster")
    verdicts = check_logs("cluster", records, rules, article_context("cluster", 2), {"format"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "filling_queue_once_per_tower")
    assert "1 line matches" in verdict.message and "expected exactly 2 (towers)" in verdict.message
    assert [4] == [e.line for e in verdict.evidence]


def test_a_skipped_step_names_the_step_expected_and_the_one_found(rules: list[Rule]) -> None:
    """Steps 0, 10, 30: the evidence is the lines of steps 10 and 30."""
    path = LOGS / "skipped_step.log"
    verdicts = check_logs("standalone", trainer_log("skipped_step.log", "standalone"), rules,
                          article_context("standalone", 2), {"format"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "steps_every_ten_from_zero")
    assert f"expected step 20 after step 10, found step 30 at {path}:10" in verdict.message
    assert [9, 10] == [e.line for e in verdict.evidence]


def test_a_repeated_step_points_at_both_lines(rules: list[Rule]) -> None:
    """Step 10 logged twice: the message and the evidence give both places."""
    path = LOGS / "repeated_step.log"
    verdicts = check_logs("standalone", trainer_log("repeated_step.log", "standalone"), rules,
                          article_context("standalone", 2), {"format"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "steps_every_ten_from_zero")
    assert f"step 10 at {path}:10 repeats {path}:9" in verdict.message
    assert [9, 10] == [e.line for e in verdict.evidence]


def test_a_run_that_stops_early_shows_its_last_step_line(rules: list[Rule]) -> None:
    """max_steps 100 should log up to step 90; the log ends at step 40."""
    verdicts = check_logs("standalone", trainer_log("stopped_early.log", "standalone"), rules,
                          run_context("standalone", 100, 2), {"run"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "steps_reach_last_logged_step")
    assert "to step 90 (last_logged_step)" in verdict.message
    assert "the last step line is step 40" in verdict.message
    assert [12] == [e.line for e in verdict.evidence]


def test_a_step_line_before_the_filling_queue_line_is_shown_with_it(rules: list[Rule]) -> None:
    """The evidence is the first step line and the Filling queue line that follows it."""
    verdicts = check_logs("standalone", trainer_log("step_before_filling_queue.log", "standalone"),
                          rules, article_context("standalone", 2), {"format"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "filling_queue_before_first_step")
    assert [7, 8] == [e.line for e in verdict.evidence]
    assert verdict.evidence[1].text.startswith("Filling queue with 20000")


def test_a_high_first_loss_reports_the_value_the_bounds_and_the_line(rules: list[Rule]) -> None:
    """Step 0 loss 9.99 is outside [4.4, 5] nats around the article's 4.68."""
    verdicts = check_logs("standalone", trainer_log("first_loss_high.log", "standalone"), rules,
                          article_context("standalone", 2), {"format"}, program="article")
    verdict = next(v for v in verdicts if v.rule == "first_loss_near_initial")
    assert "outside [4.4, 5] nats (reference 4.68): step 0: 9.99" in verdict.message
    assert [8] == [e.line for e in verdict.evidence]


def test_the_summary_lists_each_failure_with_its_evidence_and_ends_in_fail(
    rules: list[Rule],
) -> None:
    """A failing rule is followed by its evidence as path:line: text; the last line is FAIL."""
    path = LOGS / "loss_rising.log"
    verdicts = check_logs("standalone", trainer_log("loss_rising.log", "standalone"), rules,
                          article_context("standalone", 2), {"format"}, program="article")
    summary = summarize(verdicts)
    assert (False, ["loss_falls"]) == (summary.passed, summary.failed)
    assert ["9 rules checked, 1 failed", "FAIL"] == summary.lines[-2:]
    at = summary.lines.index(next(l for l in summary.lines if l.startswith("FAIL loss_falls")))
    assert f"    {path}:8: 2026-12-02 15:40:12.000000: step 0, loss = 4.69" \
        " (11.4 examples/sec; 11.200 sec/batch)" == summary.lines[at + 1]
    assert summary.text.endswith("\nFAIL")


def _loss_falls(rules: list[Rule], records: list[LogRecord]) -> Verdict:
    verdicts = check_logs("standalone", records, rules, article_context("standalone", 2), {"format"}, program="article")
    return next(v for v in verdicts if v.rule == "loss_falls")


def test_one_spike_at_the_last_step_cannot_flip_the_falling_loss(rules: list[Rule]) -> None:
    """A real quick run's standalone: 4.68 at step 0, 3.28 at 30, 5.00 at 50. The last line alone
    is above step 0; the median of the last three (3.35) is well below it."""
    verdict = _loss_falls(rules, trainer_log("loss_spike_at_last_step.log", "standalone"))
    assert verdict.passed
    assert "of the last 3 step lines (step 30: 3.28, step 40: 3.35, step 50: 5) is 3.35, below" \
        in verdict.message
    assert [8, 11, 12, 13] == [e.line for e in verdict.evidence]


def test_a_log_too_short_for_a_trend_is_not_judged_and_says_so(rules: list[Rule]) -> None:
    """Three step lines (a 21-step run) are the first plus two: a window of three cannot be
    filled, so the rule does not judge, and its message says why (not a silent pass)."""
    records = trainer_log("loss_rising.log", "standalone")
    short = [r for r in records if r.step is None or r.step.step <= 20]
    verdict = _loss_falls(rules, short)
    assert verdict.passed
    assert verdict.message.startswith("not judged: 3 step lines, and the trend needs the first plus a window of 3")


def test_a_trend_window_under_three_is_refused(tmp_path: Path) -> None:
    """A median of two is a mean: one spike would flip it again."""
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n  - name: r\n    description: d\n    applies_to: [standalone]\n"
                   "    scope: format\n    trend: {field: loss, window: 2, below: first}\n")
    with pytest.raises(RulesError, match="trend.window must be a whole number of at least 3"):
        load_rules(bad)


def test_no_verdict_at_all_is_a_fail() -> None:
    """A check that checked nothing has shown nothing."""
    assert ["no rule was checked", "FAIL"] == summarize([]).lines


def test_rules_for_the_other_mode_are_not_checked() -> None:
    """applies_to: a cluster-only rule gives no verdict for a standalone log."""
    rules = load_rules(SAMPLES / "rules" / "cluster_only.yaml")
    records = parse_log(ARTICLE / "standalone.log", "standalone")
    verdicts = check_logs("standalone", records, rules, {"workers": 1}, {"format"}, program="article")
    assert ["step_lines_present"] == [v.rule for v in verdicts]


def test_a_context_variable_the_caller_did_not_pass_is_an_error_naming_it() -> None:
    """The rule counts against ``workers``; without it the check cannot be made."""
    rules = load_rules(SAMPLES / "rules" / "cluster_only.yaml")
    records = parse_log(ARTICLE / "cluster.log", "client")
    with pytest.raises(RulesError) as caught:
        check_logs("cluster", records, rules, article_context("cluster", 2), {"format"}, program="article")
    assert "'step_lines_present'" in caught.value.message
    assert "'workers'" in caught.value.message


def test_an_empty_log_says_which_file_was_searched(rules: list[Rule], tmp_path: Path) -> None:
    """With no records, ``sources`` still lets each failure name the file it looked in."""
    empty = tmp_path / "client.log"
    empty.write_text("")
    verdicts = check_logs("cluster", parse_log(empty, "client"), rules,
                          run_context("cluster", 1000, 2), BOTH, sources=[empty], program="article")
    assert [f"looked in {empty} (0 lines)"] == sorted({
        v.message.split("; ")[-1] for v in verdicts if not v.passed})


@pytest.mark.parametrize("max_steps, expected", [(1, 0), (10, 0), (11, 10), (30, 20), (1000, 990)])
def test_the_last_logged_step_is_the_last_multiple_of_ten_below_max_steps(
    max_steps: int, expected: int
) -> None:
    """The loop runs steps 0..max_steps-1 and logs when step % 10 == 0."""
    assert {"towers": 2, "incarnations": 1, "tower_starts": 2, "last_logged_step": expected,
            "examples_per_step": 256} == run_context("cluster", max_steps, 2)


def test_towers_are_one_alone_and_one_per_worker_on_the_cluster() -> None:
    """Each worker tower builds its own input pipeline; a log is one process's."""
    assert ({"towers": 1, "incarnations": 1, "tower_starts": 1}, {"towers": 3, "incarnations": 1, "tower_starts": 3}) \
        == (article_context("standalone", 2), article_context("cluster", workers=3))


def test_an_unknown_mode_or_scope_is_an_error(rules: list[Rule]) -> None:
    """A typo in the mode or the scope must not check nothing and pass."""
    with pytest.raises(RulesError):
        check_logs("multi_gpu", [], rules, {}, {"format"}, program="article")
    with pytest.raises(RulesError):
        check_logs("cluster", [], rules, {}, {"nightly"}, program="article")


@pytest.mark.parametrize("name, expected", [
    ("unknown_key.yaml", "rule 'filling_queue_once': unknown key 'priority'"),
    ("unknown_sub_key.yaml", "rule 'steps_every_ten': unknown key steps.frist"),
    ("bad_regex.yaml", "rule 'filling_queue_once': pattern is not a valid regular expression"),
    ("two_checks.yaml", "rule 'steps_and_pattern': unknown key 'count'"),
    ("unknown_check.yaml", "rule 'loss_is_sane': unknown key 'expression'"),
    ("unknown_scope.yaml", "rule 'steps_every_ten': 'scope' must be one of"),
    ("duplicate_name.yaml", "rule 'steps_every_ten' is defined twice"),
    ("unbounded_reference.yaml", "rule 'first_loss': reference needs a lower or an upper bound"),
    ("not_yaml.yaml", "is not valid YAML"),
    ("no_such_file.yaml", "cannot read the rules file"),
])
def test_a_bad_rules_file_raises_a_rules_error_naming_the_rule_and_key(
    name: str, expected: str
) -> None:
    """The loader refuses what it does not understand, and says where."""
    with pytest.raises(RulesError) as caught:
        load_rules(SAMPLES / "rules" / name)
    assert expected in caught.value.message


def test_a_dead_queue_runner_thread_is_a_warning_not_a_failure(rules: list[Rule]) -> None:
    """A real cluster excerpt with one killed queue-runner thread: WARN, and the verdict stays PASS."""
    verdicts = check_logs("cluster", trainer_log("queue_runner_died.log", "cluster"), rules,
                          run_context("cluster", 381, 2), BOTH, program="article")
    assert {"no_python_traceback"} == failed(verdicts)
    (warned,) = [v for v in verdicts if not v.passed]
    assert "warning" == warned.severity
    assert "Traceback (most recent call last):" in warned.evidence[0].text
    summary = summarize(verdicts)
    assert (True, [], ["no_python_traceback"]) == (summary.passed, summary.failed, summary.warned)
    assert any(line.startswith("WARN no_python_traceback [cluster]") for line in summary.lines)
    assert "PASS" == summary.lines[-1]


def test_a_severity_other_than_error_or_warning_is_refused(tmp_path: Path) -> None:
    """severity: fatal is not in the vocabulary: RulesError naming the rule and the key."""
    text = (RULES.read_text().replace("    severity: warning\n", "    severity: fatal\n", 1))
    bad = tmp_path / "rules.yaml"
    bad.write_text(text)
    with pytest.raises(RulesError, match="no_python_traceback.*severity"):
        load_rules(bad)
