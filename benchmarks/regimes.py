"""When does replica exchange pay?  A map of SGHMC, cyclical SGHMC, reSGHMC and VR-reSGHMC against
exact answers at equal per-example gradient evaluations, along data size N and cold temperature,
on three families (``regimes_problems.py``), and the advisor's recommendation from a pilot of 10%
of the budget on every problem (``tf_vrre.diagnostics.advise``), checked against the map.

    python benchmarks/regimes.py --force          # the map: 15 problems, about half an hour each on 2 CPU cores
    python benchmarks/regimes.py --force --anchors --seeds 1,2   # each family's anchor problem only
    python benchmarks/regimes.py --quick          # the anchors, one seed, half the budget (minutes)
    python benchmarks/regimes.py --force --resume # continue an interrupted run from runs/regimes-partial.json
    python benchmarks/regimes.py --report-only --readvise runs/regimes-pilots   # advice by today's rules

Writes ``benchmarks/results/regimes.json`` (``--quick``: ``runs/regimes-quick.json``) and one figure
per family (``docs/benchmarks/regimes-<family>.png``; ``--quick``: next to its results);
``python benchmarks/render_docs.py`` puts the tables and numbers into
``docs/benchmarks/regimes.md`` and the README.  A run with ``--checks`` (on by default, off with
``--no-checks``) also asks the advisor about the mixture study's main job and the two networks of
the posterior-fidelity benchmark.  Every pilot keeps its measurements in
``runs/regimes-pilots/<problem>/advice.json``: ``--report-only --readvise`` re-derives each
problem's advice from them by the advisor's rules as they are now (no run), and the results file
says which problems and by which commit (``readvised``).
"""

import argparse
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import arguments
import results

BUDGET = 2e6
"""Per-example gradient evaluations of every run: 20,000 SGHMC steps at n = 100."""
SEEDS = (1, 2, 3, 4)
FAMILIES = ("mixture", "sine", "linear")
METHOD_NAMES = ("sghmc", "cycsghmc", "resghmc", "vr-resghmc")


PROBLEM_KEY = re.compile(r"^(?P<family>[a-z]+)-N[1-9][0-9]*-t[0-9.e+-]+$")
"""The shape of a problem key (``regimes_problems.Problem.key``); which keys exist is checked
against the families' grids once they are built."""


def _problem_keys(text):
    keys = [k.strip() for k in text.split(",")]
    if not text.strip() or any(not k for k in keys):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of problem keys, got {text!r}")
    for k in keys:
        m = PROBLEM_KEY.match(k)
        if m is None or m["family"] not in FAMILIES:
            raise argparse.ArgumentTypeError(f"{k!r}: not a problem key such as mixture-N10000-t10")
    return tuple(dict.fromkeys(keys))


def _budget(text):
    value = arguments.positive_float()(text)
    if value < 1e4:
        raise argparse.ArgumentTypeError(f"must be >= 1e4 gradient evaluations, got {text}")
    return value


