"""``tf_vrre.diagnostics.advise``: what it refuses (one line naming what it needs), what its pilot
measures against exact values, and a small version of the regime map's check: on a bimodal
posterior whose cold chain cannot cross alone, the advisor's pick beats one chain at equal cost;
on a unimodal one it picks one chain."""

import json

import keras
import numpy as np
import pytest

import tf_vrre
from tf_vrre.diagnostics import advice, advisor, pilot_callback, run_advice
from tf_vrre.sampler import cost
from tf_vrre.workflows.gaussian_mixture import target

N, BATCH = 1000, 100


def _mixture_sampler(chains, temperatures, lr=2.5e-4, dynamics="sghmc", seed=0):
    s = tf_vrre.ReplicaExchangeSampler(
        target.build_default_model,
        data_size=N,
        num_chains=chains,
        temperatures=temperatures,
        learning_rates=[lr * (t / temperatures[0]) ** 0.25 for t in temperatures] if chains > 1 else lr,
        dynamics=dynamics,
        weight_decay=target.weight_decay(),
        nll=target.nll,
        seed=seed,
        swap=tf_vrre.CorrectedSwap(correction=2.0) if chains > 1 else None,
    )
    s.compile(steps_per_execution=1, jit_compile=False)
    return s


@pytest.fixture(scope="module")
def data():
    return target.make_data(N, seed=0)


def test_refuses_what_it_cannot_use_in_one_line(data):
    one = _mixture_sampler(1, 10.0)
    with pytest.raises(ValueError, match=r"no swaps configured \(num_chains=1.*num_chains >= 2") as err:
        tf_vrre.diagnostics.advise(one, data, 100, batch_size=BATCH)
    assert "\n" not in str(err.value)
    two = _mixture_sampler(2, [10.0, 100.0])
    # the first offset, m / 4 = 10, after a snapshot at step steps // 2: 19 steps
    with pytest.raises(ValueError, match=r"steps=18 is too short.*at least 10 steps.*m=40.*give steps >= 19") as err:
        tf_vrre.diagnostics.advise(two, data, 18, batch_size=BATCH, period=40)
    assert "\n" not in str(err.value)
    windowed = tf_vrre.ReplicaExchangeSampler(
        target.build_default_model,
        data_size=N,
        num_chains=2,
        temperatures=[10.0, 100.0],
        learning_rates=2.5e-4,
        nll=target.nll,
        swap=tf_vrre.CorrectedSwap(correction=2.0, period=30),
    )
    windowed.compile(steps_per_execution=1, jit_compile=False)
    with pytest.raises(ValueError, match=r"steps=30 is too short.*window of 30 steps.*give steps >= 31") as err:
        tf_vrre.diagnostics.advise(windowed, data, 30, batch_size=BATCH, period=4)
    assert "\n" not in str(err.value) and int(windowed.state.step.numpy()) == 0
    with pytest.raises(ValueError, match="data must be the training arrays"):
        tf_vrre.diagnostics.advise(two, data[:10], 40, batch_size=BATCH, period=4)
    with pytest.raises(ValueError, match="batch_size"):
        tf_vrre.diagnostics.advise(two, data, 40, batch_size=0)
    assert int(two.state.step.numpy()) == 0  # refused before training


def test_pilot_measures_the_exact_noise_and_writes_its_record(data, tmp_path, monkeypatch):
    seen = []  # the chains' beta at every measurement
    measure = pilot_callback.PilotCallback._measure

    def spy(self, offset):
        seen.append([float(c.trainable_weights[0].numpy()) for c in self.s.chains])
        return measure(self, offset)

    monkeypatch.setattr(pilot_callback.PilotCallback, "_measure", spy)
    s = _mixture_sampler(2, [10.0, 60.0])
    a = tf_vrre.diagnostics.advise(s, data, 60, batch_size=BATCH, period=4, blocks=2, directory=tmp_path)
    n = a.numbers
    assert int(s.state.step.numpy()) == 60 and n["pilot"]["exact_energies"]
    # the mini-batch noise at the last measurement's states, from the exact per-example energies
    beta = seen[-1]
    x = data[:, 0].astype(np.float64)
    per = np.stack(  # -log p(x_i | beta) up to a constant that cancels in the differences
        [-np.logaddexp(-0.5 * ((x - b) / 5) ** 2, -0.5 * ((x - 20 + b) / 5) ** 2) for b in beta]
    )
    d = per[0] - per[1]
    want = N * N / BATCH * (1 - BATCH / N) * d.var(ddof=1)
    stored = json.loads((tmp_path / advice.FILE).read_text())
    got = stored["measurements"]["naive_var"][-1][0]
    assert got == pytest.approx(want, rel=1e-3)
    assert stored["advice"]["recommendation"] == a.recommendation
    est = n["estimators"]
    k_mb, k_cv = est["mini-batch"]["recommended_chains"], est["control variates"]["recommended_chains"]
    assert est["mini-batch"]["gradient_evaluations_per_step"] == cost.per_step(k_mb, BATCH, N)
    assert est["control variates"]["gradient_evaluations_per_step"] == cost.per_step(k_cv, BATCH, N, 4)
    section = run_advice.from_run(tmp_path)
    assert section["source"] == "pilot" and section["text"] == a.summary()


