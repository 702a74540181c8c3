"""The tf2 programs compute what the tutorial's TF1 graph computes: same weights, same batch,
same logits and loss (issue: correctness of the port).

Real TensorFlow, in a child process: cifar10.py switches TensorFlow 2 behaviour off when it is
imported and the tf2 trainer switches it back on, which must not leak into the test process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from reprokit.sources import workspace
from tests.support import REPO

TOLERANCE = 1e-5

# Builds the tutorial's graph (cifar10.inference, cifar10.loss) in a tf.Graph and runs it in a
# session; then the tf2 trainer's model (make_template) in eager mode, given the graph's weights.
COMPARE = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.argv = ["compare"]
    import cifar10_tf2_standalone_train as trainer  # imports cifar10, then turns TF2 back on
    import cifar10
    import tensorflow as tf
    tf.compat.v1.app.flags.FLAGS(["compare", "--data_dir=/nonexistent"])
    size, batch = cifar10.IMAGE_SIZE, tf.compat.v1.app.flags.FLAGS.batch_size
    rng = np.random.default_rng(7)
    images = rng.standard_normal((batch, size, size, 3)).astype(np.float32)
    labels = rng.integers(0, cifar10.NUM_CLASSES, batch).astype(np.int32)

    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, images.shape)
        y = tf.compat.v1.placeholder(tf.int32, labels.shape)
        logits = cifar10.inference(x)
        total = cifar10.loss(logits, y)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            weights = {v.op.name: sess.run(v) for v in tf.compat.v1.trainable_variables()}
            tf1_logits, tf1_loss = sess.run([logits, total], {x: images, y: labels})

    model, tf2_weights, averages = trainer.build_model()
    for name, variable in tf2_weights.items():
        variable.assign(weights[name])

    @tf.function
    def forward(images, labels):
        logits = model(images)
        return logits, cifar10.loss(logits, labels)

    tf2_logits, tf2_loss = forward(images, labels)
    print(json.dumps({
        "tf1_names": sorted(weights), "tf2_names": sorted(tf2_weights),
        "averages": sorted(averages), "logits_max_diff": float(np.max(np.abs(tf1_logits - tf2_logits.numpy()))),
        "tf1_loss": float(tf1_loss), "tf2_loss": float(tf2_loss),
    }))
""")


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    sources = tmp_path_factory.mktemp("port") / "patched"
    workspace.apply_all(REPO / "upstream", REPO / "patches", sources)
    result = subprocess.run([sys.executable, "-c", COMPARE], cwd=sources, capture_output=True, text=True,
                            timeout=300, env={"PYTHONPATH": str(sources), "PATH": "/usr/bin:/bin",
                                              "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert 0 == result.returncode, result.stderr[-3000:]
    found: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


def test_the_tf2_model_has_the_tutorials_ten_variables_by_their_names(compared):
    assert compared["tf1_names"] == compared["tf2_names"]
    assert 10 == len(compared["tf2_names"])  # type: ignore[arg-type]
    assert [f"{name}/ExponentialMovingAverage" for name in compared["tf1_names"]] == compared["averages"]  # type: ignore[union-attr]


def test_same_weights_and_batch_give_the_same_logits_and_loss(compared):
    """Within 1e-5: the loss includes the weight decay terms, as the tutorial's does."""
    assert compared["logits_max_diff"] < TOLERANCE  # type: ignore[operator]
    assert abs(compared["tf1_loss"] - compared["tf2_loss"]) < TOLERANCE  # type: ignore[operator]
    assert compared["tf1_loss"] > 2.31  # type: ignore[operator]  # ln(10) plus weight decay: the decay is in

