"""A run's speed figures, each with its 95% interval: the one estimator (reprokit.judge.intervals)
applied to the standalone and the cluster trainer's step lines after warm-up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reprokit.judge.intervals import METHOD, Estimate, rate_estimate, ratio_estimate
from reprokit.judge.logs import StepFields
from reprokit.judge.speed import WARMUP_RULE, WARMUP_STEPS, SpeedError, after_warmup, efficiency


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


def step_rates(steps: Sequence[StepFields], warmup_steps: int = WARMUP_STEPS) -> list[float]:
    """The examples/sec of every step line that counts for speed (the warm-up rule's)."""
    return [s.examples_per_sec for s in after_warmup(steps, warmup_steps)]


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
