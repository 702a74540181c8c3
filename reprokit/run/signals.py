"""SIGTERM during a run in this process: a `kill` stops the run the way Ctrl-C does, so that the
run's own teardown removes what it made before the kit exits."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside, the first SIGTERM raises KeyboardInterrupt; a second one must not cut the
    teardown that the first one started, so it is ignored. Outside the main thread (where Python
    allows no handler) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[bool] = []

    def handler(*_: object) -> None:
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
