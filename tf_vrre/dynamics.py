"""Per-chain update rules (diffusions): SGLD, SGHMC in momentum form, M-SGD.

Pure TensorFlow math on tensors; no Keras.  ``grad`` is the gradient of the N-scaled
energy ``U(beta) = sum_i l(x_i | beta) + prior(beta)`` (estimated on a mini-batch).

- SGLD:  ``beta <- beta - lr * grad + sqrt(2 lr tau) xi``
- SGHMC (momentum form, friction ``alpha = 1 - momentum``)::

      v    <- (1 - alpha) v - lr * grad + sqrt(2 alpha lr tau) xi
      beta <- beta + v

- M-SGD: SGHMC with ``tau = 0``.

At stationarity the SGHMC velocity is ``N(0, lr * tau)`` per coordinate (independent of
beta), which is why a velocity that moves to a chain with another ``(lr, tau)`` is rescaled
by :func:`velocity_scale`.
"""

import tensorflow as tf

DYNAMICS = ("sgld", "sghmc", "msgd")


def sgld_update(param, grad, lr, temperature, noise):
    """One SGLD step: ``param - lr * grad + sqrt(2 lr tau) * noise``."""
    scale = tf.sqrt(2.0 * lr * temperature)
    return param - lr * grad + scale * noise


def sghmc_update(param, velocity, grad, lr, temperature, friction, noise=None):
    """One SGHMC step in momentum form; returns ``(new_param, new_velocity)``.

    ``noise=None`` gives M-SGD (temperature 0, no draw).
    """
    v = (1.0 - friction) * velocity - lr * grad
    if noise is not None:
        v = v + tf.sqrt(2.0 * friction * lr * temperature) * noise
    return param + v, v


def velocity_scale(lr_from, temperature_from, lr_to, temperature_to):
    """Factor that maps a stationary velocity ``N(0, lr*tau)`` of one chain to another's.

    ``sqrt(lr_to * tau_to / (lr_from * tau_from))``; 1 where the source scale is 0.
    """
    num = lr_to * temperature_to
    den = lr_from * temperature_from
    return tf.where(den > 0, tf.sqrt(tf.math.divide_no_nan(num, den)), tf.ones_like(den))
