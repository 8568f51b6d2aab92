"""LadderTuner as a callback: arguments and config, refusals before training, logs and the record,
the neutral default, the fixed ladder after tuning, bounds, learning rates, the K warning, and exact
resume after kills mid-round."""

import json
import math
import os
import warnings

import _ladder_records
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
from tf_vrre.sampler import hyperparameters
from tf_vrre.sgmcmc import ladder, tuning

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
        ("rule", r"learning_rates must be > 0 and finite in float32 .*the rule gave \[-1\.0, -2\.0"),
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
    """Even/odd swaps, rounds of 16 and 64 steps (every pair attempted 8 and 32 times); an epoch
    is 4 steps."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS, pairs="deo")
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=4)  # an epoch
    tuner = LadderTuner(80, first_round_steps=16, directory=str(tmp_path / "ladder"), learning_rates=0.5)
    csv = tf_vrre.CSVLogger(str(tmp_path / "log.csv"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hist = _fit(s, x, y, [tuner, csv], epochs=24)
    assert not [w for w in caught if "keeps its ladder" in str(w.message)]  # every round measured
    h = hist.history
    assert h["ladder_round"] == [0.0] * 3 + [1.0] * 16 + [2.0] * 5  # rounds end at steps 16 and 80
    for key in ("ladder_barrier", "ladder_recommended_chains", "ladder_rejection_0", "ladder_rejection_2"):
        assert len(h[key]) == 24 and all(np.isfinite(h[key][3:])) and all(np.isnan(h[key][:3]))
    doc = ladder_report.read(tmp_path / "ladder")
    rounds = doc["rounds"]
    assert [(r["start_step"], r["due_step"], r["end_step"]) for r in rounds] == [(0, 16, 16), (16, 80, 80)]
    assert doc["initial"]["temperatures"] == list(TEMPS) and all(r["kept"] is None for r in rounds)
    for a, b in zip(rounds, rounds[1:]):
        assert b["temperatures"] == a["new_temperatures"] and b["start_step"] == a["end_step"]
    last = rounds[-1]
    assert min(rounds[0]["attempts"]) >= tuning.MIN_ROUND_ATTEMPTS
    assert h["ladder_barrier"][-1] == pytest.approx(last["barrier"])
    assert h["ladder_rejection_1"][-1] == pytest.approx(last["rejection"][1])
    # the ladder of the last round is in force from step 81 on; cold and hot ends never move
    for h_ in range(4):
        assert h[f"temperature_{h_}"][-1] == h[f"temperature_{h_}"][-4] == pytest.approx(last["new_temperatures"][h_])
    assert last["new_temperatures"][0] == 1.0 and last["new_temperatures"][-1] == 8.0
    assert last["new_temperatures"] != list(TEMPS)  # the ladder moved
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


def test_rounds_with_too_few_attempts_keep_the_ladder_and_say_so():
    """No swap is possible before the first sigma2 window ends (step 7), so the first round (steps
    0-3) sees no attempt, and the second (steps 4-11) at most 3 per pair with even/odd swaps:
    fewer than MIN_ROUND_ATTEMPTS, so neither moves the ladder or reports a barrier; each says
    why in the record and in a warning that points at the fit call.  The last round (steps
    12-40, 14 attempts per pair) measures and moves the ladder."""
    s = tf_vrre.ReplicaExchangeSampler(
        small_net,
        data_size=N,
        num_chains=4,
        temperatures=list(TEMPS),
        learning_rates=2e-3,
        seed=0,
        swap=tf_vrre.CorrectedSwap(period=8, penalty="window", pairs="deo"),
    )
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=4)  # an epoch
    x, y = data()
    tuner = LadderTuner(40, first_round_steps=4, learning_rates=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hist = _fit(s, x, y, [tuner], epochs=10)
    first, second, last = tuner.record["rounds"]
    assert first["attempts"] == [0, 0, 0] and 0 < max(second["attempts"]) < tuning.MIN_ROUND_ATTEMPTS
    for r in (first, second):
        assert r["new_temperatures"] == r["temperatures"] == list(TEMPS)
        assert r["kept"].startswith("too few swap attempts to measure: pair")
        assert all(r[k] is None for k in ("rejection", "pair_barrier", "barrier", "recommended_chains"))
    assert last["kept"] is None and last["barrier"] > 0 and last["new_temperatures"] != list(TEMPS)
    kept = [w for w in caught if "keeps its ladder" in str(w.message)]
    assert [str(w.message).split(" (steps")[0] for w in kept] == ["LadderTuner: round 0", "LadderTuner: round 1"]
    assert all(w.filename == __file__ for w in kept), [w.filename for w in kept]
    assert all(np.isnan(hist.history["ladder_barrier"][:2])) and hist.history["ladder_barrier"][-1] == last["barrier"]


def test_bounds_move_the_hot_end_inside_them():
    s, ds = _ladder_targets.gaussian_sampler(2, [1.0, 1.2, 1.4, 1.6], 0.05, seed=0, steps_per_execution=20)
    tuner = LadderTuner(600, first_round_steps=100, learning_rates=None, bounds=(1.0, 5.0))
    s.fit(ds, steps_per_epoch=200, epochs=3, verbose=0, callbacks=[tuner])
    hots = [r["new_temperatures"][-1] for r in tuner.record["rounds"]]
    assert hots[0] == pytest.approx(3.2, rel=1e-6)  # easy swaps: out by the factor-2 cap per round
    assert all(h <= 5.0 + 1e-6 for h in hots) and hots[-1] == pytest.approx(5.0)
    assert all(r["new_temperatures"][0] == 1.0 for r in tuner.record["rounds"])


def test_warns_when_far_fewer_chains_than_the_barrier_needs():
    """d = 50, tau 1 .. 100: Lambda = 13, about 27 chains; with 4 every pair rejects nearly all swaps.
    The warning points at the fit call, not into Keras or the library."""
    s, ds = _ladder_targets.gaussian_sampler(50, [1.0, 4.64, 21.5, 100.0], 0.05, seed=0, steps_per_execution=20)
    with pytest.warns(
        UserWarning, match=r"needs about \d+ chains \(2 Lambda\); with num_chains=4 each pair rejects"
    ) as w:
        s.fit(ds, steps_per_epoch=200, epochs=1, verbose=0, callbacks=[LadderTuner(200, first_round_steps=60)])
    assert [r.filename for r in w if "Lambda" in str(r.message)] == [__file__]
    s, ds = _ladder_targets.gaussian_sampler(2, [1.0, 1.5, 2.0, 3.0], 0.05, seed=0, steps_per_execution=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*shuffle=True")
        s.fit(ds, steps_per_epoch=200, epochs=1, verbose=0, callbacks=[LadderTuner(200, first_round_steps=60)])


def test_rounds_shorter_than_an_execution_block():
    """steps_per_execution = 8 and rounds of 2, 4, ... steps: each round ends at the first block end
    at or after its due step, and the next round lasts its length from there."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=8)
    tuner = LadderTuner(30, first_round_steps=2)  # due at 2; 8 + 4; 16 + 8 -> the last, to 30
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="LadderTuner: round .* keeps its ladder")  # 2-8 attempts a pair
        s.fit(x, y, batch_size=8, epochs=5, verbose=0, shuffle=False, callbacks=[tuner])
    assert [(r["start_step"], r["due_step"], r["end_step"]) for r in tuner.record["rounds"]] == [
        (0, 2, 8),
        (8, 12, 16),
        (16, 30, 32),
    ]


