"""What each task shows a person: tables, progress and verdicts.

Every function takes `out`, a one-line writer that tasks.py supplies; nothing
here writes to the terminal by itself, so the same views serve tests too.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from reprokit.data.prepare import prepare_data
from reprokit.errors import ClusterError, KitError
from reprokit.experiment import Options
from reprokit.experiment import reproduce as run_reproduction
from reprokit.judge.verdict import judge_run
from reprokit.report import markdown as reportlib
from reprokit.run import cluster as clusterlib
from reprokit.run.local import LocalBackend
from reprokit.run.roles import TrainingArgs, client_role, server_role
from reprokit.runs import find_run, new_run_dir
from reprokit.settings import Settings
from reprokit.sources import patches as patchlib
from reprokit.sources import teaching, workspace
from reprokit.sources.upstream import read_lines
from reprokit.sources.verify import run_checks

Out = Callable[[str], None]


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
    files = workspace.expected_files(s.upstream_dir, s.patches_dir)
    for path in patchlib.read_series(s.patches_dir):
        patch = patchlib.parse_patch(path)
        before = read_lines(s.upstream_dir / patch.source_name)
        after = files[patch.target_name].splitlines()
        if normal:
            out(f"$ diff upstream/{patch.source_name} {patch.target_name}")
            out(teaching.normal_diff(before, after).rstrip("\n"))
        else:
            out(teaching.explain(patch, before, after))
        out("")
    if placement:
        from reprokit.bench.placement import lesson_lines, variable_devices

        devices = variable_devices(workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir).out_dir.resolve())
        for line in lesson_lines(devices):
            out(line)


def _download_progress(out: Out) -> Callable[[int, int], None]:
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = int(100 * done / total) if total else 0
        if percent // 5 != shown[0] // 5:
            shown[0] = percent
            bar = "#" * (percent // 5)
            out(f"  [{bar:<20}] {percent:3d}%  {done / 1e6:7.1f} of {total / 1e6:.1f} MB")
    return progress


def data(out: Out, s: Settings, source: str, records: int, data_dir: Path) -> None:
    result = prepare_data(source, data_dir, records_per_file=records, progress=_download_progress(out))
    if result.notice:
        out("NOTICE: " + result.notice)
    out(f"data: {result.source} -> {result.batches_dir}")
    for f in result.files:
        out(f"  {f.name:<16} {f.records:6d} records  sha256 {f.sha256[:16]}…")


def make_backend(s: Settings, name: str, isolation: str):
    if name == "local":
        return LocalBackend(isolation, probe_timeout_s=s.probe_timeout_s)
    if name == "docker":
        from reprokit.run.containers.backend import DockerBackend

        return DockerBackend(s)
    raise KitError(f"unknown backend {name!r}", "choose local or docker")


def _progress(out: Out) -> Callable[[str, int, float], None]:
    return lambda role, step, rate: out(f"  {role:<10} step {step:5d}  {rate:8.1f} examples/sec")


def _finish(out: Out, result) -> bool:
    if result.error:
        out("error: " + result.error)
    out(f"run folder: {result.run_dir}")
    if result.results.get("speed"):
        for line in reportlib.speed_table(result.results):
            out(line)
    out(f"report: {result.run_dir / reportlib.REPORT}")
    out("PASS" if result.passed else "FAIL")
    return result.passed


def reproduce(out: Out, s: Settings, *, steps: int, workers: int, layout: str, cpus: str, source: str,
              backend: str, isolation: str, run_id: str | None,
              modes: tuple[str, ...] = ("standalone", "cluster"), tuning: str = "default") -> bool:
    from reprokit.run.tuning import profile

    options = Options(steps, workers, layout, source, s.synthetic_records,
                      clusterlib.parse_cpu_overrides(cpus), run_id, modes, profile(tuning))
    if backend == "docker" and options.tuning.client_hosts_ps:
        raise KitError(f"--tuning {tuning} runs the ps inside the client's process, and the Docker backend "
                       "gives every role a container of its own", "use --backend local with it")
    result = run_reproduction(s, options, make_backend(s, backend, isolation), out, _progress(out))
    return _finish(out, result)


def standalone(out: Out, s: Settings, steps: int, cpus: str | None, source: str) -> bool:
    return reproduce(out, s, steps=steps, workers=1, layout="article", cpus=f"standalone={cpus}" if cpus else "",
                     source=source, backend="local", isolation="none", run_id=None, modes=("standalone",))


def compare_logs(out: Out, s: Settings, run: str) -> bool:
    judgement = judge_run(find_run(s.runs_dir, run), s.rules)
    for line in judgement.summary.lines:
        out(line)
    return judgement.summary.passed


def report(out: Out, s: Settings, run: str) -> None:
    for path in reportlib.rerender(find_run(s.runs_dir, run)):
        out(f"wrote {path}")


def _cluster_from(cluster_file: str | None, ps: str | None, workers: str | None) -> clusterlib.Cluster:
    if cluster_file:
        return clusterlib.load_cluster(Path(cluster_file))
    if ps and workers:
        return clusterlib.Cluster(ps, tuple(w.strip() for w in workers.split(",") if w.strip()))
    raise KitError("no cluster given", 'pass --cluster FILE (JSON like {"ps": ["172.17.0.2:2222"], "worker": '
                   '["172.17.0.3:2222", "172.17.0.4:2222"]}) or --ps HOST:PORT --workers HOST:PORT,HOST:PORT')


def serve(out: Out, s: Settings, job: str, task: int, cluster_file: str | None, ps: str | None,
          workers: str | None) -> None:
    """One server in the foreground, the article's way; Ctrl-C stops it."""
    cluster = _cluster_from(cluster_file, ps, workers)
    role = server_role(cluster, job, task, python=sys.executable, role_server=str(s.role_server), cpus="")
    out(f"serving {role.name} at {role.address} (cluster {cluster.spec}); Ctrl-C stops it")
    out("WARNING: TensorFlow's gRPC server is unauthenticated and listens on every interface of this machine")
    subprocess.run(role.argv, env=None, check=False)


