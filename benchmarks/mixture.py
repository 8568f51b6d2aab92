"""The Gaussian-mixture study (``tf-vrre mixture``, the paper's Section 5.1) as a benchmark: runs it,
writes ``benchmarks/results/mixture.json`` and the landing figure ``docs/mixture-density.png``.

    python benchmarks/mixture.py --force                  # runs `tf-vrre mixture` (~4 min on 2 cores)
    python benchmarks/mixture.py --run DIR --force -- FLAGS  # a finished `tf-vrre mixture FLAGS --out DIR`
    python benchmarks/mixture.py --force -- --seeds 5     # flags after `--` go to `tf-vrre mixture`

The study is deterministic (same flags, same table). The figure shows every chain seed on its
own: a method's weight pooled over seeds can look right while each seed sits mostly in one mode,
which a histogram of the pooled seeds hides.

The flags and a ``--run`` study's files are checked before anything is drawn or written (exit
status 2 and one line naming the flag or file); flags after ``--`` are checked by ``tf-vrre
mixture`` itself, whose refusal (one line, exit status 2) ends this script too.
"""

import datetime
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import arguments
import numpy as np
import results

FIGURE = HERE.parent / "docs" / "mixture-density.png"
LABELS = {"sgld": "SGLD", "resgld": "reSGLD", "vr-resgld": "VR-reSGLD", "vr-resgld-ladder": "VR-reSGLD ladder"}
SEED_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown")


def run_study(flags):
    """Runs ``tf-vrre mixture FLAGS --out runs/mixture-benchmark-<time>``; returns the directory."""
    out = Path("runs") / f"mixture-benchmark-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    cmd = [sys.executable, "-m", "tf_vrre.cli", "mixture", *flags, "--out", str(out)]
    print("running:", " ".join(["tf-vrre", *cmd[3:]]), flush=True)
    status = subprocess.run(cmd, check=False).returncode
    if status:
        raise SystemExit(status)  # tf-vrre mixture said why, in one line
    return out


def main_table(summary):
    """The page's table: one row per method (mean +- standard error across seeds) and the exact answer."""
    rows = []
    for method, r in summary["methods"].items():
        rows.append(
            [
                LABELS.get(method, method),
                r["swaps"],
                r["accept_rate"],
                r["mean_sigma2"],
                r["mode_changes"],
                [r["left_mode_weight"], r["left_mode_weight_se"]],
                [r["ks"], r["ks_se"]],
                r["beta_ess"],
                r["beta_rhat"],
                r["seconds"],
            ]
        )
    rows = [[c if c is not None else "-" for c in row] for row in rows]
    exact = {"value": summary["exact"]["mode_weights"][0], "format": "{:.3f}"}
    rows.append(["exact", None, None, None, None, exact, {"value": 0.0, "format": "{:.3f}"}, None, None, None])
    return results.table(
        [
            "method",
            "swaps",
            "accept",
            "mean sigma2",
            "mode changes",
            "left-mode weight",
            "KS",
            "ESS(beta)",
            "R-hat",
            "time s",
        ],
        [
            "{}",
            "{:.0f}",
            "{:.4f}",
            "{:.4g}",
            "{:.1f}",
            "{:.3f} +- {:.3f}",
            "{:.3f} +- {:.3f}",
            "{:.0f}",
            "{:.2f}",
            "{:.0f}",
        ],
        rows,
        keys=[*summary["methods"], "exact"],
    )


def variance_table(summary):
    """Mean sigma^2 of the swap energies' difference: reSGLD, and VR-reSGLD at the study's m and the
    extra periods of variance.png (their runs are shorter: ``--variance-steps``)."""
    methods, m = summary["methods"], summary["config"]["m"]
    base = methods.get("resgld", {}).get("mean_sigma2")
    rows, keys = [], []
    if base:
        rows.append(["reSGLD (mini-batch energies)", "-", base, 1.0])
        keys.append("resgld")
    entries = ([(m, methods["vr-resgld"]["mean_sigma2"])] if "vr-resgld" in methods else []) + [
        (int(k), v) for k, v in summary["variance_by_m"].items()
    ]
    for period, s2 in sorted(entries):
        rows.append(["VR-reSGLD", period, s2, base / s2 if base else "-"])
        keys.append(f"vr-m{period}")
    return results.table(
        ["swap energies", "m", "mean sigma2", "reSGLD / this"], ["{}", "{}", "{:.4g}", "{:.1f}"], rows, keys=keys
    )


def seeds_table(summary):
    rows = []
    for method, r in summary["methods"].items():
        for s in r["per_seed"]:
            rows.append(
                [
                    LABELS.get(method, method),
                    s["seed"],
                    s["swaps"] if s["swaps"] is not None else "-",
                    s["mode_changes"],
                    s["left_mode_weight"],
                    s["ks"],
                ]
            )
    return results.table(
        ["method", "chain seed", "swaps", "mode changes", "left-mode weight", "KS"],
        ["{}", "{}", "{}", "{}", "{:.3f}", "{:.3f}"],
        rows,
    )


