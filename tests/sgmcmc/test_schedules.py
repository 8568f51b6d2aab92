"""Schedules against the paper's formulas (Section 5.2), config round trips, errors."""

import keras
import numpy as np
import pytest

from tf_vrre import CorrectedSwap, ReplicaExchangeSampler
from tf_vrre.sgmcmc import schedules
from tf_vrre.sgmcmc.schedules import CyclicalCosine, EpochExponential, Scaled, paper_cifar_schedules

SPE = 196  # CIFAR-10 with batch 256


def at_epoch(schedule, epoch, offset=0):
    return float(keras.ops.convert_to_numpy(schedule(epoch * SPE + offset)))


def test_paper_learning_rate():
    """eta = 2e-6 for the first 200 epochs, then x0.984 per epoch."""
    lr = EpochExponential(2e-6, 0.984, SPE, constant_epochs=200)
    for e in (0, 1, 150, 199):
        for off in (0, SPE - 1):
            assert at_epoch(lr, e, off) == pytest.approx(2e-6, rel=1e-6)
    for e in (200, 201, 350, 499):
        assert at_epoch(lr, e) == pytest.approx(2e-6 * 0.984 ** (e - 199), rel=1e-5)
        assert at_epoch(lr, e, SPE - 1) == pytest.approx(2e-6 * 0.984 ** (e - 199), rel=1e-5)


def test_paper_temperature_and_correction():
    """tau = 0.01 / 1.02^e during a 300-epoch burn-in then fixed; F = F0 1.02^e alongside;
    hot chain 5x the cold temperature and 1.5x its lr."""
    s = paper_cifar_schedules(SPE)
    tau, tau_hot = s["temperatures"]
    lr, lr_hot = s["learning_rates"]
    f = s["correction"]
    for e in (0, 1, 2, 100, 299, 300, 301, 450):
        k = min(e, 300)
        assert at_epoch(tau, e) == pytest.approx(0.01 / 1.02**k, rel=1e-5)
        assert at_epoch(tau_hot, e) == pytest.approx(5 * 0.01 / 1.02**k, rel=1e-5)
        assert at_epoch(f, e) == pytest.approx(1.5e5 * 1.02**k, rel=1e-5)
        assert at_epoch(lr_hot, e) == pytest.approx(1.5 * at_epoch(lr, e), rel=1e-6)
    # F * tau is constant during annealing (the correction counteracts the temperature).
    assert at_epoch(f, 123) * at_epoch(tau, 123) == pytest.approx(1.5e5 * 0.01, rel=1e-5)


