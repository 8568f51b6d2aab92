"""Is it done?  One Bayesian network from its first run to a ``mixing`` verdict in function space
(the page docs/guides/is-it-done.md).

The network: a tanh MLP on one of scikit-learn's bundled data sets (a fixed stratified held-out
fifth, inputs standardised with the training statistics), Gaussian prior of precision 1, the
posterior itself (temperature 1). The walk:

1. **The heat of gradient noise** at a batch of N/50 and at the batch the walk uses, at the same
   step (a single chain measuring on every step for a few epochs: ``excess_temperature_0``).
2. **The ladder**: K temperatures from the Gaussian rule (a pair at ``tau < tau'`` rejects about
   ``sqrt(D / 2 pi) ln(tau' / tau)`` of its swaps with exact energies; the ratio for a target
   rejection ``r`` is ``exp(r / sqrt(D / 2 pi))``), DEO pairs, variance-reduced swap energies.
3. **Runs**: four seeds (the chains of R-hat), each with a ``SwapLogger`` and a ``SampleCollector``
   storing the predictive on the held-out inputs; the same four stopped at a tenth of the epochs,
   for contrast; the first seed alone.
4. **Verdicts** of ``tf_vrre.diagnostics.diagnose`` for each, and the predictive's R-hat / ESS as
   the runs grow (the draws up to each share of the epochs, the first fifth dropped).

Usage::

    python benchmarks/is_it_done.py --force      # writes benchmarks/results/is-it-done.json

``python benchmarks/render_docs.py`` puts its numbers into the page.
"""

import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import arguments  # benchmarks/arguments.py
import results  # benchmarks/results.py


def _load():
    """TensorFlow, Keras and tf_vrre, imported once the flags are checked (a refused command starts
    no TensorFlow)."""
    global keras, np, tf, tf_vrre, diagnostics, function_space, atomic, gradient_noise
    import keras
    import numpy as np
    import tensorflow as tf

    import tf_vrre
    from tf_vrre import diagnostics
    from tf_vrre.diagnostics import function_space
    from tf_vrre.runs import atomic
    from tf_vrre.sgmcmc import gradient_noise

    for builder in (mlp, digits_mlp):  # the samplers save their model builders by name
        keras.saving.register_keras_serializable(package="is_it_done")(builder)


NAME = "is-it-done"
BURN_IN = 0.2


def _split(d):
    from sklearn.model_selection import train_test_split

    x_tr, x_te, y_tr, y_te = train_test_split(d.data, d.target, test_size=0.2, random_state=0, stratify=d.target)
    mu, sd = x_tr.mean(0), x_tr.std(0)
    sd[sd == 0] = 1.0
    return (
        ((x_tr - mu) / sd).astype("float32"),
        y_tr.astype("int64"),
        ((x_te - mu) / sd).astype("float32"),
        y_te.astype("int64"),
    )


def data():
    """scikit-learn's wine (178 wines, 13 measurements, 3 cultivars): a stratified held-out fifth."""
    from sklearn import datasets

    return _split(datasets.load_wine())


def mlp():
    """13 -> 16 (tanh) -> 3: 275 weights."""
    inp = keras.Input((13,))
    return keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(16, activation="tanh")(inp)))


def digits_mlp():
    """scikit-learn's 8x8 digits: 64 -> 32 (tanh) -> 10, 2,410 weights (the posterior-fidelity network)."""
    inp = keras.Input((64,))
    return keras.Model(inp, keras.layers.Dense(10)(keras.layers.Dense(32, activation="tanh")(inp)))


def ladder(num_chains, weights, rejection=0.5):
    """Temperatures from 1 with the Gaussian rule's ratio for ``rejection`` per pair."""
    ratio = float(np.exp(rejection / np.sqrt(weights / (2 * np.pi))))
    return [ratio**h for h in range(num_chains)], ratio


def sampler(args, seed, num_chains, x, y, every=None, model_fn=mlp, lr=None):
    temperatures, _ = ladder(num_chains, args.weights)
    s = tf_vrre.ReplicaExchangeSampler(
        model_fn,
        data_size=len(x),
        num_chains=num_chains,
        temperatures=temperatures if num_chains > 1 else 1.0,
        learning_rates=lr or args.lr,
        weight_decay=1.0,
        swap=tf_vrre.CorrectedSwap(pairs="deo") if num_chains > 1 else None,
        variance_reduction=tf_vrre.ControlVariates(period=args.period) if num_chains > 1 else None,
        seed=seed,
        independent_init=True,
        gradient_noise_every=gradient_noise.PERIOD if every is None else every,
    )
    if num_chains > 1:
        s.set_reference_data((x, y))
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=args.spe)
    return s


