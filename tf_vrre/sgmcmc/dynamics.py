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

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

import tf_vrre.sgmcmc.seeds as seeds

DYNAMICS = ("sgld", "sghmc", "msgd")


def sgld_update(
    param: tf.Tensor, grad: tf.Tensor, lr: tf.Tensor, temperature: tf.Tensor, noise: tf.Tensor
) -> tf.Tensor:
    """One SGLD step: ``param - lr * grad + sqrt(2 lr tau) * noise``."""
    scale = tf.sqrt(2.0 * lr * temperature)
    return param - lr * grad + scale * noise


def sghmc_update(
    param: tf.Tensor,
    velocity: tf.Tensor,
    grad: tf.Tensor,
    lr: tf.Tensor,
    temperature: tf.Tensor,
    friction: float,
    noise: tf.Tensor | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """One SGHMC step in momentum form; returns ``(new_param, new_velocity)``.

    ``noise=None`` gives M-SGD (temperature 0, no draw).
    """
    v = (1.0 - friction) * velocity - lr * grad
    if noise is not None:
        v = v + tf.sqrt(2.0 * friction * lr * temperature) * noise
    return param + v, v


def velocity_scale(
    lr_from: tf.Tensor, temperature_from: tf.Tensor, lr_to: tf.Tensor, temperature_to: tf.Tensor
) -> tf.Tensor:
    """Factor that maps a stationary velocity ``N(0, lr*tau)`` of one chain to another's.

    ``sqrt(lr_to * tau_to / (lr_from * tau_from))``; 1 where the source scale is 0.
    """
    num = lr_to * temperature_to
    den = lr_from * temperature_from
    return tf.where(den > 0, tf.sqrt(tf.math.divide_no_nan(num, den)), tf.ones_like(den))


def langevin_noise(weights: Sequence[Any], key: tf.Tensor) -> list[tf.Tensor]:
    """Standard normal draws ``xi`` shaped like ``weights``: one stateless draw of
    :func:`tf_vrre.sgmcmc.seeds.normal` with the step's key, split per weight (the same draws on one
    device, on every replica of a strategy and under XLA)."""
    sizes = [int(np.prod(w.shape)) for w in weights]
    flat = seeds.normal(sum(sizes), key)
    return [tf.reshape(z, w.shape) for z, w in zip(tf.split(flat, sizes), weights)]


class Diffusion:
    """Step 5 of the train step: one update of every chain with its slot's lr and temperature.

    ``"sgld"``: :func:`sgld_update`; ``"sghmc"``: :func:`sghmc_update` with friction
    ``1 - momentum``; ``"msgd"``: SGHMC without noise.  Chain ``h`` draws its noise from
    ``fold(fold(step key, NOISE), h)``.

    Args:
      name: one of :data:`DYNAMICS`.
      momentum: SGHMC momentum in ``[0, 1)``.
    """

    def __init__(self, name: str, momentum: float):
        self.name, self.momentum = name, float(momentum)

    @property
    def has_velocity(self) -> bool:
        """True for SGHMC and M-SGD (a velocity per weight)."""
        return self.name in ("sghmc", "msgd")

    def step(
        self,
        chains: Any,
        grads: Sequence[Sequence[tf.Tensor]],
        learning_rates: tf.Tensor,
        temperatures: tf.Tensor,
        key: tf.Tensor,
        slots: Sequence[Any] | None = None,
    ) -> tf.Tensor:
        """Updates ``chains`` (a :class:`tf_vrre.sgmcmc.state.ChainState`: weights and velocities) in
        place from ``grads`` (per chain).

        ``slots``: the rung (slot of ``learning_rates`` / ``temperatures``, and the noise key) of
        each chain of ``chains``; default ``0..K-1`` (one device: chain ``h`` sits in slot ``h``).
        Chain-per-replica placement passes this replica's chain and the rung it holds: the noise
        of a rung is the same number wherever its chain runs.

        A chain whose new weights or velocities would not be finite keeps its old ones; returns
        the bool ``[K]`` "updated" (a ``False`` is a fault the sampler reports).
        """
        friction = 1.0 - self.momentum
        key = seeds.fold(key, seeds.NOISE)
        updated = []
        for c, weights in enumerate(chains.trainable):
            h = c if slots is None else slots[c]
            lr, tau = learning_rates[h], temperatures[h]
            noises = None if self.name == "msgd" else langevin_noise(weights, seeds.fold(key, h))
            new = []  # (variable, value)
            for i, (w, g) in enumerate(zip(weights, grads[c])):
                lr_i, tau_i = tf.cast(lr, w.dtype), tf.cast(tau, w.dtype)
                z = None if noises is None else tf.cast(noises[i], w.dtype)
                if self.name == "sgld":
                    new.append((w, sgld_update(w, g, lr_i, tau_i, z)))
                else:
                    v = chains.velocities[c][i]
                    new_w, new_v = sghmc_update(w, v, g, lr_i, tau_i, friction, z)
                    new += [(v, new_v), (w, new_w)]
            ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(value)) for _, value in new])
            for var, value in new:
                var.assign(tf.where(ok, value, var))
            updated.append(ok)
        return tf.stack(updated)
