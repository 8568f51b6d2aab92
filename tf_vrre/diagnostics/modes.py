"""Whether the hot chains find modes that matter to the cold chain: the quenched states' modes and
the chains' spreads, from a pilot's records (NumPy only).

:func:`modes_found` groups quenched states of the chains (descended to their nearest mode) by their
outputs on probe inputs, in units of the cold chain's local spread (:func:`local_spread`), keeping
those whose energy lies within a few cold temperatures of the cold chain's: a mode the cold
posterior weighs and predicts differently with.  :func:`clustered` tells whether the cold chain's
own records jump between modes; :func:`multimodality_index` compares the hottest chain's spread with
what one locally Gaussian mode gives.  :func:`tf_vrre.diagnostics.advice.recommend` decides with them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DECISIVE = 2.0
"""How far beyond the thresholds (a factor) an index or a ratio of gains must be for the evidence
to count as strong: an index within ``(MULTIMODAL / DECISIVE, MULTIMODAL * DECISIVE)`` (or a gain
ratio within ``(1 / DECISIVE, DECISIVE)``) is a best guess."""

NOVEL = 6.0
"""A quenched hot state is another mode when its outputs lie farther than this many local sds of the
cold chain (:func:`local_spread`) from every quenched state of the cold chain."""

RELEVANT = 5.0
"""... and matters when its energy exceeds the cold chain's quenched energy by less than this many
cold temperatures (its weight at the cold temperature is then at least about ``e^-5``)."""


def multimodality_index(cold: Any, hot: Any, temperature_ratio: float) -> float:
    """``mean |f_hot(t) - mean_t f_cold|^2 / (tau_hot / tau_cold * mean Var_t f_cold)``, over probe
    outputs: the hottest chain's spread around the cold chain's mean over what one locally Gaussian
    mode gives at the hotter temperature (its variance grows like ``tau``).  About 1 for a
    unimodal posterior; far above 1 when the hottest chain visits other modes; far below 1 when
    the cold chain's own spread is already between modes.  ``nan`` when the cold chain's outputs
    do not move.

    Args:
      cold, hot: records ``[T, ...]`` of the cold and hottest chain's outputs on probe inputs.
      temperature_ratio: ``tau_hot / tau_cold``.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> cold = rng.normal(0.0, 1.0, (4000, 3))
      >>> round(multimodality_index(cold, rng.normal(0.0, 2.0, (4000, 3)), 4.0), 1)       # one mode
      1.0
      >>> round(multimodality_index(cold, rng.normal(10.0, 2.0, (4000, 3)), 4.0))      # elsewhere
      26
    """
    c = np.asarray(cold, np.float64).reshape(len(cold), -1)
    h = np.asarray(hot, np.float64).reshape(len(hot), -1)
    spread = float(np.mean(c.var(0)))
    if not spread > 0 or not temperature_ratio > 0:
        return math.nan
    return float(np.mean((h - c.mean(0)) ** 2) / (temperature_ratio * spread))


def local_spread(records: Any, windows: int = 8) -> float:
    """The chain's spread within a mode: the root mean (over outputs) of the median (over ``windows``
    consecutive stretches of the records) of the variance within a stretch.  A jump between modes
    inflates one stretch's variance, which the median ignores.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> x = rng.normal(0.0, 0.5, (800, 1)); x[400:] += 30.0     # one jump between two modes
      >>> round(local_spread(x), 1), round(float(x.std()), 1)
      (0.5, 15.0)
    """
    r = np.asarray(records, np.float64).reshape(len(records), -1)
    blocks = [b for b in np.array_split(r, windows) if len(b) > 1]
    if not blocks:
        return math.nan
    return float(np.sqrt(np.mean(np.median(np.stack([b.var(0) for b in blocks]), 0))))


def clustered(records: Any, least: float = 0.05) -> bool:
    """Whether some output of a chain's records falls into two groups apart by a gap wider than
    :data:`NOVEL` robust sds (1.4826 median absolute deviations) of either group, each holding at
    least ``least`` of the records: the chain jumped between modes (swaps brought them) rather than
    drifting or diffusing within one.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> one = rng.normal(0.0, 0.5, (800, 1))
      >>> drift = one + np.linspace(0.0, 30.0, 800)[:, None]
      >>> jumps = np.where(np.arange(800)[:, None] % 3, one, one + 30.0)
      >>> clustered(one), clustered(drift), clustered(jumps)
      (False, False, True)
    """
    r = np.sort(np.asarray(records, np.float64).reshape(len(records), -1), 0)
    lo = max(1, int(math.ceil(least * len(r))))
    if len(r) < 2 * lo + 1:
        return False
    for col in r.T:
        gaps = np.diff(col)[lo - 1 : len(col) - lo]
        at = lo + int(np.argmax(gaps))  # the split: col[:at] and col[at:]
        left, right = col[:at], col[at:]
        mad = max(1.4826 * np.median(np.abs(g - np.median(g))) for g in (left, right))
        if col[at] - col[at - 1] > NOVEL * mad > 0:
            return True
    return False


def modes_found(quenches: list, cold: Any, cold_temperature: float) -> dict:
    """The modes the quenched states reach that matter at the cold temperature.

    A quenched state matters when its energy is at most :data:`RELEVANT` cold temperatures above
    the lowest quenched state of the cold chain (less two standard errors of the paired
    estimate).  The states that matter are grouped by single linkage on their outputs: two states
    closer than :data:`NOVEL` local sds of the cold chain (:func:`local_spread`) are in one group.
    A group is a mode when two quenched states reach it, or one and the cold chain's records sit in
    it (their median is within the linkage distance): a state quenched only part of the way to
    its minimum stays alone.  ``found``: the modes besides the one the cold chain's records sit in;
    ``cold_modes``: whether the cold chain's own records fall into groups (:func:`clustered`:
    swaps already carry modes to it); ``lone``: the states that matter but reach no mode alone,
    farther than :data:`NOVEL` local sds from every other quenched state (a mode only one quench
    reached, or a quench that stopped short: the pilot cannot tell); ``margin``: whether the
    distance between two modes, or an energy that decided, lies within a factor :data:`DECISIVE`
    of its threshold, or a lone state leaves the verdict open.

    Returns:
      ``{"local_spread", "distance", "excess", "modes", "found", "cold_modes", "lone", "margin"}``:
      per hot quenched state its distance to the nearest cold quenched state (local sds) and its
      energy above the lowest (cold temperatures); the modes as lists of quenched states' indices.
    """
    spread = local_spread(cold)
    cold_at = [i for i, q in enumerate(quenches) if q["chain"] == 0]
    out = {
        "local_spread": spread,
        "distance": [],
        "excess": [],
        "modes": [],
        "found": 0,
        "cold_modes": False,
        "lone": 0,
        "margin": False,
    }
    if not cold_at or len(cold_at) == len(quenches) or not spread > 0:
        return out
    out["cold_modes"] = clustered(cold)
    outputs = np.array([np.asarray(q["outputs"], np.float64).reshape(-1) for q in quenches])
    excess = np.array(
        [
            min(e - 2.0 * math.sqrt(v) for e, v in zip(q["energy_above_cold"], q["energy_above_cold_var"]))
            for q in quenches
        ]
    )
    excess = (excess - min(0.0, float(excess[cold_at].min()))) / cold_temperature  # above the lowest cold state
    dist = np.sqrt(np.mean((outputs[:, None, :] - outputs[None, :, :]) ** 2, -1)) / spread
    for i, q in enumerate(quenches):
        if q["chain"] != 0:
            out["distance"].append(float(dist[i, cold_at].min()))
            out["excess"].append(float(excess[i]))
    keep = [i for i in range(len(quenches)) if excess[i] < RELEVANT]
    groups = []  # single linkage of the states that matter
    for i in keep:
        near = [g for g in groups if any(dist[i, j] < NOVEL for j in g)]
        merged = [i] + [j for g in near for j in g]
        groups = [g for g in groups if g not in near] + [merged]
    home = np.median(np.asarray(cold, np.float64).reshape(len(cold), -1), 0)
    at_home = lambda g: any(np.sqrt(np.mean((outputs[j] - home) ** 2)) / spread < NOVEL for j in g)  # noqa: E731
    modes = [sorted(g) for g in groups if len(g) >= 2 or at_home(g)]
    out["modes"] = modes
    out["found"] = sum(1 for g in modes if not at_home(g))
    out["lone"] = sum(1 for g in groups if len(g) == 1 and not at_home(g))
    out["margin"] = out["lone"] > 0
    if len(modes) >= 2:
        between = min(
            float(dist[a][:, b].min()) for x, a in enumerate(modes) for b in modes[x + 1 :] for a in [np.array(a)]
        )
        worst = max(float(excess[g].min()) for g in map(np.array, modes))
        out["margin"] = out["margin"] or between < NOVEL * DECISIVE or worst > RELEVANT / DECISIVE
    return out
