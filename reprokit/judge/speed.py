"""Training speed from step reports, and the article's own figures to compare against.

Each step report's ``examples/sec`` is one step's rate (upstream: batch size x towers divided by
that single ``sess.run``'s wall time), not an average. Step 0's run also builds the graph's
runtime state and waits for the input queues to fill (the article: 12.8 and 11.7 examples/sec),
so it says nothing about training speed.

Warm-up rule, the one every figure of the kit follows (reproduce, report, bench, sweep): sort
the step reports by step number and drop the first ``WARMUP_STEPS`` of them, that is step 0
alone. Step 0 is the one step that pays for filling the queues and the first runs of the
graph; from step 10 on each report times one ordinary step. The rate is the median of what remains: one slow step (a
summary run every 100 steps, a checkpoint every 1000) moves a median less than a mean.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from reprokit.errors import KitError
from reprokit.judge.logs import StepFields

WARMUP_STEPS = 1
WARMUP_RULE = ("median of the per-step examples/sec of the logged steps, step 0 excluded "
               "(it includes filling the input queues and warming up the graph)")


class SpeedError(KitError):
    """A speed figure cannot be computed from what was given."""


def after_warmup(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> list[StepFields]:
    """The step reports that count for speed: sorted by step, the first ``warmup_steps`` dropped."""
    if warmup_steps < 0:
        raise SpeedError(f"warmup_steps must be 0 or more, got {warmup_steps}")
    return sorted(steps, key=lambda s: s.step)[warmup_steps:]


def median_rate(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> float | None:
    """Median examples/sec of the step reports after warm-up; None when none remain."""
    kept = after_warmup(steps, warmup_steps)
    if not kept:
        return None
    return float(statistics.median(s.examples_per_sec for s in kept))


def efficiency(speedup: float, workers: int) -> float:
    """The speed-up per worker: 1.0 is perfect scaling, the article's 1.74 on 2 workers is 0.87."""
    if workers < 1:
        raise SpeedError(f"efficiency needs at least one worker, got {workers}")
    return speedup / workers
