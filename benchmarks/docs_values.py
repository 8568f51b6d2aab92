"""The numbers the README and docs quote in prose, computed from the results files' tables:
``VALUES[name](results) -> {key: value}``, one function per results file (used by
``benchmarks/docs_claims.py``'s ``CLAIMS``, rendered by ``benchmarks/render_docs.py``)."""

import results


def _mixture(res):
    v = {
        key: results.value(res, "main", label, "left-mode weight")
        for key, label in (("vr", "vr-resgld"), ("re", "resgld"), ("exact", "exact"))
    }
    (w, se), (w_re, se_re), exact = v["vr"], v["re"], v["exact"]
    changes = {m: results.value(res, "main", key, "mode changes") for m, key in (("vr", "vr-resgld"), ("re", "resgld"))}
    seeds = res["tables"]["seeds"]
    per_seed = {
        m: [r[3] for r in seeds["rows"] if r[0] == label] for m, label in (("vr", "VR-reSGLD"), ("re", "reSGLD"))
    }
    left = [r[4] for r in seeds["rows"] if r[0] == "VR-reSGLD"]
    chains = {
        f"{m}_{stat}": results.value(res, "main", key, column)
        for m, key in (("vr", "vr-resgld"), ("re", "resgld"), ("sgld", "sgld"))
        for stat, column in (("ess", "ESS(beta)"), ("rhat", "R-hat"))
    }
    return {
        "vr_left": w,
        "vr_se": se,
        "exact_left": exact,
        "vr_z": abs(w - exact) / se,
        "re_left": w_re,
        "re_se": se_re,
        "re_z": abs(w_re - exact) / se_re,
        "vr_changes": changes["vr"],
        "re_changes": changes["re"],
        "vr_changes_min": min(per_seed["vr"]),
        "vr_changes_max": max(per_seed["vr"]),
        "re_changes_min": min(per_seed["re"]),
        "re_changes_max": max(per_seed["re"]),
        "vr_left_min": min(left),
        "vr_left_max": max(left),
        **chains,
        "steps": res["config"]["steps"],
        "sigma2_factor": res["values"]["variance_reduction_factor"],
        "minutes": res["values"]["wall_seconds"] / 60,  # the main job's time, quoted on every page that gives it
        "wall_min": divmod(round(res["values"]["wall_seconds"]), 60)[0],
        "wall_sec": divmod(round(res["values"]["wall_seconds"]), 60)[1],
    }


def _swap_bias(res):
    return {
        "window_z": results.value(res, "main", "vr-window", "bias / SE"),
        "batch_z": results.value(res, "main", "vr-batch", "bias / SE"),
    }


def _step_cost(res):
    ratio = "/ reSGHMC (wall, cpu)"
    return {
        "vr_over_re": results.value(res, "main", "vr_inf", ratio)[0],
        "vr_over_re_every4": results.value(res, "main", "vr_thin4", ratio)[0],
    }


FIDELITY_NAMES = {
    "sgld": "SGLD",
    "sghmc": "SGHMC",
    "resghmc": "two-chain reSGHMC",
    "vr-resghmc": "two-chain VR-reSGHMC",
    "resghmc-k4": "four-chain reSGHMC",
    "vr-resghmc-k4": "four-chain VR-reSGHMC",
}


def _posterior_fidelity(res):
    """How much farther VR-reSGHMC ended from NUTS than reSGHMC on the same ladder, in percent, and
    which method was closest, per problem."""
    out, gaps = {}, []
    for problem, key in (("digits", "total_variation"), ("diabetes", "wasserstein_1")):
        rows = {r["method"]: r for r in res["tables"][problem]}
        for k, suffix in ((2, ""), (4, "-k4")):
            gap = 100 * (rows["vr-resghmc" + suffix][key]["mean"] / rows["resghmc" + suffix][key]["mean"] - 1)
            out[f"{problem}_k{k}_gap"] = gap
            gaps.append(gap)
    out["gap_min"], out["gap_max"] = min(gaps), max(gaps)
    for problem, key in (("digits", "total_variation"), ("diabetes", "wasserstein_1")):
        rows = [r for r in res["tables"][problem] if r["method"] != "nuts"]
        best = min(rows, key=lambda r: r[key]["mean"])["method"]
        out[f"closest_{problem}"] = FIDELITY_NAMES.get(best, best)
    far, close = [], []
    for problem, key in (("digits", "total_variation"), ("diabetes", "wasserstein_1")):
        rows = {r["method"]: r[key]["mean"] for r in res["tables"][problem]}
        far += [rows[m] / rows["sghmc"] for m in ("cycsghmc", "ensemble")]
        close.append(100 * (1 - min(v for m, v in rows.items() if m != "nuts") / rows["sghmc"]))
    out["baselines_min"], out["baselines_max"] = min(far), max(far)
    out["closest_gain_min"], out["closest_gain_max"] = min(close), max(close)
    out["epochs"] = res["settings"]["budget"]
    out["seeds"] = len(res["seeds"])
    return out


