"""LadderTuner as a callback: arguments and config, refusals before training, logs and the record,
the neutral default, the fixed ladder after tuning, bounds, learning rates, the K warning, and exact
resume after kills mid-round."""

import json
import math
import os
import warnings

import _ladder_targets
import keras
import numpy as np
import pytest
from _small_sampler import Interrupt, N, data, make_sampler, small_net

import tf_vrre
from tf_vrre.callbacks.checkpoint import Checkpoint
from tf_vrre.callbacks.ladder_tuner import LadderTuner
from tf_vrre.diagnostics import ladder_report
from tf_vrre.runs.ownership import RunMismatchError
from tf_vrre.sgmcmc import ladder

TEMPS = (1.0, 2.0, 4.0, 8.0)


@keras.saving.register_keras_serializable(package="test_ladder")
def sqrt_rule(temperatures):
    return 1e-3 * np.sqrt(temperatures)


@pytest.mark.parametrize("rule", [0.25, None, sqrt_rule])
def test_config_round_trip(rule, tmp_path):
    tuner = LadderTuner(
        500,
        first_round_steps=8,
        learning_rates=rule,
        bounds=(0.5, 30.0),
        directory=str(tmp_path / "l"),
        overwrite=True,
        verbose=1,
    )
    back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tuner))
    assert isinstance(back, LadderTuner) and back.get_config() == tuner.get_config()
    assert back.learning_rates is rule or back.learning_rates == rule
    assert set(tuner.get_config()) == {
        "tuning_steps",
        "first_round_steps",
        "learning_rates",
        "bounds",
        "directory",
        "overwrite",
        "verbose",
    }
    assert LadderTuner(10).learning_rates == 0.25 and LadderTuner(10).first_round_steps == 32


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"tuning_steps": 0}, ValueError, "tuning_steps must be an integer >= 1"),
        ({"tuning_steps": 10.5}, ValueError, "tuning_steps"),
        ({"tuning_steps": 10, "first_round_steps": 0}, ValueError, "first_round_steps"),
        ({"tuning_steps": 10, "learning_rates": "fast"}, TypeError, "learning_rates"),
        ({"tuning_steps": 10, "learning_rates": float("inf")}, TypeError, "learning_rates"),
        ({"tuning_steps": 10, "bounds": (5.0, 2.0)}, ValueError, "bounds"),
        ({"tuning_steps": 10, "bounds": (1.0,)}, ValueError, "bounds"),
        ({"tuning_steps": 10, "directory": 3}, TypeError, "directory"),
        ({"tuning_steps": 10, "overwrite": "yes"}, TypeError, "overwrite"),
    ],
)
def test_bad_arguments_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        LadderTuner(**kwargs)


def _fit(s, x, y, callbacks, epochs=3):
    return s.fit(x, y, batch_size=16, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks)


@pytest.mark.parametrize(
    "case,match",
    [
        ("two_chains", r"num_chains must be >= 3 to tune a ladder, got num_chains=2"),
        ("too_long", r"tuning_steps=13 is longer than the run, which ends at step 12 \(3 epochs of 4 steps\)"),
        ("bounds", r"bounds \(2\.0, 10\.0\) must contain the cold temperature 1\.0"),
        ("rule", r"learning_rates must be > 0, the rule gave"),
    ],
)
def test_refused_before_training_and_nothing_written(case, match, tmp_path):
    temps = (1.0, 4.0) if case == "two_chains" else TEMPS
    s, x, y = make_sampler(vr=False, temperatures=temps)
    tuner = LadderTuner(
        13 if case == "too_long" else 8,
        first_round_steps=2,
        directory=str(tmp_path / "ladder"),
        bounds=(2.0, 10.0) if case == "bounds" else None,
        learning_rates=(lambda t: -t) if case == "rule" else 0.25,
    )
    before = [keras.ops.convert_to_numpy(v) for v in s.weights]
    with pytest.raises(ValueError, match=match):
        _fit(s, x, y, [tuner])
    assert not os.path.exists(tmp_path / "ladder")
    assert int(s.state.step.numpy()) == 0
    for a, b in zip(before, [keras.ops.convert_to_numpy(v) for v in s.weights]):
        np.testing.assert_array_equal(a, b)


