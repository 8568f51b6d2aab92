"""The value checks of the config's keys (TensorFlow-free): each takes a TOML value and returns it
normalised, or raises ``ValueError`` whose text is the allowed range (the caller, the preflight's
:func:`tf_vrre.workflows.image_classification.config.resolve`, adds the key, the value and the file).

Numbers are bounded by what the sampler can hold: integers by int32 (``2**31 - 1``: steps,
shapes and stateless-RNG seeds), floats by float32 (finite, and a nonzero magnitude at least
float32's smallest normal number), so that a value the config accepts is never ``inf`` or ``0``
once TensorFlow has it.

Example:
  >>> integer(1)(256), number(0, 1, hi_open=True)(0.9)
  (256, 0.9)
  >>> integer(1)(0)
  Traceback (most recent call last):
  ...
  ValueError: an integer in [1, 2147483647]
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tf_vrre.numerics import F32_MAX, F32_TINY

Check = Callable[[Any], Any]

INT_MAX = 2**31 - 1
"""Largest integer a config value may hold (int32: steps, shapes and stateless-RNG seeds)."""

MOMENTUM_MAX = float(np.nextafter(np.float32(1), np.float32(0)))
"""Largest momentum below 1 in float32 (0.99999994): above it the friction ``1 - momentum`` is 0."""

_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 60, 60, 3, 4, 4


def show(value: Any) -> str:
    """A short ``repr`` of a config value for an error message (bounded in length and depth).

    Example:
      >>> show([[[[[1]]]]])
      '[[[[...]]]]'
    """
    return _REPR.repr(value)


def integer(lo: int, hi: int = INT_MAX) -> Check:
    """Check: an integer in ``[lo, hi]`` (not a bool)."""

    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= v <= hi:
            raise ValueError(f"an integer in [{lo}, {hi}]")
        return int(v)

    return check


def _range_text(lo: float, hi: float, lo_open: bool, hi_open: bool) -> str:
    """The interval float32 leaves of ``lo .. hi``: a positive lower end 0 becomes float32's
    smallest normal number, the upper end at most its largest."""
    close = ")" if hi_open else "]"
    if lo == 0:
        core = f"a number in [{F32_TINY:.3g}, {hi:.3g}{close}"
        return (core if lo_open else "0 or " + core) + " (float32)"
    return f"a number in {'(' if lo_open else '['}{lo:.3g}, {hi:.3g}{close}" + (" (float32)" if hi == F32_MAX else "")


def number(lo: float, hi: float = F32_MAX, lo_open: bool = False, hi_open: bool = False) -> Check:
    """Check: a finite number from ``lo`` to ``hi`` (``*_open``: excluding that end) that float32
    holds: at most :data:`~tf_vrre.numerics.F32_MAX`, a nonzero magnitude at least
    :data:`~tf_vrre.numerics.F32_TINY` (smaller is 0 or imprecise there)."""

    def check(v: Any) -> float:
        if (
            isinstance(v, bool)
            or not isinstance(v, numbers.Real)
            or not math.isfinite(v)
            or (v <= lo if lo_open else v < lo)
            or (v >= hi if hi_open else v > hi)
            or (v != 0 and not F32_TINY <= abs(v) <= F32_MAX)
        ):
            raise ValueError(_range_text(lo, hi, lo_open, hi_open))
        return float(v)

    return check


def momentum(v: Any) -> float:
    """Check: a momentum in ``[0, 1)`` that stays below 1 in float32 (the friction ``1 - momentum``
    of SGHMC must not round to 0)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or not 0 <= v < 1:
        raise ValueError("a number in [0, 1)")
    if not np.float32(v) < 1 or (v != 0 and v < F32_TINY):
        raise ValueError(
            f"a number in [0, {MOMENTUM_MAX:.8g}] (below 1 in float32: the friction 1 - momentum would be 0 there)"
        )
    return float(v)


def boolean(v: Any) -> bool:
    """Check: ``true`` or ``false``."""
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def choice(*values: Any) -> Check:
    """Check: one of ``values``."""

    def check(v: Any) -> Any:
        if not isinstance(v, (str, int, float)) or v not in values:
            raise ValueError("one of " + ", ".join(map(str, values)))
        return v

    return check


