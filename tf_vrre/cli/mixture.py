"""``tf-vrre mixture``: the paper's Gaussian-mixture study offline (the main job).

    tf-vrre mixture                      # default scenario (N = 1e3), ~3-4 minutes on 2 CPU cores
    tf-vrre mixture --iterations 20000 --seeds 2 --out runs/quick
    tf-vrre mixture --paper              # the paper's Section 5.1 numbers (N = 1e5), reported honestly
    tf-vrre mixture --appendix           # the appendix variant (tau = (1, 500), eta = 1e-5)
"""

import os
import time

from tf_vrre import atomic
from tf_vrre.cli._args import Progress as _Progress
from tf_vrre.cli._args import bounded as _bounded
from tf_vrre.cli._args import die as _die
from tf_vrre.cli._args import fraction as _fraction
from tf_vrre.cli._args import fresh_directory as _fresh_directory
from tf_vrre.cli._args import nonnegative_int as _nonnegative_int
from tf_vrre.cli._args import positive as _positive
from tf_vrre.cli._args import positive_list as _positive_list
from tf_vrre.cli._args import writable as _writable
from tf_vrre.cli._args import write_json as _write_json

METHODS = ("sgld", "resgld", "vr-resgld", "vr-resgld-ladder")  # = tf_vrre.mixture.ALL_METHODS (no TF import here)
OUTPUTS = ("summary.json", "traces.npz", "traces.png", "density.png", "variance.png", "sensitivity.png")
MAX_DATA_SIZE = 10 ** 7   # the data set and the exact-posterior grid live in memory
MAX_STEPS = 10 ** 9
MAX_LOCATION = 1e6        # |beta_0|, |phi|, |true beta| and sigma, prior sd: energies stay finite in float32

# Scenario presets; an explicit flag overrides its entry.  ``correction_re`` is F for reSGLD
# (``correction`` is F for VR-reSGLD and the ladder).
PRESETS = {
    "default": dict(data_size=1000, steps=30000, lr=3e-4, batch=100, m=4, tau1=10.0, tau2=3000.0,
                    correction=2.0, correction_re=None, seeds=3,
                    sens_ratios=(0.02, 0.1, 0.5), sens_lrs=(1e-5, 1e-4, 1e-3)),
    # Section 5.1: m = 40, tau = (10, 1000), eta = 1e-7, F = 1 (VR) / 100 (reSGLD), N = 1e5.
    # n is not stated in the paper; the authors' C code uses 1000.
    "paper": dict(data_size=100000, steps=10000, lr=1e-7, batch=1000, m=40, tau1=10.0, tau2=1000.0,
                  correction=1.0, correction_re=100.0, seeds=2,
                  sens_ratios=(0.001, 0.01, 0.1), sens_lrs=(1e-8, 1e-7, 1e-6)),
    # Appendix: tau = (1, 500), eta = 1e-5, F = 1 (VR) / 500 (reSGLD).
    "appendix": dict(data_size=100000, steps=10000, lr=1e-5, batch=1000, m=40, tau1=1.0, tau2=500.0,
                     correction=1.0, correction_re=500.0, seeds=2,
                     sens_ratios=(0.001, 0.01, 0.1), sens_lrs=(1e-6, 1e-5, 1e-4)),
}
FULL_GRID = 5          # --full: 5 x 5 sensitivity grid ...
FULL_SEEDS = 10        # ... averaged over the paper's 10 realisations


HELP = "SGLD vs reSGLD vs VR-reSGLD on the 1-D Gaussian mixture (offline)"
DESCRIPTION = ("The paper's Section 5.1 study against the exact tempered posterior. "
               "Defaults are the 'default' scenario; --paper / --appendix change them.")


