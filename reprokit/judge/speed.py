"""Training speed: the warm-up rule, the one estimator behind every speed figure with its 95%
interval, a run's figures (both rates, the speed-up, the efficiency per worker), and the one way
every table, report and verdict writes a figure.

Each step report's ``examples/sec`` is one step's rate (upstream: batch size x towers divided by
that single ``sess.run``'s wall time), not an average. Step 0's run also builds the graph's
runtime state and waits for the input queues to fill (the article: 12.8 and 11.7 examples/sec),
so it says nothing about training speed.

Warm-up rule, the one every figure of the kit follows (reproduce, report, bench, sweep): sort
the step reports by step number and drop the first ``WARMUP_STEPS`` of them, that is step 0
alone. From step 10 on each report times one ordinary step. A run's rate is the median of what
remains: one slow step (a summary run every 100 steps, a checkpoint every 1000) moves a median
less than a mean.

The estimator: runs combine by the geometric mean. A rate is the geometric mean of the runs'
medians; a speed-up is the geometric mean, over repetitions, of the ratio of the two runs'
medians. With three or more repetitions the interval is Student's t on the logs (the spread
between repetitions); with one or two it is a seeded bootstrap of the step rates (the spread
within the runs). :data:`METHOD` says this in words for the README and every report.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from reprokit.errors import KitError
from reprokit.judge.logs import StepFields


class SpeedError(KitError):
    """A speed figure cannot be computed from what was given."""


# --- the warm-up rule ----------------------------------------------------------------------

WARMUP_STEPS = 1
WARMUP_RULE = ("median of the per-step examples/sec of the logged steps, step 0 excluded "
               "(it includes filling the input queues and warming up the graph)")


def after_warmup(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> list[StepFields]:
    """The step reports that count for speed: sorted by step, the first ``warmup_steps`` dropped."""
    if warmup_steps < 0:
        raise SpeedError(f"warmup_steps must be 0 or more, got {warmup_steps}")
    return sorted(steps, key=lambda s: s.step)[warmup_steps:]


def efficiency(speedup: float, workers: int) -> float:
    """The speed-up per worker: 1.0 is perfect scaling, the article's 1.74 on 2 workers is 0.87."""
    if workers < 1:
        raise SpeedError(f"efficiency needs at least one worker, got {workers}")
    return speedup / workers


def step_rates(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> list[float]:
    """The examples/sec of every step line that counts for speed (the warm-up rule's)."""
    return [s.examples_per_sec for s in after_warmup(steps, warmup_steps)]


# --- the one estimator and its interval ---------------------------------------------------

# Every interval of the kit is at 95% and every test at 5% (TOST at 5% each side): the speed
# figures' here, the precisions' (judge/evaluation.py) and the claims' (judge/claims.py).
ALPHA = 0.05

# Fewer step rates than this in any run, and its median rests on too few steps to judge a claim.
MIN_STEP_RATES = 5
# Below this many repetitions the sd of the logs is too unstable to use: bootstrap the steps.
MIN_REPETITIONS_FOR_T = 3
BOOTSTRAP_RESAMPLES = 2000
DEFAULT_SEED = 0

METHOD = (
    f"Every speed figure follows one method. Each run's figure is the {WARMUP_RULE}. "
    "A rate is the geometric mean of the runs' medians; a speed-up is the geometric mean, over "
    "repetitions (a cluster run and a standalone run), of the ratio of their medians. "
    "The 95% interval: with 3 or more repetitions, Student's t on the logarithms of the "
    "per-repetition figures (mean +/- t(0.975, n-1) sd/sqrt(n), exponentiated), which covers the "
    "variation between repetitions; with 1 or 2, a bootstrap of the step rates within each run "
    f"({BOOTSTRAP_RESAMPLES} resamples with replacement, numpy's default generator seeded with "
    f"{DEFAULT_SEED}, the 2.5 and 97.5 percentiles of the recomputed figure), which covers only "
    "what those runs show: it does not include run-to-run drift, which reaches 25% on this shared "
    f"machine; repeat the runs to see it. A run with fewer than {MIN_STEP_RATES} step rates makes "
    "a figure too thin to judge a claim (INCONCLUSIVE)."
)


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% interval, and what it rests on.

    ``n`` counts independent repetitions (runs for a rate, pairs of runs for a ratio);
    ``samples`` the step rates behind it, all runs together; ``fewest`` the step rates of the
    thinnest run, which decides whether the figure is :attr:`enough` to judge a claim.
    """

    value: float
    low: float
    high: float
    n: int
    samples: int
    fewest: int
    method: str

    @property
    def enough(self) -> bool:
        """Every run behind the figure has at least MIN_STEP_RATES step rates."""
        return self.fewest >= MIN_STEP_RATES


def t_quantile(df: int) -> float:
    """t_{0.975, df}: the two-sided 95% quantile of Student's t with ``df`` degrees of freedom (scipy)."""
    if df < 1:
        raise SpeedError(f"Student's t needs at least 1 degree of freedom, got {df}")
    return float(stats.t.ppf(1 - ALPHA / 2, df))


def ratio_estimate(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], *,
                   seed: int = DEFAULT_SEED) -> Estimate:
    """A speed-up from repetitions, each (numerator step rates, denominator step rates).

    The figure is the geometric mean over repetitions of median(numerator) / median(denominator);
    the interval is t between repetitions from 3 on, the seeded bootstrap of steps below.
    """
    if not pairs:
        raise SpeedError("a ratio needs at least one repetition (a pair of runs); got none")
    units = [(_rates(num, f"repetition {i} numerator"), _rates(den, f"repetition {i} denominator"))
             for i, (num, den) in enumerate(pairs, start=1)]
    return _estimate(units, "repetition", seed)