def test_rounds_end_at_block_ends_and_the_record_says_where():
    """steps_per_execution = 10 does not divide the round ends of the schedule (16, 48): a round ends at
    the first block end after it is due, the record keeps the step it ended (with the step it was
    due), and the next round lasts its full length (32 steps) from there, not 30."""
    s, ds = _ladder_targets.gaussian_sampler(2, [1.0, 1.5, 2.0, 3.0], 0.05, seed=0, steps_per_execution=10)
    tuner = LadderTuner(120, first_round_steps=16, learning_rates=None)
    s.fit(ds, steps_per_epoch=40, epochs=3, verbose=0, callbacks=[tuner])
    rounds = tuner.record["rounds"]
    assert [(r["start_step"], r["due_step"], r["end_step"]) for r in rounds] == [
        (0, 16, 20),
        (20, 52, 60),
        (60, 120, 120),
    ]
    for i, r in enumerate(rounds[:-1]):
        assert r["end_step"] - r["start_step"] >= 16 * 2**i and r["end_step"] % 10 == 0
    assert "round_ends" not in tuner.record  # no schedule that did not run
    assert all(r["kept"] is None for r in rounds)
    assert [float(t) for t in s.state.ladder.temperature.numpy()] == pytest.approx(rounds[-1]["new_temperatures"])


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
    """Rounds due at 3, 9, 21 and 60; killed at step 30 (checkpoint at 28, inside round 3), resumed
    in a new tuner without a record: round 3 restarts at step 28, with a warning at the fit call."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    ckpt = str(tmp_path / "ckpt")
    with pytest.raises(KeyboardInterrupt), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="LadderTuner: round .* keeps its ladder")
        s.fit(
            x,
            y,
            batch_size=16,
            epochs=15,
            verbose=0,
            shuffle=False,
            callbacks=[LadderTuner(60, first_round_steps=3), Checkpoint(ckpt), Interrupt(30)],
        )
    fresh, x, y = make_sampler(vr=False, temperatures=TEMPS)
    tuner = LadderTuner(60, first_round_steps=3)
    with pytest.warns(UserWarning, match="no record of the start of tuning round 3 .* restarts at step 28") as w:
        fresh.fit(x, y, batch_size=16, epochs=15, verbose=0, shuffle=False, callbacks=[tuner, Checkpoint(ckpt)])
    assert [r.filename for r in w if "no record" in str(r.message)] == [__file__]
    assert [(r["start_step"], r["end_step"]) for r in tuner.record["rounds"]] == [(28, 60)]
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


# ---- a round ends in one step or not at all; the guards of the ladder -------------------------------


@keras.saving.register_keras_serializable(package="test_ladder")
def initial_ladder_only(temperatures):
    """A learning-rate rule that works on the ladder in force at the start (and on the widest one,
    geometric) but gives NaN for any other: a rule that fails at a round's end."""
    t = np.asarray(temperatures)
    known = np.allclose(t, TEMPS) or np.allclose(t, np.geomspace(TEMPS[0], TEMPS[-1], len(TEMPS)))
    return 1e-3 * np.sqrt(t) if known else np.full(t.shape, np.nan)


