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

"""Trains the CIFAR-10 model on several GPUs with synchronous updates.

Each GPU holds one copy of the model (a "tower"). Every tower reads its own
batch through its own input pipeline, computes a loss and its gradients; the
CPU averages the towers' gradients and applies them to the shared variables,
which it also holds.

The kit never trains with this file as it is: the two patches in ../patches/
turn it into the standalone and the cluster trainer of the 2017 article, and
the lines they touch sit at the very positions the article's diffs name.

Usage:

python cifar10_multi_gpu_train.py --num_gpus=2 --data_dir=/tmp/cifar10_data
"""
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

from datetime import datetime
import os.path
import re
import time

import numpy as np
from six.moves import xrange  # pylint: disable=redefined-builtin
import tensorflow.compat.v1 as tf

import cifar10

FLAGS = tf.app.flags.FLAGS

tf.app.flags.DEFINE_string('train_dir', '/tmp/cifar10_train',
                           """Directory for event logs and checkpoints.""")
tf.app.flags.DEFINE_integer('max_steps', 1000000,
                            """Number of batches to run.""")
tf.app.flags.DEFINE_integer('num_gpus', 1,
                            """How many GPUs to use.""")
tf.app.flags.DEFINE_boolean('log_device_placement', False,
                            """Whether to log device placement.""")


def tower_loss(scope):
  """Builds one tower's model and returns that tower's total loss.

  Every tower calls this, so every tower builds its own input pipeline: a
  cluster of N workers prints the "Filling queue" line N times.

  Args:
    scope: the tower's name prefix, e.g. 'tower_0'.

  Returns:
    A scalar Tensor: the total loss of one batch on this tower.
  """
  # This tower's own input pipeline: its reader, queue and preprocessing.
  images, labels = cifar10.distorted_inputs()

  # The model, on this tower.
  logits = cifar10.inference(images)

  # cifar10.loss() adds the cross entropy to the 'losses' collection, beside
  # the weight decay terms; the total is summed below, per tower.
  _ = cifar10.loss(logits, labels)

  # Only this tower's losses: the collection holds every tower's.
  losses = tf.get_collection('losses', scope)

  # This tower's total loss.
  total_loss = tf.add_n(losses, name='total_loss')

  # A summary of every loss term, named without the tower prefix so that
  # TensorBoard shows the same names whatever the number of towers.
  for l in losses + [total_loss]:
    loss_name = re.sub('%s_[0-9]*/' % cifar10.TOWER_NAME, '', l.op.name)
    tf.summary.scalar(loss_name, l)

  return total_loss


def average_gradients(tower_grads):
  """Averages each shared variable's gradient over all towers.

  The towers synchronise here: no update before every tower's gradients.

  Args:
    tower_grads: one list of (gradient, variable) pairs per tower.

  Returns:
    One list of (gradient, variable) pairs, the gradients averaged.
  """
  average_grads = []
  for grad_and_vars in zip(*tower_grads):
    # grad_and_vars: ((grad0_gpu0, var0_gpu0), ... , (grad0_gpuN, var0_gpuN))
    grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]

    # Stack along a new 'tower' axis and average over it.
    grad = tf.concat(axis=0, values=grads)
    grad = tf.reduce_mean(grad, 0)

    # The variable is shared, so the first tower's pointer names it.
    v = grad_and_vars[0][1]
    average_grads.append((grad, v))
  return average_grads


