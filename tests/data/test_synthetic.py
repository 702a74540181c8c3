"""Generated data: exact layout, deterministic, balanced, learnable, written atomically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reprokit.data import cifar_format, synthetic
from reprokit.data.cifar_format import (
    BATCHES_FOLDER,
    CLASS_NAMES,
    DATA_FILES,
    META_FILE,
    RECORD_BYTES,
    verify_batches,
)
from reprokit.data.synthetic import (
    MARKER_FILE,
    NOTE_FILE,
    SyntheticParams,
    read_marker,
    write_synthetic,
)
from reprokit.errors import DataError
from tests.support.cifar import decode_records, train_and_test_records


def _bytes_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _distort(planes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The tutorial's training distortions, in its order, in numpy: [n, 24, 24, 3] floats."""
    images = planes.transpose(0, 2, 3, 1).astype(np.float64)
    out = np.empty((len(images), 24, 24, 3))
    for i, image in enumerate(images):
        y, x = rng.integers(0, 9, size=2)
        crop = image[y:y + 24, x:x + 24]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        crop = crop + rng.uniform(-63, 63)
        mean = crop.mean(axis=(0, 1))
        crop = (crop - mean) * rng.uniform(0.2, 1.8) + mean
        out[i] = (crop - crop.mean()) / max(crop.std(), 1.0 / np.sqrt(crop.size))
    return out


