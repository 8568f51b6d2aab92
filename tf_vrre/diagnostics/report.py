"""``diagnose(runs)``: replica flow of every run, the predictive's R-hat and ESS at every
held-out input, ESS / R-hat of the weight-space summaries as context, the heat of gradient noise,
as one JSON-ready dict, its text table, and a verdict: is it mixing?

The verdict (:func:`verdict`) is decided in function space when the runs stored a predictive
(:mod:`tf_vrre.diagnostics.function_space`: the distribution over held-out inputs of the
rank-normalised split R-hat and bulk ESS of the predictive, with the runs as chains; thresholds
and sources there).  Weight-space summaries (the weight norm, the energies) are reported beside
it as context and never decide it: a network's weights are not identified across runs
(permutation and rescaling symmetries) and under weight decay the weight norm and the energy
drift for far longer than the predictions (Izmailov, Vikram, Hoffman and Wilson 2021; Sommer et
al. 2024).  Their R-hat is TFP's split-R-hat and their ESS TFP's cross-chain ESS
(:mod:`tf_vrre.diagnostics.chains`).

- **not mixing**: the predictive says so (chains that disagree at more than a tenth of the
  inputs, chains stuck at their own predictions, a median ESS below 100); or a replica run
  with no accepted swap, or with swaps but no round trip cold -> hottest -> cold (replicas that
  never travel the ladder: the hot chain's exploration never reaches the cold chain; Katzgraber,
  Trebst, Huse and Troyer 2006, "Feedback-optimized parallel tempering Monte Carlo"; Syed,
  Bouchard-Cote, Deligiannidis and Doucet 2022, "Non-reversible parallel tempering", JRSS-B);
- **not yet established**: the predictive's numbers pass those but not the strict ones, fewer than
  four runs were compared, or no run stored a predictive (the verdict then says what to add; the
  weight-space numbers alone cannot call a network mixing, nor stuck);
- **mixing**: the predictive passes at every threshold over four or more runs, and replicas
  travel the ladder where there are swaps.

Beside the status the verdict warns when mini-batch gradient noise heats the cold chain by more
than a tenth of its temperature (the samples' ``excess_temperature``, from
:mod:`tf_vrre.sgmcmc.gradient_noise`): such a chain may mix, but it samples a hotter posterior
than the one asked for.  Its advice names ``fit``'s knobs for runs made in Python and
``tf-vrre train``'s flags for runs the image workflow made (their ``run.json``).
"""

import os

import numpy as np

import tf_vrre.diagnostics.chains as chains
import tf_vrre.diagnostics.function_space as function_space
import tf_vrre.diagnostics.replicas as replicas
from tf_vrre.diagnostics.runs import locate, read_run_json, read_samples, read_swap_log, run_steps
from tf_vrre.runs import run_json

FORMAT = "tf_vrre.diagnostics/1"
RHAT_CONTEXT = 1.05
"""A weight-space summary with R-hat above this is named in the verdict's context line."""
HEAT = 0.1
"""An excess temperature above this fraction of the cold temperature is warned about."""
NOT_MIXING, NOT_YET, MIXING = "not mixing", "not yet established", "mixing"
DESCRIPTIONS = {
    "cold_energy": "energy estimate of the state in the cold slot at each attempt of pair 0 (swap log)",
    "sample_energy": "mini-batch energy U_B of each collected sample (samples manifest)",
    "weight_norm": "||w||_2 of each collected sample",
}
WEIGHT_SPACE = (
    "weight-space statistics of a network drift under weight decay and are not identified across runs "
    "(permutation and rescaling symmetries; Izmailov et al. 2021, Sommer et al. 2024): context, not judged"
)


def _check_fraction(burn_in):
    if isinstance(burn_in, bool) or not isinstance(burn_in, (int, float)) or not 0 <= burn_in < 1:
        raise ValueError(f"burn_in must be a fraction in [0, 1), got {burn_in!r}")


