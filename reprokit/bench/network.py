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
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from reprokit.bench.runs import Bench
from reprokit.commands import Echo
from reprokit.files import write_json
from reprokit.judge.speed import WARMUP_RULE
from reprokit.run.backends import Backend
from reprokit.run.links import Link
from reprokit.run.tuning import Tuning
from reprokit.settings import Settings

BATCH = 128  # the tutorial's batch_size: examples per worker per step


def busiest(network: dict[str, Any]) -> tuple[str, int] | None:
    """The host whose link carries the most bytes per step (sent and received), and how many."""
    rows = [(role, row.get("sent_per_step", 0) + row.get("received_per_step", 0))
            for role, row in (network.get("hosts") or {}).items() if "sent_per_step" in row]
    return max(rows, key=lambda item: item[1]) if rows else None


def predict(points: list[dict[str, Any]], standalone_rate: float | None, workers: int) -> dict[str, Any]:
    """Predicted examples/sec per measured bandwidth and along a curve; where the cluster stops
    beating one CPU. Needs the unshaped (`none`) point for the compute time and the bytes."""
    base = next((p for p in points if p["bits_per_s"] is None and p["rate"]), None)
    load = busiest(base["network"]) if base else None
    if base is None or load is None:
        return {"why_not": "no unshaped run with bytes per step to predict from (add `none` to --link)"}
    examples = BATCH * workers
    step_s = examples / base["rate"]
    host, bytes_per_step = load

    def rate_at(bits_per_s: float) -> float:
        return examples / (step_s + 8 * bytes_per_step / bits_per_s)

    curve = [10 ** (7 + i / 10) for i in range(41)]  # 10 Mbit/s to 100 Gbit/s
    # One CPU's step time for the cluster's examples; the cluster beats it while its step is shorter.
    alone_s = examples / standalone_rate if standalone_rate else None
    crossover = 8 * bytes_per_step / (alone_s - step_s) if alone_s and alone_s > step_s else None
    return {"compute_step_s": step_s, "busiest_host": host, "bytes_per_step": bytes_per_step,
            "points": {p["link"]: rate_at(float(p["bits_per_s"])) for p in points if p["bits_per_s"]},
            "curve": [[bits, rate_at(bits)] for bits in curve],
            "beats_one_cpu_above_bits_per_s": crossover,
            "never_beats_one_cpu": alone_s is not None and alone_s <= step_s}


def run_network_sweep(settings: Settings, local: Backend, hosts: Callable[[str], Backend], tuning: Tuning, *,
                      links: list[Link], programs: list[str], steps: int, echo: Echo, data_source: str = "auto",
                      workers: int = 2) -> dict[str, Any]:
    """For each program: one standalone run, then the cluster on simulated hosts at each link."""
    bench = Bench(settings, local, tuning, steps, echo, data_source)
    results: dict[str, Any] = {"folder": str(bench.dir), "steps": steps, "workers": workers, "warmup_rule": WARMUP_RULE,
                               "tuning": asdict(tuning), "links": [link.name for link in links], "programs": {}}
    for program in programs:
        standalone = bench.run("standalone", program=program)
        points = []
        for link in links:
            run = bench.run("cluster", workers, f"-{link.name}", program=program, backend=hosts(link.name))
            points.append({"link": link.name, "bits_per_s": link.bits_per_s, "rate": run.rate,
                           "speedup": run.rate / standalone.rate if run.rate and standalone.rate else None,
                           "network": run.network, "folder": run.folder})
        results["programs"][program] = {"standalone_rate": standalone.rate, "points": points,
                                        "prediction": predict(points, standalone.rate, workers)}
    write_json(bench.dir / "network.json", results)
    return results


def bandwidth_name(bits_per_s: float | None) -> str:
    if not bits_per_s:
        return "n/a"
    exponent = int(math.log10(bits_per_s) // 3) * 3
    unit = {6: "Mbit/s", 9: "Gbit/s", 3: "kbit/s"}.get(exponent, "bit/s")
    return f"{bits_per_s / 10 ** exponent:.3g} {unit}"
