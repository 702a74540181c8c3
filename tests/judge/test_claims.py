"""reprokit.judge.claims and expected_logs/claims.yaml: claims as data, and the three-part verdict."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from reprokit.updates.verdict import UpdatesVerdict
from reprokit.judge.claims import (
    Claims,
    ClaimsError,
    ClaimVerdict,
    LearningClaim,
    LossWindow,
    SpeedupClaim,
    equivalence_p,
    headline,
    judge_learning,
    judge_speedup,
    load_claims,
    loss_course,
    newcombe,
    repetitions_to_settle,
    verdict_lines,
)
from reprokit.judge.evaluation import EvalError, Evaluation, wilson
from reprokit.judge.speed import Estimate, format_estimate, ratio_estimate
from reprokit.programs import PROGRAMS
from tests.support import REPO, SAMPLES
from tests.support.article import ARTICLE_CLUSTER_STEPS, ARTICLE_STANDALONE_STEPS

CLAIMS = REPO / "expected_logs" / "claims.yaml"
BAD = SAMPLES / "claims"
COUNTED = 10112  # cifar10_eval counts 79 batches of 128 test images
ONE_RUN = "within one repetition (bootstrap of steps)"


@pytest.fixture(scope="module")
def claims() -> Claims:
    return load_claims(CLAIMS, list(PROGRAMS))


def judge_article(claims: Claims, estimate: Estimate | None, workers: int = 2) -> ClaimVerdict:
    """The article's claim judged on a run of the article's program."""
    return judge_speedup(claims.speedup["article"], estimate, program="article", workers=workers,
                         drift=claims.drift)


def evaluation(correct: int, step: int = 999, per_step: int = 128) -> Evaluation:
    """An evaluation of COUNTED test images after ``step`` steps of ``per_step`` examples."""
    # The checkpoint of step 999 holds steps 0..999: 1000 steps of training.
    low, high = wilson(correct, COUNTED)
    return Evaluation(step, round(correct / COUNTED, 3), correct, COUNTED, low, high, (step + 1) * per_step,
                      Path("eval.log"))


def speedup_of(value: float, low: float, high: float, fewest: int = 99, n: int = 1) -> Estimate:
    """A speed-up from ``n`` repetitions of two runs with ``fewest`` step rates each."""
    method = ONE_RUN if n == 1 else f"between {n} repetitions (t)"
    return Estimate(value, low, high, n, 2 * n * fewest, fewest, method)


# --- the claims file -----------------------------------------------------------------------

def test_the_claims_file_holds_the_articles_speedup_band_and_the_learning_margin(claims: Claims) -> None:
    """1.74x (98 -> 170 examples/sec) on 2 workers, band 1.56-1.91; margin 0.05, chance 0.10."""
    article = claims.speedup["article"]
    assert (1.74, 98.0, 170.0, 1.56, 1.91, 2) == (
        article.value, article.standalone_rate, article.cluster_rate, article.lower, article.upper, article.workers)
    assert (0.05, 0.10) == (claims.learning.margin, claims.learning.chance)
    assert 0 < claims.learning.loss_margin < 1 and 0 < claims.drift < 1


def test_every_program_has_a_claim_of_its_own_on_two_workers(claims: Claims) -> None:
    """The lesson and today's TensorFlow claim the article's band; none borrows another's."""
    assert set(PROGRAMS) == set(claims.speedup)
    assert all(c.program == name and c.workers == 2 for name, c in claims.speedup.items())
    assert all(c.standalone_rate is None for name, c in claims.speedup.items() if name != "article")


def test_the_band_holds_every_speedup_the_article_and_its_tf_0_8_column_report(claims: Claims) -> None:
    """Its step pairs (1.71-1.76) and TF 0.8's 165/95 to 181/95 (1.74-1.91) lie inside the band."""
    ratios = [ARTICLE_CLUSTER_STEPS[c] / ARTICLE_STANDALONE_STEPS[s]
              for c in ARTICLE_CLUSTER_STEPS for s in ARTICLE_STANDALONE_STEPS if c > 0 and s > 0]
    ratios += [165 / 95, 181 / 95]
    assert 27 == len(ratios)
    article = claims.speedup["article"]
    assert all(article.lower <= r <= article.upper for r in ratios)