def test_refuses_scheduled_temperatures_and_samplers_without_swaps():
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    s.temperatures = [tf_vrre.EpochExponential(1.0, 1.0, 4)] + list(s.temperatures[1:])
    with pytest.raises(ValueError, match="temperatures are a schedule"):
        _fit(s, x, y, [LadderTuner(8)])
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    s.swap_rule = None
    with pytest.raises(ValueError, match="no swap rule"):
        _fit(s, x, y, [LadderTuner(8)])


def test_logs_record_and_fixed_ladder_after_tuning(tmp_path):
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    tuner = LadderTuner(14, first_round_steps=2, directory=str(tmp_path / "ladder"), learning_rates=0.5)
    csv = tf_vrre.CSVLogger(str(tmp_path / "log.csv"))
    hist = _fit(s, x, y, [tuner, csv], epochs=6)
    h = hist.history
    assert h["ladder_round"] == [1.0, 2.0, 2.0, 3.0, 3.0, 3.0]  # rounds end at steps 2, 6, 14
    for key in ("ladder_barrier", "ladder_recommended_chains", "ladder_rejection_0", "ladder_rejection_2"):
        assert len(h[key]) == 6 and all(np.isfinite(h[key]))
    doc = ladder_report.read(tmp_path / "ladder")
    rounds = doc["rounds"]
    assert [r["end_step"] for r in rounds] == [2, 6, 14] and doc["initial"]["temperatures"] == list(TEMPS)
    for a, b in zip(rounds, rounds[1:]):
        assert b["temperatures"] == a["new_temperatures"] and b["start_step"] == a["end_step"]
    last = rounds[-1]
    assert h["ladder_barrier"][-1] == pytest.approx(last["barrier"])
    assert h["ladder_rejection_1"][-1] == pytest.approx(last["rejection"][1])
    # the ladder of the last round stays from step 14 on; cold and hot ends never move
    for h_ in range(4):
        assert h[f"temperature_{h_}"][-1] == h[f"temperature_{h_}"][-3] == pytest.approx(last["new_temperatures"][h_])
    assert last["new_temperatures"][0] == 1.0 and last["new_temperatures"][-1] == 8.0
    # learning rates follow eta_1 (tau / tau_1)^0.5
    t, lr = np.array(last["new_temperatures"]), np.array(last["new_learning_rates"])
    assert np.allclose(lr, lr[0] * np.sqrt(t / t[0]), rtol=1e-6) and lr[0] == pytest.approx(2e-3)
    # the record's counts are differences of the sampler's counters, round after round
    assert rounds[0]["start_attempts"] == [0, 0, 0]
    for a, b in zip(rounds, rounds[1:]):
        assert np.add(a["start_attempts"], a["attempts"]).tolist() == b["start_attempts"]
        assert np.add(a["start_swaps"], a["swaps"]).tolist() == b["start_swaps"]
    assert np.all(np.add(last["start_attempts"], last["attempts"]) <= s.state.swap.attempt_count.numpy())
    # the swap noise the rule charged at each round's end, and its penalty delta^2 sigma2 / 2 on that round's ladder
    noise = last["swap_noise"]
    t = np.asarray(last["temperatures"])
    delta = 1.0 / t[:-1] - 1.0 / t[1:]
    assert noise["energies"] == "mini-batch" and len(noise["sigma2"]) == 3 and min(noise["sigma2"]) > 0
    assert np.allclose(noise["penalty_nats"], delta**2 * np.asarray(noise["sigma2"]) / 2)
    header = open(tmp_path / "log.csv").readline().strip().split(",")
    assert {"ladder_round", "ladder_barrier", "ladder_rejection_0"} <= set(header)
    assert ladder_report.summary(doc)["finished"] is True


