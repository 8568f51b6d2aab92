"""``tf-vrre evaluate``: BMA accuracy and uncertainty of a run's samples, with figures.

tf-vrre evaluate --run runs/c10-vr                     # OOD: CIFAR-100 for a CIFAR-10 run
tf-vrre evaluate --run runs/c10-vr --ood svhn --data-dir ~/tensorflow_datasets
"""

import warnings

import tf_vrre.cli._args as _args

HELP = "Bayesian model average of a run's samples: accuracy, NLL, Brier, ECE, OOD entropy / AUROC, figures"
DESCRIPTION = (
    "Streams over RUN/samples (one set of weights in memory at a time): fits a temperature on the run's "
    "held-out split, then scores the BMA on the test set (accuracy, NLL, Brier, ECE with 15 bins) and on an "
    "out-of-distribution set (mean entropy, fraction > 1.5, Brier, AUROC in vs out by entropy), each at "
    "T = 1, the paper's T = 2 and the fitted T. Writes RUN/report.json, entropy_cdf.png, reliability.png, "
    "swaps.png."
)


def add_arguments(p):
    """Flags of ``tf-vrre evaluate``."""
    p.add_argument("--run", required=True, help="run directory written by tf-vrre train")
    p.add_argument(
        "--ood",
        choices=("auto", "cifar10", "cifar100", "svhn", "none"),
        default="auto",
        help="out-of-distribution set (auto: cifar100 for cifar10 runs, else cifar10)",
    )
    p.add_argument("--data-dir", help="data directory (default: the run's)")
    p.add_argument("--source", choices=("tfds", "npz", "auto"), help="data source (default: the run's)")
    p.add_argument("--test-size", type=_args.positive(int), help="class-balanced subset of the test / OOD sets")
    p.add_argument(
        "--fit-size",
        type=_args.nonnegative_int,
        default=2000,
        help="held-out images for the fitted temperature (0: skip; default 2000)",
    )
    p.add_argument("--batch-size", type=_args.positive(int), default=500, help="prediction batch size")
    p.add_argument(
        "--quiet", action="store_true", help="no progress lines on stderr (results and warnings are still printed)"
    )


def _row(name, d):
    return f"  {name:<12s} acc {d['accuracy']:.4f}  NLL {d['nll']:.4f}  Brier {d['brier']:.4f}  ECE {d['ece']:.4f}"


def check(args):
    """The run, its samples and the data it is scored on, before TensorFlow starts (exit 2 on a bad
    one); then a reader's shared lock of the run (:func:`tf_vrre.runs.locks.share_run`: no
    ``tf-vrre train`` or ``repair`` starts writing it meanwhile; nothing in the run is touched)."""
    from tf_vrre.runs import locks, run_json
    from tf_vrre.workflows.image_classification import evaluation_checks  # no TensorFlow

    try:
        run, _ = evaluation_checks.check_run(args.run)
    except run_json.RunDirError as err:
        _args.die(f"--run: {err}")
    try:
        evaluation_checks.check_data(run, args.ood, args.data_dir, args.source, args.fit_size)
    except (ValueError, OSError) as err:
        _args.die(f"--data-dir / --source / --ood: {err}")
    _args.writable(args.run, "--run")  # report.json and the figures go there
    args.run_lock = locks.share_run(args.run)


def run(args):
    """Evaluates the run (after :func:`check`), prints a summary; returns the exit status."""
    from tf_vrre.runs import run_json
    from tf_vrre.workflows.image_classification import evaluate

    try:
        with warnings.catch_warnings(record=True) as caught:  # printed below as tf-vrre warnings
            warnings.simplefilter("always", evaluate.EvaluationWarning)
            report = evaluate.evaluate(
                args.run,
                args.ood,
                args.data_dir,
                args.source,
                args.test_size,
                args.fit_size,
                args.batch_size,
                verbose=not args.quiet,
            )
    except (ValueError, OSError, run_json.RunDirError) as err:
        _args.die(f"--run / --data-dir / --source: {err}")
    for w in caught:
        if issubclass(w.category, evaluate.EvaluationWarning):
            _args.warn(f"--run: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    t = report["temperature"]
    fitted = (
        ""
        if not t
        else ", no fitted T (the warning above says why)"
        if t["T"] is None
        else (
            f", fitted T = {t['T']:.3f}"
            + (f" (its {t['bound_hit']} bound: no optimum inside)" if t["bound_hit"] else "")
        )
    )
    print(
        f"{report['run']['method']} ({report['run']['model']}, {report['samples']} samples), test "
        f"{report['test']['dataset']} n={report['test']['size']}{fitted}"
    )
    for k in ("T=1", "T=2", "T=fitted", "last_sample"):
        if k in report["test"]:
            print(_row(k, report["test"][k]))
    if report["ood"]:
        o = report["ood"]
        print(f"  OOD {o['dataset']} n={o['size']}:")
        for k in ("T=1", "T=2", "T=fitted"):
            if k in o:
                print(
                    f"  {k:<12s} entropy {o[k]['entropy_mean']:.3f}  >1.5: {o[k]['entropy_gt_1.5']:.3f}  "
                    f"Brier {o[k]['brier']:.4f}  AUROC {o[k]['auroc']:.4f}"
                )
    if report["swaps"]:
        s = report["swaps"]
        late = "-" if s["sigma2_late"] is None else f"{s['sigma2_late']:.4g}"
        print(f"  swaps {s['swaps']}/{s['attempts']}, sigma2 late {late}")
    print(f"wrote {args.run}/report.json, entropy_cdf.png, reliability.png, swaps.png")
    return 0
