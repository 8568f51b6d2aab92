"""Choosing the temperature ladder from swap statistics (host side: NumPy and SciPy, no TensorFlow).

Non-reversible parallel tempering (Syed, Bouchard-Cote, Deligiannidis & Doucet 2021, JRSS-B,
"Non-reversible parallel tempering: a scalable highly parallel MCMC scheme") measures the
difficulty of a ladder by the **communication barrier**.  With inverse temperatures ``b = 1/tau``
and ``U, U'`` independent energies of the chain at ``b``, the *local barrier* is
``lambda(b) = E|U - U'| / 2``; a pair of chains at ``b < b'`` rejects swaps at the rate
``r(b, b') = int_b^b' lambda + O(|b' - b|^3)``, and the *global barrier* is
``Lambda = int lambda`` over the ladder.  From one round of swaps:

- :func:`rejection_rates` - each adjacent pair's rejection rate from its counters (a pair never
  attempted gets the neutral 0.5 of Pigeons.jl, not 0);
- :func:`pair_barriers` - the barrier across each pair, ``(2 / sqrt(pi)) erfinv(r)``;
- :class:`Barrier` - the cumulative barrier over ``b``, a monotone (PCHIP, Fritsch-Carlson type)
  interpolation of the pairs' cumulated barriers, its derivative the local barrier;
- :func:`equal_share_ladder` - Algorithm 2 of Syed et al.: the new ladder gives every pair the
  same share of ``Lambda`` (equal rejection rates: the ladder that maximises the round-trip rate);
  the cold temperature never moves, the hot one only within bounds (:func:`hot_temperature`);
- :func:`recommended_chains`, :func:`round_trip_rate` - how many chains, and NRPT's round-trip
  rate for a ladder;

Example:
  >>> temps = [1.0, 2.0, 4.0, 8.0]                      # a ladder and one round's counters
  >>> r = rejection_rates(attempts=[100, 100, 100], swaps=[80, 50, 20])
  >>> r.tolist()                                        # the hottest pair rejects most
  [0.2, 0.5, 0.8]
  >>> barrier = Barrier(temps, r, attempts=[100, 100, 100])
  >>> round(barrier.total, 2), recommended_chains(barrier.total)
  (1.76, 4)
  >>> equal_share_ladder(barrier).round(2).tolist()    # its chains move closer, the cold pair's apart
  [1.0, 3.39, 5.42, 8.0]

How the tuner runs on these (rounds, the evidence a round needs, learning rates that follow the
ladder, ``F`` adapted to a swap rate) is :mod:`tf_vrre.sgmcmc.tuning`; exact answers for a
tempered standard Gaussian (the tests' and the benchmarks' reference) are in
:mod:`tf_vrre.sgmcmc.tempered_gaussian`.
"""

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import interpolate, optimize, special

NEUTRAL_REJECTION = 0.5
"""Rejection rate of a pair never attempted in a round (Pigeons.jl's default): neither 0, which
would pull its two chains apart without evidence, nor 1."""

NUDGE = 1e-6
"""Added to every pair's barrier when one of them is 0, so the cumulative barrier is strictly
increasing and can be inverted (as Pigeons.jl does)."""


