"""reprokit.updates.verdict on clusters simulated in numpy: every promise and every wrong answer of
the catalogue, told apart by its updates alone (the real programs: tests/updates/test_check.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from reprokit.updates.probe import GLOBAL_STEP, MODEL
from reprokit.updates.verdict import RTOL, Job, UpdateCheck, Weights, difference, scale_of

SHAPES = {name: (3, 2) if name.endswith("weights") else (2,) for name in MODEL}


def step(weights: Weights, parts: tuple[tuple[int, int], ...]) -> Weights:
    """A stand-in for one training step on the batches ``parts``: a smooth function of the
    weights and of each batch, averaged over the batches (as a mean loss's gradient is)."""
    moved = {}
    for name in MODEL:
        pulls = [np.random.default_rng([stream, index, len(name)]).standard_normal(SHAPES[name])
                 for stream, index in parts]
        moved[name] = weights[name] - 0.1 * (np.mean(pulls, axis=0) + 0.5 * weights[name])
    return {**moved, GLOBAL_STEP: weights[GLOBAL_STEP] + 1}


def start() -> Weights:
    rng = np.random.default_rng(7)
    return {**{name: rng.standard_normal(SHAPES[name]) for name in MODEL}, GLOBAL_STEP: np.float64(0)}


def cluster(update: Callable[[Weights, int, str], Weights], copies: tuple[str, ...] = ("main",),
            steps: int = 3) -> dict[str, list[Weights]]:
    """Each copy's weights before the first step and after every one, ``update`` making each step."""
    found = {copy: [start()] for copy in copies}
    for t in range(steps):
        for copy in copies:
            found[copy].append(update(found[copy][-1], t, copy))
    return found


def oracle(check: UpdateCheck) -> list[Weights]:
    return [step(check.copies[job.copy][job.step], job.parts) for job in check.jobs]


def judged(update: Callable[[Weights, int, str], Weights], copies: tuple[str, ...] = ("main",),
           pipelines: int = 2, asynchronous: bool = False):
    check = UpdateCheck(cluster(update, copies), 2, asynchronous, pipelines)
    return check.verdict(oracle(check))


def correct(w: Weights, t: int, copy: str) -> Weights:
    return step(w, ((0, t), (1, t)))


def scaled_by(c: float) -> Callable[[Weights, int, str], Weights]:
    def update(w: Weights, t: int, copy: str) -> Weights:
        right = correct(w, t, copy)
        return {**{n: w[n] + c * (right[n] - w[n]) for n in MODEL}, GLOBAL_STEP: right[GLOBAL_STEP]}
    return update


def test_a_correct_synchronous_cluster_is_exact():
    verdict = judged(correct)
    assert ("EXACT", 3, "") == (verdict.status, verdict.checked, verdict.diagnosis)
    assert verdict.largest is not None and verdict.largest <= RTOL
    assert verdict.line.startswith("EXACT  (3 steps, largest difference ")


@pytest.mark.parametrize("c, meaning", [(2.0, "the update scaled by 2.00 (the 2 workers' gradients summed"),
                                        (0.2, "the update scaled by 0.20 (a fifth of the rate)"),
                                        (0.5, "the update scaled by 0.50 (averaged, then divided by the 2 workers")])
def test_an_update_scaled_by_a_constant_is_named_with_the_constant(c: float, meaning: str):
    verdict = judged(scaled_by(c))
    assert "DIFFERENT" == verdict.status
    assert verdict.diagnosis.startswith(meaning), verdict.diagnosis
    assert "which every step matches" in verdict.reason


def test_one_workers_batch_only_and_one_batch_used_twice_are_told_apart_by_the_pipelines_built():
    """Both step on worker 0's batch alone; a cluster that built one pipeline for both towers
    used it twice, one that built two read worker 1's and wasted it."""
    def dropped(w: Weights, t: int, copy: str) -> Weights:
        return step(w, ((0, t), (0, t)))
    assert "worker 0's batch only" in judged(dropped, pipelines=2).diagnosis
    assert judged(dropped, pipelines=1).diagnosis.startswith("one batch used twice")


def test_a_stale_gradient_is_named_as_the_previous_steps():
    """Nothing at step 0, then the update the step before computed from its own weights."""
    def stale(w: Weights, t: int, copy: str, history: dict[int, Weights] = {}) -> Weights:
        history[t] = w
        if t == 0:
            return {**w, GLOBAL_STEP: w[GLOBAL_STEP] + 1}
        before = history[t - 1]
        late = correct(before, t - 1, copy)
        return {**{n: w[n] + late[n] - before[n] for n in MODEL}, GLOBAL_STEP: w[GLOBAL_STEP] + 1}
    verdict = judged(stale)
    assert verdict.diagnosis.startswith("the previous step's gradients"), verdict.diagnosis


def test_copies_that_each_step_on_their_own_workers_batch_are_a_model_of_each_workers_own():
    def apart(w: Weights, t: int, copy: str) -> Weights:
        mine = int(copy.removeprefix("worker"))
        return step(w, ((mine, t), (mine, t)))
    verdict = judged(apart, copies=("worker0", "worker1"))
    assert verdict.diagnosis.startswith("a model of each worker's own"), verdict.diagnosis
    assert "of worker0's copy" in verdict.line or "of worker1's copy" in verdict.line


def test_mirrored_copies_that_each_take_the_union_are_exact():
    assert "EXACT" == judged(correct, copies=("worker0", "worker1")).status


def test_a_step_counted_twice_is_different_though_the_weights_are_right():
    def counted_twice(w: Weights, t: int, copy: str) -> Weights:
        right = correct(w, t, copy)
        return {**right, GLOBAL_STEP: right[GLOBAL_STEP] + 1}
    verdict = judged(counted_twice)
    assert ("DIFFERENT", "the global step advanced by 2 at step 0, where one step advances it by 1") == \
        (verdict.status, verdict.diagnosis)


def test_an_unknown_wrong_update_says_so_and_names_the_nearest():
    def noise(w: Weights, t: int, copy: str) -> Weights:
        rng = np.random.default_rng(t)
        return {**{n: w[n] + 0.05 * rng.standard_normal(SHAPES[n]) for n in MODEL}, GLOBAL_STEP: w[GLOBAL_STEP] + 1}
    verdict = judged(noise)
    assert "DIFFERENT" == verdict.status
    assert "the nearest of the wrong answers checked, off by" in verdict.reason


# --- asynchronous: one update per scheduled function ----------------------------------------------

def asynchronous_run(workers_order: list[int], factor: float = 1.0) -> UpdateCheck:
    """Functions run in turn on the workers named; each worker reads its own next batch of stream 0."""
    read = [0, 0]
    snapshots = [start()]
    for worker in workers_order:
        w = snapshots[-1]
        right = step(w, ((0, read[worker]), (0, read[worker])))
        snapshots.append({**{n: w[n] + factor * (right[n] - w[n]) for n in MODEL}, GLOBAL_STEP: right[GLOBAL_STEP]})
        read[worker] += 1
    return UpdateCheck({"main": snapshots}, 2, True, 1)


def test_an_asynchronous_cluster_is_exact_whichever_worker_runs_each_function():
    for order in ([0, 1, 0, 1, 0, 1], [0, 0, 0, 1, 1, 1], [1, 1, 0, 0, 1, 0]):
        check = asynchronous_run(order)
        verdict = check.verdict(oracle(check))
        assert ("EXACT", 6) == (verdict.status, verdict.checked), (order, verdict.line)
        assert verdict.line.startswith("EXACT  (6 functions")


def test_an_asynchronous_update_at_half_the_rate_is_named():
    check = asynchronous_run([0, 1, 0, 1, 0, 1], factor=0.5)
    verdict = check.verdict(oracle(check))
    assert "DIFFERENT" == verdict.status
    assert verdict.diagnosis.startswith("the update scaled by 0.50"), verdict.diagnosis


def test_the_jobs_hold_each_steps_union_and_each_workers_batch_twice():
    check = UpdateCheck(cluster(correct, steps=2), 2, False, 2)
    assert [Job("main", 0, ((0, 0), (1, 0))), Job("main", 0, ((0, 0), (0, 0))), Job("main", 0, ((1, 0), (1, 0))),
            Job("main", 1, ((0, 1), (1, 1))), Job("main", 1, ((0, 1), (0, 1))), Job("main", 1, ((1, 1), (1, 1)))] \
        == check.jobs
    with pytest.raises(ValueError, match="ran 5 of 6 steps"):
        check.verdict(oracle(check)[:5])


def test_difference_and_scale_are_relative_to_the_expected_update():
    one = {name: np.ones(SHAPES[name]) for name in MODEL}
    assert 0.0 == difference(one, one)
    assert pytest.approx(1.0) == difference({n: 2 * v for n, v in one.items()}, one)
    assert pytest.approx(3.0) == scale_of([{n: 3 * v for n, v in one.items()}], [one])
