"""The placement lesson: where the cluster program really puts the model's variables.

The article's cluster trainer wraps each tower in tf.device('/job:worker/task:%d/cpu:0') and
expects the ps to hold the shared model. But cifar10._variable_on_cpu opens its own
tf.device('/cpu:0'), which names only a device type: TensorFlow merges it with the enclosing
scope, so every variable is created where tower 0 is: /job:worker/task:0. The ps keeps only
global_step, the learning rate and the gradient averaging.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from reprokit import PACKAGE_PARENT, commands

LESSON = __doc__.split("\n\n", 1)[1].strip()


def variable_devices(sources_dir: Path, trainer: str = "cifar10_cluster_train",
                     variables_on_ps: bool = False) -> dict[str, str]:
    """Build the trainer's graph (no servers, no data) and return {variable: device}."""
    with tempfile.TemporaryDirectory(prefix="reprokit-placement-") as tmp:
        out = Path(tmp) / "placement.json"
        # The graph checks that the data files exist (and the trainer would download them
        # otherwise); building it reads none, so empty stand-ins do.
        batches = Path(tmp) / "data" / "cifar-10-batches-bin"
        batches.mkdir(parents=True)
        for i in range(1, 6):
            (batches / f"data_batch_{i}.bin").touch()
        argv = [sys.executable, "-m", "reprokit.bench.probe", "--sources", str(sources_dir), "--trainer", trainer,
                "--out", str(out), "--placement-only"] + (["--variables-on-ps"] if variables_on_ps else [])
        argv += ["--", f"--train_dir={tmp}/train", f"--data_dir={tmp}/data"]
        commands.run(argv, env={**os.environ, "PYTHONPATH": PACKAGE_PARENT}, tail_lines=10,
                     hint="is TensorFlow installed? (`pip install -e .`)")
        return dict(json.loads(out.read_text())["variables"])


def lesson_lines(devices: dict[str, str]) -> list[str]:
    """The lesson as text, with the devices TensorFlow reported."""
    width = max(map(len, devices), default=0)
    lines = ["== The placement lesson", ""] + ["   " + l for l in LESSON.splitlines()] + [""]
    lines += [f"   {name:<{width}}  {device}" for name, device in devices.items()]
    homes = sorted(set(devices.values()))
    lines += ["", f"   every model variable lives on: {', '.join(homes)}",
              "   cost: worker 1 fetches all 1,068,298 parameters (4.27 MB) from worker 0 every step, "
              "and worker 0 serves it while computing its own tower; `invoke bench` measures the cost."]
    return lines
