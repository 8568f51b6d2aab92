"""The report of ``posterior_fidelity.py``: the per-problem tables and the figure of a results file.

A table has one row per method (mean +- sd over seeds of the metrics at the whole budget and of the
headline distance at a tenth of it) and a last row for the NUTS reference against itself; the figure
draws the headline distance against gradient evaluations, one panel per problem.
"""

from pathlib import Path

import numpy as np
import posterior_fidelity_methods

METRICS = {
    "classification": (("agreement", "agreement", ".3f"), ("total_variation", "TV", ".3f"), ("nll", "NLL", ".3f")),
    "regression": (("wasserstein_1", "W1 / sd", ".3f"), ("ks_distance", "KS", ".3f"), ("nll", "NLL", ".3f")),
}
HEADLINE = {"classification": "total_variation", "regression": "wasserstein_1"}


def _mean_sd(values):
    v = np.array([x for x in values if x is not None], float)
    if not v.size:
        return None
    return {"mean": float(v.mean()), "sd": float(v.std(ddof=1)) if v.size > 1 else None, "n": int(v.size)}


def table_rows(problem, runs, methods, floor, reference_info):
    """One row per method: mean and sd over seeds at the whole budget and at a tenth of it."""
    rows = []
    for name in methods:
        rs = [r for r in runs if r["method"] == name and r["final"]]
        if not rs:
            continue
        row = {
            "method": name,
            "label": posterior_fidelity_methods.METHODS[name].label,
            "seeds": len(rs),
            "samples": _mean_sd([r["final"]["samples"] for r in rs]),
            "swap_rate": _mean_sd([r["info"]["swaps"] / r["info"]["attempts"] for r in rs if r["info"]["attempts"]]),
            "seconds": _mean_sd([r["seconds"] for r in rs]),
        }
        for key, _, _ in METRICS[problem.kind]:
            row[key] = _mean_sd([r["final"][key] for r in rs])
        headline = HEADLINE[problem.kind]
        row[headline + "_tenth"] = _mean_sd(
            [next((c[headline] for c in r["curve"] if c["fraction"] == 0.1), None) for r in rs]
        )
        rows.append(row)
    rows.append(
        {
            "method": "nuts",
            "label": "NUTS reference: chains 1-2 vs 3-4 (NLL: all chains)",
            "seeds": None,
            "samples": None,
            "swap_rate": None,
            "seconds": {"mean": reference_info["seconds"], "sd": None},
            **{k: {"mean": floor[k], "sd": None} for k, _, _ in METRICS[problem.kind][:2]},
            "nll": {"mean": floor["reference_nll_all"], "sd": None},
        }
    )
    return rows


def _cell(stat, spec):
    if not stat or stat["mean"] is None:
        return "-"
    text = format(stat["mean"], spec)
    return text if not stat.get("sd") else f"{text} +- {format(stat['sd'], spec)}"


def format_table(kind, rows, budget_epochs):
    """The markdown table of one problem."""
    headline = HEADLINE[kind]
    names = [label for _, label, _ in METRICS[kind]]
    short = {k: label for k, label, _ in METRICS[kind]}[headline]
    head = ["method", *names, f"{short} at {budget_epochs / 10:g} epochs", "samples", "swaps accepted", "s / run"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [_cell(r[k], spec) for k, _, spec in METRICS[kind]]
        lines.append(
            "| "
            + " | ".join(
                [
                    r["label"],
                    *cells,
                    _cell(r.get(headline + "_tenth"), ".3f"),
                    _cell(r["samples"], ".0f"),
                    _cell(r["swap_rate"], ".2f"),
                    _cell(r["seconds"], ".0f"),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def figure(path, problems, runs, methods, floors, budget_epochs):
    """Distance to the reference against gradient evaluations: one panel per problem (``(name,
    kind)`` pairs), one line per method (mean over seeds, band +- sd; VR dashed), the reference's
    own floor dotted."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    from tf_vrre import _figures

    fig = _figures.new(figsize=(11, 4.8))
    axes = fig.subplots(1, len(problems), squeeze=False)[0]
    for ax, (problem, kind) in zip(axes, problems):
        key = HEADLINE[kind]
        for i, name in enumerate(methods):
            rs = [r for r in runs if r["problem"] == problem and r["method"] == name]
            fractions = sorted({c["fraction"] for r in rs for c in r["curve"]})
            if not fractions:
                continue
            values = np.array(
                [[next((c[key] for c in r["curve"] if c["fraction"] == f), np.nan) for r in rs] for f in fractions]
            )
            mean = np.nanmean(values, 1)
            sd = np.nanstd(values, 1, ddof=1) if len(rs) > 1 else np.zeros(len(fractions))
            x = np.array(fractions) * budget_epochs
            color = f"C{i % 10}"
            ax.plot(
                x,
                mean,
                marker="o",
                ms=3,
                color=color,
                ls="--" if posterior_fidelity_methods.METHODS[name].vr else "-",
                label=posterior_fidelity_methods.METHODS[name].label,
            )
            ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.15, lw=0)
        ax.axhline(floors[problem][key], color="0.3", ls=":", label="NUTS: chains 1-2 vs 3-4")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FormatStrFormatter("%g"))
            axis.set_minor_formatter(NullFormatter())
        ax.set_xticks([t for t in (10, 20, 50, 100, 200, 500, 1000, 2000) if t <= budget_epochs * 1.01])
        ax.set_xlabel("gradient evaluations / N (all chains and full passes)")
        ax.set_ylabel(
            {
                "total_variation": "total variation to NUTS (test points)",
                "wasserstein_1": "W1 to NUTS of f(x), in posterior sds",
            }[key]
        )
        ax.set_title(f"{problem} ({kind})", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    _figures.save(fig, str(path), dpi=100)
