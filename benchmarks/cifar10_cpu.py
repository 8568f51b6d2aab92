"""The paper's CIFAR-10 comparison at CPU scale, on the real data: M-SGD, SGHMC, reSGHMC,
VR-reSGHMC (and cycSGHMC / cVR-reSGHMC), each through ``tf-vrre train`` + ``tf-vrre evaluate``.

NOT the paper's setting (ResNet-20/32/56, 50,000 images, 500 epochs on a GPU): a ResNet-8 on a
class-balanced subset of the CIFAR-10 training set for a few epochs, on 2 CPU cores.  The
shipped configs are used unchanged except for the scale flags printed below; their 500-epoch
schedules are stretched to the epoch budget (``tf_vrre.workflows.image_classification.config``), so every method sees the
paper's learning-rate / temperature / F curves compressed in time.

Within each seed the methods run one after the other in a rotated order (the machine is shared:
per-epoch time ratios are taken within a seed), every result is written to
``--out/results.json`` as soon as it exists, and a killed benchmark rerun with the same flags
resumes: finished runs are skipped (``tf-vrre train`` refuses nothing: same config), a killed
run resumes from its last epoch, missing evaluations are redone.

Usage (what the table in docs/benchmarks/cifar10-cpu.md was measured with)::

    python benchmarks/cifar10_cpu.py --out runs/cifar10_cpu --force

The table goes to ``benchmarks/results/cifar10-cpu.json`` (``--results``), which
``python benchmarks/render_docs.py`` puts into ``docs/benchmarks/cifar10-cpu.md``.

Reported per method (mean and spread over seeds): BMA test accuracy, NLL, Brier, ECE (T = 1
and the fitted T), OOD (CIFAR-100 test) mean entropy, fraction > 1.5 and AUROC, swaps / attempts,
sigma^2 over the last 20% of training, the sigma^2 reduction factor reSGHMC / VR-reSGHMC within
a seed, and the median seconds per epoch (first epoch, with tracing, excluded) relative to SGHMC
in the same seed.

Every flag, each method's config with the scale flags and an existing ``--out/results.json`` are
checked before TensorFlow starts (exit status 2 and one line naming the flag or file).
"""

import argparse
import csv
import json
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

from tf_vrre.runs import atomic, run_json
from tf_vrre.workflows.image_classification import config

DATA_DIR = next(
    (str(d / "shared" / "data") for d in (REPO.parent, REPO.parents[1]) if (d / "shared" / "data").is_dir()),
    str(REPO.parent / "shared" / "data"),
)
METHODS = ("msgd", "sghmc", "resghmc", "vr-resghmc", "cycsghmc", "cvr-resghmc")


def _override(text):
    """Argument type of ``--set``: ``section.key=value``."""
    key, sep, _ = text.partition("=")
    if not sep or "." not in key:
        raise argparse.ArgumentTypeError(f"expected section.key=value, got {text!r}")
    return text


def parse_args(argv=None):
    """The command line, checked before TensorFlow starts: the flags, every method's config at
    the benchmark's scale, the data directory, the results files."""
    p = arguments.parser(__file__, __doc__.split("\n", 1)[0])
    p.add_argument("--out", type=arguments.output_directory, default="runs/cifar10_cpu")
    p.add_argument("--methods", type=arguments.names(METHODS, "methods"), default=METHODS)
    p.add_argument("--seeds", type=arguments.int_list(0, what="seeds"), default=(0, 1))
    p.add_argument("--model", default="resnet8")
    p.add_argument("--subset", type=arguments.positive(int), default=5000, help="training images N")
    p.add_argument(
        "--epochs", type=arguments.positive(int), default=30, help="epochs of every method (cycSGHMC: --cyc-epochs)"
    )
    p.add_argument(
        "--cyc-epochs",
        type=arguments.positive(int),
        default=None,
        help="epochs of cycSGHMC (default 2 x --epochs, as in the paper's 1000 vs 500)",
    )
    p.add_argument("--batch-size", type=arguments.positive(int), default=128)
    p.add_argument(
        "--thinning", type=arguments.positive(int), default=None, help="steps between samples (default: one per epoch)"
    )
    p.add_argument(
        "--vr-period",
        type=arguments.positive(int),
        default=None,
        help="m (default: two epochs, as the paper's 392 at n=256)",
    )
    p.add_argument(
        "--test-size", type=arguments.positive(int), default=2000, help="class-balanced test / OOD images evaluated"
    )
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument(
        "--set", type=_override, action="append", default=[], help="extra section.key=value for every method"
    )
    p.add_argument(
        "--figure",
        type=arguments.output_file,
        default="docs/cifar10-cpu-entropy.png",
        help="entropy CDF of every method",
    )
    results.add_arguments(p, "cifar10-cpu")
    args = p.parse_args(argv)
    if args.batch_size > args.subset:
        arguments.die(f"--batch-size: must be <= --subset ({args.subset}), got {args.batch_size}")
    for folder in ("cifar10", "cifar100"):  # training and test images; CIFAR-100's test set is the OOD set
        if not os.path.isdir(os.path.join(args.data_dir, folder)):
            arguments.die(f"--data-dir: {args.data_dir!r} has no {folder}/ folder of .npz files")
    for method in args.methods:
        for seed in args.seeds:
            try:
                method_config(method, seed, args)
            except config.ConfigError as err:
                arguments.die(f"--set / scale flags: {method}: {err}")
    results.check_target(args.results, args.force)
    return args