def load_run(run, points=4):
    """Everything :func:`diagnose` reads from one run: ``{"path", "swap_log", "samples", "run"}``
    (``swap_log`` a :class:`SwapLog` or ``None``, ``samples`` from :func:`read_samples` with the
    first ``points`` held-out inputs, all with ``None``, or ``None``, ``run`` the run.json dict)."""
    swaps_dir, samples_dir = locate(run)
    run_dict = read_run_json(run)
    log = read_swap_log(swaps_dir, run_steps(run_dict)) if swaps_dir else None
    samples = read_samples(samples_dir, points) if samples_dir else None
    if samples is not None and not samples["step"].size:
        samples = None
    return {"path": os.fspath(run), "swap_log": log, "samples": samples, "run": run_dict}


def made_by(loaded):
    """``"cli"`` for a run of the image workflow (``tf-vrre train`` or ``train()``: its
    ``run.json``), else ``"python"`` (a ``fit`` with callbacks)."""
    return "cli" if loaded["run"].get("format") == run_json.FORMAT else "python"


def _step_range(loaded):
    log, s = loaded["swap_log"], loaded["samples"]
    if log is not None and log.num_steps:
        return log.start_step, log.end_step
    return 0, int(s["step"].max()) if s is not None else 0


def _cut(loaded, burn_in):
    lo, hi = _step_range(loaded)
    return lo + burn_in * (hi - lo)


def series(loaded, burn_in=0.1):
    """The weight-space summaries of one loaded run after burn-in: ``{name: [draws]}``."""
    cut = _cut(loaded, burn_in)
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
        pred = s["predictive"][s["step"] >= _cut(loaded, burn_in)]
        total = pred.sum(0) if total is None else total + pred.sum(0)
    return None if total is None else [int(c) for c in total.argmax(-1)]


def heat(loaded, burn_in=0.1):
    """The heat gradient noise adds to the cold chain of one run, from its samples' manifest
    entries after burn-in: ``{"excess_temperature", "temperature", "ratio", "samples"}`` (medians;
    ``ratio`` ``None`` at temperature 0), or ``None`` when no sample records it."""
    s = loaded["samples"]
    if s is None or "excess_temperature" not in s:
        return None
    keep = (s["step"] >= _cut(loaded, burn_in)) & np.isfinite(s["excess_temperature"])
    if not keep.any():
        return None
    excess = float(np.median(s["excess_temperature"][keep]))
    temps = s["temperature"][keep]
    temperature = float(np.median(temps)) if np.isfinite(temps).all() else None
    ratio = excess / temperature if temperature else None
    return {"excess_temperature": excess, "temperature": temperature, "ratio": ratio, "samples": int(keep.sum())}


def diagnose(runs, burn_in=0.1, points=None, blocks=20, split=True):
    """Replica flow and chain diagnostics of one run or of several (e.g. seeds) as chains.

    The verdict is read off the predictive stored with the samples (every held-out input of
    ``SampleCollector(validation_data=...)``, :mod:`tf_vrre.diagnostics.function_space`); the
    weight-space summaries (see ``DESCRIPTIONS``) are cut to the steps after ``burn_in`` of each
    run's span, truncated to the shortest run's draw count with the runs as chains, and summarised
    by :func:`tf_vrre.diagnostics.chain_summary` (TFP) as context; a summary with fewer than 8
    draws per chain is listed with ``"too_short": true`` instead.

    Args:
      runs: a run directory or a list of them (see :func:`tf_vrre.diagnostics.locate`).
      burn_in: fraction in ``[0, 1)`` of each run's steps discarded before ESS / R-hat.
      points: the first this many held-out inputs are judged (``None``: all the runs stored).
      blocks: batch-means blocks for the acceptance standard errors (>= 2).
      split: split every chain in halves (split-R-hat).

    Returns:
      dict: ``{"format", "runs", "made_by", "burn_in", "split", "replica_flow": [per run or None],
      "function_space": summary or None, "predictive_missing": [runs without a stored
      predictive], "summaries": {name: {...}} (weight space), "heat": [per run or None],
      "energy_not_recorded": [runs whose manifest records no sample energies], "verdict"}``; each
      replica flow keeps ``"_paths"`` for the figures (drop it before writing JSON: :func:`to_json`).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> d = diagnose("runs/toy")
      >>> d["replica_flow"][0]["pairs"][0]["attempts"] == int(sampler.state.swap.attempt_count.numpy()[0])
      True
      >>> sorted(d["summaries"]), d["function_space"]["inputs"], d["verdict"]["status"]
      (['cold_energy', 'sample_energy', 'weight_norm'], 8, 'not mixing')
    """
    _check_fraction(burn_in)
    paths = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    if not paths:
        raise ValueError("runs: give at least one run directory")
    loaded = [load_run(p, points) for p in paths]
    flows = [replicas.replica_flow(r["swap_log"], blocks) if r["swap_log"] is not None else None for r in loaded]
    keep = [None if r["samples"] is None else r["samples"]["step"] >= _cut(r, burn_in) for r in loaded]
    predictive, missing = function_space.draws(loaded, keep)
    per_run = [series(r, burn_in) for r in loaded]
    names = [k for k in per_run[0] if all(k in s for s in per_run)]
    summaries = {}
    for name in names:
        draws = min(len(s[name]) for s in per_run)
        info = {"description": DESCRIPTIONS[name]}
        if draws < 8:
            summaries[name] = info | {"chains": len(per_run), "draws": draws, "too_short": True}
            continue
        x = np.stack([s[name][:draws] for s in per_run])
        summaries[name] = info | chains.chain_summary(x, split=split)
    unrecorded = [r["path"] for r in loaded if r["samples"] is not None and "energy" not in r["samples"]["recorded"]]
    diag = {
        "format": FORMAT,
        "runs": paths,
        "made_by": [made_by(r) for r in loaded],
        "burn_in": burn_in,
        "split": split,
        "blocks": blocks,
        "replica_flow": flows,
        "function_space": None if predictive is None else function_space.summarize(predictive, split),
        "predictive_missing": missing,
        "summaries": summaries,
        "heat": [heat(r, burn_in) for r in loaded],
        "energy_not_recorded": unrecorded,
    }
    diag["verdict"] = verdict(diag)
    return diag


