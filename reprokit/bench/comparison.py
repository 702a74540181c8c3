"""`invoke bench`: the article's program and the lesson's, measured side by side in one invocation.

Rows (each a program with kit settings): the article's program with TensorFlow's defaults, the
same with the kit's `tuned` settings, and the lesson's program. Every repetition runs both
programs' standalone trainers (one CPU) and every row's cluster, in an order that is reversed
every other repetition, so that drift on a shared machine hits all alike; a row's speed-up is
its cluster's rate over its own program's standalone rate of the same repetition, the median
over repetitions. The lesson's standalone must be no weaker than the article's (>= 0.95 of it),
or its speed-up would come from a weaker baseline.

Then: the ablation (the article's cluster trainer with each change of the lesson alone), one
traced step of the article's standalone and cluster and of the lesson's cluster (where the time
goes), the input-free bound of one core, where each program puts its variables, the CPU each
role keeps busy, the kit's own overheads, and, with `loss_steps`, a long run of both clusters
to put their losses side by side.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from reprokit.bench.ablation import build_variants
from reprokit.bench.runs import Bench, ModeRun, cpu_share, ratio
from reprokit.bench.timeline import breakdown
from reprokit.commands import Echo
from reprokit.files import write_json
from reprokit.judge.speed import WARMUP_RULE
from reprokit.run.backends import Backend
from reprokit.run.tuning import PROFILES, Tuning
from reprokit.settings import Settings

TARGET_SPEEDUP = 1.85  # the lesson's target on 2 workers (the limit is 2.00x)
BASELINE_FLOOR = 0.95  # the lesson's standalone against the article's, in the same invocation
TRACE_STEP = 25


@dataclass(frozen=True)
class Row:
    program: str
    tuning: Tuning

    @property
    def name(self) -> str:
        return f"{self.program} program, {self.tuning.name} settings"


ROWS = (Row("article", PROFILES["default"]), Row("article", PROFILES["tuned"]), Row("lesson", PROFILES["default"]))


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _repetition(bench: Bench, rows: tuple[Row, ...], workers: int, reverse: bool) -> dict[str, Any]:
    """One repetition: every program's standalone and every row's cluster, in (reversed) order."""
    programs = list(dict.fromkeys(row.program for row in rows))
    jobs: list[tuple[str, str | int]] = [("standalone", p) for p in programs] + [("cluster", i) for i in range(len(rows))]
    alone: dict[str, ModeRun] = {}
    clusters: dict[int, ModeRun] = {}
    for mode, key in (reversed(jobs) if reverse else jobs):
        if isinstance(key, str):
            alone[key] = bench.run("standalone", program=key)
        else:
            clusters[key] = bench.run("cluster", workers, program=rows[key].program, tuning=rows[key].tuning)
    return {"standalone": {p: asdict(alone[p]) for p in programs},
            "rows": [{"cluster": asdict(clusters[i]), "speedup": ratio(clusters[i].rate, alone[row.program].rate)}
                     for i, row in enumerate(rows)]}


def _rows(rows: tuple[Row, ...], reps: list[dict[str, Any]], workers: int) -> list[dict[str, Any]]:
    table = []
    for i, row in enumerate(rows):
        speedup = _median([rep["rows"][i]["speedup"] for rep in reps])
        table.append({
            "name": row.name, "program": row.program, "tuning": row.tuning.name,
            "standalone_rate": _median([rep["standalone"][row.program]["rate"] for rep in reps]),
            "cluster_rate": _median([rep["rows"][i]["cluster"]["rate"] for rep in reps]),
            "speedup": speedup, "efficiency": None if speedup is None else speedup / workers,
            "per_repetition": [rep["rows"][i]["speedup"] for rep in reps],
            "cpu_share": cpu_share(reps[len(reps) // 2]["rows"][i]["cluster"]),
        })
    return table


def _baseline(reps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The lesson's standalone over the article's, per repetition: a fair baseline is >= the floor."""
    if not all({"article", "lesson"} <= set(rep["standalone"]) for rep in reps):
        return None
    ratios = [ratio(rep["standalone"]["lesson"]["rate"], rep["standalone"]["article"]["rate"]) for rep in reps]
    median = _median(ratios)
    return {"per_repetition": ratios, "median": median, "floor": BASELINE_FLOOR,
            "ok": median is not None and median >= BASELINE_FLOOR}


