"""results.json: every figure of a run, and the facts needed to trust or repeat it."""

from __future__ import annotations

import platform
import sys
from dataclasses import asdict
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from reprokit.judge import speed as speedlib
from reprokit.judge.logs import step_fields
from reprokit.run.cluster import CpuLayout
from reprokit.sources.patches import read_series
from reprokit.sources.upstream import read_checksums, sha256_file


def package_version(*names: str) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, Any]:
    import os

    return {
        "python": sys.version.split()[0],
        "tensorflow": package_version("tensorflow-cpu", "tensorflow"),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
    }


def checksums(settings: Any) -> dict[str, dict[str, str]]:
    return {
        "upstream": read_checksums(settings.upstream_dir),
        "patches": {p.name: sha256_file(p) for p in read_series(settings.patches_dir)},
    }


def _steps(records: list) -> list[dict[str, Any]]:
    return [{"step": f.step, "loss": f.loss, "examples_per_sec": f.examples_per_sec,
             "sec_per_batch": f.sec_per_batch} for f in step_fields(records)]


def build_results(settings: Any, options: Any, layout: CpuLayout, backend: dict, data: Any,
                  outcomes: dict, judgement: Any, stages: list, error: str, exposure: Any = None) -> dict[str, Any]:
    """Everything the report shows, as plain data."""
    speed = judgement.speed if judgement else None
    verdict = "PASS" if (not error and judgement is not None and judgement.passed) else "FAIL"
    return {
        "verdict": verdict,
        "error": error or (judgement.speed_error if judgement else ""),
        "finished": datetime.now().isoformat(timespec="seconds"),
        "options": {"steps": options.steps, "workers": options.workers, "modes": list(options.modes),
                    "data_source": options.data_source},
        "layout": {"name": layout.name, "cpus": layout.cpus},
        "tuning": asdict(options.tuning),
        "backend": backend,
        "exposure": None if exposure is None else asdict(exposure),
        "data": None if data is None else {
            "source": data.source, "synthetic": data.synthetic, "notice": data.notice,
            "official": data.official, "batches_dir": str(data.batches_dir),
        },
        "machine": machine_facts(),
        "checksums": checksums(settings),
        "speed": None if speed is None else {**asdict(speed), "warmup_rule": speedlib.WARMUP_RULE},
        "article": {"standalone_rate": speedlib.ARTICLE_STANDALONE_RATE,
                    "cluster_rate": speedlib.ARTICLE_CLUSTER_RATE, "speedup": speedlib.ARTICLE_SPEEDUP,
                    "workers": speedlib.ARTICLE_WORKERS},
        "modes": {mode: {"steps": _steps(judgement.records.get(mode, [])) if judgement else [],
                         "outcome": asdict(outcomes[mode]) if mode in outcomes else None}
                  for mode in options.modes},
        "rules": [] if judgement is None else [
            {"rule": v.rule, "mode": v.mode, "passed": v.passed, "severity": v.severity, "message": v.message,
             "evidence": [{"path": str(e.path), "line": e.line, "text": e.text} for e in v.evidence[:10]]}
            for v in judgement.verdicts],
        "stages": [asdict(s) for s in stages],
    }
