"""Where each program's model variables live, as TensorFlow really places them:
`invoke explain-patches --placement [--program NAME]`.

What a program asks for is told once, in its Program (reprokit.programs); this shows what
TensorFlow made of it. A session program's graph is built here with no server and no data (the
probe's `--placement-only`), and its variables' devices are the ones the graph requests. A TF2
program makes its variables under its strategy, which needs its cluster running: `invoke bench`
probes the cluster of every program it benches and keeps the devices it saw in bench.json, so
the view shows a bench that has the program: the newest in the runs folder (run ids sort by
time), or else the repository's records (docs/records), last by file name.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path

from reprokit import PACKAGE_PARENT, commands
from reprokit.bench.findings import BenchResults
from reprokit.programs import SESSION, program
from reprokit.records import ResultsFormatError
from reprokit.settings import Settings


def graph_devices(sources_dir: Path, trainer: str) -> dict[str, str]:
    """Build a session trainer's graph (no servers, no data) and return {variable: device}."""
    with tempfile.TemporaryDirectory(prefix="reprokit-placement-") as tmp:
        out = Path(tmp) / "placement.json"
        # The graph checks that the data files exist (and the trainer would download them
        # otherwise); building it reads none, so empty stand-ins do.
        batches = Path(tmp) / "data" / "cifar-10-batches-bin"
        batches.mkdir(parents=True)
        for i in range(1, 6):
            (batches / f"data_batch_{i}.bin").touch()
        argv = [sys.executable, "-m", "reprokit.bench.probe", "--sources", str(sources_dir), "--trainer", trainer,
                "--out", str(out), "--placement-only", "--", f"--train_dir={tmp}/train", f"--data_dir={tmp}/data"]
        commands.run(argv, env={**os.environ, "PYTHONPATH": PACKAGE_PARENT}, tail_lines=10,
                     hint="is TensorFlow installed? (`pip install -e .`)")
        return dict(json.loads(out.read_text())["variables"])


def measured_devices(s: Settings, name: str) -> tuple[dict[str, str], Path] | None:
    """The devices a bench saw ``name``'s cluster give its variables, and that bench.json: the
    user's own runs first, newest first, then the repository's records, last by name first.
    Documents of another format are passed over, as are benches that did not run the program."""
    found = sorted(s.runs_dir.glob(f"*/{BenchResults.FILE}"), reverse=True) \
        + sorted(s.records_dir.glob("bench-*.json"), reverse=True)
    for path in found:
        try:
            devices = BenchResults.load(path).placement.get(name)
        except ResultsFormatError:
            continue
        if devices:
            return devices, path
    return None


def placement_lines(s: Settings, name: str, sources_dir: Path) -> list[str]:
    """The program's placement in words, then each variable's device as TensorFlow placed it."""
    chosen = program(name)
    lines = [f"== Where the {name} program's variables live", ""]
    lines += textwrap.wrap(chosen.placement, 96, initial_indent="   ", subsequent_indent="   ")
    if chosen.shape == SESSION:
        devices, seen = graph_devices(sources_dir, Path(chosen.cluster).stem), "its graph, built here"
    elif measured := measured_devices(s, name):
        devices, source = measured
        seen = f"its cluster, probed by the bench of {_relative(source, s.root)}"
    else:
        return lines + ["", f"   not measured yet: its variables are made by its strategy, in its running cluster; "
                            f"`invoke bench --programs {name}` probes it and keeps what it saw"]
    width = max(map(len, devices), default=0)
    lines += ["", f"   as TensorFlow placed them ({seen}):"]
    lines += [f"   {variable:<{width}}  {device}" for variable, device in devices.items()]
    return lines + ["", f"   every model variable lives on: {', '.join(sorted(set(devices.values())))}"]


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
