"""`invoke sweep`: the cluster with N workers for each N, for each program, beside one standalone
run of the same program in the same invocation (the network sweep is network.py)."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from reprokit.bench.runs import Bench, ratio
from reprokit.commands import Echo
from reprokit.files import write_json
from reprokit.judge.speed import WARMUP_RULE
from reprokit.run.backends import Backend
from reprokit.run.tuning import Tuning
from reprokit.settings import Settings


def run_sweep(settings: Settings, backend: Backend, tuning: Tuning, *, worker_counts: list[int], steps: int,
              echo: Echo, data_source: str = "auto", programs: tuple[str, ...] = ("article",)) -> dict[str, Any]:
    bench = Bench(settings, backend, tuning, steps, echo, data_source)
    cpus = len(os.sched_getaffinity(0))
    results: dict[str, Any] = {"folder": str(bench.dir), "steps": steps, "warmup_rule": WARMUP_RULE,
                               "tuning": asdict(tuning), "cpus": cpus, "programs": {}}
    for program in programs:
        standalone = bench.run("standalone", program=program)
        points = []
        for n in worker_counts:
            run = bench.run("cluster", n, program=program)
            points.append({"workers": n, "rate": run.rate, "speedup": ratio(run.rate, standalone.rate),
                           "oversubscribed": n > cpus, "folder": run.folder})
        results["programs"][program] = {"standalone_rate": standalone.rate, "points": points}
    write_json(bench.dir / "sweep.json", results)
    return results