def _array(name: str, values: ArrayLike, size: int | None = None) -> np.ndarray:
    a = np.asarray(values, np.float64).reshape(-1)
    if size is not None and a.size != size:
        raise ValueError(f"{name} must have {size} entries, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    return a


def rejection_rates(attempts: ArrayLike, swaps: ArrayLike, default: float = NEUTRAL_REJECTION) -> np.ndarray:
    """Per adjacent pair ``1 - swaps / attempts``; ``default`` for a pair with no attempt.

    Args:
      attempts, swaps: per-pair counts of one round (``swaps <= attempts``).
      default: the rejection given to a pair never attempted (Pigeons.jl: 0.5).

    Returns:
      float64 ``[P]`` rejection rates in ``[0, 1]``.

    Example:
      >>> rejection_rates([10, 0, 4], [5, 0, 4]).tolist()
      [0.5, 0.5, 0.0]
    """
    n = _array("attempts", attempts)
    k = _array("swaps", swaps, n.size)
    if np.any(n < 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= swaps <= attempts per pair, got attempts {n.tolist()}, swaps {k.tolist()}")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (n - k) / np.maximum(n, 1.0), float(default))


def pair_barriers(rejection: ArrayLike, attempts: ArrayLike | None = None) -> np.ndarray:
    """The barrier across each pair from its rejection rate: ``(2 / sqrt(pi)) erfinv(r)``.

    Why not ``r`` itself (Syed et al.'s estimator, exact as the ladder gets fine): ``r <= 1`` per
    pair, so ``sum r <= K - 1`` however large the barrier, and a coarse ladder (few chains, high
    rejection) would hide it.  If the energy at the pair's temperatures is normal with a standard
    deviation ``sigma`` that changes little across the pair, the swap log-ratio is
    ``N(-s^2 / 2, s^2)`` with ``s = sqrt(2) sigma (b' - b)``, so the rejection is
    ``r = erf(sigma (b' - b) / 2)`` (Kofke 2002), while the pair's barrier is
    ``lambda (b' - b) = sigma (b' - b) / sqrt(pi)`` (``E|U - U'| = 2 sigma / sqrt(pi)``).
    Eliminating ``sigma`` gives the formula; it is ``r + O(r^3)`` for small ``r``.  On the
    tempered 10-dimensional Gaussian (``b`` in ``[0.01, 1]``, exact ``Lambda = 5.67``) a geometric
    ladder of 4 chains gives ``sum r = 2.93`` but this sum 5.43; 8 chains: 4.80 and 5.61.

    A pair that rejected every one of its ``n`` attempts has ``r = 1`` (an infinite barrier):
    with ``attempts`` it counts as ``r = 1 - 1 / (2 n)`` (half a swap), a lower bound.

    Args:
      rejection: per-pair rejection rates in ``[0, 1]``.
      attempts: optional per-pair attempt counts (for ``r = 1``).

    Example:
      >>> pair_barriers([0.01, 0.5, 0.9]).round(4).tolist()
      [0.01, 0.5382, 1.3124]
    """
    r = _array("rejection", rejection)
    if np.any(r < 0) or np.any(r > 1):
        raise ValueError(f"rejection rates must be in [0, 1], got {r.tolist()}")
    if attempts is not None:
        n = _array("attempts", attempts, r.size)
        r = np.where((r >= 1.0) & (n > 0), 1.0 - 0.5 / np.maximum(n, 1.0), r)
    r = np.minimum(r, np.nextafter(1.0, 0.0))
    return 2.0 / math.sqrt(math.pi) * special.erfinv(r)


class Barrier:
    """The communication barrier of a ladder, estimated from one round's rejection rates.

    The cumulative barrier ``B(b)`` (0 at the hottest chain's ``b``, ``Lambda`` at the cold one's)
    is ``scipy.interpolate.PchipInterpolator`` through the knots ``(b_h, barrier between the
    hottest chain and chain h)``: a monotone piecewise cubic (Fritsch & Carlson 1980; scipy sets
    the knot derivatives by Fritsch & Butland's harmonic mean), so ``B`` increases and can be
    inverted, and its derivative, the local barrier ``lambda(b)``, is continuous and >= 0.

    Args:
      temperatures: the ladder ``tau_1 < ... < tau_K`` of the round (``K >= 2``).
      rejection: per-pair rejection rates of the round (:func:`rejection_rates`).
      attempts: optional per-pair attempt counts (see :func:`pair_barriers`).

    Attributes:
      temperatures, rejection, pair_barrier: the inputs and :func:`pair_barriers`.
      total: the global barrier ``Lambda`` (the sum of the pairs' barriers).
      rejection_sum: ``sum r``, Syed et al.'s estimate of ``Lambda`` (a lower one on coarse ladders).
      beta: the knots' inverse temperatures, ascending (hot to cold).

    Example:
      >>> b = Barrier([1.0, 2.0, 4.0], [0.3, 0.3])
      >>> bool(np.isclose(b.total, 2 * pair_barriers([0.3])[0]))
      True
      >>> float(b.cumulative(0.25)), bool(np.isclose(b.cumulative(1.0), b.total))
      (0.0, True)
    """

    def __init__(self, temperatures: ArrayLike, rejection: ArrayLike, attempts: ArrayLike | None = None) -> None:
        t = _array("temperatures", temperatures)
        if t.size < 2 or np.any(t <= 0) or np.any(np.diff(t) <= 0):
            raise ValueError(f"temperatures must be > 0 and strictly increasing (at least 2), got {t.tolist()}")
        self.temperatures = t
        self.rejection = _array("rejection", rejection, t.size - 1)
        self.pair_barrier = pair_barriers(self.rejection, attempts)
        intensity = self.pair_barrier
        if np.any(intensity <= 0):
            intensity = intensity + NUDGE
        self._intensity = intensity
        self.beta = 1.0 / t[::-1]  # ascending: hottest first
        self._knots = np.concatenate([[0.0], np.cumsum(intensity[::-1])])
        self._spline = interpolate.PchipInterpolator(self.beta, self._knots, extrapolate=False)
        self.total = float(np.sum(self.pair_barrier))
        self.rejection_sum = float(np.sum(self.rejection))

    @property
    def beta_range(self) -> tuple[float, float]:
        """``(b_hot, b_cold)``."""
        return float(self.beta[0]), float(self.beta[-1])

    def _log_slope(self) -> float:
        """Barrier per unit of ``log b`` across the hottest pair (used to extrapolate beyond it)."""
        return float(self._intensity[-1] / math.log(self.beta[1] / self.beta[0]))

    def cumulative(self, beta: ArrayLike) -> np.ndarray:
        """``B(b)``: the barrier between the hottest chain and ``b`` (the knots' cumulated pair
        barriers, interpolated); below the hottest ``b`` it is extrapolated as
        ``-c log(b_hot / b)`` with ``c`` the hottest pair's barrier per unit of ``log b`` (a local
        barrier ``~ 1 / b``, as for any energy of constant heat capacity)."""
        b = np.asarray(beta, np.float64)
        lo, hi = self.beta_range
        if np.any(b > hi * (1 + 1e-12)):
            raise ValueError(f"beta must be <= the cold chain's {hi}, got {np.max(b)}")
        inside = self._spline(np.clip(b, lo, hi))
        return np.where(b < lo, -self._log_slope() * np.log(lo / np.maximum(b, 1e-300)), inside)

    def local(self, beta: ArrayLike) -> np.ndarray:
        """The local barrier ``lambda(b) = dB/db`` at ``b`` in the ladder's range."""
        lo, hi = self.beta_range
        return self._spline.derivative()(np.clip(np.asarray(beta, np.float64), lo, hi))

    def beta_at(self, level: float) -> float:
        """The ``b`` where ``B(b) = level`` (``level`` at most ``Lambda``; below 0 it lies beyond
        the hottest chain, on the extrapolation)."""
        level = float(level)
        lo, hi = self.beta_range
        top = float(self._knots[-1])
        if level >= top:
            return hi
        if level <= 0.0:
            return lo * math.exp(level / self._log_slope())
        return float(
            optimize.brentq(
                lambda b: float(self._spline(b)) - level, lo, hi, xtol=1e-14 * hi, rtol=4 * np.finfo(float).eps
            )
        )


def equal_share_ladder(barrier: Barrier, hot_temperature: float | None = None) -> np.ndarray:
    """New temperatures giving every adjacent pair the same share of the barrier.

    The cold temperature is kept exactly; the hottest is kept, or set to ``hot_temperature``
    (:func:`hot_temperature` with bounds).  Between them the ``K`` inverse temperatures are
    placed where the cumulative barrier takes ``K`` equally spaced values (Syed et al. 2021,
    Algorithm 2): on the optimal ladder every pair rejects at the same rate.

    Args:
      barrier: a :class:`Barrier`.
      hot_temperature: the new hottest temperature (``None``: unchanged).

    Returns:
      float64 ``[K]`` temperatures, strictly increasing.

    Example:
      >>> b = Barrier([1.0, 2.0, 3.0, 100.0], [0.5, 0.5, 0.5])   # equal rejections: a fixed point
      >>> np.allclose(equal_share_ladder(b), [1.0, 2.0, 3.0, 100.0])
      True
    """
    t = barrier.temperatures
    K = t.size
    cold, hot = float(t[0]), float(t[-1]) if hot_temperature is None else float(hot_temperature)
    if not hot > cold:
        raise ValueError(f"hot_temperature must be above the cold temperature {cold}, got {hot}")
    top = float(barrier._knots[-1])
    start = float(barrier.cumulative(1.0 / hot))
    levels = start + (top - start) * np.arange(K - 1, -1, -1) / (K - 1)  # cold first
    beta = np.array([barrier.beta_at(v) for v in levels[1:-1]])
    new = np.concatenate([[cold], 1.0 / beta, [hot]])
    if np.any(np.diff(new) <= 0):
        raise ValueError(
            f"the equal-share ladder is not strictly increasing ({new.tolist()}): the barrier estimate is degenerate"
        )
    return new


def hot_temperature(barrier: Barrier, bounds: Sequence[float], max_factor: float = 2.0) -> float:
    """The hottest temperature for ``K`` chains when it may move within ``bounds``.

    Rule: the hottest chain goes where the barrier from the cold chain is ``K / 2``, i.e. where
    ``K`` is the :func:`recommended_chains` (each pair then rejects about half its swaps).  A
    larger barrier moves it colder (inside the measured range), a smaller one hotter (on the
    extrapolation of :meth:`Barrier.cumulative`); per round it moves by at most ``max_factor``
    (the extrapolation is a guess), and never outside ``bounds``.  The rule knows only how the
    chains communicate, not whether the hottest chain crosses the posterior's barriers: keep
    ``bounds[1]`` at a temperature known to mix.

    Args:
      barrier: a :class:`Barrier`.
      bounds: ``(low, high)``, the temperature range of the ladder (the cold temperature inside).
      max_factor: largest change of the hottest temperature per round (``> 1``).

    Example:
      >>> b = Barrier([1.0, 2.0, 4.0, 8.0], [0.1, 0.1, 0.1])   # easy: the hot end moves out
      >>> hot_temperature(b, bounds=(1.0, 100.0))
      16.0
    """
    t = barrier.temperatures
    cold, hot, K = float(t[0]), float(t[-1]), t.size
    low, high = bounds
    level = float(barrier._knots[-1]) - K / 2.0  # B(b_new) = Lambda - K / 2
    beta = barrier.beta_at(level)  # 0 when the extrapolation underflows (a hottest pair that never rejected)
    new = 1.0 / beta if beta > 0 else math.inf
    new = min(max(new, hot / max_factor), hot * max_factor)
    lower = max(float(low), cold * (1.0 + 1e-3))
    return float(min(max(new, lower), float(high)))


def recommended_chains(barrier: float) -> int:
    """The number of chains for a global barrier ``Lambda``: ``max(2, ceil(2 Lambda))``.

    Source: Syed et al. (2021, Section 5.4) and Pigeons.jl's documentation ("it is optimal to set
    the number of chains to roughly 2 Lambda").  With ``N`` chains on the equal-rejection ladder
    each pair rejects ``r ~ Lambda / N`` and NRPT's round-trip rate is ``1 / (2 + 2 N r / (1 - r))``
    (:func:`round_trip_rate`); when every chain costs one unit of compute, round trips per unit
    of compute are largest at ``N ~ 2 Lambda``, where each pair rejects about half its swaps.
    Fewer chains make every swap rare; more cost compute without speeding up the round trips.

    Example:
      >>> recommended_chains(0.4), recommended_chains(2.3), recommended_chains(5.67)
      (2, 5, 12)
    """
    lam = float(barrier)
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"barrier must be a finite number >= 0, got {barrier!r}")
    return max(2, int(math.ceil(2.0 * lam - 1e-9)))


def round_trip_rate(rejection: ArrayLike) -> float:
    """NRPT's round trips per swap attempt (all states together) for a ladder's rejection rates:
    ``1 / (2 + 2 sum_p r_p / (1 - r_p))`` (Syed et al. 2021, Theorem 3, even/odd swaps with
    efficient local exploration: independent energies between attempts).  SG-MCMC chains explore
    locally much more slowly, so measured rates fall below it; it is the ceiling the ladder sets.

    Example:
      >>> round_trip_rate([0.0, 0.0]), round(round_trip_rate([0.5, 0.5, 0.5]), 4)
      (0.5, 0.125)
    """
    r = _array("rejection", rejection)
    if np.any(r >= 1.0):
        return 0.0
    return float(1.0 / (2.0 + 2.0 * np.sum(r / (1.0 - r))))
