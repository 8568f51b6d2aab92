"""``diagnose(runs)``: replica flow of every run plus ESS / R-hat of the scalar summaries the
runs record, as one JSON-ready dict, its text table, and a verdict: is it mixing?

The verdict (:func:`verdict`) reads the numbers against thresholds from the diagnostics
literature.  Vehtari, Gelman, Simpson, Carpenter and Buerkner (2021, "Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC", Bayesian
Analysis 16(2), Section 4) recommend using draws only when R-hat < 1.01 and the (bulk) ESS is
above 400 (100 per chain for four chains), below which ESS and R-hat are themselves unreliable;
the older, looser rule R-hat < 1.1 (Gelman and Rubin 1992; BDA3, Section 11.5) flags chains that
clearly disagree, and 1.05 is the usual middle ground.  Here:

- **not mixing**: a summary with R-hat > :data:`RHAT_FAIL` (1.05) or ESS < :data:`ESS_FAIL`
  (100), or R-hat undefined because each chain sits at its own constant value; a replica run
  with no accepted swap, or with swaps but no round trip cold -> hottest -> cold (replicas that
  never travel the ladder: the hot chain's exploration never reaches the cold chain; Katzgraber,
  Trebst, Huse and Troyer 2006, "Feedback-optimized parallel tempering Monte Carlo"; Syed,
  Bouchard-Cote, Deligiannidis and Doucet 2022, "Non-reversible parallel tempering", JRSS-B);
- **not yet established**: every summary passes those but one has R-hat > :data:`RHAT_OK`
  (1.01), ESS < :data:`ESS_OK` (400), or too few draws to compute them;
- **mixing**: R-hat <= 1.01 and ESS >= 400 everywhere, and round trips where there are swaps.

This module's R-hat is the split-R-hat and its ESS the cross-chain ESS of
:mod:`tf_vrre.diagnostics.chains` (not rank-normalised), the quantities those thresholds were
stated for up to the rank normalisation.
"""

import os

import numpy as np

import tf_vrre.diagnostics.chains as chains
import tf_vrre.diagnostics.replicas as replicas
from tf_vrre.diagnostics.runs import locate, read_run_json, read_samples, read_swap_log, run_steps

FORMAT = "tf_vrre.diagnostics/1"
RHAT_FAIL, RHAT_OK = 1.05, 1.01
"""R-hat above RHAT_FAIL: not mixing; above RHAT_OK: not yet established (Vehtari et al. 2021)."""
ESS_FAIL, ESS_OK = 100.0, 400.0
"""ESS below ESS_FAIL: not mixing; below ESS_OK: not yet established (Vehtari et al. 2021)."""
NOT_MIXING, NOT_YET, MIXING = "not mixing", "not yet established", "mixing"
DESCRIPTIONS = {
    "cold_energy": "energy estimate of the state in the cold slot at each attempt of pair 0 (swap log)",
    "sample_energy": "mini-batch energy U_B of each collected sample (samples manifest)",
    "weight_norm": "||w||_2 of each collected sample",
    "predictive": "p(class c_j | x_j) of validation point j, c_j = the pooled BMA's top class (stored predictive)",
}


def _check_fraction(burn_in):
    if isinstance(burn_in, bool) or not isinstance(burn_in, (int, float)) or not 0 <= burn_in < 1:
        raise ValueError(f"burn_in must be a fraction in [0, 1), got {burn_in!r}")


def load_run(run, points=4):
    """Everything :func:`diagnose` reads from one run: ``{"path", "swap_log", "samples", "run"}``
    (``swap_log`` a :class:`SwapLog` or ``None``, ``samples`` from :func:`read_samples` or
    ``None``, ``run`` the run.json dict)."""
    swaps_dir, samples_dir = locate(run)
    run_dict = read_run_json(run)
    log = read_swap_log(swaps_dir, run_steps(run_dict)) if swaps_dir else None
    samples = read_samples(samples_dir, points) if samples_dir else None
    if samples is not None and not samples["step"].size:
        samples = None
    return {"path": os.fspath(run), "swap_log": log, "samples": samples, "run": run_dict}


def _step_range(loaded):
    log, s = loaded["swap_log"], loaded["samples"]
    if log is not None and log.num_steps:
        return log.start_step, log.end_step
    return 0, int(s["step"].max()) if s is not None else 0


