"""The report of ``regimes.py``: the page's tables, the numbers its prose and the README quote, and one
figure per family (the headline distance along N and along the cold temperature, per method)."""

from pathlib import Path

import numpy as np
import results

LABELS = {"sghmc": "SGHMC", "cycsghmc": "cycSGHMC", "resghmc": "reSGHMC", "vr-resghmc": "VR-reSGHMC"}
ADVICE_LABEL = {"sghmc": "one chain", "cycsghmc": "one chain", "resghmc": "replica exchange", "vr-resghmc": "VR"}
METRIC = {
    "mode_weight_error": "error of the left mode's weight",
    "predictive_tv": "TV of the posterior predictive at held-out inputs",
    "wasserstein_1": "W1 of the posterior of f(x), in posterior sds",
}


def _rows(out, family):
    return [p for p in out["problems"].values() if p["family"] == family]


def _cell(stat, best):
    text = [stat[0], stat[1]]
    return {"value": text, "format": "**{:.3f} +- {:.3f}**"} if best else text


def family_table(out, family):
    """One row per problem of ``family``: the ladder, the pilot's penalties and barrier, each method's
    distance (mean +- se over seeds; the closest in bold), the advisor's pick and whether it agrees."""
    rows, keys = [], []
    for p in _rows(out, family):
        est = p["advice"]["numbers"]["estimators"]
        pen = [est["mini-batch"]["pilot_penalty_nats"][0], est["control variates"]["pilot_penalty_nats"][0]]
        lam = [est["mini-batch"]["barrier"], est["control variates"]["barrier"]]
        cells = [_cell(p["stats"][m], m == p["closest"]) if m in p["stats"] else "-" for m in LABELS]
        advised = ADVICE_LABEL[p["advised"]] + ("" if p["advice"]["confident"] else " (weak)")
        rows.append(
            [
                p["data_size"],
                p["temperature"],
                p["hot"],
                [p["chains"]["resghmc"], p["chains"]["vr-resghmc"], p["period"]],
                pen,
                lam,
                *cells,
                advised,
                "yes" if p["agrees"] else "**no**",
            ]
        )
        keys.append(p["name"].split(" ", 1)[1].replace(" ", "_"))
    return results.table(
        [
            "N",
            "tau",
            "hottest tau",
            "K (re / VR), m",
            "penalty, nats (mini-batch / VR)",
            "Lambda (mini-batch / VR)",
            *LABELS.values(),
            "advisor",
            "agrees",
        ],
        [
            "{:,}",
            "{:g}",
            "{:.3g}",
            "{} / {}, {}",
            "{:.3g} / {:.3g}",
            "{:.2f} / {:.2f}",
            *["{:.3f} +- {:.3f}"] * len(LABELS),
            "{}",
            "{}",
        ],
        rows,
        keys=keys,
    )


def advisor_table(out):
    """The pilot's numbers on every problem: the modes its quenched states reach, the cold pair's
    noise penalty on the pilot's ladder, each estimator's chains and round trips per 10^6 gradient
    evaluations on the ladder its barrier asks for, what the pilot cost, the recommendation."""
    rows, keys = [], []
    for p in out["problems"].values():
        n = p["advice"]["numbers"]
        est = n["estimators"]
        modes = n.get("modes", {})
        rows.append(
            [
                p["name"],
                [len(modes.get("modes", [])), "yes" if modes.get("cold_modes") else "no"],
                [est["mini-batch"]["pilot_penalty_nats"][0], est["control variates"]["pilot_penalty_nats"][0]],
                [
                    est["mini-batch"]["recommended_chains"],
                    est["mini-batch"]["round_trips_per_million"],
                    est["control variates"]["recommended_chains"],
                    est["control variates"]["round_trips_per_million"],
                ],
                n["gain_ratio"],
                [
                    p["pilot"]["gradient_evaluations"] / out["settings"]["budget"] * 100,
                    p["pilot"]["chains"],
                    p["pilot"]["steps"],
                ],
                p["advice"]["recommendation"] + ("" if p["advice"]["confident"] else " (weak)"),
            ]
        )
        keys.append(p["name"])
    return results.table(
        [
            "problem",
            "modes found; cold chain jumps",
            "pilot's cold pair: penalty, nats (mini-batch / VR)",
            "own ladder: K, round trips per 10^6 evaluations (mini-batch; VR)",
            "VR / mini-batch",
            "pilot: % of budget, K, steps",
            "recommendation",
        ],
        ["{}", "{}; {}", "{:.3g} / {:.3g}", "{}, {:.3g}; {}, {:.3g}", "{:.2f}", "{:.1f}%, {}, {}", "{}"],
        rows,
        keys=keys,
    )


