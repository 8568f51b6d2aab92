"""``tf-vrre diagnose``: is the sampler mixing?  Replica flow and ESS / R-hat of a run.

tf-vrre diagnose --run runs/cifar10                  # writes into the run directory
tf-vrre diagnose --run runs/s0 --run runs/s1 --out runs/diag   # seeds as chains
"""

import os

import tf_vrre.cli._args as _args
import tf_vrre.cli._ladder as _ladder

HELP = "replica flow, per-pair acceptance, ESS / R-hat of a run (swap log and/or samples)"
DESCRIPTION = (
    "Reads RUN/swaps/ (SwapLogger: swaps.csv, refresh.csv, epochs.csv) and RUN/samples/ "
    "(SampleCollector), or a bare SwapLogger / sample directory. Prints swaps, acceptance per "
    "pair, round trips cold -> hottest -> cold per 1000 steps, mean first-passage time cold -> "
    "hot, the sigma2 trend; the rank-normalised split R-hat and bulk ESS of the stored predictive "
    "at every held-out input (function space: median, 90th percentile, share above 1.01 and 1.1), "
    "with the runs as chains; ESS / R-hat of the cold chain's energy, the samples' energy and weight "
    "norm as context (weight space: not judged); the excess temperature gradient noise adds to the "
    "cold chain; then a verdict decided in function space: 'not mixing' when the predictive's R-hat "
    "exceeds 1.1 at more than a tenth of the inputs or its median ESS is below 100, or a replica run "
    "has no accepted swap or no round trip; 'not yet established' when it exceeds 1.01 at more than "
    "a tenth, ESS is below 400 at more than a tenth, fewer than 4 runs are compared, or no run "
    "stored a predictive (Vehtari et al. 2021; Izmailov et al. 2021), with what to try. "
    "Writes diagnostics.json, replicas.png and acceptance.png to --out. Several --run give "
    "several chains (e.g. seeds) for R-hat. A run with a ladder tuning record (RUN/ladder.json "
    "or RUN/ladder/ladder.json, LadderTuner) also gets its table (Lambda, recommended chains and "
    "rejection per pair for each round) and ladder.png; a run with only that record gets only them. "
    "Every run also gets 'where replica exchange pays': the advice of tf_vrre.diagnostics.advise if a "
    "pilot wrote RUN/advice.json, else a best guess from the swap noise penalty and acceptance in its "
    "swap log (and the tuning record's barrier)."
)


def add_arguments(p):
    """Flags of ``tf-vrre diagnose``."""
    p.add_argument(
        "--run",
        action="append",
        required=True,
        metavar="RUN",
        help="run directory (repeat for several runs as chains, e.g. seeds)",
    )
    p.add_argument(
        "--out", default=None, help="output directory (default: the run directory; required with several --run)"
    )
    p.add_argument(
        "--burn-in",
        type=_args.fraction(),
        default=0.1,
        help="fraction of each run's steps dropped before ESS / R-hat (default 0.1)",
    )
    p.add_argument(
        "--points",
        type=_args.positive(int),
        default=None,
        help="judge the predictive at the first N held-out inputs only (default: every input the runs stored)",
    )
    p.add_argument(
        "--blocks",
        type=_args.nonnegative_int,
        default=20,
        help="batch-means blocks for acceptance standard errors, >= 2 (default 20)",
    )
    p.add_argument("--no-split", action="store_true", help="do not split chains in halves for ESS / R-hat")
    p.add_argument("--no-figures", action="store_true", help="skip replicas.png and acceptance.png")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print only the verdict (mixing or not, and why), not the tables",
    )


