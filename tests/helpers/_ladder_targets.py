"""Targets with exact answers for ladder tuning (shared by tests/callbacks/test_ladder_tuning_exact.py
and benchmarks/ladder_tuning.py).

- The d-dimensional standard Gaussian tempered at b = 1 / tau (:func:`gaussian_sampler`): one
  weight vector w, energy |w|^2 / 2 from a single "example" (exact energies: sigma2 = 0, the swap
  is plain Metropolis).  Exact rejection and barrier: tf_vrre.sgmcmc.tempered_gaussian.gaussian_*.
- A d-dimensional two-mode mixture with unequal weights (:func:`mixture_sampler`):
  pi(w) ~ p N(w; -m e_1, I) + (1 - p) N(w; m e_1, I) at temperature 1, as a sum over N examples,
  l_i(w) = U(w) / N + a_i . w with sum_i a_i = 0, so the full-data energy is exactly U while a
  mini-batch's is U plus a noise linear in w.  Exact left-mode weight (w_1 < 0):
  p Phi(m) + (1 - p) Phi(-m).
"""

import math

import keras
import numpy as np
import tensorflow as tf
from scipy import stats

import tf_vrre


@keras.saving.register_keras_serializable(package="test_ladder")
class Point(keras.layers.Layer):
    """A weight vector w of ``dim`` entries, output once per example."""

    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.dim = int(dim)
        self.w = self.add_weight(name="w", shape=(self.dim,), initializer="zeros")

    def call(self, x):
        return tf.zeros_like(x[:, :1]) + self.w

    def get_config(self):
        return {**super().get_config(), "dim": self.dim}


@keras.saving.register_keras_serializable(package="test_ladder")
class PointModel:
    """``model_fn``: a model whose only weight is ``w`` (``dim`` entries), started at ``start``."""

    def __init__(self, dim, start=0.0):
        self.dim, self.start = int(dim), float(start)

    def __call__(self):
        inp = keras.Input((self.dim,))  # the inputs are ignored (mixture_data's a_i reach the NLL as x)
        model = keras.Model(inp, Point(self.dim, name="point")(inp))
        model.layers[-1].w.assign(np.full(self.dim, self.start, np.float32) * np.eye(self.dim)[0])
        return model

    def get_config(self):
        return {"dim": self.dim, "start": self.start}


@keras.saving.register_keras_serializable(package="test_ladder")
def gaussian_nll(x, y, w):
    """|w|^2 / 2 per example (the data are a dummy)."""
    del x, y
    return 0.5 * tf.reduce_sum(tf.square(w), axis=-1)


def gaussian_sampler(dim, temperatures, learning_rate, seed, pairs="deo", steps_per_execution=50, jit_compile=None):
    """A compiled sampler of the tempered standard Gaussian in ``dim`` dimensions (SGLD, exact
    energies) and its endless dataset."""
    s = tf_vrre.ReplicaExchangeSampler(
        PointModel(dim),
        data_size=1,
        num_chains=len(temperatures),
        temperatures=list(temperatures),
        learning_rates=learning_rate,
        dynamics="sgld",
        nll=gaussian_nll,
        seed=seed,
        swap=tf_vrre.CorrectedSwap(pairs=pairs, penalty="window", period=1),
        independent_init=False,
    )
    s.compile(steps_per_execution=steps_per_execution, jit_compile=jit_compile)
    return s, tf.data.Dataset.from_tensors(np.zeros((1, dim), np.float32)).repeat()


# ---- the unequal two-mode mixture -----------------------------------------------------------

MIXTURE = {"dim": 3, "weight": 0.3, "offset": 4.0, "noise": 0.02, "data_size": 100}


@keras.saving.register_keras_serializable(package="test_ladder")
class MixtureNLL:
    """Per-example ``U(w) / N + a_i . w`` (``x_i = a_i``, summing to 0 over the N examples)."""

    def __init__(self, weight, offset, data_size):
        self.weight, self.offset, self.data_size = float(weight), float(offset), int(data_size)

    def __call__(self, x, y, w):
        del y
        w = tf.cast(w, tf.float32)
        shift = tf.one_hot(0, tf.shape(w)[-1]) * self.offset
        left = math.log(self.weight) - 0.5 * tf.reduce_sum(tf.square(w + shift), -1)
        right = math.log(1.0 - self.weight) - 0.5 * tf.reduce_sum(tf.square(w - shift), -1)
        energy = -tf.reduce_logsumexp(tf.stack([left, right]), 0)
        return energy / self.data_size + tf.reduce_sum(tf.cast(x, tf.float32) * w, -1)

    def get_config(self):
        return {"weight": self.weight, "offset": self.offset, "data_size": self.data_size}


def mixture_data(dim, noise, data_size, seed=0):
    """``a_i ~ N(0, noise^2 I)``, centred so they sum to exactly 0 (in float64, then float32)."""
    a = np.random.default_rng(seed).normal(0.0, noise, size=(data_size, dim))
    return (a - a.mean(0)).astype(np.float32)


def exact_left_weight(weight, offset):
    """P(w_1 < 0) under p N(-m e_1, I) + (1 - p) N(m e_1, I)."""
    return weight * stats.norm.cdf(offset) + (1 - weight) * stats.norm.cdf(-offset)


def mixture_sampler(
    temperatures,
    learning_rate,
    seed,
    batch_size=20,
    vr=False,
    pairs="deo",
    steps_per_execution=50,
    jit_compile=None,
    target=None,
):
    """A compiled sampler of the unequal mixture with mini-batch (or, with ``vr``, control-variate)
    energies, every chain started in the right mode, and its endless shuffled dataset."""
    t = dict(MIXTURE, **(target or {}))
    data = mixture_data(t["dim"], t["noise"], t["data_size"])
    s = tf_vrre.ReplicaExchangeSampler(
        PointModel(t["dim"], start=t["offset"]),
        data_size=t["data_size"],
        num_chains=len(temperatures),
        temperatures=list(temperatures),
        learning_rates=learning_rate,
        dynamics="sgld",
        nll=MixtureNLL(t["weight"], t["offset"], t["data_size"]),
        seed=seed,
        swap=tf_vrre.CorrectedSwap(pairs=pairs),
        variance_reduction=tf_vrre.ControlVariates(period=4, batch_size=t["data_size"]) if vr else None,
    )
    if vr:
        s.set_reference_data(data)
    s.compile(steps_per_execution=steps_per_execution, jit_compile=jit_compile)
    ds = (
        tf.data.Dataset.from_tensor_slices(data)
        .repeat()
        .shuffle(t["data_size"], seed=seed)
        .batch(batch_size, drop_remainder=True)
    )
    return s, ds, exact_left_weight(t["weight"], t["offset"])


class ColdTrace(keras.callbacks.Callback):
    """Records the cold chain's weights (first coordinate by default) after every executed block of steps."""

    def __init__(self, coordinate=0):
        super().__init__()
        self.coordinate, self.values, self.steps = coordinate, [], []

    def on_train_batch_end(self, batch, logs=None):
        self.values.append(float(self.model.cold_model.trainable_weights[0].numpy()[self.coordinate]))
        self.steps.append(int(self.model.state.step.numpy()))


def batch_means(values, blocks=20):
    """Mean and batch-means standard error of a trace (``blocks`` consecutive blocks)."""
    v = np.asarray(values, np.float64)
    t = v.size - v.size % blocks
    means = v[:t].reshape(blocks, -1).mean(1)
    return float(v.mean()), float(means.std(ddof=1) / math.sqrt(blocks))
