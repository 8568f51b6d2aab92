"""Per-chain hyperparameters: each a number or a Keras ``LearningRateSchedule`` of the step."""

import numbers

import keras
import numpy as np
import tensorflow as tf


F32_TINY = float(np.finfo(np.float32).tiny)  # 1.18e-38: smaller magnitudes are 0 or denormal in float32
F32_MAX = float(np.finfo(np.float32).max)  # 3.4e38: larger magnitudes are inf in float32


def check_float32(name, value, positive=False):
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
