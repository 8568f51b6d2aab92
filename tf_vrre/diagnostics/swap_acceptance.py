"""What a swap with noisy energies accepts, and what an estimator would do on a finer ladder
(NumPy and SciPy only).

A swap of the pair ``(tau_lo, tau_hi)`` tests ``delta (U~_lo - U~_hi)`` with ``delta = 1 / tau_lo -
1 / tau_hi``; an estimator whose difference has noise variance ``sigma^2`` pays ``delta^2 sigma^2 / 2``
nats per swap under the unbiased correction.  :func:`unbiased_acceptance` is the mean acceptance of
one such swap, :func:`acceptance_model` its average over the law of the exact differences during a
pilot, and :func:`ladder_prediction` the rejections and barrier of the ladder an estimator asks for.
:func:`tf_vrre.diagnostics.advice.recommend` decides with them.

The noise variance of a pair is not one number over a run: it is that of the per-example loss
differences between the two chains' states, so it follows their distance.  In a locally Gaussian
mode with ``D`` weights, the states sit apart by ``d ~ N(0, (tau_lo + tau_hi) Sigma)`` and
``sigma^2(d) = (N^2 / n) d' C d`` (``C`` the per-example gradients' covariance) is its mean times
``chi^2_nu / nu``, with ``nu = D`` when every direction weighs alike (``nu <= D`` otherwise).  The
acceptance is convex in ``sigma^2``: steps where the pair sits close (little noise, a small
penalty) accept far more than the mean noise suggests.  On a model with few weights this decides
whether a finer ladder swaps at all; on a network (``D`` in the thousands) it changes nothing.
Given ``dof`` (:func:`noise_dof`: the pilot's weights per chain, or more where its own records of
the noise spread less), :func:`acceptance_model` and :func:`ladder_prediction` average over that
law (:func:`noise_law`).  For two states of one mode ``nu = D`` is the narrowest law the model
allows, so the average is the lowest acceptance it allows; states apart by more than their spread
give a narrower law, which the records show.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special, stats


def unbiased_acceptance(scaled_diff: Any, extra: Any, penalty: Any) -> np.ndarray:
    """``E min(1, exp(X))``, ``X ~ N(scaled_diff - penalty, extra)``: the mean acceptance of a swap
    whose scaled energy difference ``delta dU`` is ``scaled_diff``, tested with noise of variance
    ``extra`` (in squared nats) and the correction ``penalty`` (nats).

    With an estimator of noise variance ``sigma^2`` and the unbiased correction, ``extra =
    delta^2 sigma^2`` and ``penalty = delta^2 sigma^2 / 2``; the closed form is
    ``Phi(mu / s) + exp(mu + s^2 / 2) Phi(-(mu + s^2) / s)`` (``mu = scaled_diff - penalty``,
    ``s^2 = extra``), in log space.  ``extra = 0``: ``min(1, exp(scaled_diff - penalty))``.

    Example:
      >>> unbiased_acceptance([0.0, -1.0], 0.0, 0.0).round(4).tolist()           # exact energies
      [1.0, 0.3679]
      >>> float(unbiased_acceptance(0.0, 8.0, 4.0).round(4))    # noise of 8 squared nats: 0.16, not 1
      0.1573
    """
    d, v, pen = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in (scaled_diff, extra, penalty)))
    shape = d.shape
    d, v, pen = d.reshape(-1), v.reshape(-1), pen.reshape(-1)
    mu = d - pen
    out = np.minimum(1.0, np.exp(np.minimum(mu, 0.0)))
    noisy = v > 0
    if np.any(noisy):
        s = np.sqrt(v[noisy])
        m = mu[noisy]
        first = special.log_ndtr(m / s)
        second = m + 0.5 * s * s + special.log_ndtr(-(m + s * s) / s)
        out[noisy] = np.minimum(1.0, np.exp(np.logaddexp(first, second)))
    return out.reshape(shape)


NOISE_POINTS = 64
"""Quantiles of the noise law :func:`noise_law` averages over."""


def noise_law(dof: float | None) -> np.ndarray:
    """Multipliers ``g`` of a pair's mean noise variance: the midpoint quantiles of ``chi^2_nu / nu``
    rescaled to mean 1, ``nu = dof``; ``[1.0]`` for ``None`` (the noise variance taken as
    constant).

    Example:
      >>> g = noise_law(1)
      >>> round(float(g.mean()), 2), round(float(np.mean(g < 1 / 45)), 2)   # one weight: often close
      (1.0, 0.12)
      >>> noise_law(None).tolist()
      [1.0]
    """
    if dof is None:
        return np.ones(1)
    if not dof > 0:
        raise ValueError(f"dof: the noise law's degrees of freedom must be > 0, got {dof!r}")
    q = (np.arange(NOISE_POINTS) + 0.5) / NOISE_POINTS
    g = stats.gamma.ppf(q, dof / 2.0, scale=2.0 / dof)
    return g / g.mean()


def noise_dof(noise_records: Any, num_weights: int | None) -> float | None:
    """The degrees of freedom of :func:`noise_law` for a pilot: the model's weights ``D``, or more
    when the pilot's own records of the noise variance (``[J, P]``: ``J`` measurements of ``P``
    pairs) spread less than ``chi^2_D / D`` (``2 / nu`` is the relative variance of the law; two
    chains whose states sit apart by more than their spread, a hot chain far from the cold one,
    give a narrower, non-central law).  The larger ``nu`` is the cautious one: it credits close
    states less.  ``None`` (the noise variance taken as constant) without ``num_weights``, or
    when the records do not vary at all.

    Example:
      >>> records = np.array([[1.0, 10.0], [3.0, 30.0], [2.0, 20.0]])  # relative variance 1/4
      >>> noise_dof(records, 1), noise_dof(records, 20), noise_dof(records, None)
      (8.0, 20.0, None)
    """
    if num_weights is None:
        return None
    r = np.asarray(noise_records, np.float64)
    r = r[:, np.isfinite(r).all(0) & (r > 0).all(0)] if r.ndim == 2 else r[:0, None]
    if r.shape[0] < 2 or r.shape[1] == 0:
        return float(num_weights)
    relative = float(np.sum((r / r.mean(0) - 1.0) ** 2) / (r.shape[1] * (r.shape[0] - 1)))
    return max(float(num_weights), 2.0 / relative) if relative > 0 else None


def acceptance_model(
    delta: Any, estimates: Any, estimate_var: float, noise_var: float, dof: float | None = None
) -> np.ndarray:
    """The mean acceptance, with the unbiased correction, of an estimator of noise variance
    ``noise_var``, when the exact difference ``dU`` varies over the run as a normal law whose mean
    and variance are those of the pilot's ``estimates`` (mini-batch differences, every step) less
    their own noise variance ``estimate_var``: ``X ~ N(delta mu - delta^2 s / 2, delta^2 (V + s))``
    with ``s = noise_var``, averaged by :func:`unbiased_acceptance`.

    The rare steps where a hot chain's energy comes down to the cold chain's decide a far pair's
    swaps; the law of ``dU`` over every step of the pilot holds them (a few exact measurements
    would miss them), and its tail carries them.  With ``dof``, the noise variance follows
    :func:`noise_law` about its mean ``noise_var`` (and the unbiased penalty with it).

    Example:
      >>> est = np.random.default_rng(0).normal(-20.0, 10.0, 10_000)   # dU ~ N(-20, 6^2) + noise 8^2
      >>> exact, noisy = acceptance_model(0.5, est, 64.0, 0.0), acceptance_model(0.5, est, 64.0, 64.0)
      >>> round(float(exact), 3), round(float(noisy), 4)       # 64 squared nats cost a factor 6
      (0.003, 0.0005)
      >>> round(float(acceptance_model(0.5, est, 64.0, 64.0, dof=1)), 4)    # a one-weight model's noise
      0.0014
    """
    e = np.asarray(estimates, np.float64)
    mu, spread = e.mean(0), np.maximum(e.var(0) - estimate_var, 0.0)
    delta = np.asarray(delta, np.float64)
    g = noise_law(dof).reshape((-1,) + (1,) * np.ndim(delta * mu))
    s = np.asarray(noise_var, np.float64) * g
    return unbiased_acceptance(delta * mu, delta**2 * (spread + s), delta**2 * s / 2.0).mean(0)


def ladder_prediction(
    temperatures: Any, exact_rejection: Any, noise_var: Any, chains: int, dof: float | None = None
) -> dict:
    """What an estimator would do on the ``chains``-chain ladder that shares the exact barrier
    equally (the ladder :class:`tf_vrre.LadderTuner` moves towards), from a pilot on ``temperatures``.

    The exact barrier ``Lambda_x`` (:class:`tf_vrre.sgmcmc.ladder.Barrier` of the pilot's exact-energy
    rejections) gives each new pair ``lambda = Lambda_x / (K - 1)``, an exact swap log-ratio of
    spread ``s_x = sqrt(2 pi) lambda`` (normal energies: ``r = erf(s_x / (2 sqrt 2))``); the
    estimator adds noise of variance ``delta'^2 sigma'^2``, so the pair rejects
    ``erf(sqrt(s_x^2 + delta'^2 sigma'^2) / (2 sqrt 2))``.  ``sigma'^2`` is the noise variance of the
    pilot pair whose span holds the new pair, times ``(tau'_lo + tau'_hi) / (tau_lo + tau_hi)`` (at most
    1): two chains in one locally Gaussian mode sit apart by a distance whose square grows with their
    temperatures, and so do the per-example differences of their losses (a control variate's drift
    from its snapshot likewise).  The noise penalty falls faster than ``delta'^2``: finer ladders
    shrink it, while the exact barrier stays.  With ``dof``, each pair's rejection is averaged over
    :func:`noise_law` about ``sigma'^2``.

    Returns:
      ``{"temperatures", "delta", "rejection", "penalty_nats", "barrier"}`` of the new ladder.
    """
    from tf_vrre.sgmcmc import ladder  # here: the package imports Keras, diagnose reads files without it

    t = np.asarray(temperatures, np.float64)
    bar = ladder.Barrier(t, np.clip(exact_rejection, 0.0, 1.0 - 1e-12))
    b_hot, b_cold = bar.beta_range
    total = float(bar.cumulative(b_cold))
    levels = total * np.arange(chains - 1, -1, -1) / (chains - 1)
    beta = np.array([b_cold] + [bar.beta_at(v) for v in levels[1:-1]] + [b_hot])
    delta = beta[:-1] - beta[1:]
    mid = 0.5 * (beta[:-1] + beta[1:])
    pilot_b = 1.0 / t  # descending
    which = np.clip(np.searchsorted(-pilot_b, -mid) - 1, 0, t.size - 2)
    new_t = 1.0 / beta
    closer = np.minimum(1.0, (new_t[:-1] + new_t[1:]) / (t[which] + t[which + 1]))
    sigma2 = np.asarray(noise_var, np.float64)[which] * closer
    s_x = math.sqrt(2.0 * math.pi) * total / (chains - 1)
    g = noise_law(dof)[:, None]
    rejection = special.erf(np.sqrt(s_x**2 + delta**2 * sigma2 * g) / (2.0 * math.sqrt(2.0))).mean(0)
    return {
        "temperatures": (1.0 / beta).tolist(),
        "delta": delta.tolist(),
        "rejection": rejection.tolist(),
        "penalty_nats": (delta**2 * sigma2 / 2.0).tolist(),
        "barrier": float(np.sum(ladder.pair_barriers(np.minimum(rejection, 1.0 - 1e-12)))),
    }
