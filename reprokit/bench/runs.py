"""The benchmark's runs: an experiment's roles run once per call, each in a folder of its own,
with the rate measured by the kit's one warm-up rule (reprokit.judge.speed).

`Bench` verifies the kit, applies the patches, gets the data and builds the request-id fix once;
`run` then runs one mode with any program, kit settings, backend or trainer file, instruments
attached if asked. `invoke bench` (comparison.py) and `invoke sweep` (sweep.py, network.py) are
experiments with other options built on it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reprokit.commands import Echo
from reprokit.data.prepare import prepare_data
from reprokit.errors import ClusterError
from reprokit.experiment import mode_roles
from reprokit.judge.logs import parse_log, step_fields
from reprokit.judge.speed import median_rate
from reprokit.judge.threads import dead_input_threads
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
    last_loss: list[float] | None = None  # [step, loss] of the last step line
    dead_input_threads: int = 0


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
            tuning: Tuning | None = None, backend: Backend | None = None, sources: Path | None = None,
            trainer_file: str | None = None, steps: int | None = None, **probe: Any) -> ModeRun:
        """One run of ``mode``; each keyword left out is the bench's own."""
        self.counter += 1
        folder = self.dir / f"{self.counter:02d}-{mode}{workers if mode == 'cluster' else ''}{label}"
        folder.mkdir()
        backend = backend or self.backend
        options = replace(self.options, workers=workers, program=program or self.options.program,
                          tuning=tuning or self.options.tuning, steps=steps or self.options.steps)
        instruments = Instruments(str(folder / "probe.json"), **probe) if probe else None
        roles = mode_roles(mode, options, make_layout("spread", workers), backend, sources or self.sources,
                           self.data.data_dir, folder / "train", instruments, self.fix, trainer_file)
        main = MAIN_ROLE[mode]
        self.echo(f"  {folder.name}: {options.program} {mode}" + (f", {workers} workers" if mode == "cluster" else "")
                  + (f", tuning {options.tuning.name}" if options.tuning.name != "default" else ""))
        outcome = backend.run(folder, roles, main, None)
        if not outcome.ok:
            raise ClusterError(f"bench run {folder.name} failed: {outcome.message}", f"see {folder}")
        records = parse_log(folder / f"{main}.log", main)
        steps_logged = step_fields(records)
        rate = median_rate(steps_logged)
        first = next((r.logged_at for r in records if r.step is not None and r.logged_at), None)
        ready = outcome.timings.get("servers_reachable", outcome.timings.get(f"{main}_started", 0.0))
        after_ready = None if first is None else round(
            first.timestamp() - outcome.timings["epoch_started"] - ready, 2)
        probe_json = json.loads((folder / "probe.json").read_text()) if probe else {}
        self.echo(f"    {rate or 0:8.1f} examples/sec" + (f"  (first step {after_ready} s after ready)"
                                                          if after_ready is not None else ""))
        last = steps_logged[-1] if steps_logged else None
        return ModeRun(mode, workers, rate, folder.name, outcome.cpu_seconds, outcome.timings, after_ready,
                       probe_json, outcome.network, options.program, None if last is None else [last.step, last.loss],
                       sum(len(r) for r in dead_input_threads(records).values()))


def cpu_share(run: dict[str, Any]) -> dict[str, Any]:
    """Average cores each role kept busy while the main role ran (from its CPU seconds)."""
    t = run["timings"]
    wall = t.get("main_exited", 0.0) - t.get("client_started", t.get("standalone_started", 0.0))
    roles = {name: round(cpu / wall, 2) for name, cpu in run["cpu_seconds"].items()} if wall > 0 else {}
    return {"cpus": len(os.sched_getaffinity(0)), "wall_s": round(wall, 2), "roles": roles}


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b
