"""Training speed by the kit's own clock: the warm-up rule, the one estimator behind every speed
figure with its 95% interval, a run's figures (both rates, the speed-up, the efficiency per
worker), what the programs say of themselves beside them, and the one way every table, report and
verdict writes a figure.

The kit stamps every line a role prints when it arrives (reprokit.run.logfiles; an engine's
stamp on Docker and Swarm), and the plan says how many examples a step trains: a batch of
``BATCH_SIZE`` on each worker that trains, one batch alone. Between two consecutive step lines of
one log, ``first`` and ``last``, the steps ``first + 1 .. last`` ran; their examples over the
seconds between the two stamps is one rate of that run. Nothing the program prints about its own
speed enters it: the ``examples/sec`` on a step line is the program's claim (upstream: batch size
x towers over that single ``sess.run``'s wall time, by the program's own timer and its own count),
shown beside the kit's figure and held to it by a rule (expected_logs/rules.yaml,
``reported_speed_agrees_with_kit_clock``).

Warm-up rule, the one every figure of the kit follows (reproduce, report, bench, sweep): step 0
also builds the graph's runtime state and fills the input queues (the article: 12.8 and 11.7
examples/sec), and it ends before the first step line, so it lies in no interval. Every interval
counts, the one after step 0 too, whose steps are ordinary ones; a run's rate is the median of
its interval rates, so that one slow interval (a summary every 100 steps, a checkpoint) moves it
less than a mean would. The programs' own figures follow the same rule: step 0's line is left out.

The estimator: runs combine by the geometric mean. A rate is the geometric mean of the runs'
medians; a speed-up is the geometric mean, over repetitions, of the ratio of the two runs'
medians. With three or more repetitions the interval is Student's t on the logs (the spread
between repetitions); with one or two it is a seeded bootstrap of the interval rates (the spread
within the runs). :data:`METHOD` says this in words for the README and every report.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from scipy import stats

from reprokit.errors import KitError
from reprokit.judge.logs import LogRecord, StepFields, step_fields
from reprokit.names import STANDALONE


class SpeedError(KitError):
    """A speed figure cannot be computed from what was given."""


# --- what a step trains, and the kit's clock ---------------------------------------------------

BATCH_SIZE = 128  # cifar10.py's --batch_size default: every trainer's batch per tower or worker


def examples_per_step(mode: str, workers: int) -> int:
    """What the plan gives one step: a batch on each worker that trains (every program's cluster
    step is one batch per worker), one batch alone."""
    if workers < 1:
        raise SpeedError(f"a cluster step needs at least one worker, got {workers}")
    return BATCH_SIZE * (1 if mode == STANDALONE else workers)


WARMUP_STEPS = 1  # the programs' own figures: step 0's line is left out
WARMUP_RULE = ("median of the examples/sec by the kit's clock between consecutive step lines: the examples the "
               "plan gives a step times the steps between two lines, over the seconds between the kit's "
               "timestamps of those lines; step 0 (which fills the input queues and warms up the graph) ends "
               "before the first line and is in no interval")


@dataclass(frozen=True)
class Interval:
    """Two consecutive step lines of one log: steps ``first + 1`` to ``last`` ran in ``seconds``
    by the kit's stamps; ``reported`` is what the closing line says of its own speed."""

    first: int
    last: int
    seconds: float
    reported: float

    def rate(self, examples: int) -> float:
        """Examples per second by the kit's clock, ``examples`` a step as planned."""
        return examples * (self.last - self.first) / self.seconds


def intervals(records: Sequence[LogRecord], by_trainer: bool = False) -> list[Interval]:
    """The timed intervals of a log (or of the logs of a role's incarnations, read as one run:
    never across two files, since a restart lies between them), in step order. SpeedError for
    step lines without the kit's stamp: such a log was not written by the kit's runner.
    ``by_trainer``: timed instead by the wall clock the trainer printed at the start of each step
    line (the article's logs, which the kit did not write)."""
    lines = [r for r in records if r.step is not None]
    stamps = [trainer_stamp(r.text) if by_trainer else r.logged_at for r in lines]
    unstamped = [r for r, at in zip(lines, stamps) if at is None]
    if unstamped:
        raise SpeedError(f"{unstamped[0].where}: the step line has no timestamp of the kit's, so the kit's clock "
                         "cannot time it", "speed is measured only on logs the kit's runner wrote (runs/<id>/)")
    found = []
    for (before, at), (after, then) in zip(zip(lines, stamps), list(zip(lines, stamps))[1:]):
        assert before.step is not None and after.step is not None  # lines holds step lines only
        assert at is not None and then is not None
        if before.path != after.path or after.step.step <= before.step.step:
            continue
        seconds = (then - at).total_seconds()
        if seconds > 0:  # two lines stamped at once (a burst read) time nothing
            found.append(Interval(before.step.step, after.step.step, seconds, after.step.examples_per_sec))
    return sorted(found, key=lambda i: i.first)


