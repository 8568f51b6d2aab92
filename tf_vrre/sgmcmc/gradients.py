"""Step 2 of the train step: forward pass and gradient of every chain's mini-batch energy.

For chain ``h`` on batch ``B`` (size ``n`` of ``N``): per-example NLLs ``l(x_i | beta_h)``
from a ``training=True`` forward, the gradient of ``(N/n) sum_B l`` all-reduced across
replicas, plus the prior's gradient ``wd * beta``.  The per-example NLLs are kept: in
``energy_mode="train"`` they are the swap energies' (:mod:`tf_vrre.sgmcmc.swap_energy`).  On the
steps that measure the gradient noise a conditional adds each chain's half-batch statistic
(:mod:`tf_vrre.sgmcmc.gradient_noise`), computed apart from the step's own forward and gradient.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

import tf_vrre.sgmcmc.distribute as distribute
import tf_vrre.sgmcmc.energy as energy
import tf_vrre.sgmcmc.gradient_noise as gradient_noise


class Forward(collections.namedtuple("Forward", ["nlls", "preds", "grads", "priors", "noise"], defaults=(None,))):
    """Per chain: per-example NLLs ``[n]``, predictions, gradients (one per trainable weight,
    prior included, all-reduced), the prior energy (float64) of the pre-update weights and, when
    the gradient noise is measured, this replica's float64 ``[2]`` half-batch statistic
    (:func:`tf_vrre.sgmcmc.gradient_noise.half_batch_statistic`; zeros on steps that do not
    measure), else ``None``."""


def forward_and_gradients(
    models: Sequence[keras.Model],
    batch: Any,
    per_example_nll: Callable,
    weight_decay: float,
    data_size: int,
    loss_scale: tf.Tensor | None = None,
    local: bool = False,
    measure: tf.Tensor | None = None,
) -> Forward:
    """:class:`Forward` of every model on ``batch`` (a :class:`tf_vrre.sampler.batch.Batch`).

    ``loss_scale`` (float16 policies, :class:`tf_vrre.sgmcmc.state.LossScale`): the gradient is taken of
    ``s * (N/n) sum_B l`` and divided by ``s``, so float16 backpropagation neither under- nor
    overflows (a non-finite result lowers ``s`` and the step's update is skipped).

    ``local``: chain-per-replica placement: ``models`` are this replica's own chain (per-replica
    variables, watched explicitly) and ``batch`` the whole batch, so nothing is all-reduced.

    ``measure``: a bool tensor (``None``: never): on the steps where it is true, each chain's
    gradient noise is measured in a conditional of its own (one more forward and backward pass
    that assigns nothing), so the step's gradients are computed exactly as without it.
    """
    x, y, swt = batch.x, batch.y, batch.sample_weight
    scale = tf.cast(data_size, tf.float64) / batch.size
    nlls, preds, grads, priors = [], [], [], []
    for model in models:
        weights = model.trainable_weights
        with tf.GradientTape() as tape:
            if local:  # per-replica variables are not trainable for TensorFlow (ON_READ): watch them
                tape.watch([w.value for w in weights])
            y_pred = model(x, training=True)
            nll = per_example_nll(x, y, y_pred, swt)
            objective = tf.reduce_sum(nll) * tf.cast(scale, nll.dtype)
            if loss_scale is not None:
                objective = objective * loss_scale
        g = tape.gradient(objective, weights)
        g = [tf.zeros_like(w) if gi is None else tf.convert_to_tensor(gi) for gi, w in zip(g, weights)]
        if loss_scale is not None:
            g = [gi / tf.cast(loss_scale, gi.dtype) for gi in g]
        grads.append(g)
        nlls.append(nll)
        preds.append(y_pred)
        priors.append(energy.prior_energy(weights, weight_decay))
    if not local:
        grads = distribute.all_reduce(grads)
    if weight_decay:
        grads = [
            [gi + tf.cast(weight_decay, gi.dtype) * w for gi, w in zip(g, m.trainable_weights)]
            for g, m in zip(grads, models)
        ]
    noise = None
    if measure is not None:
        noise = [
            tf.cond(
                measure,
                lambda model=model: gradient_noise.half_batch_statistic(model, batch, per_example_nll, loss_scale),
                lambda: tf.zeros([2], tf.float64),
            )
            for model in models
        ]
    return Forward(nlls, preds, grads, priors, noise)