def add_arguments(m):
    """Flags of ``tf-vrre mixture``."""
    scen = m.add_mutually_exclusive_group()
    scen.add_argument("--paper", action="store_true",
                      help="Section 5.1 numbers: N=1e5, m=40, tau=(10,1000), eta=1e-7, F=1 (VR) / 100 (reSGLD)")
    scen.add_argument("--appendix", action="store_true",
                      help="appendix variant: N=1e5, m=40, tau=(1,500), eta=1e-5, F=1 (VR) / 500 (reSGLD)")
    m.add_argument("--data-size", type=_positive(int, MAX_DATA_SIZE),
                   help="N (default 1000; 1e5 with --paper/--appendix; at most 1e7)")
    m.add_argument("--data-seed", type=_nonnegative_int, default=0, help="seed of the data set (default 0, fixed)")
    m.add_argument("--iterations", "--steps", dest="steps", type=_positive(int, MAX_STEPS),
                   help="iterations per method and seed (default 3e4; 1e4 with --paper/--appendix)")
    m.add_argument("--lr", type=_positive(float), help="eta, multiplies the N-scaled gradient (default 3e-4)")
    m.add_argument("--batch", type=_positive(int), help="mini-batch size n (default 100; 1000 for --paper)")
    m.add_argument("--m", type=_positive(int), help="variance/snapshot period m (default 4; 40 for --paper)")
    m.add_argument("--tau1", type=_positive(float), help="cold temperature (default 10)")
    m.add_argument("--tau2", type=_positive(float), help="hot temperature (default 3000)")
    m.add_argument("--correction", type=_positive(float), help="F of VR-reSGLD (and reSGLD unless "
                   "--correction-re; default 2, the unbiased value for Gaussian energy noise)")
    m.add_argument("--correction-re", type=_positive(float), help="F of reSGLD (default: --correction)")
    m.add_argument("--smoothing", type=_positive(float, 1.0), default=0.3, help="gamma in (0, 1] (default 0.3)")
    m.add_argument("--initial", type=_bounded(MAX_LOCATION), default=30.0, help="beta_0 of every chain (default 30)")
    m.add_argument("--phi", type=_bounded(MAX_LOCATION), default=20.0,
                   help="mirror point: components at beta and phi - beta (default 20, the paper's)")
    m.add_argument("--sigma", type=_positive(float, MAX_LOCATION), default=5.0,
                   help="component standard deviation (default 5)")
    m.add_argument("--prior-sd", type=_positive(float, MAX_LOCATION), default=10.0,
                   help="prior sd of beta (default 10)")
    m.add_argument("--true-beta", type=_bounded(MAX_LOCATION), default=-5.0,
                   help="beta the data are drawn at (default -5)")
    m.add_argument("--penalty", choices=("auto", "batch", "offset", "window"), default="auto",
                   help="swap penalty's sigma2 (CorrectedSwap(penalty=...)): auto = batch with VR, the "
                        "paper's window without (default auto)")
    m.add_argument("--seed", type=_nonnegative_int, default=0, help="first chain seed (default 0)")
    m.add_argument("--seeds", type=_positive(int, 1000), help="chain seeds per method: seed, seed+1, ... (default 3)")
    m.add_argument("--methods", default="sgld,resgld,vr-resgld",
                   help="comma-separated subset of sgld,resgld,vr-resgld,vr-resgld-ladder")
    m.add_argument("--ladder-chains", type=_positive(int, 64), default=4,
                   help="K of vr-resgld-ladder (geometric tau1..tau2, default 4)")
    m.add_argument("--burn-in", type=_fraction(), default=0.1, help="fraction of each trace discarded (default 0.1)")
    m.add_argument("--record-every", type=_positive(int), default=10, help="record beta, sigma2 every k steps")
    m.add_argument("--variance-m", type=_positive_list(int, MAX_STEPS), default=(10, 40, 200),
                   help="extra VR-reSGLD periods m for variance.png (default 10,40,200)")
    m.add_argument("--variance-steps", type=_positive(int, MAX_STEPS), default=4000,
                   help="iterations of each extra variance.png run (default 4000)")
    m.add_argument("--sens-ratios", type=_positive_list(float, 1.0), help="n/N values of sensitivity.png, in (0, 1]")
    m.add_argument("--sens-lrs", type=_positive_list(float), help="eta values of sensitivity.png")
    m.add_argument("--sens-seeds", type=_positive(int, 1000), help="seeds averaged per grid point (default 2)")
    m.add_argument("--sens-steps", type=_positive(int, MAX_STEPS), default=300,
                   help="iterations per sensitivity run; sigma2 averaged over the second half (default 300)")
    m.add_argument("--full", action="store_true", help="5 x 5 sensitivity grid averaged over 10 seeds")
    m.add_argument("--out", default=None, help="output directory (default runs/mixture-<timestamp>); results "
                   "are written as each method / seed finishes")
    m.add_argument("--overwrite", action="store_true", help="replace the results of an earlier study in --out")


