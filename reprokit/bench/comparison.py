"""`invoke bench`: the chosen programs (by default the article's and the lesson's), measured side
by side in one invocation.

Rows (each a program with kit settings): the article's program with TensorFlow's defaults (and,
asked for, with the kit's `tuned` settings), and every other chosen program with its defaults;
asked for, after a program's row, one with each of its levers (reprokit.programs.Lever), whose
table pairs each with the program's own cluster (`lever_rows`).
Every repetition runs each standalone trainer file once (one CPU; the tf2 programs share one),
each followed by the clusters of the rows it is the baseline of, in an order reversed every
other repetition: a cluster runs next to its own standalone, so that the drift of a shared
machine, which moves over minutes, touches both sides of a pair alike. A row's speed-up is its
cluster's rate over its own program's standalone rate of the same repetition, combined over
repetitions by the kit's one estimator with its 95% interval (reprokit.judge.speed). The
lesson's standalone must be no weaker than the article's (>= 0.95 of it), or its speed-up would
come from a weaker baseline.

When a tf2 program is benched, every repetition also measures the machine's ceiling: two tf2
standalones at once, one per CPU (reprokit.bench.findings.Ceiling), and every row is also shown
as a share of it.

The ablation runs the article's cluster trainer with each change of the lesson alone, in every
repetition beside the rows (or, to save time, once after them), paired like the rows; its "none"
and "all" rows are the article's and the lesson's rows themselves. Then: one traced step of
the article's standalone and cluster and of the lesson's cluster (where the time goes), the
input-free bound of one core, where each program puts its variables, the CPU each
role keeps busy, the kit's own overheads, and, with `loss_steps`, a long run of each benched
program's cluster to put their losses side by side.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from reprokit.bench.ablation import build_variants
from reprokit.bench.findings import (
    ALL_CHANGES,
    NO_LEVER,
    NONE_CHANGE,
    AblationRow,
    Baseline,
    BenchResults,
    BenchRow,
    BenchRun,
    Ceiling,
    InputFreeBound,
    LossCheck,
    Overheads,
    ProgramLoss,
    Repetition,
    Target,
    ceiling_of,
    rate_of,
    speedup_of,
)
from reprokit.bench.harness import Bench, cpu_share
from reprokit.bench.timeline import StepBreakdown, Trace, breakdown
from reprokit.commands import Echo
from reprokit.judge.speed import METHOD, WARMUP_RULE, Estimate
from reprokit.options import Options
from reprokit.programs import PROGRAMS, SESSION, Lever
from reprokit.run.backends import Backend
from reprokit.run.tuning import PROFILES, Tuning
from reprokit.settings import Settings

TARGET_SPEEDUP = 1.85  # the lesson's target on 2 workers (the limit is 2.00x)
BASELINE_FLOOR = 0.95  # the lesson's standalone against the article's, in the same invocation
TRACE_STEP = 25
TRACED_PROGRAMS = ("lesson", "tf2-mirrored")  # beside the article's, when benched


@dataclass(frozen=True)
class Row:
    program: str
    tuning: Tuning
    levers: tuple[str, ...] = ()  # set in its cluster trainer (reprokit.programs.Lever)

    @property
    def name(self) -> str:
        return f"{self.program} program, {self.tuning.name} settings" + (
            f", {Lever.label(self.levers)}" if self.levers else "")


def rows_for(programs: Sequence[str], tunings: Sequence[str] = ("default",), levers: bool = False) -> tuple[Row, ...]:
    """The rows of the chosen programs, in their order: the article's with each of ``tunings``
    (only its session takes the kit's settings), every other with its defaults; with ``levers``,
    after each program's row one with each of its levers alone and, if it has several, one with
    all of them."""
    rows = []
    for program in dict.fromkeys(programs):
        rows += [Row(program, PROFILES[name])
                 for name in (dict.fromkeys(tunings) if program == "article" else ("default",))]
        names = [lever.name for lever in PROGRAMS[program].levers] if levers else []
        rows += [Row(program, PROFILES["default"], (name,)) for name in names]
        rows += [Row(program, PROFILES["default"], tuple(names))] if len(names) > 1 else []
    return tuple(rows)


ROWS = rows_for(["article", "lesson"])


def ceiling_program(rows: Sequence[Row]) -> str | None:
    """The first benched program of today's TensorFlow (its cluster has no session), whose
    standalone the ceiling runs twice at once; None when no row is one."""
    return next((row.program for row in rows if PROGRAMS[row.program].shape != SESSION), None)


@dataclass(frozen=True)
class Variants:
    """The ablation's trainers: a copy of the patched sources with one trainer per change."""

    sources: Path
    trainers: dict[str, str]  # change -> trainer file


def standalone_runners(rows: Sequence[Row]) -> dict[str, str]:
    """Each benched program -> the program whose standalone run it shares: the first benched
    program of its standalone trainer file (tf2-mirrored and tf2-ps run one file)."""
    programs = list(dict.fromkeys(row.program for row in rows))
    first = {PROGRAMS[p].standalone: p for p in reversed(programs)}
    return {p: first[PROGRAMS[p].standalone] for p in programs}


def _repetition(bench: Bench, rows: tuple[Row, ...], workers: int, reverse: bool,
                variants: Variants | None) -> Repetition:
    """One repetition: each standalone trainer file once, every row's cluster, the ceiling if a
    tf2 program is benched and, if given, the article's cluster with each change alone, in
    (reversed) order."""
    runners = standalone_runners(rows)
    ceiling = ceiling_program(rows)
    jobs = []
    for runner in dict.fromkeys(runners.values()):
        jobs += [("standalone", runner)] + [("cluster", str(i)) for i, row in enumerate(rows)
                                            if runners[row.program] == runner]
        jobs += [("ceiling", ceiling)] if ceiling and runner == runners[ceiling] else []
    jobs += [("variant", change) for change in (variants.trainers if variants else {})]
    found: dict[tuple[str, str], list[BenchRun]] = {}
    for kind, key in (reversed(jobs) if reverse else jobs):
        found[kind, key] = _run_job(bench, rows, workers, kind, key, variants)
    return Repetition({p: found["standalone", runner][0] for p, runner in runners.items()},
                      [found["cluster", str(i)][0] for i in range(len(rows))],
                      {change: found["variant", change][0] for change in (variants.trainers if variants else {})},
                      ceiling=found["ceiling", ceiling] if ceiling else [])


def _run_job(bench: Bench, rows: tuple[Row, ...], workers: int, kind: str, key: str,
             variants: Variants | None) -> list[BenchRun]:
    """A job's runs: one, but two concurrent ones for the ceiling."""
    if kind == "ceiling":
        return bench.run_ceiling(key)
    return [_run_one(bench, rows, workers, kind, key, variants)]


def _run_one(bench: Bench, rows: tuple[Row, ...], workers: int, kind: str, key: str,
             variants: Variants | None) -> BenchRun:
    if kind == "standalone":
        return bench.run("standalone", program=key)
    if kind == "cluster":
        row = rows[int(key)]
        return bench.run("cluster", workers, program=row.program, tuning=row.tuning, levers=row.levers)
    assert variants is not None
    return _run_variant(bench, workers, key, variants)


def _run_variant(bench: Bench, workers: int, change: str, variants: Variants) -> BenchRun:
    return bench.run("cluster", workers, f"-only-{change}", program="article", sources=variants.sources,
                     trainer_file=variants.trainers[change])


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def bench_rows(rows: tuple[Row, ...], reps: Sequence[Repetition], workers: int,
               ceiling: Ceiling | None = None) -> list[BenchRow]:
    """Each row's figures by the one estimator: its speed-up over the repetitions' (cluster, its
    program's standalone) pairs, and each rate over the repetitions' runs; with a ceiling, the
    speed-up's share of it."""
    table = []
    for i, row in enumerate(rows):
        pairs = [(rep.clusters[i], rep.standalone[row.program]) for rep in reps]
        speedup = speedup_of(pairs)
        table.append(BenchRow(
            row.name, row.program, row.tuning.name, speedup,
            rate_of([alone for _, alone in pairs]), rate_of([cluster for cluster, _ in pairs]),
            None if speedup is None else speedup.value / workers,
            [_ratio(cluster.rate, alone.rate) for cluster, alone in pairs],
            cpu_share(reps[len(reps) // 2].clusters[i]), _share(speedup, ceiling), list(row.levers)))
    return table


def lever_rows(rows: tuple[Row, ...], table: Sequence[BenchRow], reps: Sequence[Repetition]) -> dict[str, list[AblationRow]]:
    """Each program with lever rows, in the ablation's form: its own row (no lever), then each
    lever row, its gain over the program's own cluster paired by repetition (both ran in every
    repetition, beside the same standalone)."""
    found: dict[str, list[AblationRow]] = {}
    for i, row in enumerate(rows):
        if not row.levers:
            continue
        own = next(j for j, r in enumerate(rows) if r.program == row.program and not r.levers
                   and r.tuning.name == "default")
        found.setdefault(row.program, [AblationRow(NO_LEVER, table[own].speedup, table[own].cluster_rate, None,
                                                   reference=table[own].cluster_rate,
                                                   share_of_ceiling=table[own].share_of_ceiling)])
        found[row.program].append(AblationRow(
            "+".join(row.levers), table[i].speedup, table[i].cluster_rate,
            speedup_of([(rep.clusters[i], rep.clusters[own]) for rep in reps]),
            [rep.clusters[i].folder for rep in reps], table[own].cluster_rate, table[i].share_of_ceiling))
    return found


def _share(speedup: Estimate | None, ceiling: Ceiling | None) -> float | None:
    # A ratio of two estimates: its interval is not the one estimator's, so none is claimed.
    return _ratio(speedup.value if speedup else None,
                  ceiling.speedup.value if ceiling and ceiling.speedup else None)


def baseline(reps: Sequence[Repetition]) -> Baseline | None:
    """The lesson's standalone over the article's, paired by repetition: fair at >= the floor."""
    if not all({"article", "lesson"} <= set(rep.standalone) for rep in reps):
        return None
    pairs = [(rep.standalone["lesson"], rep.standalone["article"]) for rep in reps]
    ratio = speedup_of(pairs)
    return Baseline(ratio, [_ratio(a.rate, b.rate) for a, b in pairs], BASELINE_FLOOR,
                    ratio is not None and ratio.value >= BASELINE_FLOOR)


def ablation_rows(rows: tuple[Row, ...], table: Sequence[BenchRow], reps: Sequence[Repetition],
                  variant_runs: Sequence[tuple[dict[str, BenchRun], Repetition]]) -> list[AblationRow]:
    """The article's program, each change alone, then all of them (the lesson): the first and
    the last ARE the article's and the lesson's rows; each change alone is paired, like a row,
    with the article's standalone and cluster of the repetition it ran in."""
    article = next((i for i, r in enumerate(rows) if r.program == "article" and r.tuning.name == "default"), None)
    lesson = next((i for i, r in enumerate(rows) if r.program == "lesson"), None)
    if article is None or lesson is None:
        return []
    found = [AblationRow(NONE_CHANGE, table[article].speedup, table[article].cluster_rate, None,
                         reference=table[article].cluster_rate)]
    changes = list(dict.fromkeys(change for runs, _ in variant_runs for change in runs))
    for change in changes:
        paired = [(runs[change], rep) for runs, rep in variant_runs if change in runs]
        found.append(AblationRow(
            f"{change} alone", speedup_of([(run, rep.standalone["article"]) for run, rep in paired]),
            rate_of([run for run, _ in paired]), speedup_of([(run, rep.clusters[article]) for run, rep in paired]),
            [run.folder for run, _ in paired], rate_of([rep.clusters[article] for _, rep in paired])))
    found.append(AblationRow(ALL_CHANGES, table[lesson].speedup, table[lesson].cluster_rate,
                             speedup_of([(rep.clusters[lesson], rep.clusters[article]) for rep in reps]),
                             reference=rate_of([rep.clusters[article] for rep in reps])))
    return found


def _variants(bench: Bench, settings: Settings, rows: tuple[Row, ...]) -> Variants | None:
    if not ({"article", "lesson"} <= {row.program for row in rows}):
        return None
    folder = bench.dir / "ablation-sources"
    return Variants(folder, build_variants(settings.upstream_dir, settings.patches_dir, bench.sources, folder))


def _placement(run: BenchRun) -> dict[str, str]:
    variables = run.probe.get("variables")
    if not isinstance(variables, dict):
        return {}
    return {str(name): str(device) for name, device in variables.items()}


def _extras(bench: Bench, workers: int, rows: Sequence[Row]) -> tuple[dict[str, StepBreakdown],
                                                                     dict[str, dict[str, str]], BenchRun]:
    """Traced steps, where each program puts its variables, and the input-free bound. The
    coordinator of tf2-ps schedules its steps onto the workers and cannot be traced
    (reprokit.bench.tf2_trace): its CPU per role says where its time goes. A traced program's
    row with all its levers is traced too, to see where they move the step's parts."""
    programs = list(dict.fromkeys(row.program for row in rows))
    traced = {"article standalone": bench.run("standalone", label="-trace", trace_step=TRACE_STEP),
              "article cluster": bench.run("cluster", workers, "-trace", trace_step=TRACE_STEP)}
    for program in TRACED_PROGRAMS:
        if program in programs:
            traced[f"{program} cluster"] = bench.run("cluster", workers, f"-{program}-trace", program=program,
                                                     trace_step=TRACE_STEP)
        levers = max((row.levers for row in rows if row.program == program), key=len, default=())
        if levers:
            traced[f"{program} cluster, {Lever.label(levers)}"] = bench.run(
                "cluster", workers, f"-{program}-levers-trace", program=program, trace_step=TRACE_STEP, levers=levers)
    # The others' clusters are probed untraced, for where their variables live.
    placed = {f"{program} cluster": bench.run("cluster", workers, f"-{program}-placement", program=program,
                                              trace_step=-1)
              for program in programs if f"{program} cluster" not in traced}
    bound = bench.run("standalone", label="-input-free", input_free=True)
    # probe.json's trace is what reprokit.bench.probe wrote with the Trace shape.
    steps = {name: breakdown(cast(Trace, run.probe["trace"])) for name, run in traced.items() if "trace" in run.probe}
    placement = {name.split()[0]: homes for name, run in {**traced, **placed}.items()
                 if name.endswith("cluster") and (homes := _placement(run))}
    return steps, placement, bound


def _loss(bench: Bench, workers: int, steps: int, programs: list[str]) -> LossCheck:
    """Each program's cluster for ``steps`` steps: the last logged loss, and dead input threads."""
    found = {}
    for program in programs:
        run = bench.run("cluster", workers, f"-loss-{steps}", program=program, steps=steps)
        last = run.last_loss
        found[program] = ProgramLoss(last.step if last else None, last.loss if last else None,
                                     run.dead_input_threads, run.folder)
    return LossCheck(steps, found)


def _overheads(bench: Bench, reps: Sequence[Repetition]) -> Overheads:
    runs = [run for rep in reps for run in [*rep.standalone.values(), *rep.clusters, *rep.variants.values(),
                                              *rep.ceiling]]
    teardowns = [run.timings.get("teardown_done", 0) - run.timings.get("teardown_started", 0) for run in runs]
    ready = [run.first_step_after_ready_s for rep in reps for run in rep.clusters
             if run.first_step_after_ready_s is not None]
    return Overheads(bench.verify_apply_s, round(statistics.median(ready), 2) if ready else None,
                     round(max(teardowns), 3))


def run_bench(settings: Settings, backend: Backend, options: Options, *, repetitions: int, echo: Echo,
              rows: tuple[Row, ...] = ROWS, loss_steps: int = 0,
              variants_each_repetition: bool) -> BenchResults:
    """Every row `repetitions` times, alternating, with the ablation's changes each alone in
    every repetition (or once after them, if not ``variants_each_repetition``), then the extra
    measurements; bench.json is written in the bench's folder."""
    bench = Bench(settings, backend, options, echo, "bench")
    steps, workers = options.steps, options.workers
    variants = _variants(bench, settings, rows)
    reps = []
    for rep in range(repetitions):
        echo(f"repetition {rep + 1}/{repetitions}")
        reps.append(_repetition(bench, rows, workers, rep % 2 == 1,
                                variants if variants_each_repetition else None))
    variant_runs = [(rep.variants, rep) for rep in reps]
    if variants and not variants_each_repetition:
        echo("the ablation: each change of the lesson alone, once, paired with the last repetition")
        variant_runs = [({change: _run_variant(bench, workers, change, variants) for change in variants.trainers},
                         reps[-1])]
    program = ceiling_program(rows)
    ceiling = ceiling_of(program, reps) if program else None
    table = bench_rows(rows, reps, workers, ceiling)
    echo("where the time goes (one traced step each), the input-free bound, where the variables live")
    steps_traced, placement, bound = _extras(bench, workers, rows)
    article = next((r for r in table if r.program == "article"), None)
    lesson = next((r for r in table if r.program == "lesson"), None)
    bound_rate = rate_of([bound])
    programs = list(dict.fromkeys(row.program for row in rows))
    results = BenchResults(
        str(bench.dir), steps, WARMUP_RULE, METHOD, repetitions, workers, bench.data.source, bench.fix.summary,
        variants_each_repetition, {row.tuning.name: row.tuning for row in rows}, reps, table, baseline(reps),
        ablation_rows(rows, table, reps, variant_runs if variants else []),
        Target(TARGET_SPEEDUP, lesson.speedup if lesson else None,
               bool(lesson and lesson.speedup and lesson.speedup.value >= TARGET_SPEEDUP)),
        InputFreeBound(bound_rate, _ratio(article.standalone_rate.value if article and article.standalone_rate
                                          else None, bound_rate.value if bound_rate else None)),
        steps_traced, placement, _loss(bench, workers, loss_steps, programs) if loss_steps else None,
        _overheads(bench, reps), ceiling, levers=lever_rows(rows, table, reps))
    results.write(bench.dir)
    return results
