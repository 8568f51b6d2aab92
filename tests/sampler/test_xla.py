"""The train step under XLA (``compile(jit_compile=True)``) and the ``"auto"`` rule.

The step's random draws (:mod:`tf_vrre.sgmcmc.seeds`) are the same with and without XLA, so the XLA
trajectory is the graph one up to float rounding, noise and swap uniforms included; the
sampling itself is checked against an exact posterior under XLA in ``tests/sampler/test_posterior.py``.
"""

import _pinned_runs
import keras
import numpy as np
import pytest
import tensorflow as tf

import tf_vrre
from tf_vrre.sampler import xla
from tf_vrre.sgmcmc import dynamics, seeds, swaps
from tf_vrre.workflows.image_classification.models import resnet


@pytest.mark.parametrize("name", _pinned_runs.CONFIGS)
def test_every_pinned_configuration_compiles_and_runs_under_xla(name):
    """SGLD / SGHMC / M-SGD, K = 1 / 2 / 3, random / DEO pairs, cooling, scheduled F and lr,
    cached / forward / train-mode snapshot energies, adaptive c: all under XLA."""
    s, fit_kwargs = _pinned_runs.build(name)
    s.compile(
        **{**s._compile_args, "loss": None if s.nll is not None else s._compile_args["loss"], "jit_compile": True}
    )
    assert s.jit_compile is True
    s.fit(**fit_kwargs(s), epochs=2, verbose=0)
    state = _pinned_runs.state(s)
    assert int(s.state.step.numpy()) == 8
    assert all(np.isfinite(v).all() for k, v in state.items() if v.dtype.kind == "f" and "swap_log" not in k)
    if s.swap_rule is not None:
        assert s.state.swap.attempt_count.numpy().sum() > 0


@keras.saving.register_keras_serializable(package="test_xla")
def _net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(6, activation="tanh")(inp)))


def _cold_run(jit, temperatures=(1e-13, 2e-13)):
    """Default: noise ~ 1e-8 and swaps decided by sign(U_lo - U_hi) at refresh steps (sigma2 = 0 there)."""
    x, y = _pinned_runs.data()
    s = tf_vrre.ReplicaExchangeSampler(
        _net,
        data_size=_pinned_runs.N,
        num_chains=2,
        temperatures=list(temperatures),
        learning_rates=[2e-3, 3e-3],
        weight_decay=0.5,
        seed=3,
        independent_init=True,
        swap=tf_vrre.CorrectedSwap(correction=2.0),
        variance_reduction=tf_vrre.ControlVariates(period=4, batch_size=24),
    )
    s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    s.fit(s.make_dataset(16), epochs=4, verbose=0)
    log = s.state.swap.log.numpy()
    return _pinned_runs.state(s), log[log[:, 0] >= 0]


