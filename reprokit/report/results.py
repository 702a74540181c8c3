"""run.json and results.json: what a run was asked to do, and every figure of what came out."""

from __future__ import annotations

import json
import platform
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from reprokit.errors import KitError
from reprokit.files import write_json
from reprokit.judge import speed as speedlib
from reprokit.judge.logs import step_fields
from reprokit.judge.threads import dead_input_threads
from reprokit.names import RESULTS
from reprokit.sources.patches import read_series
from reprokit.sources.upstream import read_checksums, sha256_file

FORMAT_VERSION = 2  # 1: the untyped results.json of 0.1, with the options copied from run.json


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


@dataclass
class RunResults:
    """results.json: what came out of a run, and the facts needed to trust or repeat it."""

    verdict: str
    error: str
    finished: str
    tuning: dict[str, Any]
    backend: dict[str, Any]
    exposure: dict[str, Any] | None
    data: dict[str, Any] | None
    machine: dict[str, Any]
    checksums: dict[str, dict[str, str]]
    speed: dict[str, Any] | None
    article: dict[str, Any]
    modes: dict[str, dict[str, Any]]  # mode -> steps, outcome, dead input threads per tower
    rules: list[dict[str, Any]]
    stages: list[dict[str, Any]]
    kit_fixes: dict[str, str] = field(default_factory=dict)  # what the kit mends in TensorFlow, and whether on
    format_version: int = FORMAT_VERSION

    def save(self, run_dir: Path) -> Path:
        return write_json(run_dir / RESULTS, asdict(self))

    @classmethod
    def load(cls, run_dir: Path) -> "RunResults":
        path = run_dir / RESULTS
        if not path.is_file():
            raise KitError(f"{path} is missing", "the run did not get to its report stage; run it again")
        data = json.loads(path.read_text())
        version = data.get("format_version", 1) if isinstance(data, dict) else None
        if version != FORMAT_VERSION:
            raise KitError(f"{path} is of format {version}; this kit reads format {FORMAT_VERSION}",
                           "run the experiment again with this version of the kit to get a report")
        return cls(**data)


def build_results(settings: Any, options: Any, backend: dict, data: Any, outcomes: dict, judgement: Any,
                  stages: list, error: str, exposure: Any = None, kit_fixes: dict[str, str] | None = None) -> RunResults:
    """Everything the report shows, as data."""
    speed = judgement.speed if judgement else None
    verdict = "PASS" if (not error and judgement is not None and judgement.passed) else "FAIL"
    records = judgement.records if judgement else {}
    return RunResults(
        verdict=verdict,
        error=error or (judgement.speed_error if judgement else ""),
        finished=datetime.now().isoformat(timespec="seconds"),
        tuning=asdict(options.tuning),
        backend=backend,
        exposure=None if exposure is None else asdict(exposure),
        data=None if data is None else {
            "source": data.source, "synthetic": data.synthetic, "notice": data.notice,
            "official": data.official, "batches_dir": str(data.batches_dir),
        },
        machine=machine_facts(),
        checksums=checksums(settings),
        speed=None if speed is None else {**asdict(speed), "warmup_rule": speedlib.WARMUP_RULE},
        article={"standalone_rate": speedlib.ARTICLE_STANDALONE_RATE, "cluster_rate": speedlib.ARTICLE_CLUSTER_RATE,
                 "speedup": speedlib.ARTICLE_SPEEDUP, "workers": speedlib.ARTICLE_WORKERS},
        modes={mode: {"steps": _steps(records.get(mode, [])),
                      "outcome": asdict(outcomes[mode]) if mode in outcomes else None,
                      "dead_input_threads": dead_input_threads(records.get(mode, []))}
               for mode in options.modes},
        rules=[] if judgement is None else [
            {"rule": v.rule, "mode": v.mode, "passed": v.passed, "severity": v.severity, "message": v.message,
             "evidence": [{"path": str(e.path), "line": e.line, "text": e.text} for e in v.evidence[:10]]}
            for v in judgement.verdicts],
        stages=[asdict(s) for s in stages],
        kit_fixes=kit_fixes or {},
    )