def _settings(args):
    """Fills unset flags from the chosen preset; returns the scenario name."""
    scenario = "paper" if args.paper else "appendix" if args.appendix else "default"
    preset = PRESETS[scenario]
    for key, value in preset.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if args.correction_re is None:
        args.correction_re = args.correction
    if args.sens_seeds is None:
        args.sens_seeds = FULL_SEEDS if args.full else 2
    if args.full:
        lo_r, hi_r = min(args.sens_ratios), max(args.sens_ratios)
        lo_l, hi_l = min(args.sens_lrs), max(args.sens_lrs)
        import numpy as np

        args.sens_ratios = tuple(float(v) for v in np.geomspace(lo_r, hi_r, FULL_GRID))
        args.sens_lrs = tuple(float(v) for v in np.geomspace(lo_l, hi_l, FULL_GRID))
    return scenario


def check(args):
    """Fills the preset, validates flags that depend on each other and ``--out`` (no TensorFlow)."""
    args.scenario = _settings(args)
    _validate(args)
    args.out = args.out or os.path.join("runs", "mixture-" + time.strftime("%Y%m%d-%H%M%S"))
    _writable(args.out)
    _fresh_directory(args.out, OUTPUTS, args.overwrite)


def _validate(args):
    if args.tau1 >= args.tau2:
        _die(f"--tau1 must be < --tau2 (got {args.tau1} >= {args.tau2})")
    if args.batch > args.data_size:
        _die(f"--batch must be <= --data-size ({args.data_size}), got {args.batch}")
    methods = tuple(t.strip() for t in args.methods.split(",") if t.strip())
    bad = [t for t in methods if t not in METHODS]
    if not methods or bad or len(set(methods)) != len(methods):
        _die(f"--methods must be distinct names from {','.join(METHODS)}, got {args.methods!r}")
    args.methods = methods
    if "vr-resgld-ladder" in methods and args.ladder_chains < 3:
        _die(f"--ladder-chains must be >= 3, got {args.ladder_chains}")
    if args.steps < 20 * args.record_every:
        _die(f"--iterations must be >= 20 * --record-every ({20 * args.record_every}), got {args.steps}")
    if args.sens_steps < 2 * args.m:
        _die(f"--sens-steps must be >= 2 * --m ({2 * args.m}), got {args.sens_steps}")


def _mean_se(values):
    import numpy as np

    v = np.asarray([x for x in values if x is not None], np.float64)
    if v.size == 0:
        return None, None
    return float(v.mean()), (float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else None)


def _beta_chains(rs, burn_in):
    """ESS / R-hat (TFP) of the cold chain's beta after burn-in, seeds as chains, each split in
    halves (one seed: split-R-hat of its halves)."""
    import numpy as np

    from tf_vrre.diagnostics import chain_summary

    traces = [r["beta"][int(len(r["beta"]) * burn_in):] for r in rs]
    n = min(len(t) for t in traces)
    if n < 8:
        return {"beta_ess": None, "beta_rhat": None}
    s = chain_summary(np.stack([t[:n] for t in traces]))
    return {"beta_ess": s["ess"], "beta_rhat": s["rhat"], "beta_draws": n * len(traces)}


def _fmt(value, spec, none="-"):
    return none if value is None else format(value, spec)