ADVICE = {
    "chains": {
        "python": "run longer (more steps: fit(..., epochs=...)) and keep more samples (a smaller "
        "SampleCollector(every=...)), or drop more burn-in (diagnose(..., burn_in=0.3))",
        "cli": "run longer (tf-vrre train --epochs) or keep more samples (--thinning), or drop more burn-in "
        "(diagnose --burn-in 0.3)",
    },
    "seeds": {
        "python": "train at least 4 runs that differ only in ReplicaExchangeSampler(seed=...), each with its "
        "own SampleCollector directory, and diagnose them together: diagnose([run_0, run_1, run_2, run_3])",
        "cli": "train at least 4 seeds (tf-vrre train ... --seed S --out runs/sS) and diagnose them together "
        "(tf-vrre diagnose --run runs/s0 --run runs/s1 --run runs/s2 --run runs/s3 --out runs/diag)",
    },
    "predictive": {
        "python": "record the predictive on held-out inputs with every sample: SampleCollector(directory, "
        "every=..., validation_data=(x_heldout, y_heldout)) (a few hundred inputs; output='values' for regression)",
        "cli": "record the predictive on held-out images with every sample: tf-vrre train --set samples.validation=1000",
    },
    "heat": {
        "python": "cool the chain: a lower learning rate (learning_rates=...) or larger batches (the excess "
        "temperature grows with the learning rate and with the gradient's variance, which shrinks as 1 / batch size)",
        "cli": "cool the chain: larger batches (tf-vrre train --batch-size) or a lower learning rate "
        "(--lr): the excess temperature grows with both the learning rate and 1 / batch size",
    },
    "swaps": {
        "python": "no swap is accepted: lower F (CorrectedSwap(correction=...)), bring the temperatures closer "
        "(or tune them: tf_vrre.LadderTuner), or use variance-reduced swap energies (ControlVariates), which "
        "shrink the noise penalty",
        "cli": "no swap is accepted: lower F (--set swap.correction=...), bring the temperatures closer "
        "(--set sampler.hot_temperature_multiplier=...), or use variance-reduced swap energies (--config "
        "vr-resghmc), which shrink the noise penalty",
    },
    "trips": {
        "python": "swaps happen but no state travels cold -> hottest -> cold: run longer, or use closer "
        "temperatures (more chains on a ladder; tf_vrre.LadderTuner) so swaps succeed more often",
        "cli": "swaps happen but no state travels cold -> hottest -> cold: run longer, or use closer temperatures "
        "(more chains on a ladder) so swaps succeed more often",
    },
}
"""What to try, by symptom and by how the runs were made (:func:`made_by`)."""


