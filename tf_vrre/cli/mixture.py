"""``tf-vrre mixture``: the paper's Gaussian-mixture study offline (the main job).

    tf-vrre mixture                      # default scenario (N = 1e3), ~3-4 minutes on 2 CPU cores
    tf-vrre mixture --iterations 20000 --seeds 2 --out runs/quick
    tf-vrre mixture --paper              # the paper's Section 5.1 numbers (N = 1e5), reported honestly
    tf-vrre mixture --appendix           # the appendix variant (tau = (1, 500), eta = 1e-5)
"""

import json
import os
import time

from tf_vrre.cli._args import Progress as _Progress
from tf_vrre.cli._args import die as _die
from tf_vrre.cli._args import nonnegative_int as _nonnegative_int
from tf_vrre.cli._args import positive as _positive
from tf_vrre.cli._args import positive_list as _positive_list
from tf_vrre.cli._args import writable as _writable

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
    m.add_argument("--data-size", type=_positive(int), help="N (default 1000; 1e5 with --paper/--appendix)")
    m.add_argument("--data-seed", type=_nonnegative_int, default=0, help="seed of the data set (default 0, fixed)")
    m.add_argument("--iterations", "--steps", dest="steps", type=_positive(int),
                   help="iterations per method and seed (default 3e4; 1e4 with --paper/--appendix)")
    m.add_argument("--lr", type=_positive(float), help="eta, multiplies the N-scaled gradient (default 3e-4)")
    m.add_argument("--batch", type=_positive(int), help="mini-batch size n (default 100; 1000 for --paper)")
    m.add_argument("--m", type=_positive(int), help="variance/snapshot period m (default 4; 40 for --paper)")
    m.add_argument("--tau1", type=_positive(float), help="cold temperature (default 10)")
    m.add_argument("--tau2", type=_positive(float), help="hot temperature (default 3000)")
    m.add_argument("--correction", type=_positive(float), help="F of VR-reSGLD (and reSGLD unless "
                   "--correction-re; default 2, the unbiased value for Gaussian energy noise)")
    m.add_argument("--correction-re", type=_positive(float), help="F of reSGLD (default: --correction)")
    m.add_argument("--smoothing", type=_positive(float), default=0.3, help="gamma in (0, 1] (default 0.3)")
    m.add_argument("--initial", type=float, default=30.0, help="beta_0 of every chain (default 30)")
    m.add_argument("--seed", type=_nonnegative_int, default=0, help="first chain seed (default 0)")
    m.add_argument("--seeds", type=_positive(int), help="chain seeds per method: seed, seed+1, ... (default 3)")
    m.add_argument("--methods", default="sgld,resgld,vr-resgld",
                   help="comma-separated subset of sgld,resgld,vr-resgld,vr-resgld-ladder")
    m.add_argument("--ladder-chains", type=_positive(int), default=4,
                   help="K of vr-resgld-ladder (geometric tau1..tau2, default 4)")
    m.add_argument("--burn-in", type=float, default=0.1, help="fraction of each trace discarded (default 0.1)")
    m.add_argument("--record-every", type=_positive(int), default=10, help="record beta, sigma2 every k steps")
    m.add_argument("--variance-m", type=_positive_list(int), default=(10, 40, 200),
                   help="extra VR-reSGLD periods m for variance.png (default 10,40,200)")
    m.add_argument("--variance-steps", type=_positive(int), default=4000,
                   help="iterations of each extra variance.png run (default 4000)")
    m.add_argument("--sens-ratios", type=_positive_list(float), help="n/N values of sensitivity.png")
    m.add_argument("--sens-lrs", type=_positive_list(float), help="eta values of sensitivity.png")
    m.add_argument("--sens-seeds", type=_positive(int), help="seeds averaged per grid point (default 2)")
    m.add_argument("--sens-steps", type=_positive(int), default=300,
                   help="iterations per sensitivity run; sigma2 averaged over the second half (default 300)")
    m.add_argument("--full", action="store_true", help="5 x 5 sensitivity grid averaged over 10 seeds")
    m.add_argument("--out", default=None, help="output directory (default runs/mixture-<timestamp>)")


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


