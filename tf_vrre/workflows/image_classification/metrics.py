"""Accuracy and uncertainty metrics of (Bayesian-model-averaged) class probabilities.

All functions take predictive probabilities ``p`` ``[n, C]`` (e.g. the BMA
``mean_s softmax(z_s / T)``) and integer labels ``[n]``, and use TensorFlow Probability /
Keras where they provide the metric:

- ``accuracy``: ``mean(argmax p == y)``;
- ``nll``: ``-mean log p_y`` (``keras.losses.sparse_categorical_crossentropy``, which clips
  ``p`` to ``[1e-7, 1 - 1e-7]``);
- ``brier``: ``mean_i sum_j (p_ij - 1[j = y_i])^2`` (the paper's footnote; ``tfp.stats.brier_score``
  is ``sum_j p_j^2 - 2 p_y``, one less);
- ``ece``: expected calibration error with equal-width confidence bins
  (``tfp.stats.expected_calibration_error``, Guo et al. 2017 eq. 3);
- ``entropy``: ``-sum_j p_j log p_j`` per example (``tfp.distributions.Categorical``);
- ``ood_brier``: ``mean_i sum_j p_ij^2``, the Brier score when none of the known classes
  occurs (out-of-distribution images); its optimum, the uniform prediction, is ``1 / C``
  (the paper's "optimal 0.1" for SVHN under CIFAR-10 models);
- ``auroc``: area under the ROC curve separating two score samples (``keras.metrics.AUC``);
- ``fit_temperature``: ``T`` in ``[0.01, 100]`` minimising the NLL of ``mean_s softmax(z_s / T)``
  on held-out data (``tfp.optimizer.lbfgs_minimize`` over ``log T``); a
  fit without an optimum inside them raises :class:`TemperatureFitError` with the bound it hit.

Example:
  >>> logits = np.array([[[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]],     # [S = 2 samples, n = 3, C = 2]
  ...                    [[1.0, 0.0], [0.5, 0.0], [3.0, 0.0]]])
  >>> y = np.array([0, 1, 1])
  >>> p = softmax(logits).mean(axis=0)                   # the BMA, [n, C]
  >>> [round(float(v), 3) for v in (accuracy(p, y), nll(p, y), brier(p, y), ece(p, y, num_bins=15))]
  [0.667, 0.883, 0.63, 0.364]
"""

import numpy as np

__all__ = [
    "accuracy",
    "nll",
    "brier",
    "ece",
    "entropy",
    "ood_brier",
    "auroc",
    "fit_temperature",
    "TemperatureFitError",
    "TEMPERATURE_BOUNDS",
    "softmax",
    "reliability_bins",
]

_TINY = 1e-30


def _tf():
    import tensorflow as tf

    return tf


def _check(probs, labels=None):
    p = np.asarray(probs, np.float64)
    if p.ndim != 2 or p.shape[0] == 0:
        raise ValueError(f"probs must be [n, C] with n > 0, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0:
        raise ValueError("probs must be finite and >= 0")
    if labels is None:
        return p, None
    y = np.asarray(labels).reshape(-1)
    if len(y) != len(p) or not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"labels must be {len(p)} integers in [0, {p.shape[1] - 1}]")
    return p, y.astype(np.int64)


def softmax(logits, temperature=1.0):
    """``softmax(logits / T)`` along the last axis (numpy, float64)."""
    z = np.asarray(logits, np.float64) / float(temperature)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def accuracy(probs, labels):
    """Fraction of examples whose most probable class is the label."""
    p, y = _check(probs, labels)
    return float(np.mean(p.argmax(axis=1) == y))


def nll(probs, labels):
    """Mean negative log-likelihood ``-mean log p_y`` (Keras' sparse categorical cross-entropy)."""
    import keras

    p, y = _check(probs, labels)
    return float(
        np.mean(
            keras.ops.convert_to_numpy(
                keras.losses.sparse_categorical_crossentropy(y, p.astype(np.float32), from_logits=False)
            )
        )
    )


def brier(probs, labels):
    """Multi-class Brier score ``mean_i sum_j (p_ij - o_ij)^2`` (``tfp.stats.brier_score + 1``)."""
    import tensorflow_probability as tfp

    p, y = _check(probs, labels)
    logits = np.log(np.maximum(p, _TINY))
    return float(np.mean(tfp.stats.brier_score(labels=y, logits=logits).numpy()) + 1.0)


