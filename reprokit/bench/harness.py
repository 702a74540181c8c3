"""The benchmark's runs: an experiment's roles run once per call, each in a folder of its own,
with the rate measured by the kit's one warm-up rule (reprokit.judge.speed).

`Bench` verifies the kit, then prepares its folder and runs the data stage as a reproduction does
(reprokit.prepared), once;
`run` then runs one mode with any program, kit settings, backend or trainer file, instruments
attached if asked; `run_ceiling` runs two standalones at once, one per CPU (the machine's
ceiling). `invoke bench` (comparison.py) and `invoke sweep` (sweep.py, network.py) are
experiments with other options built on it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import cast

from reprokit.bench.chrome_trace import write_chrome_trace
from reprokit.bench.findings import KIT_CLOCK, BenchRun, CpuShare, LastLoss
from reprokit.bench.tf2_trace import join_worker_traces
from reprokit.bench.timeline import Trace
from reprokit.commands import Echo
from reprokit.errors import ClusterError
from reprokit.judge.logs import parse_log, step_fields
from reprokit.judge.speed import clock_rates, examples_per_step, rate_estimate, reported_rates
from reprokit.judge.threads import dead_input_threads
from reprokit.names import STANDALONE, log_path
from reprokit.options import Options, RunPlan
from reprokit.prepared import input_stages, prepare
from reprokit.programs import PROGRAMS, Lever
from reprokit.run.backends import Backend
from reprokit.run.cluster import CpuLayout, available_cpus, make_layout
from reprokit.run.request_ids import RequestIdFix
from reprokit.run.roles import Instruments, RoleSpec
from reprokit.run.runner import Outcome
from reprokit.run.tuning import Tuning
from reprokit.settings import Settings
from reprokit.sources.verify import run_checks
from reprokit.stages import Stages

# The ceiling's two concurrent standalones: the first is the main role, whose end ends the run.
CEILING_ROLES = (STANDALONE, f"{STANDALONE}1")


class Bench:
    """Runs modes with one backend and one data set; every run gets its own sub-folder of one
    folder made by the kit's one road (reprokit.prepared), whose run.json says what kind it is."""

    def __init__(self, settings: Settings, backend: Backend, options: Options, echo: Echo, kind: str = "bench") -> None:
        self.settings, self.backend, self.echo = settings, backend, echo
        started = time.monotonic()
        checks = run_checks(settings)
        if not all(c.ok for c in checks):
            raise ClusterError("invoke verify fails: the benchmark measures only a verified kit",
                               "run `invoke verify` and fix what it reports")
        self.prepared = prepare(settings, RunPlan(options, backend), kind)
        self.verify_apply_s = round(time.monotonic() - started, 3)
        self.dir = self.prepared.run_dir
        self.fix = self.prepared.fix
        self.sources = self.prepared.sources
        # The same first stages as a reproduction's, logged in the bench's folder the same way.
        self.data = input_stages(Stages(self.dir, echo), settings, self.prepared, None)
        # A benchmark is an experiment with other options: the same roles, the spread layout.
        self.options = options
        self.counter = 0

    def run(self, mode: str, workers: int | None = None, label: str = "", *, program: str | None = None,
            tuning: Tuning | None = None, backend: Backend | None = None, sources: Path | None = None,
            trainer_file: str | None = None, steps: int | None = None, trace_step: int | None = None,
            input_free: bool = False, levers: tuple[str, ...] = ()) -> BenchRun:
        """One run of ``mode``; each keyword left out is the bench's own. ``trace_step`` (-1: no
        step traced) or ``input_free`` attach the probe (reprokit.bench.probe), whose findings (the
        variables' devices, a traced step) land in ``probe``; ``levers`` are set in a cluster's
        trainer (reprokit.programs.Lever)."""
        workers = workers or self.options.workers
        folder = self._folder(f"{mode}{workers if mode == 'cluster' else ''}{label}")
        backend = backend or self.backend
        options = replace(self.options, workers=workers, program=program or self.options.program,
                          tuning=tuning or self.options.tuning, steps=steps or self.options.steps)
        probed = trace_step is not None or input_free
        instruments = Instruments(str(folder / "probe.json"), -1 if trace_step is None else trace_step,
                                  input_free) if probed else None
        trained = PROGRAMS[options.program]
        roles = trained.roles(mode, options.steps, workers, options.tuning, make_layout("spread", workers), backend,
                              sources or self.sources, self.data.data_dir, folder / "train", instruments, self.fix,
                              trainer_file, levers)
        main = trained.main_role(mode)
        self.echo(f"  {folder.name}: {options.program} {mode}" + (f", {workers} workers" if mode == "cluster" else "")
                  + (f", tuning {options.tuning.name}" if options.tuning.name != "default" else "")
                  + (f", {Lever.label(levers)}" if levers else ""))
        outcome = self._outcome(backend, folder, roles, main)
        found = self._measured(folder, outcome, main, mode, options)
        if probed:
            found.probe = join_worker_probes(folder, read_probe(folder / "probe.json"))
        return found

    def run_ceiling(self, program: str) -> list[BenchRun]:
        """The machine's ceiling: two of ``program``'s standalones at once, each pinned to one of
        the first two CPUs with its own train dir and log; both runs."""
        folder = self._folder("standalone-ceiling")
        options = replace(self.options, workers=1, program=program)
        roles = ceiling_roles(options, self.backend, self.sources, self.data.data_dir, folder, self.fix,
                              available_cpus())
        self.echo(f"  {folder.name}: {program} standalone x{len(roles)} at once, CPUs "
                  f"{', '.join(role.cpus for role in roles)}")
        outcome = self._outcome(self.backend, folder, roles, STANDALONE)
        return [self._measured(folder, outcome, name, "standalone", options) for name in CEILING_ROLES]

    def _folder(self, name: str) -> Path:
        self.counter += 1
        folder = self.dir / f"{self.counter:02d}-{name}"
        folder.mkdir()
        return folder

    def _outcome(self, backend: Backend, folder: Path, roles: list[RoleSpec], main: str) -> Outcome:
        outcome = backend.run(folder, roles, main, None)
        if not outcome.ok:
            raise ClusterError(f"bench run {folder.name} failed: {outcome.message}", f"see {folder}")
        return outcome

    def _measured(self, folder: Path, outcome: Outcome, role: str, mode: str, options: Options) -> BenchRun:
        """The run of ``role`` in ``folder``, from its log: its rate by the kit's clock and the
        interval rates behind it, and what the program printed of itself beside them."""
        records = parse_log(log_path(folder, role), role)
        steps_logged = step_fields(records)
        rates = clock_rates(records, examples_per_step(mode, options.workers))
        rate = rate_estimate([rates]).value if rates else None
        first = next((r.logged_at for r in records if r.step is not None and r.logged_at), None)
        ready = outcome.timings.get("servers_reachable", outcome.timings.get(f"{role}_started", 0.0))
        after_ready = None if first is None else round(
            first.timestamp() - outcome.timings["epoch_started"] - ready, 2)
        self.echo(f"    {rate or 0:8.1f} examples/sec" + (f"  (first step {after_ready} s after ready)"
                                                          if after_ready is not None else ""))
        last = steps_logged[-1] if steps_logged else None
        return BenchRun(mode, options.workers, options.program, folder.name, rate,
                        rates, dict(outcome.cpu_seconds),
                        dict(outcome.timings), after_ready,
                        None if last is None else LastLoss(last.step, last.loss),
                        sum(len(r) for r in dead_input_threads(records).values()), {}, dict(outcome.network),
                        outcome.threads, reported_rates(steps_logged), KIT_CLOCK)


