"""The claims as data (``expected_logs/claims.yaml``), and the verdicts on them.

A reproduction ends in three lines: whether the logs look right (the rules), whether the speed-up
claim of the program that ran is reproduced, and whether the cluster learns as the standalone
trainer does::

    logs:     PASS  (22 rules, 0 failed)
    claim:    NOT REPRODUCED  speed-up 0.63x (95% CI 0.61-0.65 within one pair; 0.50-0.80 with ...
    learning: SAME  precision @ 1 at the end of each mode's run: standalone 0.712 (...) ...

and a headline that carries all three (``logs PASS, claim NOT REPRODUCED, learning SAME``). Each
claim has its own statuses: the speed-up is REPRODUCED, NOT REPRODUCED, INCONCLUSIVE, NOT JUDGED
(no claim is about what ran) or IMPOSSIBLE (beyond what the plan's workers and CPUs can do); learning is SAME, DIFFERENT or INCONCLUSIVE. INCONCLUSIVE always says
what is missing. The statistics are statsmodels' and scipy's (Wilson, Newcombe, the two one-sided
tests, Welch's t), not the kit's own. The vocabulary of the YAML file is documented at its top.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, NoReturn, Protocol

from scipy import stats
from statsmodels.stats.proportion import (
    confint_proportions_2indep,
    tost_proportions_2indep,
)

from reprokit.errors import KitError
from reprokit.judge.datafile import load_section, vocabulary_hint
from reprokit.judge.evaluation import Evaluation
from reprokit.judge.speed import (
    ALPHA,
    MIN_REPETITIONS_FOR_T,
    MIN_STEP_RATES,
    Estimate,
    format_estimate,
    t_quantile,
)

Z_95 = float(stats.norm.ppf(1 - ALPHA / 2))
# The loss course is judged per half of the run, each on the step lines both modes logged in it;
# fewer lines than this in a half, and the whole run is one window; fewer in the run, not judged.
# Not quarters: the quarter that holds the take-off (the fall from about 3.7 to 2.0) pairs two
# curves whose fall starts some tens of steps apart from run to run; on 2026-12-05 the correct
# cluster's lines there differed from the standalone's by a log sd of 0.23 against 0.03-0.08 in
# the other quarters, and 0.97x (0.88-1.07) could not be shown within 10%. Over a half (50 lines)
# that shift is averaged with the lines around it, while the mutant at half the rate
# (divided-twice) logged 1.12x and 1.23x of the standalone's loss by half (docs/learning.md).
LOSS_WINDOWS = 2
MIN_LOSS_PAIRS = 5
# Repetitions beyond this would take hours: an INCONCLUSIVE claim then says so instead of a count.
MAX_REPETITIONS_ADVISED = 30


class ClaimsError(KitError):
    """The claims file is malformed."""


@dataclass(frozen=True)
class SpeedupClaim:
    """A program's claimed speed-up and the band of speed-ups that reproduce it (absolute bounds),
    on ``workers`` workers; the article's carries the rates it was measured from."""

    program: str
    description: str
    value: float
    lower: float
    upper: float
    workers: int
    standalone_rate: float | None = None
    cluster_rate: float | None = None


@dataclass(frozen=True)
class LearningClaim:
    """Cluster and standalone reach the same precision @ 1, within ``margin``, above ``chance``,
    and log the same loss course, within ``loss_margin`` (a share) in each half of the run."""

    description: str
    margin: float
    chance: float
    loss_margin: float = 0.10


@dataclass(frozen=True)
class Claims:
    speedup: dict[str, SpeedupClaim]  # by program
    drift: float  # sd of log(speed-up) between invocations: what one pair's interval is widened by
    learning: LearningClaim


@dataclass(frozen=True)
class ClaimVerdict:
    """``line`` is what follows the label (``claim:``), status first; ``reason`` says why."""

    claim: str
    status: str
    line: str
    reason: str


class Interval(NamedTuple):
    low: float
    high: float


# --- loading -------------------------------------------------------------------------------

_SECTIONS = ("speedup", "drift", "learning")
_SPEEDUP_KEYS = {"description", "value", "lower", "upper", "workers"}
_SPEEDUP_OPTIONAL = {"standalone_rate", "cluster_rate"}
_KEYS: dict[str, set[str]] = {"drift": {"description", "sd"},
                              "learning": {"description", "margin", "loss_margin", "chance"}}


