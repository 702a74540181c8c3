"""reprokit.judge.threads: dead queue-runner threads counted per tower, from real logs."""

from __future__ import annotations

from reprokit.judge.logs import parse_log
from reprokit.judge.threads import dead_input_threads, tower_of
from tests.support import SAMPLES


def test_a_real_dead_queue_runner_thread_is_counted_on_its_tower_with_its_reason():
    """The sample from a real 1000-step run: one of tower_1's threads died of a duplicate RunGraph."""
    dead = dead_input_threads(parse_log(SAMPLES / "logs" / "queue_runner_died.log", "client"))
    assert ["tower_1"] == list(dead)
    (reason,) = dead["tower_1"]
    assert reason.startswith("tensorflow.python.framework.errors_impl.AbortedError: From /job:worker/replica:0/task:1:")


def test_a_clean_log_has_no_dead_thread():
    assert {} == dead_input_threads(parse_log(SAMPLES / "logs" / "cluster_run.log", "client"))


def test_the_tower_is_the_first_part_of_the_queue_name():
    assert "tower_0" == tower_of("tower_0/input_producer")
    assert "batch/fifo_queue" == tower_of("batch/fifo_queue")
