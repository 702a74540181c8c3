"""The kit's verbs. Each task reads the settings, calls one function of reprokit and
prints its result, or exits non-zero with the error's message. `invoke --list` shows them."""

from __future__ import annotations

import sys
from pathlib import Path

from invoke import Collection, Exit, task

from reprokit import views
from reprokit.errors import KitError
from reprokit.run.containers import backend as docker_backend
from reprokit.run.containers import image as imagelib
from reprokit.run.containers import offline
from reprokit.settings import Settings, from_mapping

ROOT = Path(__file__).resolve().parent


def _settings(c) -> Settings:
    return from_mapping(dict(c.config.get("reprokit", {})), ROOT)


def _out(line: str = "") -> None:
    print(line, flush=True)


def _guard(fn, *args, **kwargs):
    """Run one package call; turn a KitError into a clean exit with its message."""
    try:
        return fn(*args, **kwargs)
    except KitError as exc:
        raise Exit(f"error: {exc}", code=1) from None
    except KeyboardInterrupt:
        raise Exit("interrupted: every role was stopped", code=130) from None


@task
def verify(c):
    """Check upstream checksums, parse and strictly match every patch, show patch state."""
    if not _guard(views.verify, _out, _settings(c)):
        raise Exit("verify: FAIL", code=1)


@task(help={"dry_run": "say what would be written, write nothing",
            "clean": "undo: remove the generated sources folder",
            "force": "replace a generated folder that was edited by hand or not made by the kit"})
def apply_patches(c, dry_run=False, clean=False, force=False):
    """Apply the patches in patches/series strictly (no fuzz) into build/patched, atomically."""
    _guard(views.apply_patches, _out, _settings(c), dry_run=dry_run, clean=clean, force=force)


@task(help={"normal": "print the article-style normal diff instead of the annotated hunks",
            "placement": "also build the cluster graph and show where its variables live (needs TensorFlow)"})
def explain_patches(c, normal=False, placement=False):
    """The teaching view: every patch hunk by hunk, each change with its why."""
    _guard(views.explain_patches, _out, _settings(c), normal=normal, placement=placement)


@task(help={"source": "auto | url | synthetic | PATH to cifar-10-binary.tar.gz or an extracted folder",
            "records": "records per generated file (synthetic only; CIFAR-10 has 10000)",
            "data_dir": "where data/cifar-10-batches-bin goes"})
def data(c, source=None, records=None, data_dir=None):
    """Get CIFAR-10 into the data folder: download, local copy, or generated data."""
    s = _settings(c)
    _guard(views.data, _out, s, source or s.data_source, int(records or s.synthetic_records),
           Path(data_dir) if data_dir else s.data_dir)


@task(help={"steps": "training steps (default: the article's 1000)", "cpus": "CPU list to pin to, e.g. 0",
            "source": "data source, as for `invoke data`"})
def standalone(c, steps=None, cpus=None, source=None):
    """Train the patched standalone program for real, pinned, logging to runs/<id>/standalone.log."""
    s = _settings(c)
    _guard(views.standalone, _out, s, int(steps or s.steps), cpus, source or s.data_source)


_CLUSTER_HELP = {"cluster": 'JSON file {"ps": ["host:port"], "worker": ["host:port", ...]}',
                 "ps": "ps address host:port (instead of --cluster)",
                 "workers": "comma-separated worker addresses (instead of --cluster)"}


@task(help=_CLUSTER_HELP)
def ps(c, cluster=None, ps=None, workers=None):
    """Serve the ps task of the cluster until stopped (Ctrl-C)."""
    _guard(views.serve, _out, _settings(c), "ps", 0, cluster, ps, workers)


@task(help={**_CLUSTER_HELP, "index": "which worker task to serve (0-based)"})
def worker(c, index=0, cluster=None, ps=None, workers=None):
    """Serve one worker task of the cluster until stopped (Ctrl-C)."""
    _guard(views.serve, _out, _settings(c), "worker", int(index), cluster, ps, workers)


@task(help={**_CLUSTER_HELP, "steps": "training steps", "source": "data source, as for `invoke data`"})
def client(c, cluster=None, ps=None, workers=None, steps=None, source=None):
    """Run the patched cluster trainer against a running cluster (session on grpc://<ps>)."""
    s = _settings(c)
    _guard(views.client, _out, s, cluster, ps, workers, int(steps or s.steps), source or s.data_source)


