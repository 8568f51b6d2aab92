"""`tf-vrre mixture`, shortened: the study's claims hold and every output file is written.

Two short studies.  The default scenario's dynamics with fewer iterations, one chain seed and a
2 x 2 sensitivity grid: every file, the summary's numbers recomputed from the written traces
and the exact answers recomputed by quadrature (``_mixture_exact``), variance reduction.  And
VR-reSGLD alone on a smaller target whose cold chain changes mode often, over 4 chain seeds:
its left-mode weight against the exact one within 4 standard errors."""

import json

import _mixture_exact
import numpy as np
import pytest
from scipy import stats

from tf_vrre import cli, diagnostics
from tf_vrre.workflows.gaussian_mixture import target

SHORT = [
    "--iterations",
    "6000",
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
# N = 100, prior sd 3.5: the left mode's exact weight is 0.909 at tau1 = 10; the cold chain
# (barrier ~35 nats) changes mode only through swaps with the hot chain (tau2 = 1000), dozens of
# times per seed.  --variance-m 4 is --m: no extra variance runs.
WEIGHTS = [
    "--methods", "vr-resgld", "--iterations", "3000", "--seeds", "4", "--seed", "0",
    "--data-size", "100", "--prior-sd", "3.5", "--tau2", "1000", "--lr", "3e-2", "--batch", "50",
    "--variance-m", "4", "--sens-ratios", "0.5", "--sens-lrs", "3e-2", "--sens-seeds", "1", "--sens-steps", "20",
]  # fmt: skip


def _study(flags, out):
    assert cli.main(["mixture", *flags, "--out", str(out), "--quiet"]) == 0
    return out, json.load(open(out / "summary.json"))


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    return _study(SHORT, tmp_path_factory.mktemp("mixture"))


@pytest.fixture(scope="module")
def weight_study(tmp_path_factory):
    return _study(WEIGHTS, tmp_path_factory.mktemp("mixture_weights"))


def _data(summary):
    """The study's data set, target and cold temperature (from its summary)."""
    config, mixture = summary["config"], target.Mixture(**summary["target"])
    return target.make_data(config["data_size"], seed=config["data_seed"], target=mixture), mixture, config["tau1"]


def _exact_weights(summary):
    data, mixture, tau1 = _data(summary)
    return _mixture_exact.mode_weights(data, tau1, mixture.phi, mixture.sigma, mixture.prior_sd)


def _traces(out, summary, method):
    """Each seed's recorded cold-chain beta (``traces.npz``), whole and after the burn-in."""
    with np.load(out / "traces.npz") as z:
        whole = [z[f"{method}/seed{seed}/beta"] for seed in summary["chain_seeds"]]
    return whole, [t[int(len(t) * summary["config"]["burn_in"]) :] for t in whole]


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
    data, mixture, _ = _data(summary)
    assert summary["exact"]["mode_weights"] == pytest.approx(_exact_weights(summary), abs=1e-6)
    barrier = _mixture_exact.barrier(data, mixture.phi, mixture.sigma, mixture.prior_sd)
    assert summary["exact"]["barrier_nats"] == pytest.approx(barrier, rel=1e-6)


def test_per_method_summary_fields(short_run):
    """Each method's numbers are those of its written traces: weight, mode changes, KS distance to
    the exact CDF (scipy), ESS / R-hat of beta (seeds as chains, split halves)."""
    out, summary = short_run
    assert summary["chain_seeds"] == [1]  # --seed 1 --seeds 1
    data, mixture, tau1 = _data(summary)
    grid, cdf = target.exact_cdf(data, tau1, target=mixture)
    for method, r in summary["methods"].items():
        whole, kept = _traces(out, summary, method)
        for seed, trace, after, got in zip(summary["chain_seeds"], whole, kept, r["per_seed"]):
            assert got["seed"] == seed and got["left_mode_weight"] == np.mean(after < mixture.split), method
            assert got["mode_changes"] == target.mode_changes(trace, mixture.split), method
            ks = stats.kstest(after, lambda v: np.interp(v, grid, cdf)).statistic
            assert got["ks"] == pytest.approx(ks, abs=1e-9), method
        s = diagnostics.chain_summary(np.stack(kept))
        assert (r["beta_ess"], r["beta_rhat"], r["beta_draws"]) == (s["ess"], s["rhat"], len(kept) * len(kept[0]))
    vr = summary["methods"]["vr-resgld"]
    assert vr["beta_ess"] < 0.2 * vr["beta_draws"], vr  # mode changes make VR's ESS a small fraction


def test_vr_swaps_more_and_reduces_variance_at_equal_f(short_run):
    _, summary = short_run
    assert summary["config"]["correction"] == summary["config"]["correction_re"]
    vr, re = summary["methods"]["vr-resgld"], summary["methods"]["resgld"]
    assert vr["swaps"] > re["swaps"], (vr["swaps"], re["swaps"])
    assert summary["variance_reduction_factor"] >= 10, summary["variance_reduction_factor"]


def test_vr_cold_chain_visits_both_modes_and_sgld_does_not(short_run):
    _, summary = short_run
    vr, sgld = summary["methods"]["vr-resgld"], summary["methods"]["sgld"]
    assert vr["mode_changes"] >= 2, vr
    assert sgld["left_mode_weight"] in (0.0, 1.0) and sgld["mode_changes"] == 0, sgld
    assert vr["ks"] < sgld["ks"]


def test_vr_cold_chain_samples_the_exact_mode_weight(weight_study):
    """The study's left-mode weight (mean over 4 chain seeds, with its standard error across
    seeds) equals the exact one (quadrature) within 4 standard errors: the seeds' one, or their
    pooled batch-means one where that is larger (4 seeds' spread may come out small by chance).
    That error is small enough to tell the exact weight from 1/2 (the prior ignored by the swaps,
    or a cold chain as hot as the hot one)."""
    _, summary = weight_study
    vr, (exact, _) = summary["methods"]["vr-resgld"], _exact_weights(summary)
    per_seed = np.array([p["left_mode_weight"] for p in vr["per_seed"]])
    assert per_seed.size == 4 and min(p["mode_changes"] for p in vr["per_seed"]) >= 4, vr["per_seed"]
    mean, seeds_se = vr["left_mode_weight"], vr["left_mode_weight_se"]
    assert (mean, seeds_se) == pytest.approx((per_seed.mean(), per_seed.std(ddof=1) / 2), rel=1e-12)
    batch_se = np.sqrt(sum(p["left_mode_weight_batch_means_se"] ** 2 for p in vr["per_seed"])) / per_seed.size
    se = max(seeds_se, batch_se)
    assert 4 * se < exact - 0.5, (per_seed, se)
    assert abs(mean - exact) <= 4 * se, (mean, se, exact, per_seed)


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
