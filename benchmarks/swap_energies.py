"""Why does VR-reSGHMC accept no swap where reSGHMC accepts half of them? Energies, sigma^2, truth.

``benchmarks/step_cost.py`` (ResNet-8, 640 real CIFAR-10 images, batch 128, eta = 2e-6,
tau = (0.01, 0.05), F = 1.5e5 for both) reported 0 of 126 accepted swap attempts for
VR-reSGHMC and 129 of 223 for reSGHMC.  This script reruns that setting and records, at
every step and for both chains, the sampler's swap energy ``U~`` (what the decision used),
``sigma^2``, the decision, and the *exact* energy ``U = sum_i l(x_i | beta) + wd/2 ||beta||^2``
of the same state over all N images (``training=False``; N = 640 makes this cheap).  Then for
each configuration:

- ``bias`` and ``sd`` of the estimated energy difference ``U~_lo - U~_hi`` against the exact
  one: is the estimator centred on the truth, and how noisy is it?
- ``sigma^2`` (the sampler's estimate of that variance) next to the measured ``sd^2``;
- ``penalty = delta^2 sigma^2 / F`` (nats) and the exact-energy acceptance
  ``mean min(1, exp(delta (U_lo - U_hi)))``: what the swap rule would do with noiseless
  energies (no correction needed);
- how many accepted swaps had an exact energy difference that makes a swap essentially
  impossible (``delta (U_lo - U_hi) < -10``): swaps made by estimator noise.

Configurations (same seed, network initialisation and batches):

  resghmc          reSGHMC, mini-batch energies from the training forward (BatchNorm batch statistics)
  resghmc_inf      reSGHMC, mini-batch energies with ``training=False``
  vr_train         VR-reSGHMC as in step_cost: ``energy_mode="train"``, full pass in batches of 1000
  vr_train_n       VR-reSGHMC, train mode, full pass in batches of n = 128 (the documented advice)
  vr_inf           VR-reSGHMC, ``energy_mode="inference"`` (cached snapshot energies), c = -1
  vr_inf_adaptive  as vr_inf with the adaptive coefficient (the paper's Algorithm 2)
  resghmc_m        reSGHMC with the sigma^2 window of the VR runs (m steps): first attempt at step m
  vr_inf_1         vr_inf with reSGHMC's sigma^2 window (1 step): attempts from step 1

The last two swap the one other difference between step_cost's reSGHMC and VR samplers:
``CorrectedSwap(period=None)`` updates sigma^2 every step without control variates (swaps may
start at step 1) but every ``m`` steps with them (no swap before step ``m``).

Usage: ``python benchmarks/swap_energies.py [--steps 300] [--configs ...] [--json out.json] --force``
(about 3-5 minutes per configuration on 2 CPU cores). The table goes to
``benchmarks/results/swap-energies.json`` (``--results``), which ``python benchmarks/render_docs.py``
puts into ``docs/benchmarks/swap-energies.md``.  The flags and the ``--data`` file are checked
before TensorFlow starts (exit status 2 and one line naming the flag or file).
"""

import csv
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import arguments
import numpy as np
import results

from tf_vrre.runs import atomic

# ../shared/data next to the repository (or next to its parent folder)
DEFAULT_DATA = next(
    (
        d / "shared" / "data" / "cifar10" / "cifar10_test.npz"
        for d in (REPO.parent, REPO.parents[1])
        if (d / "shared" / "data").is_dir()
    ),
    REPO.parent / "shared" / "data" / "cifar10" / "cifar10_test.npz",
)
CONFIGS = ("resghmc", "resghmc_inf", "vr_train", "vr_train_n", "vr_inf", "vr_inf_adaptive", "resghmc_m", "vr_inf_1")
LABELS = {
    "resghmc": "reSGHMC (as step_cost)",
    "resghmc_inf": "reSGHMC, inference-mode energies",
    "vr_train": "VR-reSGHMC (as step_cost: train mode, full pass in batches of 1000)",
    "vr_train_n": "VR-reSGHMC, train mode, full pass in batches of 128",
    "vr_inf": "VR-reSGHMC, inference mode (cached snapshot energies)",
    "vr_inf_adaptive": "VR-reSGHMC, inference, adaptive c",
    "resghmc_m": "**reSGHMC with VR's sigma^2 window (m = 98)**",
    "vr_inf_1": "**VR-reSGHMC (inference) with reSGHMC's window (1 step)**",
}


