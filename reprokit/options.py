"""What a person asked for, checked once into a frozen plan: the options of its runs and the
backend they run on.

Every option is checked here, before anything starts or any folder is made, and a bad one is a
KitError that names the option, what was given, and what would do (never a Python traceback).
The backend is built here too, the one place that builds one, so that a machine that cannot run
it (no namespaces, no Docker) is refused at the same boundary. The experiment, the bench, the
sweep and the mutants take a plan and never call back up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reprokit.commands import Echo, silent
from reprokit.errors import KitError
from reprokit.names import MODES
from reprokit.programs import PROGRAMS
from reprokit.run.backends import BACKENDS, Backend
from reprokit.run.cluster import LAYOUTS, Cluster, load_cluster, parse_cpu_overrides
from reprokit.run.faults import NO_FAULTS, FaultPlan, parse_fault, retryable_codes
from reprokit.run.links import Link, parse_link, parse_links
from reprokit.run.process_backend import ISOLATION_MODES
from reprokit.run.registry import (
    EXTERNAL,
    BackendConfig,
    build_backend,
    build_swarm,
    run_inputs,
)
from reprokit.run.tuning import Tuning, profile
from reprokit.settings import Settings

if TYPE_CHECKING:  # the Docker SDK is loaded only when a Swarm backend is built
    from reprokit.run.swarm.backend import SwarmBackend


@dataclass(frozen=True)
class Options:
    """One run, as asked: how long, how many workers, where, with which program and settings."""

    steps: int
    workers: int
    layout: str
    data_source: str
    synthetic_records: int
    tuning: Tuning
    program: str
    repetitions: int  # standalone/cluster pairs, in alternating order
    cpus: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    modes: tuple[str, ...] = MODES
    mutant: str | None = None  # a mutant of the catalogue (mutants/) runs in place of the true cluster trainer


# What a person typed: text from the command line, a number from invoke.yaml, or None (not given).
Given = str | int | None


def whole_number(value: Given, option: str, minimum: int = 1) -> int:
    """``value`` (text from the command line, or a number from invoke.yaml) as an int >= minimum."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise KitError(f"--{option} {value!r} is not a whole number",
                       f"give a number of at least {minimum}, e.g. --{option} {max(minimum, 3)}") from None
    if number < minimum:
        raise KitError(f"--{option} {number} is less than {minimum}",
                       f"give a number of at least {minimum}, e.g. --{option} {max(minimum, 3)}")
    return number


def one_of(value: str, option: str, choices: Iterable[str]) -> str:
    known = list(choices)
    if value not in known:
        raise KitError(f"unknown --{option} {value!r}", f"choose one of {', '.join(known)}")
    return value


def worker_counts(text: str, single: bool = False) -> list[int]:
    """'1,2,4' -> [1, 2, 4]; each a whole number of at least 1 (one only, if ``single``)."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items:
        raise KitError(f"--workers {text!r} names no worker count", "give counts like --workers 1,2,4")
    if single and len(items) > 1:
        raise KitError(f"--workers {text!r}: a network sweep runs one worker count", "give one, e.g. --workers 2")
    return [whole_number(item, "workers") for item in items]


def program_list(text: str) -> list[str]:
    """'article,lesson' -> both, each a program of patches/series; 'all' for every one."""
    if text.strip() == "all":
        return list(PROGRAMS)
    return [one_of(item.strip(), "program", PROGRAMS) for item in text.split(",") if item.strip()] or \
        [one_of(text, "program", PROGRAMS)]


def tuning_list(text: str) -> list[str]:
    """'default,tuned' -> both, each a profile of reprokit.run.tuning, in order and once each."""
    names = [profile(item.strip()).name for item in text.split(",") if item.strip()]
    return list(dict.fromkeys(names)) or [profile(text).name]


def run_options(settings: Settings, *, steps: Given, workers: Given, layout: str, cpus: str, source: str,
                run_id: str | None, tuning: str, program: str, repetitions: Given,
                modes: tuple[str, ...] = MODES) -> Options:
    """The options of a run, every one checked: the one check of reproduce's, bench's and sweep's."""
    for mode in modes:
        one_of(mode, "mode", MODES)
    return Options(whole_number(steps, "steps"), whole_number(workers, "workers"),
                   one_of(layout, "layout", LAYOUTS), source, settings.synthetic_records, profile(tuning),
                   one_of(program, "program", PROGRAMS), whole_number(repetitions, "repetitions"),
                   parse_cpu_overrides(cpus or ""), run_id or None, modes)


@dataclass(frozen=True)
class RunPlan:
    """A reproduction, checked: the options of its runs and the backend they run on."""

    options: Options
    backend: Backend


