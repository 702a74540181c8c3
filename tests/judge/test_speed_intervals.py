"""reprokit.judge.speed: one estimator, one figure per set of runs, and its 95% interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reprokit.judge import speed as intervals
from reprokit.judge.speed import (
    Estimate,
    SpeedError,
    format_estimate,
    rate_estimate,
    ratio_estimate,
    t_quantile,
)
from tests.support.article import ARTICLE_CLUSTER_STEPS, ARTICLE_STANDALONE_STEPS

# The article's step rates after warm-up (steps 10-50).
ARTICLE_CLUSTER = [rate for step, rate in ARTICLE_CLUSTER_STEPS.items() if step > 0]
ARTICLE_STANDALONE = [rate for step, rate in ARTICLE_STANDALONE_STEPS.items() if step > 0]


def steady(rate: float, count: int = 5) -> list[float]:
    """A run whose every step ran at ``rate``: its median is ``rate``, whatever the resampling."""
    return [rate] * count


def synthetic_run(rng: np.random.Generator, median: float, count: int = 99) -> list[float]:
    """Step rates scattered 2% around ``median`` (a normal distribution's median is its mean)."""
    return list(median * (1 + 0.02 * rng.standard_normal(count)))


def test_one_repetition_gives_the_ratio_of_its_medians() -> None:
    """The article's steps 10-50: 170.8 / 98.4, the medians of its two step tables."""
    estimate = ratio_estimate([(ARTICLE_CLUSTER, ARTICLE_STANDALONE)])
    assert (170.8 / 98.4, 1, 10, 5) == (pytest.approx(estimate.value), estimate.n, estimate.samples, estimate.fewest)
    assert "within one repetition (bootstrap of steps)" == estimate.method


def test_repetitions_combine_by_the_geometric_mean_of_their_ratios() -> None:
    """Ratios 1.6 and 2.5 combine to sqrt(1.6 x 2.5) = 2.0, not to their mean 2.05."""
    estimate = ratio_estimate([(steady(160.0), steady(100.0)), (steady(250.0), steady(100.0))])
    assert (2.0, 2) == (pytest.approx(estimate.value), estimate.n)
    assert "within 2 repetitions (bootstrap of steps)" == estimate.method


def test_the_t_interval_matches_a_hand_computation() -> None:
    """Ratios 1.6, 1.7, 1.8: logs 0.47000, 0.53063, 0.58779; mean 0.52947, sd 0.058900;
    half width t(0.975, 2) x sd / sqrt(3) = 4.303 x 0.058900 / 1.7321 = 0.14633;
    so exp(0.52947) = 1.69804, exp(0.38315) = 1.46689, exp(0.67580) = 1.96561."""
    pairs = [(steady(ratio * 100), steady(100.0)) for ratio in (1.6, 1.7, 1.8)]
    estimate = ratio_estimate(pairs)
    assert (1.69804, 1.46689, 1.96561) == pytest.approx((estimate.value, estimate.low, estimate.high), abs=5e-5)
    assert (3, 30, "between 3 repetitions (t)") == (estimate.n, estimate.samples, estimate.method)


def test_the_same_pairs_in_any_order_give_the_same_estimate() -> None:
    """Neither the order of the repetitions nor that of the steps in a run changes a figure,
    the bootstrap's resamples included."""
    rng = np.random.default_rng(7)
    pairs = [(synthetic_run(rng, 170.0, 20), synthetic_run(rng, 98.0, 20)) for _ in range(3)]
    for count in (1, 2, 3):  # the bootstrap for 1 and 2 repetitions, t for 3
        some = pairs[:count]
        shuffled = [(list(reversed(num)), sorted(den)) for num, den in reversed(some)]
        assert ratio_estimate(some) == ratio_estimate(shuffled)


def test_a_ratio_and_the_rates_built_from_the_same_runs_agree() -> None:
    """A table's rate row and the speed-up beside it come from one method, so the speed-up is
    the cluster rate over the standalone rate (geometric means of the same medians)."""
    rng = np.random.default_rng(3)
    cluster = [synthetic_run(rng, median, 30) for median in (168.0, 171.0, 175.0)]
    standalone = [synthetic_run(rng, median, 30) for median in (97.0, 98.0, 99.5)]
    ratio = ratio_estimate(list(zip(cluster, standalone)))
    assert pytest.approx(rate_estimate(cluster).value / rate_estimate(standalone).value) == ratio.value


def test_a_rate_from_one_run_is_its_median_with_a_bootstrap_interval() -> None:
    """98.4 examples/sec, the median of the article's standalone steps 10-50, within 98.0-98.7."""
    estimate = rate_estimate([ARTICLE_STANDALONE])
    assert (98.4, "within one run (bootstrap of steps)") == (pytest.approx(estimate.value), estimate.method)
    assert 98.0 <= estimate.low <= 98.4 <= estimate.high <= 98.7


def test_a_rate_from_three_runs_uses_t_between_runs() -> None:
    """Medians 96, 98, 100: the geometric mean of the medians, t with 2 degrees of freedom."""
    estimate = rate_estimate([steady(96.0), steady(98.0), steady(100.0)])
    logs = [math.log(r) for r in (96.0, 98.0, 100.0)]
    half = float(stats.t.ppf(0.975, 2)) * float(np.std(logs, ddof=1)) / math.sqrt(3)
    expected = (math.exp(float(np.mean(logs))), math.exp(float(np.mean(logs)) - half),
                math.exp(float(np.mean(logs)) + half))
    assert expected == pytest.approx((estimate.value, estimate.low, estimate.high))
    assert "between 3 runs (t)" == estimate.method


def test_the_bootstrap_is_deterministic_for_a_seed() -> None:
    """The same runs and seed give the same interval; another seed draws other resamples."""
    rng = np.random.default_rng(11)
    pairs = [(synthetic_run(rng, 170.0, 30), synthetic_run(rng, 98.0, 30))]
    first, again, other = ratio_estimate(pairs), ratio_estimate(pairs), ratio_estimate(pairs, seed=1)
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert first.value == other.value


def test_the_bootstrap_covers_the_true_ratio_of_a_synthetic_example() -> None:
    """Runs drawn around medians 170 and 98: the interval holds 170/98, and across 100 such
    repetitions it does so about 95 times in 100 (at least 88 allows for the draw)."""
    rng = np.random.default_rng(2024)
    truth = 170.0 / 98.0
    estimates = [ratio_estimate([(synthetic_run(rng, 170.0), synthetic_run(rng, 98.0))]) for _ in range(100)]
    assert estimates[0].low < truth < estimates[0].high
    covered = sum(e.low < truth < e.high for e in estimates)
    assert covered >= 88


def test_an_interval_holds_its_figure_even_from_a_handful_of_steps() -> None:
    """Two steps per run: the resampled medians take three values; the figure stays inside."""
    estimate = ratio_estimate([([160.0, 180.0], [97.0, 99.0])])
    assert estimate.low <= estimate.value <= estimate.high


@pytest.mark.parametrize("df, expected", [(1, 12.706), (2, 4.303), (9, 2.262), (10, 2.228), (30, 2.042),
                                          (60, 2.000), (1000, 1.962)])
def test_the_t_quantiles_are_the_standard_tables(df: int, expected: float) -> None:
    """The two-sided 95% quantiles of Student's t (scipy), as printed in the standard table to 3 decimals."""
    assert expected == pytest.approx(t_quantile(df), abs=5e-4)


def test_the_t_quantiles_fall_as_degrees_of_freedom_grow() -> None:
    """Fewer degrees of freedom, heavier tails: a wider interval."""
    table = [t_quantile(df) for df in range(1, 32)]
    assert table == sorted(table, reverse=True)


def test_a_figure_reads_with_its_interval_and_n() -> None:
    """A speed-up in x with two decimals; a rate in examples/sec with one; samples on request."""
    speedup = Estimate(1.3412, 1.2101, 1.4899, 3, 600, 198, "between 3 repetitions (t)")
    rate = Estimate(98.04, 97.21, 98.66, 1, 99, 99, "within one run (bootstrap of steps)")
    assert "1.34x (95% CI 1.21-1.49, n=3)" == format_estimate(speedup)
    assert "1.34x (95% CI 1.21-1.49, n=3, 600 intervals)" == format_estimate(speedup, show_samples=True)
    assert "98.0 examples/sec (95% CI 97.2-98.7, n=1)" == format_estimate(rate, " examples/sec", 1)


def test_a_run_with_fewer_than_five_step_rates_is_not_enough() -> None:
    """MIN_STEP_RATES is 5: the article's five steps are just enough, four are not."""
    assert 5 == intervals.MIN_STEP_RATES
    thin = ratio_estimate([(ARTICLE_CLUSTER, ARTICLE_STANDALONE[:4])])
    assert (4, False) == (thin.fewest, thin.enough)
    assert (5, True) == ((full := ratio_estimate([(ARTICLE_CLUSTER, ARTICLE_STANDALONE)])).fewest, full.enough)


@pytest.mark.parametrize("pairs, expected", [
    ([], "needs at least one repetition"),
    ([([170.0], [])], "repetition 1 denominator has no rate"),
    ([([170.0], [98.0]), ([0.0, 171.0], [98.0])], "repetition 2 numerator has rates that are not positive"),
    ([([float("nan")], [98.0])], "not positive numbers"),
])
def test_runs_without_usable_step_rates_are_refused_naming_the_run(
    pairs: list[tuple[list[float], list[float]]], expected: str
) -> None:
    """An empty run or a stalled step has no rate to take a median or a logarithm of."""
    with pytest.raises(SpeedError) as caught:
        ratio_estimate(pairs)
    assert expected in caught.value.message


def test_a_rate_needs_a_run() -> None:
    """No runs, no rate."""
    with pytest.raises(SpeedError, match="at least one run"):
        rate_estimate([])


def test_the_method_paragraph_names_every_choice() -> None:
    """The README and every report print METHOD: it must say what the code does."""
    for phrase in ("kit's clock", "in no interval", "timestamps", "never judged", "median", "geometric mean", "Student's t", "3 or more", "bootstrap",
                   "2000 resamples", "seeded with 0", "25%", "fewer than 5 interval rates"):
        assert phrase in intervals.METHOD
