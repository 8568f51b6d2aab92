"""Do the chains change modes?  Counted from traces of a few weights (host side: NumPy only).

Equal rejection rates say how well the chains exchange states, not whether the hottest chain
crosses the posterior's barriers: a tuner that narrows the ladder for the swaps' sake can leave
every chain in the mode it started in.  :class:`tf_vrre.LadderTuner` therefore watches, during
each tuning round, the traces of a few weights of every slot (slot 0 the cold chain) and counts
**mode changes**: moves of a weight between two levels that are far apart compared with how
much it fluctuates at either level.

For one weight and the round's traces ``x_h(t)`` of every slot ``h``:

1. :func:`two_levels` splits a trace into two levels (the split of its sorted values with the
   least within-level sum of squares, 1-D k-means with ``k = 2``) and measures their
   **separation** ``S = (m_hi - m_lo) / s``, ``s`` the pooled within-level standard deviation.
   A trace of one level, of any shape, has ``S`` below 3.5 (a Gaussian 2.7, a uniform or a
   steady drift 3.5; slowly wandering random walks reach 5-7 on short traces but do not go
   back and forth); :data:`MIN_SEPARATION` is 6.
2. The weight has two levels when some slot's trace is that separated, each level holding at
   least :data:`MIN_LEVEL_SHARE` of its records: the clearest such slot (largest ``S``) sets them.
   The colder slots set them when the chains do change modes, since a mode is narrow there.
3. :func:`transitions` counts, for every slot, moves from below ``m_lo + g / 4`` to above
   ``m_hi - g / 4`` or back (``g = m_hi - m_lo``; a hysteresis band, so noise at a level does
   not count).  A slot counts only when the levels are at least :data:`MIN_SLOT_SEPARATION` of
   its own spread about them apart (a hot slot whose fluctuations fill the band says nothing).
4. A slot's mode changes are the most any weight made; the chains **change modes** in the round
   when some slot made at least two (there and back: one move may be the end of a drift).

Example:
  >>> rng = np.random.default_rng(0)
  >>> hop = np.repeat(rng.choice([-5.0, 5.0], 40), 10) + rng.normal(size=400)  # 2 levels, ~20 hops
  >>> stay = rng.normal(size=400)                                               # 1 level
  >>> counts = mode_changes(np.stack([np.stack([hop, 0 * hop]), np.stack([stay, stay])], axis=2))
  >>> counts[0] > 10, counts[1]                      # slot 0 hops; slot 1 is constant
  (True, 0)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

MIN_SEPARATION = 6.0
"""Separation (level gap over within-level standard deviation) at which a trace has two levels."""

MIN_SLOT_SEPARATION = 4.0
"""Gap over a slot's own spread about the two levels for its moves between them to count."""

MIN_LEVEL_SHARE = 0.05
"""Smallest share of a trace's records at its smaller level (and at least 3 records)."""

MIN_RECORDS = 20
"""Fewest records per slot to count anything (a round with fewer counts nothing: ``None``)."""


def two_levels(trace: ArrayLike) -> tuple[float, float, float, int]:
    """The two levels of a trace: ``(m_lo, m_hi, s, n_small)``, the means of the two groups of
    the split of its sorted values with the least within-group sum of squares, their pooled
    standard deviation and the size of the smaller group.

    Example:
      >>> lo, hi, s, n = two_levels([0.0, 0.1, -0.1, 10.0, 10.1, 9.9])
      >>> round(lo, 6), round(hi, 6), n
      (0.0, 10.0, 3)
    """
    x = np.sort(np.asarray(trace, np.float64).reshape(-1))
    n = x.size
    if n < 4:
        raise ValueError(f"a trace needs at least 4 records, got {n}")
    x = x - x.mean()  # better-conditioned sums
    c, c2 = np.cumsum(x), np.cumsum(x * x)
    k = np.arange(1, n)
    left, right = c[:-1] / k, (c[-1] - c[:-1]) / (n - k)
    within = (c2[:-1] - k * left**2) + ((c2[-1] - c2[:-1]) - (n - k) * right**2)
    i = int(np.argmin(within))
    s = float(np.sqrt(max(within[i], 0.0) / (n - 2)))
    shift = float(np.mean(np.asarray(trace, np.float64)))
    return float(left[i]) + shift, float(right[i]) + shift, s, int(min(k[i], n - k[i]))


def separation(trace: ArrayLike) -> float:
    """``S = (m_hi - m_lo) / s`` of :func:`two_levels` (``inf`` for two exact values, 0 for a constant)."""
    lo, hi, s, _ = two_levels(trace)
    if hi <= lo:
        return 0.0
    return float("inf") if s == 0 else (hi - lo) / s


def transitions(trace: ArrayLike, low: float, high: float) -> int:
    """Moves of ``trace`` between the levels ``low < high``: from ``<= low + g / 4`` to
    ``>= high - g / 4`` or back (``g = high - low``).

    Example:
      >>> transitions([0, 1, 4, 9, 10, 6, 0, 5, 10], 0.0, 10.0)
      3
    """
    x = np.asarray(trace, np.float64).reshape(-1)
    gap = high - low
    at = np.where(x <= low + gap / 4, 0, np.where(x >= high - gap / 4, 1, -1))
    known = at[at >= 0]
    return int(np.count_nonzero(np.diff(known))) if known.size else 0


def _counted(trace: np.ndarray, low: float, high: float) -> int:
    """:func:`transitions` of a slot's trace, or 0 when its spread about the levels fills the band."""
    spread = float(np.sqrt(np.mean(np.minimum(np.abs(trace - low), np.abs(trace - high)) ** 2)))
    if (high - low) < MIN_SLOT_SEPARATION * spread:
        return 0
    return transitions(trace, low, high)


def mode_changes(traces: ArrayLike) -> list[int] | None:
    """Mode changes per slot in one round (the module's procedure), or ``None`` with fewer than
    :data:`MIN_RECORDS` records.

    Args:
      traces: ``[K, n, M]``: per slot, ``n`` records of ``M`` weights.

    Returns:
      ``K`` counts: per slot, the most moves between two levels any weight made.
    """
    t = np.asarray(traces, np.float64)
    if t.ndim != 3:
        raise ValueError(f"traces must have shape [K, n, M], got {t.shape}")
    K, n, M = t.shape
    if n < MIN_RECORDS:
        return None
    counts = np.zeros(K, np.int64)
    smallest = max(3, int(np.ceil(MIN_LEVEL_SHARE * n)))
    for m in range(M):
        best = None
        for h in range(K):
            lo, hi, s, small = two_levels(t[h, :, m])
            if small < smallest or not hi > lo:
                continue
            sep = float("inf") if s == 0 else (hi - lo) / s
            if sep >= MIN_SEPARATION and (best is None or sep > best[0]):
                best = (sep, lo, hi)
        if best is None:
            continue
        for h in range(K):
            counts[h] = max(counts[h], _counted(t[h, :, m], best[1], best[2]))
    return counts.tolist()


def changes_modes(counts: list[int] | None) -> bool:
    """Whether some slot moved between two levels and back (at least two mode changes)."""
    return counts is not None and max(counts) >= 2
