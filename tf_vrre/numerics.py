"""Numeric ranges every layer checks against, without TensorFlow: float32's limits and the
rules of the sampler's hyperparameters.

The sampler computes in float32 (weights, learning rates, temperatures) and float64 (energies,
``sigma2``, ``F``).  A hyperparameter that is finite in Python can still be ``inf`` or ``0`` in
float32 (``1e39``, ``1e-46``); :func:`check_float32` refuses such values with an error naming
the argument and the allowed range, before any graph runs.

A temperature, a learning rate and the correction factor ``F`` each obey one
:class:`HyperparameterRule` (:data:`TEMPERATURES`, :data:`LEARNING_RATES`, :data:`CORRECTION`);
:func:`check_hyperparameter` applies it to plain numbers and lists (what a config file holds),
:func:`tf_vrre.sgmcmc.schedules.validated` to every argument form the sampler takes (schedules
too), and the train step's runtime checks (:mod:`tf_vrre.sampler.invariants`) to the values in
force.  This module is the bottom of the package's layers (numpy only), so the TensorFlow-free
command-line checks use it too.

Example:
  >>> check_float32("learning_rates", 2e-6)
  2e-06
  >>> check_float32("temperatures", 1e39)
  Traceback (most recent call last):
  ...
  ValueError: temperatures must be 0 or of magnitude in [1.18e-38, 3.4e+38] (finite in float32, the dtype the sampler computes in), got 1e+39
  >>> check_hyperparameter("temperatures", [0.01, 0.05], num_chains=2)
  [0.01, 0.05]
  >>> check_hyperparameter("correction", -1.0, name="[swap] correction")
  Traceback (most recent call last):
  ...
  ValueError: [swap] correction must be a finite number > 0, got -1.0
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

F32_TINY = float(np.finfo(np.float32).tiny)  # 1.18e-38: smaller magnitudes are 0 or denormal in float32
F32_MAX = float(np.finfo(np.float32).max)  # 3.4e38: larger magnitudes are inf in float32

__all__ = [
    "CORRECTION",
    "F32_MAX",
    "F32_TINY",
    "LEARNING_RATES",
    "RULES",
    "TEMPERATURES",
    "HyperparameterRule",
    "check_float32",
    "check_hyperparameter",
]


def check_float32(name: str, value: float, positive: bool = False) -> float:
    """``value`` as a float, checked in float32 (the dtype the sampler's variables and steps use):
    ``|value| <= 3.4e38`` (``1e39`` is inf there) and, unless 0, ``|value| >= 1.18e-38`` (``1e-46``
    is 0 there); ``positive``: also ``> 0``.  ``ValueError`` naming ``name`` and the range."""
    v = float(value)
    if not np.isfinite(v) or abs(v) > F32_MAX or (v != 0 and abs(v) < F32_TINY) or (positive and not v > 0):
        allowed = (
            f"in [{F32_TINY:.3g}, {F32_MAX:.3g}]"
            if positive
            else f"0 or of magnitude in [{F32_TINY:.3g}, {F32_MAX:.3g}]"
        )
        raise ValueError(
            f"{name} must be {allowed} (finite{' and positive' if positive else ''} in float32, the dtype "
            f"the sampler computes in), got {value!r}"
        )
    return v


@dataclasses.dataclass(frozen=True)
class HyperparameterRule:
    """The values one kind of hyperparameter may take: the rule behind every check of it.

    Every value is finite and ``> MINIMUM`` (``>= MINIMUM`` where :meth:`allows_zero`).
    """

    name: str  # the constructor argument, e.g. "temperatures"; error messages start with `label`
    label: str  # how messages name it, e.g. "correction (F)"
    per_chain: bool  # a list of one value per chain is allowed (else one value for the sampler)
    zero_without_swaps: bool  # 0 is allowed when the sampler does not swap (temperature 0: M-SGD)
    increasing: bool  # a per-chain list is strictly increasing (as float32) across chains; without swaps,
    # non-decreasing (equal temperatures: independent chains, e.g. a deep ensemble of M-SGD runs)
    dtype: str  # the dtype the sampler computes it in: "float32" (range checked) or "float64"

    MINIMUM = 0.0
    """Every value is above this (or equal to it where :meth:`allows_zero`)."""

    def allows_zero(self, swaps: bool) -> bool:
        """True if ``MINIMUM`` itself is allowed (for a sampler that swaps when ``swaps``)."""
        return self.zero_without_swaps and not swaps

    def allowed(self, swaps: bool | None = None) -> str:
        """The allowed range in words: ``"> 0"``, ``">= 0"``, or (``swaps=None``: either sampler)
        ``"> 0 with swaps (>= 0 without)"``."""
        if not self.zero_without_swaps:
            return f"> {self.MINIMUM:g}"
        if swaps is None:
            return f"> {self.MINIMUM:g} with swaps (>= {self.MINIMUM:g} without)"
        return f">= {self.MINIMUM:g}" if self.allows_zero(swaps) else f"> {self.MINIMUM:g} with swaps"


TEMPERATURES = HyperparameterRule(
    "temperatures", "temperatures", per_chain=True, zero_without_swaps=True, increasing=True, dtype="float32"
)
"""Per-chain ``tau``: finite, ``> 0`` with swaps (``>= 0`` without), strictly increasing in float32
(non-decreasing without swaps)."""
LEARNING_RATES = HyperparameterRule(
    "learning_rates", "learning_rates", per_chain=True, zero_without_swaps=False, increasing=False, dtype="float32"
)
"""Per-chain ``eta``: finite and ``> 0`` in float32."""
CORRECTION = HyperparameterRule(
    "correction", "correction (F)", per_chain=False, zero_without_swaps=False, increasing=False, dtype="float64"
)
"""The swap rule's ``F``: one finite number ``> 0`` (float64)."""
RULES = {rule.name: rule for rule in (TEMPERATURES, LEARNING_RATES, CORRECTION)}
"""Argument name -> its rule."""


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_hyperparameter(
    kind: str,
    value: float | Sequence[float],
    num_chains: int | None = None,
    swaps: bool = True,
    name: str | None = None,
) -> float | list[float]:
    """A temperature, learning rate or correction ``F`` given as plain numbers, checked by its
    kind's :class:`HyperparameterRule`; returns it as a float or a list of floats.

    Args:
      kind: ``"temperatures"``, ``"learning_rates"`` or ``"correction"`` (a key of :data:`RULES`).
      value: a number, or for the per-chain kinds a list of numbers (one per chain).
      num_chains: ``K``: a list must have ``K`` entries and a number is expanded to ``K`` equal
        entries (per-chain kinds); ``None``: returned in the form given.
      swaps: the sampler swaps (temperatures must then be ``> 0``, else ``>= 0``).
      name: how errors name the value (default the argument's name, e.g. a config key).

    Raises:
      TypeError: a value that is not a number (or a list for ``"correction"``).
      ValueError: the wrong number of entries, a value out of range (non-finite, not
        representable in float32, below the minimum) or temperatures that do not increase.
    """
    rule = RULES.get(kind)
    if rule is None:
        raise ValueError(f"kind must be one of {sorted(RULES)}, got {kind!r}")
    label = rule.label if name is None else name
    many = isinstance(value, (list, tuple, np.ndarray))
    if many and not rule.per_chain:
        raise TypeError(f"{label}: one value for the sampler, not a list, got {value!r}")
    values: list[Any] = list(cast(Sequence[float], value)) if many else [value]
    if many and (not values or (num_chains is not None and len(values) != num_chains)):
        raise ValueError(f"{label} must have one entry per chain ({num_chains or 'at least 1'}), got {len(values)}")
    entries = f"{label} entries" if rule.per_chain else label
    for v in values:
        if not _is_number(v):
            raise TypeError(f"{entries} must be numbers, got {v!r}")
    floats = [float(v) for v in values]
    if not many and rule.per_chain and num_chains is not None:
        floats = floats * num_chains
    positive = not rule.allows_zero(swaps)
    if any(not np.isfinite(v) or not (v > rule.MINIMUM if positive else v >= rule.MINIMUM) for v in floats):
        what = "a finite number" if not rule.per_chain else "finite and"
        raise ValueError(f"{label} must be {what} {rule.allowed(swaps)}, got {floats if many else values[0]!r}")
    if rule.dtype == "float32":
        for v in floats:
            check_float32(entries, v, positive=positive)
    if rule.increasing and swaps and any(np.float32(b) <= np.float32(a) for a, b in zip(floats, floats[1:])):
        raise ValueError(f"{label} must be strictly increasing in float32 (tau_1 < tau_2 < ...), got {floats}")
    if rule.increasing and not swaps and any(np.float32(b) < np.float32(a) for a, b in zip(floats, floats[1:])):
        raise ValueError(
            f"{label} must not decrease in float32 without swaps (tau_1 <= tau_2 <= ...; "
            f"chain 1 is the coldest), got {floats}"
        )
    return floats if many or (rule.per_chain and num_chains is not None) else floats[0]