def _nearest_centroid_accuracy(train: np.ndarray, train_labels: np.ndarray,
                               test: np.ndarray, test_labels: np.ndarray) -> float:
    centroids = np.stack([train[train_labels == c].mean(axis=0) for c in range(10)])
    distances = ((test[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    return float(np.mean(distances.argmin(axis=1) == test_labels))


def _load(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    return decode_records((folder / name).read_bytes())


def test_generated_files_have_the_exact_cifar_layout(tmp_path: Path) -> None:
    """Six files of records_per_file records, the class names, and a folder that verifies."""
    folder = tmp_path / BATCHES_FOLDER
    write_synthetic(folder, records_per_file=20)
    info = verify_batches(folder)
    assert [20 * RECORD_BYTES] * 6 == [(folder / n).stat().st_size for n in DATA_FILES]
    assert [20] * 6 == [f.records for f in info.files]
    assert list(CLASS_NAMES) == (folder / META_FILE).read_text().split()


def test_the_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    """Two runs with one seed write the same bytes; another seed writes other bytes."""
    write_synthetic(tmp_path / "a", records_per_file=20, seed=3)
    write_synthetic(tmp_path / "b", records_per_file=20, seed=3)
    write_synthetic(tmp_path / "c", records_per_file=20, seed=4)
    assert _bytes_of(tmp_path / "a") == _bytes_of(tmp_path / "b")
    first = "data_batch_1.bin"
    assert _bytes_of(tmp_path / "a")[first] != _bytes_of(tmp_path / "c")[first]


def test_the_files_differ_from_each_other(tmp_path: Path) -> None:
    """Each file has its own images, so the test batch is not a copy of a training batch."""
    write_synthetic(tmp_path / "a", records_per_file=20)
    contents = _bytes_of(tmp_path / "a")
    assert 6 == len({contents[n] for n in DATA_FILES})


def test_labels_are_balanced_across_classes(tmp_path: Path) -> None:
    """Without random labels every class has the same count, or one more when records do not
    divide by ten (with them, the images' classes still are)."""
    write_synthetic(tmp_path / "even", records_per_file=30, random_labels=0.0)
    write_synthetic(tmp_path / "odd", records_per_file=25, random_labels=0.0)
    even = verify_batches(tmp_path / "even")
    odd = verify_batches(tmp_path / "odd")
    assert [(3,) * 10] * 6 == [f.label_counts for f in even.files]
    assert all(set(f.label_counts) == {2, 3} and sum(f.label_counts) == 25 for f in odd.files)


def test_the_folder_says_it_is_generated_and_with_what(tmp_path: Path) -> None:
    """The marker records the parameters and the note tells a person it is not CIFAR-10."""
    folder = tmp_path / BATCHES_FOLDER
    write_synthetic(folder, records_per_file=20, seed=5)
    assert SyntheticParams(records_per_file=20, seed=5) == read_marker(folder)
    note = (folder / NOTE_FILE).read_text()
    assert "GENERATED data, not CIFAR-10" in note
    assert "seed 5, 20" in note


def test_a_folder_without_a_marker_is_not_generated(tmp_path: Path) -> None:
    """read_marker answers None for a folder the generator did not write."""
    assert None is read_marker(tmp_path)


def test_a_damaged_marker_is_reported(tmp_path: Path) -> None:
    """A marker that is not the generator's JSON raises DataError naming it."""
    (tmp_path / MARKER_FILE).write_text("{not json")
    with pytest.raises(DataError, match=MARKER_FILE):
        read_marker(tmp_path)


def _colour_accuracy(folder: Path) -> float:
    """How well each image's channel means, after the training distortions, classify the test batch
    (nearest class centroid of the training file's)."""
    rng = np.random.default_rng(0)
    train_labels, train = _load(folder, "data_batch_1.bin")
    test_labels, test = _load(folder, "test_batch.bin")
    features = [_distort(p, rng).mean(axis=(1, 2)) for p in (train, test)]
    return _nearest_centroid_accuracy(features[0], train_labels, features[1], test_labels)


def test_the_class_colour_survives_the_training_distortions(tmp_path: Path) -> None:
    """At full signal, after crop, flip, brightness, contrast and standardisation, channel means
    still classify."""
    write_synthetic(tmp_path / BATCHES_FOLDER, records_per_file=300, signal=1.0)
    accuracy = _colour_accuracy(tmp_path / BATCHES_FOLDER)
    assert accuracy > 0.5, f"channel-mean accuracy {accuracy:.2f} is near chance (0.1)"


def test_at_the_default_signal_colour_alone_gives_little_away(tmp_path: Path) -> None:
    """The default (calibrated) signal hides the colour under the per-image jitter: the trainer
    must learn the stripes, which takes it most of the article's 1000 steps (docs/learning.md)."""
    write_synthetic(tmp_path / BATCHES_FOLDER, records_per_file=300)
    assert synthetic.DEFAULT_SIGNAL < 1.0
    assert _colour_accuracy(tmp_path / BATCHES_FOLDER) < 0.35


def test_the_signal_is_recorded_and_checked(tmp_path: Path) -> None:
    """The marker says how strong the classes were made; a folder of another signal is another data set."""
    write_synthetic(tmp_path / "weak", records_per_file=20, signal=0.25)
    assert SyntheticParams(20, 0, 0.25) == read_marker(tmp_path / "weak")
    assert "class signal 0.25" in (tmp_path / "weak" / NOTE_FILE).read_text()
    with pytest.raises(ValueError, match="signal must be in"):
        write_synthetic(tmp_path / "none", records_per_file=20, signal=0.0)


def test_a_share_of_labels_is_drawn_at_random_over_the_same_images(tmp_path: Path) -> None:
    """The marker records the share; the images are those of a folder without random labels, and
    about the share times 9/10 of the label bytes differ from the class each image shows."""
    write_synthetic(tmp_path / "kept", records_per_file=3000, random_labels=0.0)
    write_synthetic(tmp_path / "drawn", records_per_file=3000, random_labels=0.3)
    assert SyntheticParams(3000, 0, random_labels=0.3) == read_marker(tmp_path / "drawn")
    assert "30% of the labels drawn at random" in (tmp_path / "drawn" / NOTE_FILE).read_text()
    for name in ("data_batch_1.bin", "test_batch.bin"):
        (shown, images), (labels, same_images) = (_load(tmp_path / f, name) for f in ("kept", "drawn"))
        assert np.array_equal(images, same_images)
        assert 0.27 - 0.03 < float(np.mean(shown != labels)) < 0.27 + 0.03
    with pytest.raises(ValueError, match="random_labels must be in"):
        write_synthetic(tmp_path / "all", records_per_file=20, random_labels=1.0)


def test_the_class_stripes_survive_the_training_distortions(tmp_path: Path) -> None:
    """With colour removed, the shift- and flip-blind spectrum of the stripes still classifies."""
    folder = tmp_path / BATCHES_FOLDER
    write_synthetic(folder, records_per_file=300)
    rng = np.random.default_rng(0)
    train_labels, train = _load(folder, "data_batch_1.bin")
    test_labels, test = _load(folder, "test_batch.bin")
    features = []
    for planes in (train, test):
        grey = _distort(planes, rng).mean(axis=3)
        spectrum = np.abs(np.fft.fft2(grey))
        spectrum = spectrum + spectrum[:, :, ::-1]  # a left-right flip mirrors the spectrum
        spectrum[:, 0, 0] = 0.0
        features.append(spectrum.reshape(len(grey), -1) / spectrum.sum(axis=(1, 2))[:, None])
    accuracy = _nearest_centroid_accuracy(features[0], train_labels, features[1], test_labels)
    assert accuracy > 0.5, f"stripe accuracy {accuracy:.2f} is near chance (0.1)"


def _class_colours(labels: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """Per class, the mean colour balance of its images: each channel's mean minus the image's."""
    means = planes.astype(np.float64).mean(axis=(2, 3))
    balance = means - means.mean(axis=1, keepdims=True)
    return np.stack([balance[labels == c].mean(axis=0) for c in range(10)])


def test_the_test_batch_carries_the_training_classes_colours(tmp_path: Path) -> None:
    """Each class's mean colour in test_batch.bin is its own in the training files, far closer
    to it than to any other class's, so a model trained on one is measured fairly on the other."""
    folder = tmp_path / BATCHES_FOLDER
    write_synthetic(folder, records_per_file=300, signal=1.0)
    train = _class_colours(*_load(folder, "data_batch_1.bin"))
    test = _class_colours(*_load(folder, "test_batch.bin"))
    distances = np.linalg.norm(test[:, None, :] - train[None, :, :], axis=2)  # [test class, train class]
    assert list(range(10)) == list(distances.argmin(axis=1))
    other_classes = distances[~np.eye(10, dtype=bool)]
    assert distances.diagonal().max() < 0.5 * other_classes.min()


def test_an_existing_generated_folder_is_replaced(tmp_path: Path) -> None:
    """Writing again with other parameters replaces the old generated folder whole."""
    folder = tmp_path / BATCHES_FOLDER
    write_synthetic(folder, records_per_file=20)
    write_synthetic(folder, records_per_file=30)
    assert [30] * 6 == [f.records for f in verify_batches(folder).files]
    assert SyntheticParams(30, 0) == read_marker(folder)


def test_a_folder_of_other_data_is_never_replaced(tmp_path: Path) -> None:
    """A folder without the marker (real CIFAR-10, say) is refused and left untouched."""
    folder = tmp_path / BATCHES_FOLDER
    folder.mkdir()
    (folder / "data_batch_1.bin").write_bytes(b"real")
    with pytest.raises(DataError) as caught:
        write_synthetic(folder, records_per_file=20)
    assert str(folder) in caught.value.message
    assert "--data-dir" in caught.value.hint
    assert ["data_batch_1.bin"] == [p.name for p in folder.iterdir()]


def test_a_failure_while_writing_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If writing stops half-way (here: a disk error on the third file) no folder appears."""
    real_encode = cifar_format.encode_records
    calls = []

    def failing_encode(labels: np.ndarray, planes: np.ndarray) -> bytes:
        calls.append(len(labels))
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_encode(labels, planes)

    monkeypatch.setattr(synthetic, "encode_records", failing_encode)
    with pytest.raises(OSError, match="No space left"):
        write_synthetic(tmp_path / BATCHES_FOLDER, records_per_file=20)
    assert [] == list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_full_size_set_has_the_shape_of_the_real_one(tmp_path: Path) -> None:
    """At the default size every file is 30,730,000 bytes with 1000 images of each class, and
    about 1000 labels of each once the random share is drawn (a count's sd is about 9)."""
    folder = tmp_path / BATCHES_FOLDER
    write_synthetic(folder)
    info = verify_batches(folder)
    assert [30730000] * 6 == [f.size for f in info.files]
    assert all(950 < count < 1050 for f in info.files for count in f.label_counts)
    assert (50000, 10000) == train_and_test_records(info)
