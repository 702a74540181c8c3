"""reprokit.judge.speed: the kit's clock, the programs' own figures beside it, and the article's."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from reprokit.judge import speed
from reprokit.judge.logs import StepFields, parse_log, step_fields
from tests.support import REPO
from tests.support import SAMPLES as ALL_SAMPLES
from tests.support.kit import article_figures

ROOT = REPO
ARTICLE = ROOT / "expected_logs" / "article"
LOGS = ALL_SAMPLES / "logs"
RUNS = ALL_SAMPLES / "runs"


def article_steps(mode: str) -> list[StepFields]:
    return step_fields(parse_log(ARTICLE / f"{mode}.log", mode))


def own_rate(steps: list[StepFields], warmup_steps: int = speed.WARMUP_STEPS) -> float:
    return statistics.median(speed.reported_rates(steps, warmup_steps))


# --- the article's own figures ------------------------------------------------------------------

def test_the_articles_own_figures_are_98_4_alone_and_170_8_on_the_cluster() -> None:
    """Its step lines but step 0's (steps 10..50) report medians of 98.4 and 170.8 examples/sec."""
    assert pytest.approx(98.4) == own_rate(article_steps("standalone"))
    assert pytest.approx(170.8) == own_rate(article_steps("cluster"))


def test_the_medians_agree_with_the_articles_rounded_figures_in_claims_yaml() -> None:
    """The article's "about 98" and "about 170", as claims.yaml records them, are the medians rounded."""
    article = article_figures()
    assert article.standalone_rate == round(own_rate(article_steps("standalone")))
    assert article.cluster_rate == round(own_rate(article_steps("cluster")), -1)


def test_the_speedup_of_the_article_medians_rounds_to_its_1_74() -> None:
    """170.8 / 98.4 = 1.736, which the article reports as 1.74 (claims.yaml); 0.87 per worker."""
    article = article_figures()
    assert article.speedup == round(170.8 / 98.4, 2)
    assert 0.87 == round(speed.efficiency(170.8 / 98.4, article.workers), 2)


def test_warm_up_drops_step_0_whatever_order_the_reports_came_in() -> None:
    """The rule is by step number: step 0 goes whatever order the reports came in."""
    steps = list(reversed(article_steps("standalone")))
    assert [10, 20, 30, 40, 50] == [s.step for s in speed.after_warmup(steps)]
    assert 98.35 == pytest.approx(own_rate(article_steps("standalone"), warmup_steps=0))


def test_the_article_logs_carry_no_stamp_of_the_kits_so_its_clock_refuses_them() -> None:
    """The article's logs were not written by the kit's runner: the kit cannot time them, and says so."""
    with pytest.raises(speed.SpeedError) as caught:
        speed.intervals(parse_log(ARTICLE / "cluster.log", "cluster"))
    assert "has no timestamp of the kit's" in caught.value.message
    assert "runs/<id>/" in caught.value.hint


# --- the kit's clock ----------------------------------------------------------------------------

def test_an_interval_spans_two_consecutive_step_lines_and_its_rate_is_the_planned_examples_over_their_stamps():
    """The real lesson standalone log (steps 0..50): five intervals, 10 steps each, timed by the
    kit's stamps; a rate is 128 x 10 over the seconds between the two stamps."""
    records = parse_log(RUNS / "lesson-quick" / "standalone.log", "standalone")
    timed = speed.intervals(records)
    assert [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50)] == [(i.first, i.last) for i in timed]
    lines = {r.step.step: r.logged_at for r in records if r.step is not None}
    assert (lines[20] - lines[10]).total_seconds() == pytest.approx(timed[1].seconds)
    assert 128 * 10 / timed[1].seconds == pytest.approx(timed[1].rate(128))
    assert [i.rate(128) for i in timed] == speed.clock_rates(records, 128)
    # What the closing line says of itself is kept beside, never mixed in.
    assert [s.examples_per_sec for s in step_fields(records)][1:] == [i.reported for i in timed]


def test_the_kits_clock_ignores_what_a_program_says_of_its_own_speed():
    """A trainer whose timer runs slow (every step line claiming twice its speed) is timed at the
    same rates as the true one: the kit reads the stamps, not the claims."""
    true = parse_log(LOGS / "lesson_standalone_run.log", "standalone")
    lying = parse_log(LOGS / "timer_runs_slow.log", "standalone")
    assert speed.clock_rates(true, 128) == speed.clock_rates(lying, 128)
    assert [2 * r for r in speed.reported_rates(step_fields(true))] == \
        pytest.approx(speed.reported_rates(step_fields(lying)), abs=0.1)


def test_an_interval_never_spans_two_incarnations(tmp_path: Path):
    """A cluster restarted as a whole logs on in a second file: the restart between the files is
    no interval of training."""
    line = "2026-12-07T10:00:{:02d}.000000 | 2026-12-07 10:00:00.000000: step {}, loss = 4.60 (900.0 examples/sec; " \
           "0.142 sec/batch)\n"
    first, second = tmp_path / "worker0.log", tmp_path / "worker0.2.log"
    first.write_text(line.format(0, 0) + line.format(2, 10))
    second.write_text(line.format(40, 20) + line.format(42, 30))
    records = parse_log(first, "worker0") + parse_log(second, "worker0")
    assert [(0, 10, 2.0), (20, 30, 2.0)] == [(i.first, i.last, i.seconds) for i in speed.intervals(records)]


def test_a_step_is_a_batch_on_each_worker_that_trains():
    assert (128, 256, 512) == (speed.examples_per_step("standalone", 4), speed.examples_per_step("cluster", 2),
                               speed.examples_per_step("cluster", 4))
    with pytest.raises(speed.SpeedError):
        speed.examples_per_step("cluster", 0)


def test_the_ceiling_is_the_fewer_of_the_workers_and_the_cpus_held():
    """Two workers on two CPUs against one: 2x; every role on one CPU (the article's layout): 1x."""
    assert (2.0, 1.0, 1.5) == (speed.speedup_ceiling(2, 2, 1), speed.speedup_ceiling(2, 1, 1),
                               speed.speedup_ceiling(4, 3, 2))
    with pytest.raises(speed.SpeedError):
        speed.speedup_ceiling(2, 0, 1)


def test_efficiency_and_the_warm_up_refuse_impossible_inputs() -> None:
    """Zero workers or a negative warm-up is an error, not a division by zero or a slice."""
    with pytest.raises(speed.SpeedError):
        speed.efficiency(1.74, 0)
    with pytest.raises(speed.SpeedError):
        speed.after_warmup([], warmup_steps=-1)
