"""The network lesson: the cluster on simulated hosts at several link bandwidths, measured, and a
prediction to hold the measurements against.

Each cluster run is on the hosts backend (a namespace, an address and a shaped link per role),
beside one standalone run of the same program on one CPU. The prediction takes the unshaped
run's step time as the compute (and everything else that does not depend on the links) and adds
the busiest host's bytes per step over its link: in a synchronous step the workers first pull
the variables, then compute, then push their gradients, so a link's two directions are busy at
different moments, and the ps's link carries every worker's traffic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from reprokit.bench.findings import (
    NetworkPoint,
    NetworkProgram,
    NetworkResults,
    Prediction,
    rate_of,
    speedup_of,
)
from reprokit.bench.harness import Bench
from reprokit.commands import Echo
from reprokit.judge.evaluation import BATCH_SIZE
from reprokit.judge.speed import METHOD, WARMUP_RULE
from reprokit.options import Options
from reprokit.run.backends import Backend
from reprokit.run.links import Link
from reprokit.settings import Settings


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def busiest(network: Mapping[str, object]) -> tuple[str, int] | None:
    """The host whose link carries the most bytes per step (sent and received), and how many.
    ``network`` is the hosts backend's report: {"hosts": {role: {"sent_per_step": ...}}}."""
    hosts = network.get("hosts")
    rows = [(str(role), _count(row.get("sent_per_step")) + _count(row.get("received_per_step")))
            for role, row in (hosts.items() if isinstance(hosts, dict) else [])
            if isinstance(row, dict) and "sent_per_step" in row]
    return max(rows, key=lambda item: item[1]) if rows else None


def predict(points: list[NetworkPoint], standalone_rate: float | None, workers: int) -> Prediction:
    """Predicted examples/sec per measured bandwidth and along a curve; where the cluster stops
    beating one CPU. Needs the unshaped (`none`) point for the compute time and the bytes."""
    base = next((p for p in points if p.bits_per_s is None and p.rate), None)
    load = busiest(base.cluster.network) if base else None
    if base is None or base.rate is None or load is None:
        return Prediction(why_not="no unshaped run with bytes per step to predict from (add `none` to --link)")
    examples = BATCH_SIZE * workers  # examples per cluster step: a batch per worker
    step_s = examples / base.rate.value
    host, bytes_per_step = load

    def rate_at(bits_per_s: float) -> float:
        return examples / (step_s + 8 * bytes_per_step / bits_per_s)

    curve = [10 ** (7 + i / 10) for i in range(41)]  # 10 Mbit/s to 100 Gbit/s
    # One CPU's step time for the cluster's examples; the cluster beats it while its step is shorter.
    alone_s = examples / standalone_rate if standalone_rate else None
    crossover = 8 * bytes_per_step / (alone_s - step_s) if alone_s and alone_s > step_s else None
    return Prediction(None, step_s, host, bytes_per_step,
                      {p.link: rate_at(p.bits_per_s) for p in points if p.bits_per_s},
                      [(bits, rate_at(bits)) for bits in curve], crossover,
                      alone_s is not None and alone_s <= step_s)


def run_network_sweep(settings: Settings, local: Backend, links: list[tuple[Link, Backend]], options: Options, *,
                      programs: list[str], echo: Echo) -> NetworkResults:
    """For each program: one standalone run, then the cluster on simulated hosts at each link;
    each point's speed-up is one pair (its cluster, the standalone): the within-run interval."""
    bench = Bench(settings, local, options, echo, "network")
    workers = options.workers
    found = {}
    for program in programs:
        standalone = bench.run("standalone", program=program)
        alone = rate_of([standalone])
        points = []
        for link, hosts in links:
            run = bench.run("cluster", workers, f"-{link.name}", program=program, backend=hosts)
            points.append(NetworkPoint(link.name, None if link.bits_per_s is None else float(link.bits_per_s), run,
                                       rate_of([run]), speedup_of([(run, standalone)])))
        found[program] = NetworkProgram(standalone, alone, points,
                                        predict(points, alone.value if alone else None, workers))
    results = NetworkResults(str(bench.dir), options.steps, WARMUP_RULE, METHOD, workers, options.tuning,
                             [link.name for link, _ in links], found)
    results.write(bench.dir)
    return results


def bandwidth_name(bits_per_s: float | None) -> str:
    if not bits_per_s:
        return "n/a"
    exponent = int(math.log10(bits_per_s) // 3) * 3
    unit = {6: "Mbit/s", 9: "Gbit/s", 3: "kbit/s"}.get(exponent, "bit/s")
    return f"{bits_per_s / 10 ** exponent:.3g} {unit}"
