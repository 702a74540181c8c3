"""reprokit.judge.speed: median rates after warm-up, the speed-up, and the article's own figures."""

from __future__ import annotations

import pytest

from reprokit.judge import speed
from reprokit.judge.logs import StepFields, parse_log, step_fields
from tests.support import REPO
from tests.support import SAMPLES as ALL_SAMPLES

ROOT = REPO
ARTICLE = ROOT / "expected_logs" / "article"
SAMPLES = ALL_SAMPLES / "logs"


def article_steps(mode: str) -> list[StepFields]:
    return step_fields(parse_log(ARTICLE / f"{mode}.log", mode))


def test_the_article_tables_match_its_log_files() -> None:
    """The step -> examples/sec constants say what the article's logs say."""
    for mode, table in (("standalone", speed.ARTICLE_STANDALONE_STEPS),
                        ("cluster", speed.ARTICLE_CLUSTER_STEPS)):
        assert table == {s.step: s.examples_per_sec for s in article_steps(mode)}


def test_the_median_rate_of_the_article_logs_is_98_4_alone_and_170_8_on_the_cluster() -> None:
    """Dropping step 0 leaves steps 10..50; their medians are 98.4 and 170.8 examples/sec."""
    assert 98.4 == speed.median_rate(article_steps("standalone"))
    assert 170.8 == speed.median_rate(article_steps("cluster"))


def test_the_medians_agree_with_the_articles_rounded_figures() -> None:
    """The article's "about 98" and "about 170" are the medians rounded."""
    assert speed.ARTICLE_STANDALONE_RATE == round(speed.median_rate(article_steps("standalone")) or 0)
    assert speed.ARTICLE_CLUSTER_RATE == round(speed.median_rate(article_steps("cluster")) or 0, -1)


def test_the_speedup_of_the_article_medians_rounds_to_its_1_74() -> None:
    """170.8 / 98.4 = 1.736, which the article reports as 1.74; 0.87 per worker."""
    up = speed.speedup(170.8, 98.4)
    assert speed.ARTICLE_SPEEDUP == round(up, 2)
    assert 0.87 == round(speed.efficiency(up, speed.ARTICLE_WORKERS), 2)


def test_warm_up_drops_the_lowest_step_even_when_steps_come_unsorted() -> None:
    """The rule is by step number: step 0 goes whatever order the reports came in."""
    steps = list(reversed(article_steps("standalone")))
    assert [10, 20, 30, 40, 50] == [s.step for s in speed.after_warmup(steps)]


def test_with_no_warm_up_step_0_counts_and_the_median_moves() -> None:
    """warmup_steps=0 keeps step 0's 12.8 examples/sec: the median of six is 98.35."""
    assert 98.35 == pytest.approx(speed.median_rate(article_steps("standalone"), warmup_steps=0))


def test_a_log_with_only_step_0_has_no_rate() -> None:
    """Nothing remains after the warm-up, so there is no rate rather than a wrong one."""
    assert speed.median_rate(article_steps("cluster")[:1]) is None


def test_the_wall_clock_rate_counts_every_step_between_two_timestamps() -> None:
    """Steps 10..50 of the article: 40 x 128 in 52.06 s alone, 40 x 256 in 57.92 s on the cluster."""
    assert 98.35 == pytest.approx(speed.wall_rate(article_steps("standalone"), 128), abs=0.01)
    assert 176.78 == pytest.approx(speed.wall_rate(article_steps("cluster"), 256), abs=0.01)


def test_the_wall_clock_rate_needs_two_timestamped_steps() -> None:
    """Untimestamped step lines give no wall-clock rate."""
    bare = step_fields(parse_log(SAMPLES / "untimestamped_steps.log", "standalone"))
    assert speed.wall_rate(bare, 128) is None


def test_speedup_and_efficiency_refuse_impossible_inputs() -> None:
    """A zero standalone rate or zero workers is an error, not a division by zero."""
    with pytest.raises(speed.SpeedError):
        speed.speedup(170.0, 0.0)
    with pytest.raises(speed.SpeedError):
        speed.efficiency(1.74, 0)
    with pytest.raises(speed.SpeedError):
        speed.after_warmup([], warmup_steps=-1)