def read_results(path):
    """The runs recorded in ``--out/results.json`` (none if absent); exit 2 with one line naming
    the file if it is damaged."""
    if not os.path.exists(path):
        return []
    done = arguments.read_json(path, "--out", keys=("results",))["results"]
    if not isinstance(done, list) or not all(isinstance(r, dict) and {"method", "seed"} <= set(r) for r in done):
        arguments.die(f"--out: {path}: results is not a list of runs with a method and a seed; move the file away")
    return done


def method_config(method, seed, args):
    """The shipped config of ``method`` with the benchmark's scale flags."""
    spe = args.subset // args.batch_size
    epochs = (args.cyc_epochs or 2 * args.epochs) if method == "cycsghmc" else args.epochs
    over = {
        "model.name": args.model,
        "data.subset": args.subset,
        "data.batch_size": args.batch_size,
        "training.epochs": epochs,
        "training.seed": seed,
        "samples.thinning": args.thinning or spe,
    }
    window = args.vr_period or 2 * spe
    if method in config.VARIANCE_REDUCED:
        over["variance_reduction.period"] = window
    if method in config.REPLICA:  # one sigma^2 window for every replica method: swaps start at the same step
        over["swap.period"] = window
    for item in args.set:  # only where the key applies to the method (unknown keys still fail)
        key, value = item.split("=", 1)
        if config.applies(key, method):
            over[key] = value
    return config.resolve(config.apply_overrides(config.load(method), over))


def run_one(method, seed, args):
    from tf_vrre.workflows.image_classification import evaluate, train

    out = os.path.join(args.out, f"{method}-seed{seed}")
    cfg = method_config(method, seed, args)
    result = train.train(cfg, out, data_dir=args.data_dir, source="npz", verbose=1)
    run = run_json.read_run(out)
    if not result["already_complete"]:
        run["benchmark_seconds"] = result["seconds"]
        run_json.write_json(os.path.join(out, run_json.RUN_JSON), run)
    report_path = os.path.join(out, run_json.REPORT)
    if os.path.exists(report_path) and json.load(open(report_path)).get("test", {}).get("size") == args.test_size:
        report = json.load(open(report_path))
    else:
        report = evaluate.evaluate(out, ood="cifar100", test_size=args.test_size, verbose=0)
    epochs = run["config"]["training"]["epochs"]
    with open(os.path.join(out, run_json.LOG), newline="") as f:
        times = [float(r["epoch_seconds"]) for r in csv.DictReader(f) if r.get("epoch_seconds")]
    return {
        "method": method,
        "seed": seed,
        "dir": out,
        "epochs": epochs,
        "seconds_per_epoch": float(np.median(times[1:])) if len(times) > 1 else None,  # first: tracing
        "train_seconds": run.get("benchmark_seconds"),
        "samples": report["samples"],
        "test": report["test"],
        "ood": report["ood"],
        "temperature": report["temperature"],
        "swaps": report["swaps"],
    }


def _write(path, obj):
    """Writes ``obj`` to ``path`` atomically (a symbolic link there is replaced, never followed)."""
    atomic.write_json(path, obj, indent=2, newline=True)


def _mean_spread(values):
    v = np.array([x for x in values if x is not None], float)
    if not v.size:
        return None, None
    return float(v.mean()), (float(v.max() - v.min()) / 2 if v.size > 1 else None)