@pytest.mark.parametrize("name, expected", [
    ("unknown_key.yaml", "claim 'speedup: article': key 'tolerance': unknown key"),
    ("unknown_claim.yaml", "unknown claim 'accuracy'"),
    ("unknown_program.yaml", "claim 'speedup': unknown program 'article-v2' (known: article, lesson,"),
    ("missing_key.yaml", "claim 'learning': key 'margin': missing"),
    ("missing_claim.yaml", "missing the claim 'learning'"),
    ("no_drift.yaml", "missing the claim 'drift'"),
    ("band_wrong_side.yaml", "claim 'speedup: article': key 'lower': the band must hold the value"),
    ("workers_not_a_number.yaml", "claim 'speedup: article': key 'workers': must be a whole number >= 1, got 'two'"),
    ("margin_in_percent.yaml", "claim 'learning': key 'margin': must be a share between 0 and 1"),
    ("value_as_text.yaml", "claim 'speedup: article': key 'value': must be a positive number, got '1.74x'"),
    ("claims_as_list.yaml", "expected one top-level key, 'claims', holding a mapping"),
    ("not_yaml.yaml", "is not valid YAML"),
    ("no_such_file.yaml", "cannot read the claims file"),
])
def test_a_bad_claims_file_raises_a_claims_error_naming_the_claim_and_key(name: str, expected: str) -> None:
    """The loader refuses what it does not understand, says where, and points at the vocabulary."""
    with pytest.raises(ClaimsError) as caught:
        load_claims(BAD / name, list(PROGRAMS))
    assert expected in caught.value.message
    if name != "no_such_file.yaml":
        assert "see the vocabulary" in caught.value.hint


# --- the speed-up claim --------------------------------------------------------------------

def test_one_pair_below_the_band_is_not_reproduced_even_with_the_drift(claims: Claims) -> None:
    """0.63x (0.61-0.65) from one pair: widened by exp(+/-1.96 x 0.12), 0.48-0.82, still wholly below 1.56."""
    verdict = judge_article(claims, speedup_of(0.63, 0.61, 0.65))
    assert ClaimVerdict(
        "speedup", "NOT REPRODUCED",
        "NOT REPRODUCED  speed-up 0.63x (95% CI 0.61-0.65 within one pair, 198 intervals; 0.48-0.82 with"
        " run-to-run drift (sd 0.12)) vs the article's 1.74x on 2 workers (band 1.56-1.91)",
        "the interval 0.48-0.82 lies wholly below the band's lower bound 1.56",
    ) == verdict


def test_two_fresh_clones_one_pair_each_print_overlapping_intervals(claims: Claims) -> None:
    """The issue's two fresh clones: 0.68x (0.67-0.69) and 0.81x (0.79-0.83) did not overlap as
    bootstraps of steps; with the drift each interval holds the other's figure."""
    first = judge_article(claims, speedup_of(0.68, 0.67, 0.69))
    second = judge_article(claims, speedup_of(0.81, 0.79, 0.83))
    assert "0.53-0.87 with run-to-run drift" in first.line and "0.62-1.05 with run-to-run drift" in second.line
    assert first.status == second.status == "NOT REPRODUCED"


def test_one_pair_inside_the_band_is_inconclusive_and_says_how_many_repetitions_would_settle_it(
    claims: Claims
) -> None:
    """The lesson at 1.68x (1.62-1.73) from one pair: the drift reaches past both bounds; at sd
    0.12, t(0.975, n-1) x 0.12 / sqrt(n) < ln(1.68 / 1.56) = 0.074 from n = 13."""
    verdict = judge_speedup(claims.speedup["lesson"], speedup_of(1.68, 1.62, 1.73), program="lesson", workers=2,
                            drift=claims.drift)
    assert "INCONCLUSIVE" == verdict.status
    assert verdict.line.endswith("vs the lesson claim's 1.74x on 2 workers (band 1.56-1.91)")
    assert verdict.reason.endswith("straddles the band's lower bound 1.56 and upper bound 1.91; about 13 "
                                   "repetitions would settle it (`invoke reproduce --repetitions 13`)")
    assert 13 == repetitions_to_settle(1.68, [1.56, 1.91], 0.12)