def rate_estimate(runs: Sequence[Sequence[float]], *, seed: int = DEFAULT_SEED) -> Estimate:
    """A rate (examples/sec) from runs' step rates: the geometric mean of the runs' medians,
    with the same intervals as :func:`ratio_estimate`."""
    if not runs:
        raise SpeedError("a rate needs at least one run's step rates; got none")
    units = [(_rates(run, f"run {i}"), None) for i, run in enumerate(runs, start=1)]
    return _estimate(units, "run", seed)


# --- the one method ------------------------------------------------------------------------

# A repetition: its numerator run's step rates, and its denominator run's (None for a rate).
_Unit = tuple[tuple[float, ...], tuple[float, ...] | None]


def _rates(rates: Sequence[float], label: str) -> tuple[float, ...]:
    """The run's step rates, sorted so that the order they came in changes nothing."""
    if not rates:
        raise SpeedError(f"{label} has no step rate after warm-up",
                            "let the run log more steps, or leave it out")
    bad = [r for r in rates if not (math.isfinite(r) and r > 0)]
    if bad:
        raise SpeedError(f"{label} has step rates that are not positive numbers: {bad[:3]}",
                            "check the log's step lines (logs: examples_per_sec_positive)")
    return tuple(sorted(float(r) for r in rates))


def _log_figure(unit: _Unit) -> float:
    num, den = unit
    value = math.log(statistics.median(num))
    return value - math.log(statistics.median(den)) if den is not None else value


def _estimate(units: Sequence[_Unit], word: str, seed: int) -> Estimate:
    # Sorted, so that the same repetitions in any order draw the same bootstrap resamples.
    units = sorted(units, key=lambda u: (u[0], u[1] or ()))
    runs = [run for unit in units for run in unit if run is not None]
    samples, fewest, n = sum(len(r) for r in runs), min(len(r) for r in runs), len(units)
    logs = [_log_figure(unit) for unit in units]
    centre = statistics.fmean(logs)
    if n >= MIN_REPETITIONS_FOR_T:
        half = t_quantile(n - 1) * statistics.stdev(logs) / math.sqrt(n)
        low, high = centre - half, centre + half
        method = f"between {n} {word}s (t)"
    else:
        low, high = _bootstrap(units, seed)
        # With a handful of steps the resampled medians take few values, and their percentiles
        # can miss the sample's own figure; an interval must hold the figure it is drawn around.
        low, high = min(low, centre), max(high, centre)
        method = f"within {'one' if n == 1 else n} {word}{'' if n == 1 else 's'} (bootstrap of steps)"
    return Estimate(math.exp(centre), math.exp(low), math.exp(high), n, samples, fewest, method)


def _bootstrap(units: Sequence[_Unit], seed: int) -> tuple[float, float]:
    """2.5 and 97.5 percentiles of the log figure when every run's steps are resampled."""
    rng = np.random.default_rng(seed)
    total = np.zeros(BOOTSTRAP_RESAMPLES)
    for num, den in units:
        total += _resampled_log_medians(num, rng)
        if den is not None:
            total -= _resampled_log_medians(den, rng)
    total /= len(units)
    low, high = np.percentile(total, [2.5, 97.5])
    return float(low), float(high)