def checks_table(out):
    rows, keys = [], []
    for name, c in out.get("checks", {}).items():
        est = c["advice"]["numbers"]["estimators"]
        rows.append(
            [
                c["label"],
                [est["mini-batch"]["pilot_penalty_nats"][0], est["control variates"]["pilot_penalty_nats"][0]],
                c["advice"]["numbers"]["multimodality_index"],
                c["advice"]["numbers"]["gain_ratio"],
                c["advice"]["recommendation"] + ("" if c["advice"]["confident"] else " (weak)"),
                c["table_says"],
            ]
        )
        keys.append(name)
    return results.table(
        [
            "run",
            "penalty, nats (mini-batch / VR)",
            "multimodality index",
            "VR / mini-batch round trips per evaluation",
            "advisor",
            "its benchmark's table",
        ],
        ["{}", "{:.3g} / {:.3g}", "{:.3g}", "{:.2f}", "{}", "{}"],
        rows,
        keys=keys,
    )


def tables(out):
    families = sorted({p["family"] for p in out["problems"].values()}, key=["mixture", "sine", "linear"].index)
    t = {f: family_table(out, f) for f in families}
    t["advisor"] = advisor_table(out)
    if out.get("checks"):
        t["checks"] = checks_table(out)
    return t


def values(out):
    """The numbers the page's prose and the README quote (``values`` of the results file)."""
    probs = list(out["problems"].values())
    closest = [p["closest"] for p in probs]
    v = {
        "problems": len(probs),
        "agree": sum(p["agrees"] for p in probs),
        "exact_pick": sum(p["advised"] == p["closest"] for p in probs),
        "confident": sum(p["advice"]["confident"] for p in probs),
        "seeds": len(out["settings"]["seeds"]),
        "budget": out["settings"]["budget"],
        "hours": (sum(p["seconds"] for p in probs) + out.get("checks_seconds", 0.0)) / 3600,
        "cpu_hours": (sum(p["cpu_seconds"] for p in probs) + out.get("checks_cpu_seconds", 0.0)) / 3600,
        **{f"closest_{m.replace('-', '_')}": closest.count(m) for m in LABELS},
        "closest_one_chain": closest.count("sghmc") + closest.count("cycsghmc"),
        "measured": ", ".join(p["name"] for p in probs),
        "gain_min": min(p["advice"]["numbers"]["gain_ratio"] for p in probs),
        "gain_max": max(p["advice"]["numbers"]["gain_ratio"] for p in probs),
        "gain_above_one": sum(p["advice"]["numbers"]["gain_ratio"] > 1 for p in probs),
        "gain_above_one_where": ", ".join(p["name"] for p in probs if p["advice"]["numbers"]["gain_ratio"] > 1)
        or "none",
        "vr_closest_where_gain": sum(
            p["advice"]["numbers"]["gain_ratio"] > 1 and p["closest"] == "vr-resghmc" for p in probs
        ),
        "coldest_gain_above_one": max(
            (p["temperature"] for p in probs if p["advice"]["numbers"]["gain_ratio"] > 1), default=float("nan")
        ),
    }
    for m in ("resghmc", "vr-resghmc"):  # the pilot's mini-batch cold-pair penalty where each was closest
        pens = [p["advice"]["numbers"]["estimators"]["mini-batch"]["pilot_penalty_nats"][0] for p in probs]
        won = [x for x, c in zip(pens, closest) if c == m]
        if won:
            v[f"{m.replace('-', '_')}_penalty_min"], v[f"{m.replace('-', '_')}_penalty_max"] = min(won), max(won)
    for name, c in out.get("checks", {}).items():
        k = name.replace("-", "_")
        est = c["advice"]["numbers"]["estimators"]
        v[f"check_{k}"] = c["advice"]["recommendation"] + ("" if c["advice"]["confident"] else " (a best guess)")
        v[f"check_{k}_gain"] = c["advice"]["numbers"]["gain_ratio"]
        v[f"check_{k}_penalty_naive"] = est["mini-batch"]["pilot_penalty_nats"][0]
        v[f"check_{k}_penalty_vr"] = est["control variates"]["pilot_penalty_nats"][0]
    for p in probs:
        k = p["name"].replace(" ", "_").replace("=", "").replace(".", "p").replace("-", "_")
        est = p["advice"]["numbers"]["estimators"]
        v[f"{k}_closest"] = LABELS[p["closest"]]
        v[f"{k}_penalty_naive"] = est["mini-batch"]["pilot_penalty_nats"][0]
        v[f"{k}_penalty_vr"] = est["control variates"]["pilot_penalty_nats"][0]
        v[f"{k}_advised"] = LABELS[p["advised"]]
        for m, s in p["stats"].items():
            v[f"{k}_{m.replace('-', '_')}"], v[f"{k}_{m.replace('-', '_')}_se"] = s[0], s[1]
    return v


