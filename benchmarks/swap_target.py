"""The bias of adapting F to a swap acceptance rate, on the paper's mixture against its exact answer.

``CorrectedSwap(correction="auto", target_acceptance=r)`` lets a ``LadderTuner`` adapt ``F`` during
the tuning phase so that swaps are accepted at the rate ``r``.  Only one ``F`` (about 2 for Gaussian
energy noise) makes the corrected swap unbiased; this script measures what another ``F`` costs.
Each configuration runs the set-up of ``benchmarks/ladder_tuning.py`` (the paper's 1-D mixture,
N = 1000, VR energies with n = 100 and m = 4, K chains tuned by ``LadderTuner`` from the linear
ladder over tau in [10, 3000], even/odd swaps, SGLD at eta = 1e-4; seeds alternately started in
each mode): ``F = 2`` fixed, then ``F`` adapted to each target.  After the tuning phase it reports
the ``F`` reached (mean over seeds), the swap acceptance rate over all pairs, round trips per 1,000
steps and the cold chain's left-mode weight minus the exact one (mean over seeds +- the larger of
the across-seed and the pooled within-run batch-means standard errors).

    python benchmarks/swap_target.py                           # the table of docs/guides/ladder.md
    python benchmarks/swap_target.py --seeds 2 --tune 2000 --fixed 4000 --targets 0.5

Writes ``benchmarks/results/swap_target.json`` (``--out``; ``--force`` to replace it) through
``benchmarks/results.py``: the command, commit, date, hardware, the table of the guide (``tables``
-> ``main``) and every run; ``python benchmarks/render_docs.py`` renders the table in
``docs/guides/ladder.md``.  ``--tables-only`` recomputes the tables of an existing ``--out`` file
from its stored runs (no sampling).  The flags (and with ``--tables-only`` the ``--out`` file) are
checked before TensorFlow starts: exit status 2 and one line naming the flag or file.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import arguments
import ladder_tuning
import numpy as np
import results


def acceptance_rate(text):
    """Argument type: a target swap acceptance rate in (0, 1)."""
    value = arguments.fraction()(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def table(rows):
    """The guide's table of the stored ``results`` rows: the ``F`` reached per seed, the swap
    acceptance over all pairs, round trips per 1,000 steps, the cold chain's error +- its
    standard error."""
    out = []
    for r in rows:
        s = r["summary"]
        reached = {"value": r["final_correction"], "format": " ".join(["{:.3g}"] * len(r["final_correction"]))}
        out.append([r["config"], reached, r["acceptance"], s["trips_per_1000"], [s["error"], s["cold_se"]]])
    return results.table(
        ["F", "F reached (per seed)", "acceptance", "round trips / 1000 steps", "cold chain error"],
        ["{}", "{}", "{:.3f}", "{:.1f} +- {:.1f}", "{:+.3f} +- {:.3f}"],
        out,
        [r["config"] for r in rows],
    )


def parse_args(argv):
    """The command line, checked before TensorFlow starts (exit 2 and one line for a bad value)."""
    p = arguments.parser(__file__, __doc__.splitlines()[0])
    p.add_argument(
        "--targets",
        type=arguments.float_list(acceptance_rate, "acceptance rates"),
        default=(0.3, 0.7),
        help="target acceptance rates in (0, 1), comma-separated",
    )
    p.add_argument("--chains", type=arguments.at_least(3, 64), default=4, help="K of the tuned ladder (>= 3)")
    p.add_argument("--seeds", type=arguments.positive(int, 1000), default=3)
    p.add_argument(
        "--tune", type=arguments.positive(int, 10**9), default=3000, help="tuning steps (F adapts during them)"
    )
    p.add_argument(
        "--fixed", type=ladder_tuning.fixed_steps(), default=9000, help="steps measured after the tuning phase"
    )
    p.add_argument("--out", type=arguments.output_file, default=os.path.join(HERE, "results", "swap_target.json"))
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--tables-only", action="store_true", help="recompute the tables of --out from its stored runs")
    args = p.parse_args(argv)
    if not args.tables_only:
        results.check_target(args.out, args.force, flag="--out")
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.tables_only:
        return ladder_tuning.tables_only(args.out, table)
    configs = [("F = 2", 2.0, None)] + [(f"target {r:g}", "auto", r) for r in args.targets]
    start, rows = time.time(), []
    for name, correction, target in configs:
        runs = [
            ladder_tuning.run_one(
                "mixture",
                "vr",
                args.chains,
                "tuned",
                seed,
                args.tune,
                args.fixed,
                correction=correction,
                swap_options=None if target is None else {"target_acceptance": target},
            )
            for seed in range(args.seeds)
        ]
        summary = ladder_tuning.summarise(runs, "mixture")
        attempts = np.sum([r["attempts"] for r in runs], 0)
        accepted = np.sum([np.multiply(r["attempts"], np.subtract(1.0, r["rejection"])) for r in runs], 0)
        rows.append(
            {
                "config": name,
                "correction": correction,
                "target_acceptance": target,
                "final_correction": [r["correction"] for r in runs],
                "acceptance": float(accepted.sum() / attempts.sum()),
                "summary": summary,
                "runs": runs,
            }
        )
        print(f"[{len(rows)}/{len(configs)}] {name}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    print(
        f"\nthe paper's mixture, VR energies, K = {args.chains} tuned, {args.seeds} seeds x {args.tune} tuning + "
        f"{args.fixed} measured steps; exact left-mode weight {rows[0]['summary']['exact']:.4f}\n"
    )
    print(results.markdown(table(rows)))
    settings = dict(vars(args), out=os.path.relpath(os.path.abspath(args.out), os.path.dirname(HERE)))
    results.write(
        args.out,
        {"main": table(rows)},
        command=" ".join(["python benchmarks/swap_target.py", *argv]),
        script="benchmarks/swap_target.py",
        settings=settings,
        results=rows,
    )
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
