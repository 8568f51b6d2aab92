"""Estimators of the swap-energy variance and of the control-variate coefficient.

All statistics are *within-batch*: for a mini-batch ``B`` of size ``n`` drawn without
replacement from ``N`` examples and per-example values ``d_i``, the estimator
``(N/n) sum_{i in B} d_i`` has variance ``N^2 (1 - n/N) S^2 / n`` where ``S^2`` is the
population variance of ``d``; the sample variance of ``d`` over the batch is unbiased for
``S^2``.  So each swap attempt yields an estimate of ``Var(U~_1 - U~_2)`` at the *current*
weights, with no extra forward pass.  Sums are float64.
"""

from __future__ import annotations

import tensorflow as tf


def moments(values: tf.Tensor) -> tf.Tensor:
    """``[count, sum, sum of squares]`` of a 1-D tensor, float64 (to be all-reduced)."""
    v = tf.cast(tf.reshape(values, [-1]), tf.float64)
    return tf.stack([tf.cast(tf.size(v), tf.float64), tf.reduce_sum(v), tf.reduce_sum(v * v)])


def cross_moments(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """``[count, sum a, sum b, sum a*b, sum b*b]`` of two 1-D tensors, float64."""
    a = tf.cast(tf.reshape(a, [-1]), tf.float64)
    b = tf.cast(tf.reshape(b, [-1]), tf.float64)
    return tf.stack(
        [
            tf.cast(tf.size(a), tf.float64),
            tf.reduce_sum(a),
            tf.reduce_sum(b),
            tf.reduce_sum(a * b),
            tf.reduce_sum(b * b),
        ]
    )


def sample_variance(count: tf.Tensor, total: tf.Tensor, total_sq: tf.Tensor) -> tf.Tensor:
    """Unbiased sample variance from moments (0 when ``count < 2``)."""
    mean = tf.math.divide_no_nan(total, count)
    ss = tf.maximum(total_sq - count * mean * mean, 0.0)
    return tf.math.divide_no_nan(ss, tf.maximum(count - 1.0, 0.0))


def estimator_variance(count: tf.Tensor, total: tf.Tensor, total_sq: tf.Tensor, data_size: int) -> tf.Tensor:
    """Variance of ``(N/n) sum_B d_i`` estimated from one batch's moments of ``d``.

    ``N^2 (1 - n/N) S^2 / n`` (sampling without replacement).
    """
    n = count
    big_n = tf.cast(data_size, tf.float64)
    fpc = tf.maximum(1.0 - n / big_n, 0.0)
    return big_n * big_n * fpc * tf.math.divide_no_nan(sample_variance(count, total, total_sq), n)


def covariance_and_variance(cm: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """``(Cov(a, b), Var(b))`` (unbiased) from :func:`cross_moments` output."""
    n, sa, sb, sab, sbb = tf.unstack(cm, axis=-1)
    cov = tf.math.divide_no_nan(sab - sa * sb / tf.maximum(n, 1.0), tf.maximum(n - 1.0, 0.0))
    var = sample_variance(n, sb, sbb)
    return cov, var


def stochastic_approximation(
    old: tf.Tensor, new: tf.Tensor, smoothing: float, initialized: tf.Tensor | bool
) -> tf.Tensor:
    """``(1 - gamma) old + gamma new``; the first estimate is taken as is."""
    return tf.where(initialized, (1.0 - smoothing) * old + smoothing * new, new)


def window_ends(step: tf.Tensor, period: int) -> tf.Tensor:
    """True on the last step of each window of ``period`` steps (``(step + 1) % period == 0``)."""
    return tf.equal(tf.math.floormod(step + 1, period), 0)


def windowed_estimate(
    estimate: tf.Tensor,
    total: tf.Tensor,
    weight: tf.Tensor,
    smoothing: float,
    reset: tf.Tensor,
    initialized: tf.Tensor | bool,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Folds a window's ratio statistic into ``estimate`` at the window's end.

    ``value = total / weight`` (e.g. the mean within-batch variance of the window, or
    ``-Cov / Var`` for the control-variate coefficient); where the window ends (``reset``) and
    holds data (``weight > 0``): ``estimate <- (1 - gamma) estimate + gamma value`` (the value
    itself while not ``initialized``).  Returns ``(new estimate, ended)``.
    """
    value = tf.math.divide_no_nan(total, weight)
    ended = tf.logical_and(reset, weight > 0)
    new = stochastic_approximation(estimate, value, smoothing, initialized)
    return tf.where(ended, new, estimate), ended