def _validate(args):
    from tf_vrre import mixture as mx

    if args.tau1 >= args.tau2:
        _die(f"--tau1 must be < --tau2 (got {args.tau1} >= {args.tau2})")
    if not 0 < args.smoothing <= 1:
        _die(f"--smoothing must be in (0, 1], got {args.smoothing}")
    if args.batch > args.data_size:
        _die(f"--batch must be <= --data-size ({args.data_size}), got {args.batch}")
    if not 0 <= args.burn_in < 1:
        _die(f"--burn-in must be in [0, 1), got {args.burn_in}")
    methods = tuple(t.strip() for t in args.methods.split(",") if t.strip())
    bad = [t for t in methods if t not in mx.ALL_METHODS]
    if not methods or bad or len(set(methods)) != len(methods):
        _die(f"--methods must be distinct names from {','.join(mx.ALL_METHODS)}, got {args.methods!r}")
    args.methods = methods
    if "vr-resgld-ladder" in methods and args.ladder_chains < 3:
        _die(f"--ladder-chains must be >= 3, got {args.ladder_chains}")
    if any(r > 1 for r in args.sens_ratios):
        _die(f"--sens-ratios must be in (0, 1], got {args.sens_ratios}")
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


def run(args):
    """Runs the study; returns the exit status."""
    scenario = _settings(args)
    _validate(args)
    out = args.out or os.path.join("runs", "mixture-" + time.strftime("%Y%m%d-%H%M%S"))
    _writable(out)

    import numpy as np

    from tf_vrre import mixture as mx
    from tf_vrre import mixture_plots as plots

    t_start = time.perf_counter()
    data = mx.make_data(args.data_size, seed=args.data_seed)
    split = mx.PHI / 2
    grid = mx.default_grid(data, args.tau1)
    u = mx.energy(grid, data)  # once: N = 1e5 makes every evaluation on the grid cost seconds
    grid, dens = mx.exact_posterior(data, args.tau1, grid, u)
    _, cdf = mx.exact_cdf(data, args.tau1, grid, u)
    exact_left, exact_right = mx.mode_weights(data, args.tau1, grid=grid, u=u)
    modes = (float(grid[grid < split][np.argmax(dens[grid < split])]),
             float(grid[grid >= split][np.argmax(dens[grid >= split])]))
    barrier = mx.barrier(data, grid=grid, u=u)
    seeds = [args.seed + i for i in range(args.seeds)]
    print(f"Gaussian mixture ({scenario}): N={args.data_size} (data seed {args.data_seed}), "
          f"tau=({args.tau1:g}, {args.tau2:g}), eta={args.lr:g}, n={args.batch}, m={args.m}, "
          f"F={args.correction:g} (VR) / {args.correction_re:g} (reSGLD), {args.steps} iterations, "
          f"chain seeds {seeds}")
    print(f"exact: modes at {modes[0]:.2f} and {modes[1]:.2f}, weights {exact_left:.3f} / {exact_right:.3f}; "
          f"barrier at beta=10: {barrier:.4g} nats = {barrier / args.tau1:.3g} x tau1 = "
          f"{barrier / args.tau2:.3g} x tau2")

    def run(method, seed, steps, label, progress=True, **over):
        kw = dict(learning_rate=args.lr, batch_size=args.batch, period=args.m,
                  temperatures=(args.tau1, args.tau2),
                  correction=args.correction_re if method == "resgld" else args.correction,
                  smoothing=args.smoothing, initial=args.initial, seed=seed,
                  record_every=args.record_every, num_chains=args.ladder_chains)
        kw.update(over)
        callbacks = [_Progress(label, steps).callback] if progress else []
        return mx.run(method, data, steps=steps, callbacks=callbacks, **kw)

    # ---- main runs: every method, every chain seed --------------------------------------
    runs = {method: [] for method in args.methods}
    for method in args.methods:
        for seed in seeds:
            runs[method].append(run(method, seed, args.steps, f"{method} seed {seed}"))

    results = {}
    for method, rs in runs.items():
        per_seed = []
        for seed, r in zip(seeds, rs):
            b = r["beta"][int(len(r["beta"]) * args.burn_in):]
            left, left_bm = mx.left_fraction(b, split)
            sig = r["sigma2"][int(len(r["sigma2"]) * args.burn_in):]
            per_seed.append({
                "seed": seed, "swaps": r.get("swaps"), "attempts": r.get("attempts"),
                "pair_swaps": r.get("pair_swaps"), "temperatures": r.get("temperatures"),
                "accept_rate": (r["swaps"] / r["attempts"]) if r.get("attempts") else None,
                "mean_sigma2": float(sig.mean()) if sig.size else None,
                "left_mode_weight": left, "left_mode_weight_batch_means_se": left_bm,
                "mode_changes": mx.mode_changes(r["beta"], split),
                "ks": mx.ks_distance(b, grid, cdf), "seconds": r["seconds"]})
        agg = {}
        for key in ("swaps", "accept_rate", "mean_sigma2", "left_mode_weight", "mode_changes", "ks"):
            agg[key], agg[key + "_se"] = _mean_se([p[key] for p in per_seed])
        agg["seconds"] = float(sum(p["seconds"] for p in per_seed))
        agg.update(_beta_chains(rs, args.burn_in))
        agg["per_seed"] = per_seed
        results[method] = agg

    factor = None
    if "resgld" in results and "vr-resgld" in results and results["vr-resgld"]["mean_sigma2"]:
        factor = results["resgld"]["mean_sigma2"] / results["vr-resgld"]["mean_sigma2"]

    # ---- variance.png: sigma2 paths, reSGLD and VR-reSGLD at several m -------------------
    curves = []
    if "resgld" in runs:
        curves.append((f"reSGLD (F={args.correction_re:g})", "resgld", runs["resgld"][0]["sigma2"]))
    if "vr-resgld" in runs:
        curves.append((f"VR-reSGLD m={args.m}", "vr-resgld", runs["vr-resgld"][0]["sigma2"]))
    variance_m = {}
    for period in args.variance_m:
        if period == args.m and "vr-resgld" in runs:
            continue
        r = run("vr-resgld", seeds[0], args.variance_steps, f"variance m={period}", period=period)
        s2 = r["sigma2"]
        variance_m[str(period)] = float(s2[len(s2) // 10:].mean())
        curves.append((f"VR-reSGLD m={period}", "vr-resgld", s2))
    horizon = max([args.variance_steps] + [0]) // args.record_every
    curves = [(lab, meth, s[:horizon]) for lab, meth, s in curves]

    # ---- sensitivity.png: log10 sigma2 of VR-reSGLD over (n/N, eta) ----------------------
    sens = np.zeros((len(args.sens_lrs), len(args.sens_ratios)))
    sens_bar = _Progress("sensitivity grid", len(args.sens_ratios) * len(args.sens_lrs) * args.sens_seeds)
    sens_done = 0
    for j, ratio in enumerate(args.sens_ratios):
        n = max(1, int(round(ratio * args.data_size)))
        for i, lr in enumerate(args.sens_lrs):
            vals = []
            for seed in seeds[:1] + [seeds[0] + 1000 + k for k in range(args.sens_seeds - 1)]:
                r = run("vr-resgld", seed, args.sens_steps, "", progress=False, batch_size=n,
                        learning_rate=lr, record_every=1)
                s2 = r["sigma2"][len(r["sigma2"]) // 2:]
                vals.append(float(s2.mean()))
                sens_done += 1
                sens_bar.update(sens_done)
            sens[i, j] = float(np.log10(np.mean(vals)))

    # ---- figures -------------------------------------------------------------------------
    title = (f"N={args.data_size}, tau=({args.tau1:g},{args.tau2:g}), eta={args.lr:g}, n={args.batch}, "
             f"m={args.m}, F={args.correction:g}/{args.correction_re:g}")
    plots.traces(os.path.join(out, "traces.png"), {k: v[0]["beta"] for k, v in runs.items()},
                 args.record_every, modes, exact_left, title=f"Cold-chain traces (seed {seeds[0]}): {title}")
    pooled = {k: np.concatenate([r["beta"][int(len(r["beta"]) * args.burn_in):] for r in v])
              for k, v in runs.items()}
    plots.density(os.path.join(out, "density.png"), pooled, grid, dens,
                  {k: mx.ks_distance(v, grid, cdf) for k, v in pooled.items()},
                  title=f"Cold chain ({len(seeds)} seeds pooled) vs exact posterior at tau1={args.tau1:g}")
    if curves:
        plots.variance(os.path.join(out, "variance.png"), curves, args.record_every,
                       title=f"log10 sigma2 (seed {seeds[0]}): N={args.data_size}, eta={args.lr:g}, "
                             f"n={args.batch}")
    plots.sensitivity(os.path.join(out, "sensitivity.png"), args.sens_ratios, args.sens_lrs, sens,
                      title=f"VR-reSGLD log10 sigma2, m={args.m}, {args.sens_steps} its, "
                            f"{args.sens_seeds} seeds")
    wall = time.perf_counter() - t_start

    summary = {
        "scenario": scenario,
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()} | {"out": out},
        "chain_seeds": seeds,
        "exact": {"mode_weights": [exact_left, exact_right], "modes": list(modes),
                  "barrier_nats": barrier, "barrier_over_tau1": barrier / args.tau1,
                  "barrier_over_tau2": barrier / args.tau2},
        "variance_reduction_factor": factor,
        "methods": results,
        "variance_by_m": variance_m,
        "sensitivity": {"ratios": list(args.sens_ratios), "lrs": list(args.sens_lrs),
                        "log10_sigma2": sens.tolist()},
        "wall_seconds": wall,
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)

    # ---- table ---------------------------------------------------------------------------
    print(f"\n{len(seeds)} chain seeds; mean +- standard error across seeds; weights after {args.burn_in:.0%} "
          f"burn-in")
    head = (f"{'method':<17}{'swaps':>8}{'accept':>9}{'mean sigma2':>13}{'mode changes':>14}"
            f"{'left-mode weight':>19}{'KS':>16}{'ESS(beta)':>10}{'R-hat':>7}{'time':>8}")
    print(head)
    for method, r in results.items():
        w = f"{r['left_mode_weight']:.3f} +- {_fmt(r['left_mode_weight_se'], '.3f')}"
        ks = f"{r['ks']:.3f} +- {_fmt(r['ks_se'], '.3f')}"
        print(f"{method:<17}{_fmt(r['swaps'], '.0f'):>8}{_fmt(r['accept_rate'], '.4f'):>9}"
              f"{_fmt(r['mean_sigma2'], '.4g'):>13}{r['mode_changes']:>14.1f}{w:>19}{ks:>16}"
              f"{_fmt(r['beta_ess'], '.0f'):>10}{_fmt(r['beta_rhat'], '.2f'):>7}{r['seconds']:>7.1f}s")
    print(f"{'exact':<17}{'':>8}{'':>9}{'':>13}{'':>14}{exact_left:>19.3f}{0:>16.3f}")
    print(f"ESS(beta), R-hat: tfp.mcmc on the recorded cold-chain beta (every {args.record_every} steps) after "
          "burn-in, seeds as chains split in halves")
    if factor is not None:
        print(f"variance reduction factor (reSGLD sigma2 / VR sigma2): {factor:.1f}")
    if variance_m:
        print("VR-reSGLD mean sigma2 by m: " + ", ".join(f"m={k}: {v:.4g}" for k, v in variance_m.items()))
    print(f"wall time {wall:.1f}s; wrote summary.json, traces.png, density.png, "
          f"{'variance.png, ' if curves else ''}sensitivity.png to {out}")
    return 0