def figures(out, directory):
    """``regimes-<family>.png`` per family: the headline distance against N (left) and the cold
    temperature (right), one line per method (mean +- se over seeds), the advisor's pick circled."""
    from tf_vrre import _figures
    from tf_vrre.runs import atomic

    written = []
    for family in sorted({p["family"] for p in out["problems"].values()}):
        probs = _rows(out, family)
        anchor_t = max(set(p["temperature"] for p in probs), key=[p["temperature"] for p in probs].count)
        anchor_n = max(set(p["data_size"] for p in probs), key=[p["data_size"] for p in probs].count)
        fig = _figures.new(figsize=(10, 4.2))
        axes = fig.subplots(1, 2)
        for ax, (axis, fixed, label) in zip(
            axes,
            (
                ("data_size", ("temperature", anchor_t), "N (data size)"),
                ("temperature", ("data_size", anchor_n), "cold temperature tau"),
            ),
        ):
            sweep = sorted((p for p in probs if p[fixed[0]] == fixed[1]), key=lambda p: p[axis])
            xs = [p[axis] for p in sweep]
            for i, m in enumerate(LABELS):
                mean = np.array([p["stats"][m][0] for p in sweep])
                se = np.array([p["stats"][m][1] for p in sweep])
                ax.errorbar(
                    xs,
                    mean,
                    yerr=2 * se,
                    marker="o",
                    ms=4,
                    capsize=3,
                    color=f"C{i}",
                    label=LABELS[m],
                    ls="--" if m == "vr-resghmc" else "-",
                )
            for p in sweep:
                ax.plot([p[axis]], [p["stats"][p["advised"]][0]], "o", ms=12, mfc="none", mec="k")
            ax.set_xscale("log")
            ax.set_yscale("symlog", linthresh=1e-2)
            ax.set_xlabel(label + (f" (tau = {anchor_t:g})" if axis == "data_size" else f" (N = {anchor_n:,})"))
            ax.set_ylabel(METRIC[sweep[0]["headline"]])
            if axis == "temperature":
                ax.invert_xaxis()
            ax.grid(alpha=0.3, which="both")
        handles, names = axes[0].get_legend_handles_labels()
        handles.append(axes[0].plot([], [], "o", ms=12, mfc="none", mec="k")[0])
        names.append("advisor's pick (pilot: 10% of the budget)")
        fig.legend(handles, names, loc="lower center", ncol=5, fontsize=8, frameon=False)
        fig.suptitle(f"{family}: distance to the exact answer at equal gradient evaluations (bars: 2 se)", fontsize=10)
        fig.tight_layout(rect=(0, 0.08, 1, 0.95))
        path = Path(directory) / f"regimes-{family}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.save_figure(fig, path, dpi=100)
        written.append(
            str(path.resolve().relative_to(results.ROOT)) if path.resolve().is_relative_to(results.ROOT) else str(path)
        )
    return written


def text(out, tabs):
    lines = []
    for name, tab in tabs.items():
        lines += ["", name, results.markdown(tab)]
    v = values(out)
    lines.append(
        f"\nadvisor: the closest method, or one within the seeds' noise, on {v['agree']} of {v['problems']} problems "
        f"(exactly the closest on {v['exact_pick']}); {v['hours']:.2f} h ({v['cpu_hours']:.2f} h of CPU time)"
    )
    return "\n".join(lines)
