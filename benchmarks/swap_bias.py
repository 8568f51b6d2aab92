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

The flags and the rows already in ``--out`` are checked before TensorFlow starts (exit status 2
and one line naming the flag, or the file and line).
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arguments
import numpy as np
import results

from tf_vrre.runs import atomic

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


RECORD_EVERY = 500  # steps between the recorded values of the cold chain's beta
ROW_KEYS = ("config", "seed", "steps", "left", "swaps")
MAX_LOCATION = 1e6  # |phi|, sigma, prior sd: energies stay finite in float32 (as tf-vrre mixture)


def _args(argv):
    """The command line and the rows of ``--out``, checked before TensorFlow starts (exit 2 and
    one line for a bad value or a damaged row)."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument(
        "--seeds", type=arguments.at_least(2, 10**4), default=32, help="chains per configuration (>= 2: an SE)"
    )
    p.add_argument(
        "--steps",
        type=arguments.at_least(RECORD_EVERY, 10**9),
        default=100000,
        help=f"steps per chain (>= {RECORD_EVERY}: beta is recorded every {RECORD_EVERY})",
    )
    p.add_argument("--configs", type=arguments.names(CONFIGS, "configurations"), default=tuple(CONFIGS))
    p.add_argument("--phi", type=arguments.bounded(MAX_LOCATION), default=16.0)
    p.add_argument("--sigma", type=arguments.positive_float(MAX_LOCATION), default=4.0)
    p.add_argument("--prior-sd", type=arguments.positive_float(MAX_LOCATION), default=6.0)
    p.add_argument("--data-size", type=arguments.positive(int, 10**7), default=1000)
    p.add_argument("--batch", type=arguments.positive(int, 10**7), default=100)
    p.add_argument("--m", type=arguments.positive(int, 10**6), default=4)
    p.add_argument("--lr", type=arguments.positive_float(), default=3e-4)
    p.add_argument("--tau", type=arguments.positive_float(), nargs=2, default=(8.0, 3000.0))
    p.add_argument("--correction", type=arguments.positive_float(), default=2.0)
    p.add_argument("--burn-in", type=arguments.fraction(), default=0.1)
    p.add_argument("--out", type=arguments.output_file, default="runs/swap_bias.jsonl")
    p.add_argument("--table", action="store_true", help="only print the table of --out (and write the results file)")
    results.add_arguments(p, "swap-bias")
    args = p.parse_args(argv)
    if not args.tau[0] < args.tau[1]:
        arguments.die(f"--tau: the cold temperature must be below the hot one, got {args.tau[0]:g} {args.tau[1]:g}")
    if args.batch > args.data_size:
        arguments.die(f"--batch: must be <= --data-size ({args.data_size}), got {args.batch}")
    if os.path.islink(args.out):
        arguments.die(f"--out: {args.out} is a symbolic link; rows are appended to a regular file only (remove it)")
    if args.table and not os.path.exists(args.out):
        arguments.die(f"--out: {args.out}: no such file (--table prints the rows a run wrote there)")
    args.rows = read_rows(args.out)
    results.check_target(args.results, args.force)
    return args


def read_rows(path):
    """The rows of the JSON-lines file ``path`` (none if absent); exit 2 with one line naming the
    file and line of a damaged row (a torn last line, an edit, a NaN)."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                arguments.die(
                    f"--out: {path}, line {number}: not valid JSON ({err.msg}); remove the line and run again"
                )
            bad = arguments.non_finite(row) if isinstance(row, dict) else None
            if not isinstance(row, dict) or any(k not in row for k in ROW_KEYS) or row["config"] not in CONFIGS:
                arguments.die(f"--out: {path}, line {number}: not a row of this script (keys {', '.join(ROW_KEYS)})")
            if bad:
                arguments.die(f"--out: {path}, line {number}: {bad[0]} is {bad[1]}")
            rows.append(row)
    return rows


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
        record_every=RECORD_EVERY,
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


def _table(rows, exact):
    """Prints the table of the stored ``rows`` and returns it as a results table."""
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
    out = args.results
    if not args.table:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        done = {(r["config"], r["seed"], r["steps"]) for r in args.rows}
        for seed in range(args.seeds):  # configurations interleaved seed by seed
            for name in args.configs:
                if (name, seed, args.steps) in done:
                    continue
                t0 = time.perf_counter()
                row = _one(args, mixture, data, name, seed)
                args.rows.append(row)
                with atomic.open_append(args.out) as f:  # a link planted at --out is refused, never followed
                    f.write(json.dumps(row) + "\n")
                print(
                    f"{name} seed {seed}: left {row['left']:.3f}, {row['mode_changes']} mode changes, "
                    f"{row['swaps']} swaps, {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
    settings = {k: v for k, v in vars(args).items() if k not in ("results", "force", "table", "rows")}
    results.write(out, {"main": _table(args.rows, exact)}, settings=settings, exact_left_weight=float(exact))


if __name__ == "__main__":
    main()
