"""Per-chain hyperparameters: each a number or a Keras ``LearningRateSchedule`` of the step."""

import numbers

import keras
import numpy as np


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
    return values


def initial_values(values):
    """Values at step 0 (schedules evaluated eagerly), as floats."""
    return [float(keras.ops.convert_to_numpy(v(0))) if is_schedule(v) else float(v) for v in values]


def serialize(values):
    return [keras.saving.serialize_keras_object(v) if is_schedule(v) else float(v) for v in values]


def deserialize(values):
    return [keras.saving.deserialize_keras_object(v) if isinstance(v, dict) else v for v in values]
