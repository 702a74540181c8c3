"""reprokit.judge.claims and expected_logs/claims.yaml: claims as data, and the three-part verdict."""

from __future__ import annotations

import pytest

from reprokit.judge.claims import (
    Claims,
    ClaimsError,
    ClaimVerdict,
    LearningClaim,
    Precision,
    SpeedupClaim,
    judge_learning,
    judge_speedup,
    load_claims,
    newcombe,
    three_part_lines,
    wilson,
)
from reprokit.judge.intervals import Estimate, ratio_estimate
from reprokit.judge.speed import ARTICLE_CLUSTER_STEPS, ARTICLE_SPEEDUP, ARTICLE_STANDALONE_STEPS
from tests.support import REPO, SAMPLES

CLAIMS = REPO / "expected_logs" / "claims.yaml"
BAD = SAMPLES / "claims"
COUNTED = 10112  # cifar10_eval counts 79 batches of 128 test images
ONE_RUN = "within one repetition (bootstrap of steps)"


@pytest.fixture(scope="module")
def claims() -> Claims:
    return load_claims(CLAIMS)


def precision(correct: int, step: int = 999, per_step: int = 128) -> Precision:
    """An evaluation of COUNTED test images after ``step`` steps of ``per_step`` examples."""
    # The checkpoint of step 999 holds steps 0..999: 1000 steps of training.
    return Precision(round(correct / COUNTED, 3), correct, COUNTED, step, (step + 1) * per_step)


def speedup_of(value: float, low: float, high: float, fewest: int = 99, n: int = 1) -> Estimate:
    """A speed-up from ``n`` repetitions of two runs with ``fewest`` step rates each."""
    method = ONE_RUN if n == 1 else f"between {n} repetitions (t)"
    return Estimate(value, low, high, n, 2 * n * fewest, fewest, method)


# --- the claims file -----------------------------------------------------------------------

def test_the_claims_file_holds_the_articles_speedup_band_and_the_learning_margin(claims: Claims) -> None:
    """1.74x (98 -> 170 examples/sec) on 2 workers, band 1.56-1.91; margin 0.05, chance 0.10."""
    assert (ARTICLE_SPEEDUP, 98.0, 170.0, 1.56, 1.91, 2) == (
        claims.speedup.value, claims.speedup.standalone_rate, claims.speedup.cluster_rate,
        claims.speedup.lower, claims.speedup.upper, claims.speedup.workers)
    assert (0.05, 0.10) == (claims.learning.margin, claims.learning.chance)


def test_the_band_holds_every_speedup_the_article_and_its_tf_0_8_column_report(claims: Claims) -> None:
    """Its step pairs (1.71-1.76) and TF 0.8's 165/95 to 181/95 (1.74-1.91) lie inside the band."""
    ratios = [ARTICLE_CLUSTER_STEPS[c] / ARTICLE_STANDALONE_STEPS[s]
              for c in ARTICLE_CLUSTER_STEPS for s in ARTICLE_STANDALONE_STEPS if c > 0 and s > 0]
    ratios += [165 / 95, 181 / 95]
    assert 27 == len(ratios)
    assert all(claims.speedup.lower <= r <= claims.speedup.upper for r in ratios)


@pytest.mark.parametrize("name, expected", [
    ("unknown_key.yaml", "claim 'speedup': key 'tolerance': unknown key"),
    ("unknown_claim.yaml", "unknown claim 'accuracy'"),
    ("missing_key.yaml", "claim 'learning': key 'margin': missing"),
    ("missing_claim.yaml", "missing the claim 'learning'"),
    ("band_wrong_side.yaml", "claim 'speedup': key 'lower': the band must hold the value"),
    ("workers_not_a_number.yaml", "claim 'speedup': key 'workers': must be a whole number >= 1, got 'two'"),
    ("margin_in_percent.yaml", "claim 'learning': key 'margin': must be a precision between 0 and 1"),
    ("value_as_text.yaml", "claim 'speedup': key 'value': must be a positive number, got '1.74x'"),
    ("claims_as_list.yaml", "expected one top-level key, 'claims', holding a mapping"),
    ("not_yaml.yaml", "is not valid YAML"),
    ("no_such_file.yaml", "cannot read the claims file"),
])
def test_a_bad_claims_file_raises_a_claims_error_naming_the_claim_and_key(name: str, expected: str) -> None:
    """The loader refuses what it does not understand, says where, and points at the vocabulary."""
    with pytest.raises(ClaimsError) as caught:
        load_claims(BAD / name)
    assert expected in caught.value.message
    if name != "no_such_file.yaml":
        assert "see the vocabulary" in caught.value.hint