def ece(probs, labels, num_bins=15):
    """Expected calibration error with ``num_bins`` equal-width confidence bins (TFP)."""
    import tensorflow_probability as tfp

    p, y = _check(probs, labels)
    logits = np.log(np.maximum(p, _TINY)).astype(np.float32)
    return float(tfp.stats.expected_calibration_error(num_bins, logits=logits, labels_true=y).numpy())


def entropy(probs):
    """Predictive entropy ``-sum_j p_j log p_j`` per example (nats), via TFP's Categorical."""
    import tensorflow_probability as tfp

    p, _ = _check(probs)
    return tfp.distributions.Categorical(probs=p).entropy().numpy()


def ood_brier(probs):
    """Brier score on out-of-distribution inputs: ``mean_i sum_j p_ij^2`` (optimum ``1 / C``)."""
    p, _ = _check(probs)
    return float(np.mean(np.sum(p * p, axis=1)))


def auroc(scores_negative, scores_positive, low=0.0, high=1.0, num_thresholds=10001):
    """Area under the ROC curve for telling ``scores_positive`` (label 1) from ``scores_negative``.

    Scores are mapped linearly from ``[low, high]`` to ``[0, 1]`` (e.g. entropy with
    ``high = log C``) and passed to ``keras.metrics.AUC`` (trapezoidal, ``num_thresholds``
    evenly spaced thresholds): exact up to ties within ``(high - low) / (num_thresholds - 1)``.
    """
    import keras

    neg = np.asarray(scores_negative, np.float64).reshape(-1)
    pos = np.asarray(scores_positive, np.float64).reshape(-1)
    if not len(neg) or not len(pos):
        raise ValueError("auroc needs at least one score in each group")
    if not high > low:
        raise ValueError(f"auroc: high must be > low, got {low}, {high}")
    scores = np.clip((np.concatenate([neg, pos]) - low) / (high - low), 0.0, 1.0)
    labels = np.concatenate([np.zeros(len(neg)), np.ones(len(pos))])
    m = keras.metrics.AUC(num_thresholds=num_thresholds)
    m.update_state(labels.astype(np.float32), scores.astype(np.float32))
    return float(keras.ops.convert_to_numpy(m.result()))


TEMPERATURE_BOUNDS = (0.01, 100.0)
"""The interval :func:`fit_temperature` searches ``T`` in: a fit that ends at one of its ends has
no interior optimum (:class:`TemperatureFitError`)."""


class TemperatureFitError(RuntimeError):
    """:func:`fit_temperature` found no optimum inside its bounds: the held-out NLL keeps falling
    towards a bound (e.g. a model at chance level, whose NLL falls as ``T`` grows towards the
    uniform prediction), or the optimiser did not converge.

    Attributes:
      temperature: the ``T`` reached (the bound it hit, or where it stopped).
      bound: ``"upper"`` or ``"lower"`` (the end of :data:`TEMPERATURE_BOUNDS` reached), or
        ``None`` (stopped inside without converging).
      nll: the held-out NLL at ``temperature``.
    """

    def __init__(self, message, temperature, bound, nll):
        super().__init__(message)
        self.temperature, self.bound, self.nll = temperature, bound, nll