def test_a_figure_on_the_bound_cannot_be_settled_by_repetitions() -> None:
    """1.561x against 1.56: no count up to the advised most clears it."""
    assert repetitions_to_settle(1.561, [1.56], 0.12) is None


def test_an_interval_above_the_band_is_not_reproduced_either(claims: Claims) -> None:
    """2 workers at 1.98x (1.95-2.01) between 3 repetitions: faster than anything the article reports."""
    verdict = judge_article(claims, speedup_of(1.98, 1.95, 2.01, n=3))
    assert ("NOT REPRODUCED", "the interval 1.95-2.01 lies wholly above the band's upper bound 1.91") == (
        verdict.status, verdict.reason)


def test_an_interval_between_repetitions_inside_the_band_is_reproduced(claims: Claims) -> None:
    """1.70x (1.62-1.80) between three repetitions: that interval already holds the drift."""
    verdict = judge_article(claims, speedup_of(1.70, 1.62, 1.80, n=3))
    assert ("REPRODUCED", "REPRODUCED  speed-up 1.70x (95% CI 1.62-1.80 between 3 repetitions, 594 intervals)") \
        == (verdict.status, verdict.line.split(" vs ")[0])


def test_the_articles_own_steps_are_judged_with_the_drift_of_one_pair(claims: Claims) -> None:
    """Steps 10-50 of its two logs, judged as one pair, give 1.74x; with one pair's drift the
    interval reaches past the band, so even the article's own run alone is INCONCLUSIVE."""
    cluster, standalone = ([rate for step, rate in table.items() if step > 0]
                           for table in (ARTICLE_CLUSTER_STEPS, ARTICLE_STANDALONE_STEPS))
    estimate = ratio_estimate([(cluster, standalone)])
    assert ("INCONCLUSIVE", "1.74x") == (judge_article(claims, estimate).status, format_estimate(estimate)[:5])
    assert "REPRODUCED" == judge_speedup(claims.speedup["article"], estimate, program="article", workers=2,
                                         drift=0.01).status


@pytest.mark.parametrize("low, high, bound", [(1.50, 1.70, "lower bound 1.56"), (1.80, 1.95, "upper bound 1.91"),
                                              (1.40, 2.10, "lower bound 1.56 and upper bound 1.91")])
def test_an_interval_straddling_a_bound_is_inconclusive_and_says_which(
    claims: Claims, low: float, high: float, bound: str
) -> None:
    """Part of the interval between 3 repetitions is in the band and part is out: the runs cannot tell."""
    verdict = judge_article(claims, speedup_of((low + high) / 2, low, high, n=3))
    assert "INCONCLUSIVE" == verdict.status
    assert f"straddles the band's {bound}; " in verdict.reason and "repetitions" in verdict.reason


def test_a_figure_from_too_few_step_rates_is_inconclusive(claims: Claims) -> None:
    """A run of 4 step rates after warm-up: even a figure inside the band is too thin to judge."""
    verdict = judge_article(claims, speedup_of(1.74, 1.72, 1.76, fewest=4, n=3))
    assert ("INCONCLUSIVE", "too thin: the thinnest run has 4 timed intervals, fewer than the 5 a figure needs;"
            " let the runs log more steps") == (verdict.status, verdict.reason)


def test_no_figure_is_inconclusive(claims: Claims) -> None:
    """A run that logged no step after warm-up gives no estimate."""
    verdict = judge_article(claims, None)
    assert ("INCONCLUSIVE", "INCONCLUSIVE  speed-up not measured vs the article's 1.74x on 2 workers"
            " (band 1.56-1.91)") == (verdict.status, verdict.line)


def test_a_run_of_another_worker_count_is_not_judged_and_says_what_ran(claims: Claims) -> None:
    """--workers 4 is not the article's two-worker claim."""
    verdict = judge_article(claims, speedup_of(1.2, 1.1, 1.3), workers=4)
    assert ("NOT JUDGED", "NOT JUDGED  speed-up 1.20x (95% CI 1.10-1.30, n=1) on 4 workers; the article claim is"
            " 1.74x on 2", "the claim is about 2 workers and this run had 4: run with --workers 2 to judge it") \
        == (verdict.status, verdict.line, verdict.reason)


