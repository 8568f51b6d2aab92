"""Does the cold chain target the tempered posterior?  Mode weight vs the exact answer, per swap penalty.

A held-out check: a 1-D two-mode mixture with other parameters than the paper's
(phi = 16, sigma = 4, prior sd 6, N = 1000, data seed 0), tau = (8, 3000), n = 100, eta = 3e-4,
``ControlVariates(period=4)``, ``CorrectedSwap(correction=2)``.  The cold chain can reach the
second mode only through swaps; its left-mode weight is compared with the exact weight on a grid.
Each configuration runs ``--seeds`` independent chains (the real ``ReplicaExchangeSampler.fit``,
XLA-compiled; half start in each mode), and the table pools them: mean +- standard error across
seeds, bias in standard errors.

Configurations:
  vr-window   VR energies, the paper's one window-averaged sigma2 per pair (``penalty="window"``)
  vr-offset   VR energies, one smoothed sigma2 per offset ``step mod m`` (``penalty="offset"``)
  vr-batch    VR energies, each step's own within-batch estimate (``penalty="batch"``, the default)
  re-window   plain mini-batch energies (reSGLD), the paper's rule (the default without VR)
  exact       exact energies (n = N, sigma2 = 0): the swap rule is plain Metropolis

Results are appended to ``--out`` (JSON lines) as each seed finishes, so an interrupted run keeps
what it did; ``--table`` reprints the table from that file. The table goes to
``benchmarks/results/swap-bias.json`` (``--results``; ``--force`` replaces it), which
``python benchmarks/render_docs.py`` puts into ``docs/benchmarks/swap-bias.md`` and the README.

    python benchmarks/swap_bias.py                        # ~2-3 min per seed and configuration on 2 cores
    python benchmarks/swap_bias.py --seeds 18 --configs vr-window,vr-batch --out runs/swap_bias.jsonl --force
                                                          # the table in docs/benchmarks/swap-bias.md, ~85 min
    python benchmarks/swap_bias.py --seeds 8 --steps 20000 --configs vr-window,vr-batch
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
import results

CONFIGS = {
    "vr-window": ("vr-resgld", {"penalty": "window"}, None),
    "vr-offset": ("vr-resgld", {"penalty": "offset"}, None),
    "vr-batch": ("vr-resgld", {"penalty": "batch"}, None),
    "re-window": ("resgld", {"penalty": "window"}, None),
    "exact": ("resgld", {"penalty": "window"}, "full"),
}
LABELS = {
    "vr-window": '`"window"` (the paper\'s one sigma2 per window)',
    "vr-offset": '`"offset"` (one sigma2 per offset step mod m)',
    "vr-batch": '`"batch"` (this step\'s own variance; the default with VR)',
    "re-window": 'reSGLD (no control variates), `"window"`',
    "exact": "exact energies (n = N, sigma2 = 0)",
}


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=32)
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--phi", type=float, default=16.0)
    p.add_argument("--sigma", type=float, default=4.0)
    p.add_argument("--prior-sd", type=float, default=6.0)
    p.add_argument("--data-size", type=int, default=1000)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--m", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--tau", type=float, nargs=2, default=(8.0, 3000.0))
    p.add_argument("--correction", type=float, default=2.0)
    p.add_argument("--burn-in", type=float, default=0.1)
    p.add_argument("--out", default="runs/swap_bias.jsonl")
    p.add_argument("--table", action="store_true", help="only print the table of --out (and write the results file)")
    results.add_arguments(p, "swap-bias")
    args = p.parse_args(argv)
    bad = [c for c in args.configs.split(",") if c not in CONFIGS]
    if bad:
        p.error(f"--configs: unknown {bad}; choose from {','.join(CONFIGS)}")
    return args


def _one(args, mixture, data, name, seed):
    from tf_vrre.workflows.gaussian_mixture import target

    method, swap_options, batch = CONFIGS[name]
    initial = 30.0 if seed % 2 == 0 else mixture.true_beta  # half the chains start in each mode
    r = target.run(
        method,
        data,
        steps=args.steps,
        learning_rate=args.lr,
        batch_size=len(data) if batch == "full" else args.batch,
        period=args.m,
        temperatures=tuple(args.tau),
        correction=args.correction,
        initial=initial,
        seed=seed,
        record_every=500,
        target=mixture,
        swap_options=swap_options,
        jit_compile=True,
    )
    b = r["beta"][int(len(r["beta"]) * args.burn_in) :]
    return {
        "config": name,
        "seed": seed,
        "initial": initial,
        "left": float(np.mean(b < mixture.split)),
        "mode_changes": target.mode_changes(r["beta"], mixture.split),
        "swaps": r["swaps"],
        "attempts": r["attempts"],
        "seconds": r["seconds"],
        "steps": args.steps,
    }


def _table(path, exact):
    """Prints the table of the JSON lines ``path`` and returns it as a results table."""
    rows = [json.loads(line) for line in open(path)]
    print(f"exact left-mode weight {exact:.4f}")
    print(f"{'configuration':<12}{'seeds':>6}{'swaps/seed':>12}{'left-mode weight':>20}{'bias':>9}{'bias/SE':>9}")
    cells, keys = [], []
    for name in CONFIGS:
        w = np.array([r["left"] for r in rows if r["config"] == name])
        if w.size < 2:
            continue
        sw = np.mean([r["swaps"] for r in rows if r["config"] == name])
        se = w.std(ddof=1) / np.sqrt(w.size)
        print(
            f"{name:<12}{w.size:>6}{sw:>12.0f}{w.mean():>12.4f} +- {se:.4f}{w.mean() - exact:>+9.4f}"
            f"{(w.mean() - exact) / se:>+9.1f}"
        )
        cells.append(
            [
                LABELS[name],
                int(w.size),
                float(sw),
                [float(w.mean()), float(se)],
                float(w.mean() - exact),
                float((w.mean() - exact) / se),
            ]
        )
        keys.append(name)
    return results.table(
        ["swap penalty", "seeds", "swaps / seed", "cold left-mode weight", "bias", "bias / SE"],
        ["{}", "{}", "{:.0f}", "{:.4f} +- {:.4f}", "{:+.3f}", "{:+.1f}"],
        cells,
        keys,
    )


def main(argv=None):
    args = _args(argv)
    from tf_vrre.workflows.gaussian_mixture import target

    mixture = target.Mixture(args.phi, args.sigma, args.prior_sd).check()
    data = target.make_data(args.data_size, seed=0, target=mixture)
    exact = target.mode_weights(data, args.tau[0], target=mixture)[0]
    out = results.check_target(args.results, args.force)
    if not args.table:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        done = set()
        if os.path.exists(args.out):
            done = {(r["config"], r["seed"], r["steps"]) for r in map(json.loads, open(args.out))}
        for seed in range(args.seeds):  # configurations interleaved seed by seed
            for name in args.configs.split(","):
                if (name, seed, args.steps) in done:
                    continue
                t0 = time.perf_counter()
                row = _one(args, mixture, data, name, seed)
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    f"{name} seed {seed}: left {row['left']:.3f}, {row['mode_changes']} mode changes, "
                    f"{row['swaps']} swaps, {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
    settings = {k: v for k, v in vars(args).items() if k not in ("results", "force", "table")}
    results.write(out, {"main": _table(args.out, exact)}, settings=settings, exact_left_weight=float(exact))


if __name__ == "__main__":
    main()