def parse_args(argv=None):
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    p.add_argument(
        "--families",
        type=arguments.names(FAMILIES, "families"),
        default=FAMILIES,
        help=f"comma-separated, from {', '.join(FAMILIES)}",
    )
    p.add_argument("--anchors", action="store_true", help="each family's anchor problem only (no sweeps)")
    p.add_argument(
        "--problems",
        type=_problem_keys,
        default=None,
        help="comma-separated problem keys (e.g. mixture-N10000-t10) to keep of those --families and --anchors select",
    )
    p.add_argument(
        "--seeds",
        type=arguments.int_list(1, what="seeds"),
        default=SEEDS,
        help="chain seeds of every run, >= 1 (the pilots use seed 0)",
    )
    p.add_argument("--budget", type=_budget, default=BUDGET, help="gradient evaluations per run (>= 1e4)")
    p.add_argument("--quick", action="store_true", help="--anchors with the first seed and half the budget (minutes)")
    p.add_argument(
        "--no-checks", action="store_true", help="skip the advisor on the mixture main job and the fidelity networks"
    )
    p.add_argument(
        "--checks-from",
        type=arguments.input_file,
        default=None,
        help="take the advisor's checks from this file ({checks, checks_seconds, checks_cpu_seconds}: "
        "the checks measured by a separate process) instead of running them; with --report-only, "
        "replace the results file's checks with them",
    )
    p.add_argument(
        "--figures",
        type=arguments.output_directory,
        default=None,
        help="directory of the figures (default docs/benchmarks; --quick: next to the results)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the problems of the --partial file measured with these settings",
    )
    p.add_argument(
        "--partial",
        type=arguments.output_file,
        default=None,
        help="where the measured problems are kept as they finish (default runs/regimes-partial.json, "
        "--quick: runs/regimes-quick-partial.json); runs of other --families into other --partial "
        "files can be merged into one and finished with --resume",
    )
    p.add_argument(
        "--readvise",
        type=arguments.input_directory,
        default=None,
        help="with --report-only: re-derive each problem's advice by the advisor's current rules from the "
        "pilot measurements kept in this directory (<key>/advice.json; the runs write runs/regimes-pilots)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite the tables, numbers and figures of an existing results file from its measurements (no runs)",
    )
    results.add_arguments(p, "regimes")
    return _checked(p.parse_args(argv))


def _checked(args):
    """The flags that depend on each other, checked (exit 2, one line), and the settings of
    ``--quick`` / ``--report-only`` applied."""
    args.families = list(args.families)
    args.seeds = list(args.seeds)
    if args.problems is not None:
        outside = [k for k in args.problems if PROBLEM_KEY.match(k)["family"] not in args.families]
        if outside:
            arguments.die(f"--problems: {outside[0]!r} is not of --families {','.join(args.families)}")
    if args.checks_from is not None and args.no_checks:
        arguments.die("--checks-from: takes the checks from a file; --no-checks skips them: pass one")
    args.kept_checks = None if args.checks_from is None else _kept_checks(args.checks_from)
    if args.quick:
        args.anchors, args.seeds, args.budget = True, args.seeds[:1], args.budget / 2
        if args.results == str(results.path_of("regimes")):
            args.results = str(Path("runs") / "regimes-quick.json")
    args.figures = Path(
        args.figures or (Path(args.results).parent if args.quick else results.ROOT / "docs" / "benchmarks")
    )
    if args.readvise is not None and not args.report_only:
        arguments.die("--readvise: re-derives the advice of an existing results file; pass --report-only")
    if args.report_only:
        if not Path(args.results).is_file():
            arguments.die(f"--report-only: no results file {args.results}; run the benchmark first")
        args.target = Path(args.results)
        return args
    args.target = results.check_target(args.results, args.force)
    return args


def _plain(value):
    """numpy scalars and arrays as JSON numbers and lists."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def _mean_se(values):
    import numpy as np

    v = np.asarray(values, np.float64)
    return [float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0]


def evaluate(problem, pilot, runs, seeds):
    """One problem's row: each method's mean +- se of the headline distance, the closest method,
    and whether the advisor's recommendation is it or within the seeds' noise of it (two standard
    errors of the difference)."""
    key = problem.headline
    stats = {m: _mean_se([r[key] for r in runs[m]]) for m in METHOD_NAMES if m in runs}
    advice, _ = pilot
    return {"stats": stats, **_verdict(stats, advice.recommendation)}


def _verdict(stats, recommendation):
    """The method a recommendation stands for on a problem (the closer of the single-chain methods
    for "one chain"), the closest method, and whether the pick is it or within two standard
    errors of the difference."""
    import regimes_methods

    best = min(stats, key=lambda m: stats[m][0])
    pick = min((m for m in regimes_methods.ADVICE_METHOD[recommendation] if m in stats), key=lambda m: stats[m][0])
    gap = stats[pick][0] - stats[best][0]
    noise = 2.0 * (stats[pick][1] ** 2 + stats[best][1] ** 2) ** 0.5
    return {"closest": best, "advised": pick, "gap": gap, "noise": noise, "agrees": gap <= noise}


def report_only(args):
    """The tables, numbers and figures of ``args.target`` rewritten from its measurements; the
    command, date and commit of the measurements are kept."""
    import json

    import regimes_report

    from tf_vrre.runs import atomic

    res = json.loads(args.target.read_text())
    out = res["measured"]
    if args.kept_checks is not None:  # checks measured again by a separate process
        out.update(args.kept_checks)
        env = results.environment()
        res["checks_replaced"] = {k: env[k] for k in ("command", "date", "git_commit", "git_dirty")}
    if args.readvise is not None:
        res["readvised"] = _readvise(out, args.readvise)
    res["tables"] = regimes_report.tables(out)
    res["figures"] = regimes_report.figures(out, args.figures)
    res["values"] = regimes_report.values(out)
    atomic.write_json(args.target, res, newline=True)
    print(regimes_report.text(out, res["tables"]))
    return out


def _kept_checks(path):
    """The advisor's checks a separate process measured (``--checks-from``)."""
    import json

    try:
        kept = json.loads(Path(path).read_text())
        return {k: kept[k] for k in ("checks", "checks_seconds", "checks_cpu_seconds")}
    except (ValueError, KeyError, TypeError) as err:
        arguments.die(f"--checks-from: {path} holds no advisor's checks ({type(err).__name__}: {err})")