def _small_run(res):
    fs, heat = res["function_space"], res["heat"][0]
    return {
        "cpu_minutes": results.value(res, "time", "total", "CPU seconds") / 60,
        "accuracy": results.value(res, "numbers", "test_accuracy", "value"),
        "chance": results.value(res, "numbers", "chance", "value"),
        "inputs": fs["inputs"],
        "draws": fs["draws"],
        "rhat_median": fs["rhat"]["median"],
        "above": fs["rhat"]["above_1.1"] * 100,
        "ess": fs["ess"]["median"],
        "weight_rhat": results.value(res, "numbers", "weight_rhat", "value"),
        "heat": 1 + heat["ratio"],
        "temperature": heat["temperature"],
    }


def _is_it_done(res):
    def row(key, column):
        return results.value(res, "verdicts", key, column)

    full_cpu = [run["cpu"] for run in res["seconds"]["full_runs"]]
    heat = res["tables"]["heat"]["rows"]
    wine = [r for r in heat if r[0] == "wine"]
    return {
        "seeds": res["settings"]["seeds"],
        "full_steps": row("full", "steps per run"),
        "full_draws": row("full", "draws per run"),
        "early_steps": row("early", "steps per run"),
        "first_rhat_median": row("first", "R-hat of the predictive: median / 90th pct")[0],
        "full_rhat_q90": row("full", "R-hat of the predictive: median / 90th pct")[1],
        "full_ess_q10": row("full", "ESS, 10th pct"),
        "full_weight_rhat": row("full", "R-hat of the weight norm"),
        "early_above": row("early", "inputs above 1.01 (%)"),
        "cpu_minutes": sum(full_cpu) / len(full_cpu) / 60,
        "wine_small_batch": min(r[2] for r in wine),
        "wine_heat_ratio": max(r[4] for r in wine) / min(r[4] for r in wine),
    }


def _paired(tuned, hand, problem, key):
    """Tuned minus hand ladder, seed by seed: (mean, standard error, seeds)."""
    import numpy as np

    def final(res, method):
        return {r["seed"]: r["final"][key] for r in res["runs"] if r["problem"] == problem and r["method"] == method}

    out = {}
    for base in ("resghmc-k4", "vr-resghmc-k4"):
        a, b = final(tuned, base + "-tuned"), final(hand, base)
        d = np.array([a[s] - b[s] for s in sorted(a) if s in b])
        out[base] = (float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan"), d.size)
    return out


def _posterior_fidelity_tuned(res):
    """The tuned-ladder rows against the hand-ladder rows of ``posterior-fidelity`` (same seeds):
    the paired change of the distance to NUTS, and what the tuner measured (Lambda, the hot end)."""
    import numpy as np

    hand = results.load("posterior-fidelity")
    out = {"seeds": len(res["seeds"]), "minutes": res["seconds"] / 60}
    for problem, key in (("digits", "total_variation"), ("diabetes", "wasserstein_1")):
        for base, (d, se, _) in _paired(res, hand, problem, key).items():
            tag = f"{problem}_{'vr' if base.startswith('vr') else 're'}"
            before = {r["method"]: r for r in hand["tables"][problem]}[base][key]["mean"]
            out[tag + "_change"] = 100 * abs(d) / before  # the page's words say which way
            out[tag + "_diff"], out[tag + "_se"] = abs(d), se
            runs = [r for r in res["runs"] if r["problem"] == problem and r["method"] == base + "-tuned"]
            lam = [r["info"]["ladder"][0]["barrier"] for r in runs]
            hot = [r["info"]["ladder"][0]["final"][-1] for r in runs]
            out[tag + "_barrier"], out[tag + "_barrier_sd"] = float(np.mean(lam)), float(np.std(lam, ddof=1))
            out[tag + "_hot_min"], out[tag + "_hot_max"] = min(hot), max(hot)
    return out


def _ladder_seeds(res):
    """The tuned K = 4 ladder on the mixture with exact energies, run again with more seeds."""
    (row,) = res["results"]
    s = row["summary"]
    weights = [r["cold"] for r in row["runs"]]
    return {
        "seeds": len(row["runs"]),
        "barrier": s["barrier"][0],
        "rejection": " ".join(f"{r:.2f}" for r in s["rejection"]),
        "trips": s["trips_per_1000"][0],
        "error": s["error"],
        "se": s["cold_se"],
        "z": s["z"],
        "weight_min": min(weights),
        "weight_max": max(weights),
    }


def _placement(res):
    return {
        f"{what}_k{k}": results.value(res, "ratios", f"k{k}", column)
        for k in (2, 4)
        for what, column in (
            ("bytes", "bytes: replicated / chain_per_replica"),
            ("time", "step time: chain_per_replica / replicated"),
        )
    }


def _regimes(res):
    """The regime map's numbers: its own ``values`` (``regimes_report.values``, from its measurements)."""
    return dict(res["values"])


VALUES = {
    "regimes": _regimes,
    "placement": _placement,
    "ladder_tuning_mixture_k4_seeds": _ladder_seeds,
    "small-run": _small_run,
    "is-it-done": _is_it_done,
    "mixture": _mixture,
    "posterior-fidelity-tuned": _posterior_fidelity_tuned,
    "swap-bias": _swap_bias,
    "step-cost-paper-ratio": _step_cost,
    "posterior-fidelity": _posterior_fidelity,
}
