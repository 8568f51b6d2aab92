"""HyperparameterScheduler and SwapLogger with a small classifier under ``fit``."""

import os

import keras
import numpy as np
import pytest
from _small_sampler import N, data, make_sampler, read_csv, small_net

from tf_vrre import CorrectedSwap, ReplicaExchangeSampler
from tf_vrre.callbacks import HyperparameterScheduler, SwapLogger
from tf_vrre.sgmcmc import swap_record
from tf_vrre.sgmcmc.schedules import EpochExponential


# ---- HyperparameterScheduler -------------------------------------------------------------
def test_scheduler_sets_values_per_epoch():
    s, x, y = make_sampler(vr=False)
    sched = HyperparameterScheduler(
        learning_rates=[lambda e: 1e-3 * 0.5**e, lambda e: 1.5e-3 * 0.5**e],
        temperatures=lambda e: [1.0 / 1.02 ** min(e, 2), 5.0 / 1.02 ** min(e, 2)],
        correction=lambda e: 2.0 * 1.02 ** min(e, 2),
    )
    hist = s.fit(x, y, batch_size=16, epochs=4, verbose=0, callbacks=[sched]).history
    for e in range(4):
        assert hist["lr_0"][e] == pytest.approx(1e-3 * 0.5**e, rel=1e-6)
        assert hist["lr_1"][e] == pytest.approx(1.5e-3 * 0.5**e, rel=1e-6)
        assert hist["temperature_0"][e] == pytest.approx(1.0 / 1.02 ** min(e, 2), rel=1e-6)
        assert hist["temperature_1"][e] == pytest.approx(5.0 / 1.02 ** min(e, 2), rel=1e-6)
        assert hist["correction"][e] == pytest.approx(2.0 * 1.02 ** min(e, 2), rel=1e-9)
        assert isinstance(hist["lr_0"][e], float)


def test_scheduler_accepts_numbers_and_step_schedules():
    s, x, y = make_sampler(vr=False)
    sched = HyperparameterScheduler(
        learning_rates=EpochExponential(1e-3, 0.5, steps_per_epoch=4, constant_epochs=1), correction=3.0
    )
    hist = s.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[sched]).history
    assert hist["lr_0"] == pytest.approx([1e-3, 5e-4, 2.5e-4], rel=1e-6)
    assert hist["correction"] == pytest.approx([3.0] * 3)


def test_scheduler_errors():
    with pytest.raises(ValueError, match="at least one"):
        HyperparameterScheduler()
    with pytest.raises(TypeError, match="temperatures"):
        HyperparameterScheduler(temperatures="hot")
    with pytest.raises(TypeError, match="correction"):
        HyperparameterScheduler(correction=[1.0, 2.0])
    s, x, y = make_sampler(vr=False)
    with pytest.raises(ValueError, match="temperatures must be"):
        s.fit(
            x,
            y,
            batch_size=16,
            epochs=1,
            verbose=0,
            callbacks=[HyperparameterScheduler(temperatures=lambda e: [2.0, 1.0])],
        )
    with pytest.raises(ValueError, match="correction"):
        s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[HyperparameterScheduler(correction=lambda e: -1.0)])
    scheduled = ReplicaExchangeSampler(
        small_net, data_size=N, temperatures=[1.0, 2.0], learning_rates=EpochExponential(1e-3, 0.9, 4), seed=0
    )
    scheduled.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
    with pytest.raises(ValueError, match="already a schedule"):
        scheduled.fit(
            x, y, batch_size=16, epochs=1, verbose=0, callbacks=[HyperparameterScheduler(learning_rates=1e-3)]
        )
    with pytest.raises(ValueError, match="correction"):
        s.set_correction(0.0)


def test_scheduler_checks_its_arguments_by_the_samplers_rule():
    """The scheduler's numbers are checked when it is built (the sampler's rule, without knowing K),
    a per-chain list's length and the swap rule's bounds when fit starts: before any epoch runs."""
    with pytest.raises(ValueError, match=r"temperatures must not decrease in float32"):  # swaps not known yet
        HyperparameterScheduler(temperatures=[0.5, 0.1])
    with pytest.raises(ValueError, match=r"learning_rates must be finite and > 0, got -0.001"):
        HyperparameterScheduler(learning_rates=-1e-3)
    with pytest.raises(ValueError, match=r"correction \(F\) must be a finite number > 0"):
        HyperparameterScheduler(correction=0.0)
    s, x, y = make_sampler(vr=False)
    for bad, message in (
        ({"temperatures": [0.1, 0.2, 0.3]}, r"temperatures must have one entry per chain \(2\)"),
        ({"temperatures": [0.0, 0.2]}, r"temperatures must be finite and > 0 with swaps"),
        ({"temperatures": [0.2, 0.2]}, r"temperatures must be strictly increasing"),
    ):
        with pytest.raises(ValueError, match=message):
            s.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[HyperparameterScheduler(**bad)])
    assert int(s.state.step.numpy()) == 0


