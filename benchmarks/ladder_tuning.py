"""Ladder tuning against exact answers: the tuned ladder beside a hand-set (linear) and a geometric one.

For each target, energy estimator and number of chains K, three ladders run the same number of
steps with the same seeds (even/odd swaps, SGLD, all chains at the cold chain's learning rate):

- ``linear``: the hand-set ladder, temperatures equally spaced (the tuner's starting point);
- ``geometric``: temperatures in geometric progression;
- ``tuned``: the linear ladder tuned by ``LadderTuner`` during the first ``--tune`` steps, then fixed.

Every number is measured on the steps after ``--tune`` (the same window for the three ladders):
per-pair rejection (linear = "before", tuned = "after"), the barrier Lambda from those rejections
(``tf_vrre.sgmcmc.ladder.Barrier``; for the tuned ladder also the tuner's own last-round
estimate), round trips cold -> hot -> cold per 1,000 steps (all states together) beside NRPT's
theory value ``1000 / (2 + 2 sum r / (1 - r))`` per attempt (which assumes independent energies
between attempts, so it is a ceiling for SG-MCMC), and the cold chain's error against the exact
answer (mean over seeds +- the larger of the across-seed and the pooled within-run batch-means
standard errors).

Targets:

- ``gaussian``: the 4-dimensional standard Gaussian, tau in [1, 100] (b in [0.01, 1]), energy
  |w|^2 / 2 written as a sum over N = 100 examples with a zero-sum linear term (mini-batch noise
  linear in w).  Exact: Lambda = Gamma(5/2) / (sqrt(pi) Gamma(2)) log 100 = 3.454 (``gaussian_barrier``),
  the optimal ladder is geometric; the cold chain's E[w_1^2] = 1 (SGLD at eta = 0.03 gives
  1 / (1 - eta / 2) = 1.015: its discretisation bias, not the swaps').
- ``mixture``: the paper's 1-D mixture (``tf_vrre.workflows.gaussian_mixture``, N = 1000, data
  seed 0), tau in [10, 3000], eta = 1e-4, n = 100, m = 4, F = 2; the cold chain's left-mode weight
  against the exact one on a grid.

Energies: ``exact`` (full batch: sigma2 = 0, the swap is Metropolis), ``vr`` (n = 20 / 100 with
control variates, ``ControlVariates(period=4)``).

    python benchmarks/ladder_tuning.py                    # the table of docs/guides/ladder.md
    python benchmarks/ladder_tuning.py --quick            # a smaller version (fewer steps and seeds)
    python benchmarks/ladder_tuning.py --targets gaussian --chains 8 --energies exact --seeds 2
    python benchmarks/ladder_tuning.py --targets gaussian --chains 8 --energies exact --ladders tuned --seeds 1 \
        --figure docs/ladder-barrier.png --out /tmp/ladder-figure.json      # the figure of the guide

Writes ``benchmarks/results/ladder_tuning.json`` (``--out``; ``--force`` to replace it) through
``benchmarks/results.py``: the command, git commit, date, hardware, the table of the guide
(``tables`` -> ``main``) and every number (per seed too); ``python benchmarks/render_docs.py``
renders the table in ``docs/guides/ladder.md``.  ``--tables-only`` recomputes the tables of an
existing ``--out`` file from its stored runs (no sampling).  The flags (and with ``--tables-only``
the ``--out`` file) are checked before TensorFlow starts: exit status 2 and one line naming the
flag or file.
"""

import math
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "helpers"))

import arguments
import numpy as np
import results

from tf_vrre.diagnostics.replicas import round_trips, slot_paths
from tf_vrre.runs import atomic

GAUSS = {"dim": 4, "offset": 0.0, "weight": 0.5, "noise": 0.02, "data_size": 100}
GAUSS_LR, MIX_LR, SPE = 0.03, 1e-4, 50
RANGES = {"gaussian": (1.0, 100.0), "mixture": (10.0, 3000.0)}
BLOCKS = 20  # batch means of the cold chain's records (one record per SPE steps) after tuning