def test_a_program_without_a_claim_is_not_judged() -> None:
    """A program the claims file says nothing about is never held against another's claim."""
    verdict = judge_speedup(None, speedup_of(1.2, 1.1, 1.3), program="lesson", workers=2, drift=0.12)
    assert ("NOT JUDGED", "no claim in claims.yaml is about the lesson program") == (verdict.status, verdict.reason)


# --- intervals of precisions ---------------------------------------------------------------

@pytest.mark.parametrize("correct, counted, expected", [
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
    # score method without continuity correction.
    (81, 263, (0.2553, 0.3662)),
    (15, 148, (0.0624, 0.1605)),
    (0, 20, (0.0, 0.1611)),
    (1, 29, (0.0061, 0.1718)),
    # Newcombe (1998), "Interval estimation for the difference between independent proportions".
    (56, 70, (0.6918, 0.8770)),
    (48, 80, (0.4905, 0.7004)),
])
def test_the_wilson_interval_matches_newcombes_published_values(
    correct: int, counted: int, expected: tuple[float, float]
) -> None:
    """Wilson's score interval at z = 1.959964, to the 4 decimals the tables print."""
    assert expected == pytest.approx(tuple(wilson(correct, counted)), abs=5e-5)


def test_the_wilson_interval_matches_a_hand_computation() -> None:
    """4550/10112: p = 0.449960, z^2 = 3.841459; centre (p + z^2/2n) / (1 + z^2/n) = 0.449979;
    half z / (1 + z^2/n) x sqrt(p(1-p)/n + z^2/4n^2) = 0.009695: 0.440285 to 0.459674."""
    assert (0.440285, 0.459674) == pytest.approx(tuple(wilson(4550, COUNTED)), abs=2e-6)


def test_the_newcombe_interval_matches_his_published_example() -> None:
    """56/70 - 48/80 = 0.2000; his method 10 (hybrid score) gives 0.0524 to 0.3339."""
    assert (0.0524, 0.3339) == pytest.approx(tuple(newcombe((48, 80), (56, 70))), abs=5e-5)


def test_the_newcombe_interval_of_the_reversed_difference_is_its_mirror() -> None:
    """p_a - p_b's interval is minus p_b - p_a's, ends swapped."""
    forward, backward = newcombe((48, 80), (56, 70)), newcombe((56, 70), (48, 80))
    assert pytest.approx((-forward.high, -forward.low)) == tuple(backward)


def test_an_evaluation_whose_numbers_disagree_is_refused() -> None:
    """A precision that is not correct / counted, or more correct than counted, is a wiring bug."""
    with pytest.raises(EvalError, match="is not correct / counted"):
        Evaluation(1000, 0.5, 4000, COUNTED, None, None, 128000, Path("eval.log"))
    with pytest.raises(EvalError, match="correct <= counted"):
        Evaluation(1000, 1.0, 11000, COUNTED, None, None, 128000, Path("eval.log"))


# --- the learning claim --------------------------------------------------------------------

def test_close_precisions_above_chance_are_the_same(claims: Claims) -> None:
    """0.450 and 0.455 (difference +0.005, interval about +/-0.014): TOST within +/-0.05."""
    verdict = judge_learning(claims.learning, evaluation(4550), evaluation(4601, per_step=256))
    assert "SAME" == verdict.status
    assert verdict.reason.startswith("the two one-sided tests put the precision difference within +/-0.05 (p = ")
    assert ("SAME  precision @ 1 at the end of each mode's run: standalone 0.450 (95% CI 0.440-0.460) after"
            " 128,000 examples, cluster 0.455 (95% CI 0.445-0.465) after 256,000 examples (a cluster step has 256"
            " examples); difference +0.005 (95% CI -0.009 to +0.019), margin +/-0.05") == verdict.line


def test_precisions_far_apart_are_different(claims: Claims) -> None:
    """0.450 alone, 0.300 on the cluster: the difference's interval lies wholly below -0.05."""
    verdict = judge_learning(claims.learning, evaluation(4550), evaluation(3034, per_step=256))
    assert "DIFFERENT" == verdict.status
    assert "lies wholly outside +/-0.05" in verdict.reason