def test_scheduler_config_round_trip():
    sched = HyperparameterScheduler(
        learning_rates=[EpochExponential(1e-3, 0.9, 4), 2e-3], temperatures=[1.0, 3.0], correction=2.5, verbose=1
    )
    config = sched.get_config()
    assert set(config) == {"learning_rates", "temperatures", "correction", "verbose"}
    back = HyperparameterScheduler.from_config(config)
    assert back.get_config() == config
    assert back.values(epoch=2, step=9) == sched.values(epoch=2, step=9)
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(sched)).get_config() == config


# ---- SwapLogger --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    out = tmp_path_factory.mktemp("swaplog")
    s, x, y = make_sampler(vr=True, correction=10.0, temperatures=(1.0, 1.5), lr=3e-3)  # ~50% acceptance
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None), steps_per_execution=4)
    logger = SwapLogger(str(out / "csv"), tensorboard_dir=str(out / "tb"))
    hist = s.fit(s.make_dataset(16), epochs=60, verbose=0, callbacks=[logger]).history
    return s, out, hist


def test_swap_log_matches_sampler_counters(logged):
    s, out, hist = logged
    swaps = read_csv(out / "csv" / "swaps.csv")
    assert len(swaps) == int(s.state.swap.attempt_count.numpy().sum()) > 100
    assert sum(int(r["accepted"]) for r in swaps) == int(s.state.swap.swap_count.numpy().sum())
    steps = [int(r["step"]) for r in swaps]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert max(steps) < int(s.state.step.numpy())
    epochs = read_csv(out / "csv" / "epochs.csv")
    assert [int(r["epoch"]) for r in epochs] == list(range(60))
    assert sum(int(r["swaps"]) for r in epochs) == int(s.state.swap.swap_count.numpy().sum())
    assert sum(int(r["steps"]) for r in epochs) == int(s.state.step.numpy())
    assert hist["epoch_swaps"] == [float(r["swaps"]) for r in epochs]
    assert all(isinstance(v, float) for v in hist["epoch_accept_rate"])


def test_swap_log_records_are_consistent(logged):
    """Each record satisfies log S = delta (U_lo - U_hi - delta sigma2 / F); decisions follow
    min(1, exp(log S)) within binomial error."""
    s, out, _ = logged
    rows = read_csv(out / "csv" / "swaps.csv")
    lo = np.array([float(r["energy_lo"]) for r in rows])
    hi = np.array([float(r["energy_hi"]) for r in rows])
    t_lo = np.array([float(r["temperature_lo"]) for r in rows])
    t_hi = np.array([float(r["temperature_hi"]) for r in rows])
    sig = np.array([float(r["sigma2"]) for r in rows])
    f = np.array([float(r["correction"]) for r in rows])
    log_s = np.array([float(r["log_ratio"]) for r in rows])
    delta = 1 / t_lo - 1 / t_hi
    np.testing.assert_allclose(log_s, delta * (lo - hi - delta * sig / f), rtol=1e-9, atol=1e-9)
    p = np.minimum(1.0, np.exp(log_s))
    acc = np.array([int(r["accepted"]) for r in rows])
    se = np.sqrt(np.sum(p * (1 - p)))
    assert 0.1 < p.mean() < 0.9, p.mean()  # the check below is informative
    assert abs(acc.sum() - p.sum()) < 4.5 * se + 1e-9, (acc.sum(), p.sum(), se)


def test_refresh_records(logged):
    s, out, _ = logged
    rows = read_csv(out / "csv" / "refresh.csv")
    snap = [int(r["step"]) for r in rows if r["snapshot_refreshed"] == "1"]
    upd = [int(r["step"]) for r in rows if r["sigma2_updated"] == "1"]
    total = int(s.state.step.numpy())
    assert snap == list(range(0, total, 4))  # refresh every m = 4 steps
    assert upd == list(range(3, total, 4))  # sigma2 at the end of each window
    last = [r for r in rows if r["sigma2_updated"] == "1"][-1]
    assert float(last["sigma2_0"]) == pytest.approx(float(s.state.swap.sigma2.numpy()[0]))
    assert float(last["c_0"]) == -1.0


def test_tensorboard_scalars_written(logged):
    _, out, _ = logged
    import tensorflow as tf

    tags = set()
    for name in os.listdir(out / "tb"):
        for event in tf.compat.v1.train.summary_iterator(str(out / "tb" / name)):
            for v in event.summary.value:
                tags.add(v.tag)
    assert {"swap/log_ratio_0", "swap/accepted_0", "sigma2/0", "c/0", "epoch/swaps"} <= tags


def test_log_ratios_beyond_float32_reach_tensorboard(tmp_path):
    """A cold rung at tau = 1e-30 makes log S ~ -1e30 * energy gap, beyond float32: the CSV and
    TensorBoard both get it (TensorBoard stores float32: -inf), and training is not refused."""
    import tensorflow as tf

    s, x, y = make_sampler(vr=False, temperatures=(1e-30, 1.0), lr=1e-4)
    logger = SwapLogger(str(tmp_path / "csv"), tensorboard_dir=str(tmp_path / "tb"))
    s.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[logger])
    ratios = [float(r["log_ratio"]) for r in read_csv(tmp_path / "csv" / "swaps.csv")]
    assert ratios and max(abs(v) for v in ratios) > 3.5e38
    logged = [
        v.simple_value
        for name in os.listdir(tmp_path / "tb")
        for event in tf.compat.v1.train.summary_iterator(str(tmp_path / "tb" / name))
        for v in event.summary.value
        if v.tag == "swap/log_ratio_0"
    ]
    assert len(logged) == len(ratios)


