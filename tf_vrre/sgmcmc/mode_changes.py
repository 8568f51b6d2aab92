"""Do the chains change modes?  Counted from traces of a few weights (host side: NumPy only).

Equal rejection rates say how well the chains exchange states, not whether the hottest chain
crosses the posterior's barriers: a tuner that narrows the ladder for the swaps' sake can leave
every chain in the mode it started in.  :class:`tf_vrre.LadderTuner` therefore watches, during
each tuning round, the traces of a few weights of every chain's state and counts **mode
changes**: moves of a weight between two levels that are far apart compared with how much it
fluctuates at either level.

The traces are those of the chains' **states**, followed through their swaps (a swap exchanges
two states between slots: a slot's trace would jump between states that merely sit apart).  For
one weight and the round's traces ``x_h(t)`` of every state ``h``:

1. :func:`two_levels` splits a trace into two levels (the split of its sorted values with the
   least within-level sum of squares, 1-D k-means with ``k = 2``) and measures their
   **separation** ``S = (m_hi - m_lo) / s``, ``s`` the pooled within-level standard deviation.
   A trace of one level, of any shape, has ``S`` below 3.5 (a Gaussian 2.7, a uniform or a
   steady drift 3.5; slowly wandering random walks reach 5-7 on short traces but do not go
   back and forth); :data:`MIN_SEPARATION` is 6.
2. The weight has two levels when some state's trace is that separated, each level holding at
   least :data:`MIN_LEVEL_SHARE` of its records: the clearest such state (largest ``S``) sets them.
3. :func:`transitions` counts, for every state, moves from below ``m_lo + g / 4`` to above
   ``m_hi - g / 4`` or back (``g = m_hi - m_lo``; a hysteresis band, so noise at a level does
   not count).  A state counts only when the levels are at least :data:`MIN_SLOT_SEPARATION` of
   its own spread about them apart (a state whose fluctuations fill the band says nothing).
4. The weight's moves count only when at least two states moved between its levels (a lone
   state's step is more often the end of a drift) and the moves go **both ways** (at least one
   up and one down, by one state or several): at equilibrium as many states cross a barrier
   one way as the other, while states that all move the same way are relaxing (the weights of
   a network settling after a swap or a change of temperature), not changing modes.
5. A state's mode changes are the most any counted weight made; the chains **change modes**
   when some weight's moves count, and the energy has settled (:func:`settled`): while it
   still falls (burn-in) weights move between levels as they settle, which is no mode change.

Example:
  >>> rng = np.random.default_rng(0)
  >>> hop = [np.repeat(rng.choice([-5.0, 5.0], 40), 10) + rng.normal(size=400) for _ in range(2)]
  >>> stay = rng.normal(size=400)                                     # 1 level
  >>> counts = mode_changes(np.stack([hop[0], hop[1], stay])[:, :, None])   # 3 states, 1 weight
  >>> counts[0] > 10, counts[1] > 10, counts[2]      # states 0 and 1 hop between 2 levels; 2 stays
  (True, True, 0)
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

MIN_SEPARATION = 6.0
"""Separation (level gap over within-level standard deviation) at which a trace has two levels."""

MIN_SLOT_SEPARATION = 4.0
"""Gap over a state's own spread about the two levels for its moves between them to count."""

MIN_LEVEL_SHARE = 0.05
"""Smallest share of a trace's records at its smaller level (and at least 3 records)."""

MIN_RECORDS = 20
"""Fewest records per state to count anything (a round with fewer counts nothing: ``None``)."""


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


def moves(trace: ArrayLike, low: float, high: float) -> tuple[int, int]:
    """Moves of ``trace`` between the levels ``low < high``, ``(up, down)``: from
    ``<= low + g / 4`` to ``>= high - g / 4``, and back (``g = high - low``).

    Example:
      >>> moves([0, 1, 4, 9, 10, 6, 0, 5, 10], 0.0, 10.0)
      (2, 1)
    """
    x = np.asarray(trace, np.float64).reshape(-1)
    gap = high - low
    at = np.where(x <= low + gap / 4, 0, np.where(x >= high - gap / 4, 1, -1))
    steps = np.diff(at[at >= 0])
    return int(np.count_nonzero(steps > 0)), int(np.count_nonzero(steps < 0))


def transitions(trace: ArrayLike, low: float, high: float) -> int:
    """All moves of ``trace`` between the levels (:func:`moves`, up and down).

    Example:
      >>> transitions([0, 1, 4, 9, 10, 6, 0, 5, 10], 0.0, 10.0)
      3
    """
    return sum(moves(trace, low, high))