def test_a_mode_at_chance_while_the_other_learned_is_different(claims: Claims) -> None:
    """0.130 alone (above chance) vs 0.100 on the cluster (not): within the margin, yet different."""
    verdict = judge_learning(claims.learning, evaluation(1315), evaluation(1011, per_step=256))
    assert ("DIFFERENT", "the standalone is above chance (0.10) and the cluster is not") == (
        verdict.status, verdict.reason)


def test_a_difference_too_near_the_margin_is_inconclusive(claims: Claims) -> None:
    """0.450 vs 0.490: +0.040 with a one-sided bound past +0.05: TOST cannot show equivalence."""
    verdict = judge_learning(claims.learning, evaluation(4550), evaluation(4955, per_step=256))
    assert "INCONCLUSIVE" == verdict.status
    assert "is not shown within +/-0.05 (TOST p = " in verdict.reason


def test_two_modes_at_chance_are_inconclusive(claims: Claims) -> None:
    """Neither learned: that they agree says nothing about the cluster."""
    verdict = judge_learning(claims.learning, evaluation(1011), evaluation(1015, per_step=256))
    assert ("INCONCLUSIVE", "neither mode is above chance (0.10): neither learned") == (
        verdict.status, verdict.reason)


def test_a_mode_without_evaluation_is_inconclusive_and_named(claims: Claims) -> None:
    """The cluster was not evaluated: the line still shows the standalone's precision."""
    verdict = judge_learning(claims.learning, evaluation(4550), None)
    assert ("INCONCLUSIVE", "INCONCLUSIVE  precision @ 1 not evaluated for the cluster (standalone 0.450"
            " (95% CI 0.440-0.460) after 128,000 examples)", "no evaluation of the cluster run: nothing to compare") \
        == (verdict.status, verdict.line, verdict.reason)
    both = judge_learning(claims.learning, None, None)
    assert "INCONCLUSIVE  precision @ 1 not evaluated for the standalone and the cluster" == both.line


def test_an_evaluation_that_failed_is_judged_as_none(claims: Claims) -> None:
    """An eval program that exited with an error left no precision: as if the mode was not evaluated."""
    failed = Evaluation(999, None, 0, COUNTED, None, None, 256000, Path("eval.log"), "exited with code 1")
    verdict = judge_learning(claims.learning, evaluation(4550), failed)
    assert verdict.line == judge_learning(claims.learning, evaluation(4550), None).line


# --- the course of the loss ----------------------------------------------------------------

def _losses(factor: float, steps: int = 1000, seed: int = 0) -> list[tuple[int, float]]:
    """A loss falling from 4.6 towards 1.0, times ``factor``, with each batch's noise (sd 5%)."""
    rng = random.Random(seed)
    return [(step, factor * (1.0 + 3.6 * 0.997 ** step) * math.exp(rng.gauss(0, 0.05)))
            for step in range(0, steps, 10)]


def test_the_loss_course_pairs_the_modes_step_by_step_in_halves() -> None:
    """Two runs of the same course: two windows of 50 pairs, each near 1.00x and shown equivalent."""
    course = loss_course(_losses(1.0, seed=1), _losses(1.0, seed=2), margin=0.10)
    assert [(0, 490), (500, 990)] == [(w.first, w.last) for w in course]
    assert all(w.pairs == 50 and 0.95 < w.ratio < 1.05 and w.equivalence_p < 0.05 for w in course)


def _take_off(start: int, rate: float = 1.0, seed: int = 0) -> list[tuple[int, float]]:
    """A loss that sits near 3.9, falls to about 1.5 from step ``start`` (rate: progress per step
    against the standalone's), with each line's batch noise, as the generated data's runs log."""
    rng = random.Random(seed)
    return [(step, (1.5 + 2.4 / (1.0 + math.exp((rate * step - start) / 30.0))) * math.exp(rng.gauss(0, 0.04)))
            for step in range(0, 1000, 10)]


def test_a_take_off_some_tens_of_steps_apart_is_the_same_course_and_half_the_rate_is_not(claims: Claims) -> None:
    """The correct cluster's fall starts some tens of steps before or after the standalone's; over
    a half of the run that is within the margin. Half the rate lags in both halves."""
    margin = claims.learning.loss_margin
    shifted = loss_course(_take_off(350, seed=1), _take_off(390, seed=2), margin)
    assert all(w.equivalence_p < 0.05 for w in shifted), shifted
    halved = loss_course(_take_off(350, seed=1), _take_off(350, rate=0.5, seed=2), margin)
    assert all(w.low > 1 + margin for w in halved), halved