def ceiling_roles(options: Options, backend: Backend, sources: Path, data_dir: Path, folder: Path,
                  fix: RequestIdFix, cpus: list[int]) -> list[RoleSpec]:
    """The ceiling's two standalones of ``options.program``, in start order (the main role, the
    first of CEILING_ROLES, last): each on its own CPU of ``cpus`` with its own train dir."""
    roles = []
    for copy, name in enumerate(CEILING_ROLES):
        # Round robin, as the spread layout: on one CPU both share it, and the ceiling is 1x.
        layout = CpuLayout("ceiling", {STANDALONE: str(cpus[copy % len(cpus)])})
        (role,) = PROGRAMS[options.program].roles("standalone", options.steps, 1, options.tuning, layout, backend,
                                                  sources, data_dir, folder / f"train{copy}", None, fix)
        # The second may end before the first, the main role, does: its exit 0 is no death.
        roles.append(replace(role, name=name, ends_itself=copy > 0))
    return roles[::-1]


def read_probe(path: Path) -> dict[str, object]:
    """probe.json as the probe wrote it: free-form JSON, read by whoever knows its keys."""
    found = json.loads(path.read_text()) if path.exists() else {}
    if not isinstance(found, dict):
        raise ClusterError(f"{path} is not a JSON object", "see the probe's output in the run's folder")
    return found


def join_worker_probes(folder: Path, probe: dict[str, object]) -> dict[str, object]:
    """An all-reduce cluster's workers each probe their own process (probe-worker<i>.json beside
    worker 0's probe.json): worker 0's trace gets their devices, and its Chrome trace shows all;
    its variables get their copies, named for the worker that holds them."""
    others = {path.stem.removeprefix("probe-"): read_probe(path) for path in sorted(folder.glob("probe-*.json"))}
    joined = dict(probe)
    variables = probe.get("variables")
    if isinstance(variables, dict):
        for worker, other in others.items():
            copies = other.get("variables")
            if isinstance(copies, dict):
                variables = {**variables, **{f"{name} ({worker}'s copy)": d for name, d in copies.items()}}
        joined["variables"] = variables
    trace = probe.get("trace")
    siblings = [cast(Trace, other["trace"]) for other in others.values() if isinstance(other.get("trace"), dict)]
    if isinstance(trace, dict) and siblings:
        traced = join_worker_traces(cast(Trace, trace), siblings)
        if "chrome_trace" in traced:
            write_chrome_trace(traced, folder / traced["chrome_trace"])
        joined["trace"] = traced
    return joined


def cpu_share(run: BenchRun) -> CpuShare:
    """Average cores each role kept busy while the main role ran (from its CPU seconds)."""
    t = run.timings
    wall = t.get("main_exited", 0.0) - t.get("client_started", t.get("standalone_started", 0.0))
    roles = {name: round(cpu / wall, 2) for name, cpu in run.cpu_seconds.items()} if wall > 0 else {}
    return CpuShare(len(os.sched_getaffinity(0)), round(wall, 2), roles)
