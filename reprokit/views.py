"""What each task shows a person: tables, progress lines and verdicts.

Each view calls one function of the package and formats what it returns; the checking, the
choosing and the running happen in the package. Every view takes `out`, a one-line writer that
tasks.py supplies, so the same views serve the tests too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprokit import experiment, faults_table, programs
from reprokit import options as optionslib
from reprokit.commands import Echo
from reprokit.data.prepare import prepare_data
from reprokit.errors import KitError
from reprokit.judge.claims import load_claims
from reprokit.judge.evaluation import Evaluation
from reprokit.judge.judgement import judge_run
from reprokit.mutation import MutantsRequest, MutantsResults, run_mutants, table_lines
from reprokit.names import MODES, REPORT
from reprokit.programs import PROGRAMS
from reprokit.report import markdown as reportlib
from reprokit.report.results import ArticleFigures
from reprokit.run import manual
from reprokit.run.cluster import cluster_from
from reprokit.run_folders import find_run
from reprokit.settings import Settings
from reprokit.sources import teaching, workspace
from reprokit.sources.verify import run_checks

if TYPE_CHECKING:  # the bench's modules load numpy: only the bench and sweep views need them
    from reprokit.bench.findings import BenchResults, NetworkResults, SweepResults

Out = Echo


def table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths[:-1]) + "  {}"
    return [fmt.format(*header), fmt.format(*("-" * w for w in widths)), *(fmt.format(*r) for r in rows)]


def verify(out: Out, s: Settings) -> bool:
    checks = run_checks(s)
    for line in table([("ok" if c.ok else "FAIL", c.name, c.detail) for c in checks], ("", "check", "detail")):
        out(line)
    passed = all(c.ok for c in checks)
    out(f"verify: {'PASS' if passed else 'FAIL'} ({sum(not c.ok for c in checks)} of {len(checks)} checks failed)")
    return passed


def apply_patches(out: Out, s: Settings, *, dry_run: bool, clean: bool, force: bool) -> None:
    if clean:
        removed = workspace.clean(s.sources_dir, dry_run=dry_run)
        if not removed:
            out(f"{s.sources_dir} does not exist: nothing to undo")
        else:
            out(f"dry run: would remove {s.sources_dir}" if dry_run else f"removed {s.sources_dir}")
        return
    result = workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir, dry_run=dry_run, force=force)
    if result.already_applied:
        out(f"already applied: {s.sources_dir} is current ({', '.join(result.files)})")
    elif dry_run:
        out(f"dry run: would write {s.sources_dir}/ with {', '.join(result.files)}; every hunk applies strictly")
    else:
        out(f"applied: wrote {s.sources_dir}/ with {', '.join(result.files)}")


def explain_patches(out: Out, s: Settings, *, normal: bool, placement: bool = False, patch: str | None = None,
                    program: str | None = None) -> None:
    """The series as lessons: every patch, one (``patch``), or those that make ``program``'s trainers."""
    if patch is not None and program is not None:
        raise KitError("--patch and --program both choose what is shown", "give one of them")
    making = () if program is None else tuple(dict.fromkeys(programs.program(program).trainer(m) for m in MODES))
    for lesson in teaching.lessons(s.upstream_dir, s.patches_dir, normal=normal, patch=patch, making=making):
        out(lesson)
        out("")
    if placement:
        from reprokit.bench.placement import placement_lines

        sources = workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir).out_dir.resolve()
        for line in placement_lines(s, program or s.program, sources):
            out(line)