def test_never_attempted_pairs_count_as_neutral():
    """No swap is possible before the first sigma2 window ends (step 7): the first round (steps
    0-3) sees no attempt, every pair gets the neutral 0.5 and the ladder does not move."""
    s = tf_vrre.ReplicaExchangeSampler(
        small_net,
        data_size=N,
        num_chains=4,
        temperatures=list(TEMPS),
        learning_rates=2e-3,
        seed=0,
        swap=tf_vrre.CorrectedSwap(period=8, penalty="window", pairs="deo"),
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = data()
    tuner = LadderTuner(12, first_round_steps=4, learning_rates=None)
    _fit(s, x, y, [tuner], epochs=3)
    first = tuner.record["rounds"][0]
    assert first["attempts"] == [0, 0, 0] and first["rejection"] == [0.5, 0.5, 0.5]
    assert np.allclose(first["new_temperatures"], TEMPS, rtol=1e-6)


def test_bounds_move_the_hot_end_inside_them():
    s, ds = _ladder_targets.gaussian_sampler(2, [1.0, 1.2, 1.4, 1.6], 0.05, seed=0, steps_per_execution=20)
    tuner = LadderTuner(600, first_round_steps=100, learning_rates=None, bounds=(1.0, 5.0))
    s.fit(ds, steps_per_epoch=200, epochs=3, verbose=0, callbacks=[tuner])
    hots = [r["new_temperatures"][-1] for r in tuner.record["rounds"]]
    assert hots[0] == pytest.approx(3.2, rel=1e-6)  # easy swaps: out by the factor-2 cap per round
    assert all(h <= 5.0 + 1e-6 for h in hots) and hots[-1] == pytest.approx(5.0)
    assert all(r["new_temperatures"][0] == 1.0 for r in tuner.record["rounds"])


def test_warns_when_far_fewer_chains_than_the_barrier_needs():
    """d = 50, tau 1 .. 100: Lambda = 13, about 27 chains; with 4 every pair rejects nearly all swaps."""
    s, ds = _ladder_targets.gaussian_sampler(50, [1.0, 4.64, 21.5, 100.0], 0.05, seed=0, steps_per_execution=20)
    with pytest.warns(UserWarning, match=r"needs about \d+ chains \(2 Lambda\); with num_chains=4 each pair rejects"):
        s.fit(ds, steps_per_epoch=200, epochs=1, verbose=0, callbacks=[LadderTuner(200, first_round_steps=60)])
    s, ds = _ladder_targets.gaussian_sampler(2, [1.0, 1.5, 2.0, 3.0], 0.05, seed=0, steps_per_execution=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*shuffle=True")
        s.fit(ds, steps_per_epoch=200, epochs=1, verbose=0, callbacks=[LadderTuner(200, first_round_steps=60)])


def test_rounds_shorter_than_an_execution_block():
    """steps_per_execution = 8 and rounds of 2, 4, ... steps: a block that crosses several round ends
    ends the open round at its end (the schedule is the same on every run)."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=8)
    tuner = LadderTuner(30, first_round_steps=2)  # rounds end at steps 2, 6, 14, 30; blocks at 8, 16, ...
    s.fit(x, y, batch_size=8, epochs=5, verbose=0, shuffle=False, callbacks=[tuner])
    assert [(r["start_step"], r["end_step"]) for r in tuner.record["rounds"]] == [(0, 8), (8, 16), (16, 32)]


def test_another_runs_record_refused(tmp_path):
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    _fit(s, x, y, [LadderTuner(8, first_round_steps=2, directory=str(tmp_path))])
    other, x, y = make_sampler(vr=False, temperatures=(1.0, 2.0, 3.0, 8.0))
    with pytest.raises(RunMismatchError, match="tuning record"):
        _fit(other, x, y, [LadderTuner(8, first_round_steps=2, directory=str(tmp_path))])
    _fit(other, x, y, [LadderTuner(8, first_round_steps=2, directory=str(tmp_path), overwrite=True)])
    assert ladder_report.read(tmp_path)["initial"]["temperatures"] == [1.0, 2.0, 3.0, 8.0]


# ---- exact resume --------------------------------------------------------------------------------


def _run(out, kill_at=None, epochs=12, target=None):
    """A fresh sampler (what a new process builds) with a Checkpoint and a tuner in ``out``; killed
    after step ``kill_at`` if given.  Rounds end at steps 3, 9 and 40; an epoch is 4 steps.
    ``target``: F adapted to that swap acceptance rate (``correction="auto"``)."""
    s, x, y = make_sampler(
        vr=True, temperatures=TEMPS, **({} if target is None else {"correction": "auto", "target_acceptance": target})
    )
    callbacks = [
        LadderTuner(40, first_round_steps=3, directory=os.path.join(out, "ladder")),
        Checkpoint(os.path.join(out, "ckpt")),
    ]
    if kill_at is not None:
        callbacks.append(Interrupt(kill_at))
    try:
        s.fit(x, y, batch_size=16, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks)
    except KeyboardInterrupt:
        return None
    return s


@pytest.mark.parametrize("target", [None, 0.6])
def test_killed_mid_round_resumes_to_the_same_ladder_and_samples(target, tmp_path):
    ref = _run(str(tmp_path / "ref"), target=target)
    out = str(tmp_path / "killed")
    assert _run(out, kill_at=11, target=target) is None  # checkpoint at step 8, before round 2 started (step 9)
    assert _run(out, kill_at=30, target=target) is None  # checkpoint at step 28, inside round 2 (steps 9-40)
    s = _run(out, target=target)
    if target is not None:  # F adapted: it moved, and is part of the state compared below
        assert float(ref.state.swap.correction.numpy()) != 2.0
    for a, b in zip(ref.weights, s.weights):  # chains, velocities, snapshots, counters, ladder
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), err_msg=a.name)
    ra, rb = (json.load(open(os.path.join(d, "ladder", "ladder.json"))) for d in (str(tmp_path / "ref"), out))
    assert ra["rounds"] == rb["rounds"] and [r["end_step"] for r in rb["rounds"]] == [3, 9, 40]
    assert ra["initial"] == rb["initial"]


def test_resume_without_a_record_warns_and_restarts_the_round(tmp_path):
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    ckpt = str(tmp_path / "ckpt")
    with pytest.raises(KeyboardInterrupt):
        s.fit(
            x,
            y,
            batch_size=16,
            epochs=12,
            verbose=0,
            shuffle=False,
            callbacks=[LadderTuner(40, first_round_steps=3), Checkpoint(ckpt), Interrupt(30)],
        )
    fresh, x, y = make_sampler(vr=False, temperatures=TEMPS)
    tuner = LadderTuner(40, first_round_steps=3)
    with pytest.warns(UserWarning, match="no record of the start of tuning round 2 .* restarts at step 28"):
        fresh.fit(x, y, batch_size=16, epochs=12, verbose=0, shuffle=False, callbacks=[tuner, Checkpoint(ckpt)])
    assert [(r["start_step"], r["end_step"]) for r in tuner.record["rounds"]] == [(28, 40)]
    assert math.isfinite(tuner.record["rounds"][0]["barrier"])
    assert ladder.recommended_chains(tuner.record["rounds"][0]["barrier"]) >= 2


# ---- F adapted to a target acceptance rate ----------------------------------------------------------


def test_auto_correction_adapts_f_during_tuning_only(tmp_path):
    """A target below the rate at F = 2 lowers F, one above raises it; F moves only up to the end
    of the tuning phase (step 14) and is recorded per round; the table shows it."""
    finals = {}
    for target in (0.02, 0.98):
        s, x, y = make_sampler(vr=True, temperatures=TEMPS, correction="auto", target_acceptance=target)
        tuner = LadderTuner(14, first_round_steps=2, directory=str(tmp_path / str(target)))
        seen = []

        def record(batch, logs, s=s, seen=seen):
            seen.append((int(s.state.step.numpy()), float(s.state.swap.correction.numpy())))

        watch = keras.callbacks.LambdaCallback(on_train_batch_end=record)
        _fit(s, x, y, [tuner, watch], epochs=6)
        steps = dict(seen)
        assert len({v for t, v in seen if t >= 14}) == 1 and len({v for t, v in seen if t <= 14}) > 2
        doc = ladder_report.read(tmp_path / str(target))
        assert doc["target_acceptance"] == target
        assert [r["correction"] for r in doc["rounds"]] == [steps[2], steps[6], steps[14]]
        assert ladder_report.summary(doc)["final_correction"] == steps[14]
        assert ladder_report.format_table(doc).splitlines()[0].split()[:5] == [
            "round",
            "steps",
            "Lambda",
            "chains",
            "F",
        ]
        finals[target] = steps[14]
    assert finals[0.02] < 2.0 < finals[0.98]


def test_auto_correction_and_a_scheduler_for_f_refused():
    s, x, y = make_sampler(vr=False, temperatures=TEMPS, correction="auto", target_acceptance=0.3)
    with pytest.raises(ValueError, match="correction is 'auto'"):
        _fit(s, x, y, [tf_vrre.HyperparameterScheduler(correction=3.0)])
