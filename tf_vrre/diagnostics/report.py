"""``diagnose(runs)``: replica flow of every run plus ESS / R-hat of the scalar summaries the
runs record, as one JSON-ready dict, and its text table."""

import os

import numpy as np

from tf_vrre.diagnostics import chains, replicas
from tf_vrre.diagnostics.runs import locate, read_run_json, read_samples, read_swap_log, run_steps

FORMAT = "tf_vrre.diagnostics/1"
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
            for j, c in enumerate(classes[:pred.shape[1]]):
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
            raise ValueError(f"runs {shape_of[0]!r} and {loaded['path']!r} stored predictives of different "
                             f"shapes {shape_of[1]} and {s['predictive'].shape[1:]} (different validation data)")
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
    return {"format": FORMAT, "runs": paths, "burn_in": burn_in, "split": split, "blocks": blocks,
            "replica_flow": flows, "summaries": summaries, "classes": classes, "energy_not_recorded": unrecorded}


def to_json(diag):
    """A copy of a :func:`diagnose` result without the plotting arrays (JSON-ready)."""
    out = dict(diag)
    out["replica_flow"] = [None if f is None else {k: v for k, v in f.items() if not k.startswith("_")}
                           for f in diag["replica_flow"]]
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
        lines.append(f"  K={flow['num_chains']}  steps {flow['start_step']}..{flow['end_step']}  "
                     f"swaps {flow['swaps']}/{flow['attempts']} attempts  round trips {flow['round_trips']} "
                     f"({_f(flow['round_trips_per_1000_steps'], '.3g')} per 1000 steps)  "
                     f"mean first passage cold->hot {_f(flow['mean_first_passage_cold_to_hot'], '.4g')} steps")
        lines.append(f"  {'pair':<6}{'temperatures':>22}{'attempts':>10}{'swaps':>8}{'acceptance':>18}"
                     f"{'mean min(1,S)':>15}")
        for p in flow["pairs"]:
            temps = f"{_f(p['temperature_lo'], '.4g')} - {_f(p['temperature_hi'], '.4g')}"
            acc = f"{_f(p['acceptance'], '.4f')} +- {_f(p['acceptance_se'], '.4f')}"
            lines.append(f"  {p['pair']:<6}{temps:>22}{p['attempts']:>10}{p['swaps']:>8}{acc:>18}"
                         f"{_f(p['mean_accept_prob'], '.4f'):>15}")
        for t in flow["sigma2_trend"]:
            lines.append(f"  sigma2 pair {t['pair']}: {t['updates']} updates, first quarter {t['first_quarter_mean']:.4g}"
                         f" -> last quarter {t['last_quarter_mean']:.4g} (x{_f(t['ratio'], '.3g')})")
    n = len(diag["runs"])
    lines.append(f"\nchain diagnostics ({n} run{'s' if n > 1 else ''} as chains{', each split in halves' if diag['split'] else ''}; "
                 f"first {diag['burn_in']:.0%} of the steps dropped)")
    lines.append(f"  {'summary':<16}{'chains':>7}{'draws':>7}{'mean':>12}{'sd':>11}{'ESS':>9}{'R-hat':>8}{'MCSE':>11}")
    for name, s in diag["summaries"].items():
        if s.get("too_short"):
            lines.append(f"  {name:<16}{s['chains']:>7}{s['draws']:>7}   too few draws (< 8 per chain)")
            continue
        lines.append(f"  {name:<16}{s['chains']:>7}{s['draws']:>7}{s['mean']:>12.5g}{s['sd']:>11.4g}"
                     f"{_f(s['ess'], '.1f'):>9}{_f(s['rhat'], '.3f'):>8}{_f(s['mcse'], '.3g'):>11}")
    if not diag["summaries"]:
        lines.append("  (no summary common to every run)")
    for path in diag.get("energy_not_recorded", []):
        lines.append(f"  sample_energy: not in the manifest of {path} (its entries record no energy, as after "
                     "'tf-vrre repair' rebuilt it from the sample files)")
    return "\n".join(lines)
