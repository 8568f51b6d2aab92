"""Bad data and bad models fail before any graph runs, naming the argument.

``set_reference_data``, ``make_dataset`` and ``fit`` with array inputs: lists, dtypes, lengths,
non-finite values, labels outside the model's classes, sample weights, batch sizes, a
``data_size`` that does not match the arrays; a ``model_fn`` that returns the same model twice.
"""

import keras
import numpy as np
import pytest
from _small_sampler import N, data, make_sampler, small_net

from tf_vrre import ControlVariates, CorrectedSwap, ReplicaExchangeSampler

LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)


def vr_sampler(data_size=N, compiled=True):
    s = ReplicaExchangeSampler(
        small_net,
        data_size=data_size,
        num_chains=2,
        temperatures=[1.0, 4.0],
        learning_rates=2e-3,
        seed=0,
        swap=CorrectedSwap(correction=2.0),
        variance_reduction=ControlVariates(period=4),
    )
    if compiled:
        s.compile(loss=LOSS)
    return s


def untouched(s):
    """Nothing ran: no train function traced, the step counter still 0."""
    return s.train_function is None and int(s.state.step.numpy()) == 0


def _bad(x, y, **changes):
    x, y = x.copy(), y.copy()
    if "x_nan" in changes:
        x[changes["x_nan"], 1] = np.nan
    if "y_value" in changes:
        y[changes["y_value"][0]] = changes["y_value"][1]
    return x, y


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda x, y: (x, y[:60]), ValueError, "set_reference_data: data x has 64 examples but data y has 60"),
        (
            lambda x, y: (x.tolist(), y),
            TypeError,
            "set_reference_data: data x is a Python list of list; pass a NumPy array",
        ),
        (lambda x, y: (x.astype(str), y), TypeError, "data x has dtype <U32; expected numbers"),
        (
            lambda x, y: _bad(x, y, x_nan=17),
            ValueError,
            "data x holds non-finite values (NaN or inf), first at example 17",
        ),
        (lambda x, y: _bad(x, y, y_value=(5, 3)), ValueError, "data y holds class 3 but the model has 3 outputs"),
        (lambda x, y: _bad(x, y.astype("float32"), y_value=(2, 1.5)), ValueError, "must be integer classes"),
        (
            lambda x, y: (x, y, np.ones((N, 2))),
            ValueError,
            "data sample_weight must have shape (64,): one weight per example",
        ),
        (lambda x, y: (x, y, -np.ones(N)), ValueError, "data sample_weight must be >= 0"),
        (lambda x, y: "x.npy", TypeError, "data must be (x, y), (x, y, sample_weight), x, or a tf.data.Dataset"),
    ],
)
def test_set_reference_data_names_the_bad_argument(make, error, message):
    s = vr_sampler()
    x, y = data()
    with pytest.raises(error) as exc:
        s.set_reference_data(make(x, y))
    assert message in str(exc.value)
    assert s._reference is None


def test_reference_batch_size_and_labels_checked_against_a_later_compile():
    s = vr_sampler(compiled=False)
    x, y = data()
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match=f"set_reference_data: batch_size must be a positive integer, got {bad!r}"):
            s.set_reference_data((x, y), batch_size=bad)
    y_bad = y.copy()
    y_bad[9] = 7
    s.set_reference_data((x, y_bad))  # not compiled yet: the classes are known, the loss is not
    s.compile(loss=LOSS)
    with pytest.raises(ValueError, match="set_reference_data: data y holds class 7 but the model has 3 outputs"):
        s.fit(s.make_dataset(16), epochs=1, verbose=0)
    assert untouched(s)
    s.set_reference_data((x, y))
    s.fit(s.make_dataset(16), epochs=1, verbose=0)  # the good data trains
    assert int(s.state.step.numpy()) == 4


def test_make_dataset_arguments():
    s = vr_sampler()
    x, y = data()
    s.set_reference_data((x, y))
    with pytest.raises(ValueError, match=r"make_dataset: batch_size \(65\) must be <= data_size \(64\)"):
        s.make_dataset(65)
    with pytest.raises(ValueError, match="make_dataset: batch_size must be a positive integer, got 0"):
        s.make_dataset(0)
    with pytest.raises(TypeError, match="make_dataset: shuffle must be True or False, got 'yes'"):
        s.make_dataset(16, shuffle="yes")
    with pytest.raises(TypeError, match="make_dataset: seed must be an integer or None"):
        s.make_dataset(16, seed=1.5)


