"""Is it the posterior?  Stochastic-gradient samplers against a full-batch NUTS reference, at equal
gradient budget, on two small Bayesian neural networks (scikit-learn's digits and diabetes).

Two commands (``pip install -e ".[benchmarks]"`` for scikit-learn and SciPy)::

    python benchmarks/posterior_fidelity.py reference   # once: NUTS reference -> benchmarks/reference/
    python benchmarks/posterior_fidelity.py run         # the contenders, table, figure, results JSON
    python benchmarks/posterior_fidelity.py run --quick # a few minutes: one seed, a fifth of the budget (runs/)

``run`` scores every method (``--methods``, see ``posterior_fidelity_methods.METHODS``) against the
stored reference's posterior predictive on the held-out points: top-1 agreement, total variation
and NLL (digits); Wasserstein-1 (in posterior sds) and KS distance of the posterior of f(x), and
NLL (diabetes); mean +- sd over ``--seeds``.  The budget is counted in per-example gradient
evaluations (``posterior_fidelity_methods``' docstring defines the unit).

Every flag, the stored reference and (``figure``) the results file are checked before TensorFlow
starts: a bad value or a damaged file ends the script with exit status 2 and one line naming it.
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import arguments
import numpy as np
import posterior_fidelity_methods
import posterior_fidelity_reference
from posterior_fidelity_report import HEADLINE, figure, format_table, table_rows

REFERENCE_DIR = HERE / "reference"
RESULTS = HERE / "results" / "posterior-fidelity.json"
FIGURE = HERE.parent / "docs" / "benchmarks" / "posterior-fidelity.png"
REFERENCE_SETTINGS = {
    "chains": 4,
    "warmup": 1000,
    "draws": 1000,
    "thin": 4,
    "max_tree_depth": 7,
    "chunk": 100,
    "seed": 0,
}
QUICK_REFERENCE = {"chains": 2, "warmup": 100, "draws": 100, "thin": 2, "max_tree_depth": 5, "chunk": 50, "seed": 0}
BUDGET_EPOCHS = 500  # gradient evaluations per method and seed, in units of N (one "epoch")
RESULTS_KEYS = ("problems", "settings", "seeds", "runs", "floors", "tables", "seconds", "cpu_seconds")


def method_predictive(problem, trace, budget, burn_in):
    """The method's predictive from the records of ``trace`` within ``budget``: the samples after
    the first ``burn_in`` fraction of the budget (an ensemble: its members' last records), as BMA
    probabilities [n, C] or draws of f [S, n]; None before the first sample."""
    from tf_vrre.runs.samples import softmax

    within = trace.budget <= budget * (1 + 1e-12)
    if trace.info["members"] > 1:
        if not within.any():
            return None, 0
        outputs = trace.outputs[np.flatnonzero(within)[-1]]  # [members, n, out]
    else:
        keep = within & trace.collect & (trace.budget > burn_in * budget)
        if not keep.any():
            return None, 0
        outputs = trace.outputs[keep][:, 0]  # [S, n, out]
    if problem.kind == "classification":
        return softmax(outputs).mean(0), len(outputs)
    return outputs[..., 0], len(outputs)


def score(problem, predictive, reference):
    """The fidelity metrics of a predictive against the stored reference."""
    from tf_vrre import diagnostics

    if problem.kind == "classification":
        return diagnostics.classification_fidelity(predictive, reference["probs_by_chain"].mean(0), problem.y_test)
    ref = reference["draws"].reshape(-1, reference["draws"].shape[-1])
    return diagnostics.regression_fidelity(predictive, ref, problem.y_test, problem.noise_scale)


def reference_floor(problem, reference):
    """The reference against itself (its first half of the chains against the second half: the
    Monte Carlo floor of the distances) and the NLL of the whole reference."""
    from tf_vrre import diagnostics

    if problem.kind == "classification":
        p = reference["probs_by_chain"]
        half = len(p) // 2
        out = diagnostics.classification_fidelity(p[:half].mean(0), p[half:].mean(0))
        return out | {"reference_nll_all": diagnostics.classification_nll(p.mean(0), problem.y_test)}
    d = reference["draws"]
    half = len(d) // 2
    a, b = d[:half].reshape(-1, d.shape[-1]), d[half:].reshape(-1, d.shape[-1])
    out = diagnostics.regression_fidelity(a, b)
    return out | {
        "reference_nll_all": diagnostics.regression_nll(d.reshape(-1, d.shape[-1]), problem.y_test, problem.noise_scale)
    }


def evaluate_run(problem, method, trace, reference, budget, burn_in, points):
    """Metrics at ``points`` fractions of the budget (the curve) and at the whole budget."""
    curve = []
    for f in points:
        predictive, samples = method_predictive(problem, trace, f * budget, burn_in)
        if predictive is not None:
            curve.append(
                {"fraction": f, "budget": f * budget, "samples": samples, **score(problem, predictive, reference)}
            )
    return {"final": curve[-1] if curve and curve[-1]["fraction"] == 1.0 else None, "curve": curve}


CURVE = (0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


def parse_args(argv=None):
    """The command line, every flag checked (one line, exit 2) before TensorFlow starts."""
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=arguments.Parser)
    problems = arguments.names(posterior_fidelity_methods.PROBLEMS, "problems")
    ref = sub.add_parser("reference", help="build and store the NUTS reference of every problem (once)")
    ref.add_argument("--problems", type=problems, default=tuple(posterior_fidelity_methods.PROBLEMS))
    ref.add_argument(
        "--out",
        type=arguments.output_directory,
        default=None,
        help=f"directory (default {REFERENCE_DIR.relative_to(HERE.parent)}, "
        "with --quick runs/posterior-fidelity-reference-quick)",
    )
    ref.add_argument("--force", action="store_true", help="replace an existing reference")
    ref.add_argument("--quick", action="store_true", help="a short, unconverged reference for trying the pipeline")
    run = sub.add_parser("run", help="run the contenders against the stored reference")
    run.add_argument("--problems", type=problems, default=tuple(posterior_fidelity_methods.PROBLEMS))
    run.add_argument(
        "--methods",
        type=arguments.names(posterior_fidelity_methods.METHODS, "methods"),
        default=tuple(posterior_fidelity_methods.METHODS),
    )
    run.add_argument(
        "--seeds",
        type=arguments.int_list(0, what="seeds"),
        default=(1, 2, 3, 4, 5),
        help="seed 0 was used to choose the learning rates",
    )
    run.add_argument(
        "--budget",
        type=arguments.positive_float(1e6),
        default=BUDGET_EPOCHS,
        help="gradient evaluations per method and seed, in units of N",
    )
    run.add_argument(
        "--burn-in",
        type=arguments.fraction(),
        default=0.2,
        help="fraction of each budget whose samples are discarded (constant-step samplers)",
    )
    run.add_argument(
        "--records", type=arguments.at_least(2), default=400, help="records of the test predictions per run"
    )
    run.add_argument("--reference", type=arguments.input_directory, default=str(REFERENCE_DIR))
    run.add_argument(
        "--out",
        type=arguments.output_file,
        default=None,
        help="results JSON (default benchmarks/results/posterior-fidelity.json, "
        "with --quick runs/posterior-fidelity-quick.json)",
    )
    run.add_argument(
        "--figure",
        type=arguments.output_file,
        default=None,
        help="PNG (default docs/benchmarks/posterior-fidelity.png; with --quick next to the results)",
    )
    run.add_argument("--quick", action="store_true", help="one seed, a fifth of the budget")
    run.add_argument("--force", action="store_true", help="replace an existing results file")
    fig = sub.add_parser("figure", help="reprint the tables and redraw the figure of a results file")
    fig.add_argument("--results", type=arguments.input_file, default=str(RESULTS))
    fig.add_argument(
        "--figure", type=arguments.output_file, default=None, help="PNG (default: the one the results file names)"
    )
    return p.parse_args(argv)


def _repo_relative(path):
    """``path`` relative to the repository when inside it (the stored JSON names no machine's folders)."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(HERE.parent))
    except ValueError:
        return str(path)


def _needs_scikit_learn(command):
    arguments.requires("sklearn", "scikit-learn", command, "the digits and diabetes data sets come with it")
    arguments.requires("scipy", "SciPy", command, "the distances to the reference")


def main_reference(args):
    _needs_scikit_learn("reference")
    settings = QUICK_REFERENCE if args.quick else REFERENCE_SETTINGS
    out = Path(args.out or ("runs/posterior-fidelity-reference-quick" if args.quick else REFERENCE_DIR))
    for name in args.problems:
        for suffix in (".npz", ".json"):
            if (out / f"{name}{suffix}").exists() and not args.force:
                arguments.die(f"reference: --out: {out / name}{suffix} exists; pass --force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    for name in args.problems:
        posterior_fidelity_reference.build_reference(
            posterior_fidelity_methods.PROBLEMS[name](), settings, out, args.force
        )


def _checked_run_args(args):
    _needs_scikit_learn("run")
    seeds = list(args.seeds)
    if args.quick:
        seeds, args.budget = seeds[:1], args.budget / 5
    args.out = Path(args.out or (Path("runs") / "posterior-fidelity-quick.json" if args.quick else RESULTS))
    args.figure = Path(args.figure or (args.out.with_suffix(".png") if args.quick else FIGURE))
    if args.out.exists() and not args.force:
        arguments.die(f"run: --out: {args.out} exists; pass --force to replace it (and its figure {args.figure})")
    args.problems, args.methods = ",".join(args.problems), ",".join(args.methods)  # as stored in the results
    args.seeds = ",".join(map(str, args.seeds))
    return args.problems.split(","), args.methods.split(","), seeds


def main_run(args):
    problems, methods, seeds = _checked_run_args(args)
    loaded = {name: (posterior_fidelity_methods.PROBLEMS[name](),) for name in problems}  # all before any run
    loaded = {n: (p, *posterior_fidelity_reference.load_reference(p, args.reference)) for n, (p,) in loaded.items()}
    start, cpu_start, runs, tables, floors = time.time(), time.process_time(), [], {}, {}
    print(
        f"posterior fidelity: problems {problems}, methods {methods}, seeds {seeds}, budget {args.budget:g} "
        f"epochs of gradient evaluations per run",
        flush=True,
    )
    for name, (problem, reference, info) in loaded.items():
        floors[name] = reference_floor(problem, reference)
        budget = args.budget * problem.data_size
        for seed in seeds:
            for method in methods:
                t0 = time.time()
                trace = posterior_fidelity_methods.run_method(
                    posterior_fidelity_methods.METHODS[method], problem, budget, seed, args.records
                )
                seconds = time.time() - t0
                ev = evaluate_run(
                    problem, posterior_fidelity_methods.METHODS[method], trace, reference, budget, args.burn_in, CURVE
                )
                runs.append(
                    {"problem": name, "method": method, "seed": seed, "seconds": seconds, "info": trace.info, **ev}
                )
                key = HEADLINE[problem.kind]
                print(
                    f"[{time.time() - start:5.0f} s] {name} {method} seed {seed}: {key} "
                    f"{ev['final'][key]:.4f}, {seconds:.0f} s",
                    flush=True,
                )
        rows = table_rows(problem, [r for r in runs if r["problem"] == name], methods, floors[name], info)
        tables[name] = rows
    settings = {k: _repo_relative(v) if k in ("reference", "out", "figure") else v for k, v in vars(args).items()}
    problem_settings = {
        name: {
            "kind": p.kind,
            "train": p.data_size,
            "test": len(p.x_test),
            "hidden": p.hidden,
            "weight_decay": p.weight_decay,
            "noise_scale": p.noise_scale,
            "learning_rates": p.learning_rates,
            "batch_size": p.batch_size,
            "ladder_ratio": p.pair_ratio,
            "reference": {k: info[k] for k in posterior_fidelity_reference.REFERENCE_KEYS if k != "fingerprint"},
        }
        for name, (p, _, info) in loaded.items()
    }
    results = {
        **posterior_fidelity_reference.environment(),
        "settings": settings,
        "seeds": seeds,
        "curve_fractions": CURVE,
        "problems": problem_settings,
        "floors": floors,
        "tables": tables,
        "runs": runs,
        "seconds": time.time() - start,
        "cpu_seconds": time.process_time() - cpu_start,
    }
    posterior_fidelity_reference.write_json(args.out, results)
    report(results, args.figure)
    print(f"results {args.out}")
    return results


def report(results, figure_path):
    """Prints the tables of a results JSON and draws its figure."""
    problems = [(name, p["kind"]) for name, p in results["problems"].items()]
    budget = results["settings"]["budget"]
    figure(
        figure_path,
        problems,
        results["runs"],
        results["settings"]["methods"].split(","),
        results["floors"],
        budget,
    )
    for name, kind in problems:
        print(f"\n{name}: {kind}, budget {budget:g} epochs, mean +- sd over {len(results['seeds'])} seeds")
        print(format_table(kind, results["tables"][name], budget))
    print(f"\n{results['seconds']:.0f} s ({results['cpu_seconds']:.0f} s of CPU time); figure {figure_path}")


def read_results(path):
    """A results file of ``run``, checked before any drawing (exit 2, one line naming the file and
    the key if it is damaged or holds a NaN or an infinity)."""
    res = arguments.read_json(path, "figure: --results", keys=RESULTS_KEYS)
    settings = res["settings"]
    for key in ("budget", "methods"):
        if key not in settings:
            arguments.die(f"figure: --results: {path}: no settings.{key} key")
    unknown = [m for m in str(settings["methods"]).split(",") if m not in posterior_fidelity_methods.METHODS]
    if unknown or not isinstance(settings["budget"], (int, float)) or not settings["budget"] > 0:
        arguments.die(f"figure: --results: {path}: settings.methods or settings.budget is not one `run` writes")
    for name, p in res["problems"].items():
        if (
            not isinstance(p, dict)
            or p.get("kind") not in HEADLINE
            or name not in res["tables"]
            or name not in res["floors"]
        ):
            arguments.die(f"figure: --results: {path}: problems.{name}: no kind, table or floor")
    return res


def main_figure(args):
    results = read_results(args.results)
    if args.figure is None and "figure" not in results["settings"]:
        arguments.die(f"figure: --figure: {args.results} names no figure; pass --figure")
    report(results, Path(args.figure or HERE.parent / results["settings"]["figure"]))


def main(argv=None):
    args = parse_args(argv)
    return {"reference": main_reference, "run": main_run, "figure": main_figure}[args.command](args)


if __name__ == "__main__":
    main()
