"""The sampler's state: one record (``sampler.state``) created in the constructor, whose fields hold
every saved variable exactly once, in the order of the saved layout; the runtime objects beside it
(fault register, listeners) are neither tracked nor saved."""

import dataclasses
import io
import zipfile

import h5py
import keras
import numpy as np
import pytest
from _small_sampler import N, data, small_net

import tf_vrre
from tf_vrre.sampler import saving
from tf_vrre.sgmcmc import state


def _sampler(**kwargs):
    args = dict(
        data_size=N,
        num_chains=3,
        temperatures=[1.0, 2.0, 4.0],
        learning_rates=1e-3,
        seed=0,
        swap=tf_vrre.CorrectedSwap(penalty="offset"),
        variance_reduction=tf_vrre.ControlVariates(period=4, coefficient="adaptive"),
    )
    args.update(kwargs)
    return tf_vrre.ReplicaExchangeSampler(small_net, **args)


def _variables(record):
    """The variables of a state record, depth first in field order."""
    out = []
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if dataclasses.is_dataclass(value):
            out += _variables(value)
        elif isinstance(value, keras.Variable):
            out.append(value)
        elif field.name == "velocities" and value is not None:
            out += [v for per_chain in value for v in per_chain]
    return out


# What files written before the state record existed hold, in this order (`vars/0, vars/1, ...`).
LAYOUT = (
    ["step", "temperature", "learning_rate"]
    + [f"velocity_{h}_{i}" for h in range(3) for i in range(2)]
    + [
        "sigma2",
        "sigma2_ready",
        "swap_count",
        "attempt_count",
        "attempt_index",
        "last_swap_step",
        "window_steps",
        "window_variance",
        "last_energy",
        "last_log_ratio",
        "correction",
        "swap_log",
        "sigma2_offset",
        "offset_ready",
        "batch_energy",
        "snapshot_energy",
        "coefficient",
        "window_cov",
        "window_var",
        "snapshot_nll",
    ]
)


def test_state_holds_every_saved_variable_once_in_the_saved_order():
    s = _sampler()
    own = saving.own_variables(s)
    assert [v.name for v in own] == LAYOUT
    assert [id(v) for v in _variables(s.state)] == [id(v) for v in own]
    assert s.state.chains.models == s.chains and s.state.control_variates.snapshots == s.snapshots
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.state.swap = None


@pytest.mark.parametrize(
    "kwargs,parts",
    [
        (
            {"num_chains": 1, "temperatures": 1.0, "dynamics": "sgld", "swap": None, "variance_reduction": None},
            {"swap": None, "control_variates": None, "loss_scale": None},
        ),
        (
            {"num_chains": 2, "temperatures": [1.0, 2.0], "swap": "auto", "variance_reduction": None},
            {"control_variates": None, "loss_scale": None},
        ),
    ],
)
def test_parts_that_do_not_apply_are_none(kwargs, parts):
    s = _sampler(**kwargs)
    for name, value in parts.items():
        assert getattr(s.state, name) is value
    assert [id(v) for v in _variables(s.state)] == [id(v) for v in saving.own_variables(s)]
    assert (s.state.chains.velocities is None) == (s.dynamics == "sgld")


def test_fault_register_and_listeners_are_neither_tracked_nor_saved(tmp_path):
    s = _sampler()
    x, y = data()
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    s.fit(x, y, batch_size=16, epochs=1, verbose=0)
    register = s._faults.variable
    assert all(v is not register for v in s.variables)
    assert len(s.weights) == len(saving.own_variables(s)) + sum(len(m.weights) for m in s.chains + s.snapshots)
    path = str(tmp_path / "s.weights.h5")
    s.save_weights(path)
    with h5py.File(path, "r") as f:
        sizes = []
        f.visititems(lambda name, obj: sizes.append(obj.shape) if isinstance(obj, h5py.Dataset) else None)
    assert len(sizes) == len(s.weights) and (5,) not in sizes  # the register is a float64 [5]
    keras_path = str(tmp_path / "s.keras")
    s.save(keras_path)
    with zipfile.ZipFile(keras_path) as z, h5py.File(io.BytesIO(z.read("model.weights.h5")), "r") as f:
        groups = set(f.keys())
    assert groups == {"chains", "layers", "vars"}  # the snapshots are saved under Keras' `layers`


def test_state_is_created_by_the_constructor_only():
    """The parts are built from the sampler's own arguments: two samplers never share a variable,
    and the state's initial values are the arguments'."""
    one, two = _sampler(), _sampler(learning_rates=[1e-3, 2e-3, 3e-3])
    assert not {id(v) for v in _variables(one.state)} & {id(v) for v in _variables(two.state)}
    np.testing.assert_allclose(two.state.ladder.learning_rate.numpy(), [1e-3, 2e-3, 3e-3])
    np.testing.assert_allclose(one.state.ladder.temperature.numpy(), [1.0, 2.0, 4.0])
    assert int(one.state.step.numpy()) == 0 and int(one.state.swap.last_swap_step.numpy()) == state.NEVER
    assert float(one.state.swap.correction.numpy()) == 2.0
    assert one.state.swap.offsets == 4 and one.state.control_variates.coefficient.numpy().tolist() == [-1.0] * 3
