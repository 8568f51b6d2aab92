"""Chain quality of scalar summaries: effective sample size and R-hat through TFP.

Arrays are laid out like ArviZ: ``[chains, draws, ...]`` (chains = seeds or runs; trailing
dimensions are independent summaries, e.g. validation points).  With ``split=True`` every
chain is cut into two halves first (split-R-hat, Gelman et al. BDA3; Vehtari et al. 2021), so
a single run still gets an R-hat that sees within-run drift.

- ESS: ``tfp.mcmc.effective_sample_size`` with Geyer's initial-positive-pair truncation and,
  for >= 2 (split) chains, the cross-chain estimator of Vehtari et al. (2021): chains stuck in
  different modes give ESS ~ number of chains.
- R-hat: the square root of ``tfp.mcmc.potential_scale_reduction`` over the (split) chains.
- Rank-normalised split R-hat and bulk ESS (Vehtari, Gelman, Simpson, Carpenter and Buerkner
  2021, "Rank-normalization, folding, and localization: an improved R-hat for assessing
  convergence of MCMC", Bayesian Analysis 16(2), Sections 4.1-4.2), vectorised over any number
  of summaries (:func:`rank_normalized_rhat`, :func:`bulk_ess`): what the function-space verdict
  reads for every held-out input.
"""

import contextlib
import logging

import numpy as np
import scipy.special
import scipy.stats


@contextlib.contextmanager
def _quiet_tf():
    """TFP's FFT auto-correlation casts complex128 to float64 and TF logs a warning for every
    call; the imaginary part is zero by construction, so silence it here."""
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _as_chains(values, name):
    x = np.asarray(values, np.float64)
    if x.ndim == 1:
        x = x[None]
    if x.ndim < 2:
        raise ValueError(f"{name} must be [draws] or [chains, draws, ...], got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite values")
    return x


def split_chains(values, split=True):
    """``[chains, draws, ...] -> [2 chains, draws // 2, ...]`` (first and second halves; an
    odd draw count drops the first draw).  ``split=False`` returns the array unchanged."""
    x = _as_chains(values, "values")
    if not split:
        return x
    half = x.shape[1] // 2
    return np.concatenate([x[:, x.shape[1] - 2 * half :][:, :half], x[:, x.shape[1] - half :]], axis=0)


def effective_sample_size(values, split=True):
    """Effective sample size of each summary over all (split) chains with
    ``tfp.mcmc.effective_sample_size``.

    For a stationary AR(1) chain ``x_t = rho x_{t-1} + e_t`` of length ``N`` this estimates
    ``N (1 - rho) / (1 + rho)``.

    Args:
      values: ``[draws]`` or ``[chains, draws, ...]``; at least 4 draws per (split) chain.
      split: cut each chain in halves first.

    Returns:
      float64 array of the trailing shape (a 0-d array for scalar summaries).

    Example:
      >>> ess = effective_sample_size(np.random.default_rng(0).normal(size=(2, 1000)))  # ~2000
      >>> bool(1500 < ess < 2500)
      True
    """
    import tensorflow as tf
    import tensorflow_probability as tfp

    x = split_chains(values, split)
    if x.shape[1] < 4:
        raise ValueError(
            f"values: need at least 4 draws per chain{' after splitting' if split else ''}, got {x.shape[1]}"
        )
    states = tf.constant(np.moveaxis(x, 0, 1))  # [draws, chains, ...]
    with _quiet_tf():
        ess = tfp.mcmc.effective_sample_size(
            states, filter_beyond_positive_pairs=True, cross_chain_dims=1 if x.shape[0] > 1 else None
        )
    ess = np.asarray(ess.numpy(), np.float64)
    return ess[0] if x.shape[0] == 1 else ess


def potential_scale_reduction(values, split=True):
    """R-hat of each summary from ``tfp.mcmc.potential_scale_reduction`` over the (split) chains.

    TFP returns Brooks and Gelman's (1998) variance ratio
    ``V = (m+1)/m * ((n-1)/n W + B/n) / W - (n-1)/(m n)`` (``m`` chains of ``n`` draws, ``W``
    the mean within-chain variance, ``B/n`` the variance of the chain means); this returns
    ``sqrt(V)``, the scale of ArviZ's and Stan's R-hat (values below ~1.01 say the chains
    agree; two chains stuck in different modes give values far above 1).

    Args:
      values: ``[draws]`` or ``[chains, draws, ...]``; at least 2 chains after splitting.
      split: cut each chain in halves first (needed for a single chain).

    Example:
      >>> rhat = potential_scale_reduction(np.random.default_rng(0).normal(size=(4, 500)))  # ~1.00
      >>> bool(abs(rhat - 1) < 0.01)
      True
    """
    import tensorflow as tf
    import tensorflow_probability as tfp

    x = split_chains(values, split)
    if x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError(
            f"values: R-hat needs >= 2 chains of >= 2 draws (use split=True for one chain), "
            f"got {x.shape[0]} x {x.shape[1]}"
        )
    v = tfp.mcmc.potential_scale_reduction(tf.constant(np.moveaxis(x, 0, 1)), independent_chain_ndims=1)
    return np.sqrt(np.asarray(v.numpy(), np.float64))


