"""`tf-vrre mixture`, shortened: the study's claims hold and every output file is written.

One chain seed, the default scenario's dynamics with fewer iterations, a 2 x 2 sensitivity grid
of short runs.  Assertions read the written summary.json (nothing is hard-coded)."""

import json

import numpy as np
import pytest

from tf_vrre import cli
from tf_vrre.workflows.gaussian_mixture import target

SHORT = [
    "--iterations",
    "12000",
    "--seeds",
    "1",
    "--seed",
    "1",
    "--variance-m",
    "40",
    "--variance-steps",
    "400",
    "--sens-ratios",
    "0.05,0.5",
    "--sens-lrs",
    "1e-5,1e-3",
    "--sens-seeds",
    "1",
    "--sens-steps",
    "60",
]


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mixture")
    assert cli.main(["mixture", *SHORT, "--out", str(out)]) == 0
    return out, json.load(open(out / "summary.json"))


def test_every_output_file_is_written_and_readable(short_run):
    import matplotlib.image as mpimg

    out, summary = short_run
    for name in ("traces.png", "density.png", "variance.png", "sensitivity.png"):
        img = mpimg.imread(out / name)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100, (name, img.shape)
        assert img[..., :3].std() > 0.01, name  # not blank
    assert set(summary["methods"]) == {"sgld", "resgld", "vr-resgld"}
    assert np.isfinite(np.asarray(summary["sensitivity"]["log10_sigma2"])).all()
    assert len(summary["sensitivity"]["log10_sigma2"]) == 2
    assert set(summary["variance_by_m"]) == {"40"}
    assert 0 < summary["exact"]["mode_weights"][0] < 1
    assert summary["exact"]["barrier_nats"] > 1000


def test_per_method_summary_fields(short_run):
    _, summary = short_run
    for method, r in summary["methods"].items():
        assert 0 <= r["ks"] <= 1 and 0 <= r["left_mode_weight"] <= 1, method
        assert r["per_seed"][0]["seed"] == 1
        # ESS / R-hat of beta (one seed: split halves); mode changes make VR's ESS a small fraction
        assert 1 <= r["beta_ess"] <= 2 * r["beta_draws"] and 0.9 < r["beta_rhat"] < 50, (method, r)
    vr = summary["methods"]["vr-resgld"]
    assert vr["beta_ess"] < 0.2 * vr["beta_draws"], vr


def test_vr_swaps_more_and_reduces_variance_at_equal_f(short_run):
    _, summary = short_run
    assert summary["config"]["correction"] == summary["config"]["correction_re"]
    vr, re = summary["methods"]["vr-resgld"], summary["methods"]["resgld"]
    assert vr["swaps"] > re["swaps"], (vr["swaps"], re["swaps"])
    assert summary["variance_reduction_factor"] >= 10, summary["variance_reduction_factor"]


def test_vr_cold_chain_visits_both_modes_and_sgld_does_not(short_run):
    _, summary = short_run
    vr, sgld = summary["methods"]["vr-resgld"], summary["methods"]["sgld"]
    assert 0.05 < vr["left_mode_weight"] < 0.95 and vr["mode_changes"] >= 2, vr
    assert sgld["left_mode_weight"] in (0.0, 1.0) and sgld["mode_changes"] == 0, sgld
    assert vr["ks"] < sgld["ks"]


def test_sensitivity_grid_follows_the_bound(short_run):
    """sigma2 of the VR estimator grows with eta and shrinks with n/N (O(m^2 eta / n))."""
    _, summary = short_run
    z = np.asarray(summary["sensitivity"]["log10_sigma2"])  # [eta, n/N]
    assert z[1, 0] > z[0, 0] and z[1, 1] > z[0, 1]
    assert z[0, 0] > z[0, 1] and z[1, 0] > z[1, 1]


def test_ks_distance_and_cdf():
    data = target.make_data(1000, seed=0)
    grid, cdf = target.exact_cdf(data, 10.0)
    assert cdf[0] == 0 and cdf[-1] == pytest.approx(1) and np.all(np.diff(cdf) >= 0)
    rng = np.random.default_rng(0)
    exact = np.interp(rng.random(4000), cdf, grid)  # inverse-CDF draws from the exact posterior
    assert target.ks_distance(exact, grid, cdf) < 0.03
    one_mode = exact[exact > 10]
    left, _ = target.mode_weights(data, 10.0)
    assert target.ks_distance(one_mode, grid, cdf) == pytest.approx(left, abs=0.03)
    assert target.mode_changes([25, 24, -5, -4, 9, 11, 25, 26]) == 2
    frac, se = target.left_fraction(np.r_[np.full(500, -5.0), np.full(500, 25.0)])
    assert frac == 0.5 and se > 0


def test_ladder_method_runs_k_chains():
    data = target.make_data(300, seed=0)
    r = target.run(
        "vr-resgld-ladder", data, steps=200, batch_size=50, temperatures=(10.0, 1000.0), num_chains=3, record_every=10
    )
    assert r["temperatures"] == pytest.approx([10.0, 100.0, 1000.0], rel=1e-5)
    assert len(r["pair_swaps"]) == 2 and r["attempts"] > 0


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--lr", "-1e-4"], "--lr"),
        (["--tau1", "10", "--tau2", "10"], "--tau1"),
        (["--paper", "--tau1", "2000"], "--tau1"),
        (["--burn-in", "1.5"], "--burn-in"),
        (["--methods", "sgld,bogus"], "--methods"),
        (["--sens-ratios", "0.1,2"], "--sens-ratios"),
        (["--sens-lrs", "1e-4,-1"], "--sens-lrs"),
        (["--variance-m", "0"], "--variance-m"),
        (["--iterations", "0"], "--iterations"),
        (["--seeds", "0"], "--seeds"),
        (["--data-seed", "-3"], "--data-seed"),
        (["--methods", "vr-resgld-ladder", "--ladder-chains", "2"], "--ladder-chains"),
        (["--paper", "--appendix"], "--appendix"),
    ],
)
def test_bad_flags_exit_2_with_one_line(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["mixture", *flags, "--out", str(tmp_path / "x")])
    assert exc.value.code == 2
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert message in lines[-1] and "error" in lines[-1], lines


def test_unwritable_out_exits_2(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(SystemExit) as exc:
        cli.main(["mixture", "--out", str(blocker / "sub")])
    assert exc.value.code == 2
    assert "--out" in capsys.readouterr().err.strip().splitlines()[-1]


def test_refined_grid_for_large_n_matches_uniform_grid():
    data = target.make_data(3000, seed=0)
    grid = target.default_grid(data, 10.0)
    assert grid.size < 24001 and np.all(np.diff(grid) > 0)  # coarse + refined pieces
    left, _ = target.mode_weights(data, 10.0, grid=grid)
    uniform, _ = target.mode_weights(data, 10.0, grid=np.linspace(-20, 40, 24001))
    assert left == pytest.approx(uniform, abs=1e-3)
    assert target.barrier(data, grid=grid) == pytest.approx(
        target.barrier(data, grid=np.linspace(-20, 40, 24001)), rel=1e-3
    )