def trainer_stamp(text: str) -> datetime | None:
    """The datetime.now() a step line begins with ('2017-10-10 20:21:50.442159: step 10, ...')."""
    head, found, _ = text.partition(": step ")
    try:
        return datetime.fromisoformat(head) if found else None
    except ValueError:
        return None


def clock_rates(records: Sequence[LogRecord], examples: int) -> list[float]:
    """Every interval's examples/sec by the kit's clock, ``examples`` a step as planned."""
    return [interval.rate(examples) for interval in intervals(records)]


def after_warmup(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> list[StepFields]:
    """The programs' own step reports that count: sorted by step, the first ``warmup_steps`` dropped."""
    if warmup_steps < 0:
        raise SpeedError(f"warmup_steps must be 0 or more, got {warmup_steps}")
    return sorted(steps, key=lambda s: s.step)[warmup_steps:]


def reported_rates(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> list[float]:
    """The examples/sec a program printed of itself on every step line but step 0's: its claim,
    which the kit checks against its clock and never reports as the run's speed."""
    return [s.examples_per_sec for s in after_warmup(steps, warmup_steps)]


def efficiency(speedup: float, workers: int) -> float:
    """The speed-up per worker: 1.0 is perfect scaling, the article's 1.74 on 2 workers is 0.87."""
    if workers < 1:
        raise SpeedError(f"efficiency needs at least one worker, got {workers}")
    return speedup / workers


# --- the one estimator and its interval ---------------------------------------------------

# Every interval of the kit is at 95% and every test at 5% (TOST at 5% each side): the speed
# figures' here, the precisions' (judge/evaluation.py) and the claims' (judge/claims.py).
ALPHA = 0.05

# Fewer interval rates than this in any run, and its median rests on too few steps to judge a claim.
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
    "variation between repetitions; with 1 or 2, a bootstrap of the interval rates within each run "
    f"({BOOTSTRAP_RESAMPLES} resamples with replacement, numpy's default generator seeded with "
    f"{DEFAULT_SEED}, the 2.5 and 97.5 percentiles of the recomputed figure), which covers only "
    "what those runs show: it does not include run-to-run drift, which reaches 25% on this shared "
    f"machine; repeat the runs to see it. A run with fewer than {MIN_STEP_RATES} interval rates makes "
    "a figure too thin to judge a claim (INCONCLUSIVE). What the programs print of their own speed is "
    "shown beside, by the same rule and estimator, and never judged."
)


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% interval, and what it rests on.

    ``n`` counts independent repetitions (runs for a rate, pairs of runs for a ratio);
    ``samples`` the interval rates behind it, all runs together; ``fewest`` the rates of the
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
        """Every run behind the figure has at least MIN_STEP_RATES rates."""
        return self.fewest >= MIN_STEP_RATES


def t_quantile(df: int) -> float:
    """t_{0.975, df}: the two-sided 95% quantile of Student's t with ``df`` degrees of freedom (scipy)."""
    if df < 1:
        raise SpeedError(f"Student's t needs at least 1 degree of freedom, got {df}")
    return float(stats.t.ppf(1 - ALPHA / 2, df))


def ratio_estimate(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], *,
                   seed: int = DEFAULT_SEED) -> Estimate:
    """A speed-up from repetitions, each (numerator rates, denominator rates).

    The figure is the geometric mean over repetitions of median(numerator) / median(denominator);
    the interval is t between repetitions from 3 on, the seeded bootstrap of steps below.
    """
    if not pairs:
        raise SpeedError("a ratio needs at least one repetition (a pair of runs); got none")
    units = [(_rates(num, f"repetition {i} numerator"), _rates(den, f"repetition {i} denominator"))
             for i, (num, den) in enumerate(pairs, start=1)]
    return _estimate(units, "repetition", seed)