def chain_summary(values, split=True):
    """Mean, sd, ESS, R-hat and Monte Carlo standard error ``sd / sqrt(ESS)`` of one scalar
    summary, JSON-ready.

    A summary that is constant over all draws has no defined ESS / R-hat: they are ``None``
    (with ``"constant": true``) instead of NaN; so are they when every chain is constant at
    its own value (R-hat infinite).

    Args:
      values: ``[draws]`` or ``[chains, draws]``.
      split: cut each chain in halves first.

    Example:
      >>> beta_by_seed = np.random.default_rng(0).normal(size=(3, 400))   # 3 seeds as chains
      >>> s = chain_summary(beta_by_seed)
      >>> s["chains"], s["draws"], sorted(s)
      (3, 400, ['chains', 'constant', 'draws', 'ess', 'mcse', 'mean', 'rhat', 'sd', 'split'])
    """
    x = _as_chains(values, "values")
    if x.ndim != 2:
        raise ValueError(f"values must be [draws] or [chains, draws], got shape {x.shape}")
    out = {
        "chains": int(x.shape[0]),
        "draws": int(x.shape[1]),
        "split": bool(split),
        "mean": float(x.mean()),
        "sd": float(x.std(ddof=1)) if x.size > 1 else 0.0,
    }
    if np.ptp(x) == 0:
        return out | {"ess": None, "rhat": None, "mcse": None, "constant": True}
    ess = float(effective_sample_size(x, split))
    rhat = float(potential_scale_reduction(x, split))
    ess = ess if np.isfinite(ess) and ess > 0 else None  # e.g. every chain constant at its own value
    rhat = rhat if np.isfinite(rhat) else None
    return out | {"ess": ess, "rhat": rhat, "mcse": out["sd"] / np.sqrt(ess) if ess else None, "constant": False}


def rank_normalize(values, split=True):
    """The normal scores ``Phi^-1((r - 3/8) / (S + 1/4))`` of the pooled ranks ``r`` (average ranks
    for ties) of all ``S`` draws of each summary, laid out as :func:`split_chains` lays them
    (Vehtari et al. 2021, eq. 14).

    Example:
      >>> z = rank_normalize(np.exp(np.random.default_rng(0).normal(size=(4, 100))))
      >>> z.shape, bool(abs(z.mean()) < 1e-12)
      ((8, 50), True)
    """
    x = split_chains(values, split)
    flat = x.reshape(x.shape[0] * x.shape[1], -1)
    ranks = scipy.stats.rankdata(flat, axis=0)
    z = scipy.special.ndtri((ranks - 0.375) / (flat.shape[0] + 0.25))
    return z.reshape(x.shape)


def _split_rhat(x):
    """Vehtari et al.'s (2021, eq. 3-4) R-hat of chains ``x`` ``[m, n, ...]`` already split:
    ``sqrt(((n - 1) / n W + B / n) / W)``; ``inf`` where every chain is constant at its own value,
    ``nan`` where all draws are equal."""
    n = x.shape[1]
    within = x.var(axis=1, ddof=1).mean(axis=0)
    between_n = x.mean(axis=1).var(axis=0, ddof=1)
    pooled = (n - 1) / n * within + between_n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            within > 0, np.sqrt(pooled / np.where(within > 0, within, 1.0)), np.where(pooled > 0, np.inf, np.nan)
        )


def rank_normalized_rhat(values, split=True):
    """Rank-normalised split R-hat of each summary: the larger of the bulk R-hat (of the rank
    normalised draws) and the tail R-hat (of the rank normalised ``|x - median|``), Vehtari et al.
    (2021, Section 4.2), the statistic ArviZ and Stan report.  Draws of a summary that are all
    equal give ``nan`` (nothing to judge); chains each constant at its own value give ``inf``.

    Args:
      values: ``[draws]`` or ``[chains, draws, ...]``; at least 2 (split) chains of >= 2 draws.
      split: cut each chain in halves first (needed for a single chain).

    Example:
      >>> rng = np.random.default_rng(0)
      >>> same, apart = rng.normal(size=(4, 200)), rng.normal(size=(4, 200)) + [[0], [0], [0], [3]]
      >>> bool(rank_normalized_rhat(same) < 1.01), bool(rank_normalized_rhat(apart) > 1.1)
      (True, True)
    """
    x = split_chains(values, split)
    if x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError(
            f"values: R-hat needs >= 2 chains of >= 2 draws after splitting, got {x.shape[0]} x {x.shape[1]}"
        )
    constant = np.ptp(x.reshape(-1, *x.shape[2:]), axis=0) == 0
    within_constant = (np.ptp(x, axis=1) == 0).all(axis=0)
    bulk = _split_rhat(rank_normalize(x, split=False))
    folded = _split_rhat(rank_normalize(np.abs(x - np.median(x.reshape(-1, *x.shape[2:]), axis=0)), split=False))
    rhat = np.fmax(bulk, folded)
    rhat = np.where(within_constant & ~constant, np.inf, rhat)  # ties make the ranks of such chains equal
    return np.where(constant, np.nan, rhat)


def bulk_ess(values, split=True):
    """Bulk effective sample size of each summary: :func:`effective_sample_size` (TFP's cross-chain
    estimator) of the rank normalised draws (Vehtari et al. 2021, Section 4.1), at least 0 (TFP's
    estimate goes negative for a few draws of chains that disagree); ``nan`` where all draws are
    equal.

    Example:
      >>> ess = bulk_ess(np.random.default_rng(0).normal(size=(4, 500)))   # iid: ~2000
      >>> bool(1500 < ess < 2500)
      True
    """
    x = split_chains(values, split)
    constant = np.ptp(x.reshape(-1, *x.shape[2:]), axis=0) == 0
    ess = effective_sample_size(rank_normalize(x, split=False), split=False)
    return np.where(constant, np.nan, np.maximum(ess, 0.0))
