"""The paper's CIFAR augmentation as stateless ops: a pure function of (seed, data epoch, example).

Per image (the order of the usual torchvision recipe the authors use):

1. random crop 32 after zero-padding 4 pixels on each side (zero = a black pixel);
2. horizontal flip with probability 1/2;
3. normalisation ``(x * scale - mean) / std``;
4. optional random erasing (Zhong et al. 2017) with probability ``p``: a rectangle of area
   ``U(0.02, 0.4) * H * W`` and aspect ratio ``U(0.3, 1/0.3)`` (first of 10 draws that fits)
   is set to 0, i.e. to the data set's mean colour after normalisation.

Every random number comes from a stateless op keyed by ``example_key(seed, epoch, index)``,
so the augmented view of example ``i`` in data epoch ``e`` is the same in every run, on every
replica, and after a resume.
"""

from __future__ import annotations

import numbers

import tensorflow as tf

AUGMENT_SALT = 0xA06  # keys of augmentation draws never coincide with data-order keys

__all__ = ["Augmentation", "example_key", "augment", "random_erasing"]


def example_key(seed, epoch, index):
    """The ``[2]`` int64 stateless key of example ``index`` in data epoch ``epoch``."""
    key = tf.stack([tf.cast(seed, tf.int64), tf.constant(AUGMENT_SALT, tf.int64)])
    key = tf.random.experimental.stateless_fold_in(key, tf.cast(epoch, tf.int64), alg="philox")
    return tf.random.experimental.stateless_fold_in(key, tf.cast(index, tf.int64), alg="philox")


def random_erasing(image, key, probability, area=(0.02, 0.4), ratio=0.3, attempts=10, value=0.0):
    """Random erasing of one ``[H, W, C]`` image (stateless; see the module docstring).

    Args:
      image: float image ``[H, W, C]`` (normalised).
      key: ``[2]`` int64 stateless key.
      probability: chance of erasing a rectangle, in ``[0, 1]``.
      area: range of the rectangle's area as a fraction of the image.
      ratio: aspect ratios are drawn uniformly from ``[ratio, 1 / ratio]``.
      attempts: draws of (area, aspect); the first one that fits the image is used.
      value: fill value (0 = the mean colour of normalised images).

    Example:
      >>> img = tf.ones([8, 8, 3])
      >>> erased = random_erasing(img, example_key(0, 0, 7), probability=1.0)
      >>> erased.shape, bool(tf.reduce_any(erased == 0.0))   # a rectangle set to 0
      (TensorShape([8, 8, 3]), True)
    """
    H, W = int(image.shape[0]), int(image.shape[1])
    keys = tf.random.experimental.stateless_split(key, 6)
    apply = tf.random.stateless_uniform([], keys[0], dtype=tf.float32) < probability
    target = tf.random.stateless_uniform([attempts], keys[1], area[0], area[1]) * float(H * W)
    aspect = tf.random.stateless_uniform([attempts], keys[2], ratio, 1.0 / ratio)
    h = tf.cast(tf.round(tf.sqrt(target * aspect)), tf.int32)
    w = tf.cast(tf.round(tf.sqrt(target / aspect)), tf.int32)
    fits = (h < H) & (w < W) & (h > 0) & (w > 0)
    first = tf.argmax(tf.cast(fits, tf.int32), output_type=tf.int32)
    h, w = h[first], w[first]
    top = tf.random.stateless_uniform([], keys[3], 0, H - h + 1, dtype=tf.int32)
    left = tf.random.stateless_uniform([], keys[4], 0, W - w + 1, dtype=tf.int32)
    rows, cols = tf.range(H), tf.range(W)
    mask = ((rows >= top) & (rows < top + h))[:, None] & ((cols >= left) & (cols < left + w))[None, :]
    mask = mask & apply & tf.reduce_any(fits)
    return tf.where(mask[:, :, None], tf.cast(value, image.dtype), image)


class Augmentation:
    """Settings of the training augmentation (see the module docstring).

    Args:
      crop_padding: pixels of zero padding before the random crop back to the image size
        (0: no crop).
      flip: random horizontal flips.
      erasing: probability of random erasing (0: off; the authors use 0.5).

    Example:
      >>> from tf_vrre import Preprocessing
      >>> x_uint8 = np.random.default_rng(0).integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
      >>> aug = Augmentation(crop_padding=4, flip=True, erasing=0.5)
      >>> x_aug = augment(x_uint8, example_key(0, 3, 17), Preprocessing.from_images(x_uint8[None]), aug)
      >>> x_aug.shape, x_aug.dtype.name
      (TensorShape([8, 8, 3]), 'float32')
    """

    crop_padding: int
    flip: bool
    erasing: float

    def __init__(self, crop_padding: int = 4, flip: bool = True, erasing: float = 0.0) -> None:
        if isinstance(crop_padding, bool) or not isinstance(crop_padding, numbers.Integral) or crop_padding < 0:
            raise ValueError(f"crop_padding must be an integer >= 0, got {crop_padding!r}")
        if not isinstance(flip, bool):
            raise ValueError(f"flip must be true or false, got {flip!r}")
        if isinstance(erasing, bool) or not isinstance(erasing, numbers.Real) or not 0 <= erasing <= 1:
            raise ValueError(f"erasing must be a probability in [0, 1], got {erasing!r}")
        self.crop_padding = int(crop_padding)
        self.flip = flip
        self.erasing = float(erasing)

    @property
    def active(self):
        """True if any random transformation is on."""
        return bool(self.crop_padding or self.flip or self.erasing)

    def get_config(self) -> dict:
        return {"crop_padding": self.crop_padding, "flip": self.flip, "erasing": self.erasing}

    def __repr__(self) -> str:
        return "Augmentation(" + ", ".join(f"{k}={v!r}" for k, v in self.get_config().items()) + ")"


def augment(image, key, preprocessing, augmentation):
    """The augmented, normalised view of one uint8 image ``[H, W, C]`` (float32).

    Args:
      image: uint8 (or raw float) image ``[H, W, C]``.
      key: ``[2]`` int64 key, normally :func:`example_key` ``(seed, epoch, index)``.
      preprocessing: a :class:`tf_vrre.Preprocessing` (``scale``, ``mean``, ``std``).
      augmentation: an :class:`Augmentation`.

    Example:
      >>> from tf_vrre import Preprocessing
      >>> x = np.random.default_rng(0).integers(0, 256, size=(4, 8, 8, 3), dtype=np.uint8)
      >>> prep, seed, epoch, i = Preprocessing.from_images(x), 0, 1, 2
      >>> view = augment(x[i], example_key(seed, epoch, i), prep, Augmentation())
      >>> bool(tf.reduce_all(view == augment(x[i], example_key(seed, epoch, i), prep, Augmentation())))
      True
    """
    keys = tf.random.experimental.stateless_split(key, 3)
    x = tf.cast(image, tf.float32) * tf.constant(preprocessing.scale, tf.float32)
    H, W = int(x.shape[0]), int(x.shape[1])
    p = augmentation.crop_padding
    if p:
        x = tf.pad(x, [[p, p], [p, p], [0, 0]])
        x = tf.image.stateless_random_crop(x, [H, W, int(x.shape[2])], seed=keys[0])
    if augmentation.flip:
        x = tf.image.stateless_random_flip_left_right(x, seed=keys[1])
    x = preprocessing.apply_tf(x, raw=False)
    if augmentation.erasing:
        x = random_erasing(x, keys[2], augmentation.erasing)
    return x