def _resampled_log_medians(rates: tuple[float, ...], rng: np.random.Generator) -> np.ndarray:
    """The log of the median of each of BOOTSTRAP_RESAMPLES resamples of one run's step rates."""
    values = np.asarray(rates)
    draws = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return np.log(np.median(values[draws], axis=1))


# --- a run's figures ----------------------------------------------------------------------

def run_rate(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> float | None:
    """One run's rate as the estimator takes it (the median of its step rates after warm-up):
    the bench's per-run figure is the same number a reproduction's is; None with no step left."""
    rates = step_rates(steps, warmup_steps)
    return rate_estimate([rates]).value if rates else None


@dataclass(frozen=True)
class RunSpeed:
    """Standalone vs cluster of one run: both rates, the speed-up, and the efficiency per worker."""

    standalone: Estimate
    cluster: Estimate
    speedup: Estimate
    efficiency: float
    workers: int
    warmup_rule: str = WARMUP_RULE
    method: str = METHOD


def run_speed(standalone: Sequence[StepFields], cluster: Sequence[StepFields], workers: int,
              more: Sequence[tuple[Sequence[StepFields], Sequence[StepFields]]] = ()) -> RunSpeed:
    """Both modes' figures from one pair of runs, and from ``more`` pairs (standalone, cluster)
    when the run repeated them; SpeedError when a run has no step line after warm-up."""
    pairs = []
    for number, (alone, together) in enumerate([(standalone, cluster), *more], start=1):
        rates = {}
        for name, steps in (("standalone", alone), ("cluster", together)):
            rates[name] = step_rates(steps)
            if not rates[name]:
                which = f"the {name} run" + (f" of repetition {number}" if more else "")
                raise SpeedError(f"{which} has no step report after the first {WARMUP_STEPS}"
                                 f" ({len(steps)} in all), so it has no training speed",
                                 f"let the {name} run log more steps (max_steps > {10 * WARMUP_STEPS})")
        pairs.append((rates["cluster"], rates["standalone"]))
    up = ratio_estimate(pairs)
    return RunSpeed(rate_estimate([s for _, s in pairs]), rate_estimate([c for c, _ in pairs]), up,
                    efficiency(up.value, workers), workers)


# --- every figure as text -----------------------------------------------------------------

NOT_MEASURED = "n/a"  # in place of a figure there is none of


def format_number(value: float | None, digits: int, suffix: str = "") -> str:
    """A figure without its interval, ``1.34x``; ``n/a`` for none."""
    return NOT_MEASURED if value is None else f"{value:.{digits}f}{suffix}"


def format_share(share: float | None) -> str:
    """A share as a percentage with one decimal: 0.871 is ``87.1%``; ``n/a`` for none."""
    return format_number(None if share is None else 100 * share, 1, "%")


def format_estimate(estimate: Estimate | None, suffix: str = "x", digits: int = 2, *, brief: bool = False,
                    change: bool = False, show_samples: bool = False) -> str:
    """The figure, its interval and its n: ``1.34x (95% CI 1.21-1.49, n=3)``; ``n/a`` for none.

    ``suffix`` follows the figure as written: ``"x"`` for a speed-up, ``" examples/sec"`` for a
    rate (``98.0 examples/sec (95% CI 97.2-98.6, n=1)``, with ``digits=1``). ``show_samples``
    adds the step rates behind it: ``..., n=1, 198 step rates)``. ``brief`` leaves the interval
    alone in the brackets, ``1.34x (1.21-1.49)``, for a table under a line that says what they are
    (bench.tables' interval_line). ``change`` writes a ratio as the change it makes, each number
    signed and followed by ``suffix``: ``+34% (+21% to +49%)`` with ``suffix="%"`` and ``digits=0``.
    """
    if estimate is None:
        return NOT_MEASURED
    if change:  # " to ", since a dash between signed numbers would read as a minus
        ends = (estimate.value, estimate.low, estimate.high)
        value, low, high = (f"{100 * (v - 1):+.{digits}f}{suffix}" for v in ends)
        interval = f"{low} to {high}"
    else:
        value = format_number(estimate.value, digits, suffix)
        interval = f"{estimate.low:.{digits}f}-{estimate.high:.{digits}f}"
    if brief:
        return f"{value} ({interval})"
    extra = f", {estimate.samples} step rates" if show_samples else ""
    return f"{value} (95% CI {interval}, n={estimate.n}{extra})"
