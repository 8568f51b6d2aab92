"""Accuracy and uncertainty metrics of (Bayesian-model-averaged) class probabilities.

All functions take predictive probabilities ``p`` ``[n, C]`` (e.g. the BMA
``mean_s softmax(z_s / T)``) and integer labels ``[n]``, and use TensorFlow Probability /
Keras / SciPy where they provide the metric:

- ``accuracy``: ``mean(argmax p == y)``;
- ``nll``: ``-mean log p_y``, from the log-probabilities when given (:func:`log_bma`: the BMA in log
  space, ``logsumexp_s log_softmax(z_s / T) - log S``), so nothing is clipped: a confidently wrong
  prediction costs its full ``-log p_y`` (a probability clipped at ``1e-7`` or ``1e-300`` would
  understate it); ``heldout_nll`` is that NLL straight from the samples' logits;
- ``brier``: ``mean_i sum_j (p_ij - 1[j = y_i])^2`` (the paper's footnote; ``tfp.stats.brier_score``
  is ``sum_j p_j^2 - 2 p_y``, one less);
- ``ece``: expected calibration error with equal-width confidence bins
  (``tfp.stats.expected_calibration_error``, Guo et al. 2017 eq. 3);
- ``entropy``: ``-sum_j p_j log p_j`` per example (``tfp.distributions.Categorical``);
- ``ood_brier``: ``mean_i sum_j p_ij^2``, the Brier score when none of the known classes
  occurs (out-of-distribution images); its optimum, the uniform prediction, is ``1 / C``
  (the paper's "optimal 0.1" for SVHN under CIFAR-10 models);
- ``auroc``: area under the ROC curve separating two score samples (``keras.metrics.AUC``);
- ``fit_temperature``: ``T`` in ``[0.01, 100]`` minimising :func:`heldout_nll` (a grid over
  ``log T`` brackets the minimum, ``scipy.optimize.minimize_scalar`` refines it); a fit without an
  optimum inside them, or over an NLL that does not depend on ``T``, raises
  :class:`TemperatureFitError` saying which.

Example:
  >>> logits = np.array([[[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]],     # [S = 2 samples, n = 3, C = 2]
  ...                    [[1.0, 0.0], [0.5, 0.0], [3.0, 0.0]]])
  >>> y = np.array([0, 1, 1])
  >>> p = softmax(logits).mean(axis=0)                   # the BMA, [n, C]
  >>> [round(float(v), 3) for v in (accuracy(p, y), nll(p, y), brier(p, y), ece(p, y, num_bins=15))]
  [0.667, 0.883, 0.63, 0.364]
"""

import numpy as np
import scipy.optimize
import scipy.special

