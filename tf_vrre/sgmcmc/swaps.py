"""Swap rules: corrected replica-exchange acceptance, pair proposals, permutations.

Swap rules *take* energies; they never compute them.  Chains are ordered by temperature
``tau_0 < tau_1 < ... < tau_{K-1}``; pair ``p`` is ``(p, p + 1)``.  For a pair with energies
``U_lo`` (colder) and ``U_hi`` (hotter), ``delta = 1/tau_lo - 1/tau_hi > 0`` and the corrected
log acceptance ratio (Deng et al. 2020/2021) is::

    log S = delta * (U_lo - U_hi - delta * sigma2 / F)

The swap is accepted when ``log u < log S``, ``u ~ U(0, 1)``.  With exact energies and
``sigma2 = 0`` this is parallel tempering's Metropolis rule ``min(1, exp(delta (U_lo - U_hi)))``:
the colder chain tends to take the lower-energy state.

Pair proposals share one signature ``propose(num_chains, attempt, seed) -> bool [K-1]``
(which pairs are attempted); attempted pairs are always disjoint.  The even/odd schedule may keep
one parity for a window of ``W`` attempts (:func:`even_odd_pairs`, :func:`deo_window_rule`); its parity
is a function of the attempt counter alone, so it adds no state.
"""

from __future__ import annotations

import collections
import math
import numbers
from typing import TYPE_CHECKING

import keras
import tensorflow as tf

import tf_vrre.sgmcmc.estimators as estimators
import tf_vrre.sgmcmc.schedules as schedules
import tf_vrre.sgmcmc.seeds as seeds

if TYPE_CHECKING:
    from tf_vrre.sgmcmc.state import SwapState
    from tf_vrre.sgmcmc.swap_energy import SwapEnergies

PAIR_SCHEDULES = ("random", "deo")
PENALTIES = ("auto", "batch", "offset", "window")
AUTO_INITIAL_CORRECTION = 2.0
"""``F`` at the start of a run with ``correction="auto"``: the value that makes ``exp(log S)``
unbiased for Gaussian energy noise."""


class SwapResults(
    collections.namedtuple(
        "SwapResults",
        ["log_accept_ratio", "attempted", "accepted", "permutation", "attempt", "sigma2", "correction"],
        defaults=(None, None, None),
    )
):
    """Diagnostics of one swap attempt.

    Fields:
      log_accept_ratio: float64 ``[K-1]``, ``log S`` of every adjacent pair.
      attempted: bool ``[K-1]``, pairs proposed this step.
      accepted: bool ``[K-1]``, pairs swapped this step.
      permutation: int32 ``[K]``; slot ``j`` receives the state of slot ``permutation[j]``.
      attempt: bool, a swap attempt took place (not cooling, sigma2 ready), even if no pair
        was proposed (the even/odd schedule advances on attempts).
      sigma2: float64 ``[K-1]``, the sigma2 used in the penalty.
      correction: float64, the correction factor ``F`` used.
    """


def log_swap_ratio(
    energy_lo: tf.Tensor,
    energy_hi: tf.Tensor,
    temperature_lo: tf.Tensor,
    temperature_hi: tf.Tensor,
    sigma2: tf.Tensor,
    correction: tf.Tensor | float,
) -> tf.Tensor:
    """Corrected log acceptance ratio ``delta * (U_lo - U_hi - delta * sigma2 / F)``."""
    energy_lo = tf.cast(energy_lo, tf.float64)
    energy_hi = tf.cast(energy_hi, tf.float64)
    delta = 1.0 / tf.cast(temperature_lo, tf.float64) - 1.0 / tf.cast(temperature_hi, tf.float64)
    sigma2 = tf.cast(sigma2, tf.float64)
    correction = tf.cast(correction, tf.float64)
    return delta * (energy_lo - energy_hi - delta * sigma2 / correction)


