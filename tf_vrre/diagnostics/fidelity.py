"""How close is a sampler's posterior predictive to a reference's (e.g. a long full-batch HMC)?

Pure functions of arrays (no TensorFlow), on held-out points ``i = 1..n``:

- classification, on the Bayesian model averages ``p_i = mean_s softmax(f_s(x_i))`` of the
  sampler and ``q_i`` of the reference (Izmailov, Vikram, Hoffman, Wilson 2021):
  :func:`agreement` ``= mean_i [argmax p_i = argmax q_i]`` and :func:`total_variation`
  ``= mean_i 1/2 sum_c |p_ic - q_ic|``;
- regression, on draws of the network's output ``f_s(x_i)`` (the posterior of the regression
  function; the observation noise is left out, since it would blur every difference by the
  same amount): :func:`wasserstein_1`, the 1-Wasserstein distance of the two empirical laws at
  each point in units of the reference's posterior standard deviation there, and
  :func:`ks_distance`, the two-sample Kolmogorov-Smirnov statistic, both averaged over points;
- the held-out negative log-likelihood of the predictive: :func:`classification_nll`,
  :func:`regression_nll` (Gaussian observation noise of a known scale);
- :func:`classification_fidelity` / :func:`regression_fidelity`: all of these as one dict.

A perfect sampler with finitely many draws is not at distance 0: Monte Carlo error of both
sides puts a floor under every distance (compare two halves of the reference to see it).
The regression distances use ``scipy.stats`` (``pip install "tf_vrre[benchmarks]"``).
"""

import numpy as np

_PROB_TOL = 1e-4


