"""reprokit.judge.speed: a run's rates and speed-up, each with its interval, by the one estimator."""

from __future__ import annotations

import pytest

from reprokit.judge import speed as speedup
from reprokit.judge.logs import parse_log, step_fields
from reprokit.judge.speed import SpeedError, ratio_estimate
from tests.support import REPO, SAMPLES
from tests.support.article import ARTICLE_CLUSTER_STEPS, ARTICLE_STANDALONE_STEPS

LOGS = SAMPLES / "logs"
ARTICLE = REPO / "expected_logs" / "article"


def test_a_runs_figures_are_the_medians_with_intervals_and_the_speedup_their_ratio() -> None:
    """The article's own logs: 98.4 alone, 170.8 on 2 workers (medians of steps 10..50), 1.74x."""
    standalone = step_fields(parse_log(ARTICLE / "standalone.log", "standalone"))
    cluster = step_fields(parse_log(ARTICLE / "cluster.log", "cluster"))
    speed = speedup.run_speed(standalone, cluster, workers=2)
    assert (98.4, 170.8, 2) == (pytest.approx(speed.standalone.value), pytest.approx(speed.cluster.value),
                                speed.workers)
    assert 170.8 / 98.4 == pytest.approx(speed.speedup.value)
    assert 170.8 / 98.4 / 2 == pytest.approx(speed.efficiency)
    assert speed.speedup.low <= speed.speedup.value <= speed.speedup.high
    assert (1, 10) == (speed.speedup.n, speed.speedup.samples)


def test_the_speedup_is_the_one_estimators_figure_for_the_same_step_rates() -> None:
    """One estimator: the run's speed-up is ratio_estimate of its two runs' step rates."""
    standalone = step_fields(parse_log(LOGS / "standalone_run.log", "standalone"))
    cluster = step_fields(parse_log(LOGS / "cluster_run.log", "client"))
    speed = speedup.run_speed(standalone, cluster, workers=2)
    assert ratio_estimate([(speedup.step_rates(cluster), speedup.step_rates(standalone))]) == speed.speedup


def test_step_rates_leave_out_step_zero() -> None:
    """The warm-up rule: step 0 fills the queues, so its 12.8 examples/sec is not a rate."""
    steps = step_fields(parse_log(ARTICLE / "standalone.log", "standalone"))
    assert [ARTICLE_STANDALONE_STEPS[s] for s in (10, 20, 30, 40, 50)] == speedup.step_rates(steps)
    assert 11.7 == ARTICLE_CLUSTER_STEPS[0]


def test_a_run_with_no_step_after_warm_up_has_no_speed_and_says_what_to_do() -> None:
    """A run that logged step 0 only: the error says which run and what to do."""
    standalone = step_fields(parse_log(ARTICLE / "standalone.log", "standalone"))
    cluster = step_fields(parse_log(ARTICLE / "cluster.log", "cluster"))[:1]
    with pytest.raises(SpeedError) as caught:
        speedup.run_speed(standalone, cluster, workers=2)
    assert "cluster" in caught.value.message
    assert "max_steps" in caught.value.hint
