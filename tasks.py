"""The kit's verbs. Each task reads the settings, calls one view of reprokit and exits 0 only when
what it ran succeeded; any error is one `error:` line. `invoke --list` shows them all.

Numeric options default to None here and are checked by the package, so that `--steps ten`
is an `error:` line that names the option, not a traceback from invoke's type conversion.
"""

from __future__ import annotations

import sys
from pathlib import Path

from invoke import Collection, Exit, task

from reprokit import views
from reprokit.errors import KitError
from reprokit.faults_table import FaultsRequest
from reprokit.mutation import MutantsRequest
from reprokit.options import BenchRequest, Request, SweepRequest
from reprokit.programs import NAMES as PROGRAM_NAMES
from reprokit.settings import Settings, from_mapping

ROOT = Path(__file__).resolve().parent
# `reproduce --require-claim`: the run passed, but the article's claim did not reproduce.
CLAIM_NOT_REPRODUCED = 3


def _out(line: str = "") -> None:
    print(line, flush=True)


# The views that start TensorFlow roles: only these may say that Ctrl-C stopped them.
_RUN_ROLES = {views.reproduce, views.client, views.serve, views.bench, views.sweep, views.mutants,
              views.faults}


def _run(view, c, *args, **kwargs):
    """Run one view with the settings; a KitError becomes one `error:` line and exit code 1."""
    try:
        settings: Settings = from_mapping(dict(c.config.get("reprokit", {})), ROOT)
        return view(_out, settings, *args, **kwargs)
    except KitError as exc:
        raise Exit(f"error: {exc}", code=1) from None
    except KeyboardInterrupt:
        raise Exit("interrupted" + (": every role was stopped" if view in _RUN_ROLES else ""), code=130) from None


def _passed(ok: bool, what: str) -> None:
    if not ok:
        raise Exit(f"{what}: FAIL", code=1)


@task
def verify(c):
    """Check upstream checksums, parse and strictly match every patch, show patch state."""
    _passed(_run(views.verify, c), "verify")


@task(help={"dry_run": "say what would be written, write nothing",
            "clean": "undo: remove the generated sources folder",
            "force": "replace a generated folder that was edited by hand or not made by the kit"})
def apply_patches(c, dry_run=False, clean=False, force=False):
    """Apply the patches in patches/series strictly (no fuzz) into build/patched, atomically."""
    _run(views.apply_patches, c, dry_run=dry_run, clean=clean, force=force)


@task(help={"normal": "print the article-style normal diff instead of the annotated hunks",
            "placement": "also show where the program's variables live: a session program's graph is built "
                         "here, a tf2 program's as a bench saw them (needs TensorFlow)",
            "patch": "show this patch of patches/series alone, e.g. cifar10_tf2_ps_train",
            "program": f"show the patches that make this program's trainers, in series order: {PROGRAM_NAMES}"})
def explain_patches(c, normal=False, placement=False, patch=None, program=None):
    """The teaching view: the patches hunk by hunk (all, one, or a program's), each change with its why."""
    _run(views.explain_patches, c, normal=normal, placement=placement, patch=patch, program=program)


@task(help={"source": "auto | url | synthetic | PATH to cifar-10-binary.tar.gz or an extracted folder",
            "records": "records per generated file (synthetic only; CIFAR-10 has 10000)",
            "data_dir": "where data/cifar-10-batches-bin goes"})
def data(c, source=None, records=None, data_dir=None):
    """Get CIFAR-10 into the data folder: download, local copy, or generated data."""
    _run(views.data, c, source, records, data_dir)


@task(help={"steps": "training steps (default: the article's 1000)", "cpus": "CPU list to pin to, e.g. 0",
            "source": "data source, as for `invoke data`"})
def standalone(c, steps=None, cpus=None, source=None):
    """Train the patched standalone program for real, pinned, logging to runs/<id>/standalone.log."""
    request = Request(steps=steps, workers=1, layout="article", cpus=f"standalone={cpus}" if cpus else "",
                      source=source, backend="local", isolation="none", modes=("standalone",))
    _passed(_run(views.reproduce, c, request).passed, "standalone")


_CLUSTER_HELP = {"cluster": 'JSON file {"ps": ["host:port"], "worker": ["host:port", ...]}',
                 "ps": "ps address host:port (instead of --cluster)",
                 "workers": "comma-separated worker addresses (instead of --cluster)"}


@task(help=_CLUSTER_HELP)
def ps(c, cluster=None, ps=None, workers=None):
    """Serve the ps task of the cluster until stopped (Ctrl-C)."""
    _run(views.serve, c, "ps", 0, cluster, ps, workers)


@task(help={**_CLUSTER_HELP, "index": "which worker task to serve (0-based; default 0)"})
def worker(c, index=None, cluster=None, ps=None, workers=None):
    """Serve one worker task of the cluster until stopped (Ctrl-C)."""
    _run(views.serve, c, "worker", index if index is not None else 0, cluster, ps, workers)