def _kept_measurements(path):
    """A pilot's measurements kept at ``path`` (``None``: no such file)."""
    import json

    from tf_vrre.diagnostics import advice as advice_rules

    if not path.is_file():
        return None
    try:
        return advice_rules.Measurements.from_dict(json.loads(path.read_text())["measurements"])
    except (ValueError, KeyError, TypeError) as err:
        arguments.die(f"--readvise: {path} is not a pilot's measurements ({type(err).__name__}: {err})")


def _readvise(out, directory):
    """Every problem's advice, and the checks' on the other benchmarks, re-derived by the advisor's
    rules as they are now from the pilots' measurements kept in ``directory/<key>/advice.json`` (one
    without them keeps its advice); what was re-derived, by which commit."""
    import json

    from tf_vrre.diagnostics import advice as advice_rules

    done = []
    for key, p in out["problems"].items():
        m = _kept_measurements(Path(directory) / key / "advice.json")
        if m is None:
            continue
        a = advice_rules.recommend(m, budget=out["settings"]["budget"])
        p["advice"] = json.loads(json.dumps(a.to_dict(), default=_plain))
        p.update(_verdict({k: tuple(v) for k, v in p["stats"].items()}, a.recommendation))
        done.append(key)
    for key, c in out.get("checks", {}).items():  # the other benchmarks' pilots, at their own budgets
        m = _kept_measurements(Path(directory) / key / "advice.json")
        if m is not None:
            a = advice_rules.recommend(m, budget=c["advice"]["numbers"]["budget"])
            c["advice"] = json.loads(json.dumps(a.to_dict(), default=_plain))
            done.append(key)
    env = results.environment()
    return {"problems": done, **{k: env[k] for k in ("command", "date", "git_commit", "git_dirty")}}


def _select(args):
    """The problems ``--families``, ``--anchors`` and ``--problems`` select."""
    import regimes_problems

    problems = regimes_problems.problems(args.families)
    if args.anchors:
        problems = [p for p in problems if (p.data_size, p.temperature) == regimes_problems.AXES[p.family]["anchor"]]
    if args.problems is not None:
        wanted = list(args.problems)
        unknown = sorted(set(wanted) - {p.key for p in problems})
        if unknown:
            arguments.die(f"--problems: {unknown[0]!r} is not among {', '.join(p.key for p in problems)}")
        problems = [p for p in problems if p.key in wanted]
    return problems