def test_a_short_pilot_measures_the_offsets_that_fit_and_marks_a_lower_bound(data, tmp_path):
    # m = 40, offsets 10, 20, 30, 40 after a snapshot at steps // 2: 19 steps hold the first
    # (advise refuses 18), 40 steps the first two; the measured noise is then a lower bound
    m = 40
    assert advisor.minimum_steps(m) == 19
    for steps, offsets in ((19, [10]), (40, [10, 20])):
        keras.utils.clear_session()
        s = _mixture_sampler(2, [10.0, 60.0])
        a = tf_vrre.diagnostics.advise(
            s, data, steps, batch_size=BATCH, period=m, blocks=2, quenches=2, probe_inputs=data[:1], directory=tmp_path
        )
        assert int(s.state.step.numpy()) == steps
        cv = a.numbers["estimators"]["control variates"]
        assert (cv["offsets"], cv["period_covered"], cv["noise_lower_bound"]) == (offsets, offsets[-1] / m, True)
        stored = json.loads((tmp_path / advice.FILE).read_text())["measurements"]
        assert stored["offsets"] == [0] + offsets and stored["period_covered"] == offsets[-1] / m
        assert np.isfinite(np.array(stored["vr_var"])[1:]).all()
        assert f"lower bound, measured at offsets {offsets} only" in a.summary()
        if a.recommendation == advice.VARIANCE_REDUCED:
            assert not a.confident
        # the measurements within the bound that steps_within budgets for (one block, all offsets)
        bound = advisor.measurement_cost(2, BATCH, N, 1, 2, m, steps, quenches=2)
        assert 0 < a.numbers["pilot"]["measurement_evaluations"] <= bound


def _run(sampler, steps, data, every=20):
    """The cold chain's beta every ``every`` steps after a fifth of ``steps``."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(data).shuffle(N, seed=1).repeat().batch(BATCH, drop_remainder=True)
    out = []

    class Rec(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            out.append(float(sampler.chains[0].trainable_weights[0].numpy()))

    sampler.compile(steps_per_execution=every, jit_compile=False)
    history = sampler.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[Rec()]).history
    beta = np.array(out)[len(out) // 5 :]
    return beta, history["gradient_evaluations"][-1]


def test_small_map_the_advisor_picks_what_is_closest_at_equal_cost(data):
    # the paper's mixture at tau = 10 on a 4-chain ladder up to half its barrier: the cold chain
    # starts in the right mode and cannot cross alone; the pilot (10% of the budget) sees the hot
    # chain elsewhere and swaps that pass
    budget = 1e6
    ladder = list(np.geomspace(10.0, 1915.0, 4))
    pilot = _mixture_sampler(4, ladder)
    steps = tf_vrre.diagnostics.advisor.steps_within(0.1 * budget, 4, BATCH, 128, 1, 2, 4, quenches=4)
    a = tf_vrre.diagnostics.advise(
        pilot,
        data,
        steps,
        batch_size=BATCH,
        period=4,
        blocks=2,
        quenches=4,
        measure_examples=128,
        probe_inputs=data[:1],
        budget=budget,
    )
    spent = steps * 4 * BATCH + a.numbers["pilot"]["measurement_evaluations"]
    assert spent <= 0.1 * budget
    assert a.recommendation != advice.ONE_CHAIN, a.summary()
    exact, _ = target.mode_weights(data, 10.0)
    errors = {}
    for name, chains in (("one chain", 1), ("advised", 4)):
        vr = a.recommendation == advice.VARIANCE_REDUCED and chains > 1
        steps = cost.steps_within(budget, chains, BATCH, N, 4 if vr else None)
        steps -= steps % 20
        s = _mixture_sampler(chains, ladder if chains > 1 else 10.0, seed=1)
        if vr:
            s = tf_vrre.ReplicaExchangeSampler(
                target.build_default_model,
                data_size=N,
                num_chains=4,
                temperatures=ladder,
                learning_rates=[2.5e-4 * (t / 10) ** 0.25 for t in ladder],
                weight_decay=target.weight_decay(),
                nll=target.nll,
                seed=1,
                variance_reduction=tf_vrre.ControlVariates(period=4),
            )
            s.set_reference_data(data)
        beta, spent = _run(s, steps, data)
        assert spent <= budget
        left = (beta < target.PHI / 2).mean()
        errors[name] = abs(left - exact)
    # one chain never leaves the right mode: its error is the whole left weight, 0.575
    assert errors["one chain"] == pytest.approx(exact, abs=1e-9)
    assert errors["advised"] < 0.25, errors


def test_unimodal_linear_regression_gets_one_chain():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 3)).astype("float32")
    y = (x @ np.array([1.0, -0.5, 2.0]) + rng.normal(size=2000)).astype("float32")[:, None]

    def net():
        inp = keras.Input((3,))
        return keras.Model(inp, keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")(inp))

    s = tf_vrre.ReplicaExchangeSampler(
        net,
        data_size=2000,
        num_chains=2,
        temperatures=[1.0, 10.0],
        learning_rates=5e-6,
        weight_decay=1.0,
        nll=tf_vrre.gaussian_nll,
        seed=0,
    )
    s.compile(steps_per_execution=1, jit_compile=False)
    a = tf_vrre.diagnostics.advise(s, (x, y), 200, batch_size=BATCH, period=8, blocks=2, probe_inputs=x[:16])
    assert a.recommendation == advice.ONE_CHAIN, a.summary()
    assert 1 / advice.MULTIMODAL < a.numbers["multimodality_index"] < advice.MULTIMODAL