def _nan(a, i=3):
    a = np.array(a, dtype="float32")
    a[(i, 0) if a.ndim > 1 else i] = np.nan
    return a


BAD_FIT = {
    "short y": (lambda x, y: {"y": y[:63]}, ValueError, "fit: x has 64 examples but y has 63"),
    "list x": (lambda x, y: {"x": x.tolist()}, TypeError, "fit: x is a Python list of list; pass a NumPy array"),
    "nan x": (
        lambda x, y: {"x": _nan(x)},
        ValueError,
        "fit: x holds non-finite values (NaN or inf), first at example 3 of 64",
    ),
    "object x": (lambda x, y: {"x": x.astype(object)}, TypeError, "fit: x has dtype object; expected numbers"),
    "class -1": (
        lambda x, y: {"y": np.where(y == 0, -1, y)},
        ValueError,
        "fit: y holds class -1 but the model has 3 outputs (classes 0..2)",
    ),
    "no y": (lambda x, y: {"y": None}, ValueError, "fit: y is required: the compiled loss needs labels"),
    "2-d weights": (
        lambda x, y: {"sample_weight": np.ones((N, 3))},
        ValueError,
        "fit: sample_weight must have shape (64,): one weight per example, got (64, 3)",
    ),
    "nan weights": (
        lambda x, y: {"sample_weight": _nan(np.ones(N))},
        ValueError,
        "fit: sample_weight holds non-finite values",
    ),
    "batch 0": (lambda x, y: {"batch_size": 0}, ValueError, "fit: batch_size must be a positive integer, got 0"),
    "batch > N": (lambda x, y: {"batch_size": 65}, ValueError, "fit: batch_size (65) must be <= data_size (64)"),
    "epochs -1": (lambda x, y: {"epochs": -1}, ValueError, "fit: epochs must be an integer >= 0, got -1"),
    "split 1": (lambda x, y: {"validation_split": 1.0}, ValueError, "fit: validation_split must be in [0, 1), got 1.0"),
    "nan validation": (
        lambda x, y: {"validation_data": (_nan(x), y)},
        ValueError,
        "fit: validation_data x holds non-finite values",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FIT))
def test_fit_names_the_bad_argument_before_any_graph_runs(case):
    change, error, message = BAD_FIT[case]
    s, x, y = make_sampler(vr=False)
    args = {"x": x, "y": y, "batch_size": 16, "epochs": 1, "verbose": 0, **change(x, y)}
    with pytest.raises(error) as exc:
        s.fit(**args)
    assert message in str(exc.value)
    assert untouched(s)


def test_data_size_far_from_the_arrays_warns_and_one_hot_width_is_checked():
    s, x, y = make_sampler(vr=False)
    with pytest.warns(UserWarning, match="the training arrays hold 32 examples but data_size=64"):
        s.fit(x[:32], y[:32], batch_size=16, epochs=1, verbose=0)
    with pytest.warns(UserWarning, match="hold 48 examples but data_size=64"):  # 25% held out by Keras
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, validation_split=0.25)
    one_hot = ReplicaExchangeSampler(
        small_net,
        data_size=N,
        num_chains=2,
        temperatures=[1.0, 4.0],
        learning_rates=2e-3,
        seed=0,
        swap=CorrectedSwap(correction=2.0),
    )
    one_hot.compile(loss=keras.losses.CategoricalCrossentropy(from_logits=True, reduction=None))
    with pytest.raises(ValueError, match=r"fit: y must be one-hot with 3 columns .* got shape \(64, 2\)"):
        one_hot.fit(x, np.eye(2)[y % 2], batch_size=16, epochs=1, verbose=0)
    one_hot.fit(x, np.eye(3)[y], batch_size=16, epochs=1, verbose=0)
    assert int(one_hot.state.step.numpy()) == 4


_SHARED = small_net()


def same_model():
    return _SHARED


_LAYER = keras.layers.Dense(3)


def shared_layer():
    inp = keras.Input((4,))
    return keras.Model(inp, _LAYER(inp))


@pytest.mark.parametrize(
    "fn, what",
    [
        (same_model, "the same model object on calls 1 and 2"),
        (shared_layer, "models that share weights on calls 1 and 2"),
    ],
)
def test_model_fn_must_build_distinct_models(fn, what):
    with pytest.raises(ValueError, match=f"model_fn returned {what}.*build new layers inside model_fn"):
        ReplicaExchangeSampler(fn, data_size=N, num_chains=2, temperatures=[1.0, 2.0], seed=0)
