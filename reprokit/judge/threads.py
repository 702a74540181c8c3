"""Dead input threads: which of a trainer's queue-runner threads died, tower by tower.

A queue-runner thread that raises logs `Exception in thread QueueRunnerThread-<queue>-<op>:`
and a traceback, then ends; training goes on as long as a tower's other threads keep its queue
filled. The thread's name carries its queue's, and the queue's the tower's (`tower_1/...`),
so the count per tower comes from the log alone. Each tower of the article's program has 16
shuffle_batch threads and one input producer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reprokit.judge.logs import LogRecord

_DEAD = re.compile(r"^Exception in thread QueueRunnerThread-(?P<queue>[^ ]+?)-[^ ]*:\s*$")
_REASON = re.compile(r"^[\w.]+Error: ")
INPUT_THREADS_PER_TOWER = 17  # upstream: shuffle_batch's 16 threads and string_input_producer's one


def tower_of(queue: str) -> str:
    """'tower_1' for 'tower_1/shuffle_batch/random_shuffle_queue'; the queue's name otherwise."""
    head = queue.split("/", 1)[0]
    return head if re.fullmatch(r"tower_\d+", head) else queue


def dead_input_threads(records: Iterable[LogRecord]) -> dict[str, list[str]]:
    """Tower -> the reason each of its dead threads gave (the exception line after its traceback)."""
    dead: dict[str, list[str]] = {}
    current = None
    for record in records:
        match = _DEAD.match(record.text)
        if match:
            current = tower_of(match["queue"])
            dead.setdefault(current, []).append("")
        elif current is not None and _REASON.match(record.text):
            dead[current][-1] = record.text.strip()
            current = None
    return dead