def _ablation(bench: Bench, settings: Settings, table: list[dict[str, Any]], workers: int) -> list[dict[str, Any]]:
    """The article's cluster trainer with each change of the lesson alone, then all of them."""
    article = next((r for r in table if r["program"] == "article" and r["tuning"] == "default"), None)
    lesson = next((r for r in table if r["program"] == "lesson"), None)
    if article is None or lesson is None:
        return []
    folder = bench.dir / "ablation-sources"
    variants = build_variants(settings.upstream_dir, settings.patches_dir, bench.sources, folder)
    alone = lesson["standalone_rate"]
    rows = [{"change": "none (the article's program)", "cluster_rate": article["cluster_rate"],
             "speedup": ratio(article["cluster_rate"], alone)}]
    for change, trainer in variants.items():
        run = bench.run("cluster", workers, f"-only-{change}", program="article", sources=folder, trainer_file=trainer)
        rows.append({"change": f"{change} alone", "cluster_rate": run.rate, "speedup": ratio(run.rate, alone),
                     "folder": run.folder})
    rows.append({"change": "all (the lesson)", "cluster_rate": lesson["cluster_rate"],
                 "speedup": ratio(lesson["cluster_rate"], alone)})
    for row in rows:
        row["gain"] = ratio(row["cluster_rate"], article["cluster_rate"])
    return rows


def _extras(bench: Bench, workers: int, lesson: bool) -> dict[str, Any]:
    """Traced steps, the input-free bound, and where each program puts its variables."""
    traced = {"article standalone": bench.run("standalone", label="-trace", trace_step=TRACE_STEP),
              "article cluster": bench.run("cluster", workers, "-trace", trace_step=TRACE_STEP)}
    if lesson:
        traced["lesson cluster"] = bench.run("cluster", workers, "-lesson-trace", program="lesson",
                                             trace_step=TRACE_STEP)
    bound = bench.run("standalone", label="-input-free", input_free=True)
    return {
        "breakdown": {name: asdict(breakdown(run.probe["trace"])) for name, run in traced.items()
                      if "trace" in run.probe},
        "placement": {name.split()[0]: run.probe.get("variables", {}) for name, run in traced.items()
                      if name.endswith("cluster")},
        "input_free_rate": bound.rate,
    }


def _loss(bench: Bench, workers: int, steps: int, programs: list[str]) -> dict[str, Any]:
    """Each program's cluster for ``steps`` steps: the last logged loss, and dead input threads."""
    found = {}
    for program in programs:
        run = bench.run("cluster", workers, f"-loss-{steps}", program=program, steps=steps)
        found[program] = {"step": run.last_loss[0] if run.last_loss else None,
                          "loss": run.last_loss[1] if run.last_loss else None,
                          "dead_input_threads": run.dead_input_threads, "folder": run.folder}
    return {"steps": steps, "programs": found}


def run_bench(settings: Settings, backend: Backend, *, repetitions: int, steps: int, echo: Echo,
              data_source: str = "auto", workers: int = 2, rows: tuple[Row, ...] = ROWS,
              loss_steps: int = 0) -> dict[str, Any]:
    """Every row `repetitions` times, alternating, then the ablation and the extra measurements."""
    bench = Bench(settings, backend, PROFILES["default"], steps, echo, data_source)
    reps = []
    for rep in range(repetitions):
        echo(f"repetition {rep + 1}/{repetitions}")
        reps.append(_repetition(bench, rows, workers, reverse=rep % 2 == 1))
    table = _rows(rows, reps, workers)
    echo("the ablation: each change of the lesson alone")
    ablation = _ablation(bench, settings, table, workers)
    echo("where the time goes (one traced step each), the input-free bound, where the variables live")
    extras = _extras(bench, workers, any(row.program == "lesson" for row in rows))
    standalone = _median([rep["standalone"]["article"]["rate"] for rep in reps if "article" in rep["standalone"]])
    lesson = next((r for r in table if r["program"] == "lesson"), None)
    teardowns = [run["timings"].get("teardown_done", 0) - run["timings"].get("teardown_started", 0)
                 for rep in reps for run in [*rep["standalone"].values(), *(r["cluster"] for r in rep["rows"])]]
    results = {
        "folder": str(bench.dir), "steps": steps, "repetitions": repetitions, "workers": workers,
        "warmup_rule": WARMUP_RULE, "data": bench.data.source, "kit_fixes": {"request_id_fix": bench.fix.summary},
        "tunings": {row.tuning.name: asdict(row.tuning) for row in rows},
        "repetition_results": reps, "rows": table, "baseline": _baseline(reps), "ablation": ablation,
        "target": {"speedup": TARGET_SPEEDUP, "lesson_speedup": lesson["speedup"] if lesson else None,
                   "met": bool(lesson and lesson["speedup"] and lesson["speedup"] >= TARGET_SPEEDUP)},
        "input_free_bound": {"rate": extras["input_free_rate"], "standalone_share": ratio(standalone,
                                                                                          extras["input_free_rate"])},
        "breakdown": extras["breakdown"], "placement": extras["placement"],
        "loss": _loss(bench, workers, loss_steps, [p for p in ("article", "lesson")
                                                   if any(r.program == p for r in rows)]) if loss_steps else None,
        "overheads": {
            "verify_and_apply_s": bench.verify_apply_s,
            "cluster_ready_to_first_step_s": _median([r["cluster"]["first_step_after_ready_s"]
                                                      for rep in reps for r in rep["rows"]]),
            "teardown_s": round(max(teardowns), 3),
        },
    }
    write_json(bench.dir / "bench.json", results)
    return results
