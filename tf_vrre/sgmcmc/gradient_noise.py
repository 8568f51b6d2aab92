"""The heat that mini-batch gradient noise adds to a chain, measured every few steps.

A step uses the mini-batch gradient ``g = (N/n) sum_{i in B} grad l_i + grad prior`` of a batch
``B`` of ``n`` of the ``N`` examples.  Its noise adds to the injected noise: for SGLD the update
``-eta g + sqrt(2 eta tau) xi`` carries gradient noise of variance ``eta^2 V_j`` per coordinate
``j`` (``V_j = Var(g_j)``) beside the injected ``2 eta tau``, so the chain runs at about::

    tau + eta V_j / 2                      (Welling and Teh 2011, Section 4)

and SGHMC in momentum form (``v <- (1 - alpha) v - eta g + sqrt(2 alpha eta tau) xi``, friction
``alpha = 1 - momentum``) at ``tau + eta V_j / (2 alpha)``: the ``B_hat = eta V / 2`` that Chen,
Fox and Guestrin (2014, Section 3.3, eq. 15) subtract from the injected noise, over the
friction.  M-SGD (``tau = 0``) is heated by gradient noise alone.  The *excess temperature*
reported here is the mean over the chain's ``D`` coordinates::

    excess = eta * mean_j V_j / (2 alpha)          (alpha = 1 for SGLD)

**The estimator.**  For a batch drawn without replacement, ``V_j = N^2 S_j^2 (1/n - 1/N)``
with ``S_j^2`` the variance of ``grad_j l_i`` over the N examples.  Split the batch into its
first ``m_A = floor(n/2)`` examples ``A`` and the other ``m_B`` examples ``B'``: the difference
of their mean per-example gradients has ``E[(mean_A - mean_B')_j^2] = S_j^2 (1/m_A + 1/m_B)``
exactly (two disjoint simple random samples; their covariance ``-S^2/N`` cancels the finite
population terms), so ``(mean_A - mean_B')_j^2 / (1/m_A + 1/m_B)`` is unbiased for ``S_j^2``.
The difference itself is the gradient of one weighted NLL sum, so a measurement costs one
forward and one backward pass of the chain on the step's batch, in a conditional apart from the
step's own (:func:`half_batch_statistic`): it takes no per-example gradients, changes nothing in
the step (not its gradient, not BatchNorm statistics, not a random draw), and is taken only on
one step in ``period``.

Under ``tf.distribute`` with the batch split across replicas, each replica splits its own shard
and the replicas' estimates (each unbiased) are averaged: one cross-replica sum of two numbers
per chain, merged with the sum the step already makes.  A shard of fewer than two examples
gives no estimate.  The split assumes the batch order is random (``make_dataset`` shuffles
every epoch); BatchNorm couples the examples of a batch, which the estimate includes as it is.
A model with ``BatchNormalization(synchronized=True)`` under a strategy of several replicas is
measured in inference mode (its training forward all-reduces, which cannot run inside the
conditional): the estimate then leaves out the coupling through the batch statistics.

Example:
  >>> bool(measure_at(tf.constant(31, tf.int64), 32)), bool(measure_at(tf.constant(32, tf.int64), 32))
  (True, False)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

import tf_vrre.sgmcmc.distribute as distribute
from tf_vrre import _keras_compat

PERIOD = 32
"""Default steps between two measurements (``ReplicaExchangeSampler(gradient_noise_every=...)``):
one forward and backward pass more every 32 steps, about 3% of the steps' cost."""


def measure_at(step: tf.Tensor, period: int) -> tf.Tensor:
    """Whether the step whose counter is ``step`` (before its increment) measures: the last step
    of every ``period`` (so the first measurement is not taken at the initial weights)."""
    return tf.equal(tf.math.floormod(step + 1, period), 0)