@task(help={**_CLUSTER_HELP, "steps": "training steps", "source": "data source, as for `invoke data`"})
def client(c, cluster=None, ps=None, workers=None, steps=None, source=None):
    """Run the patched cluster trainer against a running cluster (session on grpc://<ps>) and judge it."""
    request = Request(steps=steps, source=source, backend="local", isolation="none", modes=("cluster",))
    _passed(_run(views.client, c, request, cluster, ps, workers).passed, "client")


@task(help={"quick": "a short run (steps 0..50, the part of the log the article shows)",
            "steps": "training steps per mode (default 1000, as the article)",
            "workers": "cluster workers (default 2)",
            "layout": "CPU layout: spread (default) or article (every role on CPU 0)",
            "cpus": "explicit CPU sets per role, e.g. ps=0,worker0=0,worker1=1,client=0,standalone=0",
            "source": "data source: auto | url | synthetic | PATH",
            "backend": "local (default), docker, hosts (a simulated host per role) or swarm (a stack on the current swarm)",
            "link": "hosts backend: every host's link bandwidth: none (default), 10gbit, 1gbit, 100mbit",
            "cluster": "swarm backend: a cluster file whose workers and placement ({role: node}) the stack follows",
            "isolation": "local backend: auto or netns (a private network namespace, or an error saying how to "
                         "get one), none (the host network: every interface, unauthenticated)",
            "run_id": "name of the run folder (must not exist yet)",
            "tuning": "kit settings: default (as the article) or tuned (see docs/benchmark.md#what-the-kit-controls-and-why)",
            "program": f"{PROGRAM_NAMES} (default: program in invoke.yaml)",
            "require_claim": f"exit {CLAIM_NOT_REPRODUCED} unless the program's speed-up claim is REPRODUCED "
                             "(by default a claim that does not reproduce is a finding, and the exit is 0)",
            "repetitions": "standalone/cluster pairs in alternating order (default: repetitions in invoke.yaml); "
                           "from 3 the claim is judged on the spread between them",
            "fault": "SIGNAL:ROLE@STEP, repeatable: send kill, term or int to a role once the trainer has logged "
                     "that step (every backend; see docs/faults.md)"},
      iterable=["fault"])
def reproduce(c, quick=False, steps=None, workers=None, layout=None, cpus=None, source=None,
              backend=None, isolation=None, run_id=None, tuning=None, link=None, cluster=None, program=None,
              require_claim=False, repetitions=None, fault=None):
    """The whole experiment: patches, data, standalone, cluster, eval, check, report; a three-part verdict."""
    request = Request(steps=steps, quick=quick, workers=workers, layout=layout, cpus=cpus or "", source=source,
                      backend=backend, isolation=isolation, run_id=run_id, tuning=tuning, link=link or "none",
                      cluster_file=cluster, program=program, repetitions=repetitions, faults=tuple(fault or ()))
    result = _run(views.reproduce, c, request)
    _passed(result.passed, "reproduce")
    if require_claim and (result.claim is None or result.claim.status != "REPRODUCED"):
        status = result.claim.status if result.claim else "not judged"
        raise Exit(f"reproduce: the claim is {status} and --require-claim was given", code=CLAIM_NOT_REPRODUCED)


@task(help={"workers": "cluster workers (default 2)", "cluster": "a cluster file with placement, as for reproduce",
            "image": "the image the services run (default: the one `invoke build-image` makes here)",
            "steps": "training steps (default 1000)", "source": "where the data is, as for `invoke data`"})
def stack_file(c, workers=None, cluster=None, image=None, steps=None, source=None):
    """Write the cluster's Swarm stack file into a new run folder, without deploying anything."""
    request = Request(steps=steps, workers=workers, source=source, backend="swarm", cluster_file=cluster)
    _run(views.stack_file, c, request, image)


# RUN is a flag, not a positional argument: invoke requires every positional argument, and
# a run must be optional (the latest one by default).
@task(help={"run": "run id, folder, or 'latest' (the default)"})
def compare_logs(c, run="latest"):
    """Check a finished run's logs against expected_logs/: every failure with file, line, rule."""
    _passed(_run(views.compare_logs, c, run), "compare-logs")


@task(name="eval", help={"run": "run id, folder, or 'latest' (the default)"})
def evaluate(c, run="latest"):
    """precision @ 1 of each mode's last checkpoint on the test set (the tutorial's cifar10_eval), with its interval."""
    found = _run(views.evaluate, c, run)
    _passed(all(not e.error for e in found.values()), "eval")


@task(help={"run": "run id, folder, or 'latest' (the default)"})
def report(c, run="latest"):
    """Re-render a run's report.md and plot from its results.json."""
    _run(views.report, c, run)


