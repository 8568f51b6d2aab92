"""Numeric ranges every layer checks against, without TensorFlow: float32's limits.

The sampler computes in float32 (weights, learning rates, temperatures) and float64 (energies,
``sigma2``, ``F``).  A hyperparameter that is finite in Python can still be ``inf`` or ``0`` in
float32 (``1e39``, ``1e-46``); :func:`check_float32` refuses such values with an error naming
the argument and the allowed range, before any graph runs.  This module is the bottom of the
package's layers (numpy only), so the TensorFlow-free command-line checks use it too.

Example:
  >>> check_float32("learning_rates", 2e-6)
  2e-06
  >>> check_float32("temperatures", 1e39)
  Traceback (most recent call last):
  ...
  ValueError: temperatures must be 0 or of magnitude in [1.18e-38, 3.4e+38] (finite in float32, the dtype the sampler computes in), got 1e+39
"""

import numpy as np

F32_TINY = float(np.finfo(np.float32).tiny)  # 1.18e-38: smaller magnitudes are 0 or denormal in float32
F32_MAX = float(np.finfo(np.float32).max)  # 3.4e38: larger magnitudes are inf in float32

__all__ = ["F32_MAX", "F32_TINY", "check_float32"]


def check_float32(name: str, value: float, positive: bool = False) -> float:
    """``value`` as a float, checked in float32 (the dtype the sampler's variables and steps use):
    ``|value| <= 3.4e38`` (``1e39`` is inf there) and, unless 0, ``|value| >= 1.18e-38`` (``1e-46``
    is 0 there); ``positive``: also ``> 0``.  ``ValueError`` naming ``name`` and the range."""
    v = float(value)
    if not np.isfinite(v) or abs(v) > F32_MAX or (v != 0 and abs(v) < F32_TINY) or (positive and not v > 0):
        allowed = (f"in [{F32_TINY:.3g}, {F32_MAX:.3g}]" if positive
                   else f"0 or of magnitude in [{F32_TINY:.3g}, {F32_MAX:.3g}]")
        raise ValueError(f"{name} must be {allowed} (finite{' and positive' if positive else ''} in float32, the dtype "
                         f"the sampler computes in), got {value!r}")
    return v