def _config(s: Settings, name: str, isolation: str) -> BackendConfig:
    """A backend's config with the settings' folders and watchdog; each plan adds its checked parts."""
    return BackendConfig(name, run_inputs(s), s.watchdog, isolation)


def local_backend(s: Settings, isolation: str | None, faults: FaultPlan = NO_FAULTS) -> Backend:
    """The local backend of the bench, the sweep, the mutants and the faults table: ``isolation``
    as typed (None: invoke.yaml's), checked; injecting ``faults``."""
    mode = one_of(isolation or s.isolation, "isolation", ISOLATION_MODES)
    return build_backend(replace(_config(s, "local", mode), faults=faults))


@dataclass(frozen=True)
class Request:
    """A run as a task was asked for it, before any checking: the command line's text, None
    where the person gave nothing (invoke.yaml's setting then applies)."""

    steps: Given = None
    quick: bool = False
    workers: Given = None
    layout: str | None = None
    cpus: str = ""
    source: str | None = None
    backend: str | None = None
    isolation: str | None = None
    run_id: str | None = None
    tuning: str | None = None
    program: str | None = None
    link: str = "none"
    cluster_file: str | None = None  # the swarm backend: worker count and placement from a cluster file
    modes: tuple[str, ...] = MODES
    repetitions: Given = None
    faults: tuple[str, ...] = ()  # SIGNAL:ROLE@STEP each (reprokit.run.faults)

    def options(self, s: Settings, workers: int | None = None) -> Options:
        steps = self.steps if self.steps is not None else (s.quick_steps if self.quick else s.steps)
        options = run_options(s, steps=steps, workers=workers or self.workers or s.workers,
                              layout=self.layout or s.layout, cpus=self.cpus or "",
                              source=self.source or s.data_source, run_id=self.run_id, tuning=self.tuning or s.tuning,
                              program=self.program or s.program,
                              repetitions=self.repetitions if self.repetitions is not None else s.repetitions,
                              modes=self.modes)
        if options.repetitions > 1 and set(self.modes) != set(MODES):
            raise KitError(f"--repetitions {options.repetitions} repeats standalone/cluster pairs, and this task "
                           f"runs the {' and '.join(self.modes)} mode only", "leave --repetitions out")
        return options

    def plan(self, s: Settings, echo: Echo = silent) -> RunPlan:
        """`invoke reproduce` (and standalone): the options and the backend, checked together;
        the cluster file, if any, read once for both its workers and its placement."""
        cluster, placement = load_cluster(Path(self.cluster_file)) if self.cluster_file else (None, {})
        options = self.options(s, workers=len(cluster.workers) if cluster else None)
        name, isolation = self.backend or s.backend, self.isolation or s.isolation
        check_backend(name, isolation, options.tuning, self.link, self.cluster_file)
        config = replace(_config(s, name, isolation), link=self.link, placement=placement, echo=echo,
                         faults=fault_plan(s, options, self.faults, name))
        return RunPlan(options, build_backend(config))

    def client_plan(self, s: Settings, cluster: Cluster) -> RunPlan:
        """`invoke client`: the cluster mode against servers started elsewhere; only the client runs here."""
        options = self.options(s, workers=len(cluster.workers))
        return RunPlan(options, build_backend(replace(_config(s, EXTERNAL, "none"), cluster=cluster)))

    def stack_plan(self, s: Settings, image: str | None) -> tuple[Options, SwarmBackend]:
        """`invoke stack-file`: the cluster mode's options and a Swarm backend that only writes
        stack files (no swarm needed)."""
        cluster, placement = load_cluster(Path(self.cluster_file)) if self.cluster_file else (None, {})
        options = replace(self.options(s, workers=len(cluster.workers) if cluster else None), modes=("cluster",))
        return options, build_swarm(replace(_config(s, "swarm", s.isolation), placement=placement, image=image,
                                            deploys=False))


@dataclass(frozen=True)
class BenchPlan:
    """`invoke bench`, checked: the runs' options (the spread layout, 2 workers), the local
    backend they run on, and the bench's own."""

    options: Options
    backend: Backend
    repetitions: int
    loss_steps: int
    variants_each_repetition: bool  # the ablation's changes alone in every repetition, or once
    programs: list[str]  # the programs whose rows are benched, in order
    tunings: list[str]  # the kit settings of the article's rows (only its session takes them)
    levers: bool  # a row more for each lever of a benched program, alone and all together