def _run_problem(problem, args, start):
    """One problem: the pilot's advice, every method at every seed, and the row that compares them."""
    import regimes_methods

    t0, cpu0 = time.time(), time.process_time()
    advice, pilot_info = regimes_methods.pilot(problem, args.budget)
    est = advice.numbers["estimators"]
    chains = {
        "resghmc": min(regimes_methods.MAX_CHAINS, est["mini-batch"]["recommended_chains"]),
        "vr-resghmc": min(regimes_methods.MAX_CHAINS, est["control variates"]["recommended_chains"]),
    }
    print(
        f"[{time.time() - start:6.0f} s] {problem.name}: {advice.summary().splitlines()[0]} "
        f"(pilot {pilot_info['seconds']:.0f} s)",
        flush=True,
    )
    runs = {}
    for name in METHOD_NAMES:
        for seed in args.seeds:
            r = regimes_methods.run(regimes_methods.METHODS[name], problem, args.budget, seed, chains.get(name, 1))
            runs.setdefault(name, []).append(r)
    row = evaluate(problem, (advice, pilot_info), runs, args.seeds)
    print(
        f"[{time.time() - start:6.0f} s] {problem.name}: "
        + ", ".join(f"{m} {s[0]:.3g} +- {s[1]:.2g}" for m, s in row["stats"].items())
        + f"; closest {row['closest']}, advised {row['advised']} ({'agrees' if row['agrees'] else 'DISAGREES'}); "
        f"{time.time() - t0:.0f} s",
        flush=True,
    )
    return {
        "family": problem.family,
        "name": problem.name,
        "data_size": problem.data_size,
        "temperature": problem.temperature,
        "hot": problem.hot,
        "period": problem.period,
        "learning_rate": problem.learning_rate,
        "headline": problem.headline,
        "exact": problem.exact,
        "chains": chains,
        "advice": advice.to_dict(),
        "pilot": pilot_info,
        "runs": runs,
        **row,
        "seconds": time.time() - t0,
        "cpu_seconds": time.process_time() - cpu0,
    }


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.report_only:
        return report_only(args)
    import json

    import regimes_methods
    import regimes_problems
    import regimes_report

    from tf_vrre.runs import atomic

    problems = _select(args)
    start = time.time()
    settings = {
        "budget": args.budget,
        "seeds": args.seeds,
        "quick": args.quick,
        "anchors": args.anchors,
        "problems": [p.key for p in problems],
        "families": args.families,
        "batch": regimes_problems.BATCH,
        "burn_in": regimes_methods.BURN_IN,
        "pilot_fraction": regimes_methods.PILOT_FRACTION,
        "max_chains": regimes_methods.MAX_CHAINS,
    }
    out = {"problems": {}, "settings": settings}
    default = "regimes-quick-partial.json" if args.quick else "regimes-partial.json"
    partial = Path(args.partial) if args.partial else results.ROOT / "runs" / default
    if args.resume and partial.exists():
        kept = json.loads(partial.read_text())
        which = ("families", "anchors", "problems")  # select problems; the kept ones are filtered by key below
        same = {k: v for k, v in kept["settings"].items() if k not in which}
        if same == {k: v for k, v in settings.items() if k not in which}:
            keys = {p.key for p in problems}
            out["problems"] = {k: v for k, v in kept["problems"].items() if k in keys}
            print(f"regimes: {len(out['problems'])} problems kept from {partial}", flush=True)
    print(
        f"regimes: {len(problems)} problems x {len(METHOD_NAMES)} methods x seeds {args.seeds}, "
        f"{args.budget:.3g} gradient evaluations per run",
        flush=True,
    )
    for problem in problems:
        if problem.key in out["problems"]:
            continue
        out["problems"][problem.key] = _run_problem(problem, args, start)
        out = json.loads(json.dumps(out, default=_plain))
        partial.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(partial, out)
    if args.kept_checks is not None:
        out.update(args.kept_checks)
    elif not args.no_checks:
        t0, cpu0 = time.time(), time.process_time()
        out["checks"] = regimes_methods.checks(quick=args.quick)
        out["checks_seconds"], out["checks_cpu_seconds"] = time.time() - t0, time.process_time() - cpu0
    out = json.loads(json.dumps(out, default=_plain))
    tables = regimes_report.tables(out)
    figures = regimes_report.figures(out, args.figures)
    results.write(
        args.target, tables, settings=settings, measured=out, figures=figures, values=regimes_report.values(out)
    )
    print(regimes_report.text(out, tables))
    return out


if __name__ == "__main__":
    main()
