"""Generated stand-in for CIFAR-10 when the real set cannot be downloaded.

The files have the exact binary layout, so the unmodified trainer reads them, and the images
carry a class signal that survives the tutorial's distortions (random 24x24 crop, left-right
flip, brightness, contrast, per-image standardisation), so the loss really falls:

* colour balance: each class pushes the three channels apart in its own direction; brightness
  adds the same amount to every channel and contrast scales around each channel's own mean, so
  the difference between channel means outlives both and the standardisation only rescales it;
* a grating of class-specific orientation and wavelength with a random phase per image, so a
  crop or a shift shows the same pattern; the wavelengths (5-11 px) fit inside a 24 px crop.

Per-image brightness, contrast, colour jitter and pixel noise, and a class signal weakened to
DEFAULT_SIGNAL of the strengths below, keep it from being trivial: at full strength the trainer
learned it completely in a few hundred steps, after which a cluster that learns five times more
slowly reached the same precision; at the default it is still learning until about step 750
(measured in docs/learning.md). A share of the labels, DEFAULT_RANDOM_LABELS, is drawn at random,
in the test batch as in the training files, so no trainer can be right on every image: the
standalone ends near 0.83 instead of on a plateau of 0.91 that is hard to tell from 1 at a glance.
Precision on it compares how two programs learn, and says nothing about CIFAR-10; step times mean
exactly what they mean on the real set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from reprokit.data.cifar_format import (
    CLASS_NAMES,
    DATA_FILES,
    DEPTH,
    HEIGHT,
    META_FILE,
    NUM_CLASSES,
    WIDTH,
    encode_records,
)
from reprokit.errors import DataError
from reprokit.files import staged_folder

MARKER_FILE = "synthetic.json"
NOTE_FILE = "README.synthetic.txt"
GENERATOR = "reprokit.synthetic"
FORMAT_VERSION = 3  # bump whenever the images change, so old folders are regenerated
# How strong each class's colour balance and grating are, as a share of the strengths below.
# 1.0 is learned completely within a few hundred steps, after which two trainings cannot differ;
# at 0.12 the trainer takes off at a step that moves from run to run, and a correct cluster was
# judged DIFFERENT; at 0.2 it is at 0.83 at step 500 and 0.91 from step 750 (docs/learning.md).
DEFAULT_SIGNAL = 0.2
# The share of records whose label byte is drawn uniformly from the ten classes (so a tenth of them
# keep their class): the best precision @ 1 is then (1 - share) x the trainer's own + share / 10.
# At signal 0.2 alone the standalone ended at 0.910 and 0.912, above the 0.9 a run must stay below
# to show it has not learned everything; a lower signal moves the take-off later, where its start
# varies from run to run (0.12 above). Random labels lower the ceiling and leave the take-off be.
DEFAULT_RANDOM_LABELS = 0.1

_CHUNK = 2500  # records made at a time: bounds memory; fixed, because the byte stream depends on it
_COLOUR_AMPLITUDE = 40.0
_GRATING_AMPLITUDE = 35.0
_NOISE_SIGMA = 20.0
_COLOUR_JITTER = 8.0

_NOTE = """\
This folder holds GENERATED data, not CIFAR-10.

It was written by reprokit.synthetic (format version {version}) with seed {seed}, {records}
records per file, class signal {signal} and {random_labels:.0%} of the labels drawn at random,
because the real data set was not available or was not asked for.
The files have the real binary layout (3073-byte records: 1 label byte, 1024 R, 1024 G,
1024 B), so the trainer reads them unchanged, and each class has its own colour balance and
stripe pattern, so the loss falls when training.

