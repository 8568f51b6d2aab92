"""Replica flow of VR-reSGLD on the mixture ladder: random vs DEO pairs, side by side.

The Gaussian-mixture target of ``tf-vrre mixture`` (default scenario: N = 1000, n = 100,
eta = 3e-4, m = 4, F = 2) with a K-chain geometric ladder tau = 10 .. 3000, every chain from
beta_0 = 30.  For each pair schedule and chain seed: a SwapLogger run, then
``tf_vrre.diagnostics``: per-pair acceptance, round trips per 1000 steps, mean first-passage
time cold -> hot, and ESS / R-hat of the cold chain's beta (seeds as chains, split halves).

    python benchmarks/replica_flow.py --force              # K = 4, 3e4 steps, 3 seeds (~4-6 min, 2 cores)
    python benchmarks/replica_flow.py --steps 5000 --seeds 1 --results runs/replica-flow.json
    tf-vrre diagnose --run runs/replica-flow/deo-seed0 --run runs/replica-flow/random-seed0 --out runs/replica-flow

The flags are checked before TensorFlow starts (exit status 2 and one line for a bad value).
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arguments
import results

from tf_vrre import diagnostics

RECORD_EVERY = 10  # steps between the recorded values of the cold chain's beta


def run(out, pairs, seed, steps, chains, record_every=RECORD_EVERY):
    import keras
    import tensorflow as tf

    import tf_vrre
    from tf_vrre.workflows.gaussian_mixture import target

    data = target.make_data(1000, seed=0)
    temps = target.ladder(10.0, 3000.0, chains)
    s = tf_vrre.ReplicaExchangeSampler(
        target.build_default_model,
        data_size=len(data),
        num_chains=chains,
        temperatures=temps,
        learning_rates=3e-4,
        dynamics="sgld",
        weight_decay=target.weight_decay(),
        nll=target.nll,
        seed=seed,
        swap=tf_vrre.CorrectedSwap(correction=2.0, smoothing=0.3, period=4, pairs=pairs),
        variance_reduction=tf_vrre.ControlVariates(period=4, batch_size=len(data)),
    )
    s.set_reference_data(data)
    s.compile(steps_per_execution=record_every)
    beta = []
    weight = s.cold_model.trainable_weights[0]

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            beta.append(float(weight.numpy()))

    ds = tf.data.Dataset.from_tensor_slices(data).repeat().shuffle(1000, seed=seed).batch(100, drop_remainder=True)
    start = time.perf_counter()
    s.fit(
        ds,
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        shuffle=False,
        callbacks=[Record(), tf_vrre.SwapLogger(os.path.join(out, "swaps"))],
    )
    return np.asarray(beta), time.perf_counter() - start


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    p.add_argument(
        "--steps",
        type=arguments.at_least(20 * RECORD_EVERY, 10**9),
        default=30000,
        help=f"steps per run (>= {20 * RECORD_EVERY}: 20 records of the cold chain)",
    )
    p.add_argument("--seeds", type=arguments.positive(int, 1000), default=3, help="chain seeds per pair schedule")
    p.add_argument("--chains", type=arguments.at_least(2, 64), default=4, help="K of the geometric ladder")
    p.add_argument("--out", type=arguments.output_directory, default="runs/replica-flow")
    results.add_arguments(p, "replica-flow")
    args = p.parse_args(argv)
    results.check_target(args.results, args.force)
    return args


def main(argv=None):
    args = parse_args(argv)
    from tf_vrre.workflows.gaussian_mixture import target

    results_path = args.results
    runs = {}
    for pairs in ("random", "deo"):
        for seed in range(args.seeds):  # interleaved would not change the per-step numbers; none are timings
            d = os.path.join(args.out, f"{pairs}-seed{seed}")
            beta, secs = run(d, pairs, seed, args.steps, args.chains)
            flow = diagnostics.replica_flow(diagnostics.read_swap_log(os.path.join(d, "swaps")))
            runs.setdefault(pairs, []).append((beta, flow, secs))
            print(f"{pairs} seed {seed}: {secs:.0f}s", flush=True)
    print(f"\nK={args.chains}, tau 10..3000 geometric, {args.steps} steps, seeds 0..{args.seeds - 1}; mean over seeds")
    print(
        f"{'pairs':<8}{'acceptance per pair':>24}{'trips/1000':>12}{'first passage':>15}{'ESS(beta)':>11}"
        f"{'R-hat':>7}{'left weight':>13}   per seed: trips/1000; left weight"
    )
    rows = []
    for pairs, rs in runs.items():
        acc = np.mean([[q["acceptance"] for q in f["pairs"]] for _, f, _ in rs], 0)
        trips = [f["round_trips_per_1000_steps"] for _, f, _ in rs]
        fp = [f["mean_first_passage_cold_to_hot"] for _, f, _ in rs if f["mean_first_passage_cold_to_hot"]]
        betas = [b[len(b) // 10 :] for b, _, _ in rs]
        s = diagnostics.chain_summary(np.stack(betas))
        left = [float(np.mean(b < 10)) for b in betas]
        print(
            f"{pairs:<8}{' / '.join(f'{a:.3f}' for a in acc):>24}{np.mean(trips):>12.2f}"
            f"{(np.mean(fp) if fp else float('nan')):>15.1f}{s['ess'] or float('nan'):>11.0f}"
            f"{s['rhat'] or float('nan'):>7.2f}{np.mean(left):>13.3f}   "
            f"{', '.join(f'{t:.2f}' for t in trips)}; {', '.join(f'{v:.2f}' for v in left)}"
        )
        rows.append(
            [
                {"random": "random", "deo": "DEO"}[pairs],
                [float(a) for a in acc],
                [float(np.mean(trips)), *map(float, trips)],
                float(np.mean(fp)) if fp else None,
                float(s["ess"]) if s["ess"] else None,
                float(s["rhat"]) if s["rhat"] else None,
                [float(np.mean(left)), *left],
            ]
        )
    exact = target.mode_weights(target.make_data(1000, seed=0), 10.0)[0]
    print(f"exact left-mode weight at tau = 10: {exact:.3f}")
    per_seed = ", ".join(["{:.1f}"] * args.seeds)
    rows.append(["exact", None, None, None, None, None, {"value": float(exact), "format": "{:.3f}"}])
    table = results.table(
        [
            "pairs",
            "acceptance per pair",
            "round trips / 1000 steps (per seed)",
            "first passage cold -> hot",
            "ESS(beta)",
            "R-hat",
            "left weight (per seed)",
        ],
        [
            "{}",
            " / ".join(["{:.3f}"] * (args.chains - 1)),
            "{:.1f} (" + per_seed + ")",
            "{:.1f} steps",
            "{:.0f}",
            "{:.2f}",
            "{:.3f} (" + per_seed.replace(".1f", ".2f") + ")",
        ],
        rows,
        keys=["random", "deo", "exact"],
    )
    results.write(
        results_path, {"main": table}, settings={k: v for k, v in vars(args).items() if k not in ("results", "force")}
    )


if __name__ == "__main__":
    main()
