"""The names every docstring example in the package may use without defining them.

The documentation shows this set-up once (the API reference index, "Examples assume", reads it
from this file), so each example shows only what it documents:

- ``np``, ``keras``, ``tf``, ``tf_vrre``: the usual imports;
- ``x``, ``y``: 64 toy examples, two features, two classes (``y = x[:, 0] > 0``);
- ``net()``: a new two-class ``keras.Model`` for them (one dense layer);
- ``toy_sampler(**kwargs)``: a two-chain VR-reSGHMC sampler on ``x, y``, reference data set and
  compiled (sparse cross-entropy from logits), ready for ``fit``; keyword arguments replace the
  constructor's (``toy_sampler(num_chains=3, temperatures=[0.01, 0.03, 0.1])``).
"""

import keras
import numpy as np
import tensorflow as tf

import tf_vrre

x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
y = (x[:, 0] > 0).astype("int64")


def net():
    """A new two-class classifier for ``x`` (built, so the sampler can copy its weights)."""
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])


def toy_sampler(**kwargs):
    """A compiled two-chain VR-reSGHMC sampler on ``x, y`` (``kwargs`` replace the defaults)."""
    args = dict(
        model_fn=net,
        data_size=64,
        num_chains=2,
        temperatures=[0.01, 0.05],
        learning_rates=1e-3,
        swap=tf_vrre.CorrectedSwap(correction=2.0),
        variance_reduction=tf_vrre.ControlVariates(period=4),
        seed=0,
    )
    args.update(kwargs)
    sampler = tf_vrre.ReplicaExchangeSampler(**args)
    if sampler.variance_reduction is not None:
        sampler.set_reference_data((x, y))
    sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return sampler


def namespace():
    """A fresh copy of the names above for one docstring."""
    return {
        "np": np,
        "keras": keras,
        "tf": tf,
        "tf_vrre": tf_vrre,
        "x": x.copy(),
        "y": y.copy(),
        "net": net,
        "toy_sampler": toy_sampler,
    }