@task(help={"quick": "short runs (quick_steps in invoke.yaml): the mechanism, not the verdicts' power",
            "steps": "training steps per run (default: steps in invoke.yaml, the article's 1000)",
            "programs": f"whose true programs and mutants run: {PROGRAM_NAMES}, comma-separated (default: all)",
            "only": "only these mutants (comma-separated slugs of mutants/series), and their programs' controls",
            "source": "data source, as for `invoke data`",
            "isolation": "as for reproduce's local backend",
            "control": "a finished `invoke reproduce` of the one program asked for, to judge its mutants against "
                       "instead of running the true program again",
            "probe-only": "the update check alone (minutes): every cluster's steps held to its standalone's; "
                          "the logs' clock rule where the catalogue says the logs catch a mutant"})
def mutants(c, quick=False, steps=None, programs=None, only=None, source=None, isolation=None, control=None,
            probe_only=False):
    """The verdicts on known answers: each true program and each mutant of mutants/; a table."""
    command = "invoke mutants " + " ".join(arg for arg in sys.argv[2:])
    _run(views.mutants, c, MutantsRequest(steps, quick, programs, only, source, isolation, control, probe_only),
         command.strip())


@task(help={"steps": "training steps per run (default: quick_steps in invoke.yaml; at least 31)",
            "programs": f"{PROGRAM_NAMES}, comma-separated, or all (the default)",
            "source": "data source, as for `invoke data`",
            "isolation": "as for reproduce's local backend"})
def faults(c, steps=None, programs=None, source=None, isolation=None):
    """Surviving a lost worker: each program with a worker killed, a worker preempted, the ps killed; a table."""
    command = "invoke faults " + " ".join(arg for arg in sys.argv[2:])
    _run(views.faults, c, FaultsRequest(steps, programs, source, isolation), command.strip())


@task(help={"repetitions": "repetitions of every row, alternating order (default: bench_repetitions in invoke.yaml)",
            "steps": "steps per run (default: bench_steps in invoke.yaml)", "source": "data source, as for `invoke data`",
            "isolation": "auto | netns | none, as for reproduce",
            "loss_steps": "also run each program's cluster this long and put their last losses side by side "
                          "(e.g. 1000; default 0: off)",
            "programs": f"the rows' programs: {PROGRAM_NAMES}, comma-separated, or all (default: "
                        "bench_programs in invoke.yaml); a tf2 one adds the machine's ceiling",
            "tunings": "the article's rows' kit settings: default, or default,tuned for a row with the kit's "
                       "tuned settings too (default: bench_tunings in invoke.yaml)",
            "levers": "a row more for each lever of a benched program (a setting of its cluster trainer that "
                      "keeps what it learns), alone and all together (default: bench_levers in invoke.yaml)"})
def bench(c, repetitions=None, steps=None, source=None, isolation=None, loss_steps=None, programs=None, tunings=None,
          levers=False):
    """Benchmark: the article's program and the lesson's (or --programs) side by side; ablation; plot."""
    _run(views.bench, c, BenchRequest(repetitions, steps, source, isolation, loss_steps, programs, tunings, levers))


@task(help={"workers": "comma-separated worker counts (default 1,2,4; with --link one count, default 2)",
            "steps": "steps per run (default: sweep_steps in invoke.yaml)", "tuning": "kit settings profile",
            "source": "data source", "isolation": "auto | netns | none",
            "program": f"{PROGRAM_NAMES}, comma-separated, or all (default: sweep_programs in invoke.yaml)",
            "link": "the network sweep: link bandwidths, e.g. none,10gbit,1gbit,100mbit (hosts backend)"})
def sweep(c, workers=None, steps=None, tuning=None, source=None, isolation=None, program=None, link=None):
    """Scaling sweep: the cluster with N workers for each N, or at each link bandwidth (--link)."""
    _run(views.sweep, c, SweepRequest(workers, steps, tuning, source, isolation, program, link))


@task(aliases=["base-image"], help={"force": "debootstrap again even if the tag exists"})
def build_base_image(c, force=False):
    """Offline image, step 1: a debootstrap'ed Debian bookworm as reprokit/debian-base:bookworm.

    Runs as root and needs deb.debian.org (apt's mirror), not Docker Hub."""
    _run(views.build_base_image, c, force=force)


@task(help={"force": "download again even if wheels/manifest.json says every wheel is there"})
def download_wheels(c, force=False):
    """Offline image, step 2: TensorFlow 2.21 and its dependencies as wheels in wheels/, from PyPI."""
    _run(views.download_wheels, c, force=force)


@task(help={"base": "tensorflow/tensorflow:2.21.0 (pulled if absent) or reprokit/debian-base:bookworm; "
                    "default: the registry base if it is here, else the offline one if that is",
            "force": "rebuild without the build cache even if the tag exists"})
def build_image(c, base=None, force=False):
    """The Docker backend's image: docker/Dockerfile on the base, tagged by a hash of its inputs."""
    _run(views.build_image, c, base=base, force=force)


ns = Collection(verify, apply_patches, explain_patches, data, standalone, ps, worker, client, reproduce,
                stack_file, compare_logs, evaluate, report, bench, sweep, mutants, faults,
                build_base_image, download_wheels, build_image)
ns.configure({"run": {"echo": True, "pty": sys.stdout.isatty()}})