def swap_drain(statistic):
    """A Keras callback reading the sampler's swap record after every executed block: (step, pair,
    accepted) of every attempted pair, and the cold chain's statistic (first coordinate's square,
    or beta)."""
    import keras

    from tf_vrre.sgmcmc.swap_record import CAPACITY, swap_log_columns

    class SwapDrain(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.statistic, self.rows, self.cold, self.next = statistic, [], [], 0

        def on_train_batch_end(self, batch, logs=None):
            s = self.model
            end = int(s.state.step.numpy())
            buf = s.state.swap.log.numpy()
            cols = swap_log_columns(s.num_chains)
            for step in range(self.next, end):
                row = buf[step % CAPACITY]
                for p in range(s.num_chains - 1):
                    if row[cols.index(f"proposed_{p}")] > 0.5:
                        self.rows.append((step, p, row[cols.index(f"accepted_{p}")] > 0.5))
            self.next = end
            w = s.cold_model.trainable_weights[0].numpy().reshape(-1)
            self.cold.append((end, self.statistic(w)))

    return SwapDrain()


def _ladder(kind, lo, hi, K):
    return np.geomspace(lo, hi, K).tolist() if kind == "geometric" else np.linspace(lo, hi, K).tolist()


def run_one(target_name, energies, K, kind, seed, tune, fixed, record_dir=None, correction=2.0, swap_options=None):
    """One run; returns the post-tuning measurements (a tuned run's record goes to ``record_dir``).
    ``correction`` / ``swap_options``: the mixture's ``CorrectedSwap`` arguments besides ``pairs``."""
    import _ladder_targets

    from tf_vrre.callbacks.ladder_tuner import LadderTuner
    from tf_vrre.workflows.gaussian_mixture import target

    lo, hi = RANGES[target_name]
    temps = _ladder(kind, lo, hi, K)
    steps = tune + fixed
    tuner = LadderTuner(tune, learning_rates=0.0, directory=record_dir, overwrite=True) if kind == "tuned" else None
    if target_name == "gaussian":
        drain = swap_drain(lambda w: float(w[0] ** 2))
        batch = GAUSS["data_size"] if energies == "exact" else 20
        s, ds, _ = _ladder_targets.mixture_sampler(
            temps, GAUSS_LR, seed, batch_size=batch, vr=energies == "vr", steps_per_execution=SPE, target=GAUSS
        )
        s.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[c for c in (tuner, drain) if c])
    else:
        drain = swap_drain(lambda w: float(w[0]))
        data = target.make_data(1000, seed=0)
        target.run(
            "resgld" if energies == "exact" else "vr-resgld",
            data,
            steps,
            learning_rate=MIX_LR,
            batch_size=1000 if energies == "exact" else 100,
            period=4,
            temperatures=temps,
            correction=correction,
            seed=seed,
            record_every=SPE,
            callbacks=[c for c in (tuner, drain) if c],
            swap_options={"pairs": "deo", **(swap_options or {})},
            initial=30.0 if seed % 2 == 0 else -5.0,
        )
    return _measure(drain, tuner, K, tune, steps, target_name)


def _measure(drain, tuner, K, tune, steps, target_name):
    from tf_vrre.sgmcmc import ladder
    from tf_vrre.workflows.gaussian_mixture import target

    rows = np.array(drain.rows, dtype=np.int64).reshape(-1, 3)
    post = rows[rows[:, 0] >= tune]
    attempts = np.bincount(post[:, 1], minlength=K - 1)
    swaps = np.bincount(post[:, 1], weights=post[:, 2], minlength=K - 1)
    r = ladder.rejection_rates(attempts, swaps)
    temps = [float(t) for t in drain.model.state.ladder.temperature.numpy()]
    barrier = ladder.Barrier(temps, r, attempts=attempts)
    times, slots = slot_paths(post[:, 0], post[:, 1], post[:, 2], K, start_step=tune)
    trips = int(round_trips(times, slots)["per_state"].sum())
    attempt_steps = np.unique(post[:, 0]).size
    theory = 1000.0 * ladder.round_trip_rate(r) * attempt_steps / (steps - tune)
    cold = np.array([v for st, v in drain.cold if st > tune])
    values = (cold < target.PHI / 2).astype(float) if target_name == "mixture" else cold
    blocks = values[: values.size - values.size % BLOCKS].reshape(BLOCKS, -1).mean(1)
    return {
        "temperatures": temps,
        "rejection": r.tolist(),
        "attempts": attempts.tolist(),
        "barrier": barrier.total,
        "tuner_barrier": tuner.record["rounds"][-1]["barrier"] if tuner else None,
        "trips_per_1000": 1000.0 * trips / (steps - tune),
        "theory_per_1000": theory,
        "cold": float(values.mean()),
        "correction": float(drain.model.state.swap.correction.numpy()),
        "cold_se": float(blocks.std(ddof=1) / math.sqrt(BLOCKS)),
    }


def _mean_se(values):
    """The mean over seeds and its standard error across them (``None`` for one seed: no spread
    to measure, and no NaN written into the results file)."""
    v = np.asarray(values, np.float64)
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None)


