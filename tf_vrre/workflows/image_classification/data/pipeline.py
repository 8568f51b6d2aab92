"""Normalisation, train / held-out split, and the training and evaluation ``tf.data`` pipelines.

The training pipeline follows :meth:`tf_vrre.ReplicaExchangeSampler.make_dataset`: the
sampler's step counter is read when an iterator starts, data epoch
``e = ceil(step / steps_per_epoch)`` is the stateless permutation ``shuffle((seed, e))``, and
augmentation draws are keyed by ``(seed, e, example index)``.  The batches are therefore a
pure function of ``(seed, step)``: a run resumed by ``BackupAndRestore`` sees exactly the
batches of the uninterrupted run.  Elements are

- ``(x, y, {"example_index": i})`` without augmentation, ``x`` the normalised images;
- ``(x_aug, y, {"example_index": i, "energy_inputs": x})`` with augmentation: gradients use the
  augmented view ``x_aug``; the sampler computes swap energies (current and snapshot) on the
  clean view ``x``, the distribution of the full-data pass ``U_hat`` over the reference data,
  so the control variate stays unbiased.
"""

from __future__ import annotations

import hashlib
import numbers
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

import tf_vrre.workflows.image_classification.data.sources as sources
import tf_vrre.workflows.image_classification.data.tfds_source as tfds_source
from tf_vrre.sampler.batch import ENERGY_INPUTS_KEY, INDEX_KEY  # the sampler's batch keys, defined once
from tf_vrre.workflows.image_classification.data.augment import Augmentation, augment, example_key

ORDER_SALT = 0x0D7A
_CHUNK = 4096

__all__ = [
    "Preprocessing",
    "split_indices",
    "indices_digest",
    "pixels_digest",
    "absolute_data_dir",
    "TrainingData",
    "load_training_data",
    "eval_dataset",
    "INDEX_KEY",
    "ENERGY_INPUTS_KEY",
]