def series(loaded, burn_in=0.1, classes=None):
    """Scalar summaries of one loaded run after burn-in: ``{name: [draws]}`` (``predictive_j``
    per validation point j; ``classes`` fixes the class whose probability is read)."""
    lo, hi = _step_range(loaded)
    cut = lo + burn_in * (hi - lo)
    out = {}
    log = loaded["swap_log"]
    if log is not None:
        m = (log.swaps["pair"] == 0) & (log.swaps["step"] >= cut)
        out["cold_energy"] = log.swaps["energy_lo"][m]
    s = loaded["samples"]
    if s is not None:
        keep = s["step"] >= cut
        if "energy" in s["recorded"]:  # else a manifest rebuilt by tf-vrre repair: no energies to summarise
            out["sample_energy"] = s["energy"][keep]
        out["weight_norm"] = s["weight_norm"][keep]
        if "predictive" in s and classes is not None:
            pred = s["predictive"][keep]
            for j, c in enumerate(classes[: pred.shape[1]]):
                out[f"predictive_{j}"] = pred[:, j, c]
    return out


def bma_classes(loaded_runs, burn_in=0.1):
    """The top class of the pooled Bayesian model average at each stored validation point
    (``None`` when no run stored predictives).

    Raises:
      ValueError: when runs stored predictives of different shapes (other validation data).
    """
    total, shape_of = None, None
    for loaded in loaded_runs:
        s = loaded["samples"]
        if s is None or "predictive" not in s:
            continue
        if shape_of is not None and s["predictive"].shape[1:] != shape_of[1]:
            raise ValueError(
                f"runs {shape_of[0]!r} and {loaded['path']!r} stored predictives of different "
                f"shapes {shape_of[1]} and {s['predictive'].shape[1:]} (different validation data)"
            )
        shape_of = (loaded["path"], s["predictive"].shape[1:])
        lo, hi = _step_range(loaded)
        pred = s["predictive"][s["step"] >= lo + burn_in * (hi - lo)]
        total = pred.sum(0) if total is None else total + pred.sum(0)
    return None if total is None else [int(c) for c in total.argmax(-1)]


def diagnose(runs, burn_in=0.1, points=4, blocks=20, split=True):
    """Replica flow and chain diagnostics of one run or of several (e.g. seeds) as chains.

    Each summary (see ``DESCRIPTIONS``) is cut to the steps after ``burn_in`` of each run's
    span; with several runs every summary present in all of them is truncated to the shortest
    run's draw count and the runs are the chains.  ESS and R-hat come from
    :func:`tf_vrre.diagnostics.chain_summary` (TFP); a summary with fewer than 8 draws per
    chain is listed with ``"too_short": true`` instead.

    Args:
      runs: a run directory or a list of them (see :func:`tf_vrre.diagnostics.locate`).
      burn_in: fraction in ``[0, 1)`` of each run's steps discarded before ESS / R-hat.
      points: validation points whose predictive probability is tracked (>= 1).
      blocks: batch-means blocks for the acceptance standard errors (>= 2).
      split: split every chain in halves (split-R-hat).

    Returns:
      dict: ``{"format", "runs", "burn_in", "split", "replica_flow": [per run or None],
      "summaries": {name: {...}}, "classes", "energy_not_recorded": [runs whose manifest records
      no sample energies: no ``sample_energy`` summary]}``; each replica flow keeps ``"_paths"`` for the
      figures (drop it before writing JSON: :func:`to_json`).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> d = diagnose("runs/toy")
      >>> d["replica_flow"][0]["pairs"][0]["attempts"] == int(sampler.state.swap.attempt_count.numpy()[0])
      True
      >>> sorted(d["summaries"])
      ['cold_energy', 'predictive_0', 'predictive_1', 'predictive_2', 'predictive_3', 'sample_energy', 'weight_norm']
    """
    _check_fraction(burn_in)
    paths = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    if not paths:
        raise ValueError("runs: give at least one run directory")
    loaded = [load_run(p, points) for p in paths]
    flows = [replicas.replica_flow(r["swap_log"], blocks) if r["swap_log"] is not None else None for r in loaded]
    classes = bma_classes(loaded, burn_in)
    per_run = [series(r, burn_in, classes) for r in loaded]
    names = [k for k in per_run[0] if all(k in s for s in per_run)]
    summaries = {}
    for name in names:
        draws = min(len(s[name]) for s in per_run)
        base = name.rsplit("_", 1)[0] if name.startswith("predictive_") else name
        info = {"description": DESCRIPTIONS[base]}
        if draws < 8:
            summaries[name] = info | {"chains": len(per_run), "draws": draws, "too_short": True}
            continue
        x = np.stack([s[name][:draws] for s in per_run])
        summaries[name] = info | chains.chain_summary(x, split=split)
    unrecorded = [r["path"] for r in loaded if r["samples"] is not None and "energy" not in r["samples"]["recorded"]]
    diag = {
        "format": FORMAT,
        "runs": paths,
        "burn_in": burn_in,
        "split": split,
        "blocks": blocks,
        "replica_flow": flows,
        "summaries": summaries,
        "classes": classes,
        "energy_not_recorded": unrecorded,
    }
    diag["verdict"] = verdict(diag)
    return diag


