"""How :class:`tf_vrre.LadderTuner` runs (host side: NumPy, no TensorFlow): the tuning phase's
rounds, the evidence a round needs before it moves the ladder, the learning rates that follow the
ladder, the range the hottest temperature may move in, and ``F`` adapted to a swap-rate target.

What a round's swaps say about the ladder (rejection, barrier, the equal-share ladder) is
:mod:`tf_vrre.sgmcmc.ladder`; this module is the procedure around it:

- :func:`round_end`, :func:`round_ends` - rounds of doubling length (Syed et al. 2021,
  Algorithm 4), each counted from where it started;
- :func:`too_few_attempts` - whether a round attempted every pair often enough
  (:data:`MIN_ROUND_ATTEMPTS`) to move the ladder;
- :func:`ladder_learning_rates`, :func:`check_learning_rates_over_range` - per-chain learning
  rates that follow the temperatures, checked as the sampler checks them;
- :func:`check_bounds` - the temperature range of the ladder;
- :func:`next_hot_temperature` - where a round moves the hottest temperature: out at once,
  in only in the last rounds of the tuning phase (or when every pair rejects nearly all its
  swaps), never below a hot end at which the chains changed modes;
- :func:`correction_step` - the stochastic approximation of ``log F`` towards a swap acceptance
  rate (``CorrectedSwap(correction="auto", target_acceptance=r)``).

Example:
  >>> round_ends(tuning_steps=100, first_round_steps=10)     # rounds of 10, 20 and the remaining 70
  [10, 30, 100]
  >>> too_few_attempts([12, 4, 9])
  'pair 1 was attempted 4 times (at least 6 per pair are needed)'
"""

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

import tf_vrre.sgmcmc.ladder as ladder
from tf_vrre import numerics

EVIDENCE_LEVEL = 0.05
"""Significance level of :data:`MIN_ROUND_ATTEMPTS`."""

MIN_ROUND_ATTEMPTS = math.ceil(math.log2(2.0 / EVIDENCE_LEVEL))
"""Fewest swap attempts of every pair for a tuning round to move the ladder (6).

Why 6: a pair attempted ``n`` times has a rejection estimate in ``{0, 1/n, ..., 1}``, and even its
most extreme outcome (all ``n`` accepted, or all rejected) differs from the neutral rate 0.5 (what
the tuner assumes of a pair it knows nothing about) at the 5% level of a two-sided exact binomial
test only when ``2 * 0.5^n < 0.05``, i.e. ``n >= 6`` (``n = 5`` gives ``p = 0.0625``).  With fewer
attempts no outcome of the round is evidence about that pair, so its barrier would come from
nothing: the round keeps the ladder (:func:`too_few_attempts`)."""