def download_progress(out: Out) -> Callable[[int, int], None]:
    """A bar every 5%: 'downloading' must never look like 'hung'."""
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = int(100 * done / total) if total else 0
        if percent // 5 != shown[0] // 5:
            shown[0] = percent
            bar = "#" * (percent // 5)
            out(f"  [{bar:<20}] {percent:3d}%  {done / 1e6:7.1f} of {total / 1e6:.1f} MB")
    return progress


def data(out: Out, s: Settings, source: str | None, records: optionslib.Given, data_dir: str | None) -> None:
    """`invoke data`: each option left out is invoke.yaml's."""
    records_per_file = optionslib.whole_number(records if records is not None else s.synthetic_records, "records")
    result = prepare_data(source or s.data_source, Path(data_dir) if data_dir else s.data_dir,
                          records_per_file=records_per_file, progress=download_progress(out))
    if result.notice:
        out("NOTICE: " + result.notice)
    out(f"data: {result.source} -> {result.batches_dir}")
    for f in result.files:
        out(f"  {f.name:<16} {f.records:6d} records  sha256 {f.sha256[:16]}…")


def step_progress(out: Out) -> Callable[[str, int, float], None]:
    # The trainer's own figure, as it goes: the kit's clock times the run once its log is whole.
    return lambda role, step, rate: out(f"  {role:<10} step {step:5d}  {rate:8.1f} examples/sec, as it reports")


def finish(out: Out, result: experiment.Reproduction) -> experiment.Reproduction:
    """The end of a run: its error, where it is, the speed table, and the four verdicts (logs,
    claim, learning, updates); a run that did not complete ends in one FAIL line instead."""
    if result.error:
        out("error: " + result.error)
    out(f"run folder: {result.run_dir}")
    if result.results is not None and result.results.speed:
        for line in reportlib.speed_table(result.info, result.results):
            out(line)
        for line in reportlib.dead_threads_lines(result.results):
            out(line)
    out(f"report: {result.run_dir / REPORT}")
    exposure = result.exposure
    if exposure and exposure.beyond_run:
        out(f"the servers were reachable on {exposure.where}")
    if result.passed:
        for line in result.verdict_lines:
            out(line)
    else:
        for line in result.verdict_lines[:1]:  # the logs' line: how many rules failed
            out(line)
    out(f"{'verdict:':<10}{experiment.run_headline(result)}")  # the last line: all four parts, always
    return result


def reproduce(out: Out, s: Settings, request: optionslib.Request) -> experiment.Reproduction:
    plan = request.plan(s, out)
    result = experiment.reproduce(s, plan, out, step_progress(out), download_progress(out))
    return finish(out, result)


def mutants(out: Out, s: Settings, request: MutantsRequest, command: str) -> MutantsResults:
    """The catalogue of wrong programs and their controls, each through reproduce's stages; the table."""
    results = run_mutants(s, request, command, out, step_progress(out), download_progress(out))
    for line in table_lines(results):
        out(line)
    out(f"wrote {Path(results.folder) / 'mutants.json'} and {Path(results.folder) / 'mutants.md'}")
    return results


def faults(out: Out, s: Settings, request: faults_table.FaultsRequest, command: str) -> faults_table.FaultsResults:
    """Each program under each kind of fault, each through reproduce's stages; the table."""
    results = faults_table.run_faults(s, request, command, out, step_progress(out), download_progress(out))
    for line in faults_table.table_lines(results):
        out(line)
    out(f"wrote {Path(results.folder) / results.FILE} and {Path(results.folder) / faults_table.TABLE}")
    return results


def stack_file(out: Out, s: Settings, request: optionslib.Request, image: str | None) -> None:
    options, writer = request.stack_plan(s, image)
    path = experiment.write_stack(s, options, writer, out)
    out(f"wrote {path}")
    out(f"deploy it: docker stack deploy --resolve-image never -c {path} <name>  (see its first lines)")


def client(out: Out, s: Settings, request: optionslib.Request, cluster_file: str | None, ps: str | None,
           workers: str | None) -> experiment.Reproduction:
    """The cluster trainer against servers started elsewhere, judged like a reproduction."""
    cluster = cluster_from(cluster_file, ps, workers)
    plan = request.client_plan(s, cluster)
    manual.require_reachable(cluster)
    out(f"client: session on grpc://{cluster.ps}")
    result = experiment.reproduce(s, plan, out, step_progress(out), download_progress(out))
    return finish(out, result)


def serve(out: Out, s: Settings, job: str, task: optionslib.Given, cluster_file: str | None, ps: str | None,
          workers: str | None) -> int:
    import sys

    cluster = cluster_from(cluster_file, ps, workers)
    role = manual.serving_role(cluster, job, optionslib.whole_number(task, "index", minimum=0), sys.executable)
    out(f"cluster {cluster.spec}")
    return manual.serve(role, out)


def compare_logs(out: Out, s: Settings, run: str) -> bool:
    judgement = judge_run(find_run(s.runs_dir, run), s.rules)
    for line in judgement.summary.lines:
        out(line)
    return judgement.summary.passed


def evaluate(out: Out, s: Settings, run: str) -> dict[str, Evaluation]:
    """precision @ 1 of each mode's last checkpoint, with its interval, as a table."""
    found = experiment.evaluate_run(s, find_run(s.runs_dir, run), out)
    rows = [(mode, str(e.step), f"{e.examples_seen:,}",
             e.error or f"{e.precision:.3f} (95% CI {e.low:.3f}-{e.high:.3f})", f"{e.correct} of {e.counted}")
            for mode, e in found.items()]
    for line in table(rows, ("mode", "step", "examples seen", "precision @ 1", "correct")):
        out(line)
    return found


def _article(s: Settings) -> ArticleFigures:
    """The article's figures from claims.yaml, beside which a table or plot shows what ran; read
    before anything runs, so that a broken claims file stops a bench before its first run."""
    return ArticleFigures.of(load_claims(s.claims, list(PROGRAMS)), s.article_logs)


def report(out: Out, s: Settings, run: str) -> None:
    for path in reportlib.rerender(find_run(s.runs_dir, run)):
        out(f"wrote {path}")


def bench(out: Out, s: Settings, request: optionslib.BenchRequest) -> BenchResults:
    from reprokit.bench.comparison import rows_for, run_bench
    from reprokit.bench.tables import bench_lines, plot_bench

    asked = request.plan(s)
    article = _article(s)
    rows = rows_for(asked.programs, asked.tunings, asked.levers)
    backend = asked.backend
    out(f"bench: {asked.repetitions} repetitions of {len(rows)} rows ({'; '.join(r.name for r in rows)}), each with "
        f"its program's standalone (1 CPU) and its cluster (spread), {asked.options.steps} steps a run")
    out(f"servers listen on: {backend.exposure(backend.cluster(2)).where}")
    results = run_bench(s, backend, asked.options, repetitions=asked.repetitions, echo=out, rows=rows,
                        variants_each_repetition=asked.variants_each_repetition,
                        loss_steps=asked.loss_steps)
    _show(out, results, bench_lines(results, article), plot_bench(results, Path(results.folder) / "bench.png", article))
    return results


def sweep(out: Out, s: Settings, request: optionslib.SweepRequest) -> SweepResults | NetworkResults:
    """The worker sweep (1, 2, 4 workers), or with links the network sweep on simulated hosts."""
    from reprokit.bench.network import run_network_sweep
    from reprokit.bench.sweep import run_sweep
    from reprokit.bench.tables import (
        network_sweep_lines,
        plot_network,
        plot_sweep,
        sweep_lines,
    )

    asked = request.plan(s)
    article = _article(s)
    local = asked.backend
    if asked.links:
        (n,) = asked.worker_counts
        out(f"network sweep: {', '.join(link.name for link, _ in asked.links)}; {n} workers on simulated hosts, "
            f"programs {', '.join(asked.programs)}")
        network = run_network_sweep(s, local, asked.links, asked.options, programs=asked.programs, echo=out)
        _show(out, network, network_sweep_lines(network),
              plot_network(network, Path(network.folder) / "network.png", article))
        return network
    out(f"servers listen on: {local.exposure(local.cluster(max(asked.worker_counts))).where}")
    results = run_sweep(s, local, asked.options, worker_counts=asked.worker_counts, echo=out,
                        programs=tuple(asked.programs))
    _show(out, results, sweep_lines(results), plot_sweep(results, Path(results.folder) / "sweep.png", article))
    return results


def _show(out: Out, results: BenchResults | SweepResults | NetworkResults, lines: list[str], plot: Path) -> None:
    """A benchmark's table, then where its JSON and its plot are."""
    for line in lines:
        out(line)
    out(f"wrote {Path(results.folder) / results.FILE} and {plot}")


def build_base_image(out: Out, s: Settings, *, force: bool) -> None:
    from reprokit.run.containers import offline

    base = offline.build_base_image(echo=out, force=force)
    out(f"{base.tag}: {'built' if base.built else 'already here'} ({base.id[:19]}, {base.size >> 20} MiB)")


def download_wheels(out: Out, s: Settings, *, force: bool) -> None:
    from reprokit.run.containers import offline

    wheels = offline.download_wheels(echo=out, force=force)
    out(f"{wheels.dest}: {len(wheels.files)} wheels, {wheels.size >> 20} MiB, "
        + ("downloaded" if wheels.downloaded else "already there (manifest checked)"))


def build_image(out: Out, s: Settings, *, base: str | None, force: bool) -> None:
    from reprokit.run.containers import image
    from reprokit.run.containers.image import choose_base

    info = image.build_image(base or choose_base(), force, out)
    out(f"{info.tag}: {'built' if info.built else 'already built from these inputs'} "
        f"({info.id[:19]}, base {info.base}, tensorflow {info.tf_version})")
