"""Tiny synthetic image data sets in the ``.npz`` layout of ``tf_vrre.workflows.image_classification.data`` (no real data needed).

CI may run without the real data (``$TF_VRRE_SHARED_DATA``), so the notebook tests write their own
data: uint8 32 x 32 RGB images whose class sets a colour and a stripe frequency (learnable, so
accuracies are above chance), plus noise.  Layout (what ``source="npz"`` reads)::

    ROOT/cifar10/cifar10_train_part1of2.npz, ..._part2of2.npz, cifar10_test.npz
    ROOT/cifar100/cifar100_test.npz
    ROOT/svhn_cropped/svhn_cropped_test.npz      (a different colour family: "out of distribution")
"""

import os

import numpy as np


def images(num, num_classes, seed, hue_shift=0.0):
    """``(x uint8 [num, 32, 32, 3], y int64 [num])``: class-balanced, colour + stripes + noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(num) % num_classes
    rng.shuffle(y)
    k = (y / num_classes + hue_shift) % 1.0
    colour = 127.5 + 100.0 * np.stack([np.cos(2 * np.pi * (k + s)) for s in (0.0, 1 / 3, 2 / 3)], axis=-1)
    rows = np.arange(32)[None, :, None, None]
    stripes = 40.0 * np.sin(2 * np.pi * rows * (1 + y % 4)[:, None, None, None] / 16.0)
    x = colour[:, None, None, :] + stripes + rng.normal(0.0, 25.0, size=(num, 32, 32, 3))
    return np.clip(np.round(x), 0, 255).astype(np.uint8), y.astype(np.int64)


def write_dataset(root, train=320, test=200, ood=200):
    """Writes CIFAR-10 train (2 parts) / test, CIFAR-100 test and SVHN test under ``root``; returns it."""
    parts = {
        ("cifar10", "cifar10_train_part1of2.npz"): images(train // 2, 10, seed=1),
        ("cifar10", "cifar10_train_part2of2.npz"): images(train - train // 2, 10, seed=2),
        ("cifar10", "cifar10_test.npz"): images(test, 10, seed=3),
        ("cifar100", "cifar100_test.npz"): images(ood, 100, seed=4),
        ("svhn_cropped", "svhn_cropped_test.npz"): images(ood, 10, seed=5, hue_shift=0.5),
    }
    for (folder, name), (x, y) in parts.items():
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        np.savez(os.path.join(root, folder, name), x=x, y=y)
    return str(root)