def figure(path, summary, traces):
    """Per method (columns): each seed's cold-chain trace (one row per seed), and each seed's running
    left-mode weight against the exact one (bottom row)."""
    from tf_vrre import _figures

    cfg, methods, seeds = summary["config"], list(summary["methods"]), summary["chain_seeds"]
    modes, exact_left, split = (
        summary["exact"]["modes"],
        summary["exact"]["mode_weights"][0],
        summary["target"]["phi"] / 2,
    )
    fig = _figures.new(figsize=(3.6 * len(methods), 0.95 * len(seeds) + 2.9))
    axes = fig.subplots(
        len(seeds) + 1,
        len(methods),
        squeeze=False,
        sharex=True,
        gridspec_kw={"height_ratios": [1] * len(seeds) + [2.0]},
    )
    for j, method in enumerate(methods):
        per_seed = summary["methods"][method]["per_seed"]
        axes[0, j].set_title(LABELS.get(method, method), fontsize=10)
        for i, (seed, s) in enumerate(zip(seeds, per_seed)):
            ax, color = axes[i, j], SEED_COLORS[i % len(SEED_COLORS)]
            beta = traces[f"{method}/seed{seed}/beta"]
            steps = (np.arange(beta.size) + 1) * cfg["record_every"]
            ax.plot(steps, beta, lw=0.5, color=color)
            for mode in modes:
                ax.axhline(mode, ls="--", lw=0.6, color="0.4")
            ax.set_ylim(min(modes) - 10, max(modes) + 10)
            ax.set_yticks([round(m) for m in modes])
            ax.text(
                0.01,
                0.5,
                f"seed {seed}: {s['mode_changes']} mode changes, left {s['left_mode_weight']:.2f}",
                transform=ax.transAxes,
                va="center",
                fontsize=7,
                bbox={"facecolor": "white", "alpha": 0.85, "lw": 0},
            )
            ax.tick_params(labelsize=7)
            # running weight of the left mode after burn-in
            start = int(beta.size * cfg["burn_in"])
            left = np.cumsum(beta[start:] < split) / np.arange(1, beta.size - start + 1)
            axes[-1, j].plot(steps[start:], left, color=color, lw=1.2, label=f"seed {seed}")
        ax = axes[-1, j]
        ax.axhline(exact_left, color="k", lw=1.2, ls="--", label=f"exact {exact_left:.3f}")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("iteration", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(r"$\beta$", fontsize=8)
    axes[-1, 0].set_ylabel("left-mode weight so far", fontsize=8)
    axes[-1, 0].legend(fontsize=7, loc="upper right")
    fig.suptitle(
        f"Cold chain of each seed (tf-vrre mixture, {cfg['steps']:,} iterations): trace, and the weight "
        f"of the left mode against the exact one at tau = {cfg['tau1']:g}",
        fontsize=9,
    )
    fig.tight_layout(h_pad=0.4)
    _figures.save(fig, str(path), dpi=80)


SUMMARY_KEYS = (
    "status",
    "config",
    "methods",
    "chain_seeds",
    "exact",
    "target",
    "variance_by_m",
    "variance_reduction_factor",
    "wall_seconds",
)
PROBLEMS = (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError)


def read_study(run_dir):
    """The ``summary.json`` and the cold chains' traces of a finished ``tf-vrre mixture`` study,
    checked before anything is drawn: exit 2 with one line naming the file if it is missing,
    damaged, incomplete, holds a NaN or an infinity, or lacks a trace."""
    path = Path(run_dir) / "summary.json"
    summary = arguments.read_json(path, "--run", keys=SUMMARY_KEYS)
    if summary["status"] != "complete":
        arguments.die(f"--run: {path}: the study is {summary['status']!r}, not complete; run it to the end first")
    try:
        keys = [f"{m}/seed{s}/beta" for m in summary["methods"] for s in summary["chain_seeds"]]
    except TypeError:
        arguments.die(f"--run: {path}: methods or chain_seeds is not a list")
    traces = arguments.read_npz(Path(run_dir) / "traces.npz", keys, "--run")
    for key, beta in traces.items():
        if beta.ndim != 1 or not beta.size or not np.all(np.isfinite(beta)):
            arguments.die(f"--run: {Path(run_dir) / 'traces.npz'}: {key} is empty, not a trace, or not finite")
    return summary, traces


def convert(run_dir, out, figure_path, flags, ran):
    summary, traces = read_study(run_dir)
    try:
        tables = {"main": main_table(summary), "seeds": seeds_table(summary), "variance": variance_table(summary)}
        figure(figure_path, summary, traces)
    except PROBLEMS as err:
        what = f"no key {err.args[0]!r}" if isinstance(err, KeyError) else f"{type(err).__name__}: {err}"
        arguments.die(f"--run: {Path(run_dir) / 'summary.json'}: not the summary of a finished study ({what})")
    cfg = {k: v for k, v in summary["config"].items() if k != "out"}
    values = {
        "variance_reduction_factor": summary["variance_reduction_factor"],
        "variance_by_m": summary["variance_by_m"],
        "wall_seconds": summary["wall_seconds"],
    }
    study = " ".join(["tf-vrre", "mixture", *flags])
    results.write(
        out,
        tables,
        command=study,
        converted_by="python benchmarks/mixture.py" + (" --run" if not ran else ""),
        config=cfg,
        exact=summary["exact"],
        values=values,
        figure=str(Path(figure_path).resolve().relative_to(HERE.parent))
        if Path(figure_path).resolve().is_relative_to(HERE.parent)
        else str(figure_path),
    )
    print(f"figure: {figure_path}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    flags = argv[argv.index("--") + 1 :] if "--" in argv else []
    p = arguments.parser(__file__, __doc__.split("\n")[0])
    p.add_argument(
        "--run",
        type=arguments.input_directory,
        default=None,
        help="a finished `tf-vrre mixture --out DIR` to convert instead of running",
    )
    p.add_argument(
        "--figure", type=arguments.output_file, default=str(FIGURE), help="PNG (default docs/mixture-density.png)"
    )
    results.add_arguments(p, "mixture")
    args = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    out = results.check_target(args.results, args.force)
    convert(args.run or run_study(flags), out, args.figure, flags, ran=args.run is None)


if __name__ == "__main__":
    main()
