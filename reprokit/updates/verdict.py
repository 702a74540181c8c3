"""The fourth verdict, `updates`: does every cluster step do exactly what the program promises?

The check (reprokit.updates.check) runs a few steps of the program's real cluster on the kit's
known batches and records its weights before the first step and after every one; then the
program's standalone trainer, the oracle, runs one step from each recorded state on the batches
the cluster promises to combine, and on the batches a bug would use instead. This module plans
those oracle steps (``UpdateCheck.jobs``) and reads the answer (``UpdateCheck.verdict``).

What is compared is an update: the weights after a step minus the weights before it, each of the
ten model variables, against the oracle's update from the same weights. Every step is checked
from the cluster's own weights before it, so a difference is found at the step where it arises.
Two updates are the same when, for every variable, the norm of their difference, less what
float32 cannot resolve in the weights themselves (an update is the difference of two float32
weights, each rounded to half a unit in the last place: ``2 x 2^-23 x |w|`` of the variable's
norm, both weights together), is at most ``RTOL`` of the norm of the oracle's update. The order in
which float32 sums are taken (two towers' means averaged against one mean over both batches, a
ring's chunks, a ps's sums) moves an update by 1e-5 of itself or less (measured:
docs/learning.md#the-update-check); every wrong answer the catalogue holds moves it by a fifth of
itself or more. The global step must advance as the
oracle's does. The moving averages are not compared: in the tutorial's own graph they are updated
beside the weights with no order between the two (``tf.group``), so they read either weights.

A synchronous program (its step: one update from every worker's batch) must match one step on the
union of the workers' batches. An asynchronous one (tf2-ps: every scheduled function one update
from one worker's batch) must match, function by function, one step on the next batch of some
worker. Where an update does not match, the verdict names the closest wrong answer among those a
bug would give: one worker's batch only, one batch used twice (one input pipeline for every
tower), the update scaled by a constant (printed: 2 for gradients summed over two workers, 0.2
for a fifth of the rate), the previous step's gradients (one step stale), a model of each
worker's own (no all-reduce).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from reprokit.updates.probe import GLOBAL_STEP, MODEL

# Two updates are the same within this share of the oracle's (see the docstring), beyond the
# float32 resolution of the weights they are the difference of.
RTOL = 1e-2
FLOAT32_EPS = 2.0 ** -23
Weights = dict[str, np.ndarray]
Parts = tuple[tuple[int, int], tuple[int, int]]  # an oracle batch: two (stream, index) batches


@dataclass(frozen=True)
class UpdatesVerdict:
    """The updates verdict: ``line`` follows the label, status first; ``diagnosis`` names the
    closest wrong answer (or '' where every update matched)."""

    claim: str
    status: str  # EXACT, DIFFERENT, or NOT JUDGED (the check could not run)
    line: str
    reason: str
    diagnosis: str = ""
    checked: int = 0  # the steps (tf2-ps: the functions) checked
    largest: float | None = None  # the largest difference of an update, as a share of the oracle's


@dataclass(frozen=True)
class Job:
    """One oracle step: from the weights ``copy`` had before ``step``, on the batch ``parts``."""

    copy: str
    step: int
    parts: Parts

    @property
    def key(self) -> tuple[str, int, Parts]:
        return self.copy, self.step, self.parts


def difference(update: Weights, expected: Weights, weights: Weights | None = None) -> float:
    """The largest, over the model's variables, of |update - expected| / |expected| (norms), the
    float32 resolution of ``weights`` (the weights both updates start from) taken off first."""
    worst = 0.0
    for name in MODEL:
        scale = float(np.linalg.norm(expected[name]))
        floor = 2 * FLOAT32_EPS * float(np.linalg.norm(weights[name])) if weights is not None else 0.0
        gap = max(0.0, float(np.linalg.norm(update[name] - expected[name])) - floor)
        worst = max(worst, gap / scale if scale > 0 else (0.0 if gap == 0 else math.inf))
    return worst


def delta(after: Weights, before: Weights) -> Weights:
    return {name: after[name] - before[name] for name in (*MODEL, GLOBAL_STEP)}


def scale_of(updates: Sequence[Weights], expected: Sequence[Weights]) -> float:
    """The constant c that brings ``expected`` closest to ``updates`` (least squares, every step)."""
    dot = sum(float(np.vdot(u[name], e[name])) for u, e in zip(updates, expected) for name in MODEL)
    norm = sum(float(np.vdot(e[name], e[name])) for e in expected for name in MODEL)
    return dot / norm if norm > 0 else math.nan


def scaled(update: Weights, c: float) -> Weights:
    return {name: c * value for name, value in update.items()}


@dataclass
class UpdateCheck:
    """A cluster's recorded weights (``copies``: each model copy's snapshots, before the first
    step and after every one; one copy but for an all-reduce cluster, whose workers each hold
    one), what its data layer built, and the plan of oracle steps that judges them."""

    copies: dict[str, list[Weights]]
    workers: int
    asynchronous: bool
    pipelines: int  # input pipelines the cluster's data layer built, all processes together
    jobs: list[Job] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.jobs = self._plan()

    @property
    def steps(self) -> int:
        return min(len(snapshots) for snapshots in self.copies.values()) - 1

    def _plan(self) -> list[Job]:
        jobs: list[Job] = []
        for copy, snapshots in self.copies.items():
            for step in range(len(snapshots) - 1):
                if self.asynchronous:
                    # Function `step` is one worker's next batch: every worker reads stream 0, and
                    # none can be further along than the functions run so far.
                    jobs += [Job(copy, step, ((0, n), (0, n))) for n in range(step + 1)]
                    continue
                union = tuple((w, step) for w in range(self.workers))
                if len(union) != 2:
                    raise ValueError("the update check combines the batches of two workers")
                jobs.append(Job(copy, step, (union[0], union[1])))
                jobs += [Job(copy, step, ((w, step), (w, step))) for w in range(self.workers)]
        return jobs

    def verdict(self, oracle: Sequence[Weights]) -> UpdatesVerdict:
        """The verdict from the oracle's weights after each job, in the order of ``jobs``."""
        if len(oracle) != len(self.jobs):
            raise ValueError(f"the oracle ran {len(oracle)} of {len(self.jobs)} steps")
        after = {job.key: weights for job, weights in zip(self.jobs, oracle)}
        if self.asynchronous:
            return self._asynchronous(after)
        return self._synchronous(after)

    # -- synchronous: every step one update from every worker's batch -------------------------

    def _gap(self, copy: str, step: int, update: Weights, expected: Weights) -> float:
        """How far ``update`` is from ``expected``, both made from ``copy``'s weights before ``step``."""
        return difference(update, expected, self.copies[copy][step])

    def _expected(self, after: dict[tuple[str, int, Parts], Weights], copy: str, step: int,
                  parts: Parts) -> Weights:
        return delta(after[(copy, step, parts)], self.copies[copy][step])

    def _synchronous(self, after: dict[tuple[str, int, Parts], Weights]) -> UpdatesVerdict:
        steps = self.steps
        found: dict[str, list[Weights]] = {}
        union: dict[str, list[Weights]] = {}
        alone: dict[str, dict[int, list[Weights]]] = {}
        for copy, snapshots in self.copies.items():
            found[copy] = [delta(snapshots[t + 1], snapshots[t]) for t in range(steps)]
            union[copy] = [self._expected(after, copy, t, ((0, t), (1, t))) for t in range(steps)]
            alone[copy] = {w: [self._expected(after, copy, t, ((w, t), (w, t))) for t in range(steps)]
                           for w in range(self.workers)}
        # The promise: every copy's every step is one step on both workers' batches.
        gaps = [(self._gap(c, t, found[c][t], union[c][t]), c, t) for c in found for t in range(steps)]
        largest = max(gap for gap, _, _ in gaps)
        counted = self._step_counts(found, union)
        if largest <= RTOL and not counted:
            return UpdatesVerdict("updates", "EXACT", f"EXACT  ({steps} steps, largest difference {largest:.1e} of "
                                  "an update)", f"every step of every model copy is one step on the union of both "
                                  f"workers' batches, within {RTOL:g} of the update", checked=steps, largest=largest)
        first = next((g for g in gaps if g[0] > RTOL), gaps[0])
        variable = _worst_variable(found[first[1]][first[2]], union[first[1]][first[2]])
        where = (f"from step {first[2]}" + (f" of {first[1]}'s copy" if len(self.copies) > 1 else "")
                 + f", first in {variable}")
        if largest <= RTOL:  # the weights are right, the step count is not
            return UpdatesVerdict("updates", "DIFFERENT", f"DIFFERENT  {counted}", counted, counted, steps, largest)
        diagnosis, how_close = self._closest(found, union, alone)
        return UpdatesVerdict(
            "updates", "DIFFERENT",
            f"DIFFERENT  {where}: {diagnosis} (largest difference from the promise {largest:.2f} of an update)",
            f"an update differs from one step on both workers' batches by {first[0]:.2f} of itself at step "
            f"{first[2]}; the closest wrong answer: {diagnosis}, {how_close}", diagnosis, steps, largest)

    def _step_counts(self, found: dict[str, list[Weights]], union: dict[str, list[Weights]]) -> str:
        """'' when every step advanced the global step as the oracle's did; else what happened."""
        for copy in found:
            for t, (mine, theirs) in enumerate(zip(found[copy], union[copy])):
                if float(mine[GLOBAL_STEP]) != float(theirs[GLOBAL_STEP]):
                    return (f"the global step advanced by {float(mine[GLOBAL_STEP]):g} at step {t}, where one step "
                            f"advances it by {float(theirs[GLOBAL_STEP]):g}")
        return ""

    def _closest(self, found: dict[str, list[Weights]], union: dict[str, list[Weights]],
                 alone: dict[str, dict[int, list[Weights]]]) -> tuple[str, str]:
        """The wrong answer the updates are closest to, and how close: (name, 'matched within
        ...' or 'the closest, off by ...')."""
        steps = self.steps
        candidates: list[tuple[float, str]] = []
        # A constant factor: one c for every step of every copy.
        c = scale_of([u for copy in found for u in found[copy]], [u for copy in union for u in union[copy]])
        if math.isfinite(c):
            gap = max(self._gap(k, t, found[k][t], scaled(union[k][t], c)) for k in found for t in range(steps))
            candidates.append((gap, f"the update scaled by {c:.2f}" + _scale_meaning(c, self.workers)))
        # One worker's batch only, the same for every copy, or each copy its own worker's batch.
        for w in range(self.workers):
            gap = max(self._gap(k, t, found[k][t], alone[k][w][t]) for k in found for t in range(steps))
            twice = self.pipelines < self.workers
            candidates.append((gap, "one batch used twice: one input pipeline for every tower, both train on "
                               f"worker {w}'s batch" if twice else f"worker {w}'s batch only: the other's is read "
                               "and wasted"))
        if len(found) > 1:
            own = [int(copy.removeprefix("worker")) for copy in found]
            gap = max(self._gap(k, t, found[k][t], alone[k][w][t]) for k, w in zip(found, own) for t in range(steps))
            first = next(iter(found))
            apart = max(self._gap(k, t, found[k][t], found[first][t]) for k in found for t in range(steps))
            if apart > RTOL:
                candidates.append((gap, "a model of each worker's own: each copy steps on its own worker's "
                                   "batch, and nothing is exchanged"))
        # One step stale: nothing at step 0, then every step the update of the step before.
        if steps >= 2:
            zero = max(_size(found[k][0]) / max(_size(union[k][0]), 1e-30) for k in found)
            late = max(self._gap(k, t, found[k][t], union[k][t - 1]) for k in found for t in range(1, steps))
            candidates.append((max(zero, late), "the previous step's gradients: no update at step 0, then each step "
                               "applies the update of the step before (one step stale)"))
        gap, name = min(candidates)
        if gap <= RTOL:
            return name, f"which every step matches within {gap:.1e} of an update"
        return name, f"the nearest of the wrong answers checked, off by {gap:.2f} of an update"

    # -- asynchronous: every function one update from one worker's next batch ------------------

    def _asynchronous(self, after: dict[tuple[str, int, Parts], Weights]) -> UpdatesVerdict:
        (copy, snapshots), = self.copies.items()
        steps, read = self.steps, [0] * self.workers
        largest = 0.0
        for step in range(steps):
            found = delta(snapshots[step + 1], snapshots[step])
            options = sorted({n for n in read})
            gaps = {n: self._gap(copy, step, found, self._expected(after, copy, step, ((0, n), (0, n))))
                    for n in options}
            n, gap = min(gaps.items(), key=lambda item: item[1])
            if gap > RTOL:
                expected = self._expected(after, copy, step, ((0, n), (0, n)))
                c = scale_of([found], [expected])
                off = self._gap(copy, step, found, scaled(expected, c))
                diagnosis = (f"the update scaled by {c:.2f}" + _scale_meaning(c, self.workers, True)
                             if off <= RTOL else "no known wrong answer: not one step on any worker's next batch")
                variable = _worst_variable(found, expected)
                matched = f"which it matches within {off:.1e} of an update" if off <= RTOL else \
                    f"the nearest of the wrong answers checked, off by {off:.2f} of an update"
                return UpdatesVerdict(
                    "updates", "DIFFERENT", f"DIFFERENT  from function {step}, first in {variable}: {diagnosis} "
                    f"(largest difference from the promise {gap:.2f} of an update)",
                    f"scheduled function {step} is not one step on a worker's next batch (off by {gap:.2f} of "
                    f"an update at the nearest); the closest wrong answer: {diagnosis}, {matched}", diagnosis, steps,
                    gap)
            if float(found[GLOBAL_STEP]) != 1.0:
                counted = (f"the global step advanced by {float(found[GLOBAL_STEP]):g} in function {step}, where one "
                           "update advances it by 1")
                return UpdatesVerdict("updates", "DIFFERENT", f"DIFFERENT  {counted}", counted, counted, steps, gap)
            read[read.index(n)] += 1  # the worker that ran it read its next batch
            largest = max(largest, gap)
        return UpdatesVerdict("updates", "EXACT", f"EXACT  ({steps} functions, largest difference {largest:.1e} of "
                              "an update)", "asynchronous by its own promise: every scheduled function is one step on "
                              f"one worker's next batch, within {RTOL:g} of the update", checked=steps, largest=largest)


def _size(update: Weights) -> float:
    return math.sqrt(sum(float(np.vdot(update[name], update[name])) for name in MODEL))


def _worst_variable(update: Weights, expected: Weights) -> str:
    return max(MODEL, key=lambda name: float(np.linalg.norm(update[name] - expected[name]))
               / max(float(np.linalg.norm(expected[name])), 1e-30))


def _scale_meaning(c: float, workers: int, asynchronous: bool = False) -> str:
    """What a factor usually is: the workers' gradients summed, the rate divided again or by five."""
    meanings = {float(workers): f" (the {workers} workers' gradients summed, not averaged)",
                1 / workers: f" (the rate divided by the {workers} workers)" if asynchronous else
                f" (averaged, then divided by the {workers} workers again)",
                0.2: " (a fifth of the rate)"}
    for value, meaning in meanings.items():
        if abs(c - value) <= 0.01 * value:
            return meaning
    return ""


def not_judged(why: str) -> UpdatesVerdict:
    """The check could not run (or was not asked for): the line says so and why."""
    return UpdatesVerdict("updates", "NOT JUDGED", f"NOT JUDGED  {why}", why)
