"""What each task shows a person: tables, progress lines and verdicts.

Each view calls one function of the package and formats what it returns; the checking, the
choosing and the running happen in the package. Every view takes `out`, a one-line writer that
tasks.py supplies, so the same views serve the tests too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprokit import experiment
from reprokit import options as optionslib
from reprokit.commands import Echo
from reprokit.data.prepare import prepare_data
from reprokit.judge.verdict import judge_run
from reprokit.names import REPORT
from reprokit.report import markdown as reportlib
from reprokit.run import manual
from reprokit.run.backends import make_backend
from reprokit.run.cluster import cluster_from
from reprokit.runs import RunInfo, find_run
from reprokit.settings import Settings
from reprokit.sources import teaching, workspace
from reprokit.sources.verify import run_checks

Out = Echo


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
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


def explain_patches(out: Out, s: Settings, *, normal: bool, placement: bool = False) -> None:
    for lesson in teaching.lessons(s.upstream_dir, s.patches_dir, normal=normal):
        out(lesson)
        out("")
    if placement:
        from reprokit.bench.placement import lesson_lines, variable_devices

        sources = workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir).out_dir.resolve()
        for line in lesson_lines(variable_devices(sources)):
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


def data(out: Out, s: Settings, source: str, records: Any, data_dir: Path) -> None:
    result = prepare_data(source, data_dir, records_per_file=optionslib.whole_number(records, "records"),
                          progress=download_progress(out))
    if result.notice:
        out("NOTICE: " + result.notice)
    out(f"data: {result.source} -> {result.batches_dir}")
    for f in result.files:
        out(f"  {f.name:<16} {f.records:6d} records  sha256 {f.sha256[:16]}…")


def step_progress(out: Out) -> Callable[[str, int, float], None]:
    return lambda role, step, rate: out(f"  {role:<10} step {step:5d}  {rate:8.1f} examples/sec")


def finish(out: Out, result: experiment.Reproduction) -> bool:
    """The end of a run: its error, where it is, the speed table, and one verdict line."""
    if result.error:
        out("error: " + result.error)
    out(f"run folder: {result.run_dir}")
    if result.results is not None and result.results.speed:
        for line in reportlib.speed_table(RunInfo.load(result.run_dir), result.results):
            out(line)
        for line in reportlib.dead_threads_lines(result.results):
            out(line)
    out(f"report: {result.run_dir / REPORT}")
    verdict = "PASS" if result.passed else "FAIL"
    exposure = result.exposure
    out(verdict + (f" (the servers were reachable on {exposure.where})" if exposure and exposure.beyond_run else ""))
    return result.passed


def reproduce(out: Out, s: Settings, request: experiment.Request) -> bool:
    return finish(out, experiment.run(s, request, out, step_progress(out), download_progress(out)))


def stack_file(out: Out, s: Settings, request: experiment.Request, image: str | None) -> None:
    path = experiment.write_stack(s, request, image, out)
    out(f"wrote {path}")
    out(f"deploy it: docker stack deploy --resolve-image never -c {path} <name>  (see its first lines)")


def client(out: Out, s: Settings, request: experiment.Request, cluster_file: str | None, ps: str | None,
           workers: str | None) -> bool:
    """The cluster trainer against servers started elsewhere, judged like a reproduction."""
    cluster = cluster_from(cluster_file, ps, workers)
    manual.require_reachable(cluster)
    out(f"client: session on grpc://{cluster.ps}")
    return finish(out, experiment.run_client(s, request, cluster, out, step_progress(out), download_progress(out)))


def serve(out: Out, s: Settings, job: str, task: Any, cluster_file: str | None, ps: str | None,
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


def report(out: Out, s: Settings, run: str) -> None:
    for path in reportlib.rerender(find_run(s.runs_dir, run)):
        out(f"wrote {path}")


def bench(out: Out, s: Settings, *, repetitions: Any, steps: Any, source: str, isolation: str,
          loss_steps: Any = 0) -> dict:
    from reprokit.bench.comparison import ROWS, run_bench
    from reprokit.bench.tables import bench_lines, plot_bench

    reps = optionslib.whole_number(repetitions, "repetitions")
    count = optionslib.whole_number(steps, "steps", minimum=31)  # the traced step is step 25
    loss = optionslib.whole_number(loss_steps, "loss-steps", minimum=0)
    backend = make_backend(s, "local", isolation)
    out(f"bench: {reps} repetitions of {len(ROWS)} rows ({'; '.join(r.name for r in ROWS)}), each with its "
        f"program's standalone (1 CPU) and its cluster (spread), {count} steps a run")
    out(f"servers listen on: {backend.exposure(backend.cluster(2)).where}")
    results = run_bench(s, backend, repetitions=reps, steps=count, echo=out, data_source=source, loss_steps=loss)
    return _show(out, results, bench_lines(results), "bench", plot_bench)


def sweep(out: Out, s: Settings, *, workers: str | None, steps: Any, tuning: str, source: str, isolation: str,
          link: str | None = None, programs: str = "article") -> dict:
    """The worker sweep (1, 2, 4 workers), or with `link` the network sweep on simulated hosts."""
    from reprokit.bench.network import run_network_sweep
    from reprokit.bench.sweep import run_sweep
    from reprokit.bench.tables import (
        network_lines,
        plot_network,
        plot_sweep,
        sweep_lines,
    )
    from reprokit.run.links import parse_links
    from reprokit.run.tuning import profile

    chosen = optionslib.program_list(programs)
    count = optionslib.whole_number(steps, "steps", minimum=21)
    local = make_backend(s, "local", isolation)
    if link:
        links = parse_links(link)
        (n,) = optionslib.worker_counts(workers or "2", single=True)
        out(f"network sweep: {', '.join(l.name for l in links)}; {n} workers on simulated hosts, "
            f"programs {', '.join(chosen)}")
        results = run_network_sweep(s, local, lambda name: make_backend(s, "hosts", link=name), profile(tuning),
                                    links=links, programs=chosen, steps=count, echo=out, data_source=source,
                                    workers=n)
        return _show(out, results, network_lines(results), "network", plot_network)
    counts = optionslib.worker_counts(workers or "1,2,4")
    out(f"servers listen on: {local.exposure(local.cluster(max(counts))).where}")
    results = run_sweep(s, local, profile(tuning), worker_counts=counts, steps=count, echo=out,
                        data_source=source, programs=tuple(chosen))
    return _show(out, results, sweep_lines(results), "sweep", plot_sweep)


def _show(out: Out, results: dict, lines: list[str], name: str, plot: Callable[[dict, Path], Path]) -> dict:
    """A benchmark's table, then its plot beside the JSON it was read from."""
    for line in lines:
        out(line)
    folder = Path(results["folder"])
    out(f"wrote {folder / (name + '.json')} and {plot(results, folder / (name + '.png'))}")
    return results


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
    from reprokit.run.containers.backend import choose_base

    info = image.build_image(base or choose_base(), force, out)
    out(f"{info.tag}: {'built' if info.built else 'already built from these inputs'} "
        f"({info.id[:19]}, base {info.base}, tensorflow {info.tf_version})")