def half_batch_statistic(
    model: keras.Model, batch: Any, per_example_nll: Callable, loss_scale: tf.Tensor | None = None
) -> tf.Tensor:
    """float64 ``[2]``: ``(q, 1)`` with ``q`` this shard's unbiased estimate of ``mean_j S_j^2``
    (module docstring), or ``(0, 0)`` for a shard of fewer than two examples.

    ``mean_A - mean_B'`` is the gradient of ``sum_i c_i l_i`` with ``c_i = 1/m_A`` on ``A`` and
    ``-1/m_B`` on ``B'``: one backward pass of one forward pass, ``model.stateless_call`` at the
    chain's current weights in training mode (BatchNorm on the batch's statistics as in the step;
    the updated statistics and random states it returns are dropped).

    Args:
      model: the chain's built model.
      batch: the step's :class:`tf_vrre.sampler.batch.Batch` (this replica's shard).
      per_example_nll: ``(x, y, y_pred, sample_weight) -> [n]``.
      loss_scale: the float16 loss scale, if any (the objective is scaled by it, then unscaled).
    """
    trainable = [tf.convert_to_tensor(v.value) for v in model.trainable_variables]
    frozen = [tf.convert_to_tensor(v.value) for v in model.non_trainable_variables]
    # A forward that all-reduces across replicas (synchronized BatchNorm) cannot run in a
    # conditional under MirroredStrategy: it is measured in inference mode there.
    training = not (distribute.replicas()[0] > 1 and synchronizes_replicas(model))
    # stateless_call passes its keyword arguments to call() as they are (model(x) drops a training
    # argument call() does not take)
    kwargs = {"training": training} if _takes_training(model) else {}
    with tf.GradientTape() as tape:
        tape.watch(trainable)
        y_pred, _ = model.stateless_call(trainable, frozen, batch.x, **kwargs)
        nll = per_example_nll(batch.x, batch.y, y_pred, batch.sample_weight)
        n = tf.shape(nll)[0]
        m_a = n // 2
        m_a64, m_b64 = tf.maximum(tf.cast(m_a, nll.dtype), 1.0), tf.maximum(tf.cast(n - m_a, nll.dtype), 1.0)
        signs = tf.where(tf.range(n) < m_a, 1.0 / m_a64, -1.0 / m_b64)
        objective = tf.reduce_sum(nll * signs)
        if loss_scale is not None:
            objective = objective * tf.cast(loss_scale, objective.dtype)
    diffs = tape.gradient(objective, trainable)
    total, count = tf.constant(0.0, tf.float64), 0
    for d, w in zip(diffs, trainable):
        count += int(w.shape.num_elements() or 0)
        if d is None:  # a weight the loss does not reach carries no noise
            continue
        d = tf.cast(tf.convert_to_tensor(d), tf.float64)
        if loss_scale is not None:
            d = d / tf.cast(loss_scale, tf.float64)
        total += tf.reduce_sum(tf.square(d))
    m_a, m_b = tf.cast(m_a, tf.float64), tf.cast(n - m_a, tf.float64)
    q = total / max(count, 1) / (1.0 / tf.maximum(m_a, 1.0) + 1.0 / tf.maximum(m_b, 1.0))
    valid = tf.cast(m_a >= 1, tf.float64)
    return tf.stack([q * valid, valid])


def _takes_training(model: keras.Model) -> bool:
    parameters = inspect.signature(model.call).parameters
    return "training" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def synchronizes_replicas(model: keras.Model) -> bool:
    """Whether ``model``'s training forward all-reduces across replicas
    (``BatchNormalization(synchronized=True)``)."""
    return any(getattr(layer, "synchronized", False) for layer in _keras_compat.flatten_layers(model))


def excess_temperature(
    statistic: tf.Tensor,
    data_size: int,
    batch_size: tf.Tensor,
    learning_rate: tf.Tensor,
    friction: float,
) -> tuple[tf.Tensor, tf.Tensor]:
    """``(excess, measured)`` float64 ``[K]`` from the cross-replica sums ``statistic`` ``[K, 2]``
    of :func:`half_batch_statistic`: ``eta N^2 (1/n - 1/N) q / (2 alpha)`` with ``q`` the mean of
    the replicas' estimates, and whether any replica measured.

    Args:
      statistic: ``[K, 2]`` sums over replicas of ``(q, valid)``.
      data_size: ``N``.
      batch_size: the global batch size ``n`` (float64).
      learning_rate: ``[K]`` the learning rate of each slot.
      friction: ``1`` for SGLD, ``1 - momentum`` for SGHMC and M-SGD.

    Example:
      >>> stat = tf.constant([[8.0, 2.0]], tf.float64)      # two replicas, mean q = 4
      >>> ex, ok = excess_temperature(stat, 100, tf.constant(10.0, tf.float64), tf.constant([1e-3]), 1.0)
      >>> round(float(ex[0]), 6), bool(ok[0])    # 1e-3 * 100^2 * (1/10 - 1/100) * 4 / 2
      (1.8, True)
    """
    n_total = tf.cast(data_size, tf.float64)
    q = tf.math.divide_no_nan(statistic[:, 0], statistic[:, 1])
    variance = n_total * n_total * (1.0 / tf.cast(batch_size, tf.float64) - 1.0 / n_total) * q
    excess = tf.cast(learning_rate, tf.float64) * tf.maximum(variance, 0.0) / (2.0 * float(friction))
    return excess, statistic[:, 1] > 0


