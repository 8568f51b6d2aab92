"""Building a :class:`tf_vrre.ReplicaExchangeSampler`: argument checks, the chains from
``model_fn``, and the factory of its saved variables.

The sampler's constructor calls these in order: :func:`check_scalars` and :func:`check_options`,
:func:`build_chain` (once per chain, then :func:`tie_initial_weights`), then creates its state
(:class:`tf_vrre.sgmcmc.state.SamplerState`) with :func:`new_variable`.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from tf_vrre import numerics
from tf_vrre.sgmcmc import energy
from tf_vrre.sgmcmc.dynamics import DYNAMICS


def check_scalars(
    model_fn: Callable[[], keras.Model],
    data_size: Any,
    num_chains: Any,
    dynamics: Any,
    momentum: Any,
    weight_decay: Any,
) -> None:
    """``TypeError`` / ``ValueError`` naming the first constructor argument out of range."""
    if isinstance(model_fn, keras.Model):  # callable too, but calling it needs inputs
        raise TypeError(
            f"model_fn must be a function returning a new keras.Model (called once per chain and "
            f"snapshot, each gets its own weights), got the model instance {model_fn.name!r}; pass "
            "the function itself (model_fn=build_model, not build_model()) or "
            "model_fn=lambda: keras.models.clone_model(model)"
        )
    if not callable(model_fn):
        raise TypeError(f"model_fn must be a callable returning a keras.Model, got {model_fn!r}")
    if data_size is None:
        raise ValueError("data_size (N, the number of training examples) is required")
    if isinstance(data_size, bool) or not isinstance(data_size, numbers.Integral) or data_size < 1:
        raise ValueError(f"data_size must be a positive integer, got {data_size!r}")
    if isinstance(num_chains, bool) or not isinstance(num_chains, numbers.Integral) or num_chains < 1:
        raise ValueError(f"num_chains must be an integer >= 1, got {num_chains!r}")
    if dynamics not in DYNAMICS:
        raise ValueError(f"dynamics must be one of {DYNAMICS}, got {dynamics!r}")
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real) or not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if not np.float32(momentum) < 1:
        raise ValueError(
            f"momentum must be < 1 in float32 (the friction 1 - momentum would be 0), at most "
            f"{float(np.nextafter(np.float32(1), np.float32(0))):.9g}, got {momentum!r}"
        )
    if momentum != 0:
        numerics.check_float32("momentum", momentum)
    if not isinstance(weight_decay, numbers.Real) or not weight_decay >= 0 or not np.isfinite(weight_decay):
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
    numerics.check_float32("weight_decay", weight_decay)


def build_chain(model_fn: Callable[[], keras.Model]) -> keras.Model:
    """One call of ``model_fn``: a built ``keras.Model`` with weights, or an error saying why not."""
    model = model_fn()
    if not isinstance(model, keras.Model):
        raise TypeError(f"model_fn must return a keras.Model, got {type(model).__name__}")
    if not model.built or not model.weights:
        raise ValueError(
            "model_fn must return a built model (e.g. a functional model with "
            "keras.Input, or call model.build(input_shape) inside model_fn)"
        )
    # Snapshots stay `trainable` (never updated: the sampler only moves chain weights):
    # Keras BatchNormalization uses batch statistics only when `training and trainable`,
    # and energy_mode="train" needs the snapshot evaluated exactly like the chain.
    return model


def tie_initial_weights(chains: list[keras.Model], independent_init: bool) -> None:
    """Checks that the chains have identical variables; copies chain 0's initial weights to the
    others unless ``independent_init``."""
    ref = chains[0]
    if not ref.trainable_weights:
        raise ValueError("model_fn returned a model without trainable weights")
    for chain in chains[1:]:
        if [v.shape for v in chain.weights] != [v.shape for v in ref.weights]:
            raise ValueError("model_fn must return models with identical variables on every call")
        if not independent_init:
            for dst, src in zip(chain.weights, ref.weights):
                dst.assign(src)


def check_options(energy_mode: str, nll: Any, seed: int | None) -> int:
    """Checks ``energy_mode`` and ``nll``; returns ``seed`` (drawn when ``None``)."""
    if energy_mode not in energy.ENERGY_MODES:
        raise ValueError(f"energy_mode must be one of {energy.ENERGY_MODES}, got {energy_mode!r}")
    if nll is not None:
        energy.check_nll_callable(nll)
    if seed is None:
        seed = int(np.random.randint(0, 2**31 - 1))  # noqa: NPY002  (seed=None follows np.random.seed)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer or None, got {seed!r}")
    return int(seed)


def check_gradient_noise_every(every: Any) -> int | None:
    """``gradient_noise_every`` as an int ``>= 1`` or ``None``; ``ValueError`` naming it otherwise."""
    if every is None:
        return None
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
        raise ValueError(f"gradient_noise_every must be an integer >= 1 (steps) or None (never), got {every!r}")
    return int(every)


def new_variable(layer: keras.Layer, name: str, shape: tuple, dtype: str, value: Any = 0) -> keras.Variable:
    """One saved, non-trainable variable of ``layer`` (the sampler), filled with ``value``: what
    :class:`tf_vrre.sgmcmc.state.SamplerState`'s parts create their variables with."""
    # Constant multiplies by ones: TensorFlow 2.16 has no bool kernel for that
    init = (
        keras.initializers.Constant(value)
        if dtype != "bool"
        else keras.initializers.Ones()
        if value
        else keras.initializers.Zeros()
    )
    return layer.add_weight(name=name, shape=shape, dtype=dtype, trainable=False, initializer=init)