def parse_args(argv=None):
    """The command line and the ``--data`` images, checked before TensorFlow starts (exit 2 and
    one line naming the flag or file)."""
    p = arguments.parser(__file__, __doc__.split("\n", 1)[0])
    p.add_argument("--steps", type=arguments.positive(int, 10**8), default=300, help="sampler steps per configuration")
    p.add_argument("--data-size", type=arguments.positive(int, 10**7), default=640)
    p.add_argument("--batch", type=arguments.positive(int, 10**7), default=128)
    p.add_argument("--m", type=arguments.positive(int, 10**7), default=98)
    p.add_argument("--lr", type=arguments.positive_float(), default=2e-6, help="eta (multiplies the N-scaled gradient)")
    p.add_argument("--correction", type=arguments.positive_float(), default=1.5e5)
    p.add_argument("--temperatures", type=arguments.positive_float(), nargs=2, default=(0.01, 0.05))
    p.add_argument("--configs", type=arguments.names(CONFIGS, "configurations"), default=CONFIGS)
    p.add_argument("--data", type=arguments.input_file, default=str(DEFAULT_DATA))
    p.add_argument("--seed", type=arguments.nonnegative_int, default=0)
    p.add_argument("--json", type=arguments.output_file, default=None, help="also write every measurement here")
    results.add_arguments(p, "swap-energies")
    args = p.parse_args(argv)
    if not args.temperatures[0] < args.temperatures[1]:
        arguments.die(f"--temperatures: the cold one must be below the hot one, got {args.temperatures}")
    if args.batch > args.data_size:
        arguments.die(f"--batch: must be <= --data-size ({args.data_size}), got {args.batch}")
    d = arguments.read_npz(args.data, ("x", "y"), "--data")
    x, y = d["x"], d["y"].reshape(-1)
    if x.ndim != 4 or x.shape[1:] != (32, 32, 3) or len(y) != len(x):
        arguments.die(
            f"--data: {args.data}: x has shape {list(x.shape)}, y {len(y)} labels; expected [N, 32, 32, 3], N"
        )
    if len(x) < args.data_size:
        arguments.die(f"--data-size: {args.data} holds {len(x)} images, fewer than {args.data_size}")
    args.images = x[: args.data_size], y[: args.data_size].astype(np.int64)
    results.check_target(args.results, args.force)
    return args


def write_json(path, settings, found):
    """Writes ``--json`` atomically (a symbolic link there is replaced, never followed)."""
    return atomic.write_json(path, {"settings": settings, "results": found}, indent=2, newline=True)


def resnet8():
    from tf_vrre.workflows.image_classification import models

    return models.resnet(8, num_classes=10)


