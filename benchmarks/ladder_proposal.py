"""The proposed ladder on three networks: only K and the cold temperature given, the ladder's
range proposed by the sampler and moved by the tuner towards equal rejection at the target.

For each network, ``ReplicaExchangeSampler(num_chains=K, temperatures=ProposedLadder(cold=1.0,
target_rejection=r))`` with ``LadderTuner(tuning_steps=T)`` (its default bounds, learning rates
following the temperatures as ``tau^0.25``), even/odd swaps with mini-batch energies (the swap
rule users run first; ``F = 2``), SGHMC.  Measured:

- ``D`` and the proposed ladder (the Gaussian rule for ``D`` weights and ``r``);
- the tuner's last round: its per-pair rejection, the barrier ``Lambda`` and the recommended
  number of chains; the ladder it fixed;
- the **per-pair rejection after the tuning phase** (``--measure`` steps on the fixed ladder, with
  the batch-means standard error over 10 blocks), and whether every pair is within ``--band``
  of the target;
- wall time of the run.

Networks (``--networks``):

- ``mlp``: a 30-16-2 MLP (D = 530) on scikit-learn's breast-cancer data (569 examples,
  standardised), batches of 64;
- ``cnn``: the image workflow's small CNN (width 8: two blocks of two 3x3 convolutions and a max
  pool, global average pooling, 10 logits; D = 4,322) on scikit-learn's 8x8 digits (1,797
  images), batches of 64;
- ``resnet8``: the image workflow's ResNet-8 (D = 78,042) on a class-balanced subset of
  CIFAR-10 (``--subset`` images of the training set, read by the workflow's data loaders from
  ``--data-dir``), batches of 32.

    python benchmarks/ladder_proposal.py                 # the table of docs/guides/ladder.md
    python benchmarks/ladder_proposal.py --quick         # fewer steps, for a look (about 5 minutes)
    python benchmarks/ladder_proposal.py --networks resnet8 --tune 8000 --no-hand \
        --results benchmarks/results/ladder_proposal_resnet8.json   # the ResNet-8, tuned longer

Writes ``benchmarks/results/ladder_proposal.json`` (``--results``; ``--force`` replaces it)
through ``benchmarks/results.py``; ``python benchmarks/render_docs.py`` renders its table in
``docs/guides/ladder.md``.  Every flag is checked before TensorFlow starts (exit status 2 and one
line naming the flag).
"""

import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import arguments
import numpy as np
import results

DATA_DIR = next(
    (str(d / "shared" / "data") for d in (REPO.parent, REPO.parents[1]) if (d / "shared" / "data").is_dir()),
    str(REPO.parent / "shared" / "data"),
)
NETWORKS = ("mlp", "cnn", "resnet8")
BLOCKS = 10
"""Batch means of the post-tuning rejection."""
SETTINGS = {
    # batch size, SGD learning rate on the mean loss (eta = lr / N), prior precision per example
    "mlp": {"batch": 64, "lr": 0.05, "decay": 1e-3},
    "cnn": {"batch": 64, "lr": 0.05, "decay": 1e-3},
    "resnet8": {"batch": 32, "lr": 0.05, "decay": 5e-4},
}


def _data(name, args):
    """``(x, y, model_fn)`` of a network."""
    import keras

    if name in ("mlp", "cnn"):
        from sklearn import datasets

        if name == "mlp":
            x, y = datasets.load_breast_cancer(return_X_y=True)
            x = ((x - x.mean(0)) / x.std(0)).astype("float32")

            def model_fn():
                inp = keras.Input((30,))
                hidden = keras.layers.Dense(16, activation="tanh")(inp)
                return keras.Model(inp, keras.layers.Dense(2)(hidden))

            return x, y.astype("int64"), model_fn
        x, y = datasets.load_digits(return_X_y=True)
        x = (x / 16.0).reshape(-1, 8, 8, 1).astype("float32")
        from tf_vrre.workflows.image_classification import models

        return x, y.astype("int64"), lambda: models.build("cnn", num_classes=10, input_shape=(8, 8, 1), width=8)
    from tf_vrre.workflows.image_classification import data, models

    train, _, _ = data.load_training_data("cifar10", "npz", args.data_dir, subset=args.subset)
    x = train.preprocessing.apply(train.x).astype("float32")
    return x, train.y, lambda: models.build("resnet8", num_classes=10)


