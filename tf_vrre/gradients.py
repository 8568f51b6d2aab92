"""Step 2 of the train step: forward pass and gradient of every chain's mini-batch energy.

For chain ``h`` on batch ``B`` (size ``n`` of ``N``): per-example NLLs ``l(x_i | beta_h)``
from a ``training=True`` forward, the gradient of ``(N/n) sum_B l`` all-reduced across
replicas, plus the prior's gradient ``wd * beta``.  The per-example NLLs are kept: in
``energy_mode="train"`` they are the swap energies' (:mod:`tf_vrre.swap_energy`).
"""

import collections

import tensorflow as tf

from tf_vrre import distribute
from tf_vrre import energy as en

NOT_FINITE = ("tf_vrre: a chain's mini-batch energy is not finite (diverged?). Lower learning_rates: "
              "they multiply the N-scaled gradient (eta = 2e-6 at N = 50000 is SGD lr 0.1)")


class Forward(collections.namedtuple("Forward", ["nlls", "preds", "grads", "priors"])):
    """Per chain: per-example NLLs ``[n]``, predictions, gradients (one per trainable weight,
    prior included, all-reduced) and the prior energy (float64) of the pre-update weights."""


def forward_and_gradients(models, batch, per_example_nll, weight_decay, data_size):
    """:class:`Forward` of every model on ``batch`` (a :class:`tf_vrre.batch.Batch`)."""
    x, y, swt = batch.x, batch.y, batch.sample_weight
    scale = tf.cast(data_size, tf.float64) / batch.size
    nlls, preds, grads, priors = [], [], [], []
    for model in models:
        weights = model.trainable_weights
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            nll = per_example_nll(x, y, y_pred, swt)
            objective = tf.debugging.assert_all_finite(tf.reduce_sum(nll) * tf.cast(scale, nll.dtype), NOT_FINITE)
        g = tape.gradient(objective, weights)
        grads.append([tf.zeros_like(w) if gi is None else tf.convert_to_tensor(gi) for gi, w in zip(g, weights)])
        nlls.append(nll)
        preds.append(y_pred)
        priors.append(en.prior_energy(weights, weight_decay))
    grads = distribute.all_reduce(grads)
    if weight_decay:
        grads = [[gi + tf.cast(weight_decay, gi.dtype) * w for gi, w in zip(g, m.trainable_weights)]
                 for g, m in zip(grads, models)]
    return Forward(nlls, preds, grads, priors)