class Preprocessing:
    """Per-channel normalisation ``(x * scale - mean) / std`` (float32, NHWC).

    ``mean`` and ``std`` are the statistics of ``x * scale`` over the training images
    (:meth:`from_images`); the same numbers go into ``run.json`` so evaluation and export
    normalise exactly like training.

    Args:
      mean: per-channel mean of ``x * scale``.
      std: per-channel standard deviation of ``x * scale`` (> 0).
      scale: raw-pixel scale (``1/255`` for uint8 images).

    Example:
      >>> x_train = np.random.default_rng(0).integers(0, 256, size=(100, 8, 8, 3), dtype=np.uint8)
      >>> prep = Preprocessing.from_images(x_train)      # CIFAR-10: mean ~ (0.491, 0.482, 0.447)
      >>> x = prep.apply(x_train)                         # float32, normalised
      >>> x.dtype.name, bool(abs(x.mean()) < 1e-3)
      ('float32', True)
    """

    kind = "normalize"
    mean: list[float]
    std: list[float]
    scale: float

    def __init__(
        self, mean: Sequence[float] | np.ndarray, std: Sequence[float] | np.ndarray, scale: float = 1.0 / 255.0
    ) -> None:
        mean = [float(v) for v in np.reshape(mean, -1)]
        std = [float(v) for v in np.reshape(std, -1)]
        if len(mean) != len(std) or not mean:
            raise ValueError(f"mean and std need one value per channel, got {mean} and {std}")
        if not all(np.isfinite(mean)) or not all(np.isfinite(s) and s > 0 for s in std):
            bad = next(c for c in range(len(std)) if not (np.isfinite(mean[c]) and np.isfinite(std[c]) and std[c] > 0))
            raise ValueError(
                f"mean must be finite and std > 0 in every channel, got mean {mean} and std {std} (channel {bad})"
            )
        if not (isinstance(scale, numbers.Real) and np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a number > 0, got {scale!r}")
        self.mean, self.std, self.scale = mean, std, float(scale)

    @classmethod
    def from_images(cls, x: np.ndarray, scale: float = 1.0 / 255.0, where: str = "the images") -> Preprocessing:
        """Statistics of ``x * scale`` per channel (exact sums in float64, in chunks).

        Raises:
          ValueError: naming ``where`` (the images' source) when a channel has one value in every
            pixel of every image: nothing to normalise by (``std = 0``).
        """
        x = np.asarray(x)
        total = np.zeros(x.shape[-1])
        squares = np.zeros(x.shape[-1])
        low, high = np.full(x.shape[-1], np.inf), np.full(x.shape[-1], -np.inf)
        for start in range(0, len(x), _CHUNK):
            chunk = x[start : start + _CHUNK].astype(np.float64) * scale
            total += chunk.sum(axis=(0, 1, 2))
            squares += np.square(chunk).sum(axis=(0, 1, 2))
            low, high = np.minimum(low, chunk.min(axis=(0, 1, 2))), np.maximum(high, chunk.max(axis=(0, 1, 2)))
        flat = np.flatnonzero(low == high)
        if flat.size:
            c = int(flat[0])
            raise ValueError(
                f"{where}: channel {c} has the same value ({low[c] / scale:g}) in every pixel of all "
                f"{len(x)} images, so there is no variance to normalise by (std = 0); use images "
                "that vary in every channel"
            )
        count = float(np.prod(x.shape[:-1]))
        mean = total / count
        return cls(mean, np.sqrt(np.maximum(squares / count - mean**2, 0.0)), scale)

    def to_dict(self) -> dict:
        """The ``run.json`` ``"preprocessing"`` entry."""
        return {"kind": self.kind, "scale": self.scale, "mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, d: dict, where: str = "preprocessing") -> Preprocessing:
        """Inverse of :meth:`to_dict` (checks ``kind`` and that ``scale``, ``mean`` and ``std`` are
        there); errors name ``where`` (e.g. the ``run.json`` the entry comes from).

        Example:
          >>> tf_vrre.Preprocessing.from_dict({"kind": "normalize", "scale": 1 / 255, "mean": [0.5]})
          Traceback (most recent call last):
          ...
          ValueError: preprocessing: 'std' is missing; expected {'kind': 'normalize', 'scale': ..., 'mean': [...], 'std': [...]}
        """
        expected = "{'kind': 'normalize', 'scale': ..., 'mean': [...], 'std': [...]}"
        if not isinstance(d, dict) or d.get("kind") != cls.kind:
            raise ValueError(f"{where}: expected {expected}, got {d!r}"[:400])
        missing = [key for key in ("scale", "mean", "std") if key not in d]
        if missing:
            raise ValueError(
                f"{where}: {' and '.join(map(repr, missing))} {'is' if len(missing) == 1 else 'are'} "
                f"missing; expected {expected}"
            )
        try:
            return cls(d["mean"], d["std"], d["scale"])
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}"[:400]) from None

    def _check_channels(self, shape, what):
        if not len(shape) or shape[-1] is None:
            return
        if shape[-1] != len(self.mean):
            raise ValueError(
                f"{what}: the images have {shape[-1]} channels (shape {tuple(shape)}), this "
                f"preprocessing normalises {len(self.mean)} (one mean and std per channel: channels "
                "last, NHWC)"
            )

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Normalised float32 copy of numpy images ``x`` (in chunks: bounded temporaries).

        Raises:
          ValueError: ``x``'s last axis is not one channel per ``mean`` / ``std`` value.
        """
        x = np.asarray(x)
        self._check_channels(x.shape, "Preprocessing.apply")
        out = np.empty(x.shape, np.float32)
        scale, mean, std = (np.float32(self.scale), np.asarray(self.mean, np.float32), np.asarray(self.std, np.float32))
        for start in range(0, len(x), _CHUNK):
            out[start : start + _CHUNK] = (x[start : start + _CHUNK].astype(np.float32) * scale - mean) / std
        return out

    def apply_tf(self, x: tf.Tensor, raw: bool = True) -> tf.Tensor:
        """The same normalisation in TensorFlow; ``raw=False`` if ``x`` is already ``x * scale``."""
        x = tf.cast(x, tf.float32)
        self._check_channels(x.shape.as_list() if x.shape.rank is not None else [], "Preprocessing.apply_tf")
        if raw:
            x = x * tf.constant(self.scale, tf.float32)
        return (x - tf.constant(self.mean, tf.float32)) / tf.constant(self.std, tf.float32)


_count = sources.example_count


def split_indices(y, subset=None, holdout=0, seed=0):
    """Class-balanced held-out and training indices of a training split.

    A seeded permutation is reordered round-robin over classes (so every prefix is
    balanced); the first ``H`` indices are held out (temperature fitting, running BMA
    metrics), the next ``subset`` (default: all the rest) are the training set.

    Args:
      y: integer labels of the whole training split.
      subset: training-set size ``N`` (``None``: everything not held out).
      holdout: held-out count, or a fraction of ``N`` (``subset``) / of the split.
      seed: seed of the permutation.

    Returns:
      ``(train_indices, holdout_indices)``, int64 arrays.

    Example:
      >>> y_train = np.arange(5000) % 10
      >>> train, held = split_indices(y_train, subset=2000, holdout=0.1, seed=0)
      >>> len(train), len(held)
      (2000, 200)
    """
    y = np.asarray(y).reshape(-1)
    total = len(y)
    if subset is not None and (isinstance(subset, bool) or not isinstance(subset, numbers.Integral) or subset < 1):
        raise ValueError(f"subset must be an integer >= 1 or None, got {subset!r}")
    h = _count(holdout, subset if subset is not None else total, "holdout")
    n = int(subset) if subset is not None else total - h
    if n < 1 or n + h > total:
        raise ValueError(f"subset ({n}) + holdout ({h}) must be <= the {total} training examples")
    perm = np.random.default_rng([int(seed), ORDER_SALT]).permutation(total)
    labels = y[perm]
    rank = np.zeros(total, np.int64)
    for c in np.unique(labels):
        where = labels == c
        rank[where] = np.arange(where.sum())
    order = perm[np.lexsort((labels, rank))]
    return order[h : h + n].astype(np.int64), order[:h].astype(np.int64)


def indices_digest(indices):
    """Short SHA-256 of an index array (recorded in ``run.json`` to check a rebuilt split)."""
    return hashlib.sha256(np.asarray(indices, np.int64).tobytes()).hexdigest()[:16]


def pixels_digest(x):
    """Short SHA-256 of uint8 images ``x`` (shape and bytes): ``run.json["data"]["pixels_digest"]``
    of the whole training split, so a resumed run notices other images with the same labels."""
    x = np.ascontiguousarray(x)
    h = hashlib.sha256(repr((str(x.dtype), x.shape)).encode())
    h.update(memoryview(x).cast("B"))
    return h.hexdigest()[:16]


def absolute_data_dir(data_dir):
    """``data_dir`` as recorded in ``run.json``: an absolute path (``~`` expanded), so the run can be
    evaluated from any directory; URLs (``gs://...``) and ``None`` as they are."""
    if data_dir is None or "://" in str(data_dir):
        return None if data_dir is None else str(data_dir)
    return os.path.abspath(os.path.expanduser(str(data_dir)))


class TrainingData:
    """Training images in memory and the ``tf.data`` pipeline the sampler trains on.

    Args:
      x: uint8 training images ``[N, H, W, C]``.
      y: int64 labels ``[N]``.
      preprocessing: a :class:`Preprocessing` (normally ``Preprocessing.from_images(x)``).
      num_classes: number of classes.

    Attributes:
      reference: ``(x_normalised, y)`` tensors: give them to ``sampler.set_reference_data``
        (the full-data pass ``U_hat`` then sees exactly the clean views of the batches).

    Example:
      >>> x = np.random.default_rng(0).integers(0, 256, size=(32, 8, 8, 3), dtype=np.uint8)
      >>> y = np.arange(32) % 10
      >>> def net():
      ...     return keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(10)])
      >>> sampler = tf_vrre.ReplicaExchangeSampler(net, data_size=32, num_chains=2, temperatures=[0.01, 0.05],
      ...     learning_rates=1e-3, variance_reduction=tf_vrre.ControlVariates(period=2), seed=0)
      >>> sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
      >>> from tf_vrre import Augmentation
      >>> data = TrainingData(x, y, Preprocessing.from_images(x), 10)
      >>> sampler.set_reference_data(data.reference)
      >>> _ = sampler.fit(data.dataset(16, seed=0, counter=sampler.state.step,
      ...                              augmentation=Augmentation()), epochs=2, verbose=0)
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, preprocessing: Preprocessing, num_classes: int) -> None:
        if len(x) != len(y) or not len(x):
            raise ValueError(f"x and y must have the same non-zero length, got {len(x)} and {len(y)}")
        self.x = np.asarray(x)
        self.y = np.asarray(y, np.int64)
        self.preprocessing = preprocessing
        self.num_classes = int(num_classes)
        self._reference: tuple[tf.Tensor, tf.Tensor] | None = None

    @property
    def size(self) -> int:
        return len(self.x)

    @property
    def reference(self) -> tuple[tf.Tensor, tf.Tensor]:
        if self._reference is None:
            self._reference = (tf.constant(self.preprocessing.apply(self.x)), tf.constant(self.y))
        return self._reference

    def steps_per_epoch(self, batch_size: int) -> int:
        """``N // batch_size`` (the last partial batch of every data epoch is dropped)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if batch_size > self.size:
            raise ValueError(f"batch_size must be <= the {self.size} training examples, got {batch_size}")
        return self.size // int(batch_size)

    def dataset(
        self, batch_size: int, seed: int, counter: tf.Variable | int, augmentation: Augmentation | None = None
    ) -> tf.data.Dataset:
        """One data epoch per iterator, starting at step ``counter`` (see the module docstring).

        Args:
          batch_size: mini-batch size ``n`` (global: split across replicas by Keras).
          seed: seed of the order and of the augmentation draws.
          counter: the sampler's ``step_counter`` (read when an iterator starts) or an int.
          augmentation: an :class:`Augmentation` or ``None``.
        """
        per_epoch = self.steps_per_epoch(batch_size)
        n, N = int(batch_size), self.size
        x_ref, y = self.reference
        aug = augmentation if augmentation is not None and augmentation.active else None
        x_raw = tf.constant(self.x) if aug is not None else None
        prep = self.preprocessing
        order_key = tf.constant([int(seed), ORDER_SALT], tf.int64)

        def epoch_order(e):
            key = tf.random.experimental.stateless_fold_in(order_key, e, alg="philox")
            return tf.random.experimental.stateless_shuffle(tf.range(N, dtype=tf.int64), key)

        def clean_batches(e):
            return (
                tf.data.Dataset.from_tensor_slices(epoch_order(e))
                .batch(n, drop_remainder=True)
                .map(lambda i: (tf.gather(x_ref, i), tf.gather(y, i), {INDEX_KEY: i}))
            )

        def augmented_batches(e):
            def one(i):
                view = augment(tf.gather(x_raw, i), example_key(seed, e, i), prep, aug)
                return view, tf.gather(y, i), {INDEX_KEY: i, ENERGY_INPUTS_KEY: tf.gather(x_ref, i)}

            return (
                tf.data.Dataset.from_tensor_slices(epoch_order(e))
                .map(one, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
                .batch(n, drop_remainder=True)
            )

        def stream(_):
            start = tf.cast(tf.convert_to_tensor(counter), tf.int64)  # read when the iterator starts
            e = (start + per_epoch - 1) // per_epoch
            return augmented_batches(e) if aug is not None else clean_batches(e)

        ds = tf.data.Dataset.from_tensors(0).flat_map(stream)
        return ds.apply(tf.data.experimental.assert_cardinality(per_epoch)).prefetch(2)


def eval_dataset(x, preprocessing, batch_size=500):
    """Normalised batches of uint8 images ``x`` (normalised batch by batch: bounded memory)."""
    return (
        tf.data.Dataset.from_tensor_slices(np.asarray(x))
        .batch(batch_size)
        .map(preprocessing.apply_tf, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(2)
    )


def load_training_data(dataset, source="tfds", data_dir=None, subset=None, holdout=0, split_seed=0, download=True):
    """Loads a training split, splits off the held-out part and fits the normalisation.

    Returns:
      ``(train, holdout, info)``: a :class:`TrainingData`, the held-out ``(x, y)`` uint8 /
      int64 arrays, and the ``run.json`` ``"data"`` entry (``dataset``, ``source``, absolute
      ``data_dir``, ``train_size``, ``subset``, ``holdout``, ``split_seed``, index digests and
      the digest of the split's pixels).

    Example:
      >>> import os
      >>> os.makedirs("data/cifar10")
      >>> rng = np.random.default_rng(0)
      >>> np.savez("data/cifar10/cifar10_train.npz", y=np.arange(300) % 10,
      ...          x=rng.integers(0, 256, size=(300, 32, 32, 3), dtype=np.uint8))
      >>> train, (xh, yh), info = load_training_data("cifar10", "npz", "data", subset=200, holdout=0.1)
      >>> info["train_size"], len(yh)
      (200, 20)
    """
    name = sources.check_dataset(dataset)
    x, y, used = sources.load_split(name, "train", source, data_dir, download)
    train_idx, held_idx = split_indices(y, subset, holdout, split_seed)
    x_train, y_train = x[train_idx], y[train_idx]
    where = (
        f"the {name} training images in {os.path.join(absolute_data_dir(data_dir), name)} ({name}_train*.npz)"
        if used == "npz"
        else f"the {name} training images (tfds {name}:train in {tfds_source.data_root(data_dir)})"
    )
    prep = Preprocessing.from_images(x_train, where=where)
    info = {
        "dataset": name,
        "source": used,
        "data_dir": absolute_data_dir(data_dir),
        "train_size": int(len(train_idx)),
        "subset": subset,
        "holdout": int(len(held_idx)),
        "split_seed": int(split_seed),
        "train_digest": indices_digest(train_idx),
        "holdout_digest": indices_digest(held_idx),
        "pixels_digest": pixels_digest(x),
    }
    return TrainingData(x_train, y_train, prep, sources.num_classes(name)), (x[held_idx], y[held_idx]), info