DIGITS_LR = 2e-4
"""The SGHMC step posterior_fidelity.py samples digits with (closest to NUTS among those it tried)."""


def heat(args, x, y):
    """``[(data, N, batch, eta, mean excess temperature)]``: one chain measuring on every step for
    ``args.heat_epochs`` epochs, the mean over the second half (the first is the way from the
    initial weights, where gradients are larger), at a batch of N/50 and at the walk's batch; and
    the same for the digits network at posterior_fidelity.py's step (batches N/50 and 64)."""
    from sklearn import datasets

    dx, dy, _, _ = _split(datasets.load_digits())
    cases = [("wine", x, y, mlp, args.lr, sorted({max(2, round(len(x) / 50)), args.batch}))]
    cases.append(("digits", dx, dy, digits_mlp, DIGITS_LR, [round(len(dx) / 50), 64]))
    out = []
    for name, xs, ys, model_fn, lr, batches in cases:
        for batch in batches:
            s = sampler(args, 0, 1, xs, ys, every=1, model_fn=model_fn, lr=lr)
            ds = tf.data.Dataset.from_tensor_slices((xs, ys)).shuffle(len(xs), seed=0).batch(batch)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", gradient_noise.GradientNoiseWarning)
                hist = s.fit(ds, epochs=args.heat_epochs, verbose=0).history
            settled = hist["excess_temperature_0"][args.heat_epochs // 2 :]
            out.append((name, len(xs), batch, lr, float(np.mean(settled))))
            print(f"heat: {name} batch {batch}: {out[-1][-1]:.4g}", flush=True)
    return out


def train(args, root, seed, epochs, x, y, x_held, y_held):
    """One run of ``epochs`` epochs into ``root/seed<seed>`` (continued from its checkpoint if the
    directory holds one); its directory and wall seconds."""
    run = os.path.join(root, f"seed{seed}")
    s = sampler(args, seed, args.chains, x, y)
    callbacks = [
        tf_vrre.SwapLogger(os.path.join(run, "swaps")),
        tf_vrre.SampleCollector(os.path.join(run, "samples"), every=args.every, validation_data=(x_held, y_held)),
        tf_vrre.Checkpoint(os.path.join(run, "checkpoint"), every_epochs=50),
    ]
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gradient_noise.GradientNoiseWarning)
        s.fit(s.make_dataset(args.batch), epochs=epochs, verbose=0, callbacks=callbacks)
    spent = {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}
    path = os.path.join(run, "seconds.json")  # summed over the processes that trained it (a resume adds)
    before = json.loads(open(path).read()) if os.path.exists(path) else {"wall": 0.0, "cpu": 0.0}
    total = {k: before[k] + spent[k] for k in spent}
    atomic.write_json(path, total)
    return run, total


def verdict_row(label, runs, steps):
    d = diagnostics.diagnose(runs, burn_in=BURN_IN)
    fs, v = d["function_space"], d["verdict"]
    flows = [f for f in d["replica_flow"] if f is not None]
    acceptance = [p["acceptance"] for f in flows for p in f["pairs"]]
    heat_ratio = [h["ratio"] for h in d["heat"] if h is not None and h["ratio"] is not None]
    rhat, ess = fs.get("rhat"), fs.get("ess")  # absent when the runs kept too few draws
    row = [
        label,
        len(runs),
        steps,
        fs["draws"],
        [rhat["median"], rhat["q90"]] if rhat else None,
        rhat["above_1.01"] * 100 if rhat else None,
        ess["q10"] if ess else None,
        d["summaries"].get("weight_norm", {}).get("rhat"),
        [min(acceptance), max(acceptance)],
        1 + float(np.median(heat_ratio)) if heat_ratio else None,
        v["status"],
    ]
    return row, d


