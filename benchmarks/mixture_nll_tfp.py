"""The mixture's per-example NLL by hand (``tf_vrre.workflows.gaussian_mixture.target.nll``) vs through a TFP distribution.

``-log p(x | beta)`` with ``p = 0.5 N(beta, 5^2) + 0.5 N(20 - beta, 5^2)``: the hand-written
logsumexp (today's code) against ``tfd.MixtureSameFamily(Categorical, Normal).log_prob``.
Prints the largest difference of the two on the data and on a grid of beta, then times VR-reSGLD
fits (2 chains, N = 1000, n = 100, m = 4) with each NLL, interleaved, and prints the ratio of
the medians.  The issue says: use the TFP form only if it is not slower.

    python benchmarks/mixture_nll_tfp.py --force    # ~2 minutes on 2 CPU cores

The table goes to ``benchmarks/results/mixture-nll-tfp.json`` (``--results``), which
``python benchmarks/render_docs.py`` puts into ``docs/benchmarks/mixture-nll-tfp.md``.
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


def tfp_nll(x, y, y_pred):
    """Per-example ``-log p(x_i | beta)`` through ``tfd.MixtureSameFamily``."""
    import tensorflow as tf
    import tensorflow_probability as tfp

    from tf_vrre.workflows.gaussian_mixture import target

    tfd = tfp.distributions
    del y
    x = tf.reshape(tf.cast(x, tf.float32), [-1])
    beta = tf.reshape(y_pred, [-1])
    locs = tf.stack([beta, target.PHI - beta], axis=-1)  # [n, 2]
    dist = tfd.MixtureSameFamily(tfd.Categorical(probs=[0.5, 0.5]), tfd.Normal(locs, target.SIGMA))
    return -dist.log_prob(x)


def fit_seconds(nll, data, steps, seed=0):
    import tensorflow as tf

    import tf_vrre
    from tf_vrre.workflows.gaussian_mixture import target

    s = tf_vrre.ReplicaExchangeSampler(
        target.build_default_model,
        data_size=len(data),
        num_chains=2,
        temperatures=[10.0, 3000.0],
        learning_rates=3e-4,
        dynamics="sgld",
        weight_decay=target.weight_decay(),
        nll=nll,
        seed=seed,
        swap=tf_vrre.CorrectedSwap(correction=2.0, period=4),
        variance_reduction=tf_vrre.ControlVariates(period=4),
    )
    s.set_reference_data(data)
    s.compile(steps_per_execution=10)
    ds = tf.data.Dataset.from_tensor_slices(data).repeat().shuffle(1000, seed=seed).batch(100, drop_remainder=True)
    s.fit(ds, steps_per_epoch=50, epochs=1, verbose=0)  # trace and warm up
    start = time.perf_counter()
    s.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)
    return time.perf_counter() - start, float(s.chains[0].weights[0].numpy())


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    p.add_argument("--steps", type=arguments.positive(int, 10**8), default=3000, help="timed steps per fit")
    p.add_argument("--repeats", type=arguments.positive(int, 1000), default=5, help="interleaved fits (median)")
    results.add_arguments(p, "mixture-nll-tfp")
    args = p.parse_args(argv)
    results.check_target(args.results, args.force)
    return args


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    from tf_vrre.workflows.gaussian_mixture import target

    results_path = args.results
    data = target.make_data(1000, seed=0)
    largest = 0.0
    for beta in (-5.0, 10.0, 25.0, 30.0):
        pred = tf.fill([len(data), 1], beta)
        d = np.max(np.abs(target.nll(data, None, pred).numpy() - tfp_nll(data, None, pred).numpy()))
        largest = max(largest, float(d))
        print(f"beta={beta:6.1f}: max |hand - tfp| over the data = {d:.2e}")
    times = {"hand": [], "tfp": []}
    final = {}
    for _ in range(args.repeats):
        for name, fn in (("hand", target.nll), ("tfp", tfp_nll)):
            secs, b = fit_seconds(fn, data, args.steps)
            times[name].append(secs)
            final[name] = b
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(
        f"{args.steps} steps, median of {args.repeats} interleaved fits: hand {1e3 * med['hand'] / args.steps:.2f} "
        f"ms/step, tfp {1e3 * med['tfp'] / args.steps:.2f} ms/step, tfp / hand = {med['tfp'] / med['hand']:.2f}"
    )
    print(f"final cold beta (same seed): hand {final['hand']:.6f}, tfp {final['tfp']:.6f}")
    table = results.table(
        [
            "NLL",
            "ms / step (median of interleaved fits)",
            "vs. by hand",
            "final cold beta (same seed)",
            "largest difference to the hand-written NLL (nats per example)",
        ],
        ["{}", "{:.2f}", "{:.2f}x", "{:.6f}", "{:.0e}"],
        [
            ["by hand (logsumexp)", 1e3 * med["hand"] / args.steps, 1.0, final["hand"], "-"],
            ["`tfd.MixtureSameFamily`", 1e3 * med["tfp"] / args.steps, med["tfp"] / med["hand"], final["tfp"], largest],
        ],
        keys=["hand", "tfp"],
    )
    results.write(results_path, {"main": table}, settings={"steps": args.steps, "repeats": args.repeats})


if __name__ == "__main__":
    main()