def table(run_results, methods, seeds):
    """Rows of the results table: mean +- half-range over seeds."""
    by = {(r["method"], r["seed"]): r for r in run_results}
    rows = []
    for m in methods:
        rs = [by[(m, s)] for s in seeds if (m, s) in by]
        if not rs:
            continue
        row = {"method": m, "seeds": len(rs)}
        get = {
            "acc": lambda r: r["test"]["T=1"]["accuracy"],
            "nll": lambda r: r["test"]["T=1"]["nll"],
            "brier": lambda r: r["test"]["T=1"]["brier"],
            "ece": lambda r: r["test"]["T=1"]["ece"],
            "ece_T": lambda r: r["test"].get("T=fitted", {}).get("ece"),
            "T": lambda r: (r["temperature"] or {}).get("T"),
            "ood_entropy": lambda r: r["ood"]["T=1"]["entropy_mean"],
            "ood_gt15_T2": lambda r: r["ood"]["T=2"]["entropy_gt_1.5"],
            "auroc": lambda r: r["ood"]["T=1"]["auroc"],
            "swaps": lambda r: r["swaps"]["swaps"] if r["swaps"] else None,
            "attempts": lambda r: r["swaps"]["attempts"] if r["swaps"] else None,
            "sigma2_late": lambda r: r["swaps"]["sigma2_late"] if r["swaps"] else None,
            "samples": lambda r: r["samples"],
        }
        for key, f in get.items():
            row[key] = _mean_spread([f(r) for r in rs])
        ratios = []
        for r in rs:
            base = by.get(("sghmc", r["seed"]))
            if base and base["seconds_per_epoch"] and r["seconds_per_epoch"]:
                ratios.append(r["seconds_per_epoch"] / base["seconds_per_epoch"])
        row["epoch_time_ratio"] = _mean_spread(ratios)
        red = []
        for r in rs:
            re_, vr = by.get(("resghmc", r["seed"])), by.get(("vr-resghmc", r["seed"]))
            if m == "vr-resghmc" and re_ and vr and re_["swaps"] and vr["swaps"] and vr["swaps"]["sigma2_late"]:
                red.append(re_["swaps"]["sigma2_late"] / vr["swaps"]["sigma2_late"])
        row["sigma2_reduction"] = _mean_spread(red)
        rows.append(row)
    return rows


def _fmt(pair, spec, scale=1.0):
    mean, spread = pair
    if mean is None:
        return "-"
    return format(mean * scale, spec) + ("" if spread is None else " +- " + format(spread * scale, spec))


HEAD = (
    "method",
    "BMA acc %",
    "NLL",
    "Brier",
    "ECE",
    "ECE (fitted T)",
    "T",
    "OOD entropy",
    ">1.5 (T=2)",
    "AUROC",
    "swaps/attempts",
    "sigma2 late",
    "sigma2 reduction",
    "s/epoch vs SGHMC",
)


def _cell(pair, spec, scale=1.0):
    """A results-file cell of ``(mean, half-range)``: ``[mean, half-range]``, the mean alone in its own
    format when there is one seed, ``"-"`` when there is no value."""
    mean, spread = pair
    if mean is None:
        return "-"
    if spread is None:
        return {"value": mean * scale, "format": "{:" + spec + "}"}
    return [mean * scale, spread * scale]


def results_table(rows):
    """The table of ``docs/benchmarks/cifar10-cpu.md`` (mean +- half the range over seeds)."""
    specs = (".1f", ".3f", ".3f", ".3f", ".3f", ".2f", ".3f", ".3f", ".3f")
    cells = []
    for r in rows:
        swaps = "-"
        if r["swaps"][0] is not None:
            swaps = [r["swaps"][0], r["swaps"][1] or 0.0, r["attempts"][0], r["attempts"][1] or 0.0]
        cells.append(
            [
                r["method"],
                _cell(r["acc"], ".1f", 100),
                *[
                    _cell(r[k], spec)
                    for k, spec in zip(
                        ("nll", "brier", "ece", "ece_T", "T", "ood_entropy", "ood_gt15_T2", "auroc"), specs[1:]
                    )
                ],
                swaps,
                _cell(r["sigma2_late"], ".3g"),
                _cell(r["sigma2_reduction"], ".2f"),
                _cell(r["epoch_time_ratio"], ".2f"),
            ]
        )
    formats = [
        "{}",
        *[f"{{:{s}}} +- {{:{s}}}" for s in specs],
        "{:.0f} +- {:.0f} / {:.0f} +- {:.0f}",
        "{:.3g} +- {:.3g}",
        "{:.2f} +- {:.2f}",
        "{:.2f} +- {:.2f}",
    ]
    return results.table(HEAD, formats, cells, keys=[r["method"] for r in rows])


