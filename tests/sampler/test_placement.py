"""placement="chain_per_replica": one chain per replica of a MirroredStrategy over logical CPUs.

The multi-device checks run in subprocesses (``tests/helpers/_placement_check.py``): the logical
devices must be configured before TensorFlow initialises.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from _paths import HELPERS, ROOT

import tf_vrre

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HELPERS, os.environ.get("PYTHONPATH", "")]))


def run(*args):
    out = subprocess.run(
        [sys.executable, os.path.join(HELPERS, "_placement_check.py"), *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    return out


def report(*args):
    out = run(*args)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@keras.saving.register_keras_serializable(package="test_placement")
def net():
    inp = keras.Input((4,))
    return keras.Model(inp, keras.layers.Dense(3)(inp))


def make(**kwargs):
    return tf_vrre.ReplicaExchangeSampler(
        net, data_size=32, num_chains=2, temperatures=[1.0, 2.0], learning_rates=1e-3, **kwargs
    )


# ---- refusals, before anything is built ------------------------------------------------------
def test_unknown_placement_is_refused():
    with pytest.raises(ValueError, match=r"placement must be one of \('replicated', 'chain_per_replica'\)"):
        make(placement="chain-per-device")


def test_chain_per_replica_needs_a_strategy():
    with pytest.raises(ValueError, match="no strategy is in scope"):
        make(placement="chain_per_replica")


def test_unsupported_strategy_is_refused():
    with (
        tf.distribute.OneDeviceStrategy("/cpu:0").scope(),
        pytest.raises(ValueError, match="not available under OneDeviceStrategy.*MirroredStrategy, TPUStrategy"),
    ):
        make(placement="chain_per_replica")


def test_replicas_must_equal_num_chains():
    with (
        tf.distribute.MirroredStrategy(["/cpu:0"]).scope(),
        pytest.raises(ValueError, match=r"num_chains=2 but the MirroredStrategy has 1 replicas in sync"),
    ):
        make(placement="chain_per_replica")


def test_replicated_config_round_trip():
    s = make()
    assert s.get_config()["placement"] == "replicated"
    again = tf_vrre.ReplicaExchangeSampler.from_config(s.get_config())
    assert again.placement == "replicated" and again.get_config() == s.get_config()


def test_chain_per_replica_config_loads_where_it_cannot_apply():
    """A chain-per-replica sampler's config rebuilt outside a strategy (a laptop) gets the
    replicated placement, with a warning naming why."""
    config = {**make().get_config(), "placement": "chain_per_replica"}
    with pytest.warns(UserWarning, match="placement='replicated'.*no strategy is in scope") as caught:
        again = tf_vrre.ReplicaExchangeSampler.from_config(config)
    assert again.placement == "replicated"
    assert [w.filename for w in caught] == [__file__]  # the user's line


def test_load_warning_points_at_the_load_model_call(tmp_path):
    """Loaded through Keras (``keras.saving.load_model`` -> Keras' deserialization -> ``from_config``),
    the warning names the line that called ``load_model``, not a line inside Keras."""
    import zipfile

    path = tmp_path / "s.keras"
    make(seed=0).save(path)
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    saved = json.loads(files["config.json"])
    saved["config"]["placement"] = "chain_per_replica"  # as saved on 2 GPUs
    files["config.json"] = json.dumps(saved).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    with pytest.warns(UserWarning, match="placement='replicated'") as caught:
        loaded = keras.saving.load_model(path)
    assert loaded.placement == "replicated"
    placement_warnings = [w for w in caught if "placement='replicated'" in str(w.message)]
    assert [(w.filename, w.lineno) for w in placement_warnings] == [(__file__, load_model_line())]


def load_model_line():
    """The line of this file that calls ``keras.saving.load_model``."""
    lines = open(__file__).read().splitlines()
    return 1 + next(i for i, line in enumerate(lines) if "loaded = keras.saving.load_model(path)" in line)


# ---- on 2 and 4 logical CPUs ------------------------------------------------------------------
def check_invariance(r, chains):
    """Same seed: the one-device run and the chain-per-replica run agree to float round-off.

    The two runs execute the same float32 operations per chain; only reductions can be summed in
    another order, so differences are round-off (~1e-7 relative), far below 1e-5."""
    assert r["variables"][0] == r["variables"][1]
    assert r["log_keys"] == []
    # each chain's gradient noise, measured on its own replica's whole batch, is credited to its rung
    excess = np.asarray(r["excess_temperature"])
    assert np.isfinite(excess).all() and (excess > 0).all(), r["excess_temperature"]
    for key in ("variable_diff", "cold_diff", "log_diff", "swap_row_diff", "sample_diff"):
        assert r[key] < 1e-5, (key, r)
    assert r["swaps"][0] == r["swaps"][1] > 0, r  # the same swaps were accepted
    assert r["attempts"][0] == r["attempts"][1] == r["swap_rows"][0] == r["swap_rows"][1], r
    assert r["sample_steps"][0] == r["sample_steps"][1] != [], r
    assert sorted(r["rungs"]) == list(range(chains)) and r["rungs"] != list(range(chains)), r  # labels moved


def test_two_replicas_match_one_device():
    check_invariance(report(2, "invariance", 3), 2)


def test_four_replicas_match_one_device():
    check_invariance(report(4, "invariance", 1), 4)


def test_weights_never_cross_devices():
    """From the traced step's graph: per step, chain-per-replica moves one all_gather in which
    each replica contributes ``n + 6`` float64 (energies, control-variate sums, the batch's
    per-example swap energies; 5 more with the adaptive coefficient), plus a few scalars, whatever the model's size; replicated
    placement all-reduces every chain's gradients, so its traffic grows with the weights."""
    r = report(4, "traffic")
    n = 24  # batch size of the step
    small, large = r["chain_per_replica/2/8"], r["chain_per_replica/2/64"]
    assert small == large, (small, large)  # independent of the model's size: no weight moves
    for k in (2, 4):
        t = r[f"chain_per_replica/{k}/8"]
        row = n + 6 + (5 if k == 4 else 0)  # K = 4 runs the adaptive coefficient: 5 cross moments more
        assert 0 < t["largest"] <= row, t  # no tensor beyond one chain's row
        assert t["kinds"]["all_gather"] == k * row * 8, t  # one gather of one row per replica
        assert "all_reduce" not in t["kinds"], t
        assert t["largest_edge"] == 1, t  # other copies: scalars (fault flags, logs)
    # the measurement sees weights: width 8 -> 64 adds 560 trainable weights per chain (4*56 + 56
    # kernel and bias, 2*56 BatchNorm, 56*3 kernel), whose float32 gradients replicated placement
    # all-reduces for 2 chains on each of 2 replicas
    grown = r["replicated/2/64"]["kinds"]["all_reduce"] - r["replicated/2/8"]["kinds"]["all_reduce"]
    assert grown == 2 * 2 * 560 * 4, r


def test_killed_run_resumes_exactly(tmp_path):
    """A chain-per-replica run killed (SIGKILL) after step 5 and started again resumes from its
    last checkpoint (end of epoch 1: rungs moved, so the host copy is in rung order) and ends with
    the uninterrupted run's variables, swap log and samples, bit for bit."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert report(2, "job", whole)["step"] == 12
    out = run(2, "job", killed, 5)
    assert out.returncode == -9, out.stderr[-3000:]
    assert report(2, "job", killed)["step"] == 12
    a, b = np.load(whole / "final.npz"), np.load(killed / "final.npz")
    assert len(a.files) == len(b.files) > 0
    for name in a.files:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert (whole / "swaps" / "swaps.csv").read_text() == (killed / "swaps" / "swaps.csv").read_text()
    sa, sb = tf_vrre.load_samples(whole / "samples"), tf_vrre.load_samples(killed / "samples")
    assert sa.steps == sb.steps != []
    for wa, wb in zip(sa, sb):
        for x, y in zip(wa, wb):
            np.testing.assert_array_equal(x, y)


def test_command_line_trains_with_one_chain_per_replica(image_data_dir, tmp_path):
    """``tf-vrre train --config resghmc --strategy mirrored --cpu-devices 2 --placement
    chain-per-replica``: one chain on each of 2 logical CPUs draws the one-device run's swaps and
    samples for the replica method without control variates (sigma^2 estimated over windows of
    steps; the variance-reduced configs are compared from the command line in
    test_ladder_runs.py and test_multiworker_chains.py); run.json records the replicas, and which
    device held each rung at the end."""
    from _image_runs import cli_flags

    from tf_vrre import cli

    two = subprocess.Popen(
        [sys.executable, os.path.join(HELPERS, "_placement_check.py"), "2", "cli", image_data_dir, tmp_path / "run"]
        + ["resghmc"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert cli.main(cli_flags("resghmc", tmp_path / "one", image_data_dir)) == 0  # meanwhile, on one device
    out, err = two.communicate(timeout=600)
    assert two.returncode == 0, err[-3000:]
    r = json.loads(out.strip().splitlines()[-1])
    assert r["code"] == 0 and r["status"] == "complete", r
    assert r["execution"]["placement"] == "chain_per_replica" and r["execution"]["strategy"] == "mirrored", r
    assert r["execution"]["replicas"] == 2 and len(set(r["execution"]["devices"])) == 2, r
    assert sorted(x["device"] for x in r["rungs"]) == sorted(r["execution"]["devices"]), r
    assert r["samples"] > 0 and r["log_rows"] > 1, r
    a, b = (np.genfromtxt(tmp_path / d / "swaps" / "swaps.csv", delimiter=",", names=True) for d in ("one", "run"))
    assert a.size >= 2
    for column in ("step", "pair", "accepted"):
        np.testing.assert_array_equal(a[column], b[column])
    np.testing.assert_allclose(a["log_ratio"], b["log_ratio"], rtol=1e-5, atol=1e-3)
    sa, sb = tf_vrre.load_samples(tmp_path / "one" / "samples"), tf_vrre.load_samples(tmp_path / "run" / "samples")
    assert sa.steps == sb.steps != []
    for i in range(len(sa)):
        for x, y in zip(sa.weights(i), sb.weights(i)):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