def _exact(target_name):
    if target_name == "gaussian":
        return 1.0
    from tf_vrre.workflows.gaussian_mixture import target

    return float(target.mode_weights(target.make_data(1000, seed=0), RANGES["mixture"][0])[0])


def summarise(runs, target_name):
    """Means over seeds.  The cold chain's standard error is the larger of the spread across seeds
    (few seeds: a rough estimate) and the pooled within-run batch-means error (20 blocks; too
    small when the chain's mode changes are rarer than a block), so the z-value is conservative."""
    exact = _exact(target_name)
    cold, across = _mean_se([r["cold"] for r in runs])
    pooled = math.sqrt(sum(r["cold_se"] ** 2 for r in runs)) / len(runs)
    se = max(pooled, across) if across is not None else pooled
    return {
        "barrier": _mean_se([r["barrier"] for r in runs]),
        "tuner_barrier": _mean_se([r["tuner_barrier"] for r in runs]) if runs[0]["tuner_barrier"] else None,
        "rejection": np.mean([r["rejection"] for r in runs], 0).tolist(),
        "trips_per_1000": _mean_se([r["trips_per_1000"] for r in runs]),
        "theory_per_1000": _mean_se([r["theory_per_1000"] for r in runs]),
        "cold": cold,
        "cold_se": se,
        "cold_se_across_seeds": across,
        "cold_se_within_runs": pooled,
        "exact": exact,
        "error": cold - exact,
        "z": (cold - exact) / se if se and np.isfinite(se) and se > 0 else None,
        "temperatures": np.mean([r["temperatures"] for r in runs], 0).tolist(),
    }


def _mean_cell(mean, se, fmt="{:.1f}"):
    """A mean over seeds with its standard error, or the mean alone for one seed."""
    return [mean, se] if se is not None else {"value": mean, "format": fmt}


def _pair_cell(values, fmt="{:.2f}"):
    """A cell of one number per pair of chains (its own format: as many fields as values)."""
    return {"value": list(values), "format": " ".join([fmt] * len(values))}


def table(rows):
    """The guide's table of the stored ``results`` rows (target, energies, num_chains, ladder,
    summary): Lambda (the tuner's), rejection per pair, round trips and NRPT's theory per 1,000
    steps, the cold chain's error +- its standard error."""
    out, keys = [], []
    for r in rows:
        s = r["summary"]
        lam = (
            [s["barrier"][0], s["tuner_barrier"][0]]
            if s["tuner_barrier"]
            else {"value": s["barrier"][0], "format": "{:.2f}"}
        )
        out.append(
            [
                r["target"],
                r["energies"],
                r["num_chains"],
                r["ladder"],
                lam,
                _pair_cell(s["rejection"]),
                _mean_cell(*s["trips_per_1000"]),
                s["theory_per_1000"][0],
                [s["error"], s["cold_se"]],
            ]
        )
        keys.append(f"{r['target']}-{r['energies']}-k{r['num_chains']}-{r['ladder']}")
    return results.table(
        [
            "target",
            "energies",
            "K",
            "ladder",
            "Lambda (tuner's)",
            "rejection per pair",
            "round trips / 1000 steps",
            "NRPT theory",
            "cold chain error",
        ],
        ["{}", "{}", "{}", "{}", "{:.2f} ({:.2f})", "{}", "{:.1f} +- {:.1f}", "{:.1f}", "{:+.3f} +- {:.3f}"],
        out,
        keys,
    )


def tables_only(path, table_of=None):
    """Adds the ``tables`` of the stored runs to the results file ``path`` (no sampling; the
    command, commit and date of the measurement are kept); ``table_of``: the function making the
    table of the stored ``results`` rows (default :func:`table`).  A damaged file is refused (exit
    2, one line naming it) and left as it is; the new one replaces it atomically."""
    doc = arguments.read_json(path, "--out", keys=("results", "command"))
    try:
        doc["tables"] = {"main": (table_of or table)(doc["results"])}
        doc["command"] = doc["command"].strip()
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
        what = f"no key {err.args[0]!r}" if isinstance(err, KeyError) else f"{type(err).__name__}: {err}"
        arguments.die(f"--out: {path}: its stored runs are not those of this script ({what})")
    atomic.write_json(path, doc, indent=1, newline=True)
    print(results.markdown(doc["tables"]["main"]))
    print(f"\nwrote the tables of {path}")


def fixed_steps(minimum=BLOCKS * SPE):
    """Argument type of ``--fixed``: at least ``BLOCKS`` records of the cold chain (one per ``SPE``
    steps) for its batch-means standard error."""
    return arguments.at_least(minimum, 10**9)