def test_cyclical_cosine():
    """eta_k = eta0/2 (cos(pi r) + 1), r = (k mod L) / L, L = ceil(T / C); collect when r > 0.7."""
    total, cycles = 1000 * SPE, 5
    lr = CyclicalCosine(1e-5, total, cycles)
    L = int(np.ceil(total / cycles))
    assert lr.cycle_length == L
    for k in (0, 1, L // 4, L // 2, L - 1, L, L + 7, 3 * L + L // 3, total - 1):
        r = (k % L) / L
        assert float(lr(k)) == pytest.approx(0.5e-5 * (np.cos(np.pi * r) + 1), rel=1e-5, abs=1e-12)
        assert lr.position(k) == pytest.approx(r)
        assert lr.in_sampling_phase(k) == (r > 0.7)
        assert lr.cycle(k) == k // L
    assert float(lr(0)) == pytest.approx(1e-5) and float(lr(L)) == pytest.approx(1e-5)
    phase = [lr.in_sampling_phase(k) for k in range(L)]
    assert np.mean(phase) == pytest.approx(0.3, abs=2.0 / L)


@pytest.mark.parametrize(
    "schedule",
    [
        EpochExponential(2e-6, 0.984, SPE, constant_epochs=200),
        EpochExponential(0.01, 1 / 1.02, SPE, constant_epochs=1, stop_epoch=300),
        Scaled(EpochExponential(0.01, 0.5, 3), 5.0),
        Scaled(0.25, 2.0),
        CyclicalCosine(1e-5, 5000, 2, threshold=0.6),
    ],
)
def test_config_round_trip(schedule):
    config = schedule.get_config()
    ser = keras.saving.serialize_keras_object(schedule)
    back = keras.saving.deserialize_keras_object(ser)
    assert type(back) is type(schedule)
    assert back.get_config() == config
    for step in (0, 5, 1234, 77777):
        assert float(back(step)) == pytest.approx(float(schedule(step)))


@pytest.mark.parametrize(
    "make, arg",
    [
        (lambda: EpochExponential(0.0, 0.9, 10), "initial"),
        (lambda: EpochExponential(1.0, -0.9, 10), "factor"),
        (lambda: EpochExponential(1.0, 0.9, 0), "steps_per_epoch"),
        (lambda: EpochExponential(1.0, 0.9, 10, constant_epochs=-1), "constant_epochs"),
        (lambda: EpochExponential(1.0, 0.9, 10, stop_epoch=2.5), "stop_epoch"),
        (lambda: Scaled(1.0, 0.0), "multiplier"),
        (lambda: CyclicalCosine(1e-5, 100, 0), "cycles"),
        (lambda: CyclicalCosine(1e-5, 10, 11), "cycles"),
        (lambda: CyclicalCosine(1e-5, 100, 2, threshold=1.0), "threshold"),
    ],
)
def test_bad_arguments(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


@keras.saving.register_keras_serializable(package="test_schedules")
def _net():
    inp = keras.Input((2,))
    return keras.Model(inp, keras.layers.Dense(1)(inp))


def test_sampler_follows_schedules_every_step():
    """Schedules given to the sampler are evaluated inside the train step: after each step
    the stored lr / temperature / F are the schedules' values at that step."""
    spe = 3
    s = paper_cifar_schedules(
        spe, learning_rate=1e-3, constant_epochs=1, temperature=1.0, burn_in_epochs=2, correction=4.0
    )
    sampler = ReplicaExchangeSampler(
        _net,
        data_size=12,
        num_chains=2,
        learning_rates=s["learning_rates"],
        temperatures=s["temperatures"],
        swap=CorrectedSwap(correction=s["correction"]),
        seed=0,
    )
    sampler.compile(loss=keras.losses.MeanSquaredError(reduction=None))
    x = np.random.default_rng(0).normal(size=(12, 2)).astype("float32")
    y = x[:, :1]
    seen = []

    class Probe(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(sampler.state.step.numpy()) - 1
            ladder = sampler.state.ladder
            seen.append(
                (
                    step,
                    ladder.learning_rate.numpy().copy(),
                    ladder.temperature.numpy().copy(),
                    float(sampler.state.swap.correction.numpy()),
                )
            )

    sampler.fit(x, y, batch_size=4, epochs=4, verbose=0, shuffle=False, callbacks=[Probe()])
    assert len(seen) == 12
    for step, lrs, temps, f in seen:
        e = step // spe
        assert lrs[0] == pytest.approx(1e-3 * 0.984 ** max(0, e), rel=1e-5)
        assert lrs[1] == pytest.approx(1.5 * lrs[0], rel=1e-6)
        assert temps[0] == pytest.approx(1.0 / 1.02 ** min(e, 2), rel=1e-5)
        assert temps[1] == pytest.approx(5 * temps[0], rel=1e-6)
        assert f == pytest.approx(4.0 * 1.02 ** min(e, 2), rel=1e-5)
    # Round trip of the sampler config with schedules everywhere.
    back = ReplicaExchangeSampler.from_config(sampler.get_config())
    assert back.swap_rule.scheduled_correction
    assert float(back.swap_rule.correction(2 * spe)) == pytest.approx(4.0 * 1.02**2, rel=1e-5)


# ---- one path for every hyperparameter argument: schedules.validated / serialize ----------------
class Constant(keras.optimizers.schedules.LearningRateSchedule):
    """Any value, even one no hyperparameter may take."""

    def __init__(self, value):
        self.value = value

    def __call__(self, step):
        return keras.ops.convert_to_tensor(self.value, "float32")

    def get_config(self):
        return {"value": self.value}


def test_validated_takes_numbers_schedules_and_per_chain_lists():
    lr = EpochExponential(1e-3, 0.9, 10)
    assert schedules.validated("learning_rates", 1e-3, num_chains=2) == [1e-3, 1e-3]
    assert schedules.validated("learning_rates", [lr, 2e-3], num_chains=2) == [lr, 2e-3]
    assert schedules.validated("learning_rates", lr) is lr  # K unknown: the form given
    assert schedules.validated("correction", 3) == 3.0 and schedules.validated("correction", lr) is lr
    epoch_fn = lambda e: [0.1, 0.2]  # noqa: E731  (a Python callable of the epoch: the scheduler's)
    assert schedules.validated("temperatures", epoch_fn, epoch_callables=True) is epoch_fn


@pytest.mark.parametrize(
    "kind,value,kwargs,error,message",
    [
        ("temperatures", [0.05, 0.01], {"num_chains": 2}, ValueError, "strictly increasing in float32"),
        (
            "temperatures",
            [Scaled(0.05, 1.0), 0.01],
            {"num_chains": 2},
            ValueError,
            r"temperatures \(at step 0\) must be strictly increasing",
        ),  # a schedule counts with its step-0 value
        (
            "learning_rates",
            Constant(1e-40),
            {},
            ValueError,  # 1e-40 is denormal in float32
            r"learning_rates \(at step 0\) entries must be in \[1.18e-38",
        ),
        ("temperatures", [0.1], {"num_chains": 2}, ValueError, r"one entry per chain \(2\), got 1"),
        ("temperatures", "hot", {}, TypeError, "temperatures must be a number, a LearningRateSchedule or a per-chain"),
        ("temperatures", "hot", {"epoch_callables": True}, TypeError, "a callable epoch -> value or a per-chain list"),
        ("temperatures", [lambda e: 0.1], {}, TypeError, "temperatures must be a number, a LearningRateSchedule"),
        ("correction", [1.0, 2.0], {}, TypeError, r"correction \(F\): one value for the swap rule, not a list"),
        ("correction", 0.0, {}, ValueError, r"correction \(F\) must be a finite number > 0, got 0.0"),
        ("correction", Constant(-1.0), {}, ValueError, r"correction \(F\) \(at step 0\) must be a finite number > 0"),
    ],
)
def test_validated_names_the_argument_and_the_range(kind, value, kwargs, error, message):
    with pytest.raises(error, match=message):
        schedules.validated(kind, value, **kwargs)


def test_serialize_round_trips_every_form():
    lr = EpochExponential(1e-3, 0.9, 10)
    for value in (None, 2.5, lr, [1.0, lr], [Scaled(lr, 1.5), 3]):
        config = schedules.serialize(value)
        assert config == schedules.serialize(schedules.deserialize(config))
    assert schedules.serialize([1, lr])[0] == 1.0 and schedules.serialize(lr)["class_name"] == "EpochExponential"
    back = schedules.deserialize(schedules.serialize([lr, 2.0]))
    assert back[1] == 2.0 and back[0].get_config() == lr.get_config()
