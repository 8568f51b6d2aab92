"""Image data: npz and tfds sources, normalisation, splits, augmentation, the resumable pipeline."""

import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import SHARED_DATA

from tf_vrre.workflows.image_classification import data

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)  # published training-set statistics


# ---- sources ------------------------------------------------------------------------------
def test_npz_parts_are_concatenated_in_order(image_data_dir):
    x, y, src = data.load_split("cifar10", "train", "npz", image_data_dir)
    assert src == "npz" and x.shape == (400, 32, 32, 3) and x.dtype == np.uint8 and y.dtype == np.int64
    with np.load(os.path.join(image_data_dir, "cifar10", "cifar10_train_part2of2.npz")) as z:
        np.testing.assert_array_equal(x[200:], z["x"])
    x100, y100, _ = data.load_split("cifar100", "test", "auto", image_data_dir)
    assert x100.shape[0] == 200 and y100.max() < 100
    assert data.resolve_source("auto", "cifar10", "test", image_data_dir) == "npz"
    assert data.resolve_source("auto", "svhn", "test", image_data_dir) == "tfds"  # no svhn files there


def test_source_errors_name_the_problem(image_data_dir, tmp_path):
    with pytest.raises(ValueError, match="dataset must be one of cifar10, cifar100, svhn_cropped"):
        data.load_split("mnist", "train", "npz", image_data_dir)
    with pytest.raises(ValueError, match="split of cifar10 must be one of train, test"):
        data.load_split("cifar10", "extra", "npz", image_data_dir)
    with pytest.raises(ValueError, match="source must be one of auto, npz, tfds"):
        data.load_split("cifar10", "test", "web", image_data_dir)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        data.load_split("cifar10", "test", "npz", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="svhn_cropped_test.npz"):
        data.load_split("svhn", "test", "npz", image_data_dir)
    bad = tmp_path / "cifar10"
    bad.mkdir()
    np.savez(bad / "cifar10_test.npz", x=np.zeros((3, 28, 28, 1), np.uint8), y=np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=r"uint8 images of shape \[n, 32, 32, 3\]"):
        data.load_split("cifar10", "test", "npz", str(tmp_path))
    np.savez(bad / "cifar10_test.npz", x=np.zeros((3, 32, 32, 3), np.uint8), y=np.array([0, 1, 10]))
    with pytest.raises(ValueError, match=r"labels must be integers in \[0, 9\]"):
        data.load_split("cifar10", "test", "npz", str(tmp_path))


def test_tfds_source_with_mock_data():
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=48):
        x, y, src = data.load_split("cifar10", "train", "tfds", download=False)
        assert src == "tfds" and x.shape == (48, 32, 32, 3) and x.dtype == np.uint8
        assert y.dtype == np.int64 and y.min() >= 0 and y.max() <= 9
        xs, ys, _ = data.load_split("svhn", "test", "tfds", download=False)
        assert xs.shape == (48, 32, 32, 3) and ys.max() <= 9
        train, (xh, yh), info = data.load_training_data("cifar100", "tfds", subset=32, holdout=8, download=False)
        assert train.size == 32 and len(xh) == 8 and info["source"] == "tfds" and train.num_classes == 100