def parse_args(argv):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument("--targets", type=arguments.names(RANGES, "targets"), default=("gaussian", "mixture"))
    p.add_argument("--energies", type=arguments.names(("exact", "vr"), "energies"), default=("exact", "vr"))
    p.add_argument(
        "--chains", type=arguments.int_list(2, 64, "numbers of chains"), default=(4, 8), help="K, comma-separated"
    )
    p.add_argument(
        "--ladders",
        type=arguments.names(("linear", "geometric", "tuned"), "ladders"),
        default=("linear", "geometric", "tuned"),
    )
    p.add_argument("--seeds", type=arguments.positive(int, 1000), default=3)
    p.add_argument(
        "--tune",
        type=arguments.positive(int, 10**9),
        default=8000,
        help="tuning steps (also the burn-in of the fixed ladders)",
    )
    p.add_argument(
        "--fixed",
        type=fixed_steps(),
        default=24000,
        help=f"steps measured after the tuning phase (>= {BLOCKS * SPE}: {BLOCKS} records of {SPE} steps)",
    )
    p.add_argument("--quick", action="store_true", help="--seeds 2 --tune 4000 --fixed 8000")
    p.add_argument("--out", type=arguments.output_file, default=os.path.join(HERE, "results", "ladder_tuning.json"))
    p.add_argument(
        "--figure",
        type=arguments.output_file,
        help="draw the tuning record of the first tuned run (seed 0) to this PNG",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--tables-only", action="store_true", help="recompute the tables of --out from its stored runs")
    args = p.parse_args(argv)
    if args.tables_only:
        return args
    if "tuned" in args.ladders and min(args.chains) < 3:
        arguments.die(f"--chains: a tuned ladder needs K >= 3 (its ends stay put), got {min(args.chains)}")
    results.check_target(args.out, args.force, flag="--out")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.tables_only:
        return tables_only(args.out)
    from tf_vrre.diagnostics import ladder_report
    from tf_vrre.sgmcmc import tempered_gaussian

    if args.quick:
        args.seeds, args.tune, args.fixed = 2, 4000, 8000
    configs = [
        (t, e, k, kind) for t in args.targets for e in args.energies for k in args.chains for kind in args.ladders
    ]
    measured, start, figure_done = {}, time.time(), False
    for i, key in enumerate(configs):
        runs = []
        for seed in range(args.seeds):
            record = None
            if args.figure and key[3] == "tuned" and not figure_done:
                record = tempfile.mkdtemp()
            runs.append(run_one(*key, seed, args.tune, args.fixed, record))
            if record:
                ladder_report.plot_barrier(
                    args.figure,
                    ladder_report.read(record),
                    title=f"LadderTuner on the {key[0]} ({key[1]} energies), K = {key[2]}: "
                    f"{args.tune} tuning steps from a linear ladder",
                )
                figure_done = True
        measured[key] = {"summary": summarise(runs, key[0]), "runs": runs}
        print(
            f"[{i + 1}/{len(configs)}] {' '.join(map(str, key))}: {time.time() - start:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    print(
        f"\n{args.seeds} seeds x {args.tune} tuning + {args.fixed} measured steps; Lambda from the measured "
        "rejections (tuner's last-round estimate); cold chain error: Gaussian E[w_1^2] - 1, mixture left-mode "
        "weight - exact\n"
    )
    rows = [{"target": k[0], "energies": k[1], "num_chains": k[2], "ladder": k[3], **v} for k, v in measured.items()]
    print(results.markdown(table(rows)))
    exact_lambda = tempered_gaussian.gaussian_barrier(GAUSS["dim"], RANGES["gaussian"][0] / RANGES["gaussian"][1])
    print(
        f"\nexact: Gaussian Lambda = {exact_lambda:.3f} (geometric ladder optimal), E[w_1^2] = 1 "
        f"(SGLD at eta = {GAUSS_LR}: {1 / (1 - GAUSS_LR / 2):.4f}); mixture left-mode weight at tau = 10: "
        f"{_exact('mixture'):.4f}"
    )
    settings = dict(vars(args), out=os.path.relpath(os.path.abspath(args.out), os.path.dirname(HERE)))
    results.write(
        args.out,
        {"main": table(rows)},
        command=" ".join(["python benchmarks/ladder_tuning.py", *argv]),
        settings=settings,
        exact={"gaussian_barrier": exact_lambda, "mixture_left_weight": _exact("mixture")},
        results=rows,
    )
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
