"""Which samples stay on disk when ``max_samples`` bounds them, and which ones a divergence taints.

``keep="last"`` evicts the oldest entry; ``keep="reservoir"`` keeps a uniform random subset of
all samples taken (reservoir sampling, Algorithm R), with choices that are a pure function of
``(seed, count)`` so that a resumed run repeats them.  An evicted sample's file is deleted only
once no resume can need it (:func:`purge_evicted`).  Used by :class:`tf_vrre.callbacks.SampleCollector`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

KEEP = ("last", "reservoir")
"""The values of ``SampleCollector(keep=...)``."""


def reservoir_slot(seed: int, count: int, capacity: int) -> int | None:
    """Reservoir sampling (Algorithm R) for the ``count``-th item (1-based): the slot it
    takes, or ``None`` when it is not kept.  After ``n`` items each one is in the reservoir
    with probability ``capacity / n``; the choice is a pure function of ``(seed, count)``.

    Example:
      >>> [reservoir_slot(0, n, 2) for n in (1, 2)]
      [0, 1]
    """
    if count <= capacity:
        return count - 1
    j = int(np.random.default_rng([int(seed), int(count)]).integers(0, count))
    return j if j < capacity else None


def choose(manifest: dict, keep: str, max_samples: int | None, seed: int) -> tuple[bool, dict | None, int | None]:
    """For the sample just taken (its step already in ``manifest["events"]``): ``(kept, the
    entry it evicts or None, its reservoir slot or None)``."""
    if max_samples is not None and keep == "reservoir":  # Algorithm R
        slot = reservoir_slot(seed, len(manifest["events"]), max_samples)
        if slot is None:
            return False, None, None
        return True, next((e for e in manifest["entries"] if e.get("slot") == slot), None), slot
    if max_samples is not None and len(manifest["entries"]) >= max_samples:  # keep="last"
        return True, manifest["entries"][0], None
    return True, None, None


def purge_evicted(manifest: dict, committed_step: int | None) -> list[dict]:
    """Removes from ``manifest["evicted"]`` the entries whose files may go, and returns them: all
    of them without a :class:`tf_vrre.Checkpoint` (``committed_step`` None), else those evicted
    at or before its newest committed step (no resume can need them)."""
    gone = [e for e in manifest["evicted"] if committed_step is None or e["evicted_at"] <= committed_step]
    manifest["evicted"] = [e for e in manifest["evicted"] if e not in gone]
    return gone


def exploding(energies: Sequence[float], factor: float = 10.0) -> list[bool]:
    """Flags of the entries whose energy is non-finite or more than ``factor`` robust spreads
    above the median: ``e > med + factor * max(MAD, 1e-6 |med|)`` (median and MAD over all).

    Example:
      >>> exploding([10.0, 11.0, 10.5, 1e6, float("nan")])
      [False, False, False, True, True]
    """
    e = np.asarray(energies, np.float64)
    finite = e[np.isfinite(e)]
    if not len(finite):
        return [True] * len(e)
    med = np.median(finite)
    spread = max(np.median(np.abs(finite - med)), 1e-6 * abs(med), 1e-12)
    return [bool(not np.isfinite(v) or v > med + factor * spread) for v in e]