def test_a_short_run_is_one_window_and_a_tiny_one_none() -> None:
    """51 steps log 6 lines: one window; 31 steps log 4: too few pairs to judge a course."""
    assert [(0, 50)] == [(w.first, w.last) for w in loss_course(_losses(1.0, 51), _losses(1.0, 51, 3), 0.10)]
    assert [] == loss_course(_losses(1.0, 31), _losses(1.0, 31, 3), 0.10)


def test_the_loss_window_matches_scipys_paired_t_interval_and_statsmodels_tost() -> None:
    """The kit's figures, recomputed by the libraries from the same log differences."""
    from scipy import stats
    from statsmodels.stats.weightstats import ttost_paired
    base, other = _losses(1.0, seed=4), _losses(1.08, seed=5)
    (window,) = loss_course(base, other, margin=0.10, windows=1)
    diffs = [math.log(o) - math.log(b) for (_, b), (_, o) in zip(base, other)]
    low, high = stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
    assert (math.exp(low), math.exp(high)) == pytest.approx((window.low, window.high), rel=1e-9)
    p, _, _ = ttost_paired(np.log([o for _, o in other]), np.log([b for _, b in base]),
                           math.log(0.9), math.log(1.1))
    assert p == pytest.approx(window.equivalence_p, rel=1e-6)


def test_a_cluster_whose_loss_stays_higher_is_different_though_its_precision_is_close(claims: Claims) -> None:
    """Precisions within the margin, but a loss 30% higher all along: a slower learner, not SAME."""
    course = loss_course(_losses(1.0), _losses(1.3), claims.learning.loss_margin)
    verdict = judge_learning(claims.learning, evaluation(4550), evaluation(4601, per_step=256), course)
    assert "DIFFERENT" == verdict.status
    assert verdict.reason.startswith("the cluster's loss over steps 0-490 is 1.3")
    assert "cluster/standalone loss by half 1.3" in verdict.line


def test_the_same_loss_course_and_close_precisions_are_the_same(claims: Claims) -> None:
    course = loss_course(_losses(1.0, seed=6), _losses(1.0, seed=7), claims.learning.loss_margin)
    verdict = judge_learning(claims.learning, evaluation(4550), evaluation(4601, per_step=256), course)
    assert "SAME" == verdict.status and "the loss course within +/-" in verdict.reason


def test_a_loss_window_that_cannot_be_shown_equivalent_is_inconclusive(claims: Claims) -> None:
    """A window whose interval reaches past the loss margin but does not lie wholly outside it."""
    window = LossWindow(0, 240, 25, 1.08, 1.02, 1.14, 0.3)
    verdict = judge_learning(claims.learning, evaluation(4550), evaluation(4601, per_step=256), [window])
    assert ("INCONCLUSIVE", "the cluster's loss over steps 0-240 is 1.08x the standalone's (95% CI 1.02-1.14), not"
            f" shown within +/-{claims.learning.loss_margin:.0%}") == (verdict.status, verdict.reason)


# --- the libraries' figures ----------------------------------------------------------------

def test_the_equivalence_test_is_statsmodels_and_agrees_with_the_90_percent_interval() -> None:
    """TOST at 5% each side: equivalent exactly when the 90% interval lies within the margin."""
    from statsmodels.stats.proportion import confint_proportions_2indep
    for other in (4601, 4700, 4955, 5100):
        low, high = confint_proportions_2indep(other, COUNTED, 4550, COUNTED, method="score", alpha=0.10)
        assert (equivalence_p((4550, COUNTED), (other, COUNTED), 0.05) < 0.05) == (-0.05 < low and high < 0.05)


# --- the four lines and the headline -------------------------------------------------------

EXACT = UpdatesVerdict("updates", "EXACT", "EXACT  (3 steps, largest difference 3.1e-06 of an update)", "every step")