def train():
  """Trains CIFAR-10 for FLAGS.max_steps steps."""
  with tf.Graph().as_default(), tf.device('/cpu:0'):
    # Counts apply_gradients calls: number of batches processed * FLAGS.num_gpus.
    global_step = tf.get_variable(
        'global_step', [],
        initializer=tf.constant_initializer(0), trainable=False)

    # The learning rate schedule: the rate decays by steps.
    num_batches_per_epoch = (cifar10.NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN /
                             FLAGS.batch_size)
    decay_steps = int(num_batches_per_epoch * cifar10.NUM_EPOCHS_PER_DECAY)
    lr = tf.train.exponential_decay(cifar10.INITIAL_LEARNING_RATE,
                                    global_step,
                                    decay_steps,
                                    cifar10.LEARNING_RATE_DECAY_FACTOR,
                                    staircase=True)

    opt = tf.train.GradientDescentOptimizer(lr)

    # Every tower's gradients.
    tower_grads = []
    with tf.variable_scope(tf.get_variable_scope()):
      for i in xrange(FLAGS.num_gpus):
        with tf.device('/gpu:%d' % i):
          with tf.name_scope('%s_%d' % (cifar10.TOWER_NAME, i)) as scope:
            # One tower of the model; its variables are shared by all towers.
            loss = tower_loss(scope)

            # The next tower reuses these variables.
            tf.get_variable_scope().reuse_variables()

            # The summaries of the last tower are the ones kept.
            summaries = tf.get_collection(tf.GraphKeys.SUMMARIES, scope)

            # This tower's gradients for its batch.
            grads = opt.compute_gradients(loss)
            tower_grads.append(grads)

    # The synchronisation point: the mean gradient over all towers.
    grads = average_gradients(tower_grads)

    # Track the learning rate and the gradients in TensorBoard.
    summaries.append(tf.summary.scalar('learning_rate', lr))
    for grad, var in grads:
      if grad is not None:
        summaries.append(tf.summary.histogram(var.op.name + '/gradients', grad))

    # One update of the shared variables.
    apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)

    # And the variables themselves.
    for var in tf.trainable_variables():
      summaries.append(tf.summary.histogram(var.op.name, var))

    # Moving averages of the weights, which evaluation uses.
    variable_averages = tf.train.ExponentialMovingAverage(
        cifar10.MOVING_AVERAGE_DECAY, global_step)
    variables_averages_op = variable_averages.apply(tf.trainable_variables())

    # One training step: the update and the averages together.
    train_op = tf.group(apply_gradient_op, variables_averages_op)
    saver = tf.train.Saver(tf.global_variables())
    summary_op = tf.summary.merge(summaries)
    init = tf.global_variables_initializer()

    # Soft placement lets '/gpu:%d' fall back to the CPU where an op, or the
    # machine, has no GPU.
    sess = tf.Session(config=tf.ConfigProto(
        allow_soft_placement=True,
        log_device_placement=FLAGS.log_device_placement))
    sess.run(init)
    # The input pipelines' threads start filling their queues now.
    tf.train.start_queue_runners(sess=sess)
    summary_writer = tf.summary.FileWriter(FLAGS.train_dir, sess.graph)
    for step in xrange(FLAGS.max_steps):
      start_time = time.time()
      _, loss_value = sess.run([train_op, loss])
      duration = time.time() - start_time
      assert not np.isnan(loss_value), 'Model diverged with loss = NaN'

      if step % 10 == 0:
        num_examples_per_step = FLAGS.batch_size * FLAGS.num_gpus
        examples_per_sec = num_examples_per_step / duration
        sec_per_batch = duration / FLAGS.num_gpus

        format_str = ('%s: step %d, loss = %.2f (%.1f examples/sec; %.3f '
                      'sec/batch)')
        print (format_str % (datetime.now(), step, loss_value,
                             examples_per_sec, sec_per_batch))

      if step % 100 == 0:
        summary_str = sess.run(summary_op)
        summary_writer.add_summary(summary_str, step)

      # A checkpoint now and then, and always after the last step.
      if step % 1000 == 0 or (step + 1) == FLAGS.max_steps:
        checkpoint_path = os.path.join(FLAGS.train_dir, 'model.ckpt')
        saver.save(sess, checkpoint_path, global_step=step)


def main(argv=None):  # pylint: disable=unused-argument
  cifar10.maybe_download_and_extract()
  if tf.gfile.Exists(FLAGS.train_dir):
    tf.gfile.DeleteRecursively(FLAGS.train_dir)
  tf.gfile.MakeDirs(FLAGS.train_dir)
  train()


if __name__ == '__main__':
  tf.app.run()