def check(args):
    """Runs, sample files and ``--out``, before TensorFlow starts (exit 2 on a bad one)."""
    from tf_vrre.runs import samples

    if args.blocks < 2:
        _args.die(f"--blocks: must be >= 2, got {args.blocks}")
    _ladder.check_records(args.run)
    args.ladder_only = all(_ladder.record_only(run) for run in args.run)
    for run in [] if args.ladder_only else args.run:
        try:
            _, sample_dir = samples.locate(run)
            if sample_dir is not None:
                try:
                    samples.load_samples(sample_dir)
                except ValueError as err:
                    raise ValueError(f"{err}; {samples.repair_hint(run)}") from None
        except ValueError as err:
            _args.die(f"--run: {err}{_ladder.study_hint(run)}")
    if len(set(map(os.path.realpath, args.run))) != len(args.run):
        _args.die("--run: the same run given twice")
    if args.out is None:
        if len(args.run) > 1:
            _args.die("--out: required with several --run")
        args.out = args.run[0]
    _args.writable(args.out)
    from tf_vrre.runs import locks

    args.run_locks = [locks.share_run(run) for run in args.run]  # readers: no train / repair starts meanwhile


def _write_json(path, obj):
    from tf_vrre.runs import atomic

    atomic.write_json(path, obj, indent=1)


def _advice(runs):
    """Where replica exchange pays, per run (:func:`tf_vrre.diagnostics.run_advice.from_run`: a pilot's
    ``advice.json``, else a best guess from the swap log and the tuning record), read before anything
    is written; ``{run: section}``."""
    from tf_vrre.diagnostics import run_advice

    out = {}
    for run in runs:
        try:
            section = run_advice.from_run(run)
        except (ValueError, OSError) as err:
            _args.die(f"--run: {err}")
        if section is not None:
            out[run] = section
    return out


def _print_advice(sections):
    for run, section in sections.items():
        print(f"\nwhere replica exchange pays ({run}; from the {section['source']}):\n{section['text']}")


def run(args):
    """Diagnoses the runs (after :func:`check`); returns the exit status."""
    if args.ladder_only:
        advice = _advice(args.run)
        os.makedirs(args.out, exist_ok=True)
        _, written = _ladder.report(args.run, args.out, draw=not args.no_figures)
        _print_advice(advice)
        if written:
            print(f"wrote {', '.join(written)} to {args.out}")
        return 0
    from tf_vrre import diagnostics
    from tf_vrre.diagnostics import report

    try:  # read everything first: a broken log leaves no --out behind
        diag = diagnostics.diagnose(
            args.run, burn_in=args.burn_in, points=args.points, blocks=args.blocks, split=not args.no_split
        )
    except (ValueError, OSError) as err:
        _args.die(f"--run: {err}")
    advice = _advice(args.run)
    os.makedirs(args.out, exist_ok=True)
    print(report.format_verdict(diag["verdict"]) if args.quiet else diagnostics.format_table(diag))
    _write(args, diag, advice)
    return 0


def _write(args, diag, advice):
    """diagnostics.json and the figures into ``--out``; without ``--quiet`` the ladder's tables,
    the ``advice`` (:func:`_advice`) and the files written are printed (with it, only the verdict is)."""
    from tf_vrre import diagnostics
    from tf_vrre.diagnostics import plots

    written = ["diagnostics.json"]
    with_log = [(f, p) for f, p in zip(diag["replica_flow"], diag["runs"]) if f is not None]
    if with_log and not args.no_figures:
        flows, labels = [f for f, _ in with_log], [os.path.basename(os.path.normpath(p)) for _, p in with_log]
        plots.replicas(os.path.join(args.out, "replicas.png"), flows, labels)
        plots.acceptance(os.path.join(args.out, "acceptance.png"), flows, labels)
        written += ["replicas.png", "acceptance.png"]
    tuning, figures = _ladder.report(args.run, args.out, draw=not args.no_figures, show=not args.quiet)
    written += figures
    if not args.quiet:
        _print_advice(advice)
    summary = {
        **diagnostics.to_json(diag),
        **({"ladder": tuning} if tuning else {}),
        **({"replica_exchange": advice} if advice else {}),
    }
    _write_json(os.path.join(args.out, "diagnostics.json"), summary)
    if not args.quiet:
        print(f"wrote {', '.join(written)} to {args.out}")