def progress(runs, shares):
    """The predictive's R-hat / ESS over the draws up to each share of the runs' steps (the first
    fifth of that span dropped), and the status its numbers alone give."""
    loaded = [diagnostics.report.load_run(r, None) for r in runs]
    last = min(int(r["samples"]["step"].max()) for r in loaded)
    rows = []
    for share in shares:
        end = share * last
        keep = [(r["samples"]["step"] > BURN_IN * end) & (r["samples"]["step"] <= end) for r in loaded]
        pred, _ = function_space.draws(loaded, keep)
        fs = function_space.summarize(pred)
        fail, doubt = function_space.reasons(fs)
        status = "not mixing" if fail else "not yet established" if doubt else "mixing"
        rhat, ess = fs.get("rhat"), fs.get("ess")
        rows.append(
            [
                int(round(end)),
                fs["draws"],
                [rhat["median"], rhat["q90"]] if rhat else None,
                ess["q10"] if ess else None,
                status,
            ]
        )
    return rows


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.split("\n", 1)[0])
    p.add_argument("--seeds", type=arguments.at_least(2, 64), default=4, help="runs compared as chains (default 4)")
    p.add_argument(
        "--chains", type=arguments.at_least(2, 64), default=2, help="temperatures of the ladder, K (default 2)"
    )
    p.add_argument(
        "--epochs", type=arguments.at_least(2, 10**6), default=1600, help="epochs of the full runs (default 1600)"
    )
    p.add_argument(
        "--short-epochs",
        type=arguments.at_least(1, 10**6),
        default=160,
        help="epochs of the runs stopped early, fewer than --epochs (default 160)",
    )
    p.add_argument("--batch", type=arguments.at_least(1, 10**6), default=16, help="mini-batch size (default 16)")
    p.add_argument("--lr", type=arguments.positive_float(), default=1e-3, help="SGHMC step eta (default 1e-3)")
    p.add_argument(
        "--every", type=arguments.at_least(1, 10**6), default=16, help="SampleCollector thinning (default 16 steps)"
    )
    p.add_argument(
        "--spe", type=arguments.at_least(1, 10**6), default=8, help="steps per execution, dividing --every (default 8)"
    )
    p.add_argument(
        "--period",
        type=arguments.at_least(1, 10**6),
        default=20,
        help="control-variate refresh period m (default 20 steps)",
    )
    p.add_argument(
        "--heat-epochs",
        type=arguments.at_least(1, 10**6),
        default=40,
        help="epochs of the heat measurements (default 40)",
    )
    p.add_argument(
        "--work",
        type=arguments.output_directory,
        default=None,
        help="directory of the runs (default: a temporary one); a rerun continues its runs",
    )
    p.add_argument(
        "--train-seeds",
        type=arguments.int_list(0, 63, "seeds"),
        default=None,
        help="only train these seeds' runs into --work (e.g. 0,2), for several processes at once; "
        "then run without it: finished runs are not trained again",
    )
    results.add_arguments(p, NAME)
    p.add_argument(
        "--stage",
        choices=("full", "early", "both"),
        default="both",
        help="with --train-seeds: train only the full runs, only the runs stopped early, or both (default)",
    )
    p.add_argument(
        "--heat-only",
        action="store_true",
        help="only measure the heat of gradient noise into --work (beside --train-seeds processes)",
    )
    args = p.parse_args(argv)
    for flag, given in (("--train-seeds", args.train_seeds is not None), ("--heat-only", args.heat_only)):
        if given and args.work is None:
            arguments.die(f"{flag}: needs --work, the directory the final run reads")
    if args.short_epochs >= args.epochs:
        arguments.die(f"--short-epochs: must be < --epochs ({args.epochs}), got {args.short_epochs}")
    if args.every % args.spe:
        arguments.die(f"--spe: must divide --every ({args.every}), got {args.spe}")
    if args.train_seeds is not None and max(args.train_seeds) >= args.seeds:
        arguments.die(f"--train-seeds: seeds in [0, {args.seeds - 1}] (--seeds), got {max(args.train_seeds)}")
    arguments.requires("sklearn", "scikit-learn", "is_it_done.py", "the wine and digits data")
    return args


def _heat_once(args, root, x, y):
    """The excess temperatures of :func:`heat`, measured once per ``--work`` directory (a rerun,
    or ``--heat-only``, reads them back from ``heat.json``)."""
    heat_path = os.path.join(root, "heat.json")
    if os.path.exists(heat_path):
        heated = [tuple(case) for case in json.loads(open(heat_path).read())]
    else:
        heated = heat(args, x, y)
        atomic.write_json(heat_path, heated)
    return heated


