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

Writes ``benchmarks/results/swap_target.json`` (``--out``) with the command, commit, date and hardware.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ladder_tuning as lt
import numpy as np


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", default="0.3,0.7", help="target acceptance rates, comma-separated")
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--tune", type=int, default=3000, help="tuning steps (F adapts during them)")
    p.add_argument("--fixed", type=int, default=9000, help="steps measured after the tuning phase")
    p.add_argument("--out", default=os.path.join(HERE, "results", "swap_target.json"))
    args = p.parse_args(argv)
    configs = [("F = 2", 2.0, None)] + [(f"target {float(r):g}", "auto", float(r)) for r in args.targets.split(",")]
    start, rows = time.time(), []
    for name, correction, target in configs:
        runs = [
            lt.run_one(
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
        summary = lt.summarise(runs, "mixture")
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
    print(
        "| F | F reached (per seed) | acceptance | round trips / 1000 steps | cold chain error |\n|---|---|---|---|---|"
    )
    for r in rows:
        s = r["summary"]
        z = "" if s["z"] is None else f" ({s['z']:+.1f} SE)"
        print(
            f"| {r['config']} | {' '.join(f'{v:.3g}' for v in r['final_correction'])} | {r['acceptance']:.3f} | "
            f"{s['trips_per_1000'][0]:.1f} +- {s['trips_per_1000'][1]:.1f} | {s['error']:+.3f} +- {s['cold_se']:.3f}{z} |"
        )
    settings = dict(vars(args), out=os.path.relpath(os.path.abspath(args.out), os.path.dirname(HERE)))
    doc = {**lt._provenance(argv), "script": "benchmarks/swap_target.py", "settings": settings, "results": rows}
    doc["command"] = "python benchmarks/swap_target.py " + " ".join(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {args.out} ({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
