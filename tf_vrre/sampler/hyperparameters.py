"""The sampler's per-chain temperatures and learning rates: the constructor's defaults and the
values in force at each step.

Each chain's hyperparameter is a number or a Keras ``LearningRateSchedule`` of the step,
checked by :func:`tf_vrre.sgmcmc.schedules.validated` (the one rule per kind, also behind the
setters and :class:`tf_vrre.callbacks.HyperparameterScheduler`).  The values in force live in
the sampler's ladder variables (:class:`tf_vrre.sgmcmc.state.Ladder`): a scheduled entry
overwrites its slot every step (:func:`current`), a number stays until a setter or a callback
assigns another.
:class:`LadderSetters` holds the sampler's setters of the values in force.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tf_vrre.sgmcmc import schedules


def resolve(temperatures: Any, learning_rates: Any, num_chains: int, dynamics: str, swaps: bool) -> tuple[list, list]:
    """The constructor's per-chain ``(temperatures, learning_rates)``: defaults filled in
    (``None``: 1.0 for one chain, 0.0 for M-SGD; required for ``K >= 2``), each checked by
    :func:`tf_vrre.sgmcmc.schedules.validated` (``swaps``: the sampler swaps)."""
    if dynamics == "msgd":
        if swaps:
            raise ValueError(
                "swap: M-SGD runs at temperature 0, where swaps are undefined; use swap=None or dynamics='sghmc'"
            )
        if temperatures is None:
            temperatures = 0.0
    if temperatures is None:
        if num_chains >= 2:
            raise ValueError(
                f"temperatures: give one temperature per chain (strictly increasing) for num_chains={num_chains}"
            )
        temperatures = 1.0
    temps = schedules.validated("temperatures", temperatures, num_chains, swaps=swaps)
    lrs = schedules.validated("learning_rates", learning_rates, num_chains, swaps=swaps)
    temps0 = [schedules.value_at(t) for t in temps]
    if dynamics == "msgd" and any(t != 0 for t in temps0):
        raise ValueError(f"temperatures must be 0 for dynamics='msgd', got {temps0}")
    return temps, lrs


def current(values: Sequence[Any], variable: keras.Variable, step: tf.Tensor) -> tf.Tensor:
    """The per-chain vector in force at ``step``: scheduled entries evaluated (and stored in
    ``variable``), the others read from ``variable`` (set by the user or a callback)."""
    if not any(schedules.is_schedule(v) for v in values):
        return tf.convert_to_tensor(variable)
    cur = tf.unstack(tf.convert_to_tensor(variable))
    vec = tf.stack([tf.cast(v(step), tf.float32) if schedules.is_schedule(v) else cur[h] for h, v in enumerate(values)])
    variable.assign(vec)
    return vec


def check_setters(callbacks: Any) -> None:
    """One callback per hyperparameter in a ``fit``: callbacks that set the sampler's values in
    force say which (``hyperparameters_set() -> names``, e.g. ``("temperatures",)``); two that
    set the same one (two :class:`tf_vrre.LadderTuner`, or a tuner and a
    :class:`tf_vrre.HyperparameterScheduler` with temperatures) would overwrite each other, and
    are refused with a ``ValueError`` naming both before the ``fit`` starts.

    Args:
      callbacks: ``fit``'s ``callbacks`` (a list, a ``keras.callbacks.CallbackList`` or ``None``).
    """
    setters: dict[str, Any] = {}
    for cb in list(getattr(callbacks, "callbacks", callbacks) or []):
        for name in getattr(cb, "hyperparameters_set", tuple)():
            if name in setters:
                a, b = type(setters[name]).__name__, type(cb).__name__
                both = f"two {a}s" if a == b else f"{a} and {b}"
                why = " (a LadderTuner sets the temperatures during its tuning phase)" if name == "temperatures" else ""
                raise ValueError(
                    f"fit: callbacks: {both} both set the sampler's {name}, and each would overwrite the "
                    f"other's; let one callback set {name}{why}"
                )
            setters[name] = cb


class LadderSetters:
    """Mixin of :class:`tf_vrre.ReplicaExchangeSampler`: the user-facing setters of the values in
    force (``state.ladder`` and ``state.swap.correction``), each checked as the constructor's
    argument of the same name."""

    def set_temperatures(self, temperatures: Any) -> None:
        """Assigns new per-chain temperatures in force (``state.ladder.temperature``).

        Args:
          temperatures: a number or a list of K (a schedule counts with its value at step 0):
            finite, ``> 0`` with swaps (``>= 0`` without), strictly increasing in float32.
        """
        values = schedules.validated("temperatures", temperatures, self.num_chains, swaps=self.swap_rule is not None)
        self.state.ladder.temperature.assign(np.asarray([schedules.value_at(v) for v in values], np.float32))

    def set_learning_rates(self, learning_rates: Any) -> None:
        """Assigns new per-chain learning rates in force (``state.ladder.learning_rate``).

        Args:
          learning_rates: a number or a list of K, each finite and ``> 0`` in float32.
        """
        values = schedules.validated("learning_rates", learning_rates, self.num_chains)
        self.state.ladder.learning_rate.assign(np.asarray([schedules.value_at(v) for v in values], np.float32))

    def set_correction(self, correction: float) -> None:
        """Assigns a new correction factor ``F`` in force (``state.swap.correction``).

        Args:
          correction: a finite number ``> 0``; not for a swap rule whose ``F`` is a schedule.
        """
        if self.swap_rule is None:
            raise ValueError("set_correction: the sampler has no swap rule")
        if self.swap_rule.scheduled_correction:
            raise ValueError(
                "set_correction: F follows the swap rule's schedule; build the "
                "CorrectedSwap with a number to set F from a callback"
            )
        if schedules.is_schedule(correction):
            raise TypeError(f"correction (F) must be a finite number > 0 here, got the schedule {correction!r}")
        self.state.swap.correction.assign(schedules.validated("correction", correction))
