"""Runtime invariants: what breaks after step 0 raises a SamplerError naming step, chain and value."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre
from tf_vrre import numerics
from tf_vrre.sampler import invariants

N = 64


@keras.saving.register_keras_serializable(package="test_faults")
class Drop(keras.optimizers.schedules.LearningRateSchedule):
    """``before`` until step ``at``, then ``after``."""

    def __init__(self, before, after, at):
        self.before, self.after, self.at = before, after, at

    def __call__(self, step):
        return tf.where(tf.cast(step, tf.int64) >= self.at, float(self.after), float(self.before))

    def get_config(self):
        return {"before": self.before, "after": self.after, "at": self.at}


@keras.saving.register_keras_serializable(package="test_faults")
def net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(3)(inp))


def _data(nan_at=None):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int64")
    if nan_at is not None:
        x[nan_at, 2] = np.nan
    return x, y


def _fit(jit=False, data=None, nll=None, **kw):
    args = dict(data_size=N, num_chains=2, temperatures=[1.0, 2.0], learning_rates=1e-3, seed=0)
    args.update(kw)
    s = tf_vrre.ReplicaExchangeSampler(net, nll=nll, **args)
    if nll is None:
        s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    else:
        s.compile(jit_compile=jit)
    x, y = _data() if data is None else data
    s.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    return s


@pytest.mark.parametrize("jit", [False, True])
def test_scheduled_temperature_reaching_zero(jit):
    with pytest.raises(
        invariants.InvariantError,
        match=r"at step 6, chain slot 0 .*temperatures: chain 0 has "
        r"temperature 0; it must be > 0 with swaps",
    ) as err:
        _fit(jit, temperatures=[Drop(1.0, 0.0, 6), 2.0])
    assert (err.value.kind, err.value.step, err.value.chain, err.value.value) == ("temperature", 6, 0, 0.0)


def test_temperatures_that_stop_increasing():
    with pytest.raises(
        invariants.InvariantError,
        match=r"at step 5, chain slot 1 .*strictly increasing.*chain 1 "
        r"has 0.5, not above chain 0",
    ):
        _fit(temperatures=[1.0, Drop(2.0, 0.5, 5)])


def test_scheduled_learning_rate_reaching_zero():
    with pytest.raises(
        invariants.InvariantError,
        match=r"at step 9, chain slot 1 .*learning rate 0\).*"
        r"learning_rates: chain 1 has learning rate 0",
    ):
        _fit(learning_rates=[1e-3, Drop(1e-3, 0.0, 9)])


def test_scheduled_correction_reaching_zero():
    with pytest.raises(invariants.InvariantError, match=r"at step 7.*correction \(F\) is 0"):
        _fit(swap=tf_vrre.CorrectedSwap(correction=Drop(2.0, 0.0, 7)))


@pytest.mark.parametrize("jit", [False, True])
def test_non_finite_input_stops_before_a_non_finite_weight_is_written(jit):
    """A NaN in example 37 (batch 2, i.e. step 2) of a tf.data pipeline (arrays are refused on
    the host before fit starts): reported at that step as the input's fault, not a divergence; no weight becomes NaN (under XLA too,
    where tf.debugging asserts are compiled away)."""
    s = tf_vrre.ReplicaExchangeSampler(
        net, data_size=N, num_chains=2, temperatures=[1.0, 2.0], learning_rates=1e-3, seed=0
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    x, y = _data(nan_at=37)
    with pytest.raises(ValueError, match="fit: x holds non-finite values"):
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    with pytest.raises(
        invariants.InvariantError,
        match=r"at step 2, .*holds 1 non-finite input value.*not a "
        r"divergence",
    ) as err:
        s.fit(ds, epochs=1, verbose=0)
    assert err.value.kind == "input" and not isinstance(err.value, invariants.DivergenceError)
    assert "learning_rates" not in str(err.value)  # the data's fault, not the step size's
    assert isinstance(err.value, tf.errors.InvalidArgumentError)  # what Keras users already catch
    for chain in s.chains:
        assert all(np.isfinite(w).all() for w in chain.get_weights())


@keras.saving.register_keras_serializable(package="test_faults")
def doubled_nll(x, y, y_pred):
    per = keras.losses.sparse_categorical_crossentropy(y, y_pred, from_logits=True)
    return tf.concat([per, per], 0)  # one value per example, twice


def test_nll_with_the_wrong_length():
    message = r"nll returned 32 values for a batch of 16; it must return one negative log-likelihood per example"
    with pytest.raises(ValueError, match=message):  # static batch size: refused when the step is traced
        _fit(nll=doubled_nll)
    s = tf_vrre.ReplicaExchangeSampler(net, data_size=N, num_chains=2, temperatures=[1.0, 2.0], seed=0, nll=doubled_nll)
    ds = tf.data.Dataset.from_tensor_slices(_data()).batch(16)  # unknown static batch size: in-graph check
    with pytest.raises(invariants.InvariantError, match=r"at step 0, .*" + message):
        s.fit(ds, epochs=1, verbose=0)


def test_register_keeps_the_first_fault_and_is_not_saved():
    s = _fit()
    assert s._faults.variable.numpy().tolist() == [0.0] * 5
    assert all(v is not s._faults.variable for v in s.weights)


def test_exploding_flags_outliers_only():
    from tf_vrre.callbacks.sample_collector import exploding

    assert exploding([10.0, 11.0, 9.5, 10.5, 1e6, float("inf")]) == [False] * 4 + [True, True]
    assert exploding([-5.0, -5.1, -4.9]) == [False] * 3


def test_divergence_keeps_earlier_samples_and_flags_the_exploding_ones(tmp_path):
    """A learning rate that jumps 1e4x at step 12 on a quadratic energy makes the chain diverge: the DivergenceError
    names the step; the samples taken before stay loadable, the ones taken while the energy
    was exploding are flagged in the manifest, and the divergence is recorded there."""
    from tf_vrre.runs.samples import read_manifest

    s = tf_vrre.ReplicaExchangeSampler(
        net,
        data_size=N,
        num_chains=1,
        temperatures=1.0,
        swap=None,
        learning_rates=Drop(1e-4, 1.0, 12),
        dynamics="sgld",
        seed=0,
    )
    s.compile(loss=keras.losses.MeanSquaredError(reduction=None))  # quadratic: the jump diverges
    x, _ = _data()
    y = x[:, :3] * 2.0
    collector = tf_vrre.SampleCollector(str(tmp_path / "samples"), every=1)
    with pytest.raises(invariants.DivergenceError, match=r"at step \d+, chain slot 0") as err:
        s.fit(x, y, batch_size=16, epochs=50, verbose=0, shuffle=False, callbacks=[collector])
    manifest = read_manifest(str(tmp_path / "samples"))
    assert manifest["divergence"]["step"] == err.value.step and manifest["divergence"]["kind"] == err.value.kind
    entries = manifest["entries"]
    flagged = [e["step"] for e in entries if e.get("exploding")]
    assert flagged and min(flagged) > 12  # the lr jump, not before
    assert all(not e.get("exploding") for e in entries if e["step"] <= 12)
    samples = tf_vrre.load_samples(str(tmp_path / "samples"))
    assert len(samples) == len(entries) and all(np.isfinite(w).all() for w in samples.weights(len(samples) - 1))


@pytest.mark.parametrize("kind", ["temperatures", "learning_rates", "correction"])
@pytest.mark.parametrize("swaps", [True, False])
def test_in_graph_checks_apply_the_host_rule(kind, swaps):
    """One rule per kind: for values the sampler can hold, the runtime check accepts exactly what the
    constructor and the setters accept (tf_vrre.numerics.check_hyperparameter)."""
    rule = numerics.RULES[kind]
    for value in (-1.0, 0.0, 1e-3, 1.0, 1e30, float("inf"), float("nan")):
        try:
            numerics.check_hyperparameter(kind, value, swaps=swaps)
            host = True
        except ValueError:
            host = False
        graph = bool(invariants.in_range(tf.constant(value, tf.float64), rule, swaps).numpy())
        assert graph == host, (kind, swaps, value)