# ---- normalisation and splits ---------------------------------------------------------------
def test_preprocessing_statistics_and_round_trip(image_data_dir):
    x, _, _ = data.load_split("cifar10", "train", "npz", image_data_dir)
    prep = data.Preprocessing.from_images(x)
    f = x.astype(np.float64) / 255.0
    np.testing.assert_allclose(prep.mean, f.mean(axis=(0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(prep.std, f.std(axis=(0, 1, 2)), rtol=1e-9)
    if os.path.exists(os.path.join(SHARED_DATA, "cifar10", "cifar10_test.npz")):  # 400 real images (conftest)
        np.testing.assert_allclose(prep.mean, CIFAR10_MEAN, atol=0.02)
    else:  # 400 synthetic images (_synthetic_images): colours and stripes symmetric about 127.5
        # plus N(0, 25^2) noise per pixel, so each channel's mean is 0.5 (clipping moves it < 3e-5);
        # the tolerance is 4 standard errors of the mean of the noise
        se = 25.0 / 255.0 / np.sqrt(x[..., 0].size)
        np.testing.assert_allclose(prep.mean, 0.5, rtol=0, atol=4 * se + 3e-5)
    again = data.Preprocessing.from_dict(prep.to_dict())
    assert again.to_dict() == prep.to_dict() and prep.to_dict()["kind"] == "normalize"
    z = prep.apply(x[:5])
    assert z.dtype == np.float32
    np.testing.assert_allclose(z, prep.apply_tf(x[:5]).numpy(), rtol=0, atol=1e-6)
    all_z = prep.apply(x).reshape(-1, 3).astype(np.float64)
    np.testing.assert_allclose(all_z.mean(0), 0, atol=1e-5)  # the training images, normalised
    np.testing.assert_allclose(all_z.std(0), 1, atol=1e-5)
    with pytest.raises(ValueError, match="std > 0"):
        data.Preprocessing([0.5], [0.0])


def test_preprocessing_of_known_images_through_the_npz_parts(tmp_path):
    """Parts of 150 and 50 images, every pixel of a part one colour: the statistics are exact
    (mean a + (b - a) / 4, std |b - a| sqrt(3) / 4 per channel), and distinct per channel."""
    a, b = np.array([0, 10, 200], np.uint8), np.array([255, 30, 250], np.uint8)
    (tmp_path / "cifar10").mkdir()
    for k, (n, colour) in enumerate([(150, a), (50, b)], start=1):
        x = np.broadcast_to(colour, (n, 32, 32, 3)).copy()
        np.savez(tmp_path / "cifar10" / f"cifar10_train_part{k}of2.npz", x=x, y=np.arange(n) % 10)
    x, _, _ = data.load_split("cifar10", "train", "npz", str(tmp_path))
    prep = data.Preprocessing.from_images(x)
    a, b = a / 255.0, b / 255.0
    np.testing.assert_allclose(prep.mean, a + (b - a) / 4, rtol=1e-10)
    np.testing.assert_allclose(prep.std, np.abs(b - a) * np.sqrt(3) / 4, rtol=1e-9)


def test_preprocessing_errors_name_the_source_the_key_and_the_channels(image_data_dir, tmp_path, capsys):
    """Each used to be a raw error (KeyError 'std', a NumPy broadcast error) or a line that did not
    say which file (std = 0 in run.json, images with a constant channel)."""
    prep = data.Preprocessing([0.5, 0.4, 0.3], [0.2, 0.2, 0.2])
    with pytest.raises(ValueError, match=r"^preprocessing: 'std' is missing; expected \{'kind': 'normalize'"):
        data.Preprocessing.from_dict({"kind": "normalize", "scale": 1 / 255, "mean": [0.5]})
    with pytest.raises(
        ValueError,
        match=r"^runs/a/run.json: preprocessing: mean must be finite and std > 0 in every "
        r"channel, got mean \[0.5, 0.5\] and std \[0.2, 0.0\] \(channel 1\)",
    ):
        data.Preprocessing.from_dict(
            {"kind": "normalize", "scale": 1, "mean": [0.5, 0.5], "std": [0.2, 0]},
            where="runs/a/run.json: preprocessing",
        )
    four = np.zeros((2, 4, 4, 4), np.uint8)
    message = (
        r"Preprocessing.apply: the images have 4 channels \(shape \(2, 4, 4, 4\)\), this preprocessing "
        r"normalises 3 \(one mean and std per channel"
    )
    with pytest.raises(ValueError, match=message):
        prep.apply(four)
    with pytest.raises(ValueError, match=message.replace("apply", "apply_tf")):
        prep.apply_tf(tf.constant(four))
    flat = np.random.default_rng(0).integers(0, 256, (10, 4, 4, 3), dtype=np.uint8)
    flat[..., 2] = 7
    with pytest.raises(
        ValueError,
        match=r"^my images: channel 2 has the same value \(7\) in every pixel of all 10 "
        r"images, so there is no variance to normalise by \(std = 0\)",
    ):
        data.Preprocessing.from_images(flat, where="my images")
    # the training data of a run: the files are named
    data_dir = tmp_path / "data"
    (data_dir / "cifar10").mkdir(parents=True)
    x, y, _ = data.load_split("cifar10", "train", "npz", image_data_dir)
    x = x.copy()
    x[..., 1] = 200
    np.savez(data_dir / "cifar10" / "cifar10_train.npz", x=x, y=y)
    with pytest.raises(
        ValueError,
        match=rf"^the cifar10 training images in {data_dir}/cifar10 \(cifar10_train\*.npz\): "
        r"channel 1 has the same value \(200\)",
    ):
        data.load_training_data("cifar10", "npz", str(data_dir))


def test_split_indices_are_balanced_disjoint_and_seeded():
    y = np.repeat(np.arange(10), 50)
    train, held = data.split_indices(y, subset=200, holdout=0.1, seed=3)
    assert len(train) == 200 and len(held) == 20 and not set(train) & set(held)
    assert np.all(np.bincount(y[train], minlength=10) == 20) and np.all(np.bincount(y[held], minlength=10) == 2)
    again, _ = data.split_indices(y, subset=200, holdout=0.1, seed=3)
    other, _ = data.split_indices(y, subset=200, holdout=0.1, seed=4)
    np.testing.assert_array_equal(train, again)
    assert not np.array_equal(train, other)
    rest, held = data.split_indices(y, holdout=25)
    assert len(rest) == 475 and len(held) == 25
    with pytest.raises(ValueError, match="subset"):
        data.split_indices(y, subset=490, holdout=20)
    with pytest.raises(ValueError, match="holdout"):
        data.split_indices(y, holdout=1.5)


# ---- augmentation ------------------------------------------------------------------------
def _prep():
    return data.Preprocessing([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])


def test_augmentation_is_a_shifted_flipped_window_and_deterministic():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    prep, aug = _prep(), data.Augmentation(crop_padding=4, flip=True)
    padded = np.pad(prep.apply(img[None])[0], ((4, 4), (4, 4), (0, 0)), constant_values=(0 - 0.5) / 0.25)
    flips = 0
    for index in range(20):
        key = data.example_key(7, 2, index)
        out = data.augment(img, key, prep, aug).numpy()
        assert out.shape == (32, 32, 3) and out.dtype == np.float32
        np.testing.assert_array_equal(out, data.augment(img, key, prep, aug).numpy())  # a pure function of the key
        matches = [
            (dy, dx, f)
            for dy in range(9)
            for dx in range(9)
            for f in (False, True)
            if np.allclose(
                out,
                (padded[dy : dy + 32, dx : dx + 32, :][:, ::-1] if f else padded[dy : dy + 32, dx : dx + 32, :]),
                atol=1e-6,
            )
        ]
        assert matches, "the view is not a 32x32 window of the padded image (possibly flipped)"
        flips += matches[0][2]
    assert 2 <= flips <= 18  # p = 1/2 over 20 draws
    a, b = (
        data.augment(img, data.example_key(7, 2, 1), prep, aug),
        data.augment(img, data.example_key(7, 3, 1), prep, aug),
    )
    assert not np.array_equal(a.numpy(), b.numpy())  # another data epoch, another view


def test_random_erasing_rate_and_rectangle():
    img = tf.ones((32, 32, 3))
    erased, areas = 0, []
    trials = 400
    for i in range(trials):
        out = data.random_erasing(img, data.example_key(1, 0, i), probability=0.5).numpy()
        zero = np.all(out == 0.0, axis=-1)
        if zero.any():
            erased += 1
            rows, cols = np.where(zero.any(1))[0], np.where(zero.any(0))[0]
            assert zero[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1].all()  # a solid rectangle
            areas.append(zero.mean())
    # binomial(400, 0.5): sd 10
    assert abs(erased - trials / 2) < 4 * np.sqrt(trials / 4)
    assert min(areas) >= 0.015 and max(areas) <= 0.41
    with pytest.raises(ValueError, match="erasing must be a probability"):
        data.Augmentation(erasing=1.5)
    aug = data.Augmentation(crop_padding=2, flip=False, erasing=0.25)
    assert data.Augmentation(**aug.get_config()).get_config() == aug.get_config()


# ---- the training pipeline ------------------------------------------------------------------
def _training_data(n=40):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    y = rng.integers(0, 10, n).astype(np.int64)
    return data.TrainingData(x, y, data.Preprocessing.from_images(x), 10)


def _epoch(ds):
    return [tuple(tf.nest.map_structure(lambda t: t.numpy(), b)) for b in ds]


def test_pipeline_order_is_a_function_of_seed_and_step():
    train_set = _training_data()
    counter = tf.Variable(0, dtype=tf.int64)
    ds = train_set.dataset(8, seed=5, counter=counter)
    first = _epoch(ds)
    assert len(first) == 5 and ds.cardinality().numpy() == 5
    idx = np.concatenate([b[2]["example_index"] for b in first])
    assert sorted(idx) == list(range(40))  # one data epoch: every example once
    for x, y, extra in first:
        np.testing.assert_array_equal(x, train_set.reference[0].numpy()[extra["example_index"]])
        np.testing.assert_array_equal(y, train_set.y[extra["example_index"]])
    counter.assign(5)  # after 5 steps the next iterator yields data epoch 1 ...
    second = _epoch(ds)
    assert not np.array_equal(idx, np.concatenate([b[2]["example_index"] for b in second]))
    fresh = train_set.dataset(8, seed=5, counter=tf.Variable(5, dtype=tf.int64))  # ... in any new run resumed there
    for a, b in zip(second, _epoch(fresh)):
        np.testing.assert_array_equal(a[2]["example_index"], b[2]["example_index"])


def test_augmented_batches_carry_the_clean_view():
    train_set = _training_data()
    counter = tf.Variable(0, dtype=tf.int64)
    aug = data.Augmentation(crop_padding=4, flip=True, erasing=0.5)
    batches = _epoch(train_set.dataset(8, seed=2, counter=counter, augmentation=aug))
    x_aug, y, extra = batches[0]
    assert x_aug.shape == (8, 32, 32, 3) and set(extra) == {"example_index", "energy_inputs"}
    clean = train_set.reference[0].numpy()[extra["example_index"]]
    np.testing.assert_array_equal(extra["energy_inputs"], clean)
    assert not np.array_equal(x_aug, clean)
    again = _epoch(train_set.dataset(8, seed=2, counter=tf.Variable(0, dtype=tf.int64), augmentation=aug))
    np.testing.assert_array_equal(again[0][0], x_aug)  # same (seed, epoch, index): same views
    with pytest.raises(ValueError, match="batch_size must be <= the 40"):
        train_set.dataset(64, seed=0, counter=counter)