class _Study:
    """One ``tf-vrre mixture`` invocation: the exact answer, the runs, the figures, the summary."""

    def __init__(self, args, scenario, out):
        import numpy as np

        from tf_vrre import mixture as mx

        self.args, self.scenario, self.out, self.mx = args, scenario, out, mx
        self.target = mx.Mixture(args.phi, args.sigma, args.prior_sd, args.true_beta)
        self.seeds = [args.seed + i for i in range(args.seeds)]
        self.data = mx.make_data(args.data_size, seed=args.data_seed, target=self.target)
        t = self.target
        grid = mx.default_grid(self.data, args.tau1, target=t)
        u = mx.energy(grid, self.data, target=t)  # once: N = 1e5 makes every grid evaluation cost seconds
        self.grid, self.dens = mx.exact_posterior(self.data, args.tau1, grid, u, target=t)
        _, self.cdf = mx.exact_cdf(self.data, args.tau1, grid, u, target=t)
        self.exact_left, self.exact_right = mx.mode_weights(self.data, args.tau1, grid=grid, u=u, target=t)
        lo, hi = self.grid < t.split, self.grid >= t.split
        self.modes = (float(self.grid[lo][np.argmax(self.dens[lo])]), float(self.grid[hi][np.argmax(self.dens[hi])]))
        self.barrier = mx.barrier(self.data, grid=grid, u=u, target=t)

    def describe(self):
        a, t = self.args, self.target
        print(f"Gaussian mixture ({self.scenario}): phi={t.phi:g}, sigma={t.sigma:g}, prior sd={t.prior_sd:g}, "
              f"N={a.data_size} (data seed {a.data_seed}, beta={t.true_beta:g}), tau=({a.tau1:g}, {a.tau2:g}), "
              f"eta={a.lr:g}, n={a.batch}, m={a.m}, F={a.correction:g} (VR) / {a.correction_re:g} (reSGLD), "
              f"penalty {a.penalty}, {a.steps} iterations, chain seeds {self.seeds}")
        print(f"exact: modes at {self.modes[0]:.2f} and {self.modes[1]:.2f}, weights {self.exact_left:.3f} / "
              f"{self.exact_right:.3f}; barrier at beta={t.split:g}: {self.barrier:.4g} nats = "
              f"{self.barrier / a.tau1:.3g} x tau1 = {self.barrier / a.tau2:.3g} x tau2")

    def run(self, method, seed, steps, label, progress=True, **over):
        a = self.args
        kw = dict(learning_rate=a.lr, batch_size=a.batch, period=a.m, temperatures=(a.tau1, a.tau2),
                  correction=a.correction_re if method == "resgld" else a.correction,
                  smoothing=a.smoothing, initial=a.initial, seed=seed, record_every=a.record_every,
                  num_chains=a.ladder_chains, target=self.target, swap_options={"penalty": a.penalty})
        kw.update(over)
        callbacks = [_Progress(label, steps).callback] if progress else []
        return self.mx.run(method, self.data, steps=steps, callbacks=callbacks, **kw)

    def main_runs(self, runs, on_finished):
        """Every method, every chain seed into ``runs`` (``{method: [run dicts]}``); ``on_finished(runs)``
        after each."""
        for method in self.args.methods:
            for seed in self.seeds:
                runs.setdefault(method, []).append(self.run(method, seed, self.args.steps, f"{method} seed {seed}"))
                on_finished(runs)
        return runs

    def save_partial(self, runs, wall, status="running"):
        """``summary.json`` (``status``, the finished methods / seeds) and ``traces.npz`` (their
        recorded beta and sigma2), both written atomically."""
        arrays = {f"{m}/seed{seed}/{k}": r[k] for m, rs in runs.items() for seed, r in zip(self.seeds, rs)
                  for k in ("beta", "sigma2")}
        atomic.savez(os.path.join(self.out, "traces.npz"), **arrays)
        results = {m: self.aggregate(m, rs) for m, rs in runs.items()}
        _write_json(os.path.join(self.out, "summary.json"), self.summary(results, None, {}, None, wall, status))

    def aggregate(self, method, rs):
        """Per-seed numbers and their mean +- SE across seeds for one method."""
        mx, a, split = self.mx, self.args, self.target.split
        per_seed = []
        for seed, r in zip(self.seeds, rs):
            b = r["beta"][int(len(r["beta"]) * a.burn_in):]
            left, left_bm = mx.left_fraction(b, split)
            sig = r["sigma2"][int(len(r["sigma2"]) * a.burn_in):]
            per_seed.append({
                "seed": seed, "swaps": r.get("swaps"), "attempts": r.get("attempts"),
                "pair_swaps": r.get("pair_swaps"), "temperatures": r.get("temperatures"),
                "accept_rate": (r["swaps"] / r["attempts"]) if r.get("attempts") else None,
                "mean_sigma2": float(sig.mean()) if sig.size else None,
                "left_mode_weight": left, "left_mode_weight_batch_means_se": left_bm,
                "mode_changes": mx.mode_changes(r["beta"], split),
                "ks": mx.ks_distance(b, self.grid, self.cdf), "seconds": r["seconds"]})
        agg = {}
        for key in ("swaps", "accept_rate", "mean_sigma2", "left_mode_weight", "mode_changes", "ks"):
            agg[key], agg[key + "_se"] = _mean_se([p[key] for p in per_seed])
        agg["seconds"] = float(sum(p["seconds"] for p in per_seed))
        agg.update(_beta_chains(rs, a.burn_in))
        agg["per_seed"] = per_seed
        return agg

    def variance_runs(self, runs):
        """variance.png curves (reSGLD and VR-reSGLD at several m) and mean sigma2 by m."""
        a = self.args
        curves = []
        if "resgld" in runs:
            curves.append((f"reSGLD (F={a.correction_re:g})", "resgld", runs["resgld"][0]["sigma2"]))
        if "vr-resgld" in runs:
            curves.append((f"VR-reSGLD m={a.m}", "vr-resgld", runs["vr-resgld"][0]["sigma2"]))
        variance_m = {}
        for period in a.variance_m:
            if period == a.m and "vr-resgld" in runs:
                continue
            s2 = self.run("vr-resgld", self.seeds[0], a.variance_steps, f"variance m={period}", period=period)["sigma2"]
            variance_m[str(period)] = float(s2[len(s2) // 10:].mean())
            curves.append((f"VR-reSGLD m={period}", "vr-resgld", s2))
        horizon = a.variance_steps // a.record_every
        return [(lab, meth, s[:horizon]) for lab, meth, s in curves], variance_m

    def sensitivity(self):
        """log10 sigma2 of VR-reSGLD over (n/N, eta): ``[len(lrs), len(ratios)]``."""
        import numpy as np

        a = self.args
        sens = np.zeros((len(a.sens_lrs), len(a.sens_ratios)))
        bar, done = _Progress("sensitivity grid", len(a.sens_ratios) * len(a.sens_lrs) * a.sens_seeds), 0
        for j, ratio in enumerate(a.sens_ratios):
            n = max(1, int(round(ratio * a.data_size)))
            for i, lr in enumerate(a.sens_lrs):
                vals = []
                for seed in self.seeds[:1] + [self.seeds[0] + 1000 + k for k in range(a.sens_seeds - 1)]:
                    r = self.run("vr-resgld", seed, a.sens_steps, "", progress=False, batch_size=n,
                                 learning_rate=lr, record_every=1, jit_compile=False)  # short: no XLA compile
                    vals.append(float(r["sigma2"][len(r["sigma2"]) // 2:].mean()))
                    done += 1
                    bar.update(done)
                sens[i, j] = float(np.log10(np.mean(vals)))
        return sens

    def figures(self, runs, curves, sens):
        import numpy as np

        from tf_vrre import mixture_plots as plots

        a, out, mx = self.args, self.out, self.mx
        title = (f"N={a.data_size}, tau=({a.tau1:g},{a.tau2:g}), eta={a.lr:g}, n={a.batch}, "
                 f"m={a.m}, F={a.correction:g}/{a.correction_re:g}")
        plots.traces(os.path.join(out, "traces.png"), {k: v[0]["beta"] for k, v in runs.items()},
                     a.record_every, self.modes, self.exact_left,
                     title=f"Cold-chain traces (seed {self.seeds[0]}): {title}")
        pooled = {k: np.concatenate([r["beta"][int(len(r["beta"]) * a.burn_in):] for r in v])
                  for k, v in runs.items()}
        plots.density(os.path.join(out, "density.png"), pooled, self.grid, self.dens,
                      {k: mx.ks_distance(v, self.grid, self.cdf) for k, v in pooled.items()},
                      title=f"Cold chain ({len(self.seeds)} seeds pooled) vs exact posterior at tau1={a.tau1:g}")
        if curves:
            plots.variance(os.path.join(out, "variance.png"), curves, a.record_every,
                           title=f"log10 sigma2 (seed {self.seeds[0]}): N={a.data_size}, eta={a.lr:g}, "
                                 f"n={a.batch}")
        plots.sensitivity(os.path.join(out, "sensitivity.png"), a.sens_ratios, a.sens_lrs, sens,
                          title=f"VR-reSGLD log10 sigma2, m={a.m}, {a.sens_steps} its, {a.sens_seeds} seeds")

    def summary(self, results, factor, variance_m, sens, wall, status="complete"):
        a = self.args
        finished = [[m, seed] for m, r in results.items() for seed in self.seeds[:len(r["per_seed"])]]
        sensitivity = None if sens is None else {"ratios": list(a.sens_ratios), "lrs": list(a.sens_lrs),
                                                 "log10_sigma2": sens.tolist()}
        return {
            "status": status,
            "finished": finished,
            "scenario": self.scenario,
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(a).items()
                       if k not in ("command", "scenario")} | {"out": self.out},
            "target": self.target._asdict(),
            "chain_seeds": self.seeds,
            "exact": {"mode_weights": [self.exact_left, self.exact_right], "modes": list(self.modes),
                      "barrier_nats": self.barrier, "barrier_over_tau1": self.barrier / a.tau1,
                      "barrier_over_tau2": self.barrier / a.tau2},
            "variance_reduction_factor": factor,
            "methods": results,
            "variance_by_m": variance_m,
            "sensitivity": sensitivity,
            "wall_seconds": wall,
        }


def _print_table(study, results, factor, variance_m, wrote):
    a = study.args
    print(f"\n{len(study.seeds)} chain seeds; mean +- standard error across seeds; weights after {a.burn_in:.0%} "
          f"burn-in")
    print(f"{'method':<17}{'swaps':>8}{'accept':>9}{'mean sigma2':>13}{'mode changes':>14}"
          f"{'left-mode weight':>19}{'KS':>16}{'ESS(beta)':>10}{'R-hat':>7}{'time':>8}")
    for method, r in results.items():
        w = f"{r['left_mode_weight']:.3f} +- {_fmt(r['left_mode_weight_se'], '.3f')}"
        ks = f"{r['ks']:.3f} +- {_fmt(r['ks_se'], '.3f')}"
        print(f"{method:<17}{_fmt(r['swaps'], '.0f'):>8}{_fmt(r['accept_rate'], '.4f'):>9}"
              f"{_fmt(r['mean_sigma2'], '.4g'):>13}{r['mode_changes']:>14.1f}{w:>19}{ks:>16}"
              f"{_fmt(r['beta_ess'], '.0f'):>10}{_fmt(r['beta_rhat'], '.2f'):>7}{r['seconds']:>7.1f}s")
    print(f"{'exact':<17}{'':>8}{'':>9}{'':>13}{'':>14}{study.exact_left:>19.3f}{0:>16.3f}")
    print(f"ESS(beta), R-hat: tfp.mcmc on the recorded cold-chain beta (every {a.record_every} steps) after "
          "burn-in, seeds as chains split in halves")
    if factor is not None:
        print(f"variance reduction factor (reSGLD sigma2 / VR sigma2): {factor:.1f}")
    if variance_m:
        print("VR-reSGLD mean sigma2 by m: " + ", ".join(f"m={k}: {v:.4g}" for k, v in variance_m.items()))
    print(wrote)


def run(args):
    """Runs the study (after :func:`check`); writes results as each method / seed finishes."""
    t_start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    study = _Study(args, args.scenario, args.out)
    study.describe()
    runs = {}
    try:
        study.main_runs(runs, lambda r: study.save_partial(r, time.perf_counter() - t_start))
        results = {method: study.aggregate(method, rs) for method, rs in runs.items()}
        factor = None
        if "resgld" in results and "vr-resgld" in results and results["vr-resgld"]["mean_sigma2"]:
            factor = results["resgld"]["mean_sigma2"] / results["vr-resgld"]["mean_sigma2"]
        curves, variance_m = study.variance_runs(runs)
        sens = study.sensitivity()
        study.figures(runs, curves, sens)
    except KeyboardInterrupt:
        if runs:
            study.save_partial(runs, time.perf_counter() - t_start, status="interrupted")
        raise
    wall = time.perf_counter() - t_start
    _write_json(os.path.join(args.out, "summary.json"), study.summary(results, factor, variance_m, sens, wall))
    _print_table(study, results, factor, variance_m,
                 f"wall time {wall:.1f}s; wrote summary.json, traces.npz, traces.png, density.png, "
                 f"{'variance.png, ' if curves else ''}sensitivity.png to {args.out}")
    return 0