def exact_energies(x, y, weight_decay):
    """A Keras callback recording the exact (inference-mode, all N examples) energies of every slot
    before each step (``.rows``: step -> energies)."""
    import keras
    import tensorflow as tf

    class Exact(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.x, self.y, self.wd = x, y, weight_decay
            self.rows = {}
            self._fn = None

        def _build(self, s):
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

            @tf.function
            def energies():
                out = []
                for chain in s.chains:
                    nll = tf.reduce_sum(tf.cast(loss(self.y, chain(self.x, training=False)), tf.float64))
                    sq = tf.add_n([tf.reduce_sum(tf.square(tf.cast(w, tf.float64))) for w in chain.trainable_weights])
                    out.append(nll + 0.5 * self.wd * sq)
                return tf.stack(out)

            return energies

        def on_train_batch_begin(self, batch, logs=None):
            s = self.model
            self._fn = self._fn or self._build(s)
            self.rows[int(s.state.step.numpy())] = self._fn().numpy()

    return Exact()


def build(config, args, data):
    import keras

    import tf_vrre

    vr = config.startswith("vr")
    mode = "inference" if config.endswith("_inf") or "_inf_" in config else "train"
    period = {"resghmc_m": args.m, "vr_inf_1": 1}.get(config)
    cv = None
    if vr:
        cv = tf_vrre.ControlVariates(
            period=args.m,
            batch_size=args.batch if config == "vr_train_n" else 1000,
            coefficient="adaptive" if config.endswith("adaptive") else -1.0,
        )
    s = tf_vrre.ReplicaExchangeSampler(
        resnet8,
        data_size=args.data_size,
        num_chains=2,
        temperatures=list(args.temperatures),
        learning_rates=args.lr,
        dynamics="sghmc",
        momentum=0.9,
        weight_decay=25.0,
        swap=tf_vrre.CorrectedSwap(correction=args.correction, period=period),
        variance_reduction=cv,
        energy_mode=mode,
        seed=args.seed,
    )
    if vr:
        s.set_reference_data(data.reference)
    s.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return s


def analyse(swap_rows, exact, temps):
    delta = 1.0 / temps[0] - 1.0 / temps[1]
    rows = [r for r in swap_rows if int(r["step"]) in exact]
    if not rows:
        return {"attempts": 0}
    est = np.array([float(r["energy_lo"]) - float(r["energy_hi"]) for r in rows])
    true = np.array([exact[int(r["step"])][0] - exact[int(r["step"])][1] for r in rows])
    sigma2 = np.array([float(r["sigma2"]) for r in rows])
    corr = np.array([float(r["correction"]) for r in rows])
    acc = np.array([int(float(r["accepted"])) for r in rows], bool)
    err = est - true
    half = len(rows) // 2
    exact_accept = np.minimum(1.0, np.exp(np.minimum(delta * true, 0.0)))
    return {
        "attempts": len(rows),
        "accepted": int(acc.sum()),
        "first_attempt": int(rows[0]["step"]),
        "sigma2_mean": float(sigma2.mean()),
        "sigma2_median": float(np.median(sigma2)),
        "error_var": float(err.var(ddof=1)),
        "bias": float(err.mean()),
        "bias_se": float(err.std(ddof=1) / np.sqrt(len(err))),
        "bias_first_half": float(err[:half].mean()),
        "bias_second_half": float(err[half:].mean()),
        "sd": float(err.std(ddof=1)),
        "est_diff_mean": float(est.mean()),
        "exact_diff_mean": float(true.mean()),
        "exact_diff_min": float(true.min()),
        "exact_diff_max": float(true.max()),
        "penalty_mean": float(np.mean(delta**2 * sigma2 / corr)),
        "exact_accept_rate": float(exact_accept.mean()),
        "accepted_while_exact_impossible": int(np.sum(acc & (delta * true < -10))),
        "exact_energy_lo_last": float(exact[int(rows[-1]["step"])][0]),
        "exact_energy_hi_last": float(exact[int(rows[-1]["step"])][1]),
    }


def main(argv=None):
    args = parse_args(argv)
    import keras

    import tf_vrre
    from tf_vrre.workflows.image_classification.data import Preprocessing, TrainingData

    target, (x, y) = args.results, args.images
    data = TrainingData(x, y, Preprocessing.from_images(x), 10)
    spe = data.steps_per_epoch(args.batch)
    epochs = max(1, args.steps // spe)
    print(
        f"swap_energies: ResNet-8, N={args.data_size} real CIFAR-10 images, batch {args.batch}, eta={args.lr:g}, "
        f"tau={tuple(args.temperatures)}, F={args.correction:g}, m={args.m}, {epochs * spe} steps per config",
        flush=True,
    )
    found = {}
    for config in args.configs:
        t0 = time.time()
        keras.utils.clear_session()
        s = build(config, args, data)
        out = tempfile.mkdtemp(prefix=f"swap_energies_{config}_")
        exact = exact_energies(*data.reference, weight_decay=25.0)
        s.fit(
            data.dataset(args.batch, args.seed, s.state.step),
            epochs=epochs,
            verbose=0,
            shuffle=False,
            callbacks=[exact, tf_vrre.SwapLogger(out)],
        )
        with open(os.path.join(out, "swaps.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        found[config] = analyse(rows, exact.rows, args.temperatures)
        r = found[config]
        print(
            f"  {config:<16s} {r.get('accepted', 0):>4d}/{r['attempts']:<4d} swaps; sigma2 {r.get('sigma2_mean', 0):9.3g} "
            f"(measured error var {r.get('error_var', 0):9.3g}); bias {r.get('bias', 0):+8.2f} +- {r.get('bias_se', 0):.2f} "
            f"(1st half {r.get('bias_first_half', 0):+.2f}, 2nd {r.get('bias_second_half', 0):+.2f}); "
            f"exact U_lo-U_hi {r.get('exact_diff_mean', 0):+.2f} [{r.get('exact_diff_min', 0):+.1f}, "
            f"{r.get('exact_diff_max', 0):+.1f}], estimated {r.get('est_diff_mean', 0):+.2f}; penalty "
            f"{r.get('penalty_mean', 0):.3g}; exact-energy accept {r.get('exact_accept_rate', 0):.3f}; accepted with "
            f"delta*dU < -10: {r.get('accepted_while_exact_impossible', 0)}  ({time.time() - t0:.0f} s)",
            flush=True,
        )
    settings = {k: v for k, v in vars(args).items() if k not in ("results", "force", "json", "images")}
    if args.json:
        write_json(args.json, settings, found)
    results.write(target, {"main": table(found)}, settings=settings, measured=found)
    return found


def table(found):
    """The page's table: one row per configuration that attempted a swap."""
    rows = [
        [
            LABELS[c],
            r["first_attempt"],
            [r["accepted"], r["attempts"]],
            r["sigma2_mean"],
            r["error_var"],
            [r["bias"], r["bias_se"]],
            [r["exact_diff_mean"], r["exact_diff_min"], r["exact_diff_max"]],
            r["exact_accept_rate"],
            r["accepted_while_exact_impossible"],
        ]
        for c, r in found.items()
        if r["attempts"]
    ]
    return results.table(
        [
            "configuration",
            "first attempt",
            "swaps / attempts",
            "sigma^2 (sampler)",
            "var of the error of U~_lo - U~_hi",
            "bias of U~_lo - U~_hi",
            "exact U_lo - U_hi: mean [min, max]",
            "exact-energy acceptance",
            "accepted with delta (U_lo - U_hi) < -10",
        ],
        [
            "{}",
            "step {}",
            "{} / {}",
            "{:.3g}",
            "{:.3g}",
            "{:+.2f} +- {:.2f}",
            "{:.1f} [{:.0f}, {:+.0f}]",
            "{:.3f}",
            "{}",
        ],
        rows,
        keys=[c for c, r in found.items() if r["attempts"]],
    )


if __name__ == "__main__":
    main()