def load_claims(path: Path, programs: Sequence[str] | None = None) -> Claims:
    """Read and validate a claims file; raise ClaimsError naming the claim and key at fault.
    ``programs``: the names a speed-up claim may be about (every program of patches/series)."""
    hint = vocabulary_hint(path)
    entries = load_section(path, "claims", dict, ClaimsError, "claims")
    assert isinstance(entries, dict)  # load_section checked it
    unknown = [name for name in entries if name not in _SECTIONS]
    if unknown:
        raise ClaimsError(f"{path}: unknown claim {unknown[0]!r} (known: {', '.join(_SECTIONS)})", hint)
    missing = [name for name in _SECTIONS if name not in entries]
    if missing:
        raise ClaimsError(f"{path}: missing the claim {missing[0]!r}", hint)
    by_program = entries["speedup"]
    if not isinstance(by_program, dict) or not by_program:
        raise ClaimsError(f"{path}: claim 'speedup': expected a mapping of program names to claims", hint)
    speedup = {}
    for program, body in by_program.items():
        if programs is not None and program not in programs:
            raise ClaimsError(f"{path}: claim 'speedup': unknown program {program!r} (known: "
                              f"{', '.join(programs)})", hint)
        speedup[str(program)] = _speedup_claim(_Reader(path, f"speedup: {program}", body, hint,
                                                       _SPEEDUP_KEYS, _SPEEDUP_OPTIONAL), str(program))
    drift = _Reader(path, "drift", entries["drift"], hint, _KEYS["drift"])
    learning = _Reader(path, "learning", entries["learning"], hint, _KEYS["learning"])
    return Claims(speedup, drift.share("sd"),
                  LearningClaim(learning.text("description"), learning.share("margin"), learning.share("chance"),
                                learning.share("loss_margin")))


def _speedup_claim(claim: _Reader, program: str) -> SpeedupClaim:
    value, lower, upper = (claim.number(k) for k in ("value", "lower", "upper"))
    if not lower < value < upper:
        claim.fail("lower", f"the band must hold the value: lower < value < upper, got {lower} < {value} < {upper}")
    workers = claim.body["workers"]
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        claim.fail("workers", f"must be a whole number >= 1, got {workers!r}")
    rates = [claim.number(k) if k in claim.body else None for k in ("standalone_rate", "cluster_rate")]
    return SpeedupClaim(program, claim.text("description"), value, lower, upper, workers, *rates)