__all__ = [
    "accuracy",
    "nll",
    "heldout_nll",
    "log_softmax",
    "log_bma",
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


def log_softmax(logits, temperature=1.0):
    """``log softmax(logits / T)`` along the last axis (float64, ``scipy.special.log_softmax``):
    exact where the probability itself underflows to 0."""
    return scipy.special.log_softmax(np.asarray(logits, np.float64) / float(temperature), axis=-1)


def log_bma(logits, temperature=1.0):
    """``log mean_s softmax(z_s / T)`` of ``[S, n, C]`` logits (``[n, C]``: one sample), in log space:
    ``logsumexp_s log_softmax(z_s / T) - log S``."""
    z = np.asarray(logits, np.float64)
    z = z[None] if z.ndim == 2 else z
    return scipy.special.logsumexp(log_softmax(z, temperature), axis=0) - np.log(z.shape[0])


def accuracy(probs, labels):
    """Fraction of examples whose most probable class is the label."""
    p, y = _check(probs, labels)
    return float(np.mean(p.argmax(axis=1) == y))


def nll(probs, labels, log_probs=None):
    """Mean negative log-likelihood ``-mean log p_y``, never clipped.

    Args:
      probs: ``[n, C]`` probabilities (their ``log`` is used without ``log_probs``: a label whose
        probability underflowed to 0 gives ``inf``).
      labels: ``[n]`` integer labels.
      log_probs: ``[n, C]`` log-probabilities of the same predictions (e.g. :func:`log_bma`): the
        exact NLL, however confident and wrong a prediction is.
    """
    p, y = _check(probs, labels)
    if log_probs is None:
        with np.errstate(divide="ignore"):
            return float(-np.mean(np.log(p[np.arange(len(y)), y])))
    lp = np.asarray(log_probs, np.float64)
    if lp.shape != p.shape or np.isnan(lp).any() or np.any(lp > 1e-9):
        raise ValueError(f"log_probs must be {p.shape} log-probabilities (<= 0, no NaN), got shape {lp.shape}")
    return float(-np.mean(lp[np.arange(len(y)), y]))


def heldout_nll(logits, labels, temperature=1.0):
    """``-mean_i log mean_s softmax(z_si / T)[y_i]``: the NLL of the samples' average at
    temperature ``T``, from ``[S, n, C]`` (or ``[n, C]``) logits in log space (nothing clipped);
    what :func:`fit_temperature` minimises.

    Example:
      >>> z = np.array([[[40.0, 0.0]], [[0.0, 40.0]]])     # two samples, one image: sure, and opposite
      >>> round(heldout_nll(z, [0]), 4)                     # log 2: one of the two is right
      0.6931
      >>> round(heldout_nll(z[:1], [1]), 1)                 # alone and wrong: 40 nats, not log(1e300)
      40.0
    """
    z = np.asarray(logits, np.float64)
    z = z[None] if z.ndim == 2 else z
    y = np.asarray(labels).reshape(-1).astype(np.int64)
    scaled = z / float(temperature)
    picked = np.take_along_axis(scaled, y[None, :, None], axis=-1)[..., 0] - scipy.special.logsumexp(scaled, axis=-1)
    return float(-np.mean(scipy.special.logsumexp(picked, axis=0) - np.log(z.shape[0])))


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
    """:func:`fit_temperature` found no optimum inside its bounds: the held-out NLL is lowest at a
    bound (e.g. a model at chance level, whose NLL falls as ``T`` grows towards the uniform
    prediction), it is the same at every ``T`` (saturated predictions), or the optimiser did not
    converge.

    Attributes:
      temperature: the ``T`` reached (the bound where the NLL is lowest; ``initial`` for a flat NLL).
      bound: ``"upper"`` or ``"lower"`` (the end of :data:`TEMPERATURE_BOUNDS` where the NLL is
        lowest), or ``None`` (flat, or not converged).
      nll: the held-out NLL at ``temperature``.
    """

    def __init__(self, message, temperature, bound, nll):
        super().__init__(message)
        self.temperature, self.bound, self.nll = temperature, bound, nll


GRID = 81
"""Log-spaced temperatures over the bounds where :func:`fit_temperature` evaluates the NLL first
(a ratio of ``10**(4/80) = 1.12`` between neighbours over ``[0.01, 100]``)."""


def fit_temperature(logits, labels, initial=1.0, bounds=TEMPERATURE_BOUNDS):
    """Temperature ``T`` in ``bounds`` minimising :func:`heldout_nll` (held-out data).

    The NLL is evaluated on :data:`GRID` log-spaced temperatures across ``bounds`` (in log space:
    exact for logits of any size), and the best one's neighbourhood is searched with
    ``scipy.optimize.minimize_scalar`` (bounded Brent over ``log T``).  No gradient is followed, so
    over-confident samples (logits in the thousands, where the NLL is flat over a range of ``T`` and
    steep elsewhere) are fitted like any other.  When the lowest NLL is a plateau that holds
    ``initial`` (predictions saturated at every ``T`` up to some value), ``initial`` is returned: no
    temperature there does better.

    Args:
      logits: ``[S, n, C]`` logits of ``S`` samples (or ``[n, C]`` for one model).
      labels: ``[n]`` integer labels.
      initial: the reference ``T`` (no scaling: 1): the messages compare with the NLL there.
      bounds: ``(lo, hi)``, ``0 < lo < initial < hi``.

    Returns:
      ``(T, nll_at_T)`` as floats.

    Raises:
      TemperatureFitError: the NLL is lowest at a bound (no interior optimum), the same at every
        ``T``, or the search did not converge; it carries the ``T`` reached, which bound, and the
        NLL there, and its message the NLL at ``initial``.

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
      tf_vrre.workflows.image_classification.metrics.TemperatureFitError: fit_temperature: the held-out NLL is lowest at the upper bound T = 100 (NLL 1.1120 there, 2.7586 at T = 1; a uniform prediction has log C = 1.0986): no optimum inside [0.01, 100]
    """
    z, lo, hi = _temperature_fit_inputs(logits, labels, initial, bounds)
    y = np.asarray(labels).reshape(-1).astype(np.int64)

    def loss(log_t):
        return heldout_nll(z, y, np.exp(log_t))

    grid = np.linspace(np.log(lo), np.log(hi), GRID)
    values = np.array([loss(g) for g in grid])
    at_initial = loss(np.log(initial))
    compare = f"{at_initial:.4f} at T = {float(initial):g}"
    if values.max() - values.min() <= 1e-12 * max(1.0, abs(values.min())):
        raise TemperatureFitError(
            f"fit_temperature: the held-out NLL is the same at every T in [{lo:g}, {hi:g}] (NLL {at_initial:.4f}): "
            "the samples' predictions are saturated (each image's probabilities 0 or 1 at any of these T), "
            "so no temperature changes them",
            float(initial),
            None,
            at_initial,
        )
    i = int(np.argmin(values))  # the first of equal values: the lowest T
    if _plateau_holds(grid, values, i, np.log(initial)) and at_initial <= values[i]:
        return float(initial), at_initial  # a plateau of the lowest NLL (saturated predictions) that holds T = initial
    res, t, value = _refine(loss, grid, values, i)
    bound = "lower" if i == 0 and values[0] <= value else "upper" if i == GRID - 1 and values[-1] <= value else None
    if bound is not None:  # the optimum, if any, lies beyond the bound: reported at the bound
        t, value = (lo, float(values[0])) if bound == "lower" else (hi, float(values[-1]))
        uniform = f"; a uniform prediction has log C = {np.log(z.shape[-1]):.4f}" if bound == "upper" else ""
        raise TemperatureFitError(
            f"fit_temperature: the held-out NLL is lowest at the {bound} bound T = {t:g} (NLL {value:.4f} there, "
            f"{compare}{uniform}): no optimum inside [{lo:g}, {hi:g}]",
            t,
            bound,
            value,
        )
    if not res.success:
        raise TemperatureFitError(
            f"fit_temperature: the search for T did not converge (T = {t:.4g}, NLL {value:.4f}, {compare})",
            t,
            None,
            value,
        )
    return t, float(value)


def _plateau_holds(grid, values, i, log_initial):
    """Whether the lowest NLL on the grid (first at ``grid[i]``) is a plateau of more than one
    point that holds ``log_initial``."""
    low = values <= values.min() + 1e-12 * max(1.0, abs(values.min()))
    last = i
    while last + 1 < GRID and low[last + 1]:
        last += 1
    return last > i and grid[i] <= log_initial <= grid[last]


def _refine(loss, grid, values, i):
    """Bounded Brent over ``log T`` between the grid's best point's neighbours: the search's
    result, and ``(T, NLL)``, the better of its optimum and the grid's best point."""
    res = scipy.optimize.minimize_scalar(
        loss, bounds=(grid[max(i - 1, 0)], grid[min(i + 1, GRID - 1)]), method="bounded", options={"xatol": 1e-10}
    )
    t, value = (float(np.exp(res.x)), float(res.fun)) if res.fun < values[i] else (float(np.exp(grid[i])), values[i])
    return res, t, value


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
