"""Bounds on the numbers one SG-MCMC step computes with, checked before TensorFlow starts (numpy only).

The sampler's weights, learning rates and temperatures are float32.  A hyperparameter can be
a fine float32 while a number the step derives from it is not: ``lr / N`` below float32's
smallest normal number, ``hot multiplier * tau`` or the noise variance ``2 (1 - momentum) eta tau``
beyond its largest.  And one rule holds whatever the data: under a Gaussian prior of precision
``lambda`` the step ``w <- w - eta lambda w`` (SGHMC: with momentum ``m``) alone is stable only
for ``eta lambda < 2 (1 + m)``; beyond it the weights grow by a factor each step, whatever the
gradient of the data does.

Each check here names one hyperparameter (a config key or a flag) and the interval it may take
given the others, so the error says what to change; the ends shown are rounded towards the inside
of the interval (5067 shows as 5.06e+03), so a number copied from the message is allowed.  The workflows' preflights call them
(:mod:`tf_vrre.workflows.image_classification.sampler_numbers`, ``tf-vrre mixture``).

Example:
  >>> prior_stability_limit(precision=25.0, momentum=0.9)    # eta * 25 < 3.8
  0.152
  >>> within("sampler.lr", 3e38, 1e-30, 5067.0, "the prior's own step diverges beyond it", hi_open=True)
  Traceback (most recent call last):
  ...
  tf_vrre.workflows.step_bounds.BoundError: sampler.lr must be in [1e-30, 5.06e+03) (the prior's own step diverges beyond it), got 3e+38
"""

from __future__ import annotations

import decimal
import math

from tf_vrre import errors
from tf_vrre.numerics import F32_MAX

__all__ = ["BoundError", "within", "prior_stability_limit", "noise_variance_limit", "log_or_inf"]


class BoundError(errors.TfVrreError, ValueError):
    """A hyperparameter outside the interval the step's numbers allow; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def within(
    key: str,
    value: float,
    lo: float,
    hi: float,
    why: str,
    hi_open: bool = False,
    zero: bool = False,
    prefix: str = "",
    context: str = "",
) -> float:
    """``value`` if ``lo <= value <= hi`` (``hi_open``: ``< hi``; ``zero``: 0 is allowed too), else
    :class:`BoundError` naming ``key``, the interval and ``why``.  ``prefix`` starts the message
    (e.g. ``"config key "``), ``context`` follows the interval (e.g. ``" for N = 64"``)."""
    ok = (value == 0 and zero) or (lo <= value and (value < hi if hi_open else value <= hi))
    if ok:
        return value
    digits = 3
    while _decimal(lo, digits, decimal.ROUND_CEILING) == _decimal(hi, digits, decimal.ROUND_FLOOR) and digits < 17:
        digits += 1  # an interval narrower than the digits shown
    interval = (
        f"[{_decimal(lo, digits, decimal.ROUND_CEILING)}, {_decimal(hi, digits, decimal.ROUND_FLOOR)}"
        f"{')' if hi_open else ']'}"
    )
    zero_text = "0 or " if zero else ""
    raise BoundError(key, f"{prefix}{key} must be {zero_text}in {interval}{context} ({why}), got {value:.6g}")


def _decimal(x: float, digits: int, rounding: str) -> str:
    """``x`` to ``digits`` significant digits, rounded towards the inside of an interval (a lower end
    up, an upper end down), so that the number shown is allowed."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    exact = decimal.Decimal(repr(x))  # the shortest text of x: 1e-30, not its binary 1.00000000000000008e-30
    q = exact.quantize(decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=rounding)
    return f"{float(q):.{digits}g}"


def prior_stability_limit(precision: float, momentum: float = 0.0) -> float:
    """The step size ``eta`` below which the Gaussian prior's own update is stable:
    ``2 (1 + momentum) / precision`` (``inf`` without a prior)."""
    return math.inf if precision <= 0 else 2.0 * (1.0 + momentum) / precision


def noise_variance_limit(temperature: float, friction: float = 1.0) -> float:
    """The largest step size ``eta`` whose noise variance ``2 friction eta tau`` is finite in
    float32 (SGLD: ``friction`` 1; SGHMC: ``1 - momentum``)."""
    product = 2.0 * friction * temperature
    return math.inf if product <= 0 else F32_MAX / product


def log_or_inf(value: float) -> float:
    """``log(value)``, ``-inf`` for 0 (logs keep products of large factors from overflowing)."""
    return math.log(value) if value > 0 else -math.inf