class Counters:
    """Per-pair attempt and swap counters at every executed block after ``after``."""

    def __new__(cls, after):
        import keras

        class _Counters(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.rows = []

            def on_train_batch_end(self, batch, logs=None):
                s = self.model
                if int(s.state.step.numpy()) >= after:
                    self.rows.append(
                        (s.state.swap.attempt_count.numpy().copy(), s.state.swap.swap_count.numpy().copy())
                    )

        return _Counters()


def _rejection(rows):
    """Per-pair rejection over ``rows`` and its batch-means standard error (ratio estimator)."""
    a = np.diff(np.array([r[0] for r in rows], np.float64), axis=0)
    s = np.diff(np.array([r[1] for r in rows], np.float64), axis=0)
    m = len(a) // BLOCKS
    ab, sb = a[: m * BLOCKS].reshape(BLOCKS, m, -1).sum(1), s[: m * BLOCKS].reshape(BLOCKS, m, -1).sum(1)
    rate = 1 - sb.sum(0) / ab.sum(0)
    se = np.sqrt((((ab - sb) - rate * ab) ** 2).sum(0) / (BLOCKS * (BLOCKS - 1))) / ab.mean(0)
    return rate, se, ab.sum(0)


def run_one(name, args, seed, hand=None):
    """One network: the proposed ladder (or the ``hand`` ladder, its hot end fixed), the tuning,
    the post-tuning rejection."""
    import keras

    import tf_vrre
    from tf_vrre.sgmcmc import proposal

    x, y, model_fn = _data(name, args)
    cfg = SETTINGS[name]
    N = len(x)
    start = time.time()
    sampler = tf_vrre.ReplicaExchangeSampler(
        model_fn,
        data_size=N,
        num_chains=args.chains,
        temperatures=tf_vrre.ProposedLadder(cold=1.0, target_rejection=args.target) if hand is None else list(hand),
        learning_rates=cfg["lr"] / N,
        weight_decay=cfg["decay"] * N,
        swap=tf_vrre.CorrectedSwap(pairs="deo"),
        seed=seed,
    )
    sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=args.spe)
    D = proposal.num_weights(sampler.chains[0])
    proposed = [float(t) for t in sampler.temperatures]
    tuner = tf_vrre.LadderTuner(args.tune, first_round_steps=args.first_round, verbose=int(args.verbose))
    counters = Counters(args.tune)
    total = args.tune + args.measure
    epochs = math.ceil(total / args.spe / 10)
    sampler.fit(
        _dataset(x, y, cfg["batch"], seed),
        steps_per_epoch=10 * args.spe,
        epochs=epochs,
        verbose=0,
        callbacks=[tuner, counters],
    )
    rate, se, attempts = _rejection(counters.rows)
    last = tuner.record["rounds"][-1]
    return {
        "network": name,
        "ladder": "proposed" if hand is None else "hand",
        "accepted": int(np.sum(sampler.state.swap.swap_count.numpy())),
        "attempted": int(np.sum(sampler.state.swap.attempt_count.numpy())),
        "seed": seed,
        "num_weights": D,
        "data_size": N,
        "proposed": proposed,
        "final": [float(t) for t in sampler.state.ladder.temperature.numpy()],
        "last_round_rejection": last["rejection"],
        "last_round_barrier": last["barrier"],
        "recommended_chains": last["recommended_chains"],
        "mode_changes": last.get("mode_changes"),
        "rounds": [
            {k: r.get(k) for k in ("round", "end_step", "rejection", "barrier", "new_temperatures", "mode_changes")}
            for r in tuner.record["rounds"]
        ],
        "rejection": rate.tolist(),
        "rejection_se": se.tolist(),
        "attempts": attempts.tolist(),
        "within_band": bool(np.all(np.abs(rate - args.target) <= args.band)),
        "seconds": time.time() - start,
    }


def _dataset(x, y, batch, seed):
    import tensorflow as tf

    return (
        tf.data.Dataset.from_tensor_slices((x, y)).repeat().shuffle(len(x), seed=seed).batch(batch, drop_remainder=True)
    )


def _cell(values, fmt="{:.2f}"):
    return {"value": list(values), "format": " ".join([fmt] * len(values))}


def table(rows, target, band):
    out, keys = [], []
    for r in rows:
        out.append(
            [
                r["network"],
                r["ladder"],
                r["num_weights"],
                _cell(r["proposed"], "{:.4g}"),
                _cell(r["final"], "{:.4g}"),
                _cell(r["last_round_rejection"]),
                _cell(r["rejection"]),
                {"value": max(r["rejection_se"]), "format": "{:.2f}"},
                "yes" if r["within_band"] else "no",
                r["recommended_chains"],
                f"{r['accepted']:,} / {r['attempted']:,}",
                {"value": r["seconds"] / 60, "format": "{:.0f}"},
            ]
        )
        keys.append(r["network"] if r["ladder"] == "proposed" else f"{r['network']}-hand")
    return results.table(
        [
            "network",
            "ladder",
            "D",
            "proposed ladder",
            "tuned ladder",
            "rejection, last round",
            "rejection after tuning",
            "largest se",
            f"within {target:g} +- {band:g}",
            "recommended K",
            "swaps accepted / attempted",
            "minutes",
        ],
        ["{}", "{}", "{:,}", "{}", "{}", "{}", "{}", "{}", "{}", "{}", "{}", "{}"],
        out,
        keys,
    )