def _array(name: str, values: ArrayLike, size: int | None = None) -> np.ndarray:
    a = np.asarray(values, np.float64).reshape(-1)
    if size is not None and a.size != size:
        raise ValueError(f"{name} must have {size} entries, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    return a


def check_bounds(bounds: Sequence[float], cold_temperature: float | None) -> tuple[float, float]:
    """``bounds`` as ``(low, high)`` floats: ``0 < low <= cold < high``, compared in float32 as the
    sampler holds temperatures (a cold temperature of ``1e-6`` is ``9.99999997e-07`` there, and
    ``bounds=(1e-6, ...)`` contain it), both representable in float32; else a ``ValueError``
    naming ``bounds``.

    Example:
      >>> check_bounds((1e-6, 1.0), float(np.float32(1e-6)))
      (1e-06, 1.0)
    """
    try:
        low, high = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (low, high) of temperatures, got {bounds!r}") from None
    f32 = np.float32
    with np.errstate(over="ignore"):
        ok = np.isfinite(low) and np.isfinite(high) and low > 0 and bool(0 < f32(low) < f32(high) < np.inf)
    if not ok or low < numerics.F32_TINY:
        raise ValueError(
            f"bounds must be temperatures with 0 < low < high, finite and distinct in float32 (the dtype the "
            f"sampler holds them in; at least {numerics.F32_TINY:.3g}), got {bounds!r}"
        )
    if cold_temperature is not None and not f32(low) <= f32(cold_temperature) < f32(high):
        raise ValueError(
            f"bounds {bounds!r} must contain the cold temperature {cold_temperature} "
            "(low <= cold < high in float32): the cold chain samples the posterior and never moves"
        )
    return low, high


NEARLY_ALL = 0.95
"""A ladder whose every pair rejects at least this share of its swaps is too wide: its hot end
may move colder in any round."""


CROSSING_MARGIN = 1.1
"""A hot end held for its mode changes is worth a warning when the range the swaps would have
chosen, ``ln(tau_K / tau_1)``, is narrower than the kept one by more than this factor."""


def too_cold_to_cross(affordable: float, floor: float, cold: float) -> bool:
    """Whether the hottest temperature the swaps can afford, ``affordable``, spans a range
    (``ln(affordable / cold)``) narrower by more than :data:`CROSSING_MARGIN` than the one in
    which the chains changed modes (``ln(floor / cold)``).

    Ranges, not temperatures: a network's ladder spans a few percent above ``cold``, where a
    hot end moved from 1.06 to 1.001 keeps the temperature within 6% but a sixtieth of the range.

    Example:
      >>> too_cold_to_cross(2.46, 4.0, 1.0), too_cold_to_cross(3.9, 4.0, 1.0)
      (True, False)
      >>> too_cold_to_cross(1.001, 1.0635, 1.0)      # a network's range: 1/60 of it
      True
    """
    return math.log(affordable / cold) < math.log(floor / cold) / CROSSING_MARGIN


def next_hot_temperature(
    barrier: ladder.Barrier,
    bounds: Sequence[float],
    target_rejection: float | None,
    floor: float | None,
    narrow: bool,
    cautious: bool = False,
) -> tuple[float, float | None]:
    """The hottest temperature a round sets, and the colder one the swaps alone would have
    chosen when ``floor`` overrides it (else ``None``).

    The swaps' choice is :func:`tf_vrre.sgmcmc.ladder.hot_temperature` (where every pair rejects
    ``target_rejection``, or ``K / 2`` of the barrier without one).  It is taken when it is hotter
    (a wider range costs no mode a chain crossed).  A colder one waits for a round that may
    ``narrow`` the ladder (:class:`tf_vrre.LadderTuner`: the last two, the longest; the earlier,
    shorter ones may not yet have seen the chains change modes at the range they started with),
    unless every pair rejects at least :data:`NEARLY_ALL` of its swaps (then no state moves
    along the ladder, and a narrower range loses nothing the swaps deliver).  A ``cautious``
    round (states were seen moving between two levels of a weight, all the same way: relaxation,
    or first crossings whose returns have not shown yet) moves it colder only half way, to the
    geometric mean of the current hot end and the swaps' choice, unless every pair rejects nearly
    all swaps.  It never goes below ``floor``, the coldest hot end at which the chains were seen
    to change modes, nor outside ``bounds``.

    Args:
      barrier: the round's :class:`tf_vrre.sgmcmc.ladder.Barrier`.
      bounds: ``(low, high)``.
      target_rejection: the rejection per pair in ``(0, 1)``, or ``None``.
      floor: the coldest hot end with mode changes so far, or ``None``.
      narrow: the round may move the hot end colder.
      cautious: a colder hot end moves half way (in log temperature).

    Example:
      >>> b = ladder.Barrier([1.0, 2.0, 4.0, 8.0], [0.9, 0.9, 0.9])       # too hard for 4 chains
      >>> next_hot_temperature(b, (1.0, 8.0), 0.5, None, narrow=False)  # waits for the last rounds
      (8.0, None)
      >>> round(next_hot_temperature(b, (1.0, 8.0), 0.5, None, narrow=True)[0], 3)
      2.352
      >>> round(next_hot_temperature(b, (1.0, 8.0), 0.5, None, narrow=True, cautious=True)[0], 3)
      4.338
      >>> next_hot_temperature(b, (1.0, 8.0), 0.5, floor=8.0, narrow=True)[0]   # mode changes at 8
      8.0
    """
    low, high = bounds
    current = min(float(barrier.temperatures[-1]), float(high))
    want = ladder.hot_temperature(barrier, bounds, target_rejection=target_rejection)
    open_ladder = float(np.min(barrier.rejection)) < NEARLY_ALL  # some pair still exchanges states
    if want < current and not narrow and open_ladder:
        want = current
    elif want < current and cautious and open_ladder:
        want = math.sqrt(want * current)
    if floor is not None and want < min(float(floor), float(high)):
        return min(float(floor), float(high)), want
    return want, None


def check_learning_rate_rule(rule: float | Callable | None) -> float | Callable | None:
    """``None``, a finite exponent ``a`` or a callable; else ``TypeError`` / ``ValueError`` naming
    ``learning_rates``."""
    if rule is None or callable(rule):
        return rule
    if isinstance(rule, bool) or not isinstance(rule, numbers.Real) or not math.isfinite(rule):
        raise TypeError(
            f"learning_rates must be None, an exponent a (a finite number) or a callable "
            f"temperatures -> learning rates, got {rule!r}"
        )
    return float(rule)


def ladder_learning_rates(temperatures: ArrayLike, cold_learning_rate: float, rule: float | Callable) -> np.ndarray:
    """Per-chain learning rates for a new ladder, checked as the sampler checks them.

    ``rule`` is an exponent ``a``: ``eta_h = eta_1 (tau_h / tau_1)^a`` (``eta_1`` the cold chain's,
    kept), or a callable ``temperatures -> learning rates`` (a NumPy array in, ``K`` positive
    numbers out).  The paper's hand-tuned CIFAR pair, ``tau_2 = 5 tau_1`` with
    ``eta_2 = 1.5 eta_1``, is ``a = log 1.5 / log 5 = 0.25``.

    Raises:
      ValueError: naming ``learning_rates``, when the rule raises, or gives a value that is not
        finite and ``> 0`` in float32 (the dtype of the sampler's learning rates; ``1e-50`` is 0
        there, ``1e39`` inf), or the wrong number of values.

    Example:
      >>> ladder_learning_rates([1.0, 5.0, 25.0], 2e-6, 0.25).round(10).tolist()
      [2e-06, 2.9907e-06, 4.4721e-06]
    """
    t = _array("temperatures", temperatures)
    if callable(rule):
        try:
            raw = rule(t.copy())
        except Exception as err:
            raise ValueError(
                f"learning_rates: the rule raised {type(err).__name__} for the temperatures {t.tolist()}: {err}"
            ) from err
        out = np.asarray(raw, np.float64).reshape(-1)
        if out.size != t.size:
            raise ValueError(
                f"learning_rates: the rule must return {t.size} entries (one per chain), got {out.size} "
                f"for the temperatures {t.tolist()}"
            )
    else:
        with np.errstate(over="ignore", under="ignore"):
            out = float(cold_learning_rate) * (t / t[0]) ** float(rule)
        out[0] = float(cold_learning_rate)
    if not np.all(np.isfinite(out) & (out >= numerics.F32_TINY) & (out <= numerics.F32_MAX)):  # as the setter checks
        raise ValueError(
            f"learning_rates must be > 0 and finite in float32 (in [{numerics.F32_TINY:.3g}, {numerics.F32_MAX:.3g}], "
            f"the dtype the sampler computes in); the rule gave {out.tolist()} for the temperatures {t.tolist()}"
        )
    return out


def check_learning_rates_over_range(
    rule: float | Callable, temperatures: ArrayLike, cold_learning_rate: float, hottest: float
) -> None:
    """Tries the learning-rate ``rule`` before tuning starts, on the ladder in force and on the
    widest one the tuner may set (``K`` geometric temperatures from the cold one to ``hottest``,
    the upper bound or the fixed hottest temperature); ``ValueError`` naming ``learning_rates``
    if either gives a learning rate the sampler cannot hold (:func:`ladder_learning_rates`).

    For an exponent this covers every ladder the tuner may set (each rate lies between the
    cold chain's and the hottest one's); a callable is tried on these two.

    Example:
      >>> check_learning_rates_over_range(1e6, [1.0, 2.0, 4.0], 1e-3, 4.0)
      Traceback (most recent call last):
      ...
      ValueError: learning_rates must be > 0 and finite in float32 (in [1.18e-38, 3.4e+38], the dtype the sampler computes in); the rule gave [0.001, inf, inf] for the temperatures [1.0, 2.0, 4.0]
    """
    t = _array("temperatures", temperatures)
    ladder_learning_rates(t, cold_learning_rate, rule)
    top = max(float(hottest), float(t[-1]))
    ladder_learning_rates(np.geomspace(t[0], top, t.size), cold_learning_rate, rule)


def _check_round_lengths(tuning_steps: int, first_round_steps: int) -> None:
    for name, value in (("tuning_steps", tuning_steps), ("first_round_steps", first_round_steps)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def round_end(start: int, index: int, tuning_steps: int, first_round_steps: int) -> int:
    """The step at which round ``index`` (0, 1, ...), started at step ``start``, is due to end.

    Round ``i`` lasts ``first_round_steps * 2^i`` steps from where it started, unless the next
    round (twice as long) would not fit before ``tuning_steps``: then it is the last round and
    runs to ``tuning_steps`` (so the last round is the longest, and the final ladder comes from
    the most swaps).  Counting from the actual start keeps every round at least its length when
    rounds can end only at the end of an executed block (``steps_per_execution > 1``).

    Args:
      start: the step the round started at (``< tuning_steps``).
      index: the round's number.
      tuning_steps, first_round_steps: the tuner's arguments.

    Example:
      >>> round_end(0, 0, 100, 10), round_end(10, 1, 100, 10), round_end(30, 2, 100, 10)
      (10, 30, 100)
      >>> round_end(12, 1, 100, 10)     # the round before ended late, at step 12: this one still lasts 20
      32
    """
    _check_round_lengths(tuning_steps, first_round_steps)
    if isinstance(start, bool) or not isinstance(start, numbers.Integral) or not 0 <= start < tuning_steps:
        raise ValueError(f"start must be an integer in [0, tuning_steps={tuning_steps}), got {start!r}")
    if isinstance(index, bool) or not isinstance(index, numbers.Integral) or index < 0:
        raise ValueError(f"index must be an integer >= 0, got {index!r}")
    length = int(first_round_steps) << int(index)
    end = int(start) + length
    return end if end + 2 * length <= tuning_steps else int(tuning_steps)


def round_ends(tuning_steps: int, first_round_steps: int) -> list[int]:
    """Steps at which the tuning rounds end when each ends when it is due: lengths ``n, 2n, 4n, ...``
    from step 0, the last round running to ``tuning_steps`` (it takes the remainder, so it is the
    longest: the final ladder is estimated from the most swaps).  Rounds that end later than due
    (at the end of an executed block) shift the later ones: :func:`round_end`.

    Example:
      >>> round_ends(100, 10)
      [10, 30, 100]
      >>> round_ends(5, 10)
      [5]
    """
    _check_round_lengths(tuning_steps, first_round_steps)
    ends = [round_end(0, 0, tuning_steps, first_round_steps)]
    while ends[-1] < tuning_steps:
        ends.append(round_end(ends[-1], len(ends), tuning_steps, first_round_steps))
    return ends


def too_few_attempts(attempts: ArrayLike) -> str | None:
    """Why a round's counts cannot move the ladder, or ``None`` if they can: some pair was
    attempted fewer than :data:`MIN_ROUND_ATTEMPTS` times.

    Example:
      >>> too_few_attempts([40, 3, 12])
      'pair 1 was attempted 3 times (at least 6 per pair are needed)'
      >>> too_few_attempts([6, 6, 6]) is None
      True
    """
    n = _array("attempts", attempts)
    if n.size == 0 or np.min(n) >= MIN_ROUND_ATTEMPTS:
        return None
    p = int(np.argmin(n))
    return f"pair {p} was attempted {int(n[p])} times (at least {MIN_ROUND_ATTEMPTS} per pair are needed)"


CORRECTION_GAIN = 0.05
"""Gain of :func:`correction_step` per swap decision at step 0."""

CORRECTION_GAIN_STEPS = 100
"""Steps over which the gain of :func:`correction_step` starts to decay (as ``t^-0.6``)."""

CORRECTION_BOUNDS = (1e-3, 1e12)
"""``F`` is kept in this range while it adapts (a target the rule cannot reach would drive it
without bound: with exact energies ``F`` has no effect at all)."""


def correction_step(log_correction: float, target: float, attempts: int, swaps: int, step: int) -> float:
    """``log F`` after a block of swap decisions, adapted towards the acceptance rate ``target``.

    Update rule (Robbins-Monro on ``log F``, one term per attempted pair; a larger ``F`` shrinks
    the noise penalty ``delta sigma2 / F`` and so accepts more)::

        log F <- log F + c(t) (target * attempts - swaps),   c(t) = 0.05 (1 + t / 100)^-0.6

    with ``t`` the step at the block's end, ``F`` clipped to :data:`CORRECTION_BOUNDS`.  The gain
    decays so that ``sum c = inf`` and ``sum c^2 < inf``: ``F`` settles where the acceptance
    rate over all attempted pairs is ``target``.

    Args:
      log_correction: ``log F`` in force.
      target: the acceptance rate in ``(0, 1)``.
      attempts: pair decisions in the block (all pairs together).
      swaps: accepted ones among them.
      step: the step at the block's end (``>= 0``).

    Example:
      >>> import math
      >>> round(math.exp(correction_step(math.log(2.0), 0.3, attempts=10, swaps=0, step=0)), 3)  # too few: F up
      2.324
      >>> correction_step(math.log(2.0), 0.3, attempts=10, swaps=3, step=500) == math.log(2.0)     # on target
      True
    """
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0 < target < 1:
        raise ValueError(f"target must be in (0, 1), got {target!r}")
    if attempts < 0 or not 0 <= swaps <= attempts or step < 0:
        raise ValueError(
            f"need 0 <= swaps <= attempts and step >= 0, got attempts={attempts}, swaps={swaps}, step={step}"
        )
    gain = CORRECTION_GAIN * (1.0 + step / CORRECTION_GAIN_STEPS) ** -0.6
    lo, hi = (math.log(v) for v in CORRECTION_BOUNDS)
    return min(hi, max(lo, float(log_correction) + gain * (target * attempts - swaps)))