def print_table(rows):
    head = HEAD
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        swaps = "-" if r["swaps"][0] is None else f"{_fmt(r['swaps'], '.0f')} / {_fmt(r['attempts'], '.0f')}"
        print(
            "| "
            + " | ".join(
                [
                    r["method"],
                    _fmt(r["acc"], ".1f", 100),
                    _fmt(r["nll"], ".3f"),
                    _fmt(r["brier"], ".3f"),
                    _fmt(r["ece"], ".3f"),
                    _fmt(r["ece_T"], ".3f"),
                    _fmt(r["T"], ".2f"),
                    _fmt(r["ood_entropy"], ".3f"),
                    _fmt(r["ood_gt15_T2"], ".3f"),
                    _fmt(r["auroc"], ".3f"),
                    swaps,
                    _fmt(r["sigma2_late"], ".3g"),
                    _fmt(r["sigma2_reduction"], ".2f"),
                    _fmt(r["epoch_time_ratio"], ".2f"),
                ]
            )
            + " |"
        )


def entropy_figure(run_results, methods, seeds, path, key="ood_T_2"):
    """The paper's Figure 4 at CPU scale: CDF of the BMA entropy on CIFAR-100 per method (first seed)."""
    from tf_vrre.workflows.image_classification import plots

    curves = []
    for i, m in enumerate(methods):
        r = next((r for r in run_results if r["method"] == m and r["seed"] == seeds[0]), None)
        f = os.path.join(r["dir"], run_json.ENTROPIES) if r else None
        if f and os.path.exists(f):
            with np.load(f) as z:
                curves.append((m, z[key], {"color": f"C{i}"}))
    if curves:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        plots.entropy_cdf(
            path,
            curves,
            1.5,
            float(np.log(10)),
            title=f"CIFAR-100 test images under CIFAR-10 models (BMA, T = 2, seed {seeds[0]}; CPU scale)",
        )


def sigma2_figure(run_results, seeds, path):
    """sigma^2 of reSGHMC and VR-reSGHMC over training (the paper's Figure 2 at CPU scale), every seed."""
    from tf_vrre import _figures

    fig = _figures.new(figsize=(6.4, 4.0))
    ax = fig.subplots()
    drawn = False
    for i, method in enumerate(("resghmc", "vr-resghmc", "cvr-resghmc")):
        for j, seed in enumerate(seeds):
            r = next((r for r in run_results if r["method"] == method and r["seed"] == seed), None)
            f = os.path.join(r["dir"], run_json.SWAPS, "refresh.csv") if r else None
            if not f or not os.path.exists(f):
                continue
            with open(f, newline="") as fh:
                rows = [row for row in csv.DictReader(fh) if row.get("sigma2_updated") in ("1", "True")]
            steps = [int(row["step"]) for row in rows]
            ax.semilogy(
                steps,
                [float(row["sigma2_0"]) for row in rows],
                color=f"C{i}",
                ls=("-", "--", ":")[j % 3],
                label=f"{method} seed {seed}",
            )
            drawn = True
    if drawn:
        ax.set_xlabel("step")
        ax.set_ylabel("sigma^2: variance of the energy-difference estimator")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("CIFAR-10 at CPU scale: estimator variance over training", fontsize=9)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        _figures.save(fig, path, dpi=110, bbox_inches="tight")


def main(argv=None):
    args = parse_args(argv)
    methods, seeds, target = list(args.methods), list(args.seeds), args.results
    path = os.path.join(args.out, "results.json")
    run_results = read_results(path)
    os.makedirs(args.out, exist_ok=True)
    print(
        f"cifar10_cpu: {args.model}, N={args.subset}, {args.epochs} epochs (cycSGHMC "
        f"{args.cyc_epochs or 2 * args.epochs}), batch {args.batch_size}, seeds {seeds}, test/OOD size "
        f"{args.test_size}, data {args.data_dir}",
        flush=True,
    )
    start = time.time()
    for i, seed in enumerate(seeds):
        order = methods[i % len(methods) :] + methods[: i % len(methods)]
        for method in order:
            if any(r["method"] == method and r["seed"] == seed for r in run_results):
                continue
            t0 = time.time()
            res = run_one(method, seed, args)
            run_results.append(res)
            _write(path, {"settings": vars(args), "results": run_results})
            print(
                f"[{time.time() - start:6.0f} s] {method} seed {seed}: BMA acc {res['test']['T=1']['accuracy']:.4f}, "
                f"NLL {res['test']['T=1']['nll']:.3f}, samples {res['samples']}, swaps {res['swaps']}, "
                f"{time.time() - t0:.0f} s",
                flush=True,
            )
    rows = table(run_results, methods, seeds)
    _write(path, {"settings": vars(args), "results": run_results, "table": rows})
    entropy_figure(run_results, methods, seeds, args.figure)
    sigma2_figure(run_results, seeds, args.figure.replace("entropy", "sigma2"))
    print_table(rows)
    settings = {k: v for k, v in vars(args).items() if k not in ("results", "force", "data_dir")}
    results.write(target, {"main": results_table(rows)}, settings=settings, rows=rows)
    return rows


if __name__ == "__main__":
    main()