def random_pair(num_chains: int, attempt: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """Attempts one adjacent pair drawn uniformly."""
    del attempt
    num_pairs = num_chains - 1
    p = tf.random.stateless_uniform([], seed, minval=0, maxval=num_pairs, dtype=tf.int32)
    return tf.equal(tf.range(num_pairs), p)


def even_odd_pairs(num_chains: int, attempt: tf.Tensor, seed: tf.Tensor, window: int = 1) -> tf.Tensor:
    """Deterministic even/odd (DEO, non-reversible) schedule, optionally windowed.

    Attempt ``a`` has parity ``floor(a / W) mod 2`` (``W = window``): even parity proposes pairs
    ``(0,1), (2,3), ...``, odd parity ``(1,2), (3,4), ...``.  ``W = 1`` alternates every
    attempt (Okabe et al. 2001; Syed et al. 2021); ``W > 1`` keeps one parity for ``W``
    attempts in a row (Deng et al. 2023), so a pair whose swaps are rarely accepted gets ``W``
    chances before the sweep turns.  The parity depends on the attempt counter only (never on
    which swaps were accepted), so the schedule is a fixed sequence of Metropolis moves, each
    leaving the product of the tempered laws invariant.  (The authors' code also stops attempting
    a pair after its first accepted swap in a window: that makes the moves depend on the chain's
    own history, the stopping-time bias their paper discusses; it is not done here.)
    """
    del seed
    if window == 1:
        parity = tf.cast(tf.math.floormod(attempt, 2), tf.int32)
    else:
        parity = tf.cast(tf.math.floormod(tf.math.floordiv(attempt, window), 2), tf.int32)
    return tf.equal(tf.math.floormod(tf.range(num_chains - 1), 2), parity)


def deo_window_rule(num_chains: int, swap_rate: float) -> int:
    """The DEO window of Deng et al. (2023): ``W = ceil((log P + log log P) / (-log(1 - r)))``.

    ``P`` is the number of chains and ``r`` the swap (acceptance) rate of a pair.  With ``W``
    attempts per parity a pair fails to swap in a whole window with probability
    ``(1 - r)^W <= 1 / (P log P)``, so (union bound over the fewer than ``P`` pairs) every pair
    swaps at least once per window with probability at least ``1 - 1 / log P``: the sweep across
    the ladder keeps its direction when swaps are rare.  The authors define ``P`` as the number of
    chains (their code: ``log(chains) + log(log(chains))``), which also keeps the rule defined for
    two chains (``log log 1`` is not).

    Args:
      num_chains: ``P >= 2``.
      swap_rate: the pairs' swap acceptance rate ``r`` in ``(0, 1)`` (e.g. the rate measured
        by :class:`tf_vrre.SwapLogger`, or a target).

    Returns:
      The window ``W >= 1`` (an int) for ``CorrectedSwap(pairs="deo", deo_window=W)``.

    Example:
      >>> deo_window_rule(8, 0.05), deo_window_rule(8, 0.5), deo_window_rule(2, 0.99)
      (55, 5, 1)
    """
    if isinstance(num_chains, bool) or not isinstance(num_chains, numbers.Integral) or num_chains < 2:
        raise ValueError(f"num_chains must be an integer >= 2, got {num_chains!r}")
    if isinstance(swap_rate, bool) or not isinstance(swap_rate, numbers.Real) or not 0 < swap_rate < 1:
        raise ValueError(f"swap_rate must be in (0, 1), got {swap_rate!r}")
    p = float(num_chains)
    return max(1, int(math.ceil((math.log(p) + math.log(math.log(p))) / -math.log1p(-float(swap_rate)))))


_PROPOSALS = {"random": random_pair, "deo": even_odd_pairs}


def permutation_from_pairs(accepted: tf.Tensor) -> tf.Tensor:
    """Permutation ``[K]`` that exchanges the (disjoint) accepted adjacent pairs."""
    num_pairs = accepted.shape[0]
    idx = tf.range(num_pairs + 1)
    pad = tf.zeros([1], tf.bool)
    left = tf.concat([accepted, pad], 0)  # slot j is the lower end of an accepted pair
    right = tf.concat([pad, accepted], 0)  # slot j is the upper end of an accepted pair
    return tf.where(left, idx + 1, tf.where(right, idx - 1, idx))


def decide_swaps(log_ratio: tf.Tensor, attempted: tf.Tensor, seed: tf.Tensor) -> SwapResults:
    """Metropolis decisions for the attempted pairs; returns :class:`SwapResults`."""
    u = seeds.uniform(tf.shape(log_ratio), seed, tf.float64)  # the same under XLA (seeds module)
    accepted = tf.logical_and(attempted, tf.math.log(u) < log_ratio)
    return SwapResults(log_ratio, attempted, accepted, permutation_from_pairs(accepted))


@keras.saving.register_keras_serializable(package="tf_vrre")
class CorrectedSwap:
    """Replica-exchange swaps with the variance-corrected acceptance rule (reSG*).

    ``log S = delta (U_lo - U_hi - delta sigma2 / F)``, with ``sigma2`` (one per adjacent pair)
    an estimate of ``Var(U~_lo - U~_hi)`` over mini-batches, updated every ``period`` steps by
    stochastic approximation ``sigma2 <- (1 - gamma) sigma2 + gamma s2``.  No swap happens
    before the first estimate exists.

    Args:
      correction: ``F > 0``, a number or a ``keras.optimizers.schedules.LearningRateSchedule``
        of the step (e.g. ``tf_vrre.EpochExponential(1.5e5, 1.02, ...)`` for the
        paper's ``F_k = F_0 1.02^k``).  ``F = 2`` makes ``exp(log S)`` unbiased for Gaussian
        energy noise; larger ``F`` swaps more at the price of bias.  ``"auto"``: ``F`` starts at
        2 and a :class:`tf_vrre.LadderTuner` adapts it during its tuning phase so that the
        swaps are accepted at the rate ``target_acceptance``, by stochastic approximation on
        ``log F`` (:func:`tf_vrre.sgmcmc.tuning.correction_step`), then keeps it fixed; without
        a tuner ``F`` stays 2.
      smoothing: ``gamma`` in ``(0, 1]``.
      period: steps between ``sigma2`` updates; ``None`` uses the variance-reduction period
        ``m`` when control variates are on, else 1.
      pairs: ``"random"`` (one uniformly chosen adjacent pair per attempt) or ``"deo"``
        (deterministic even/odd).  With two chains both attempt the only pair every step.
      deo_window: with ``pairs="deo"``, attempts per parity ``W`` in ``[1, 2**63 - 1]`` (``1``:
        alternate every attempt; :func:`deo_window_rule` gives the authors' rule from the swap
        rate; the attempt counter is int64).  Only ``1`` with ``pairs="random"``.
      cooling_steps: after an accepted swap, no swap is attempted for this many steps
        (``0``: off).  ``cooling_steps = steps_per_epoch`` gives the authors' "at most one
        swap per epoch".
      penalty: the ``sigma2`` of the rule: ``"batch"`` (this step's within-batch estimate),
        ``"offset"`` (one smoothed estimate per step since the snapshot refresh), ``"window"``
        (the paper's one smoothed estimate per window) or ``"auto"`` (``"batch"`` with control
        variates, ``"window"`` without).
      attempt_every: attempt swaps only every k steps (``1``: every step, the paper's
        Algorithm 1).  The swap energies' extra forwards (snapshot or inference-mode) run only
        on attempt steps, so k > 1 trades swap attempts for cost; each attempt is still an
        exact corrected-rule decision.
      target_acceptance: with ``correction="auto"`` (and only then), the swap acceptance rate
        in ``(0, 1)`` that ``F`` is adapted to, over all attempted pairs.  Any ``F`` other than
        the unbiased one biases the swaps (the guide "Choosing and tuning the ladder" measures
        how much on the Gaussian mixture).

    Example:
      >>> swap = CorrectedSwap(correction=2.0, smoothing=0.3, pairs="deo")
      >>> windowed = CorrectedSwap(pairs="deo", deo_window=deo_window_rule(8, swap_rate=0.1))
      >>> windowed.deo_window
      27
      >>> CorrectedSwap(correction="auto", target_acceptance=0.3).initial_correction()
      2.0
    """

    def __init__(
        self,
        correction: schedules.ScalarOrSchedule | str = 2.0,
        smoothing: float = 0.3,
        period: int | None = None,
        pairs: str = "random",
        cooling_steps: int = 0,
        penalty: str = "auto",
        attempt_every: int = 1,
        deo_window: int = 1,
        target_acceptance: float | None = None,
    ) -> None:
        self.target_acceptance = _checked_target(correction, target_acceptance)
        if isinstance(correction, str) and correction != "auto":
            raise ValueError(
                f"correction (F) must be a number > 0, a LearningRateSchedule or 'auto', got {correction!r}"
            )
        if not isinstance(correction, str):  # "auto": F starts at AUTO_INITIAL_CORRECTION, a tuner adapts it
            correction = schedules.validated("correction", correction)  # a float or a schedule
        if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0 < smoothing <= 1:
            raise ValueError(f"smoothing (gamma) must be in (0, 1], got {smoothing!r}")
        if period is not None and (isinstance(period, bool) or not isinstance(period, int) or period < 1):
            raise ValueError(f"period must be a positive integer or None, got {period!r}")
        if pairs not in PAIR_SCHEDULES:
            raise ValueError(f"pairs must be one of {PAIR_SCHEDULES}, got {pairs!r}")
        _check_count("cooling_steps", cooling_steps, 0)
        if penalty not in PENALTIES:
            raise ValueError(f"penalty must be one of {PENALTIES}, got {penalty!r}")
        _check_count("attempt_every", attempt_every, 1)
        _check_count("deo_window", deo_window, 1)
        if deo_window != 1 and pairs != "deo":
            raise ValueError(
                f"deo_window: a window of attempts per parity needs pairs='deo', got "
                f"deo_window={deo_window!r} with pairs={pairs!r}"
            )
        self.correction: schedules.ScalarOrSchedule | str = correction
        self.smoothing: float = float(smoothing)
        self.period: int | None = period
        self.pairs: str = pairs
        self.cooling_steps: int = int(cooling_steps)
        self.penalty: str = penalty
        self.attempt_every: int = int(attempt_every)
        self.deo_window: int = int(deo_window)

    def resolved(self, variance_reduced: bool) -> CorrectedSwap:
        """This rule with ``penalty="auto"`` made concrete: ``"batch"`` with control variates
        (their noise grows through the snapshot period), else the paper's ``"window"``."""
        if self.penalty != "auto":
            return self
        return CorrectedSwap.from_config({**self.get_config(), "penalty": "batch" if variance_reduced else "window"})

    def possible(self, step: tf.Tensor, state: SwapState) -> tf.Tensor:
        """True on attempt steps (``step % attempt_every == 0``) unless a swap was accepted
        within the last ``cooling_steps`` steps."""
        cooled = step - state.last_swap_step > self.cooling_steps
        if self.attempt_every == 1:
            return cooled
        return tf.logical_and(cooled, tf.equal(tf.math.floormod(step, self.attempt_every), 0))

    def penalty_variance(
        self, state: SwapState, energies: SwapEnergies, step: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """The ``sigma2`` ``[P]`` of this step's penalty and whether it exists yet (bool scalar).

        ``"batch"``: this batch's own estimate of ``Var(U~_p - U~_{p+1})`` at the current
        weights (exactly 0 at a VR refresh step, where the estimator is exact); ``"offset"``:
        the smoothed estimate for this step's offset ``step mod m`` since the snapshot refresh;
        ``"window"``: the paper's one smoothed estimate per window.
        """
        if self.penalty == "window":
            return tf.convert_to_tensor(state.sigma2), tf.convert_to_tensor(state.sigma2_ready)
        if self.penalty == "offset":
            k = tf.math.floormod(step, state.offsets)
            return tf.gather(state.sigma2_offset, k, axis=1), tf.gather(state.offset_ready, k)
        return energies.variance, tf.constant(True)

    def attempt(
        self, state: SwapState, energies: SwapEnergies, temperatures: tf.Tensor, step: tf.Tensor, key: tf.Tensor
    ) -> SwapResults:
        """Proposes pairs and decides them with the corrected rule (step 4 of the train step).

        Args:
          state: the sampler's :class:`tf_vrre.sgmcmc.state.SwapState` (``sigma2``, ``F``, counters);
            a scheduled ``F`` is evaluated at ``step`` and stored in ``state.correction``.
          energies: the step's :class:`tf_vrre.sgmcmc.swap_energy.SwapEnergies` (``energy``: float64
            ``[K]`` swap energies ``U~`` of the states in the K slots; ``variance``).
          temperatures: ``[K]`` temperatures of the slots.
          step: int64 step; key: the step's seed (split here by purpose).

        Returns:
          :class:`SwapResults` (nothing is counted or moved yet: see :meth:`count`).
        """
        energy = energies.energy
        num_chains = energy.shape[0]
        sigma2, ready = self.penalty_variance(state, energies, step)
        attempt = tf.logical_and(self.possible(step, state), ready)
        proposed = tf.logical_and(
            self.propose(num_chains, state.attempt_index, seeds.fold(key, seeds.SWAP_PAIR)), attempt
        )
        if schedules.is_schedule(self.correction):
            state.correction.assign(tf.cast(self.correction(step), tf.float64))
        correction = tf.convert_to_tensor(state.correction)
        log_ratio = log_swap_ratio(energy[:-1], energy[1:], temperatures[:-1], temperatures[1:], sigma2, correction)
        res = decide_swaps(log_ratio, proposed, seeds.fold(key, seeds.SWAP_UNIFORM))
        return res._replace(attempt=attempt, sigma2=sigma2, correction=correction)

    @staticmethod
    def count(state: SwapState, results: SwapResults, step: tf.Tensor, energy: tf.Tensor) -> None:
        """Adds one step's results to the counters of ``state``."""
        state.attempt_count.assign_add(tf.cast(results.attempted, tf.int64))
        state.swap_count.assign_add(tf.cast(results.accepted, tf.int64))
        state.attempt_index.assign_add(tf.cast(results.attempt, tf.int64))
        state.last_swap_step.assign(tf.where(tf.reduce_any(results.accepted), step, state.last_swap_step))
        state.last_energy.assign(energy)
        state.last_log_ratio.assign(results.log_accept_ratio)

    def update_sigma2(
        self, state: SwapState, variance: tf.Tensor, weight: tf.Tensor, step: tf.Tensor, period: int
    ) -> tf.Tensor:
        """Step 6 of the train step: the sigma2 window and its stochastic approximation.

        ``variance``: float64 ``[P]`` within-batch estimate of ``Var(U~_p - U~_{p+1})`` at this
        step; ``weight``: 1.0 if it counts (0.0 during cooling).  Over each window of ``period``
        steps the weighted mean is folded in: ``sigma2 <- (1 - gamma) sigma2 + gamma mean``.
        Returns the bool "sigma2 updated at this step".
        """
        steps = state.window_steps + weight
        total = state.window_variance + weight * variance
        reset = estimators.window_ends(step, period)
        sigma2, ended = estimators.windowed_estimate(
            state.sigma2, total, steps, self.smoothing, reset, state.sigma2_ready
        )
        state.sigma2.assign(sigma2)
        state.sigma2_ready.assign(tf.logical_or(state.sigma2_ready, ended))
        state.window_steps.assign(tf.where(reset, tf.zeros_like(steps), steps))
        state.window_variance.assign(tf.where(reset, tf.zeros_like(total), total))
        return ended

    def update_offsets(self, state: SwapState, variance: tf.Tensor, weight: tf.Tensor, step: tf.Tensor) -> None:
        """``penalty="offset"``: ``sigma2[p, k] <- (1 - gamma) sigma2[p, k] + gamma s2`` for this
        step's offset ``k = step mod m`` (the first estimate of an offset is taken as is)."""
        assert state.sigma2_offset is not None and state.offset_ready is not None  # created for penalty="offset"
        onehot = tf.one_hot(tf.math.floormod(step, state.offsets), state.offsets, on_value=True, off_value=False)
        use = tf.logical_and(onehot, weight > 0)
        ready = tf.convert_to_tensor(state.offset_ready)
        old = tf.convert_to_tensor(state.sigma2_offset)
        new = estimators.stochastic_approximation(old, variance[:, None], self.smoothing, ready[None, :])
        state.sigma2_offset.assign(tf.where(use[None, :], new, old))
        state.offset_ready.assign(tf.logical_or(ready, use))

    def propose(self, num_chains: int, attempt: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        """Bool ``[K-1]``: the adjacent pairs attempted at this attempt index."""
        if self.pairs == "deo":
            return even_odd_pairs(num_chains, attempt, seed, self.deo_window)
        return _PROPOSALS[self.pairs](num_chains, attempt, seed)

    @property
    def adaptive_correction(self) -> bool:
        """True when ``correction="auto"``: ``F`` is adapted to ``target_acceptance`` by a tuner."""
        return isinstance(self.correction, str)

    @property
    def scheduled_correction(self) -> bool:
        """True when ``correction`` is a schedule of the step."""
        return schedules.is_schedule(self.correction)

    def initial_correction(self) -> float:
        """``F`` at step 0, a float."""
        if self.adaptive_correction:
            return AUTO_INITIAL_CORRECTION
        return schedules.value_at(self.correction)

    def get_config(self) -> dict:
        correction = self.correction if self.adaptive_correction else schedules.serialize(self.correction)
        return {
            "correction": correction,
            "smoothing": self.smoothing,
            "period": self.period,
            "pairs": self.pairs,
            "cooling_steps": self.cooling_steps,
            "penalty": self.penalty,
            "attempt_every": self.attempt_every,
            "deo_window": self.deo_window,
            "target_acceptance": self.target_acceptance,
        }

    @classmethod
    def from_config(cls, config: dict) -> CorrectedSwap:
        config = dict(config)
        # Files written before the option existed used the paper's rule: keep it for them.
        config.setdefault("penalty", "window")
        config.setdefault("deo_window", 1)  # written before windowed DEO: alternate every attempt
        if "correction" in config:
            config["correction"] = schedules.deserialize(config["correction"])
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"CorrectedSwap({args})"


INT64_MAX = 2**63 - 1
"""The largest step / attempt count (the counters are int64)."""


def _check_count(name: str, value: object, minimum: int) -> None:
    """A count compared with the int64 step and attempt counters: an integer in
    ``[minimum, 2**63 - 1]`` (a larger one does not fit in int64, where the window's parity
    and the step arithmetic are computed), else a ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not minimum <= int(value) <= INT64_MAX:
        raise ValueError(
            f"{name} must be an integer >= {minimum} and <= 2**63 - 1 (the step and attempt counters are "
            f"int64), got {value!r}"
        )


def _checked_target(correction: object, target: object) -> float | None:
    """``target_acceptance``: a number in ``(0, 1)`` with ``correction="auto"``, else ``None``."""
    auto = isinstance(correction, str) and correction == "auto"
    if target is None:
        if auto:
            raise ValueError(
                "target_acceptance: correction='auto' adapts F to a swap acceptance rate; give "
                "target_acceptance in (0, 1), e.g. 0.3"
            )
        return None
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0 < float(target) < 1:
        raise ValueError(
            f"target_acceptance must be a number in (0, 1) (the swap acceptance rate F is adapted to), got {target!r}"
        )
    if not auto:
        raise ValueError(
            f"target_acceptance={target!r} needs correction='auto' (F adapted to it); got correction={correction!r}"
        )
    return float(target)


def resolve(swap: CorrectedSwap | str | None, num_chains: int) -> CorrectedSwap | None:
    """The swap rule of a sampler's ``swap`` argument (``"auto"``, ``"corrected"``, ``"none"``, ``None`` or a rule)."""
    if isinstance(swap, str):
        if swap == "auto":
            return CorrectedSwap() if num_chains >= 2 else None
        if swap == "none":
            return None
        if swap == "corrected":
            swap = CorrectedSwap()
        else:
            raise ValueError(f"swap must be 'auto', 'none', 'corrected', None or a CorrectedSwap, got {swap!r}")
    if swap is None:
        return None
    if not isinstance(swap, CorrectedSwap):
        raise TypeError(f"swap must be a tf_vrre.CorrectedSwap, a string or None, got {swap!r}")
    if num_chains < 2:
        raise ValueError("swap: swaps need num_chains >= 2 (got num_chains=1); use swap=None")
    return swap
