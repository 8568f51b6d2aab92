"""The data ``step_cost.py`` times its samplers on: the ``--data`` file read and checked (exit 2
and one line naming it), ``--data-size`` CIFAR-10 images normalised per channel (random images
when there is no file), and each configuration's endless batches: plain shuffled ``(x, y)``
batches or, for the variance-reduced samplers with ``--batches indexed``, the sampler's own
``make_dataset`` batches; ``tf.data`` autotuning off unless ``--tf-data-autotune``.
"""

import os

import arguments
import numpy as np
from step_cost_report import VR_CONFIGS


def read_images(path, n):
    """The images and labels of the ``--data`` file, checked (exit 2 with one line naming it if it
    is damaged or holds fewer than ``n`` CIFAR-shaped images); ``None`` if there is no such file."""
    if not os.path.exists(path):
        return None
    d = arguments.read_npz(path, ("x", "y"), "--data")
    x, y = d["x"], d["y"].reshape(-1)
    if x.ndim != 4 or x.shape[1:] != (32, 32, 3) or len(y) != len(x):
        arguments.die(
            f"--data: {path}: x has shape {list(x.shape)} and y {len(y)} labels; expected [N, 32, 32, 3] and N"
        )
    if len(x) < n:
        arguments.die(f"--data-size: {path} holds {len(x)} images, fewer than {n}")
    if not np.all(np.isfinite(x)):
        arguments.die(f"--data: {path}: x holds NaN or infinite values")
    return x, y


def load_data(path, n, seed, images=None):
    """``n`` CIFAR-10 images normalised per channel and int64 labels, from ``images`` (the checked
    ``--data`` file, :func:`read_images`); random if there is none."""
    rng = np.random.default_rng(seed)
    if images is not None:
        x, y = images
        idx = rng.permutation(len(x))[:n]
        x, y = x[idx], y[idx]
        source = f"CIFAR-10 {os.path.basename(path)}"
    else:
        print(
            f"NOTE: {path} not found; using {n} random images with random labels "
            "(timings are comparable, losses are meaningless)",
            flush=True,
        )
        x = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8)
        y = rng.integers(0, 10, size=(n,), dtype=np.int64)
        source = "random"
    x = x.astype(np.float32) / 255.0
    x = (x - x.mean(axis=(0, 1, 2))) / x.std(axis=(0, 1, 2))
    return x.astype(np.float32), y.reshape(-1).astype(np.int64), source


def make_dataset(x, y, batch, seed):
    """Endless shuffled ``(x, y)`` batches; the same pipeline as ``sampler.make_dataset``."""
    import tensorflow as tf

    x, y = tf.convert_to_tensor(x), tf.convert_to_tensor(y)
    idx = tf.data.Dataset.range(int(x.shape[0]))
    idx = idx.shuffle(int(x.shape[0]), seed=seed, reshuffle_each_iteration=True).repeat()
    return (
        idx.batch(batch, drop_remainder=True)
        .map(lambda i: (tf.gather(x, i), tf.gather(y, i)), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .prefetch(tf.data.AUTOTUNE)
    )


def without_autotune(ds):
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.with_options(options)


def sampler_dataset(sampler, config, args, plain):
    """The batches a configuration is timed on, and a description of them."""
    if config in VR_CONFIGS and args.batches == "indexed":
        if not hasattr(sampler, "make_dataset"):
            raise SystemExit("--batches indexed needs ReplicaExchangeSampler.make_dataset; use --batches plain")
        ds = sampler.make_dataset(args.batch, shuffle=True, seed=args.seed, repeat=True, drop_remainder=True)
        cached = bool(getattr(sampler, "_cache_exact", False))
        what = "indexed batches, " + (
            "snapshot NLLs from the cache" if cached else "cache not exact here: snapshot forward"
        )
    else:
        ds = plain
        what = "plain batches" + (", snapshot forward" if config in VR_CONFIGS else "")
    return (ds if args.tf_data_autotune else without_autotune(ds)), what
