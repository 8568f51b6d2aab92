"""ArviZ bridge: a run's samples and swap log as InferenceData, values traced back to the files."""

import json
import os
import sys

import numpy as np
import pytest

from tf_vrre import diagnostics

az = pytest.importorskip("arviz")


def test_runs_as_chains_with_samples(diag_runs):
    idata = diagnostics.to_inference_data(diag_runs, burn_in=0.2)
    post, stats = idata.posterior, idata.sample_stats
    entries = [json.load(open(os.path.join(r, "samples", "manifest.json")))["entries"] for r in diag_runs]
    cut = 0.2 * 96
    kept = [[e for e in es if e["step"] >= cut] for es in entries]
    n = min(len(k) for k in kept)
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == n and post.sizes["point"] == 4
    np.testing.assert_allclose(post["energy"].values, [[e["energy"] for e in k[:n]] for k in kept])
    np.testing.assert_allclose(stats["lp"].values, -post["energy"].values / stats["temperature"].values)
    assert np.all((post["predictive"].values > 0) & (post["predictive"].values <= 1))
    assert post.attrs["predictive_classes"] and post.attrs["runs"] == list(diag_runs)
    # cold_state / swaps from the swap log: the state holding slot 0 after the sample's last step
    log = diagnostics.read_swap_log(os.path.join(diag_runs[0], "swaps"))
    times, slots = diagnostics.slot_paths(log.swaps["step"], log.swaps["pair"], log.swaps["accepted"], 3)
    for step, cold in zip(stats["step"].values[0], stats["cold_state"].values[0]):
        e = np.searchsorted(times, step - 1, side="right") - 1
        assert slots[e, cold] == 0
    acc0 = log.swaps["step"][(log.swaps["pair"] == 0) & (log.swaps["accepted"] == 1)]
    last = stats["step"].values[0, -1]
    assert stats["swaps"].values[0].sum() == np.sum((acc0 >= cut) & (acc0 < last))
    summary = az.summary(idata, var_names=["energy", "predictive"])
    assert {"ess_bulk", "r_hat"} <= set(summary.columns) and len(summary) == 5


def test_swap_log_only_run(diag_runs):
    swaps = os.path.join(diag_runs[1], "swaps")
    idata = diagnostics.to_inference_data(swaps, burn_in=0.0)
    log = diagnostics.read_swap_log(swaps)
    m = log.swaps["pair"] == 0
    np.testing.assert_allclose(idata.posterior["cold_energy"].values[0], log.swaps["energy_lo"][m])
    np.testing.assert_array_equal(idata.sample_stats["accepted"].values[0], log.swaps["accepted"][m])
    assert set(idata.sample_stats.data_vars) == {"step", "cold_state", "accepted", "accept_prob", "log_ratio"}


def test_errors(diag_runs, monkeypatch):
    with pytest.raises(ValueError, match="either every run has samples"):
        diagnostics.to_inference_data([diag_runs[0], os.path.join(diag_runs[1], "swaps")])
    with pytest.raises(ValueError, match="burn_in"):
        diagnostics.to_inference_data(diag_runs[0], burn_in=-0.1)
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r"tf_vrre\[arviz\]"):
        diagnostics.to_inference_data(diag_runs[0])