def count_or_fraction(v: Any) -> int | float:
    """Check: an integer count in ``[0, 2**31 - 1]`` or a fraction in ``[0, 1)``."""
    if (
        isinstance(v, bool)
        or not isinstance(v, numbers.Real)
        or not math.isfinite(v)
        or v < 0
        or (isinstance(v, numbers.Integral) and v > INT_MAX)
        or (not isinstance(v, numbers.Integral) and v >= 1)
    ):
        raise ValueError(f"an integer count in [0, {INT_MAX}] or a fraction in [0, 1)")
    return int(v) if isinstance(v, numbers.Integral) else float(v)


def coefficient(v: Any) -> float | str:
    """Check: the control-variate coefficient, a finite number (float32) or ``"adaptive"``."""
    if v == "adaptive":
        return v
    try:
        return number(-F32_MAX)(v)
    except ValueError:
        raise ValueError('a finite number (the paper: -1) or "adaptive"') from None


def text(v: Any) -> str:
    """Check: a non-empty string."""
    if not isinstance(v, str) or not v:
        raise ValueError("a non-empty string")
    return v


def ladder_ratios(increasing: bool) -> Check:
    """Check: ``None`` (not given) or a list of at least 2 numbers, multiples of the cold chain's
    value: the first 1, each positive and finite in float32, strictly increasing with
    ``increasing`` (temperatures); returned as a tuple."""
    what = "a list of at least 2 numbers > 0 (float32), the first 1" + (", strictly increasing" if increasing else "")

    def check(v: Any) -> tuple[float, ...] | None:
        if v is None:
            return None
        if not isinstance(v, list) or len(v) < 2:
            raise ValueError(what)
        try:
            values = tuple(number(0, lo_open=True)(x) for x in v)
        except ValueError:
            raise ValueError(what) from None
        if values[0] != 1 or (increasing and any(b <= a for a, b in zip(values, values[1:]))):
            raise ValueError(what)
        return values

    return check


def bounds_pair(v: Any) -> tuple[float, float] | None:
    """Check: ``None`` (not given) or ``[low, high]``, multiples of the cold temperature with
    ``0 < low <= 1 < high`` (float32); returned as a tuple."""
    what = "[low, high] with 0 < low <= 1 < high (multiples of sampler.temperature, float32)"
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 2:
        raise ValueError(what)
    try:
        low, high = (number(0, lo_open=True)(x) for x in v)
    except ValueError:
        raise ValueError(what) from None
    if not low <= 1 < high:
        raise ValueError(what)
    return low, high


def kwargs_table(v: Any) -> dict:
    """Check: a table of numbers, booleans or strings (a model builder's keyword arguments)."""
    if not isinstance(v, dict) or not all(isinstance(x, (bool, int, float, str)) for x in v.values()):
        raise ValueError("a table of numbers, booleans or strings (builder keyword arguments)")
    return dict(v)


def dataset(v: Any) -> str:
    """Check: a data set name (an alias such as ``svhn`` becomes its tfds name)."""
    from tf_vrre.workflows.image_classification.data.sources import ALIASES, DATASETS

    if not isinstance(v, str) or ALIASES.get(v, v) not in DATASETS:
        raise ValueError("one of " + ", ".join(list(DATASETS) + list(ALIASES)))
    return ALIASES.get(v, v)


MODEL_NAMES = ("cnn", "resnet8", "resnet20", "resnet32", "resnet56")
"""``models.names()`` without importing Keras (the command line checks configs before TensorFlow
starts; ``tests/workflows/image_classification/test_config.py`` checks that the two agree)."""

_RESNET_KWARGS = {"width": integer(1), "synchronized_bn": boolean, "name": text}
MODEL_KWARGS = {
    "cnn": {"width": integer(1), "batch_norm": boolean, "synchronized_bn": boolean, "name": text},
    **{name: _RESNET_KWARGS for name in MODEL_NAMES if name.startswith("resnet")},
}
"""``model.kwargs`` each builder takes, with their checks (the builders' keyword arguments, without
Keras; ``tests/workflows/image_classification/test_data_inputs.py`` checks them against the signatures)."""
