"""K = 3 ladder with exact energies: does the cold chain's mode weight match the exact one?

The question: with exact energies (n = N, so sigma2 = 0 and the swap rule is
plain Metropolis), a K = 3 ladder once showed a +0.04 residual in the cold chain's left-mode
weight.  This runs the real sampler (``tf_vrre.workflows.gaussian_mixture.target.run("resgld", ...)``
with three chains on ``target.ladder(10, 3000, 3)``, N = 100, full batches, 6e4 steps) for several seeds, half of
them starting in each mode, at each learning rate given; if the residual were discretisation
it would shrink as eta halves, if it were the swap rule it would not.

    python benchmarks/ladder_exact.py --force                       # ~20 min on 2 cores
    python benchmarks/ladder_exact.py --lrs 3e-3 --seeds 2 --steps 10000 --results runs/ladder-exact.json
                                                                    # a quick look

The table goes to ``benchmarks/results/ladder-exact.json`` (shown in ``docs/benchmarks/swap-bias.md``
by ``python benchmarks/render_docs.py``).
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import arguments
import numpy as np
import results

RECORD_EVERY = 500  # steps between the recorded values of beta


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument(
        "--steps",
        type=arguments.at_least(RECORD_EVERY, 10**9),
        default=60000,
        help=f"steps per run (>= {RECORD_EVERY}: beta is recorded every {RECORD_EVERY})",
    )
    p.add_argument(
        "--lrs",
        type=arguments.float_list(what="learning rates"),
        default=(3e-3, 1.5e-3),
        help="comma-separated learning rates",
    )
    p.add_argument("--seeds", type=arguments.positive(int, 1000), default=8, help="seeds per starting mode")
    p.add_argument("--data-size", type=arguments.positive(int, 10**7), default=100)
    results.add_arguments(p, "ladder-exact")
    args = p.parse_args(argv)
    results.check_target(args.results, args.force)
    return args


def main(argv=None):
    args = parse_args(argv)
    from tf_vrre.workflows.gaussian_mixture import target  # TensorFlow starts here

    out = args.results
    data = target.make_data(args.data_size, seed=0)
    temps = target.ladder(10.0, 3000.0, 3)
    exact = target.mode_weights(data, 10.0)[0]
    print(f"tau {np.round(temps, 1).tolist()}, N = n = {args.data_size}, exact left weight {exact:.4f}", flush=True)
    rows = []
    for lr in args.lrs:
        weights, t0 = [], time.time()
        for seed in range(args.seeds):
            for init in (30.0, -5.0):  # one start in each mode
                r = target.run(
                    "resgld",
                    data,
                    steps=args.steps,
                    learning_rate=lr,
                    batch_size=args.data_size,
                    period=4,
                    temperatures=temps,
                    correction=2.0,
                    initial=init,
                    seed=seed,
                    record_every=RECORD_EVERY,
                )
                beta = r["beta"][len(r["beta"]) // 10 :]
                weights.append(np.mean(beta < target.PHI / 2))
        w = np.array(weights)
        se = w.std(ddof=1) / np.sqrt(len(w))
        print(
            f"eta {lr:g}: left {w.mean():.4f} +- {se:.4f} ({len(w)} runs), bias {w.mean() - exact:+.4f} "
            f"= {(w.mean() - exact) / se:+.1f} SE, {time.time() - t0:.0f} s",
            flush=True,
        )
        rows.append([lr, len(w), [float(w.mean()), float(se)], float((w.mean() - exact) / se)])
    table = results.table(
        ["eta", "runs", "cold left-mode weight", "bias"], ["{:g}", "{}", "{:.4f} +- {:.4f}", "{:+.1f} SE"], rows
    )
    results.write(
        out,
        {"main": table},
        settings={k: v for k, v in vars(args).items() if k not in ("results", "force")},
        exact_left_weight=float(exact),
        temperatures=[float(t) for t in temps],
    )


if __name__ == "__main__":
    main()
