"""Energy estimators: mini-batch and control-variate (variance-reduced) energies.

Energy of a chain with weights ``beta`` (N training examples, mini-batch ``B`` of size n)::

    U(beta)     = sum_{i=1..N} l(x_i | beta) + prior(beta)          (exact)
    U_B(beta)   = (N/n) sum_{i in B} l(x_i | beta) + prior(beta)    (mini-batch)
    U~_B(beta)  = U_B(beta) + c * ((N/n) sum_{i in B} l(x_i | beta_hat) - U_hat)

with ``beta_hat`` the snapshot taken every ``m`` steps and ``U_hat`` its full-data energy
(``c = -1`` in VR-reSG*, adaptive in the paper's Algorithm 2).  ``prior`` is the Gaussian
prior ``wd/2 ||beta||^2``: deterministic, so it enters every estimator exactly.

``l`` is a per-example negative log-likelihood: a Keras loss evaluated without reduction
(e.g. ``SparseCategoricalCrossentropy(from_logits=True)`` *is* the NLL) or a user callable
``nll(x, y, y_pred) -> [batch]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tf_vrre import _keras_compat

ENERGY_MODES = ("auto", "train", "inference")

# Layers whose forward pass depends on the `training` flag.
_TRAINING_DEPENDENT = tuple(
    getattr(keras.layers, name)
    for name in (
        "BatchNormalization",
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "SpatialDropout3D",
        "GaussianNoise",
        "GaussianDropout",
        "AlphaDropout",
        "ActivityRegularization",
    )
    if hasattr(keras.layers, name)
)


def has_training_dependent_layers(model: keras.Model) -> bool:
    """True if ``model`` contains a layer whose output depends on ``training``."""
    return any(isinstance(layer, _TRAINING_DEPENDENT) for layer in _keras_compat.flatten_layers(model))


def resolve_mode(energy_mode: str, model: keras.Model) -> str:
    """``"train"`` or ``"inference"``: ``energy_mode`` with ``"auto"`` resolved (inference iff
    ``model`` has layers whose output depends on ``training``)."""
    if energy_mode != "auto":
        return energy_mode
    return "inference" if has_training_dependent_layers(model) else "train"


def batch_independent(energy_mode: str, model: keras.Model) -> bool:
    """True if a per-example energy does not depend on the rest of the batch (inference mode, or
    no BatchNorm / Dropout-like layers): then cached snapshot NLLs equal a snapshot forward."""
    return energy_mode == "inference" or not has_training_dependent_layers(model)


def resolve_nll(loss: Any) -> Callable:
    """Turns a Keras loss identifier into ``nll(x, y, y_pred) -> [batch]`` (needs labels).

    Losses are evaluated without reduction and summed over any trailing axes so the result
    is one value per example.
    """
    fn = keras.losses.get(loss)
    if isinstance(fn, keras.losses.Loss):
        call = fn.call
    elif callable(fn):
        call = fn
    else:  # pragma: no cover - keras.losses.get raises first
        raise ValueError(f"loss: cannot use {loss!r} as a per-example negative log-likelihood")

    def nll(x: Any, y: Any, y_pred: Any) -> tf.Tensor:
        del x
        if y is None:
            raise ValueError(
                "energy: the compiled loss needs labels but the dataset yields inputs only; "
                "yield (x, y) pairs or pass nll=callable(x, y, y_pred) for an unlabeled model"
            )
        return call(y, y_pred)

    nll.__name__ = f"nll[{getattr(fn, '__name__', type(fn).__name__)}]"
    return nll


def per_example(values: Any, name: str = "nll") -> tf.Tensor:
    """Checks that ``values`` has one entry per example (trailing axes are summed)."""
    values = tf.convert_to_tensor(values)
    if values.shape.rank is None:
        raise ValueError(f"{name} must return a tensor of known rank, one value per example")
    if values.shape.rank == 0:
        raise ValueError(
            f"{name} returned a scalar; it must return one negative log-likelihood per "
            "example (shape [batch]), without reduction"
        )
    if values.shape.rank > 1:
        values = tf.reduce_sum(values, axis=list(range(1, values.shape.rank)))
    return values


def computes_in_float16(model: keras.Model) -> bool:
    """True if a layer of ``model`` computes in float16 (``mixed_float16``: loss scaling needed)."""
    return any(getattr(layer, "compute_dtype", None) == "float16" for layer in _keras_compat.flatten_layers(model))


def to_float32(y_pred: Any) -> Any:
    """Low-precision (float16 / bfloat16) outputs cast to float32: under a mixed-precision policy
    the network computes in low precision, the energies and everything after them do not."""

    def cast(t: tf.Tensor) -> tf.Tensor:
        return tf.cast(t, tf.float32) if t.dtype in (tf.float16, tf.bfloat16) else t

    return tf.nest.map_structure(cast, y_pred)


def weighted_nll(nll_fn: Callable, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> tf.Tensor:
    """``nll_fn(x, y, y_pred)`` as float32 ``[batch]`` (checked by :func:`per_example`), times
    the per-example ``sample_weight`` if given; low-precision outputs are cast to float32 first."""
    nll = tf.cast(per_example(nll_fn(x, y, to_float32(y_pred))), tf.float32)
    if sample_weight is not None:
        nll = nll * tf.cast(tf.reshape(sample_weight, tf.shape(nll)), nll.dtype)
    return nll


@keras.saving.register_keras_serializable(package="tf_vrre")
def gaussian_nll(x: Any, y: Any, y_pred: tf.Tensor, scale: float = 1.0) -> tf.Tensor:
    """Gaussian regression NLL per example: ``sum (y - f)^2 / (2 s^2) + log(s sqrt(2 pi))``."""
    del x
    y = tf.cast(y, y_pred.dtype)
    y = tf.reshape(y, tf.shape(y_pred))
    r = (y - y_pred) / scale
    per = 0.5 * r * r + np.log(scale * np.sqrt(2.0 * np.pi))
    return tf.reduce_sum(tf.reshape(per, [tf.shape(per)[0], -1]), axis=1)


def prior_energy(weights: Sequence[Any], weight_decay: float) -> tf.Tensor:
    """Gaussian prior energy ``wd/2 * sum ||w||^2`` in float64."""
    if weight_decay == 0.0 or not weights:
        return tf.constant(0.0, tf.float64)
    total = tf.add_n([tf.reduce_sum(tf.square(tf.cast(w, tf.float64))) for w in weights])
    return 0.5 * tf.cast(weight_decay, tf.float64) * total


def minibatch_energy(nll_sum: Any, batch_size: Any, data_size: int, prior: Any = 0.0) -> tf.Tensor:
    """``(N/n) * sum_B l + prior`` in float64 (``nll_sum`` already all-reduced)."""
    scale = tf.cast(data_size, tf.float64) / tf.cast(batch_size, tf.float64)
    return scale * tf.cast(nll_sum, tf.float64) + prior


def control_variate_energy(
    nll_sum: Any,
    snapshot_nll_sum: Any,
    snapshot_energy: Any,
    coefficient: Any,
    batch_size: Any,
    data_size: int,
    prior: Any = 0.0,
) -> tf.Tensor:
    """``U_B(beta) + c * (U_B(beta_hat) - U_hat)``; with ``c = -1``:
    ``(N/n) sum_B [l(beta) - l(beta_hat)] + U_hat``."""
    c = tf.cast(coefficient, tf.float64)
    cur = minibatch_energy(nll_sum, batch_size, data_size)
    snap = minibatch_energy(snapshot_nll_sum, batch_size, data_size)
    return cur + c * (snap - tf.cast(snapshot_energy, tf.float64)) + prior


def check_nll_callable(fn: Any, name: str = "nll") -> None:
    """Raises ``TypeError`` unless ``fn`` is callable as ``fn(x, y, y_pred)``."""
    if not callable(fn):
        raise TypeError(f"{name} must be callable(x, y, y_pred) -> [batch], got {fn!r}")
    try:
        inspect.signature(fn).bind(None, None, None)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must accept (x, y, y_pred): {err}") from None