def _chain_reasons(summaries):
    """``(failures, doubts)``: one text for R-hat and one for ESS, each naming the worst summary,
    its number, the threshold and how many summaries cross it."""
    fail, doubt = [], []
    rated = {k: v for k, v in summaries.items() if not v.get("too_short") and not v.get("constant")}
    short = [k for k, v in summaries.items() if v.get("too_short")]
    if short:
        doubt.append(f"{', '.join(short)}: too few draws for ESS / R-hat (< 8 per chain)")
    stuck = [k for k, v in rated.items() if v.get("rhat") is None]
    if stuck:
        fail.append(f"R-hat infinite ({', '.join(stuck)}: each chain at its own constant value)")
    rhats = {k: v["rhat"] for k, v in rated.items() if v.get("rhat") is not None}
    esses = {k: v["ess"] for k, v in rated.items() if v.get("ess") is not None}
    for values, worst, bad, limits, text in (
        (rhats, max, lambda x, t: x > t, (RHAT_FAIL, RHAT_OK), "R-hat {v:.3g} > {t:g}"),
        (esses, min, lambda x, t: x < t, (ESS_FAIL, ESS_OK), "ESS {v:.3g} < {t:g}"),
    ):
        if not values:
            continue
        name = worst(values, key=values.get)
        for limit, out in zip(limits, (fail, doubt)):
            count = sum(bad(x, limit) for x in values.values())
            if count:
                draws = rated[name]["chains"] * rated[name]["draws"]
                where = f"{name}, {draws} draws" if text.startswith("ESS") else name
                out.append(text.format(v=values[name], t=limit) + f" ({where}; {count} of {len(values)} summaries)")
                break
    return fail, doubt


ADVICE = {
    "chains": "run longer (tf-vrre train --epochs) or keep more samples (--thinning), drop more burn-in "
    "(diagnose --burn-in 0.3), and compare several seeds as chains (diagnose --run S0 --run S1 --out D)",
    "swaps": "no swap is accepted: lower F (--set swap.correction=...), bring the temperatures closer "
    "(--set sampler.hot_temperature_multiplier=...), or use variance-reduced swap energies (--config "
    "vr-resghmc), which shrink the noise penalty",
    "trips": "swaps happen but no state travels cold -> hottest -> cold: run longer, or use closer temperatures "
    "(more chains on a ladder) so swaps succeed more often",
}
"""What to try, by symptom (:func:`verdict`)."""


def verdict(diag):
    """Is it mixing?  ``{"status", "reasons", "advice"}`` from a :func:`diagnose` result
    (thresholds in the module docstring): ``status`` one of ``"mixing"``, ``"not yet
    established"``, ``"not mixing"``; ``reasons`` the numbers that say so; ``advice`` what to try.

    Example:
      >>> v = verdict({"summaries": {"weight_norm": {"chains": 2, "draws": 12, "rhat": 2.02, "ess": 2.7}},
      ...              "replica_flow": [None], "runs": ["runs/a"]})
      >>> v["status"], v["reasons"]
      ('not mixing', ['R-hat 2.02 > 1.05 (weight_norm; 1 of 1 summaries)', 'ESS 2.7 < 100 (weight_norm, 24 draws; 1 of 1 summaries)'])
    """
    fail, doubt = _chain_reasons(diag["summaries"])
    advice = ["chains"] if fail or doubt else []
    for path, flow in zip(diag["runs"], diag["replica_flow"]):
        if flow is None or not flow.get("attempts"):
            continue
        steps = flow["steps"]
        where = f" ({os.path.basename(os.path.normpath(path))})" if len(diag["runs"]) > 1 else ""
        if flow["swaps"] == 0:
            fail.append(f"0 of {flow['attempts']} swaps accepted{where}")
            advice.append("swaps")
        elif flow["round_trips"] == 0:
            fail.append(f"{flow['swaps']} swaps but 0 round trips cold -> hottest -> cold in {steps} steps{where}")
            advice.append("trips")
    status = NOT_MIXING if fail else NOT_YET if doubt or not diag["summaries"] else MIXING
    if not diag["summaries"]:
        doubt.append("no summary to compute ESS / R-hat on")
    return {"status": status, "reasons": fail + doubt, "advice": [ADVICE[k] for k in dict.fromkeys(advice)]}


