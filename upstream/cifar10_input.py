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

"""Reads the CIFAR-10 binary files and turns them into queued image batches."""

from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

import os

from six.moves import xrange  # pylint: disable=redefined-builtin
import tensorflow.compat.v1 as tf

# Training crops 24x24 patches out of the 32x32 images. The model's layer
# sizes follow from this number, so changing it means retraining from scratch.
IMAGE_SIZE = 24

# The data set's own facts.
NUM_CLASSES = 10
NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN = 50000
NUM_EXAMPLES_PER_EPOCH_FOR_EVAL = 10000


def read_cifar10(filename_queue):
  """Reads one record from the CIFAR-10 files named by a filename queue.

  Calling this N times gives N independent readers, which read in parallel.

  Args:
    filename_queue: a queue of strings with the file names to read from.

  Returns:
    An object with the fields:
      height, width, depth: 32, 32 and 3.
      key: a scalar string Tensor naming the file and record of this example.
      label: an int32 Tensor with the label, 0..9.
      uint8image: a [height, width, depth] uint8 Tensor with the image.
  """

  class CIFAR10Record(object):
    pass
  result = CIFAR10Record()

  # Each record is a label byte (CIFAR-100 has 2) followed by the image,
  # stored as three 32x32 planes: red, green, blue.
  label_bytes = 1
  result.height = 32
  result.width = 32
  result.depth = 3
  image_bytes = result.height * result.width * result.depth
  record_bytes = label_bytes + image_bytes

  # The files have no header or footer: every record has the same length.
  reader = tf.FixedLengthRecordReader(record_bytes=record_bytes)
  result.key, value = reader.read(filename_queue)

  # The record as a vector of uint8 values.
  record_bytes = tf.decode_raw(value, tf.uint8)

  # The first byte is the label.
  result.label = tf.cast(
      tf.strided_slice(record_bytes, [0], [label_bytes]), tf.int32)

  # The rest is the image in [depth, height, width] order; turn it into
  # [height, width, depth].
  depth_major = tf.reshape(
      tf.strided_slice(record_bytes, [label_bytes],
                       [label_bytes + image_bytes]),
      [result.depth, result.height, result.width])
  result.uint8image = tf.transpose(depth_major, [1, 2, 0])

  return result


def _generate_image_and_label_batch(image, label, min_queue_examples,
                                    batch_size, shuffle):
  """Builds a queue of images and labels and returns batches from it.

  Args:
    image: 3-D float32 Tensor of [height, width, 3].
    label: 1-D int32 Tensor.
    min_queue_examples: int32, the fewest examples kept in the queue; the
      batches are drawn from them.
    batch_size: examples per batch.
    shuffle: whether to draw the batches at random from the queue.

  Returns:
    images: 4-D Tensor of [batch_size, height, width, 3].
    labels: 1-D Tensor of [batch_size].
  """
  # Several threads read and preprocess examples and push them into the queue.
  num_preprocess_threads = 16
  if shuffle:
    images, label_batch = tf.train.shuffle_batch(
        [image, label],
        batch_size=batch_size,
        num_threads=num_preprocess_threads,
        capacity=min_queue_examples + 3 * batch_size,
        min_after_dequeue=min_queue_examples)
  else:
    images, label_batch = tf.train.batch(
        [image, label],
        batch_size=batch_size,
        num_threads=num_preprocess_threads,
        capacity=min_queue_examples + 3 * batch_size)

  # Show some training images in TensorBoard.
  tf.summary.image('images', images)

  return images, tf.reshape(label_batch, [batch_size])