def test_a_reproduction_ends_in_four_labelled_lines(claims: Claims) -> None:
    """logs, claim, learning and updates, each label padded to one column so that the verdicts align."""
    speed = judge_article(claims, speedup_of(0.63, 0.61, 0.65))
    learning = judge_learning(claims.learning, evaluation(4550), evaluation(4601, per_step=256))
    lines = verdict_lines(True, 22, 0, speed, learning, EXACT)
    assert [
        "logs:     PASS  (22 rules, 0 failed)",
        "claim:    NOT REPRODUCED  speed-up 0.63x (95% CI 0.61-0.65 within one pair, 198 intervals; 0.48-0.82 with"
        " run-to-run drift (sd 0.12)) vs the article's 1.74x on 2 workers (band 1.56-1.91)",
        "learning: SAME  precision @ 1 at the end of each mode's run: standalone 0.450 (95% CI 0.440-0.460) after"
        " 128,000 examples, cluster 0.455 (95% CI 0.445-0.465) after 256,000 examples (a cluster step has 256"
        " examples); difference +0.005 (95% CI -0.009 to +0.019), margin +/-0.05",
        "updates:  EXACT  (3 steps, largest difference 3.1e-06 of an update)",
    ] == lines
    assert "logs:     FAIL  (1 rule, 1 failed)" == verdict_lines(False, 1, 1, speed, learning, EXACT)[0]
    assert "updates:  NOT JUDGED  the run has no cluster" == verdict_lines(True, 1, 0, speed, learning, None)[3]


def test_the_headline_carries_all_four_verdicts_and_never_a_bare_pass(claims: Claims) -> None:
    speed = judge_article(claims, speedup_of(0.63, 0.61, 0.65))
    learning = judge_learning(claims.learning, evaluation(4550), evaluation(4601, per_step=256))
    assert "logs PASS, claim NOT REPRODUCED, learning SAME, updates EXACT" == headline(True, speed, learning, EXACT)
    assert "logs not judged, claim not judged, learning not judged, updates not judged" == \
        headline(None, None, None)


def test_a_speedup_beyond_the_plans_ceiling_is_impossible_never_a_finding(claims: Claims) -> None:
    """3.67x on 2 workers of 2 CPUs (the issue's tf2-mirrored under a lying timer, had the kit
    believed it): its whole interval lies above 2x, so it is not judged as a finding."""
    verdict = judge_speedup(claims.speedup["article"], speedup_of(3.67, 3.5, 3.8, n=3), program="article",
                            workers=2, drift=claims.drift, ceiling=2.0)
    assert "IMPOSSIBLE" == verdict.status
    assert verdict.line.startswith("IMPOSSIBLE  speed-up 3.67x")
    assert "the most 2 workers on the CPUs their roles hold can do" in verdict.reason
    within = judge_speedup(claims.speedup["article"], speedup_of(1.99, 1.9, 2.1, n=3), program="article",
                           workers=2, drift=claims.drift, ceiling=2.0)
    assert "IMPOSSIBLE" != within.status  # an interval that reaches the ceiling is judged as usual


def test_the_programs_own_speedup_is_named_beside_the_kits_and_never_judged(claims: Claims) -> None:
    """The kit's 0.73x is judged; the 1.73x the programs say of themselves is only named."""
    verdict = judge_speedup(claims.speedup["article"], speedup_of(0.73, 0.70, 0.76, n=3), program="article",
                            workers=2, drift=claims.drift, ceiling=2.0, reported=speedup_of(1.73, 1.70, 1.83))
    assert "NOT REPRODUCED" == verdict.status
    assert verdict.line.endswith("; the programs' own figures say 1.73x")
    lying = judge_speedup(claims.speedup["article"], speedup_of(0.73, 0.70, 0.76, n=3), program="article",
                          workers=2, drift=claims.drift, ceiling=2.0, reported=speedup_of(3.67, 3.5, 3.8))
    assert lying.line.endswith("; the programs' own figures say 3.67x, beyond the 2.00x this plan can do")


def test_the_claims_are_plain_dataclasses_a_caller_can_build() -> None:
    """A bench or a test can judge against a band of its own without a YAML file."""
    claim = SpeedupClaim("article", "two workers", 1.5, 1.4, 1.6, 2)
    assert "REPRODUCED" == judge_speedup(claim, speedup_of(1.5, 1.45, 1.55, n=3), program="article", workers=2,
                                         drift=0.12).status
    assert "SAME" == judge_learning(LearningClaim("same", 0.02, 0.1), evaluation(4550), evaluation(4560)).status