def test_xla_and_graph_trajectories_agree_without_noise():
    (graph, glog), (fused, xlog) = _cold_run(False), _cold_run(True)
    np.testing.assert_array_equal(glog[:, :5], xlog[:, :5])  # step, flags, proposed, accepted
    assert glog[:, 4].sum() >= 1  # at least one swap happened
    for key in graph:
        if "chain" in key or "velocity" in key or "snapshot" in key:
            np.testing.assert_allclose(fused[key], graph[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_random_draws_do_not_depend_on_xla():
    """Langevin normals, swap uniforms and pair choices: the same floats under XLA and in the graph
    (TensorFlow's own stateless float samplers are not: they map the same bits to other floats)."""
    key = seeds.step_key(seeds.base_key(7), tf.constant(5, tf.int64))
    weights = [tf.zeros([3, 5]), tf.zeros([5]), tf.zeros([1001])]
    draws = {
        "noise": lambda: dynamics.langevin_noise(weights, seeds.fold(key, seeds.NOISE)),
        "uniform64": lambda: seeds.uniform([4097], key, tf.float64),
        "uniform32": lambda: seeds.uniform([4097], key, tf.float32),
        "swap": lambda: swaps.decide_swaps(tf.zeros([3], tf.float64) - 0.7, tf.ones([3], tf.bool), key).accepted,
        "pair": lambda: swaps.random_pair(4, 0, key),
    }
    for name, draw in draws.items():
        graph, fused = tf.function(draw)(), tf.function(draw, jit_compile=True)()
        for a, b in zip(tf.nest.flatten(graph), tf.nest.flatten(fused)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-6, atol=1e-6, err_msg=name)
    u = seeds.uniform([20000], key).numpy()
    assert u.min() > 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    z = seeds.normal(20001, key).numpy()
    assert z.shape == (20001,) and abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.03


def test_xla_and_graph_run_the_same_chain_with_noise():
    """Real temperatures: noise and swap uniforms matter, XLA must not change them."""
    (graph, glog), (fused, xlog) = _cold_run(False, (0.05, 0.5)), _cold_run(True, (0.05, 0.5))
    np.testing.assert_array_equal(glog[:, :5], xlog[:, :5])
    assert glog[:, 4].sum() >= 1
    for key in graph:
        if "chain" in key or "velocity" in key or "snapshot" in key:
            np.testing.assert_allclose(fused[key], graph[key], rtol=1e-4, atol=1e-5, err_msg=key)


def test_auto_rule():
    assert xla.resolve_jit_compile("auto", _net()) is True  # dense model on one CPU device
    assert xla.resolve_jit_compile("auto", resnet(8)) is False  # convolutions on CPU: slower
    assert xla.resolve_jit_compile(False, _net()) is False
    with pytest.raises(ValueError, match="jit_compile"):
        xla.resolve_jit_compile("yes", _net())
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        assert xla.resolve_jit_compile("auto", _net()) is True  # one replica in sync


def test_default_follows_the_environment(monkeypatch):
    monkeypatch.setenv(xla.ENV, "auto")
    assert xla.resolve_jit_compile(None, _net()) is True
    monkeypatch.setenv(xla.ENV, "0")
    assert xla.resolve_jit_compile(None, _net()) is False
    monkeypatch.setenv(xla.ENV, "maybe")
    with pytest.raises(ValueError, match="TF_VRRE_JIT_COMPILE must be one of auto, 1, 0"):
        xla.resolve_jit_compile(None, _net())


def _hlo_is_step_independent(sampler, batch, steps=5):
    fn = tf.function(sampler.train_step, jit_compile=True)
    first = fn.experimental_get_compiler_ir(batch)(stage="hlo")
    for _ in range(steps):
        fn(batch)
    return fn.experimental_get_compiler_ir(batch)(stage="hlo") == first


def test_one_compilation_serves_every_step():
    """No runtime value may become an XLA compile-time constant (e.g. a strided slice with a
    computed begin): the HLO after steps 1-5 (refreshes, swap attempts) equals step 0's, so
    ``fit`` compiles once instead of once per step."""
    from tf_vrre.workflows.gaussian_mixture import target

    x = target.make_data(200, seed=0)
    sgld = tf_vrre.ReplicaExchangeSampler(
        lambda: target.build_model(30.0),
        num_chains=1,
        temperatures=10.0,
        swap=None,
        data_size=200,
        learning_rates=3e-4,
        dynamics="sgld",
        weight_decay=target.weight_decay(),
        nll=target.target_nll(),
        seed=0,
    )
    assert _hlo_is_step_independent(sgld, tf.constant(x[:50]))
    xs, ys = _pinned_runs.data()
    vr = tf_vrre.ReplicaExchangeSampler(
        _net,
        data_size=_pinned_runs.N,
        num_chains=2,
        temperatures=[1.0, 2.0],
        learning_rates=1e-3,
        seed=3,
        swap=tf_vrre.CorrectedSwap(correction=2.0),
        variance_reduction=tf_vrre.ControlVariates(period=2),
    )
    vr.set_reference_data((xs, ys))
    vr.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert _hlo_is_step_independent(vr, next(iter(vr.make_dataset(16, drop_remainder=True))))
