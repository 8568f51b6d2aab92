"""One validation rule for the Python API: arguments are checked in the dtype that will use them
(float32 for temperatures, learning rates, momentum, weight decay and the schedules' values) and
the error names the argument; a Keras model passed as ``model_fn`` and data of the wrong shape
are named before Keras fails somewhere inside."""

import keras
import numpy as np
import pytest
from _small_sampler import make_sampler, small_net

import tf_vrre
from tf_vrre import numerics
from tf_vrre.sgmcmc import schedules

F32 = r"\[1.18e-38, 3.4e\+38\] \(finite"
POSITIVE_F32 = r"in \[1.18e-38, 3.4e\+38\] \(finite and positive in float32"


def _sampler(**kwargs):
    kwargs = dict({"data_size": 64, "num_chains": 2, "temperatures": [1.0, 2.0], "learning_rates": 1e-3}, **kwargs)
    return tf_vrre.ReplicaExchangeSampler(kwargs.pop("model_fn", small_net), **kwargs)


def test_a_model_instance_as_model_fn_is_named():
    with pytest.raises(
        TypeError,
        match=r"model_fn must be a function returning a new keras.Model .* got the model "
        r"instance '.*'; pass the function itself \(model_fn=build_model, not "
        r"build_model\(\)\)",
    ):
        _sampler(model_fn=small_net())


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"temperatures": [1.0, 1e39]}, "temperatures entries must be " + POSITIVE_F32),  # inf in float32
        ({"temperatures": [1e-46, 1.0]}, "temperatures entries must be " + POSITIVE_F32),  # 0 in float32 (swaps: > 0)
        (
            {"temperatures": 1e-46, "num_chains": 1, "swap": None},
            "temperatures entries must be 0 or of magnitude in " + F32,
        ),  # without swaps 0 is allowed, 1e-46 not
        ({"temperatures": [1.0, 1.00000001]}, r"temperatures must be strictly increasing in float32"),  # equal there
        ({"learning_rates": 1e39}, "learning_rates entries must be " + POSITIVE_F32),
        ({"learning_rates": [1e-3, 1e-46]}, "learning_rates entries must be " + POSITIVE_F32),
        (
            {"momentum": 1 - 1e-10},
            r"momentum must be < 1 in float32 \(the friction 1 - momentum would be 0\), at most "
            r"0.99999994",
        ),
        ({"weight_decay": 1e39}, "weight_decay must be 0 or of magnitude in " + F32),
        ({"weight_decay": 1e-40}, "weight_decay must be 0 or of magnitude in " + F32),
    ],
)
def test_sampler_arguments_checked_in_float32(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _sampler(**kwargs)


def test_setters_and_schedules_checked_in_float32():
    s = _sampler()
    with pytest.raises(ValueError, match="temperatures entries must be " + POSITIVE_F32):
        s.set_temperatures([1.0, 1e39])
    with pytest.raises(ValueError, match="learning_rates entries must be " + POSITIVE_F32):
        s.set_learning_rates(1e-46)
    with pytest.raises(ValueError, match=r"initial must be in \[1.18e-38, 3.4e\+38\] \(finite and positive in float32"):
        schedules.EpochExponential(1e39, 0.9, 10)
    with pytest.raises(ValueError, match=r"initial must be in \[1.18e-38"):
        schedules.EpochExponential(1e-46, 0.9, 10)
    with pytest.raises(ValueError, match=r"correction \(F\) must be a finite number > 0"):
        tf_vrre.CorrectedSwap(correction=float("inf"))
    assert numerics.check_float32("x", 0.0) == 0.0 and numerics.check_float32("x", -2.5) == -2.5
    with pytest.raises(ValueError, match=r"x must be in \[1.18e-38"):
        numerics.check_float32("x", 0.0, positive=True)
    with np.errstate(over="ignore"):
        assert np.float32(1e-46) == 0 and np.isinf(np.float32(1e39))  # why: the values the sampler would use


def test_wrong_input_shape_names_set_reference_data_and_fit():
    s, x, y = make_sampler(vr=True)
    for bad in (x[:, :3], x[:, :, None]):
        with pytest.raises(
            ValueError,
            match=r"set_reference_data: data x has shape \(64, (3|4, 1)\), the model's "
            r"input needs shape \(n, 4\)",
        ):
            s.set_reference_data((bad, y))
    with pytest.raises(ValueError, match=r"fit: x has shape \(64, 3\), the model's input needs shape \(n, 4\)"):
        s.fit(x[:, :3], y, batch_size=16, epochs=1, verbose=0)
    s.set_reference_data((x, y))  # the right shape is still accepted
    assert isinstance(s.cold_model, keras.Model)