Precision measured on this data compares how two programs learn; it says nothing about
CIFAR-10. Speed comparisons (examples/sec, sec/batch) still hold, because the trainer does the
same work per record.
"""


@dataclass(frozen=True)
class SyntheticParams:
    """What a generated folder was made with, as recorded in its marker file."""

    records_per_file: int
    seed: int
    signal: float = DEFAULT_SIGNAL
    random_labels: float = DEFAULT_RANDOM_LABELS
    version: int = FORMAT_VERSION


def write_synthetic(folder: Path, records_per_file: int = 10000, seed: int = 0,
                    signal: float = DEFAULT_SIGNAL, random_labels: float = DEFAULT_RANDOM_LABELS) -> None:
    """Write a generated ``cifar-10-batches-bin`` folder at ``folder``, atomically.

    The same arguments give byte-identical files. An existing generated folder is replaced;
    a folder holding anything else (real CIFAR-10, say) is never touched.
    """
    if records_per_file < 1:
        raise ValueError(f"records_per_file must be at least 1, not {records_per_file}")
    if not 0.0 < signal <= 4.0:
        raise ValueError(f"signal must be in (0, 4], not {signal}")
    if not 0.0 <= random_labels < 1.0:
        raise ValueError(f"random_labels must be in [0, 1), not {random_labels}")
    if folder.exists() and read_marker(folder) is None and any(folder.iterdir()):
        raise DataError(
            f"{folder} already holds data that was not generated by the kit; "
            "refusing to replace it with generated data",
            "pass another --data-dir, or delete the folder first if you really mean it",
        )
    params = SyntheticParams(records_per_file, seed, signal, random_labels)
    with staged_folder(folder) as staging:
        for index, name in enumerate(DATA_FILES):
            rng = np.random.default_rng([seed, index])
            with open(staging / name, "wb") as out:
                for labels, planes in _chunks(rng, records_per_file, signal, random_labels):
                    out.write(encode_records(labels, planes))
        (staging / META_FILE).write_text("\n".join(CLASS_NAMES) + "\n", "ascii")
        (staging / NOTE_FILE).write_text(
            _NOTE.format(version=params.version, seed=seed, records=records_per_file, signal=signal,
                         random_labels=random_labels), "ascii"
        )
        # The marker is the params, field for field, so read_marker gives back what was written.
        fields = asdict(params)
        marker = {"generator": GENERATOR, "format_version": fields.pop("version"), **fields}
        (staging / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n", "ascii")


def read_marker(folder: Path) -> SyntheticParams | None:
    """The parameters a generated folder was made with, or None if it is not a generated one."""
    path = folder / MARKER_FILE
    if not path.is_file():
        return None
    try:
        marker = json.loads(path.read_text("utf-8"))
        return SyntheticParams(
            records_per_file=int(marker["records_per_file"]),
            seed=int(marker["seed"]),
            signal=float(marker.get("signal", 1.0)),  # format 1 had no knob: its signal was 1.0
            random_labels=float(marker.get("random_labels", 0.0)),  # formats 1 and 2 kept every label
            version=int(marker["format_version"]),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(
            f"{path} is not a valid marker of generated data ({err})",
            f"delete {folder} and run `invoke data --source synthetic` again",
        ) from err


def _chunks(rng: np.random.Generator, records: int, signal: float,
            random_labels: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    # Balanced classes: every class's images appear records // 10 or records // 10 + 1 times.
    classes = rng.permutation(np.arange(records) % NUM_CLASSES).astype(np.uint8)
    for start in range(0, records, _CHUNK):
        part = classes[start:start + _CHUNK]
        images = _images(rng, part, signal)
        # The image shows its class; the label byte says a random one for this share of records.
        # Both draws are whole-chunk, so the images do not depend on the share.
        drawn = rng.random(len(part)) < random_labels
        random_class = rng.integers(0, NUM_CLASSES, size=len(part), dtype=np.uint8)
        yield np.where(drawn, random_class, part), images


def _images(rng: np.random.Generator, labels: np.ndarray, strength: float) -> np.ndarray:
    n = len(labels)
    colour, waves = _class_patterns()
    phase = rng.uniform(0.0, 2.0 * np.pi, size=(n, 1, 1)).astype(np.float32)
    grating = np.sin(waves[labels] + phase)[:, None, :, :]  # [n, 1, 32, 32]
    jitter = rng.normal(0.0, _COLOUR_JITTER, size=(n, DEPTH, 1, 1)).astype(np.float32)
    signal = strength * (colour[labels][:, :, None, None] + _GRATING_AMPLITUDE * grating) + jitter
    contrast = rng.uniform(0.6, 1.4, size=(n, 1, 1, 1)).astype(np.float32)
    brightness = rng.uniform(70.0, 180.0, size=(n, 1, 1, 1)).astype(np.float32)
    pixels = rng.standard_normal(size=(n, DEPTH, HEIGHT, WIDTH), dtype=np.float32)
    pixels *= _NOISE_SIGMA  # in place from here on: this loop is most of the generation time
    pixels += contrast * signal
    pixels += brightness
    np.rint(pixels, out=pixels)
    np.clip(pixels, 0, 255, out=pixels)
    return pixels.astype(np.uint8)


def _class_patterns() -> tuple[np.ndarray, np.ndarray]:
    """Per class: a channel offset ``[10, 3]`` and a grating phase map ``[10, 32, 32]``."""
    classes = np.arange(NUM_CLASSES)
    hue = 2.0 * np.pi * classes / NUM_CLASSES
    shifts = np.array([0.0, -2.0 * np.pi / 3.0, 2.0 * np.pi / 3.0])
    colour = _COLOUR_AMPLITUDE * np.cos(hue[:, None] + shifts[None, :])
    angle = np.deg2rad((classes * 36) % 180)
    wavelength = 32.0 / (3.0 + 1.5 * (classes % 3))  # 10.7, 7.1 or 5.3 pixels
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float64)
    along = np.cos(angle)[:, None, None] * x + np.sin(angle)[:, None, None] * y
    waves = 2.0 * np.pi * along / wavelength[:, None, None]
    return colour.astype(np.float32), waves.astype(np.float32)
