"""The paper's 1-D Gaussian-mixture target (Section 5.1) with its exact tempered posterior.

``x_i | beta ~ 0.5 N(beta, s^2) + 0.5 N(phi - beta, s^2)`` (s = 5, phi = 20), prior
``beta ~ N(0, 10^2)``.  The likelihood is symmetric under ``beta -> phi - beta``, so the two
modes (near the true beta = -5 and near 25) differ only through the prior; at temperature tau
their weights are ``1 : exp(-(U(25) - U(-5)) / tau)`` (3 nats: 1 : exp(-3/tau)).  The
posterior is 1-D, so the exact tempered density is computed on a grid.
"""

import keras
import numpy as np
import tensorflow as tf

SIGMA = 5.0
PHI = 20.0
PRIOR_SD = 10.0
TRUE_BETA = -5.0


def make_data(num_examples, beta=TRUE_BETA, seed=0):
    """Draws ``num_examples`` points from the mixture, float32 column ``[N, 1]``."""
    rng = np.random.default_rng(seed)
    left = rng.random(num_examples) < 0.5
    centers = np.where(left, beta, PHI - beta)
    return (centers + SIGMA * rng.normal(size=num_examples)).astype(np.float32)[:, None]


class Beta(keras.layers.Layer):
    """A layer holding the scalar parameter beta; outputs beta once per example."""

    def __init__(self, initial=30.0, **kwargs):
        super().__init__(**kwargs)
        self.initial = float(initial)
        self.beta = self.add_weight(name="beta", shape=(), initializer=keras.initializers.Constant(self.initial))

    def call(self, x):
        return tf.zeros_like(x[:, :1]) + self.beta

    def get_config(self):
        return {**super().get_config(), "initial": self.initial}


def build_model(initial=30.0):
    """A Keras model whose only weight is beta (``model(x) = beta`` for every x)."""
    inp = keras.Input((1,))
    return keras.Model(inp, Beta(initial, name="beta")(inp))


@keras.saving.register_keras_serializable(package="tf_vrre.mixture")
def build_default_model():
    return build_model(30.0)


@keras.saving.register_keras_serializable(package="tf_vrre.mixture")
def nll(x, y, y_pred):
    """Per-example ``-log p(x_i | beta)`` of the mixture (unlabeled: ``y`` is unused)."""
    del y
    x = tf.reshape(tf.cast(x, tf.float32), [-1])
    beta = tf.reshape(y_pred, [-1])
    a = -0.5 * tf.square((x - beta) / SIGMA)
    b = -0.5 * tf.square((x - (PHI - beta)) / SIGMA)
    return -(tf.reduce_logsumexp(tf.stack([a, b]), axis=0) + np.log(0.5) - np.log(SIGMA * np.sqrt(2 * np.pi)))


def weight_decay():
    """Prior precision ``1 / PRIOR_SD^2`` (the sampler's ``weight_decay``)."""
    return 1.0 / PRIOR_SD ** 2


def energy(beta, x):
    """Exact ``U(beta) = sum_i -log p(x_i | beta) + beta^2 / (2 PRIOR_SD^2)`` for an array of beta."""
    beta = np.asarray(beta, np.float64)[..., None]
    x = np.asarray(x, np.float64).reshape(-1)
    a = -0.5 * ((x - beta) / SIGMA) ** 2
    b = -0.5 * ((x - (PHI - beta)) / SIGMA) ** 2
    ll = np.logaddexp(a, b) + np.log(0.5) - np.log(SIGMA * np.sqrt(2 * np.pi))
    return -ll.sum(-1) + 0.5 * beta[..., 0] ** 2 / PRIOR_SD ** 2


def exact_posterior(x, temperature, grid=None):
    """``(grid, density)`` of ``exp(-U / tau)`` normalised on a fine grid."""
    if grid is None:
        grid = np.linspace(-20.0, 40.0, 24001)
    u = energy(grid, x)
    logp = -(u - u.min()) / temperature
    p = np.exp(logp)
    p /= np.trapezoid(p, grid)
    return grid, p


def mode_weights(x, temperature, split=PHI / 2):
    """Exact probability of ``beta < split`` and ``beta >= split`` at ``temperature``."""
    grid, p = exact_posterior(x, temperature)
    left = np.trapezoid(np.where(grid < split, p, 0.0), grid)
    return left, 1.0 - left