# --- the speed-up claim --------------------------------------------------------------------

def test_an_interval_below_the_band_is_not_reproduced(claims: Claims) -> None:
    """0.63x (0.61-0.65) from one repetition: wholly below 1.56."""
    verdict = judge_speedup(claims.speedup, speedup_of(0.63, 0.61, 0.65))
    assert ClaimVerdict(
        "speedup", "NOT REPRODUCED",
        "NOT REPRODUCED  speed-up 0.63x (95% CI 0.61-0.65, n=1, 198 step rates) vs the article's 1.74x"
        " (band 1.56-1.91)",
        f"the interval ({ONE_RUN}) 0.61-0.65 lies wholly below the band's lower bound 1.56;"
        " from 1 repetition the interval covers the steps within the runs, not run-to-run drift",
    ) == verdict


def test_an_interval_above_the_band_is_not_reproduced_either(claims: Claims) -> None:
    """2 workers at 1.98x (1.95-2.01): faster than anything the article reports."""
    verdict = judge_speedup(claims.speedup, speedup_of(1.98, 1.95, 2.01, n=3))
    assert ("NOT REPRODUCED", "the interval (between 3 repetitions (t)) 1.95-2.01 lies wholly"
            " above the band's upper bound 1.91") == (verdict.status, verdict.reason)


def test_an_interval_inside_the_band_is_reproduced(claims: Claims) -> None:
    """1.70x (1.62-1.80) from three repetitions lies within 1.56-1.91."""
    verdict = judge_speedup(claims.speedup, speedup_of(1.70, 1.62, 1.80, n=3))
    assert ("REPRODUCED", "REPRODUCED  speed-up 1.70x (95% CI 1.62-1.80, n=3, 594 step rates)") == (
        verdict.status, verdict.line.split(" vs ")[0])


def test_the_articles_own_steps_reproduce_its_claim(claims: Claims) -> None:
    """Steps 10-50 of its two logs, judged as one repetition, give 1.74x inside the band."""
    cluster, standalone = ([rate for step, rate in table.items() if step > 0]
                           for table in (ARTICLE_CLUSTER_STEPS, ARTICLE_STANDALONE_STEPS))
    estimate = ratio_estimate([(cluster, standalone)])
    assert ("REPRODUCED", "1.74x") == (judge_speedup(claims.speedup, estimate).status, estimate.text()[:5])


@pytest.mark.parametrize("low, high, bound", [(1.50, 1.70, "lower bound 1.56"), (1.80, 1.95, "upper bound 1.91"),
                                              (1.40, 2.10, "lower bound 1.56 and upper bound 1.91")])
def test_an_interval_straddling_a_bound_is_inconclusive_and_says_which(
    claims: Claims, low: float, high: float, bound: str
) -> None:
    """Part of the interval is in the band and part is out: the runs cannot tell."""
    verdict = judge_speedup(claims.speedup, speedup_of((low + high) / 2, low, high))
    assert "INCONCLUSIVE" == verdict.status
    assert f"straddles the band's {bound}; more repetitions would narrow it" in verdict.reason


def test_a_figure_from_too_few_step_rates_is_inconclusive(claims: Claims) -> None:
    """A run of 4 step rates after warm-up: even a figure inside the band is too thin to judge."""
    verdict = judge_speedup(claims.speedup, speedup_of(1.74, 1.72, 1.76, fewest=4))
    assert ("INCONCLUSIVE", "too thin: the thinnest run has 4 step rates, fewer than the 5 a figure needs;"
            " let the runs log more steps") == (verdict.status, verdict.reason)


def test_no_figure_is_inconclusive(claims: Claims) -> None:
    """A run that logged no step after warm-up gives no estimate."""
    verdict = judge_speedup(claims.speedup, None)
    assert ("INCONCLUSIVE", "INCONCLUSIVE  speed-up not measured vs the article's 1.74x (band 1.56-1.91)") == (
        verdict.status, verdict.line)


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
    with pytest.raises(ClaimsError, match="is not correct / counted"):
        Precision(0.5, 4000, COUNTED, 1000, 128000)
    with pytest.raises(ClaimsError, match="correct <= counted"):
        Precision(1.0, 11000, COUNTED, 1000, 128000)


# --- the learning claim --------------------------------------------------------------------