def distorted_inputs(data_dir, batch_size):
  """Builds the training input: randomly distorted crops of the training set.

  Args:
    data_dir: path to the CIFAR-10 data folder.
    batch_size: examples per batch.

  Returns:
    images: 4D Tensor of [batch_size, IMAGE_SIZE, IMAGE_SIZE, 3].
    labels: 1D Tensor of [batch_size].
  """
  filenames = [os.path.join(data_dir, 'data_batch_%d.bin' % i)
               for i in xrange(1, 6)]
  for f in filenames:
    if not tf.gfile.Exists(f):
      raise ValueError('Failed to find file: ' + f)

  # A queue that yields the file names to read, in random order, forever.
  filename_queue = tf.train.string_input_producer(filenames)

  # One example from the files.
  read_input = read_cifar10(filename_queue)
  reshaped_image = tf.cast(read_input.uint8image, tf.float32)

  height = IMAGE_SIZE
  width = IMAGE_SIZE

  # Distortions that make the small training set look bigger.

  # A random [height, width] crop of the image.
  distorted_image = tf.random_crop(reshaped_image, [height, width, 3])

  # A random left-right flip.
  distorted_image = tf.image.random_flip_left_right(distorted_image)

  # Random brightness and contrast. These two do not commute; a random
  # order of the two would be one more distortion.
  distorted_image = tf.image.random_brightness(distorted_image,
                                               max_delta=63)
  distorted_image = tf.image.random_contrast(distorted_image,
                                             lower=0.2, upper=1.8)

  # Zero mean and unit variance per image.
  float_image = tf.image.per_image_standardization(distorted_image)

  # Static shapes for the batching ops.
  float_image.set_shape([height, width, 3])
  read_input.label.set_shape([1])

  # A well-mixed queue keeps batches from repeating the files' order.
  min_fraction_of_examples_in_queue = 0.4
  min_queue_examples = int(NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN *
                           min_fraction_of_examples_in_queue)
  print ('Filling queue with %d CIFAR images before starting to train. '
         'This will take a few minutes.' % min_queue_examples)

  # Batches of images and labels, drawn from that queue.
  return _generate_image_and_label_batch(float_image, read_input.label,
                                         min_queue_examples, batch_size,
                                         shuffle=True)


def inputs(eval_data, data_dir, batch_size):
  """Builds the evaluation input: central crops, no distortion.

  Args:
    eval_data: bool, whether to read the test set (True) or the training set.
    data_dir: path to the CIFAR-10 data folder.
    batch_size: examples per batch.

  Returns:
    images: 4D Tensor of [batch_size, IMAGE_SIZE, IMAGE_SIZE, 3].
    labels: 1D Tensor of [batch_size].
  """
  if not eval_data:
    filenames = [os.path.join(data_dir, 'data_batch_%d.bin' % i)
                 for i in xrange(1, 6)]
    num_examples_per_epoch = NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN
  else:
    filenames = [os.path.join(data_dir, 'test_batch.bin')]
    num_examples_per_epoch = NUM_EXAMPLES_PER_EPOCH_FOR_EVAL

  for f in filenames:
    if not tf.gfile.Exists(f):
      raise ValueError('Failed to find file: ' + f)

  # A queue that yields the file names to read.
  filename_queue = tf.train.string_input_producer(filenames)

  # One example from the files.
  read_input = read_cifar10(filename_queue)
  reshaped_image = tf.cast(read_input.uint8image, tf.float32)

  height = IMAGE_SIZE
  width = IMAGE_SIZE

  # Evaluation crops the central [height, width] square.
  resized_image = tf.image.resize_image_with_crop_or_pad(reshaped_image,
                                                         height, width)

  # Zero mean and unit variance per image.
  float_image = tf.image.per_image_standardization(resized_image)

  # Static shapes for the batching ops.
  float_image.set_shape([height, width, 3])
  read_input.label.set_shape([1])

  # A well-mixed queue keeps batches from repeating the files' order.
  min_fraction_of_examples_in_queue = 0.4
  min_queue_examples = int(num_examples_per_epoch *
                           min_fraction_of_examples_in_queue)

  # Batches of images and labels, in file order.
  return _generate_image_and_label_batch(float_image, read_input.label,
                                         min_queue_examples, batch_size,
                                         shuffle=False)