def test_a_rule_failing_at_a_round_end_changes_nothing(tmp_path):
    """The round's new ladder is computed, then the rule fails on it: the error names learning_rates
    and the round; the sampler keeps the round's temperatures and learning rates, the record keeps
    the round open (as on disk before the round's end), so a resume replays it."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS, pairs="deo")
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=4)
    tuner = LadderTuner(48, first_round_steps=16, learning_rates=initial_ladder_only, directory=str(tmp_path))
    with pytest.raises(ValueError, match=r"round 0 \(steps 0-16\) cannot end: learning_rates .*nothing was set"):
        _fit(s, x, y, [tuner], epochs=12)
    assert int(s.state.step.numpy()) == 16
    np.testing.assert_array_equal(s.state.ladder.temperature.numpy(), np.float32(TEMPS))
    np.testing.assert_array_equal(s.state.ladder.learning_rate.numpy(), np.float32([2e-3] * 4))
    rounds = ladder_report.read(tmp_path)["rounds"]
    assert len(rounds) == 1 and "end_step" not in rounds[0] and rounds[0]["due_step"] == 16


@pytest.mark.parametrize(
    "rule,bounds",
    [(1e6, None), (-60.0, None), (30.0, (1.0, 1e3))],  # inf at the initial ladder; 0 in float32; inf at the bound
)
def test_a_learning_rate_exponent_is_tried_before_training(rule, bounds, tmp_path):
    """An exponent is checked like a callable: on the ladder in force and on the widest the bounds
    allow (eta_1 (tau / tau_1)^a must be finite and > 0 in float32), naming learning_rates."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    tuner = LadderTuner(8, first_round_steps=2, learning_rates=rule, bounds=bounds, directory=str(tmp_path / "l"))
    with pytest.raises(ValueError, match=r"LadderTuner: learning_rates must be > 0 and finite in float32"):
        _fit(s, x, y, [tuner])
    assert int(s.state.step.numpy()) == 0 and not os.path.exists(tmp_path / "l")