def test_close_precisions_above_chance_are_the_same(claims: Claims) -> None:
    """0.450 and 0.455 (difference +0.005, interval about +/-0.014): within +/-0.05."""
    verdict = judge_learning(claims.learning, precision(4550), precision(4601, per_step=256))
    assert ("SAME", "the difference's interval -0.009 to +0.019 lies within +/-0.05 and both modes beat chance") \
        == (verdict.status, verdict.reason)
    assert ("SAME  precision @ 1 at the end of each mode's run: standalone 0.450 (95% CI 0.440-0.460) after"
            " 128,000 examples, cluster 0.455 (95% CI 0.445-0.465) after 256,000 examples (a cluster step has 256"
            " examples); difference +0.005 (95% CI -0.009 to +0.019), margin +/-0.05") == verdict.line


def test_precisions_far_apart_are_different(claims: Claims) -> None:
    """0.450 alone, 0.300 on the cluster: the difference's interval lies wholly below -0.05."""
    verdict = judge_learning(claims.learning, precision(4550), precision(3034, per_step=256))
    assert "DIFFERENT" == verdict.status
    assert "lies wholly outside +/-0.05" in verdict.reason


def test_a_mode_at_chance_while_the_other_learned_is_different(claims: Claims) -> None:
    """0.130 alone (above chance) vs 0.100 on the cluster (not): within the margin, yet different."""
    verdict = judge_learning(claims.learning, precision(1315), precision(1011, per_step=256))
    assert ("DIFFERENT", "the standalone is above chance (0.10) and the cluster is not") == (
        verdict.status, verdict.reason)


def test_a_difference_straddling_the_margin_is_inconclusive(claims: Claims) -> None:
    """0.450 vs 0.490: +0.040 with an interval of about +/-0.014 reaches past +0.05."""
    verdict = judge_learning(claims.learning, precision(4550), precision(4955, per_step=256))
    assert "INCONCLUSIVE" == verdict.status
    assert "straddles the margin +/-0.05" in verdict.reason


def test_two_modes_at_chance_are_inconclusive(claims: Claims) -> None:
    """Neither learned: that they agree says nothing about the cluster."""
    verdict = judge_learning(claims.learning, precision(1011), precision(1015, per_step=256))
    assert ("INCONCLUSIVE", "neither mode is above chance (0.10): neither learned") == (
        verdict.status, verdict.reason)


def test_a_mode_without_evaluation_is_inconclusive_and_named(claims: Claims) -> None:
    """The cluster was not evaluated: the line still shows the standalone's precision."""
    verdict = judge_learning(claims.learning, precision(4550), None)
    assert ("INCONCLUSIVE", "INCONCLUSIVE  precision @ 1 not evaluated for the cluster (standalone 0.450"
            " (95% CI 0.440-0.460) after 128,000 examples)", "no evaluation of the cluster run: nothing to compare") \
        == (verdict.status, verdict.line, verdict.reason)
    both = judge_learning(claims.learning, None, None)
    assert "INCONCLUSIVE  precision @ 1 not evaluated for the standalone and the cluster" == both.line


# --- the three lines -----------------------------------------------------------------------

def test_a_reproduction_ends_in_three_labelled_lines(claims: Claims) -> None:
    """logs, claim and learning, each label padded to one column so that the verdicts align."""
    speed = judge_speedup(claims.speedup, speedup_of(0.63, 0.61, 0.65))
    learning = judge_learning(claims.learning, precision(4550), precision(4601, per_step=256))
    lines = three_part_lines(True, 22, 0, speed, learning)
    assert [
        "logs:     PASS  (22 rules, 0 failed)",
        "claim:    NOT REPRODUCED  speed-up 0.63x (95% CI 0.61-0.65, n=1, 198 step rates) vs the article's 1.74x"
        " (band 1.56-1.91)",
        "learning: SAME  precision @ 1 at the end of each mode's run: standalone 0.450 (95% CI 0.440-0.460) after"
        " 128,000 examples, cluster 0.455 (95% CI 0.445-0.465) after 256,000 examples (a cluster step has 256"
        " examples); difference +0.005 (95% CI -0.009 to +0.019), margin +/-0.05",
    ] == lines
    assert "logs:     FAIL  (1 rule, 1 failed)" == three_part_lines(False, 1, 1, speed, learning)[0]


def test_the_claims_are_plain_dataclasses_a_caller_can_build() -> None:
    """A bench or a test can judge against a band of its own without a YAML file."""
    claim = SpeedupClaim("two workers", 1.5, 100.0, 150.0, 1.4, 1.6, 2)
    assert "REPRODUCED" == judge_speedup(claim, speedup_of(1.5, 1.45, 1.55)).status
    assert "SAME" == judge_learning(LearningClaim("same", 0.02, 0.1), precision(4550), precision(4560)).status