def client(out: Out, s: Settings, cluster_file: str | None, ps: str | None, workers: str | None,
           steps: int, source: str) -> bool:
    """The cluster trainer against servers started elsewhere (`invoke ps`, `invoke worker`)."""
    cluster = _cluster_from(cluster_file, ps, workers)
    try:
        with socket.create_connection((cluster.ps_host, cluster.ps_port), timeout=5):
            pass
    except OSError as exc:
        raise ClusterError(f"the ps at {cluster.ps} is not reachable: {exc}",
                           "start it first with `invoke ps --cluster FILE` on that machine") from None
    sources = workspace.apply_all(s.upstream_dir, s.patches_dir, s.sources_dir).out_dir.resolve()
    data_result = prepare_data(source, s.data_dir, records_per_file=s.synthetic_records)
    run_dir = new_run_dir(s.runs_dir).resolve()
    training = TrainingArgs(steps, str(data_result.data_dir), str(run_dir / "train_cluster"))
    role = client_role(cluster, training, python=sys.executable, sources=str(sources), cpus="")
    out(f"client: session on grpc://{cluster.ps}; log in {run_dir / 'client.log'}")
    backend = LocalBackend("none", probe_timeout_s=s.probe_timeout_s)
    outcome = backend.run(run_dir, [role], "client", _progress(out))
    out("client finished" if outcome.ok else f"client failed: {outcome.message}")
    return outcome.ok


def bench(out: Out, s: Settings, *, repetitions: int, steps: int, tuning: str, source: str) -> dict:
    from reprokit.bench.measure import run_bench
    from reprokit.bench.tables import bench_lines, plot_bench
    from reprokit.run.tuning import profile

    chosen = profile(tuning)
    out(f"bench: {repetitions} repetitions of standalone (1 CPU) and cluster (spread), {steps} steps each; "
        f"tuning '{chosen.name}': {chosen.why}")
    results = run_bench(s, LocalBackend("auto", probe_timeout_s=s.probe_timeout_s), chosen,
                        repetitions=repetitions, steps=steps, echo=out, data_source=source)
    return _show(out, results, bench_lines(results), "bench", plot_bench)


def sweep(out: Out, s: Settings, *, workers: str, steps: int, tuning: str, source: str) -> dict:
    from reprokit.bench.measure import run_sweep
    from reprokit.bench.tables import plot_sweep, sweep_lines
    from reprokit.run.tuning import profile

    counts = [int(w) for w in workers.split(",") if w.strip()]
    if not counts or min(counts) < 1:
        raise KitError(f"--workers {workers!r}: give worker counts like 1,2,4")
    results = run_sweep(s, LocalBackend("auto", probe_timeout_s=s.probe_timeout_s), profile(tuning),
                        worker_counts=counts, steps=steps, echo=out, data_source=source)
    return _show(out, results, sweep_lines(results), "sweep", plot_sweep)


def _show(out: Out, results: dict, lines: list[str], name: str, plot: Callable[[dict, Path], Path]) -> dict:
    """A benchmark's table, then its plot beside the JSON it was read from."""
    for line in lines:
        out(line)
    folder = Path(results["folder"])
    out(f"wrote {folder / (name + '.json')} and {plot(results, folder / (name + '.png'))}")
    return results
