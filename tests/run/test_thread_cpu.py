"""Who takes a role's CPU: real threads' CPU time read from /proc and grouped by their names,
in this process and in roles run by the runner."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reprokit.run.roles import RoleSpec
from reprokit.run.runner import Outcome
from reprokit.run.supervisor import Plan, supervise
from reprokit.run.thread_cpu import (
    ENDED,
    MAIN_THREAD,
    UNNAMED,
    ThreadSampler,
    ThreadTimes,
    group_of,
    grouped,
    read_threads,
)
from tests.support.kit import kit_watchdog

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
PR_SET_NAME = 15  # prctl: name the calling thread, as TensorFlow's pools do


def burn(cpu_s: float, name: str | None = None) -> None:
    """Use ``cpu_s`` of this thread's CPU time, first naming the thread for the kernel."""
    if name:
        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass


def test_a_threads_cpu_time_is_read_with_the_name_it_gave_itself():
    """A thread named tf_Compute that used 0.3 s of CPU shows as 'model ops' with about 0.3 s;
    a Python thread (which Python leaves unnamed) as 'unnamed', and this one as the main thread."""
    pid = os.getpid()
    first = read_threads(pid)
    done, burnt = threading.Event(), threading.Semaphore(0)

    def work(cpu_s: float, name: str | None) -> None:
        burn(cpu_s, name)
        burnt.release()
        done.wait(30)  # alive when read, as a role's threads are

    threads = [threading.Thread(target=work, args=(0.3, "tf_Compute")), threading.Thread(target=work, args=(0.2, None))]
    for thread in threads:
        thread.start()
    for _ in threads:
        burnt.acquire()
    burn(0.1)
    last = read_threads(pid)
    done.set()
    for thread in threads:
        thread.join()
    assert first is not None and last is not None
    groups = grouped(pid, first, last)
    assert 0.29 <= groups["model ops"].cpu_s <= 0.5
    assert 1 == groups["model ops"].threads
    assert groups[UNNAMED].cpu_s >= 0.19
    assert groups[MAIN_THREAD].cpu_s >= 0.09


def test_a_thread_is_grouped_by_the_start_of_its_name():
    """TensorFlow's pools and gRPC's threads by name; the process's own name is an unnamed thread."""
    assert "model ops" == group_of(11, "tf_Compute", 10, "python3")
    assert "collectives" == group_of(11, "collective_ops", 10, "python3")
    assert "gRPC" == group_of(11, "grpc_global_tim", 10, "python3")
    assert "gRPC" == group_of(11, "event_engine", 10, "python3")
    assert UNNAMED == group_of(11, "python3", 10, "python3")
    assert "other named" == group_of(11, "tf_graph_runner", 10, "python3")
    assert MAIN_THREAD == group_of(10, "tf_Compute", 10, "python3")


def test_a_thread_born_between_the_samples_counts_whole_and_an_ended_ones_time_is_the_rest():
    """The process's total keeps what its ended threads used: 1.5 s beyond its live threads."""
    first = ThreadTimes(6.0, {10: ("python3", 5.0), 12: ("python3", 1.0)})
    last = ThreadTimes(11.0, {10: ("python3", 6.0), 13: ("tf_Compute", 2.5)})
    groups = grouped(10, first, last)
    assert {MAIN_THREAD: (1.0, 1), "model ops": (2.5, 1), ENDED: (1.5, 1)} == {
        k: (g.cpu_s, g.threads) for k, g in groups.items()}


def test_a_thread_that_ends_between_the_samples_is_counted_as_ended():
    """Read from this process: a thread that burns 0.3 s and ends is gone from /proc, not from the total."""
    pid = os.getpid()
    first = read_threads(pid)
    thread = threading.Thread(target=burn, args=(0.3, "tf_Compute"))
    thread.start()
    thread.join()
    last = read_threads(pid)
    assert first is not None and last is not None
    groups = grouped(pid, first, last)
    assert "model ops" not in groups
    assert 0.25 <= groups[ENDED].cpu_s <= 0.5


def test_a_role_restarted_since_the_first_sample_is_left_out(tmp_path: Path):
    """Its threads are another process's: no difference to take."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler = ThreadSampler()
        sampler.sample({"worker1": os.getpid(), "worker0": os.getpid()}, 1.0, 0)
        sampler.sample({"worker1": child.pid, "worker0": os.getpid()}, 2.0, 10)
        result = sampler.result()
    finally:
        child.kill()
        child.wait()
    assert result is not None
    assert ["worker0"] == list(result.roles)
    assert (1.0, 0, 10) == (result.wall_s, result.first_step, result.last_step)


def test_nothing_is_reported_before_two_samples():
    sampler = ThreadSampler()
    assert sampler.result() is None
    sampler.sample({"client": os.getpid()}, 1.0, 0)
    assert sampler.result() is None


# Burns 1 s of CPU in its main thread before its first step line, then logs steps while a thread
# named as TensorFlow's op pool burns CPU: only the second counts.
ROLE = """
import ctypes, threading, time
def burn(cpu_s):
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass
burn(1.0)
def pool():
    ctypes.CDLL(None).prctl(15, b"tf_Compute", 0, 0, 0)
    burn(2.0)
    done.set()
    time.sleep(60)  # a pool's thread lives as long as its process
done = threading.Event()
thread = threading.Thread(target=pool, daemon=True)
thread.start()
step = 0
while not done.is_set() or step <= 40:
    print(f"2026-12-03 10:00:00.000000: step {step}, loss = 4.60 (900.0 examples/sec; 0.142 sec/batch)", flush=True)
    step += 10
    time.sleep(0.5)
burn(1.0)  # after the last step line: saving and ending, outside the window
"""


def test_the_runner_reports_each_roles_threads_from_the_main_roles_first_step_line(tmp_path: Path):
    """The window is the main role's step lines: the main thread's second of CPU before the first
    and its second after the last are not counted; the op pool's two seconds between them are,
    and the outcome keeps it through JSON."""
    client_role = RoleSpec("client", [sys.executable, "-c", ROLE], "", {"PYTHONUNBUFFERED": "1"})
    outcome = supervise(Plan(str(tmp_path), [client_role], "client", kit_watchdog(probe_s=20)))
    assert outcome.ok, outcome.message
    assert isinstance(outcome, Outcome) and outcome.threads is not None
    client = outcome.threads.roles["client"]
    assert 1.5 <= client["model ops"].cpu_s <= 2.2
    assert client[MAIN_THREAD].cpu_s < 0.5
    assert 0 == outcome.threads.first_step and outcome.threads.last_step >= 40
    assert 0 < outcome.threads.cores("client", ["model ops"]) <= 1.0
