"""`invoke bench` and `invoke sweep`: the experiment measured side by side, in one invocation.

Standalone (one CPU) and the cluster (`spread` layout) run alternately, several times; the
figures to quote are the ratios of the same invocation. Also measured: one traced step of each
mode (where the time goes), the same graph without its input pipeline (the input-free bound of
one core), the placement lesson (the variables on worker 0, as the article's program puts them,
against the same program with them on the ps), and the kit's own overheads.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from reprokit.bench.timeline import breakdown
from reprokit.commands import Echo
from reprokit.data.prepare import prepare_data
from reprokit.errors import ClusterError
from reprokit.experiment import mode_roles
from reprokit.files import write_json
from reprokit.judge.logs import parse_log, step_fields
from reprokit.judge.speed import WARMUP_RULE, median_rate
from reprokit.names import MAIN_ROLE
from reprokit.options import Options
from reprokit.run import request_ids
from reprokit.run.backends import Backend
from reprokit.run.cluster import make_layout
from reprokit.run.roles import Instruments
from reprokit.run.tuning import Tuning
from reprokit.runs import new_run_dir
from reprokit.settings import Settings
from reprokit.sources import workspace
from reprokit.sources.verify import run_checks


@dataclass
class ModeRun:
    mode: str
    workers: int
    rate: float | None
    folder: str
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    first_step_after_ready_s: float | None = None
    probe: dict[str, Any] = field(default_factory=dict)
    network: dict[str, Any] = field(default_factory=dict)  # the hosts backend's hosts and bytes
    program: str = "article"


class Bench:
    """Runs modes with one backend and one data set; every run gets its own sub-folder."""

    def __init__(self, settings: Settings, backend: Backend, tuning: Tuning, steps: int, echo: Echo,
                 data_source: str = "auto", program: str = "article") -> None:
        self.settings, self.backend, self.echo = settings, backend, echo
        self.dir = new_run_dir(settings.runs_dir, None).resolve()
        started = time.monotonic()
        checks = run_checks(settings)
        workspace.apply_all(settings.upstream_dir, settings.patches_dir, settings.sources_dir)
        self.verify_apply_s = round(time.monotonic() - started, 3)
        if not all(c.ok for c in checks):
            raise ClusterError("invoke verify fails: the benchmark measures only a verified kit",
                               "run `invoke verify` and fix what it reports")
        self.data = prepare_data(data_source, settings.data_dir, records_per_file=settings.synthetic_records)
        self.fix = request_ids.build(settings.build_dir, settings.request_id_fix)
        echo(f"request-id fix: {self.fix.summary}")
        self.sources = settings.sources_dir.resolve()
        # A benchmark is an experiment with other options: the same roles, the spread layout.
        self.options = Options(steps, 2, "spread", data_source, settings.synthetic_records, tuning=tuning,
                               program=program)
        self.counter = 0

    def run(self, mode: str, workers: int = 2, label: str = "", *, program: str | None = None,
            backend: Backend | None = None, **probe: Any) -> ModeRun:
        """One run of ``mode`` (with ``program`` and ``backend`` if given, else the bench's own)."""
        self.counter += 1
        folder = self.dir / f"{self.counter:02d}-{mode}{workers if mode == 'cluster' else ''}{label}"
        folder.mkdir()
        backend = backend or self.backend
        options = replace(self.options, workers=workers, program=program or self.options.program)
        instruments = Instruments(str(folder / "probe.json"), **probe) if probe else None
        roles = mode_roles(mode, options, make_layout("spread", workers), backend, self.sources,
                           self.data.data_dir, folder / "train", instruments, self.fix)
        main = MAIN_ROLE[mode]
        self.echo(f"  {folder.name}: {options.program} {mode}" + (f", {workers} workers" if mode == "cluster" else ""))
        outcome = backend.run(folder, roles, main, None)
        if not outcome.ok:
            raise ClusterError(f"bench run {folder.name} failed: {outcome.message}", f"see {folder}")
        records = parse_log(folder / f"{main}.log", main)
        rate = median_rate(step_fields(records))
        first = next((r.logged_at for r in records if r.step is not None and r.logged_at), None)
        ready = outcome.timings.get("servers_reachable", outcome.timings.get(f"{main}_started", 0.0))
        after_ready = None if first is None else round(
            first.timestamp() - outcome.timings["epoch_started"] - ready, 2)
        probe_json = json.loads((folder / "probe.json").read_text()) if probe else {}
        self.echo(f"    {rate or 0:8.1f} examples/sec" + (f"  (first step {after_ready} s after ready)"
                                                          if after_ready is not None else ""))
        return ModeRun(mode, workers, rate, folder.name, outcome.cpu_seconds, outcome.timings, after_ready,
                       probe_json, outcome.network, options.program)


def cpu_share(run: dict[str, Any]) -> dict[str, Any]:
    """Average cores each role kept busy while the main role ran (from its CPU seconds)."""
    import os

    t = run["timings"]
    wall = t.get("main_exited", 0.0) - t.get("client_started", t.get("standalone_started", 0.0))
    roles = {name: round(cpu / wall, 2) for name, cpu in run["cpu_seconds"].items()} if wall > 0 else {}
    return {"cpus": len(os.sched_getaffinity(0)), "wall_s": round(wall, 2), "roles": roles}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def run_bench(settings: Settings, backend: Backend, tuning: Tuning, *, repetitions: int, steps: int,
              echo: Echo, data_source: str = "auto", workers: int = 2) -> dict[str, Any]:
    """Alternate standalone and cluster `repetitions` times, then the extra measurements."""
    bench = Bench(settings, backend, tuning, steps, echo, data_source)
    reps: list[dict[str, Any]] = []
    for rep in range(repetitions):
        echo(f"repetition {rep + 1}/{repetitions}")
        # Alternate the order, so that drift on a shared machine hits both modes alike.
        order = ("standalone", "cluster") if rep % 2 == 0 else ("cluster", "standalone")
        runs = {mode: bench.run(mode, workers) for mode in order}
        standalone, cluster = runs["standalone"], runs["cluster"]
        speedup = _ratio(cluster.rate, standalone.rate)
        reps.append({"standalone": asdict(standalone), "cluster": asdict(cluster), "speedup": speedup,
                     "efficiency": None if speedup is None else speedup / workers})
    echo("where the time goes (one traced step each), the input-free bound, the placement lesson")
    traced = {m: bench.run(m, workers, "-trace", trace_step=25) for m in ("standalone", "cluster")}
    bound = bench.run("standalone", label="-input-free", input_free=True)
    on_ps = bench.run("cluster", workers, "-variables-on-ps", variables_on_ps=True, trace_step=25)
    medians = {key: statistics.median([r[key] for r in reps if r[key] is not None] or [0.0])
               for key in ("speedup", "efficiency")}
    standalone_rate = statistics.median([r["standalone"]["rate"] or 0.0 for r in reps])
    cluster_rate = statistics.median([r["cluster"]["rate"] or 0.0 for r in reps])
    teardowns = [r[m]["timings"].get("teardown_done", 0) - r[m]["timings"].get("teardown_started", 0)
                 for r in reps for m in ("standalone", "cluster")]
    results = {
        "cpu_share": cpu_share(reps[len(reps) // 2]["cluster"]),
        "folder": str(bench.dir), "steps": steps, "repetitions": repetitions, "workers": workers,
        "warmup_rule": WARMUP_RULE, "tuning": asdict(tuning), "data": bench.data.source,
        "kit_fixes": {"request_id_fix": bench.fix.summary},
        "repetition_results": reps,
        "median": {"standalone_rate": standalone_rate, "cluster_rate": cluster_rate, **medians},
        "input_free_bound": {"rate": bound.rate, "standalone_share": _ratio(standalone_rate, bound.rate)},
        "breakdown": {m: asdict(breakdown(r.probe["trace"])) for m, r in traced.items() if "trace" in r.probe},
        "placement": {
            "variables": traced["cluster"].probe.get("variables", {}),
            "article_rate": cluster_rate, "variables_on_ps_rate": on_ps.rate,
            "variables_on_ps_breakdown": asdict(breakdown(on_ps.probe["trace"])) if "trace" in on_ps.probe else None,
        },
        "overheads": {
            "verify_and_apply_s": bench.verify_apply_s,
            "cluster_ready_to_first_step_s": statistics.median(
                [r["cluster"]["first_step_after_ready_s"] or 0.0 for r in reps]),
            "teardown_s": round(max(teardowns), 3),
        },
    }
    write_json(bench.dir / "bench.json", results)
    return results


def run_sweep(settings: Settings, backend: Backend, tuning: Tuning, *, worker_counts: list[int], steps: int,
              echo: Echo, data_source: str = "auto", programs: tuple[str, ...] = ("article",)) -> dict[str, Any]:
    """For each program, the cluster with N workers for each N, beside one standalone run of the
    same program in the same invocation."""
    import os

    bench = Bench(settings, backend, tuning, steps, echo, data_source)
    cpus = len(os.sched_getaffinity(0))
    results: dict[str, Any] = {"folder": str(bench.dir), "steps": steps, "warmup_rule": WARMUP_RULE,
                               "tuning": asdict(tuning), "cpus": cpus, "programs": {}}
    for program in programs:
        standalone = bench.run("standalone", program=program)
        points = []
        for n in worker_counts:
            run = bench.run("cluster", n, program=program)
            points.append({"workers": n, "rate": run.rate, "speedup": _ratio(run.rate, standalone.rate),
                           "oversubscribed": n > cpus, "folder": run.folder})
        results["programs"][program] = {"standalone_rate": standalone.rate, "points": points}
    write_json(bench.dir / "sweep.json", results)
    return results
