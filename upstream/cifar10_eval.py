# Copyright 2015 The TensorFlow Authors. All Rights Reserved.
# Port to TensorFlow 2.x (tf.compat.v1) for the reproducibility kit; see UPSTREAM.md.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================

"""Evaluates the CIFAR-10 model: precision @ 1 on the test set.

It reads the newest checkpoint a trainer wrote into --checkpoint_dir, loads the
moving averages of the weights into the model (not the raw weights: the
averages predict better), and counts how often the top logit is the label.

The tutorial reports 83.0% after 100K steps; on a Tesla K40 a batch of 128
takes 0.25-0.35 s (350-600 images/sec), and the model reaches about 86% after
100K steps, 8 hours of training.

With --run_once=False (the default) it evaluates again every
--eval_interval_secs, beside a trainer that is still running.

Usage:

python cifar10_eval.py --checkpoint_dir=/tmp/cifar10_train --run_once
"""
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

from datetime import datetime
import math
import time

import numpy as np
import tensorflow.compat.v1 as tf

import cifar10

FLAGS = tf.app.flags.FLAGS

tf.app.flags.DEFINE_string('eval_dir', '/tmp/cifar10_eval',
                           """Directory where to write event logs.""")
tf.app.flags.DEFINE_string('eval_data', 'test',
                           """Either 'test' or 'train_eval'.""")
tf.app.flags.DEFINE_string('checkpoint_dir', '/tmp/cifar10_train',
                           """Directory where to read model checkpoints.""")
tf.app.flags.DEFINE_integer('eval_interval_secs', 60 * 5,
                            """How often to run the eval.""")
tf.app.flags.DEFINE_integer('num_examples', 10000,
                            """Number of examples to run.""")
tf.app.flags.DEFINE_boolean('run_once', False,
                            """Whether to run eval only once.""")


def eval_once(saver, summary_writer, top_k_op, summary_op):
  """Evaluates the newest checkpoint once.

  Args:
    saver: restores the moving averages into the model's variables.
    summary_writer: writes the eval summaries.
    top_k_op: per example of a batch, whether the top logit is the label.
    summary_op: the merged summaries of the graph.
  """
  with tf.Session() as sess:
    state = tf.train.get_checkpoint_state(FLAGS.checkpoint_dir)
    if not (state and state.model_checkpoint_path):
      print('No checkpoint file found')
      return
    saver.restore(sess, state.model_checkpoint_path)
    # The step is in the file name: .../model.ckpt-999.
    global_step = state.model_checkpoint_path.split('/')[-1].split('-')[-1]

    # The eval queue's reader threads, under a coordinator that can stop them.
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    try:
      # Whole batches only: the last one wraps around to the first records,
      # so slightly more examples are counted than were asked for.
      num_iter = int(math.ceil(FLAGS.num_examples / FLAGS.batch_size))
      total_sample_count = num_iter * FLAGS.batch_size
      true_count = 0
      step = 0
      while step < num_iter and not coord.should_stop():
        predictions = sess.run([top_k_op])
        true_count += np.sum(predictions)
        step += 1

      precision = true_count / total_sample_count
      print('%s: precision @ 1 = %.3f' % (datetime.now(), precision))

      summary = tf.Summary()
      summary.ParseFromString(sess.run(summary_op))
      summary.value.add(tag='Precision @ 1', simple_value=precision)
      summary_writer.add_summary(summary, global_step)
    except Exception as e:  # pylint: disable=broad-except
      # The coordinator keeps it; join() below raises it again.
      coord.request_stop(e)

    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=10)


def evaluate():
  """Evaluates CIFAR-10 once, or every eval_interval_secs."""
  with tf.Graph().as_default() as g:
    # The test set (or the training set), central crops, in file order.
    eval_data = FLAGS.eval_data == 'test'
    images, labels = cifar10.inputs(eval_data=eval_data)

    # The model, as the trainers build it.
    logits = cifar10.inference(images)

    # Right or wrong, per example: is the label the top prediction?
    top_k_op = tf.nn.in_top_k(logits, labels, 1)

    # Each variable is restored from its moving average in the checkpoint.
    variable_averages = tf.train.ExponentialMovingAverage(
        cifar10.MOVING_AVERAGE_DECAY)
    variables_to_restore = variable_averages.variables_to_restore()
    saver = tf.train.Saver(variables_to_restore)

    summary_op = tf.summary.merge_all()
    summary_writer = tf.summary.FileWriter(FLAGS.eval_dir, g)

    while True:
      eval_once(saver, summary_writer, top_k_op, summary_op)
      if FLAGS.run_once:
        break
      time.sleep(FLAGS.eval_interval_secs)


def main(argv=None):  # pylint: disable=unused-argument
  cifar10.maybe_download_and_extract()
  if tf.gfile.Exists(FLAGS.eval_dir):
    tf.gfile.DeleteRecursively(FLAGS.eval_dir)
  tf.gfile.MakeDirs(FLAGS.eval_dir)
  evaluate()


if __name__ == '__main__':
  tf.app.run()