@dataclass(frozen=True)
class BenchRequest:
    repetitions: Given = None
    steps: Given = None
    source: str | None = None
    isolation: str | None = None
    loss_steps: Given = None
    programs: str | None = None
    tunings: str | None = None
    levers: bool = False  # asked on the command line; else bench_levers

    def plan(self, s: Settings) -> BenchPlan:
        steps = self.steps if self.steps is not None else s.bench_steps
        # The traced step is step 25: a bench run must log past it.
        whole_number(steps, "steps", minimum=31)
        options = run_options(s, steps=steps, workers=2, layout="spread", cpus="", source=self.source or s.data_source,
                              run_id=None, tuning="default", program="article", repetitions=1)
        repetitions = whole_number(self.repetitions if self.repetitions is not None else s.bench_repetitions,
                                   "repetitions")
        loss_steps = whole_number(self.loss_steps if self.loss_steps is not None else s.bench_loss_steps,
                                  "loss-steps", minimum=0)
        programs, tunings = program_list(self.programs or s.bench_programs), tuning_list(self.tunings or s.bench_tunings)
        return BenchPlan(options, local_backend(s, self.isolation), repetitions, loss_steps,
                         s.bench_ablation_each_repetition, programs, tunings, self.levers or s.bench_levers)


@dataclass(frozen=True)
class SweepPlan:
    """`invoke sweep`, checked: the worker counts (or, with links, the one count on simulated
    hosts), the local backend, and the hosts backend of each link."""

    options: Options
    backend: Backend
    worker_counts: list[int]
    programs: list[str]
    links: list[tuple[Link, Backend]]  # each link and its hosts backend; none: the worker sweep, else the network sweep


@dataclass(frozen=True)
class SweepRequest:
    workers: str | None = None
    steps: Given = None
    tuning: str | None = None
    source: str | None = None
    isolation: str | None = None
    programs: str | None = None
    link: str | None = None

    def plan(self, s: Settings) -> SweepPlan:
        steps = self.steps if self.steps is not None else s.sweep_steps
        whole_number(steps, "steps", minimum=21)
        links = parse_links(self.link) if self.link else []
        counts = worker_counts(self.workers or (str(s.network_workers) if links else s.sweep_workers),
                               single=bool(links))
        options = run_options(s, steps=steps, workers=max(counts), layout="spread", cpus="",
                              source=self.source or s.data_source, run_id=None, tuning=self.tuning or s.tuning,
                              program="article", repetitions=1)
        programs = program_list(self.programs or s.sweep_programs)
        local = local_backend(s, self.isolation)
        return SweepPlan(options, local, counts, programs,
                         [(link, build_backend(replace(_config(s, "hosts", "none"), link=link.name))) for link in links])


def fault_plan(s: Settings, options: Options, texts: Sequence[str], backend: str) -> FaultPlan:
    """The faults asked for, each checked against the roles this program starts, and invoke.yaml's
    restart policy for the roles its cluster can take back (every backend's runner sends the
    faults; the restarts are the kit's, or on the swarm backend the swarm's). A cluster that resumes
    only as a whole is restarted by the process backend's runner (local, hosts) alone: the swarm
    restarts one task at a time, and the docker backend's whole restart is not tested yet."""
    program = PROGRAMS[options.program]
    roles = [role for mode in options.modes for role in program.role_names(mode, options.workers)]
    faults = tuple(parse_fault(text, roles, options.steps) for text in texts)
    cluster = program.role_names("cluster", options.workers)
    why_not = {role: program.why_not_restarted(role) for role in cluster}
    return FaultPlan(faults, tuple(r for r in cluster if not why_not[r]), {r: w for r, w in why_not.items() if w},
                     retryable_codes(s.retryable_exit_codes), s.backoff_limit, s.restart_backoff_s,
                     program.rerun_marker, program.resumes_whole and backend in ("local", "hosts"))


def check_backend(backend: str, isolation: str, tuning: Tuning, link: str = "none",
                  cluster_file: str | None = None) -> None:
    """A backend and its options that go together; refused before anything starts."""
    one_of(backend, "backend", BACKENDS)
    one_of(isolation, "isolation", ISOLATION_MODES)
    if parse_link(link).bits_per_s is not None and backend != "hosts":
        raise KitError(f"--link {link} shapes the links of simulated hosts, and the {backend} backend has none",
                       "use --backend hosts with it")
    if cluster_file and backend != "swarm":
        raise KitError(f"--cluster places the roles of a Swarm stack, and the {backend} backend places its own",
                       "use --backend swarm with it (for servers on machines of your own: invoke ps, worker, client)")
    if backend != "local" and tuning.client_hosts_ps:
        raise KitError(f"--tuning {tuning.name} runs the ps inside the client's process, and the {backend} "
                       "backend gives every role a container of its own", "use --backend local with it")
