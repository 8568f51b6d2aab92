"""Behaviour guard: short runs reproduce pinned states; files written by older code load and resume.

``tests/fixtures/pinned_state.npz`` holds every variable (all chains, snapshots, velocities,
sigma^2, counters, swap record) after 3 epochs of each configuration in ``_pinned_runs.py``.
It was first written by the code of commit 2d968d7 and matched bit for bit by the reshaped
sampler; it was rewritten twice since, when the Langevin noise moved to TensorFlow
Probability draws and when every draw of the step became independent of XLA
(:mod:`tf_vrre.sgmcmc.seeds`; other numbers, same invariants).  Swap decisions and counters must match
exactly; float state to 1e-6 relative (bit-identical on the machine that wrote the fixtures).

The ``.keras`` file and the ``BackupAndRestore`` checkpoint were written by the code of commit
2d968d7 after 2 epochs; ``vr_sghmc_cached_2epochs_state.npz`` is that state as that code loads it.
Today's code must load every variable exactly, and continue from the file (or resume from the
checkpoint) exactly as from that state.
"""

import os
import shutil

import _pinned_runs
import keras
import numpy as np
import pytest


@pytest.fixture(scope="module")
def pinned():
    with np.load(os.path.join(_pinned_runs.FIXTURES, "pinned_state.npz")) as z:
        return {k: z[k] for k in z.files}


def _expected(pinned, name):
    return {k.split(":", 1)[1]: v for k, v in pinned.items() if k.startswith(name + ":")}


def _compare(got, want):
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        g = got[key]
        assert g.shape == w.shape and g.dtype == w.dtype, key
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=key)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=key)


@pytest.mark.parametrize("name", _pinned_runs.CONFIGS)
def test_run_reproduces_pinned_state(pinned, name):
    _compare(_pinned_runs.state(_pinned_runs.run(name)), _expected(pinned, name))


def _swap_decisions(state):
    log = state["state/swap_log"]
    return log[log[:, 0] >= 0]


@pytest.mark.parametrize("name", [c for c in _pinned_runs.CONFIGS if c != "msgd_single"])
def test_swap_decisions_are_exactly_the_pinned_ones(pinned, name):
    want = _swap_decisions(_expected(pinned, name))
    got = _swap_decisions(_pinned_runs.state(_pinned_runs.run(name)))
    pairs = (want.shape[1] - 5) // 8  # columns: 3 + 7 per pair + K coefficients + F, K = pairs + 1
    flags = [0, 1, 2] + [3 + 7 * p + j for p in range(pairs) for j in (0, 1)]  # step, updated, refreshed,
    # then proposed / accepted per pair
    np.testing.assert_array_equal(got[:, flags], want[:, flags])


def _continued_from(state, epochs=1):
    """A fresh sampler of the cached VR configuration set to ``state``, trained ``epochs`` more."""
    s, _ = _pinned_runs.build("vr_sghmc_cached")
    _pinned_runs.assign_state(s, state)
    return _pinned_runs.run("vr_sghmc_cached", epochs=epochs, sampler=s)


@pytest.fixture(scope="module")
def old_state():
    """Every variable of the 2-epoch ``.keras`` fixture as the code that wrote it loads it."""
    with np.load(os.path.join(_pinned_runs.FIXTURES, "vr_sghmc_cached_2epochs_state.npz")) as z:
        return {k: z[k] for k in z.files}


def test_keras_file_written_before_the_reshape_loads_and_continues(old_state):
    s = keras.saving.load_model(os.path.join(_pinned_runs.FIXTURES, "vr_sghmc_cached_2epochs.keras"))
    assert int(s.state.step.numpy()) == 8 and s.swap_penalty == "window"  # the rule it was trained with
    loaded = _pinned_runs.state(s)
    assert sorted(loaded) == sorted(old_state)
    for key, value in old_state.items():
        np.testing.assert_array_equal(loaded[key], value, err_msg=key)
    s.set_reference_data(_pinned_runs.data())
    _pinned_runs.run("vr_sghmc_cached", epochs=1, sampler=s)
    _compare(_pinned_runs.state(s), _pinned_runs.state(_continued_from(old_state)))


def test_backup_written_before_the_reshape_resumes(old_state, tmp_path):
    backup = tmp_path / "backup"
    shutil.copytree(os.path.join(_pinned_runs.FIXTURES, "vr_sghmc_cached_backup"), backup)
    s = _pinned_runs.run("vr_sghmc_cached", callbacks=[keras.callbacks.BackupAndRestore(str(backup))])
    assert int(s.state.step.numpy()) == 12
    _compare(_pinned_runs.state(s), _pinned_runs.state(_continued_from(old_state)))