def format_verdict(v):
    """The verdict as ``tf-vrre diagnose`` prints it (one line, then ``try:`` lines)."""
    head = f"verdict: {v['status'].upper()}" if v["status"] != MIXING else "verdict: mixing"
    lines = [
        head
        + (
            f": {'; '.join(v['reasons'])}"
            if v["reasons"]
            else f" (R-hat <= {RHAT_OK} and ESS >= {ESS_OK:.0f} for every summary)"
        )
    ]
    lines += [f"  try: {a}" for a in v["advice"]]
    return "\n".join(lines)


def to_json(diag):
    """A copy of a :func:`diagnose` result without the plotting arrays (JSON-ready)."""
    out = dict(diag)
    out["replica_flow"] = [
        None if f is None else {k: v for k, v in f.items() if not k.startswith("_")} for f in diag["replica_flow"]
    ]
    return out


def _f(v, spec):
    return "-" if v is None else format(v, spec)


def format_table(diag):
    """The text table printed by ``tf-vrre diagnose``."""
    lines = []
    for path, flow in zip(diag["runs"], diag["replica_flow"]):
        lines.append(f"run {path}")
        if flow is None:
            lines.append("  no swap log")
            continue
        lines.append(
            f"  K={flow['num_chains']}  steps {flow['start_step']}..{flow['end_step']}  "
            f"swaps {flow['swaps']}/{flow['attempts']} attempts  round trips {flow['round_trips']} "
            f"({_f(flow['round_trips_per_1000_steps'], '.3g')} per 1000 steps)  "
            f"mean first passage cold->hot {_f(flow['mean_first_passage_cold_to_hot'], '.4g')} steps"
        )
        lines.append(
            f"  {'pair':<6}{'temperatures':>22}{'attempts':>10}{'swaps':>8}{'acceptance':>18}{'mean min(1,S)':>15}"
        )
        for p in flow["pairs"]:
            temps = f"{_f(p['temperature_lo'], '.4g')} - {_f(p['temperature_hi'], '.4g')}"
            acc = f"{_f(p['acceptance'], '.4f')} +- {_f(p['acceptance_se'], '.4f')}"
            lines.append(
                f"  {p['pair']:<6}{temps:>22}{p['attempts']:>10}{p['swaps']:>8}{acc:>18}"
                f"{_f(p['mean_accept_prob'], '.4f'):>15}"
            )
        for t in flow["sigma2_trend"]:
            lines.append(
                f"  sigma2 pair {t['pair']}: {t['updates']} updates, first quarter {t['first_quarter_mean']:.4g}"
                f" -> last quarter {t['last_quarter_mean']:.4g} (x{_f(t['ratio'], '.3g')})"
            )
    n = len(diag["runs"])
    lines.append(
        f"\nchain diagnostics ({n} run{'s' if n > 1 else ''} as chains{', each split in halves' if diag['split'] else ''}; "
        f"first {diag['burn_in']:.0%} of the steps dropped)"
    )
    lines.append(f"  {'summary':<16}{'chains':>7}{'draws':>7}{'mean':>12}{'sd':>11}{'ESS':>9}{'R-hat':>8}{'MCSE':>11}")
    for name, s in diag["summaries"].items():
        if s.get("too_short"):
            lines.append(f"  {name:<16}{s['chains']:>7}{s['draws']:>7}   too few draws (< 8 per chain)")
            continue
        lines.append(
            f"  {name:<16}{s['chains']:>7}{s['draws']:>7}{s['mean']:>12.5g}{s['sd']:>11.4g}"
            f"{_f(s['ess'], '.1f'):>9}{_f(s['rhat'], '.3f'):>8}{_f(s['mcse'], '.3g'):>11}"
        )
    if not diag["summaries"]:
        lines.append("  (no summary common to every run)")
    for path in diag.get("energy_not_recorded", []):
        lines.append(
            f"  sample_energy: not in the manifest of {path} (its entries record no energy, as after "
            "'tf-vrre repair' rebuilt it from the sample files)"
        )
    if "verdict" in diag:
        lines += ["", format_verdict(diag["verdict"])]
    return "\n".join(lines)
