"""A tiny image run directory (the run-directory contract) for export/evaluate tests.

A functional conv net with BatchNorm trained for a few steps with ReplicaExchangeSampler +
SampleCollector on real CIFAR-10 test images; ``run.json`` follows the contract
(``tf_vrre.run/1``, normalisation ``(x * scale - mean) / std`` from the training images).
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

import tf_vrre

SHARED_DATA = os.environ.get("TF_VRRE_SHARED_DATA") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data"
)
CIFAR10_TEST = os.path.join(SHARED_DATA, "cifar10", "cifar10_test.npz")
SCALE = 1.0 / 255.0


def tiny_cnn(num_classes=10):
    """Conv(8, stride 2) - BN - ReLU - Conv(16, stride 2) - BN - ReLU - GAP - Dense: logits."""
    inp = keras.Input((32, 32, 3))
    h = inp
    for i, filters in enumerate((8, 16)):
        h = keras.layers.Conv2D(filters, 3, strides=2, padding="same", use_bias=False, name=f"conv{i}")(h)
        h = keras.layers.BatchNormalization(name=f"bn{i}")(h)
        h = keras.layers.ReLU()(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    return keras.Model(inp, keras.layers.Dense(num_classes, name="logits")(h), name="tiny_cnn")


def cifar_slice(start, stop):
    """Raw uint8 images and int64 labels of the CIFAR-10 test set, ``[start, stop)``; synthetic
    images of the same shape (``_synthetic_images``) where the real data is not on this machine."""
    if not os.path.exists(CIFAR10_TEST):
        import _synthetic_images

        x, y = _synthetic_images.images(stop, 10, seed=3)
        return x[start:stop], y[start:stop]
    with np.load(CIFAR10_TEST) as d:
        return d["x"][start:stop], d["y"][start:stop]


def normalize(x, pre):
    """The training preprocessing of the contract, float32: ``(x * scale - mean) / std``."""
    f = np.float32
    return ((x.astype(f) * f(pre["scale"]) - np.asarray(pre["mean"], f)) / np.asarray(pre["std"], f)).astype(f)


def make_tiny_run(run_dir, train_size=256, batch_size=32, epochs=2, every=2, burn_in_steps=4, seed=0):
    """Trains the tiny net and writes ``run_dir/{run.json, samples/}``; returns the run.json dict."""
    x, y = cifar_slice(0, train_size)
    xs = x.astype(np.float64) * SCALE
    pre = {"kind": "normalize", "scale": SCALE, "mean": xs.mean((0, 1, 2)).tolist(), "std": xs.std((0, 1, 2)).tolist()}
    xn = normalize(x, pre)
    config = dict(
        num_chains=2,
        temperatures=[1e-3, 5e-3],
        learning_rates=[2e-4, 3e-4],
        dynamics="sghmc",
        momentum=0.9,
        weight_decay=1.0,
        seed=seed,
    )
    sampler = tf_vrre.ReplicaExchangeSampler(
        tiny_cnn,
        data_size=train_size,
        swap=tf_vrre.CorrectedSwap(correction=2.0),
        variance_reduction=tf_vrre.ControlVariates(period=4),
        **config,
    )
    sampler.set_reference_data((xn, y))
    sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    collector = tf_vrre.SampleCollector(os.path.join(run_dir, "samples"), every=every, burn_in_steps=burn_in_steps)
    sampler.fit(sampler.make_dataset(batch_size), epochs=epochs, verbose=0, callbacks=[collector])
    run = {
        "format": "tf_vrre.run/1",
        "method": "vr-resghmc",
        "config": config,
        "model": {"name": "tiny_cnn", "kwargs": {}, "num_classes": 10, "input_shape": [32, 32, 3]},
        "data": {
            "dataset": "cifar10",
            "source": "npz",
            "data_dir": os.path.dirname(CIFAR10_TEST),
            "train_size": train_size,
            "subset": f"test[:{train_size}]",
        },
        "preprocessing": pre,
        "seed": seed,
        "versions": {"tf_vrre": tf_vrre.__version__, "tensorflow": tf.__version__, "keras": keras.__version__},
        "status": "complete",
    }
    with open(os.path.join(run_dir, "run.json"), "w") as f:
        json.dump(run, f, indent=1)
    return run