@keras.saving.register_keras_serializable(package="tf_vrre")
class ExcessTemperature(keras.metrics.Metric):
    """The mean of the excess temperatures measured in an epoch (``NaN`` when none was measured).

    Keras resets it at every epoch start, so ``history["excess_temperature_h"]`` holds each
    epoch's mean; under ``tf.distribute`` the replicas' sums are added when it is read.

    Example:
      >>> m = ExcessTemperature(name="excess_temperature_0")
      >>> m.update_state(0.5, True); m.update_state(9.0, False); m.update_state(1.5, True)
      >>> float(m.result())
      1.0
    """

    def __init__(self, name: str = "excess_temperature", **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total", dtype="float64")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count", dtype="float64")

    def update_state(self, value: Any, measured: Any) -> None:
        """Adds ``value`` when ``measured`` (a bool)."""
        weight = tf.cast(measured, tf.float64)
        self.total.assign_add(tf.cast(value, tf.float64) * weight)
        self.count.assign_add(weight)

    def result(self) -> tf.Tensor:
        count = tf.convert_to_tensor(self.count)
        mean = tf.math.divide_no_nan(tf.convert_to_tensor(self.total), count)
        return tf.where(count > 0, mean, tf.constant(float("nan"), tf.float64))

    def reset_state(self) -> None:
        self.total.assign(0.0)
        self.count.assign(0.0)


SMALL = 0.1
"""An excess temperature above this fraction of a chain's temperature is not small: the chain
samples a posterior more than 10% hotter than the one asked for."""


class GradientNoiseWarning(UserWarning):
    """Mini-batch gradient noise heats a chain well above its temperature."""


def heat_warning(history: dict, num_chains: int, dynamics: str) -> str | None:
    """The text of the warning ``fit`` gives when the last measured epoch of a chain with
    ``tau > 0`` has an excess temperature above ``SMALL * tau`` (``None`` otherwise).

    Args:
      history: ``History.history`` of the fit (``excess_temperature_h``, ``temperature_h``).
      num_chains: K.
      dynamics: ``"sgld"``, ``"sghmc"`` or ``"msgd"``.

    Example:
      >>> h = {"excess_temperature_0": [0.7, float("nan")], "temperature_0": [0.01, 0.01]}
      >>> print(heat_warning(h, 1, "sgld"))  # doctest: +NORMALIZE_WHITESPACE
      mini-batch gradient noise heats the chains: chain 0 runs at about 71x its temperature 0.01 (excess
      temperature 0.7, history key excess_temperature_0), so it samples a hotter posterior than asked for;
      lower the learning rate or take larger batches (the excess is about eta Var(g) / 2, Var(g) the
      variance of the mini-batch gradient; see tf_vrre.sgmcmc.gradient_noise)
    """
    hot = []
    for h in range(num_chains):
        excess = [float(v) for v in history.get(f"excess_temperature_{h}", [])]
        temps = [float(v) for v in history.get(f"temperature_{h}", [])]
        last = next((i for i in range(len(excess) - 1, -1, -1) if excess[i] == excess[i]), None)
        if last is None or last >= len(temps) or not temps[last] > 0:
            continue
        if excess[last] > SMALL * temps[last]:
            hot.append(
                f"chain {h} runs at about {1 + excess[last] / temps[last]:.3g}x its temperature "
                f"{temps[last]:.4g} (excess temperature {excess[last]:.3g}, history key excess_temperature_{h})"
            )
    if not hot:
        return None
    rule = "eta Var(g) / 2" if dynamics == "sgld" else "eta Var(g) / (2 (1 - momentum))"
    return (
        f"mini-batch gradient noise heats the chains: {'; '.join(hot)}, so "
        f"{'it samples' if len(hot) == 1 else 'they sample'} a hotter posterior than asked for; lower the "
        f"learning rate or take larger batches (the excess is about {rule}, Var(g) the variance of the "
        "mini-batch gradient; see tf_vrre.sgmcmc.gradient_noise)"
    )
