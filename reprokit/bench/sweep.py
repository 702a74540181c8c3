"""`invoke sweep`: the cluster with N workers for each N, for each program, beside one standalone
run of the same program in the same invocation (the network sweep is network.py).

Each point's speed-up is one pair of runs (its cluster, the program's standalone), so its
interval is the within-run one of the kit's one estimator: it shows what those two runs show,
not the drift between invocations."""

from __future__ import annotations

import os

from reprokit.bench.findings import (
    SweepPoint,
    SweepProgram,
    SweepResults,
    rate_of,
    speedup_of,
)
from reprokit.bench.harness import Bench
from reprokit.commands import Echo
from reprokit.judge.speed import METHOD, WARMUP_RULE
from reprokit.options import Options
from reprokit.run.backends import Backend
from reprokit.settings import Settings


def run_sweep(settings: Settings, backend: Backend, options: Options, *, worker_counts: list[int],
              echo: Echo, programs: tuple[str, ...] = ("article",)) -> SweepResults:
    bench = Bench(settings, backend, options, echo, "sweep")
    cpus = len(os.sched_getaffinity(0))
    found = {}
    for program in programs:
        standalone = bench.run("standalone", program=program)
        points = []
        for n in worker_counts:
            run = bench.run("cluster", n, program=program)
            points.append(SweepPoint(n, run, rate_of([run]), speedup_of([(run, standalone)]), n > cpus))
        found[program] = SweepProgram(standalone, rate_of([standalone]), points)
    results = SweepResults(str(bench.dir), options.steps, WARMUP_RULE, METHOD, options.tuning, cpus, found)
    results.write(bench.dir)
    return results