def test_swap_logger_errors_and_config(tmp_path):
    s = ReplicaExchangeSampler(small_net, data_size=N, num_chains=1, seed=0, swap=None)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
    x, y = data()
    with pytest.raises(ValueError, match="no swap rule"):
        s.fit(x, y, epochs=1, verbose=0, callbacks=[SwapLogger(str(tmp_path))])
    with pytest.raises(TypeError, match="log_dir"):
        SwapLogger(None)
    logger = SwapLogger(str(tmp_path / "a"), tensorboard_dir=str(tmp_path / "b"))
    config = logger.get_config()
    assert config == {"log_dir": str(tmp_path / "a"), "tensorboard_dir": str(tmp_path / "b"), "overwrite": False}
    assert SwapLogger.from_config(config).get_config() == config


def test_truncate_drops_replayed_and_cut_rows(tmp_path):
    from tf_vrre.callbacks.swap_logger import _truncate_csv

    path = tmp_path / "swaps.csv"
    path.write_text("step,epoch,accepted\n1,0,1\n2,0,0\n5,1,1\n6,1,0\n7,1")  # last row cut by a kill
    _truncate_csv(str(path), ["step", "epoch", "accepted"], lambda r: int(r["step"]) < 6)
    assert path.read_text().splitlines() == ["step,epoch,accepted", "1,0,1", "2,0,0", "5,1,1"]


def test_batch_energy_is_the_pre_update_energy_of_each_slots_state():
    """``batch_energy[h]`` = N-scaled NLL + prior of the state in slot h after the swap,
    before its update; checked by hand on full batches, across accepted swaps."""
    x, y = data()
    s = ReplicaExchangeSampler(
        small_net,
        data_size=N,
        num_chains=2,
        temperatures=[1.0, 1.2],
        learning_rates=3e-3,
        weight_decay=2.0,
        seed=0,
        swap=CorrectedSwap(correction=10.0, period=1),
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None))
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    before, checked = {}, [0, 0]

    def energy(weights):
        net = small_net()
        net.set_weights(weights)
        nll = float(np.sum(keras.ops.convert_to_numpy(loss(y, net(x)))))
        return nll + 0.5 * 2.0 * sum(float(np.sum(np.square(w.astype(np.float64)))) for w in weights)

    class Probe(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            before["w"] = [c.get_weights() for c in s.chains]

        def on_train_batch_end(self, batch, logs=None):
            step = int(s.state.step.numpy()) - 1
            row = s.state.swap.log.numpy()[step % swap_record.CAPACITY]
            swapped = row[swap_record.swap_log_columns(2).index("accepted_0")] > 0.5
            order = [1, 0] if swapped else [0, 1]
            got = s.state.batch_energy.numpy()
            for h in range(2):
                assert got[h] == pytest.approx(energy(before["w"][order[h]]), rel=1e-5)
            checked[int(swapped)] += 1

    s.fit(x, y, batch_size=N, epochs=40, verbose=0, shuffle=False, callbacks=[Probe()])
    assert checked[0] > 3 and checked[1] > 3, checked


def test_offsets_csv_tallies_attempts_and_the_sigma2_used_by_offset(tmp_path):
    """``offsets.csv``: per epoch, pair and offset k = step mod m, the attempts and swaps of
    ``swaps.csv`` and the mean sigma2 used; 0 at the refresh offset with the default VR penalty."""
    s, x, y = make_sampler(vr=True, correction=1.0, temperatures=(1.0, 3.0), lr=3e-3, period=4)
    assert s.swap_penalty == "batch"
    s.fit(s.make_dataset(16), epochs=3, verbose=0, callbacks=[SwapLogger(str(tmp_path))])
    swaps, offsets = read_csv(tmp_path / "swaps.csv"), read_csv(tmp_path / "offsets.csv")
    assert {int(r["epoch"]) for r in offsets} == {0, 1, 2}
    for row in offsets:
        mine = [
            r
            for r in swaps
            if r["epoch"] == row["epoch"] and r["pair"] == row["pair"] and int(r["step"]) % 4 == int(row["offset"])
        ]
        assert int(row["attempts"]) == len(mine) > 0
        assert int(row["swaps"]) == sum(int(r["accepted"]) for r in mine)
        assert float(row["mean_sigma2_used"]) == pytest.approx(
            np.mean([float(r["sigma2"]) for r in mine]), rel=1e-9, abs=1e-12
        )
    assert sum(int(r["attempts"]) for r in offsets) == len(swaps)
    used = {k: np.mean([float(r["mean_sigma2_used"]) for r in offsets if r["offset"] == str(k)]) for k in range(4)}
    assert used[0] <= 1e-6 * max(used[1], used[2], used[3]), used  # the estimator is exact at the refresh