def fit_temperature(logits, labels, initial=1.0, bounds=TEMPERATURE_BOUNDS):
    """Temperature ``T`` in ``bounds`` minimising ``-mean log mean_s softmax(z_s / T)[y]`` (held-out data).

    Minimised with ``tfp.optimizer.lbfgs_minimize`` over ``log T``; a minimiser beyond
    ``bounds`` (e.g. ``T -> infinity`` for a model at chance level) is reported at the bound it
    passed, with the NLL there.

    Args:
      logits: ``[S, n, C]`` logits of ``S`` samples (or ``[n, C]`` for one model).
      labels: ``[n]`` integer labels.
      initial: starting ``T`` (inside ``bounds``).
      bounds: ``(lo, hi)``, ``0 < lo < initial < hi``.

    Returns:
      ``(T, nll_at_T)`` as floats.

    Raises:
      TemperatureFitError: the fit ends at a bound (no interior optimum) or does not converge;
        it carries the ``T`` reached, which bound, and the NLL there.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> y = rng.integers(0, 3, size=300)
      >>> guess = np.where(rng.random(300) < 0.6, y, rng.integers(0, 3, size=300))   # 60% right
      >>> logits = 6.0 * np.eye(3)[guess]                    # but always sure
      >>> T, nll_at_T = fit_temperature(logits, y)
      >>> T > 1                                              # the model was over-confident
      True
      >>> fit_temperature(-2.0 * np.eye(3)[y], y)           # logits that point away from the labels
      Traceback (most recent call last):
      ...
      tf_vrre.workflows.image_classification.metrics.TemperatureFitError: fit_temperature: the held-out NLL keeps falling towards the upper bound T = 100 (NLL 1.1120 there; a uniform prediction has log C = 1.0986): no optimum inside [0.01, 100]
    """
    import tensorflow_probability as tfp

    tf = _tf()
    z, lo, hi = _temperature_fit_inputs(logits, labels, initial, bounds)
    zt = tf.constant(z)
    onehot = tf.one_hot(np.asarray(labels).reshape(-1).astype(np.int64), z.shape[-1], dtype=tf.float64)

    def loss(log_t):
        lp = tf.nn.log_softmax(zt / tf.exp(log_t[0]), axis=-1)  # [S, n, C]
        picked = tf.reduce_sum(lp * onehot[None], axis=-1)  # [S, n]
        bma = tf.reduce_logsumexp(picked, axis=0) - tf.math.log(tf.cast(tf.shape(zt)[0], tf.float64))
        return -tf.reduce_mean(bma)

    def value_and_grad(x):
        return tfp.math.value_and_gradient(loss, x)

    res = tfp.optimizer.lbfgs_minimize(
        value_and_grad, tf.constant([np.log(initial)], tf.float64), tolerance=1e-10, max_iterations=200
    )
    t = float(np.exp(res.position.numpy()[0]))
    value = float(res.objective_value.numpy())
    bound = "upper" if not t < hi else "lower" if not t > lo else None  # NaN: upper
    if bound is not None:  # the optimum, if any, lies beyond the bound: reported at the bound
        t = hi if bound == "upper" else lo
        value = float(loss(tf.constant([np.log(t)], tf.float64)).numpy())
        uniform = f"; a uniform prediction has log C = {np.log(z.shape[-1]):.4f}" if bound == "upper" else ""
        raise TemperatureFitError(
            f"fit_temperature: the held-out NLL keeps falling towards the {bound} bound "
            f"T = {t:g} (NLL {value:.4f} there{uniform}): no optimum inside [{lo:g}, {hi:g}]",
            t,
            bound,
            value,
        )
    if not res.converged.numpy():
        raise TemperatureFitError(
            f"fit_temperature: the held-out NLL did not converge in 200 L-BFGS iterations "
            f"(T = {t:.4g}, NLL {value:.4f})",
            t,
            None,
            value,
        )
    return t, value


def _temperature_fit_inputs(logits, labels, initial, bounds):
    """``(z, lo, hi)``: :func:`fit_temperature`'s logits as float64 ``[S, n, C]`` and its bounds,
    checked (``ValueError`` naming the argument)."""
    lo, hi = (float(b) for b in bounds)
    if not (0 < lo < float(initial) < hi and np.isfinite(hi)):
        raise ValueError(f"bounds must be 0 < lo < initial < hi (finite), got bounds {bounds}, initial {initial}")
    z = np.asarray(logits, np.float64)
    if z.ndim == 2:
        z = z[None]
    if z.ndim != 3:
        raise ValueError(f"logits must be [S, n, C] or [n, C], got shape {np.shape(logits)}")
    if not np.all(np.isfinite(z)):
        raise ValueError("logits must be finite")
    _check(np.ones(z.shape[1:]), labels)
    return z, lo, hi


def reliability_bins(probs, labels, num_bins=15):
    """Per equal-width confidence bin ``[k / B, (k + 1) / B)`` (the bins of :func:`ece`):
    ``(lower edge, upper edge, count, mean confidence, accuracy)``."""
    p, y = _check(probs, labels)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, num_bins + 1)
    which = np.clip(np.floor(conf * num_bins).astype(np.int64), 0, num_bins - 1)  # as tfp's ECE bins
    rows = []
    for b in range(num_bins):
        sel = which == b
        count = int(sel.sum())
        rows.append(
            (
                float(edges[b]),
                float(edges[b + 1]),
                count,
                float(conf[sel].mean()) if count else np.nan,
                float(correct[sel].mean()) if count else np.nan,
            )
        )
    return rows