def _counted(trace: np.ndarray, low: float, high: float) -> tuple[int, int]:
    """:func:`moves` of a state's trace, or none when its spread about the levels fills the band."""
    spread = float(np.sqrt(np.mean(np.minimum(np.abs(trace - low), np.abs(trace - high)) ** 2)))
    if (high - low) < MIN_SLOT_SEPARATION * spread:
        return 0, 0
    return moves(trace, low, high)


def _flows(traces: ArrayLike) -> Iterator[np.ndarray]:
    """Per weight with two levels (steps 1-3 of the module's procedure): the ``[K, 2]`` counted
    moves (up, down) of every state; nothing with fewer than :data:`MIN_RECORDS` records."""
    t = np.asarray(traces, np.float64)
    if t.ndim != 3:
        raise ValueError(f"traces must have shape [K, n, M], got {t.shape}")
    K, n, M = t.shape
    smallest = max(3, int(np.ceil(MIN_LEVEL_SHARE * n)))
    for m in range(M if n >= MIN_RECORDS else 0):
        best = None
        for h in range(K):
            lo, hi, s, small = two_levels(t[h, :, m])
            if small < smallest or not hi > lo:
                continue
            sep = float("inf") if s == 0 else (hi - lo) / s
            if sep >= MIN_SEPARATION and (best is None or sep > best[0]):
                best = (sep, lo, hi)
        if best is not None:
            yield np.array([_counted(t[h, :, m], best[1], best[2]) for h in range(K)])


def assess(traces: ArrayLike) -> tuple[list[int] | None, bool]:
    """:func:`mode_changes` and :func:`relaxing` of the same traces, in one pass over the weights."""
    t = np.asarray(traces, np.float64)
    counts, one_way = np.zeros(t.shape[0], np.int64), False
    for up_down in _flows(t):
        per_state, ways = up_down.sum(1), np.count_nonzero(up_down.sum(0))
        if np.count_nonzero(per_state) >= 2:
            if ways == 2:  # two states, both ways
                counts = np.maximum(counts, per_state)
            else:
                one_way = True
    return (None if t.shape[1] < MIN_RECORDS else counts.tolist()), one_way


def mode_changes(traces: ArrayLike) -> list[int] | None:
    """Mode changes per state in one round (the module's procedure), or ``None`` with fewer than
    :data:`MIN_RECORDS` records.

    Args:
      traces: ``[K, n, M]``: per state, ``n`` records of ``M`` weights.

    Returns:
      ``K`` counts: per state, the most moves between two levels any counted weight made.
    """
    return assess(traces)[0]


def relaxing(traces: ArrayLike) -> bool:
    """Whether at least two states moved between the levels of some weight, all the same way (a
    one-way flow: relaxation, or the first crossings of a barrier whose returns have not been
    seen yet; :class:`tf_vrre.LadderTuner` then waits before it narrows the range).

    Example:
      >>> rng = np.random.default_rng(0)
      >>> up = [np.repeat([-5.0, 5.0], [k, 60 - k]) + rng.normal(size=60) for k in (20, 35)]
      >>> relaxing(np.stack(up)[:, :, None]), mode_changes(np.stack(up)[:, :, None])
      (True, [0, 0])
    """
    return assess(traces)[1]


def changes_modes(counts: list[int] | None, energy: ArrayLike | None = None) -> bool:
    """Whether the moves of some weight counted (at least two states moved between its levels, both ways)
    while the ``energy`` (a trace of the chains' energies over the same records) had
    :func:`settled`."""
    moved = counts is not None and int(np.count_nonzero(counts)) >= 2
    return moved and (energy is None or settled(energy))


SETTLED_Z = 3.0
"""The energy is still falling when its first half's mean exceeds its second half's by this many
standard errors."""


def settled(energy: ArrayLike) -> bool:
    """Whether a trace of energies has stopped falling: the mean of its first half is not above
    that of its second by :data:`SETTLED_Z` standard errors (independent-records errors: a
    screen for burn-in, not a test of stationarity).

    Example:
      >>> rng = np.random.default_rng(0)
      >>> settled(rng.normal(size=40)), settled(np.linspace(10.0, 0.0, 40) + rng.normal(size=40))
      (True, False)
    """
    e = np.asarray(energy, np.float64).reshape(-1)
    a, b = e[: e.size // 2], e[e.size // 2 :]
    if a.size < 2 or b.size < 2:
        return True
    se = float(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))
    return not float(a.mean() - b.mean()) > SETTLED_Z * se