class _Reader:
    """One claim's mapping; every complaint names the claim and the key."""

    def __init__(self, path: Path, name: str, body: object, hint: str, keys: set[str],
                 optional: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.path, self.name, self.hint = path, name, hint
        known = sorted(keys | optional)
        if not isinstance(body, dict):
            self.fail(None, f"expected a mapping with keys {', '.join(known)}")
        for key in body:
            if key not in keys and key not in optional:
                self.fail(key, f"unknown key (known: {', '.join(known)})")
        for key in sorted(keys):
            if key not in body:
                self.fail(key, "missing")
        self.body: dict[str, object] = body

    def fail(self, key: object, problem: str) -> NoReturn:
        where = f"claim {self.name!r}" + ("" if key is None else f": key {key!r}")
        raise ClaimsError(f"{self.path}: {where}: {problem}", self.hint)

    def text(self, key: str) -> str:
        value = self.body[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(key, "must be a non-empty string")
        return value.strip()

    def number(self, key: str) -> float:
        value = self.body[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            self.fail(key, f"must be a positive number, got {value!r}")
        return float(value)

    def share(self, key: str) -> float:
        value = self.number(key)
        if value >= 1:
            self.fail(key, f"must be a share between 0 and 1, got {value!r}")
        return value


# --- intervals of precisions ---------------------------------------------------------------

def newcombe(base: tuple[int, int], other: tuple[int, int]) -> Interval:
    """Newcombe's hybrid score interval (his method 10, 95%) for p_other - p_base, each p given
    as (correct, counted), from statsmodels."""
    low, high = confint_proportions_2indep(other[0], other[1], base[0], base[1], method="newcomb",
                                           compare="diff", alpha=ALPHA)
    return Interval(float(low), float(high))


def equivalence_p(base: tuple[int, int], other: tuple[int, int], margin: float) -> float:
    """The two one-sided tests' p-value (statsmodels, score statistic) for
    -margin < p_other - p_base < margin: below 5%, the two are equivalent within the margin."""
    result = tost_proportions_2indep(other[0], other[1], base[0], base[1], low=-margin, upp=margin,
                                     method="score", compare="diff")
    return float(result.pvalue)


# --- the course of the loss ----------------------------------------------------------------

@dataclass(frozen=True)
class LossWindow:
    """One stretch of the run: the cluster's logged loss against the standalone's at the same
    steps, as a ratio of geometric means (1.10: 10% higher on the cluster), with its 95% interval
    (Student's t on the paired log differences) and the TOST p-value for +/-margin."""

    first: int
    last: int
    pairs: int
    ratio: float
    low: float
    high: float
    equivalence_p: float


def loss_course(standalone: Sequence[tuple[int, float]], cluster: Sequence[tuple[int, float]],
                margin: float, windows: int = LOSS_WINDOWS) -> list[LossWindow]:
    """The two modes' logged losses, step by step where both logged one, in ``windows`` equal
    stretches of steps (one when a stretch would have fewer than MIN_LOSS_PAIRS; none when the run
    has fewer). Pairing by step takes out the fall both losses share; what is left is each batch's
    noise, so the paired t is a fair interval for the difference of the courses."""
    base = dict(standalone)
    pairs = [(step, math.log(loss) - math.log(base[step])) for step, loss in cluster
             if step in base and loss > 0 and base[step] > 0]
    if len(pairs) < MIN_LOSS_PAIRS:
        return []
    last = max(step for step, _ in pairs)
    chunks = [[d for step, d in pairs if i * (last + 1) // windows <= step < (i + 1) * (last + 1) // windows]
              for i in range(windows)]
    if min(map(len, chunks)) < MIN_LOSS_PAIRS:
        chunks = [[d for _, d in pairs]]
    out = []
    for i, chunk in enumerate(chunks):
        steps = [step for step, _ in pairs][sum(map(len, chunks[:i])):sum(map(len, chunks[:i + 1]))]
        out.append(_window(steps[0], steps[-1], chunk, margin))
    return out


def _window(first: int, last: int, diffs: list[float], margin: float) -> LossWindow:
    n, mean = len(diffs), statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(n) if n > 1 else math.inf
    half = t_quantile(n - 1) * se
    bound_low, bound_high = math.log(1 - margin), math.log(1 + margin)
    if se == 0:
        p = 0.0 if bound_low < mean < bound_high else 1.0
    else:  # TOST: the larger of the two one-sided p-values
        p = max(float(stats.t.sf((mean - bound_low) / se, n - 1)), float(stats.t.cdf((mean - bound_high) / se, n - 1)))
    return LossWindow(first, last, n, math.exp(mean), math.exp(mean - half), math.exp(mean + half), p)


# --- verdicts ------------------------------------------------------------------------------

def judge_speedup(claim: SpeedupClaim | None, estimate: Estimate | None, *, program: str, workers: int,
                  drift: float, ceiling: float | None = None, reported: Estimate | None = None) -> ClaimVerdict:
    """The claim of the program that ran, judged only if it is about that many workers.

    REPRODUCED when the interval lies inside the band, NOT REPRODUCED when wholly outside it,
    INCONCLUSIVE when it straddles a bound (saying how many repetitions would settle it), or
    without a figure resting on enough steps. With fewer than MIN_REPETITIONS_FOR_T repetitions
    the interval judged is the bootstrap of steps widened by the run-to-run ``drift``. A figure
    whose whole interval lies above ``ceiling`` (what the plan's workers and CPUs can do,
    speed.speedup_ceiling) is IMPOSSIBLE: a fault of the measurement, never a finding. The
    speed-up the programs' own figures give (``reported``) is named in the line, never judged."""
    verdict = _judge_speedup(claim, estimate, program=program, workers=workers, drift=drift)
    if estimate is not None and ceiling is not None and estimate.low > ceiling:
        verdict = ClaimVerdict("speedup", "IMPOSSIBLE", verdict.line.replace(verdict.status, "IMPOSSIBLE", 1),
                               f"the whole interval lies above {ceiling:.2f}x, the most {workers} worker"
                               f"{'s' if workers != 1 else ''} on the CPUs their roles hold can do against the "
                               "standalone: the measurement is at fault, not the program; it is not judged")
    if reported is None:
        return verdict
    beyond = f", beyond the {ceiling:.2f}x this plan can do" if ceiling is not None and reported.low > ceiling else ""
    return ClaimVerdict(verdict.claim, verdict.status,
                        f"{verdict.line}; the programs' own figures say {reported.value:.2f}x{beyond}", verdict.reason)


def _judge_speedup(claim: SpeedupClaim | None, estimate: Estimate | None, *, program: str, workers: int,
                   drift: float) -> ClaimVerdict:
    if claim is None:
        figure = f"speed-up {format_estimate(estimate)}" if estimate else "speed-up not measured"
        return ClaimVerdict("speedup", "NOT JUDGED", f"NOT JUDGED  {figure} of the {program} program on {workers} "
                            f"worker{'s' if workers != 1 else ''}",
                            f"no claim in claims.yaml is about the {program} program")
    article = f"vs the {_source(claim)} {claim.value:.2f}x on {claim.workers} workers " \
              f"(band {claim.lower:.2f}-{claim.upper:.2f})"
    if workers != claim.workers:
        figure = f"speed-up {format_estimate(estimate)}" if estimate else "speed-up not measured"
        return ClaimVerdict("speedup", "NOT JUDGED", f"NOT JUDGED  {figure} on {workers} workers; the {program} "
                            f"claim is {claim.value:.2f}x on {claim.workers}",
                            f"the claim is about {claim.workers} workers and this run had {workers}: "
                            f"run with --workers {claim.workers} to judge it")
    if estimate is None:
        return ClaimVerdict("speedup", "INCONCLUSIVE", f"INCONCLUSIVE  speed-up not measured {article}",
                            "no speed-up figure: a run has no two step lines to time, or did not run")
    low, high, described = judged_interval(estimate, drift)
    figure = f"speed-up {estimate.value:.2f}x ({described}) {article}"
    interval = f"the interval {low:.2f}-{high:.2f}"
    if not estimate.enough:
        status = "INCONCLUSIVE"
        reason = (f"too thin: the thinnest run has {estimate.fewest} timed intervals, fewer than the "
                  f"{MIN_STEP_RATES} a figure needs; let the runs log more steps")
    elif claim.lower <= low and high <= claim.upper:
        status, reason = "REPRODUCED", f"{interval} lies inside the band"
    elif high < claim.lower:
        status, reason = "NOT REPRODUCED", f"{interval} lies wholly below the band's lower bound {claim.lower:.2f}"
    elif low > claim.upper:
        status, reason = "NOT REPRODUCED", f"{interval} lies wholly above the band's upper bound {claim.upper:.2f}"
    else:
        bounds = [bound for bound in (claim.lower, claim.upper) if low < bound < high]
        named = " and ".join(f"{'lower' if b == claim.lower else 'upper'} bound {b:.2f}" for b in bounds)
        status = "INCONCLUSIVE"
        reason = f"{interval} straddles the band's {named}; " + settle_text(estimate, drift, bounds)
    return ClaimVerdict("speedup", status, f"{status}  {figure}", reason)


def _source(claim: SpeedupClaim) -> str:
    return "article's" if claim.program == "article" else f"{claim.program} claim's"


def judged_interval(estimate: Estimate, drift: float) -> tuple[float, float, str]:
    """The interval a claim is judged on, and how the line describes it: between repetitions
    as estimated from 3 on; below that, the bootstrap of steps widened by exp(+/-z x drift/sqrt(n))."""
    if estimate.n >= MIN_REPETITIONS_FOR_T:
        return estimate.low, estimate.high, (f"95% CI {estimate.low:.2f}-{estimate.high:.2f} between "
                                             f"{estimate.n} repetitions, {estimate.samples} intervals")
    widen = math.exp(Z_95 * drift / math.sqrt(estimate.n))
    low, high = estimate.low / widen, estimate.high * widen
    pairs = "one pair" if estimate.n == 1 else f"{estimate.n} pairs"
    return low, high, (f"95% CI {estimate.low:.2f}-{estimate.high:.2f} within {pairs}, {estimate.samples} intervals;"
                       f" {low:.2f}-{high:.2f} with run-to-run drift (sd {drift:.2f})")


def repetitions_to_settle(value: float, bounds: Sequence[float], sd: float) -> int | None:
    """The fewest repetitions (at least MIN_REPETITIONS_FOR_T) whose t interval, at this spread
    between repetitions (sd of the logs), would clear every bound; None beyond MAX_REPETITIONS_ADVISED."""
    distance = min(abs(math.log(value / bound)) for bound in bounds)
    for n in range(MIN_REPETITIONS_FOR_T, MAX_REPETITIONS_ADVISED + 1):
        if t_quantile(n - 1) * sd / math.sqrt(n) < distance:
            return n
    return None


def settle_text(estimate: Estimate, drift: float, bounds: Sequence[float]) -> str:
    if estimate.n >= MIN_REPETITIONS_FOR_T:  # the spread the repetitions showed
        sd = math.log(estimate.high / estimate.value) * math.sqrt(estimate.n) / t_quantile(estimate.n - 1)
    else:
        sd = drift
    n = repetitions_to_settle(estimate.value, bounds, max(sd, 1e-9))
    if n is None:
        return (f"the figure sits too close to the bound for up to {MAX_REPETITIONS_ADVISED} repetitions to "
                "settle it")
    return f"about {n} repetitions would settle it (`invoke reproduce --repetitions {n}`)"


def judge_learning(claim: LearningClaim, standalone: Evaluation | None, cluster: Evaluation | None,
                   course: Sequence[LossWindow] = ()) -> ClaimVerdict:
    """SAME when TOST puts the precision difference within +/-margin, every window of the loss
    course within +/-loss_margin, and both modes beat chance; DIFFERENT when a 95% interval lies
    wholly outside its margin, or one mode beats chance and the other does not; INCONCLUSIVE
    otherwise, or when a mode has no evaluation with a precision (none, or one that failed)."""
    modes = {"standalone": standalone, "cluster": cluster}
    absent = [name for name, e in modes.items() if e is None or not e.ok]
    if standalone is None or cluster is None or absent:
        shown = "; ".join(f"{name} {_precision_text(e)}" for name, e in modes.items() if name not in absent and e)
        line = f"INCONCLUSIVE  precision @ 1 not evaluated for the {' and the '.join(absent)}" \
               + (f" ({shown})" if shown else "")
        return ClaimVerdict("learning", "INCONCLUSIVE", line,
                            f"no evaluation of the {' and the '.join(absent)} run: nothing to compare")
    counts = (standalone.correct, standalone.counted), (cluster.correct, cluster.counted)
    low, high = newcombe(*counts)
    p = equivalence_p(*counts, claim.margin)
    learned = [name for name, e in modes.items() if e is not None and e.low is not None and e.low > claim.chance]
    difference = f"the precision difference's interval {low:+.3f} to {high:+.3f}"
    outside = [w for w in course if w.high < 1 - claim.loss_margin or w.low > 1 + claim.loss_margin]
    unsettled = [w for w in course if w.equivalence_p >= ALPHA]
    if high < -claim.margin or low > claim.margin:
        status, reason = "DIFFERENT", f"{difference} lies wholly outside +/-{claim.margin:.2f}"
    elif len(learned) == 1:
        other = "cluster" if learned == ["standalone"] else "standalone"
        status = "DIFFERENT"
        reason = f"the {learned[0]} is above chance ({claim.chance:.2f}) and the {other} is not"
    elif not learned:
        status, reason = "INCONCLUSIVE", f"neither mode is above chance ({claim.chance:.2f}): neither learned"
    elif outside:
        w = outside[0]
        status = "DIFFERENT"
        reason = (f"the cluster's loss over steps {w.first}-{w.last} is {w.ratio:.2f}x the standalone's "
                  f"(95% CI {w.low:.2f}-{w.high:.2f}), outside +/-{claim.loss_margin:.0%}")
    elif p < ALPHA and not unsettled:
        status = "SAME"
        reason = (f"the two one-sided tests put the precision difference within +/-{claim.margin:.2f} "
                  f"(p = {p:.3g})" + (f" and the loss course within +/-{claim.loss_margin:.0%} in every window"
                                      if course else "; the runs logged too few steps to compare their losses")
                  + ", and both modes beat chance")
    elif p >= ALPHA:
        status = "INCONCLUSIVE"
        reason = f"{difference} is not shown within +/-{claim.margin:.2f} (TOST p = {p:.3g})"
    else:
        w = unsettled[0]
        status = "INCONCLUSIVE"
        reason = (f"the cluster's loss over steps {w.first}-{w.last} is {w.ratio:.2f}x the standalone's "
                  f"(95% CI {w.low:.2f}-{w.high:.2f}), not shown within +/-{claim.loss_margin:.0%}")
    assert cluster.step is not None  # cluster.ok says so
    per_step = f" (a cluster step has {cluster.examples_seen // (cluster.step + 1)} examples)"
    gap = cluster.correct / cluster.counted - standalone.correct / standalone.counted
    losses = ", ".join(f"{w.ratio:.2f}x" for w in course)
    line = (f"{status}  precision @ 1 at the end of each mode's run: standalone {_precision_text(standalone)}, "
            f"cluster {_precision_text(cluster)}{per_step}; difference {gap:+.3f}"
            f" (95% CI {low:+.3f} to {high:+.3f}), margin +/-{claim.margin:.2f}"
            + (f"; cluster/standalone loss by half {losses}, margin +/-{claim.loss_margin:.0%}" if course else ""))
    return ClaimVerdict("learning", status, line, reason)


def _precision_text(e: Evaluation) -> str:
    return f"{e.precision:.3f} (95% CI {e.low:.3f}-{e.high:.3f}) after {e.examples_seen:,} examples"


# What the learning verdict can and cannot see: the report says it under the verdict.
LEARNING_POWER = (
    "The learning verdict compares what each mode learned by the end of its run (precision @ 1 on "
    "the test set) and the course of its logged loss, step for step. It detects a cluster that learns "
    "more slowly or more quickly than the standalone trainer by more than the margins (claims.yaml), "
    "which at the article's 1000 steps on the kit's generated data includes a cluster that learns at "
    "half the rate (docs/learning.md). It cannot detect a cluster that learns exactly as one "
    "standalone trainer does while doing twice its work (a worker's batches wasted, or both workers "
    "reading the same examples): per step, that is what the standalone does. On data that is learned "
    "completely (precision near 1 in both modes) it can only say that both learned."
)


class Stated(Protocol):
    """A verdict as a line shows it: the update check's (reprokit.updates.verdict) as the claims'."""

    @property
    def status(self) -> str: ...

    @property
    def line(self) -> str: ...


def headline(logs_passed: bool | None, speedup: ClaimVerdict | None, learning: ClaimVerdict | None,
             updates: Stated | None = None) -> str:
    """The four verdicts in one line: ``logs PASS, claim NOT REPRODUCED, learning SAME, updates
    EXACT``; a part that was never reached is ``not judged``. ``logs_passed`` None: the run did not
    complete."""
    logs = "not judged" if logs_passed is None else ("PASS" if logs_passed else "FAIL")
    return (f"logs {logs}, claim {speedup.status if speedup else 'not judged'}, "
            f"learning {learning.status if learning else 'not judged'}, "
            f"updates {updates.status if updates else 'not judged'}")


def verdict_lines(logs_passed: bool, rules_checked: int, rules_failed: int, speedup: ClaimVerdict,
                  learning: ClaimVerdict, updates: Stated | None) -> list[str]:
    """The end of every reproduction: the logs' verdict, the speed-up claim's, learning's, and
    whether every update is the one promised."""
    rules = f"{rules_checked} rule{'' if rules_checked == 1 else 's'}, {rules_failed} failed"
    return [f"{'logs:':<10}{'PASS' if logs_passed else 'FAIL'}  ({rules})",
            f"{'claim:':<10}{speedup.line}",
            f"{'learning:':<10}{learning.line}",
            f"{'updates:':<10}{updates.line if updates else 'NOT JUDGED  the run has no cluster'}"]