def test_a_cold_temperature_at_the_lower_bound_is_accepted_in_float32():
    """tau_1 = 1e-6 is 9.99999997e-07 in float32: bounds=(1e-6, ...) contain it.  (The checks
    of the tuner's train begin, run as fit runs them before the first step.)"""
    s, _, _ = make_sampler(vr=False, temperatures=(1e-6, 1e-5, 1e-4, 1e-3))
    for bounds, refused in (((1e-6, 1e-2), False), ((2e-6, 1e-2), True)):
        tuner = LadderTuner(4, first_round_steps=4, bounds=bounds)
        tuner.set_model(s)
        if refused:
            with pytest.raises(ValueError, match=r"bounds \(2e-06, 0\.01\) must contain the cold temperature"):
                tuner.on_train_begin()
        else:
            tuner.on_train_begin()
            assert tuner.record["run"]["tuner"]["bounds"] == [1e-6, 1e-2]
        tuner.on_train_end()


@pytest.mark.parametrize("other", ["tuner", "scheduler", "scheduler_first", "scheduler_lr"])
def test_a_second_setter_of_the_ladder_is_refused_before_fit(other, tmp_path):
    """Two tuners, or a tuner and a HyperparameterScheduler that sets temperatures (or learning
    rates while the tuner does), in one fit: refused before anything runs, naming both."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    tuner = LadderTuner(8, first_round_steps=2, directory=str(tmp_path / "a"))
    second = {
        "tuner": LadderTuner(8, first_round_steps=2, directory=str(tmp_path / "b")),
        "scheduler": tf_vrre.HyperparameterScheduler(temperatures=list(TEMPS)),
        "scheduler_first": tf_vrre.HyperparameterScheduler(temperatures=lambda e: list(TEMPS)),
        "scheduler_lr": tf_vrre.HyperparameterScheduler(learning_rates=1e-3),
    }[other]
    callbacks = [second, tuner] if other == "scheduler_first" else [tuner, second]
    both = (
        "two LadderTuners"
        if other == "tuner"
        else (
            "HyperparameterScheduler and LadderTuner"
            if other == "scheduler_first"
            else "LadderTuner and HyperparameterScheduler"
        )
    )
    name = "learning_rates" if other == "scheduler_lr" else "temperatures"
    with pytest.raises(ValueError, match=rf"fit: callbacks: {both} both set the sampler's {name}"):
        _fit(s, x, y, callbacks)
    assert int(s.state.step.numpy()) == 0 and not os.listdir(tmp_path)
    hyperparameters.check_setters(
        [LadderTuner(8, learning_rates=None), tf_vrre.HyperparameterScheduler(learning_rates=1e-3)]
    )


def test_a_damaged_or_edited_record_is_refused_on_resume_in_one_line(tmp_path):
    """The resume path reads ladder.json as data: a record of this very run with a bad field, or
    with its run identity edited by hand (fingerprint kept, so it no longer matches the fields), is
    refused in one line naming the file and the field, before anything runs."""
    s, x, y = make_sampler(vr=False, temperatures=TEMPS)
    probe = LadderTuner(8, first_round_steps=2)
    probe.set_model(s)
    probe.on_train_begin()  # the identity this run records, as fit computes it before the first step
    probe.on_train_end()
    path = tmp_path / "ladder.json"
    for edit, match in (
        (lambda d: d["rounds"][0].update(attempts="many"), r"rounds\[0\]\.attempts: must be a list of 3 integers"),
        (lambda d: d["run"]["sampler"].update(seed=7), r"run: the recorded run identity was edited"),
    ):
        doc = {**_ladder_records.record(), "run": json.loads(json.dumps(probe.record["run"]))}
        edit(doc)
        path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match=rf"^LadderTuner: {tmp_path}/ladder.json: {match}[^\n]*$"):
            _fit(s, x, y, [LadderTuner(8, first_round_steps=2, directory=str(tmp_path))])
        assert int(s.state.step.numpy()) == 0 and json.loads(path.read_text()) == doc