def _tables(args, full, early, heated, steps_per_epoch):
    """The results' tables: the heat of the gradient noise, the verdicts of the first run alone,
    of runs stopped at a tenth and of the full runs, and how the verdict grows with the run's
    length; and each verdict row's diagnosis."""
    short = args.short_epochs
    rows, diags = [], {}
    for label, runs, epochs in (
        ("the first run alone", full[:1], args.epochs),
        ("four runs stopped at a tenth", early, short),
        ("four full runs", full, args.epochs),
    ):
        row, diags[label] = verdict_row(label, runs, epochs * steps_per_epoch)
        rows.append(row)
    verdicts = results.table(
        [
            "runs",
            "seeds",
            "steps per run",
            "draws per run",
            "R-hat of the predictive: median / 90th pct",
            "inputs above 1.01 (%)",
            "ESS, 10th pct",
            "R-hat of the weight norm",
            "swap acceptance per pair",
            "temperature with gradient noise (x 1)",
            "verdict",
        ],
        [
            "{}",
            "{:d}",
            "{:,}",
            "{:d}",
            "{:.3f} / {:.3f}",
            "{:.0f}",
            "{:.0f}",
            "{:.2f}",
            "{:.2f}-{:.2f}",
            "{:.3f}",
            "{}",
        ],
        rows,
        keys=["first", "early", "full"],
    )
    shares = (0.1, 0.25, 0.5, 1.0)
    grow = results.table(
        [
            "steps per run",
            "draws per run",
            "R-hat of the predictive: median / 90th pct",
            "ESS, 10th pct",
            "verdict of the predictive",
        ],
        ["{:,}", "{:d}", "{:.3f} / {:.3f}", "{:.0f}", "{}"],
        progress(full, shares),
        keys=[f"{s:g}" for s in shares],
    )
    heat_table = results.table(
        ["data", "N", "batch", "step eta", "excess temperature", "the chain runs at (x its temperature 1)"],
        ["{}", "{:,}", "{:d}", "{:g}", "{:.4f}", "{:.2f}"],
        [[name, n, b, lr, e, 1 + e] for name, n, b, lr, e in heated],
        keys=[f"{name}-{b}" for name, _, b, _, _ in heated],
    )
    return heat_table, verdicts, grow, diags


def main(argv=None):
    args = parse_args(argv)
    target = results.check_target(args.results, args.force)
    _load()
    x, y, x_held, y_held = data()
    args.weights = mlp().count_params()
    temperatures, ratio = ladder(args.chains, args.weights)
    root = args.work or tempfile.mkdtemp(prefix="is-it-done-")
    if args.train_seeds is not None:  # train these seeds' runs into --work and stop (parallel processes)
        for seed in args.train_seeds:
            if args.stage in ("full", "both"):
                train(args, os.path.join(root, "full"), seed, args.epochs, x, y, x_held, y_held)
            if args.stage in ("early", "both"):
                train(args, os.path.join(root, "early"), seed, args.short_epochs, x, y, x_held, y_held)
        return
    start = time.perf_counter()
    heated = _heat_once(args, root, x, y)
    if args.heat_only:
        return
    short = args.short_epochs
    steps_per_epoch = -(-len(x) // args.batch)
    full, early, seconds = [], [], []
    for seed in range(args.seeds):
        run, sec = train(args, os.path.join(root, "full"), seed, args.epochs, x, y, x_held, y_held)
        full.append(run)
        seconds.append(sec)
        early.append(train(args, os.path.join(root, "early"), seed, short, x, y, x_held, y_held)[0])
        print(f"seed {seed}: {sec['wall']:.0f} s wall, {sec['cpu']:.0f} s CPU", flush=True)
    heat_table, verdicts, grow, diags = _tables(args, full, early, heated, steps_per_epoch)
    total = time.perf_counter() - start
    final = diags["four full runs"]["verdict"]
    print(results.markdown(heat_table), results.markdown(verdicts), results.markdown(grow), sep="\n\n")
    print(diagnostics.report.format_verdict(final))
    results.write(
        target,
        {"heat": heat_table, "verdicts": verdicts, "progress": grow},
        settings={
            "data": "sklearn.datasets.load_wine, stratified held-out fifth (random_state 0)",
            "train": len(x),
            "held_out": len(x_held),
            "weights": args.weights,
            "seeds": args.seeds,
            "chains": args.chains,
            "temperatures": temperatures,
            "ratio": ratio,
            "epochs": args.epochs,
            "short_epochs": short,
            "steps_per_execution": args.spe,
            "steps_per_epoch": steps_per_epoch,
            "batch": args.batch,
            "lr": args.lr,
            "every": args.every,
            "period": args.period,
            "burn_in": BURN_IN,
        },
        seconds={"this_process": total, "full_runs": seconds},
        final_verdict=final,
    )


if __name__ == "__main__":
    main()
