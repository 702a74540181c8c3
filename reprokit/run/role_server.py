"""Serve one task of a TensorFlow cluster (ps or worker) until stopped.

The article starts each server by hand in an interactive Python; this is the
same call as a program. It needs only the standard library and TensorFlow,
because it also runs inside the Docker image, where the kit is not installed:

    python role_server.py --cluster '{"ps": ["h:2222"], "worker": [...]}' \
        --job worker --task 0

It prints one "serving" line once the server listens, then blocks; SIGTERM or
SIGINT ends it cleanly, with the exit code a process ended by that signal has (143, 130):
a server has no end of its own, and a restart policy that reads exit codes (TFJob's, the kit's
in reprokit/run/faults.py) must see a preempted server as stopped by a signal, not as finished.

With `--run-trainer TRAINER.py -- FLAGS`, it serves its task and runs that trainer in the same
process instead of blocking (the kit's "client hosts the ps" setting): the trainer's session on
grpc://localhost:<port> then reaches the master in-process, without a gRPC hop per call. The
exit code is the trainer's.

With `--from-tf-config` instead of `--cluster`, `--job` and `--task`, it reads all three from the
TF_CONFIG environment variable, as TensorFlow's own cluster resolver does (the tf2 programs' ps and
workers start this way).

With `--wait-for HOST:PORT,... --run-trainer TRAINER.py -- FLAGS` and no job, it serves nothing:
it waits until every address accepts a connection, then runs the trainer. A Swarm stack's client
starts this way, so that it trains only once every server answers from inside the overlay.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from datetime import datetime


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", help="ClusterSpec as JSON: {job: [host:port, ...]}")
    parser.add_argument("--job", choices=["ps", "worker"])
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--from-tf-config", action="store_true",
                        help="take the cluster, job and task from the TF_CONFIG environment variable")
    parser.add_argument("--intra-op-threads", type=int, default=0, help="0: TensorFlow's default")
    parser.add_argument("--inter-op-threads", type=int, default=0, help="0: TensorFlow's default")
    parser.add_argument("--run-trainer", help="run this trainer in-process after the server starts")
    parser.add_argument("--wait-for", help="serve nothing: wait until these host:port answer, then run the trainer")
    parser.add_argument("--wait-timeout", type=float, default=600.0, help="seconds to wait for them")
    if "--" in argv:
        cut = argv.index("--")
        args = parser.parse_args(argv[:cut])
        args.trainer_flags = argv[cut + 1:]
        return args
    args = parser.parse_args(argv)
    args.trainer_flags = []
    return args


def run_trainer(path: str, flags: list[str]) -> int:
    """Run a trainer script as __main__ in this process; its exit status is returned."""
    import runpy

    sys.argv = [path, *flags]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:  # tf.app.run() ends with sys.exit(main(...))
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def wait_for(addresses: list[str], timeout: float) -> bool:
    """True once every address accepts a TCP connection; False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for address in addresses:
        host, port = address.rsplit(":", 1)
        while True:
            try:
                socket.create_connection((host, int(port)), timeout=2).close()
                print(f"{datetime.now()}: {address} answers", flush=True)
                break
            except OSError as error:
                if time.monotonic() > deadline:
                    print(f"{datetime.now()}: {address} does not answer after {timeout:.0f} s: {error}",
                          file=sys.stderr, flush=True)
                    return False
                time.sleep(0.5)
    return True


def from_tf_config(text: str) -> tuple[dict[str, list[str]], str, int]:
    """The cluster, job and task of TF_CONFIG, as TensorFlow's cluster resolver reads it;
    ValueError says what is missing."""
    if not text:
        raise ValueError("TF_CONFIG is not set")
    try:
        config = json.loads(text)
        cluster, task = config["cluster"], config["task"]
        return cluster, str(task["type"]), int(task["index"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"TF_CONFIG must be JSON with cluster and task.type, task.index: {error}") from None


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.wait_for:
        if not args.run_trainer:
            print("--wait-for needs --run-trainer", file=sys.stderr)
            return 2
        if not wait_for([a for a in args.wait_for.split(",") if a], args.wait_timeout):
            return 3
        return run_trainer(args.run_trainer, args.trainer_flags)
    if args.from_tf_config:
        try:
            cluster, args.job, args.task = from_tf_config(os.environ.get("TF_CONFIG", ""))
        except ValueError as error:
            print(f"--from-tf-config: {error}", file=sys.stderr)
            return 2
    elif not args.cluster or not args.job:
        print("--cluster and --job (or --from-tf-config) are needed to serve a task", file=sys.stderr)
        return 2
    else:
        cluster = json.loads(args.cluster)
    if args.task >= len(cluster.get(args.job, [])):
        print(f"no task {args.task} in job {args.job!r} of {cluster}", file=sys.stderr)
        return 2
    stop = threading.Event()
    stopped_by: list[int] = []

    def on_signal(number: int, _frame: object) -> None:
        stopped_by.append(number)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    import tensorflow as tf  # after the signal handlers: the import takes seconds

    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=args.intra_op_threads,
        inter_op_parallelism_threads=args.inter_op_threads,
    )
    address = cluster[args.job][args.task]
    try:
        server = tf.distribute.Server(
            tf.train.ClusterSpec(cluster), job_name=args.job, task_index=args.task, config=config, start=True
        )
    except Exception as error:  # one line a person can act on, not TensorFlow's traceback
        message = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        print(f"{datetime.now()}: cannot serve /job:{args.job}/task:{args.task} at {address}: {message} "
              f"(is port {address.rsplit(':', 1)[1]} already in use?)", file=sys.stderr, flush=True)
        return 1
    print(f"{datetime.now()}: serving /job:{args.job}/task:{args.task} at {address} "
          f"(target {server.target})", flush=True)
    if args.run_trainer:
        return run_trainer(args.run_trainer, args.trainer_flags)
    # server.join() cannot be interrupted; waiting on an event can.
    while not stop.wait(0.5):
        pass
    print(f"{datetime.now()}: stopping /job:{args.job}/task:{args.task}", flush=True)
    return 128 + stopped_by[0]


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # A plain exit runs TensorFlow's server destructors, which can block.
    os._exit(code)