def _weight_space_context(summaries):
    """The weight-space summaries whose R-hat is far from 1, as one line (or ``None``)."""
    far = [
        f"{name} R-hat {'inf' if s.get('rhat') is None else format(s['rhat'], '.3g')}"
        for name, s in summaries.items()
        if not s.get("too_short") and not s.get("constant") and (s.get("rhat") is None or s["rhat"] > RHAT_CONTEXT)
    ]
    return f"{', '.join(far)}: {WEIGHT_SPACE}" if far else None


def _weight_space_reasons(summaries):
    """Without a predictive: the weight-space numbers that leave the verdict open."""
    out = []
    for name, s in summaries.items():
        if s.get("too_short"):
            out.append(f"{name}: too few draws for ESS / R-hat (< 8 per chain)")
        elif not s.get("constant") and (s.get("rhat") is None or s["rhat"] > function_space.RHAT_OK):
            out.append(f"{name} R-hat {'inf' if s.get('rhat') is None else format(s['rhat'], '.3g')}")
    return out


def _heat_warnings(diag):
    out = []
    for path, h in zip(diag["runs"], diag.get("heat", [])):
        if h is None:
            continue
        where = f" ({os.path.basename(os.path.normpath(path))})" if len(diag["runs"]) > 1 else ""
        if h["ratio"] is None:
            out.append(
                f"gradient noise alone heats the cold chain (temperature 0) to an excess temperature of "
                f"{h['excess_temperature']:.3g}{where}"
            )
        elif h["ratio"] > HEAT:
            out.append(
                f"gradient noise heats the cold chain to about {1 + h['ratio']:.3g}x its temperature "
                f"{h['temperature']:.4g} (excess temperature {h['excess_temperature']:.3g}, median over "
                f"{h['samples']} samples){where}: it samples a hotter posterior than the one asked for"
            )
    return out


def verdict(diag):
    """Is it mixing?  ``{"status", "basis", "summary", "reasons", "context", "warnings", "advice"}``
    from a :func:`diagnose` result (rules in the module docstring): ``status`` one of ``"mixing"``,
    ``"not yet established"``, ``"not mixing"``; ``basis`` ``"function space"`` when a predictive
    decided it, else ``None``; ``summary`` the function-space numbers in a line; ``reasons`` the
    numbers that say so; ``context`` the weight-space summaries far from R-hat 1 (not judged);
    ``warnings`` the heat of gradient noise; ``advice`` what to try, in the terms of how the runs
    were made.

    Example:
      >>> v = verdict({"function_space": None, "predictive_missing": ["runs/a"], "runs": ["runs/a"],
      ...              "summaries": {"weight_norm": {"chains": 2, "draws": 12, "rhat": 2.02, "ess": 2.7}},
      ...              "replica_flow": [None], "made_by": ["python"]})
      >>> v["status"], v["reasons"][0]
      ('not yet established', 'no predictive recorded (runs/a): the verdict is read off the predictive on held-out inputs')
    """
    fs = diag.get("function_space")
    kinds = set(diag.get("made_by") or ["python"])
    kind = "cli" if kinds == {"cli"} else "python"
    fail, doubt, advice = [], [], []
    if fs is not None:
        f, d = function_space.reasons(fs)
        fail += f
        doubt += d
        if f or [x for x in d if "runs as chains" not in x and "run as chains" not in x]:
            advice.append("chains")
        if fs["chains"] < function_space.MIN_CHAINS:
            advice.append("seeds")
    if diag.get("predictive_missing"):
        missing = ", ".join(diag["predictive_missing"])
        if fs is None:
            doubt.insert(
                0, f"no predictive recorded ({missing}): the verdict is read off the predictive on held-out inputs"
            )
            doubt += [f"weight space (not judged): {r}" for r in _weight_space_reasons(diag["summaries"])]
        else:
            doubt.append(f"no predictive recorded in {missing}: left out of the function-space verdict")
        advice.append("predictive")
    for path, flow in zip(diag["runs"], diag["replica_flow"]):
        if flow is None or not flow.get("attempts"):
            continue
        where = f" ({os.path.basename(os.path.normpath(path))})" if len(diag["runs"]) > 1 else ""
        if flow["swaps"] == 0:
            fail.append(f"0 of {flow['attempts']} swaps accepted{where}")
            advice.append("swaps")
        elif flow["round_trips"] == 0:
            fail.append(
                f"{flow['swaps']} swaps but 0 round trips cold -> hottest -> cold in {flow['steps']} steps{where}"
            )
            advice.append("trips")
    warnings = _heat_warnings(diag)
    if any("hotter posterior" in w for w in warnings):
        advice.append("heat")
    if fs is None and not diag.get("predictive_missing"):
        doubt.append("no summary to judge")
    status = NOT_MIXING if fail else NOT_YET if doubt else MIXING
    return {
        "status": status,
        "basis": "function space" if fs is not None else None,
        "summary": None if fs is None else function_space.describe(fs),
        "reasons": fail + doubt,
        "context": _weight_space_context(diag["summaries"]) if fs is not None else None,
        "warnings": warnings,
        "advice": [ADVICE[k][kind] for k in dict.fromkeys(advice)],
    }