def _probabilities(probs, name):
    p = np.asarray(probs, np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"{name} must be predictive probabilities [points, classes >= 2], got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(np.abs(p.sum(1) - 1) > _PROB_TOL):
        raise ValueError(f"{name} must be finite, >= 0 and sum to 1 over classes (within {_PROB_TOL})")
    return p


def _pair(probs, reference_probs):
    p, q = _probabilities(probs, "probs"), _probabilities(reference_probs, "reference_probs")
    if p.shape != q.shape:
        raise ValueError(f"probs {p.shape} and reference_probs {q.shape} must have the same shape")
    return p, q


def _draws(draws, name, min_draws=1):
    d = np.asarray(draws, np.float64)
    if d.ndim == 3 and d.shape[2] == 1:
        d = d[..., 0]
    if d.ndim != 2 or d.shape[0] < min_draws or not np.all(np.isfinite(d)):
        raise ValueError(
            f"{name} must be finite draws [draws >= {min_draws}, points] (or [draws, points, 1]), "
            f"got shape {np.shape(draws)}"
        )
    return d


def _draw_pair(draws, reference_draws):
    d, r = _draws(draws, "draws"), _draws(reference_draws, "reference_draws", min_draws=2)
    if d.shape[1] != r.shape[1]:
        raise ValueError(
            f"draws ({d.shape[1]} points) and reference_draws ({r.shape[1]} points) must cover the same points"
        )
    return d, r


def _labels(labels, n, integer):
    y = np.asarray(labels)
    y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
    if y.shape != (n,):
        raise ValueError(f"labels must have one entry per point ({n}), got shape {np.shape(labels)}")
    if integer and not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be integer class indices, got dtype {y.dtype}")
    return y


def _scipy_stats():
    try:
        import scipy.stats
    except ImportError:
        raise ImportError('the regression distances need SciPy: pip install "tf_vrre[benchmarks]"') from None
    return scipy.stats


def agreement(probs, reference_probs):
    """Top-1 agreement: the fraction of points whose most probable class is the reference's.

    Args:
      probs, reference_probs: predictive probabilities ``[points, classes]`` (model averages).

    Example:
      >>> p = np.array([[0.9, 0.1], [0.4, 0.6], [0.5, 0.5]])
      >>> q = np.array([[0.8, 0.2], [0.7, 0.3], [0.6, 0.4]])
      >>> agreement(p, q)      # points 1 and 3 agree (a tie goes to the first class)
      0.6666666666666666
    """
    p, q = _pair(probs, reference_probs)
    return float(np.mean(np.argmax(p, 1) == np.argmax(q, 1)))


def total_variation(probs, reference_probs):
    """Mean total-variation distance ``mean_i 1/2 sum_c |p_ic - q_ic|`` (0: equal, 1: disjoint).

    Example:
      >>> p = np.array([[0.9, 0.1], [0.4, 0.6]])
      >>> q = np.array([[0.8, 0.2], [0.7, 0.3]])
      >>> round(total_variation(p, q), 12)        # (0.1 + 0.3) / 2
      0.2
    """
    p, q = _pair(probs, reference_probs)
    return float(np.mean(0.5 * np.abs(p - q).sum(1)))


def wasserstein_1(draws, reference_draws, standardize=True):
    """Mean over points of the 1-Wasserstein distance between the draws' and the reference's
    empirical laws of ``f(x_i)`` (``scipy.stats.wasserstein_distance``), each divided by the
    reference's posterior standard deviation at that point when ``standardize``.

    For two normal laws with equal spread, ``W1 = |mean difference|``: a shift by one posterior
    standard deviation gives 1.

    Args:
      draws: ``[draws, points]`` (or ``[draws, points, 1]``) network outputs of the sampler.
      reference_draws: the reference's, ``[reference draws >= 2, points]``.
      standardize: divide each point's distance by the reference's sd there.

    Example:
      >>> ref = np.array([[0.0, 1.0], [2.0, 3.0]])       # two draws at two points; sd sqrt(2)
      >>> round(wasserstein_1(ref + 1.0, ref, standardize=False), 12)
      1.0
      >>> round(float(wasserstein_1(ref + 1.0, ref) * np.sqrt(2)), 12)
      1.0
    """
    d, r = _draw_pair(draws, reference_draws)
    stats = _scipy_stats()
    w = np.array([stats.wasserstein_distance(d[:, i], r[:, i]) for i in range(d.shape[1])])
    if standardize:
        sd = r.std(0, ddof=1)
        if np.any(sd <= 0):
            raise ValueError("reference_draws: constant at some point; use standardize=False")
        w = w / sd
    return float(np.mean(w))


def ks_distance(draws, reference_draws):
    """Mean over points of the two-sample Kolmogorov-Smirnov statistic ``sup_t |F(t) - G(t)|``
    between the draws and the reference at each point (``scipy.stats.ks_2samp``; 0 to 1).

    Example:
      >>> ref = np.array([[0.0], [1.0], [2.0], [3.0]])
      >>> ks_distance(ref + 1.5, ref)     # at t = 1: F = 0, G = 1/2; at t = 2: F = 1/4, G = 3/4
      0.5
    """
    d, r = _draw_pair(draws, reference_draws)
    stats = _scipy_stats()
    return float(np.mean([stats.ks_2samp(d[:, i], r[:, i]).statistic for i in range(d.shape[1])]))


def classification_nll(probs, labels):
    """Held-out negative log-likelihood ``-mean_i log p_i[y_i]`` of predictive probabilities.

    Example:
      >>> round(classification_nll(np.array([[0.5, 0.5], [0.25, 0.75]]), [0, 1]), 6)   # -(ln .5 + ln .75)/2
      0.490415
    """
    p = _probabilities(probs, "probs")
    y = _labels(labels, len(p), integer=True)
    if np.any((y < 0) | (y >= p.shape[1])):
        raise ValueError(f"labels must be class indices in [0, {p.shape[1]})")
    return float(-np.mean(np.log(np.maximum(p[np.arange(len(p)), y], np.finfo(np.float64).tiny))))


def regression_nll(draws, labels, noise_scale):
    """Held-out negative log-likelihood of the posterior predictive
    ``p(y_i) = mean_s N(y_i; f_s(x_i), noise_scale^2)`` (log-mean-exp over draws), averaged over points.

    Example:
      >>> f = np.array([[0.0, 1.0]])      # one draw, two points, observed exactly at f
      >>> round(regression_nll(f, [0.0, 1.0], noise_scale=1.0), 6)   # log sqrt(2 pi)
      0.918939
    """
    d = _draws(draws, "draws")
    y = _labels(labels, d.shape[1], integer=False).astype(np.float64)
    if isinstance(noise_scale, bool) or not isinstance(noise_scale, (int, float)) or not noise_scale > 0:
        raise ValueError(f"noise_scale must be a number > 0, got {noise_scale!r}")
    log_n = -0.5 * ((y - d) / noise_scale) ** 2 - np.log(noise_scale * np.sqrt(2 * np.pi))
    log_mean = np.logaddexp.reduce(log_n, axis=0) - np.log(d.shape[0])
    return float(-np.mean(log_mean))


def classification_fidelity(probs, reference_probs, labels=None):
    """``{"agreement", "total_variation"}`` against the reference, plus ``"nll"`` and
    ``"reference_nll"`` when ``labels`` are given.

    Example:
      >>> p = np.array([[0.9, 0.1], [0.4, 0.6]])
      >>> {k: round(v, 4) for k, v in classification_fidelity(p, p, labels=[0, 1]).items()}
      {'agreement': 1.0, 'total_variation': 0.0, 'nll': 0.3081, 'reference_nll': 0.3081}
    """
    out = {"agreement": agreement(probs, reference_probs), "total_variation": total_variation(probs, reference_probs)}
    if labels is not None:
        out |= {"nll": classification_nll(probs, labels), "reference_nll": classification_nll(reference_probs, labels)}
    return out


def regression_fidelity(draws, reference_draws, labels=None, noise_scale=None):
    """``{"wasserstein_1", "ks_distance"}`` against the reference, plus ``"nll"`` and
    ``"reference_nll"`` when ``labels`` and ``noise_scale`` are given.

    Example:
      >>> ref = np.random.default_rng(0).normal(size=(400, 3))
      >>> out = regression_fidelity(ref + 0.5, ref, labels=[0.0, 0.0, 0.0], noise_scale=1.0)
      >>> round(out["wasserstein_1"], 1), round(out["ks_distance"], 1)    # half an sd apart: 0.5, 0.197
      (0.5, 0.2)
    """
    out = {"wasserstein_1": wasserstein_1(draws, reference_draws), "ks_distance": ks_distance(draws, reference_draws)}
    if labels is not None and noise_scale is not None:
        out |= {
            "nll": regression_nll(draws, labels, noise_scale),
            "reference_nll": regression_nll(reference_draws, labels, noise_scale),
        }
    return out