def parse_args(argv):
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument("--networks", type=arguments.names(NETWORKS, "networks"), default=NETWORKS)
    p.add_argument("--chains", type=arguments.at_least(3, 64), default=4, help="K (>= 3: the tuner places rungs)")
    p.add_argument("--target", type=arguments.positive_float(), default=0.5, help="rejection per pair, in (0, 1)")
    p.add_argument(
        "--band", type=arguments.positive_float(), default=0.15, help="allowed |rejection - target| per pair"
    )
    p.add_argument("--tune", type=arguments.positive(int, 10**7), default=4000, help="tuning steps")
    p.add_argument("--first-round", type=arguments.positive(int, 10**7), default=100, help="first round's steps")
    p.add_argument(
        "--measure", type=arguments.at_least(20 * BLOCKS, 10**7), default=1000, help="steps measured after tuning"
    )
    p.add_argument("--spe", type=arguments.positive(int, 1000), default=10, help="steps per execution")
    p.add_argument("--subset", type=arguments.positive(int, 50000), default=2000, help="CIFAR-10 images (resnet8)")
    p.add_argument("--data-dir", type=arguments.input_directory, default=DATA_DIR, help="holds cifar10/*.npz")
    p.add_argument(
        "--hand",
        type=arguments.float_list(what="temperatures"),
        default=(1.0, 2.0, 3.0, 4.0),
        help="a hand ladder run beside the MLP's proposal, its hot end fixed (by analogy with the paper's 5x)",
    )
    p.add_argument("--no-hand", dest="hand", action="store_const", const=None, help="no hand ladder")
    p.add_argument("--seed", type=arguments.at_least(0, 2**31 - 1), default=0)
    p.add_argument("--quick", action="store_true", help="--tune 400 --measure 400 --subset 500")
    p.add_argument("--verbose", action="store_true", help="print the tuner's rounds")
    results.add_arguments(p, "ladder_proposal")
    args = p.parse_args(argv)
    if not 0 < args.target < 1:
        arguments.die(f"--target: a rejection rate in (0, 1), got {args.target}")
    if not args.band < 1:
        arguments.die(f"--band: in (0, 1), got {args.band}")
    if args.hand is not None and (len(args.hand) != args.chains or list(args.hand) != sorted(args.hand)):
        arguments.die(f"--hand: {args.chains} increasing temperatures (--chains), got {','.join(map(str, args.hand))}")
    if args.quick:
        args.tune, args.measure, args.subset = 400, 400, 500
    if args.tune % args.spe or args.measure % args.spe:
        arguments.die(f"--spe: must divide --tune ({args.tune}) and --measure ({args.measure})")
    if "resnet8" in args.networks:
        for part in ("cifar10",):
            if not os.path.isdir(os.path.join(args.data_dir, part)):
                arguments.die(f"--data-dir: {args.data_dir} holds no {part}/ (the CIFAR-10 .npz files)")
    results.check_target(args.results, args.force)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    rows = []
    runs = [(name, None) for name in args.networks]
    if "mlp" in args.networks and args.hand:
        runs.insert(1, ("mlp", args.hand))
    for name, hand in runs:
        row = run_one(name, args, args.seed, hand)
        rows.append(row)
        print(
            f"{name} ({row['ladder']}): D = {row['num_weights']}, proposed {np.round(row['proposed'], 4).tolist()} -> "
            f"{np.round(row['final'], 4).tolist()}; rejection last round {np.round(row['last_round_rejection'], 2).tolist()}, "
            f"after tuning {np.round(row['rejection'], 2).tolist()} (se <= {max(row['rejection_se']):.2f}); "
            f"recommended K {row['recommended_chains']}; swaps {row['accepted']} / {row['attempted']}; "
            f"{row['seconds']:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    tab = table(rows, args.target, args.band)
    print(results.markdown(tab))
    settings = {k: v for k, v in vars(args).items() if k not in ("results", "force", "data_dir")}
    results.write(
        args.results,
        {"main": tab},
        command=" ".join(["python benchmarks/ladder_proposal.py", *argv]),
        settings=settings,
        results=rows,
    )


if __name__ == "__main__":
    main()