def format_verdict(v):
    """The verdict as ``tf-vrre diagnose`` prints it: one line, then ``weight space:``,
    ``warning:`` and ``try:`` lines."""
    if v["status"] == MIXING:
        lines = [f"verdict: mixing in function space: {v['summary']}"]
    else:
        lines = [f"verdict: {v['status'].upper()}: {'; '.join(v['reasons'])}"]
    if v.get("context"):
        lines.append(f"  weight space: {v['context']}")
    lines += [f"  warning: {w}" for w in v.get("warnings", [])]
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


def _flow_lines(path, flow):
    lines = [f"run {path}"]
    if flow is None:
        return lines + ["  no swap log"]
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
            f"  {p['pair']:<6}{temps:>22}{p['attempts']:>10}{p['swaps']:>8}{acc:>18}{_f(p['mean_accept_prob'], '.4f'):>15}"
        )
    for t in flow["sigma2_trend"]:
        lines.append(
            f"  sigma2 pair {t['pair']}: {t['updates']} updates, first quarter {t['first_quarter_mean']:.4g}"
            f" -> last quarter {t['last_quarter_mean']:.4g} (x{_f(t['ratio'], '.3g')})"
        )
    return lines


def _heat_line(path, h):
    if h is None:
        return f"  {path}: not recorded (samples of a sampler with gradient_noise_every=None, or of an older tf_vrre)"
    times = (
        ""
        if h["ratio"] is None
        else f": the chain runs at about {1 + h['ratio']:.3g}x its temperature {h['temperature']:.4g}"
    )
    return f"  {path}: excess temperature {h['excess_temperature']:.4g}{times} (median of {h['samples']} samples)"


def format_table(diag):
    """The text printed by ``tf-vrre diagnose``: replica flow per run, the function-space
    summary, the weight-space summaries (context), the heat of gradient noise and the verdict."""
    lines = []
    for path, flow in zip(diag["runs"], diag["replica_flow"]):
        lines += _flow_lines(path, flow)
    n = len(diag["runs"])
    how = (
        f"{n} run{'s' if n > 1 else ''} as chains{', each split in halves' if diag['split'] else ''}; "
        f"first {diag['burn_in']:.0%} of the steps dropped"
    )
    fs = diag.get("function_space")
    lines.append(f"\nfunction space (decides the verdict; {how})")
    if fs is None:
        lines.append("  no predictive recorded (SampleCollector(validation_data=...) stores it)")
    else:
        lines.append(f"  {function_space.describe(fs)}")
        if fs.get("worst_inputs"):
            per = fs["per_input"]["rhat"]
            worst = ", ".join(f"{i} ({_f(per[i], '.3f') if per[i] is not None else 'inf'})" for i in fs["worst_inputs"])
            lines.append(f"  highest R-hat at inputs {worst}")
    lines.append("\nweight space and energies (context, not judged: drift under weight decay, symmetries)")
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
    if any(h is not None for h in diag.get("heat", [])):
        lines.append("\ngradient noise of the cold chain (SG-MCMC runs hotter than its temperature by this much)")
        lines += [_heat_line(path, h) for path, h in zip(diag["runs"], diag["heat"])]
    if "verdict" in diag:
        lines += ["", format_verdict(diag["verdict"])]
    return "\n".join(lines)
