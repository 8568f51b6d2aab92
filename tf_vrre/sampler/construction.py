"""Building a :class:`tf_vrre.ReplicaExchangeSampler`: argument checks, the chains from
``model_fn`` and the sampler's state variables.

The sampler's constructor calls these in order: :func:`check_scalars`, :func:`build_chain`
(once per chain, then :func:`tie_initial_weights`), :func:`create_state`.  The order in which
:func:`create_state` creates variables is the layout of saved files: keep it.
"""

import numbers

import keras
import numpy as np

from tf_vrre.sgmcmc import dynamics as dyn
from tf_vrre.sgmcmc import energy as en
from tf_vrre.sgmcmc import swap_record as record
from tf_vrre.numerics import check_float32
from tf_vrre.sgmcmc.state import ChainState, LossScale, SwapState, VRState
from tf_vrre.sgmcmc.swap_energy import SwapEnergyEstimator


def check_scalars(model_fn, data_size, num_chains, dynamics, momentum, weight_decay):
    """``TypeError`` / ``ValueError`` naming the first constructor argument out of range."""
    if isinstance(model_fn, keras.Model):  # callable too, but calling it needs inputs
        raise TypeError(f"model_fn must be a function returning a new keras.Model (called once per chain and "
                        f"snapshot, each gets its own weights), got the model instance {model_fn.name!r}; pass "
                        "the function itself (model_fn=build_model, not build_model()) or "
                        "model_fn=lambda: keras.models.clone_model(model)")
    if not callable(model_fn):
        raise TypeError(f"model_fn must be a callable returning a keras.Model, got {model_fn!r}")
    if data_size is None:
        raise ValueError("data_size (N, the number of training examples) is required")
    if isinstance(data_size, bool) or not isinstance(data_size, numbers.Integral) or data_size < 1:
        raise ValueError(f"data_size must be a positive integer, got {data_size!r}")
    if isinstance(num_chains, bool) or not isinstance(num_chains, numbers.Integral) or num_chains < 1:
        raise ValueError(f"num_chains must be an integer >= 1, got {num_chains!r}")
    if dynamics not in dyn.DYNAMICS:
        raise ValueError(f"dynamics must be one of {dyn.DYNAMICS}, got {dynamics!r}")
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real) or not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if not np.float32(momentum) < 1:
        raise ValueError(f"momentum must be < 1 in float32 (the friction 1 - momentum would be 0), at most "
                         f"{float(np.nextafter(np.float32(1), np.float32(0))):.9g}, got {momentum!r}")
    if momentum != 0:
        check_float32("momentum", momentum)
    if not isinstance(weight_decay, numbers.Real) or not weight_decay >= 0 or not np.isfinite(weight_decay):
        raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
    check_float32("weight_decay", weight_decay)


def build_chain(model_fn):
    """One call of ``model_fn``: a built ``keras.Model`` with weights, or an error saying why not."""
    model = model_fn()
    if not isinstance(model, keras.Model):
        raise TypeError(f"model_fn must return a keras.Model, got {type(model).__name__}")
    if not model.built or not model.weights:
        raise ValueError("model_fn must return a built model (e.g. a functional model with "
                         "keras.Input, or call model.build(input_shape) inside model_fn)")
    # Snapshots stay `trainable` (never updated: the sampler only moves chain weights):
    # Keras BatchNormalization uses batch statistics only when `training and trainable`,
    # and energy_mode="train" needs the snapshot evaluated exactly like the chain.
    return model


def tie_initial_weights(chains, independent_init):
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


def create_state(sampler, temps0, lrs0):
    """The sampler's variables (created eagerly: ``fit`` does not build subclassed models):
    counters and hyperparameters in force, :class:`ChainState`, :class:`SwapState`,
    ``batch_energy``, snapshots and :class:`VRState`, the float16 :class:`LossScale`; set as
    attributes of ``sampler``."""
    s, K = sampler, sampler.num_chains

    def new_variable(name, shape, dtype, value=0):
        # Constant multiplies by ones: TensorFlow 2.16 has no bool kernel for that
        init = (keras.initializers.Constant(value) if dtype != "bool"
                else keras.initializers.Ones() if value else keras.initializers.Zeros())
        return s.add_weight(name=name, shape=shape, dtype=dtype, trainable=False, initializer=init)

    s.step_counter = new_variable("step", (), "int64")
    s.temperature = new_variable("temperature", (K,), "float32")
    s.learning_rate = new_variable("learning_rate", (K,), "float32")
    s.temperature.assign(np.asarray(temps0, np.float32))
    s.learning_rate.assign(np.asarray(lrs0, np.float32))
    s.chain_state = ChainState.create(s.chains, new_variable, s._diffusion.has_velocity)
    s.swap_state = None
    if s.swap_rule is not None:
        vr = s.variance_reduction
        s._window_period = s.swap_rule.period or (vr.period if vr is not None else 1)
        offsets = vr.period if vr is not None else s._window_period  # steps since the refresh
        s.swap_state = SwapState.create(new_variable, K, s._swap,
                                        (record.CAPACITY, len(record.swap_log_columns(K))), offsets)
    # Mini-batch energy U_B of the state in each slot on this step's batch (before the update).
    s.batch_energy = new_variable("batch_energy", (K,), "float64")
    s.vr_state = None
    if s.variance_reduction is not None:
        s.snapshots = [build_chain(s.model_fn) for _ in range(K)]
        s.vr_state = VRState.create(s.snapshots, new_variable, s.variance_reduction, s.data_size)
    s.loss_scale = None
    if en.computes_in_float16(s.chains[0]):  # the effective scale on the mean loss is 2^15
        s.loss_scale = LossScale(new_variable, initial=2.0 ** 15 / s.data_size)
    s._swap_energy = None
    if s.swap_rule is not None:
        s._swap_energy = SwapEnergyEstimator(s.chains, s.vr_state, s._per_example_nll,
                                             s.energy_mode, s._cache_exact, s.data_size)
