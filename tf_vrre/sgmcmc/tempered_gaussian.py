"""Exact answers for the standard Gaussian in ``d`` dimensions, tempered: ``N(0, I_d / b)`` at
inverse temperature ``b = 1 / tau`` (energy ``|x|^2 / 2``, exact energies).  The reference the
ladder numerics (:mod:`tf_vrre.sgmcmc.ladder`) are tested and benchmarked against: the swap
rejection rate of two chains, the local barrier and the global barrier.

Example:
  >>> round(gaussian_barrier(4, 0.01), 3)          # tau from 1 to 100 in 4 dimensions
  3.454
"""

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special


def gaussian_rejection(ratio: ArrayLike, dim: int) -> np.ndarray:
    """Exact swap rejection rate of two chains on ``N(0, I_d / b)`` (energy ``|x|^2 / 2``, exact
    energies) with ``ratio = b_hot / b_cold`` in ``(0, 1]``: ``1 - 2 I_{ratio / (1 + ratio)}(d/2, d/2)``.

    Derivation: ``U = G / b`` with ``G ~ Gamma(d/2, 1)``.  The swap's log-ratio
    ``W = (b_c - b_h)(U_c - U_h)`` changes sign when the two states are exchanged, and the
    exchange maps the product law onto itself with density ratio ``e^W``, so the acceptance
    ``E min(1, e^W) = P(W > 0) + E[e^W; W < 0] = 2 P(W > 0)``.  ``W > 0`` iff
    ``G_h / (G_c + G_h) < ratio / (1 + ratio)``, and ``G_h / (G_c + G_h) ~ Beta(d/2, d/2)``
    (Predescu, Predescu & Ciobanu 2004: the incomplete beta function law).

    Example:
      >>> round(float(gaussian_rejection(0.5, 2)), 4), float(gaussian_rejection(1.0, 7))
      (0.3333, 0.0)
    """
    rho = np.asarray(ratio, np.float64)
    if np.any(rho <= 0) or np.any(rho > 1):
        raise ValueError("ratio = b_hot / b_cold must be in (0, 1]")
    k = dim / 2.0
    return 1.0 - 2.0 * special.betainc(k, k, rho / (1.0 + rho))


def gaussian_local_barrier(beta: ArrayLike, dim: int) -> np.ndarray:
    """Exact local barrier of ``N(0, I_d / b)``: ``Gamma((d+1)/2) / (sqrt(pi) Gamma(d/2) b)``.

    ``lambda(b) = E|U - U'| / 2 = E|G - G'| / (2 b)`` with ``G, G' ~ Gamma(d/2, 1)``; writing
    ``G - G' = (G + G')(2B - 1)`` with ``G + G' ~ Gamma(d)`` independent of ``B ~ Beta(d/2, d/2)``
    gives ``E|G - G'| = 2 Gamma((d+1)/2) / (sqrt(pi) Gamma(d/2))``.  For large ``d`` this is
    ``sqrt(d / (2 pi)) / b`` (the normal limit, ``Var U = d / (2 b^2)``).

    Example:
      >>> float(gaussian_local_barrier(1.0, 2)), round(float(gaussian_local_barrier(0.5, 1)), 4)
      (0.5, 0.6366)
    """
    return _gaussian_constant(dim) / np.asarray(beta, np.float64)


def _gaussian_constant(dim: float) -> float:
    if not dim > 0:
        raise ValueError(f"dim must be > 0, got {dim!r}")
    return math.exp(special.gammaln((dim + 1) / 2.0) - special.gammaln(dim / 2.0)) / math.sqrt(math.pi)


def gaussian_barrier(dim: int, beta_min: float, beta_max: float = 1.0) -> float:
    """Exact global barrier of ``N(0, I_d / b)`` for ``b`` in ``[beta_min, beta_max]``:
    ``Gamma((d+1)/2) / (sqrt(pi) Gamma(d/2)) log(beta_max / beta_min)``, which tends to
    ``sqrt(d / (2 pi)) log(beta_max / beta_min)``.  The local barrier ``~ 1 / b`` makes the
    optimal (equal-rejection) ladder geometric, for every ``d``.

    Example:
      >>> round(gaussian_barrier(10, 0.01), 3), round(math.sqrt(10 / (2 * math.pi)) * math.log(100), 3)
      (5.667, 5.81)
    """
    if not 0 < beta_min < beta_max:
        raise ValueError(f"need 0 < beta_min < beta_max, got {beta_min!r}, {beta_max!r}")
    return _gaussian_constant(dim) * math.log(beta_max / beta_min)
