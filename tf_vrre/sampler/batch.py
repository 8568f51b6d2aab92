"""What one training batch carries: inputs, labels, sample weights, example indices.

Batches from :meth:`tf_vrre.ReplicaExchangeSampler.make_dataset` carry
``{"example_index": i}`` (and optionally ``"sample_weight"``) in Keras' sample-weight slot;
the indices let the variance-reduced energies read cached snapshot NLLs.

With random augmentation, a batch may also carry ``"energy_inputs"``: the same examples
without augmentation.  Gradients then use the augmented ``x`` and the swap energies (current
and snapshot NLLs, sigma2 statistics) use the un-augmented view, the distribution of the
reference data behind ``U_hat``, so the control variate stays unbiased::

    (x_augmented, y, {"example_index": i, "energy_inputs": x_clean})
"""

from __future__ import annotations

import collections
from typing import Any

import keras
import tensorflow as tf

from tf_vrre.sgmcmc import distribute

INDEX_KEY = "example_index"
ENERGY_INPUTS_KEY = "energy_inputs"


class Batch(
    collections.namedtuple("Batch", ["x", "y", "sample_weight", "index", "size", "energy_x"], defaults=(None,))
):
    """One training batch.

    Fields:
      x: inputs (any nest of tensors).
      y: labels or ``None``.
      sample_weight: per-example weights or ``None``.
      index: int example indices ``[n]`` into the reference data, or ``None``.
      size: float64 global batch size ``n`` (summed over replicas).
      energy_x: un-augmented inputs for the swap energies, or ``None`` (then ``x``).
    """


def unpack(data: Any) -> tuple[Any, Any, Any, Any]:
    """``(x, y, sample_weight, example_index)`` of a batch (see the module docstring)."""
    x, y, swt = keras.utils.unpack_x_y_sample_weight(data)
    index = None
    if isinstance(swt, dict):
        index = swt.get(INDEX_KEY)
        swt = swt.get("sample_weight")
    return x, y, swt, index


def check(x: Any, y: Any, needs_labels: bool) -> None:
    """``ValueError`` for a batch without inputs, or without labels where the loss needs them."""
    if x is None:
        raise ValueError("dataset: elements must be x, (x,), (x, y) or (x, y, sample_weight)")
    if needs_labels and y is None:
        raise ValueError(
            "dataset: the compiled loss needs labels but the dataset yields inputs "
            "only; yield (x, y) or build the sampler with nll=callable(x, y, y_pred)"
        )


def from_data(data: Any, whole: bool = False) -> Batch:
    """:class:`Batch` of a ``train_step`` argument; ``size`` is all-reduced over the replicas'
    shards, unless the replica holds the ``whole`` batch (chain-per-replica placement)."""
    x, y, swt, index = unpack(data)
    _, _, extra = keras.utils.unpack_x_y_sample_weight(data)
    energy_x = extra.get(ENERGY_INPUTS_KEY) if isinstance(extra, dict) else None
    size = None
    if x is not None:
        size = tf.cast(distribute.batch_size(x), tf.float64)
        size = size if whole else distribute.all_reduce(size)
    return Batch(x, y, swt, index, size, energy_x)