def rate_estimate(runs: Sequence[Sequence[float]], *, seed: int = DEFAULT_SEED) -> Estimate:
    """A rate (examples/sec) from runs' rates: the geometric mean of the runs' medians,
    with the same intervals as :func:`ratio_estimate`."""
    if not runs:
        raise SpeedError("a rate needs at least one run's rates; got none")
    units = [(_rates(run, f"run {i}"), None) for i, run in enumerate(runs, start=1)]
    return _estimate(units, "run", seed)


# --- the one method ------------------------------------------------------------------------

# A repetition: its numerator run's rates, and its denominator run's (None for a rate).
_Unit = tuple[tuple[float, ...], tuple[float, ...] | None]


def _rates(rates: Sequence[float], label: str) -> tuple[float, ...]:
    """The run's rates, sorted so that the order they came in changes nothing."""
    if not rates:
        raise SpeedError(f"{label} has no rate after warm-up",
                            "let the run log more steps, or leave it out")
    bad = [r for r in rates if not (math.isfinite(r) and r > 0)]
    if bad:
        raise SpeedError(f"{label} has rates that are not positive numbers: {bad[:3]}",
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
    """The log of the median of each of BOOTSTRAP_RESAMPLES resamples of one run's rates."""
    values = np.asarray(rates)
    draws = rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))
    return np.log(np.median(values[draws], axis=1))


# --- a run's figures ----------------------------------------------------------------------

@dataclass(frozen=True)
class RunSpeed:
    """Standalone vs cluster of one run by the kit's clock: both rates, the speed-up, and the
    efficiency per worker; ``reported``, the speed-up the programs' own figures give, shown beside
    (None where a log has too few of them)."""

    standalone: Estimate
    cluster: Estimate
    speedup: Estimate
    efficiency: float
    workers: int
    reported: Estimate | None = None
    warmup_rule: str = WARMUP_RULE
    method: str = METHOD


def run_speed(standalone: Sequence[LogRecord], cluster: Sequence[LogRecord], workers: int,
              more: Sequence[tuple[Sequence[LogRecord], Sequence[LogRecord]]] = ()) -> RunSpeed:
    """Both modes' figures from one pair of runs' logs, and from ``more`` pairs (standalone,
    cluster) when the run repeated them; SpeedError when a run has no timed interval."""
    pairs, claimed = [], []
    for number, (alone, together) in enumerate([(standalone, cluster), *more], start=1):
        rates, own = {}, {}
        for name, records in (("standalone", alone), ("cluster", together)):
            rates[name] = clock_rates(records, examples_per_step(name, workers))
            own[name] = reported_rates(step_fields(records))
            if not rates[name]:
                which = f"the {name} run" + (f" of repetition {number}" if more else "")
                lines = len(step_fields(records))
                raise SpeedError(f"{which} has no two step lines to time ({lines} in all), so it has no "
                                 "training speed", f"let the {name} run log more steps (max_steps > 10)")
        pairs.append((rates["cluster"], rates["standalone"]))
        claimed.append((own["cluster"], own["standalone"]))
    up = ratio_estimate(pairs)
    reported = ratio_estimate(claimed) if all(c and s for c, s in claimed) else None
    return RunSpeed(rate_estimate([s for _, s in pairs]), rate_estimate([c for c, _ in pairs]), up,
                    efficiency(up.value, workers), workers, reported)


def speedup_ceiling(workers: int, cluster_cpus: int, standalone_cpus: int) -> float:
    """The most a cluster can do against its standalone on this plan: no more than the workers
    that train, nor than the CPUs its roles hold over the standalone's."""
    if min(workers, cluster_cpus, standalone_cpus) < 1:
        raise SpeedError(f"a ceiling needs workers and CPUs, got {workers} workers, {cluster_cpus} and "
                         f"{standalone_cpus} CPUs")
    return min(float(workers), cluster_cpus / standalone_cpus)


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
    adds the rates behind it: ``..., n=1, 198 intervals)``. ``brief`` leaves the interval
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
    extra = f", {estimate.samples} intervals" if show_samples else ""
    return f"{value} (95% CI {interval}, n={estimate.n}{extra})"
