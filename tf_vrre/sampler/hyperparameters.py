"""Per-chain hyperparameters: each a number or a Keras ``LearningRateSchedule`` of the step."""

import numbers

import keras
import numpy as np
import tensorflow as tf

from tf_vrre.numerics import check_float32


def is_schedule(value):
    return isinstance(value, keras.optimizers.schedules.LearningRateSchedule)


def per_chain(value, num_chains, name):
    """Expands a number, a schedule or a length-K list into a list of K entries."""
    if isinstance(value, (list, tuple, np.ndarray)):
        values = list(value)
        if len(values) != num_chains:
            raise ValueError(f"{name} must have one entry per chain ({num_chains}), got {len(values)}")
    else:
        values = [value] * num_chains
    for v in values:
        if not (is_schedule(v) or (isinstance(v, numbers.Real) and not isinstance(v, bool))):
            raise TypeError(f"{name} entries must be numbers or keras LearningRateSchedule, got {v!r}")
        if not is_schedule(v) and not np.isfinite(v):
            raise ValueError(f"{name} entries must be finite, got {v!r}")
        if not is_schedule(v):
            check_float32(f"{name} entries", v)
    return values


def initial_values(values):
    """Values at step 0 (schedules evaluated eagerly), as floats."""
    return [float(keras.ops.convert_to_numpy(v(0))) if is_schedule(v) else float(v) for v in values]


def serialize(values):
    return [keras.saving.serialize_keras_object(v) if is_schedule(v) else float(v) for v in values]


def deserialize(values):
    return [keras.saving.deserialize_keras_object(v) if isinstance(v, dict) else v for v in values]


def checked_temperatures(temperatures, num_chains, swaps):
    """Per-chain temperatures set by the user: >= 0 (> 0 with ``swaps``), strictly increasing."""
    t = initial_values(per_chain(temperatures, num_chains, "temperatures"))
    if any(b <= a for a, b in zip(t, t[1:])) or any(v < 0 for v in t) or (swaps and any(v <= 0 for v in t)):
        raise ValueError(f"temperatures must be >= 0 (> 0 with swaps) and strictly increasing, got {t}")
    return t


def checked_learning_rates(learning_rates, num_chains):
    """Per-chain learning rates set by the user: > 0."""
    v = initial_values(per_chain(learning_rates, num_chains, "learning_rates"))
    if any(not x > 0 for x in v):
        raise ValueError(f"learning_rates must be > 0, got {v}")
    return v


def checked_correction(correction, swap_rule):
    """A correction factor ``F`` set by the user: finite, > 0, and the swap rule's ``F`` not scheduled."""
    if swap_rule is None:
        raise ValueError("set_correction: the sampler has no swap rule")
    if swap_rule.scheduled_correction:
        raise ValueError("set_correction: F follows the swap rule's schedule; build the "
                         "CorrectedSwap with a number to set F from a callback")
    if isinstance(correction, bool) or not isinstance(correction, numbers.Real) or not (
            correction > 0 and np.isfinite(correction)):
        raise ValueError(f"correction (F) must be a finite number > 0, got {correction!r}")
    return float(correction)


def current(values, variable, step):
    """The per-chain vector in force at ``step``: scheduled entries evaluated (and stored in
    ``variable``), the others read from ``variable`` (set by the user or a callback)."""
    if not any(is_schedule(v) for v in values):
        return tf.convert_to_tensor(variable)
    cur = tf.unstack(tf.convert_to_tensor(variable))
    vec = tf.stack([tf.cast(v(step), tf.float32) if is_schedule(v) else cur[h] for h, v in enumerate(values)])
    variable.assign(vec)
    return vec


def validated(temperatures, learning_rates, num_chains, dynamics, swaps):
    """Per-chain temperature and lr entries, validated at step 0 (``swaps``: the sampler swaps)."""
    if dynamics == "msgd":
        if swaps:
            raise ValueError("swap: M-SGD runs at temperature 0, where swaps are undefined; "
                             "use swap=None or dynamics='sghmc'")
        if temperatures is None:
            temperatures = 0.0
    if temperatures is None:
        if num_chains >= 2:
            raise ValueError("temperatures: give one temperature per chain (strictly "
                             f"increasing) for num_chains={num_chains}")
        temperatures = 1.0
    temps = per_chain(temperatures, num_chains, "temperatures")
    lrs = per_chain(learning_rates, num_chains, "learning_rates")
    temps0, lrs0 = initial_values(temps), initial_values(lrs)
    for t in temps0:
        check_float32("temperatures (at step 0)", t)
    for v in lrs0:
        check_float32("learning_rates (at step 0)", v)
    if dynamics == "msgd" and any(t != 0 for t in temps0):
        raise ValueError(f"temperatures must be 0 for dynamics='msgd', got {temps0}")
    lo = 0.0 if not swaps else np.nextafter(0.0, 1.0)
    if any(not t >= lo for t in temps0):
        raise ValueError("temperatures must be " + (">= 0" if not swaps else "> 0 with swaps")
                         + f", got {temps0}")
    if any(np.float32(b) <= np.float32(a) for a, b in zip(temps0, temps0[1:])):
        raise ValueError(f"temperatures must be strictly increasing in float32 (tau_1 < tau_2 < ...), got {temps0}")
    if any(not v > 0 for v in lrs0):
        raise ValueError(f"learning_rates must be > 0, got {lrs0}")
    return temps, lrs
