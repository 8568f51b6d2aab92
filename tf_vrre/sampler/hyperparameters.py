"""The sampler's per-chain temperatures and learning rates: the constructor's defaults and the
values in force at each step.

Each chain's hyperparameter is a number or a Keras ``LearningRateSchedule`` of the step,
checked by :func:`tf_vrre.sgmcmc.schedules.validated` (the one rule per kind, also behind the
setters and :class:`tf_vrre.callbacks.HyperparameterScheduler`).  The values in force live in
the sampler's ladder variables (:class:`tf_vrre.sgmcmc.state.Ladder`): a scheduled entry
overwrites its slot every step (:func:`current`), a number stays until a setter or a callback
assigns another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
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
