"""reprokit.judge.speed: median rates after warm-up, the speed-up, and the article's own figures."""

from __future__ import annotations

import pytest

from reprokit.judge import speed
from reprokit.judge.logs import StepFields, parse_log, step_fields
from tests.support import REPO
from tests.support import SAMPLES as ALL_SAMPLES
from tests.support.kit import article_figures

ROOT = REPO
ARTICLE = ROOT / "expected_logs" / "article"
SAMPLES = ALL_SAMPLES / "logs"


def article_steps(mode: str) -> list[StepFields]:
    return step_fields(parse_log(ARTICLE / f"{mode}.log", mode))


def test_the_median_rate_of_the_article_logs_is_98_4_alone_and_170_8_on_the_cluster() -> None:
    """Dropping step 0 leaves steps 10..50; their medians are 98.4 and 170.8 examples/sec."""
    assert pytest.approx(98.4) == speed.run_rate(article_steps("standalone"))
    assert pytest.approx(170.8) == speed.run_rate(article_steps("cluster"))


def test_the_medians_agree_with_the_articles_rounded_figures_in_claims_yaml() -> None:
    """The article's "about 98" and "about 170", as claims.yaml records them, are the medians rounded."""
    article = article_figures()
    assert article.standalone_rate == round(speed.run_rate(article_steps("standalone")) or 0)
    assert article.cluster_rate == round(speed.run_rate(article_steps("cluster")) or 0, -1)


def test_the_speedup_of_the_article_medians_rounds_to_its_1_74() -> None:
    """170.8 / 98.4 = 1.736, which the article reports as 1.74 (claims.yaml); 0.87 per worker."""
    article = article_figures()
    assert article.speedup == round(170.8 / 98.4, 2)
    assert 0.87 == round(speed.efficiency(170.8 / 98.4, article.workers), 2)


def test_warm_up_drops_the_lowest_step_even_when_steps_come_unsorted() -> None:
    """The rule is by step number: step 0 goes whatever order the reports came in."""
    steps = list(reversed(article_steps("standalone")))
    assert [10, 20, 30, 40, 50] == [s.step for s in speed.after_warmup(steps)]


def test_with_no_warm_up_step_0_counts_and_the_median_moves() -> None:
    """warmup_steps=0 keeps step 0's 12.8 examples/sec: the median of six is 98.35."""
    assert 98.35 == pytest.approx(speed.run_rate(article_steps("standalone"), warmup_steps=0))


def test_a_log_with_only_step_0_has_no_rate() -> None:
    """Nothing remains after the warm-up, so there is no rate rather than a wrong one."""
    assert speed.run_rate(article_steps("cluster")[:1]) is None


def test_efficiency_and_the_warm_up_refuse_impossible_inputs() -> None:
    """Zero workers or a negative warm-up is an error, not a division by zero or a slice."""
    with pytest.raises(speed.SpeedError):
        speed.efficiency(1.74, 0)
    with pytest.raises(speed.SpeedError):
        speed.after_warmup([], warmup_steps=-1)