@task(help={"quick": "a short run (steps 0..50, the part of the log the article shows)",
            "steps": "training steps per mode (default 1000, as the article)",
            "workers": "cluster workers (default 2)",
            "layout": "CPU layout: spread (default) or article (every role on CPU 0)",
            "cpus": "explicit CPU sets per role, e.g. ps=0,worker0=0,worker1=1,client=0,standalone=0",
            "source": "data source: auto | url | synthetic | PATH",
            "backend": "local (default) or docker",
            "isolation": "local backend: auto | netns | none",
            "run_id": "name of the run folder (must not exist yet)",
            "tuning": "kit settings: default (as the article) or tuned (see README, Benchmark)"})
def reproduce(c, quick=False, steps=None, workers=None, layout=None, cpus=None, source=None,
              backend=None, isolation=None, run_id=None, tuning="default"):
    """The whole experiment: patches, data, standalone, cluster, check, report; ends in PASS/FAIL."""
    s = _settings(c)
    passed = _guard(views.reproduce, _out, s, steps=int(steps or (s.quick_steps if quick else s.steps)),
                    workers=int(workers or s.workers), layout=layout or s.layout, cpus=cpus or "",
                    source=source or s.data_source, backend=backend or s.backend,
                    isolation=isolation or s.isolation, run_id=run_id, tuning=tuning)
    if not passed:
        raise Exit(code=1)


@task(positional=["run"], help={"run": "run id, folder, or 'latest' (the default)"})
def compare_logs(c, run=None):
    """Check a finished run's logs against expected_logs/: every failure with file, line, rule."""
    if not _guard(views.compare_logs, _out, _settings(c), run or "latest"):
        raise Exit(code=1)


@task(positional=["run"], help={"run": "run id, folder, or 'latest' (the default)"})
def report(c, run=None):
    """Re-render a run's report.md and plot from its results.json."""
    _guard(views.report, _out, _settings(c), run or "latest")


@task(help={"repetitions": "standalone + cluster pairs to run (alternating order)",
            "steps": "steps per run", "tuning": "kit settings profile (see reprokit/tuning.py)",
            "source": "data source, as for `invoke data`"})
def bench(c, repetitions=3, steps=81, tuning="default", source=None):
    """Benchmark: standalone vs cluster side by side, medians and ratios, breakdown, plot."""
    s = _settings(c)
    _guard(views.bench, _out, s, repetitions=int(repetitions), steps=int(steps), tuning=tuning,
           source=source or s.data_source)


@task(help={"workers": "comma-separated worker counts", "steps": "steps per run",
            "tuning": "kit settings profile", "source": "data source"})
def sweep(c, workers="1,2,4", steps=61, tuning="default", source=None):
    """Scaling sweep: the cluster with N workers for each N, against the ideal line."""
    s = _settings(c)
    _guard(views.sweep, _out, s, workers=workers, steps=int(steps), tuning=tuning,
           source=source or s.data_source)


@task(aliases=["base-image"], help={"force": "debootstrap again even if the tag exists"})
def build_base_image(c, force=False):
    """Offline image, step 1: a debootstrap'ed Debian bookworm as reprokit/debian-base:bookworm.

    Runs as root and needs deb.debian.org (apt's mirror), not Docker Hub."""
    base = _guard(offline.build_base_image, echo=_out, force=force)
    _out(f"{base.tag}: {'built' if base.built else 'already here'} ({base.id[:19]}, {base.size >> 20} MiB)")


@task(help={"force": "download again even if wheels/manifest.json says every wheel is there"})
def download_wheels(c, force=False):
    """Offline image, step 2: TensorFlow 2.21 and its dependencies as wheels in wheels/, from PyPI."""
    wheels = _guard(offline.download_wheels, echo=_out, force=force)
    _out(f"{wheels.dest}: {len(wheels.files)} wheels, {wheels.size >> 20} MiB, "
         + ("downloaded" if wheels.downloaded else "already there (manifest checked)"))


@task(help={"base": f"{imagelib.REGISTRY_BASE} (pulled if absent) or {imagelib.OFFLINE_BASE}; "
                    "default: the registry base if it is here, else the offline one if that is",
            "force": "rebuild without the build cache even if the tag exists"})
def build_image(c, base=None, force=False):
    """The Docker backend's image: docker/Dockerfile on the base, tagged by a hash of its inputs."""
    info = _guard(lambda: imagelib.build_image(base or docker_backend.choose_base(), force, _out))
    _out(f"{info.tag}: {'built' if info.built else 'already built from these inputs'} "
         f"({info.id[:19]}, base {info.base}, tensorflow {info.tf_version})")


ns = Collection(verify, apply_patches, explain_patches, data, standalone, ps, worker, client, reproduce,
                compare_logs, report, bench, sweep,
                build_base_image, download_wheels, build_image)
ns.configure({"run": {"echo": True, "pty": sys.stdout.isatty()}})
