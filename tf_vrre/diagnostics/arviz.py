"""ArviZ bridge: a run (or several runs as chains) as ``arviz.InferenceData``.

Needs the optional extra ``pip install "tf_vrre[arviz]"`` (ArviZ 0.x, whose ``from_dict`` /
``InferenceData`` API this uses).  Groups:

- ``posterior`` (dims ``chain, draw``; ``point`` for the predictive): with samples,
  ``energy`` (U_B of each collected sample), ``weight_norm`` and ``predictive``
  (``p(c_j | x_j)`` of the first validation points, ``c_j`` the pooled BMA's top class);
  without samples, ``cold_energy`` (the cold slot's energy at each attempt of pair 0).
- ``sample_stats``: ``lp = -U / tau`` (log of the cold chain's unnormalised tempered density),
  ``temperature``, ``lr``, ``step``, ``cold_state`` (which state holds the cold slot, states
  named by their slot at the start) and ``swaps`` (accepted swaps of pair 0 since the previous
  draw); without samples ``accepted``, ``accept_prob``, ``log_ratio`` of pair 0.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import tf_vrre.diagnostics.replicas as replicas
import tf_vrre.diagnostics.report as report


def _import_arviz():
    try:
        with warnings.catch_warnings():  # ArviZ 0.23 announces its 1.0 refactor on import
            warnings.simplefilter("ignore", FutureWarning)
            import arviz
    except ImportError:
        raise ImportError('to_inference_data needs ArviZ: pip install "tf_vrre[arviz]"') from None
    return arviz


def _cold_state_at(log, after_steps, since):
    """For each entry of ``after_steps`` (non-decreasing): the state in slot 0 once the swaps
    of that step are done, and the accepted pair-0 swaps since the previous entry (the first:
    since step ``since``)."""
    times, slots = replicas.slot_paths(
        log.swaps["step"], log.swaps["pair"], log.swaps["accepted"], log.num_chains, log.start_step
    )
    e = np.clip(np.searchsorted(times, after_steps, side="right") - 1, 0, len(times) - 1)
    cold = np.argmin(slots[e], axis=1)
    acc0 = np.sort(log.swaps["step"][(log.swaps["pair"] == 0) & (log.swaps["accepted"] > 0.5)])
    cum = np.searchsorted(acc0, after_steps, side="right")
    return cold, np.diff(np.concatenate([[np.searchsorted(acc0, since, side="left")], cum]))


def _draws(loaded, burn_in, classes):
    """(posterior dict, sample_stats dict) of one run after burn-in."""
    lo, hi = report._step_range(loaded)
    cut = lo + burn_in * (hi - lo)
    log, s = loaded["swap_log"], loaded["samples"]
    if s is not None:
        keep = s["step"] >= cut
        post = {"weight_norm": s["weight_norm"][keep]}
        if "energy" in s["recorded"]:  # a manifest rebuilt by tf-vrre repair records no energies
            post["energy"] = s["energy"][keep]
        if classes is not None and "predictive" in s:
            pred = s["predictive"][keep]
            post["predictive"] = np.stack([pred[:, j, c] for j, c in enumerate(classes[: pred.shape[1]])], 1)
        steps = s["step"][keep]
        stats = {k: s[k][keep] for k in ("temperature", "lr") if k in s["recorded"]}
        stats["step"] = steps
        if "energy" in s["recorded"] and "temperature" in s["recorded"]:
            stats["lp"] = -s["energy"][keep] / s["temperature"][keep]
        if log is not None:  # a sample at counter s is the state after step s - 1
            stats["cold_state"], stats["swaps"] = _cold_state_at(log, steps - 1, cut)
        return post, stats
    m = (log.swaps["pair"] == 0) & (log.swaps["step"] >= cut)
    steps = log.swaps["step"][m].astype(np.int64)
    cold, _ = _cold_state_at(log, steps - 1, cut)  # the state the attempt tested: before this step's swap
    return (
        {"cold_energy": log.swaps["energy_lo"][m]},
        {
            "step": steps,
            "cold_state": cold,
            "accepted": log.swaps["accepted"][m].astype(np.int64),
            "accept_prob": log.swaps["accept_prob"][m],
            "log_ratio": log.swaps["log_ratio"][m],
        },
    )


def to_inference_data(
    runs: str | os.PathLike | Sequence[str | os.PathLike], burn_in: float = 0.1, points: int = 4
) -> Any:
    """An ``arviz.InferenceData`` of one run or of several runs (chains) for ``az.summary``,
    ``az.plot_trace``, ``az.plot_rank``, ``az.ess`` / ``az.rhat``.

    Draws are the collected samples when the runs have them, else the swap log's attempts of
    pair 0; with several runs each chain is cut to the shortest run's draw count.

    Args:
      runs: a run directory (see :func:`tf_vrre.diagnostics.locate`) or a list of them.
      burn_in: fraction in ``[0, 1)`` of each run's steps dropped (as in :func:`diagnose`).
      points: validation points in ``posterior.predictive`` (>= 1).

    Raises:
      ImportError: ArviZ is not installed (``pip install "tf_vrre[arviz]"``).
      ValueError: a bad argument or run directory, or runs of different kinds (samples vs none).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> import arviz as az
      >>> idata = to_inference_data("runs/toy")
      >>> sorted(idata.posterior.data_vars)
      ['energy', 'predictive', 'weight_norm']
      >>> az.summary(idata, var_names=["energy"], kind="diagnostics").shape[0]
      1
    """
    az = _import_arviz()
    report._check_fraction(burn_in)
    paths = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    if not paths:
        raise ValueError("runs: give at least one run directory")
    loaded = [report.load_run(p, points) for p in paths]
    kinds = {r["samples"] is not None for r in loaded}
    if len(kinds) > 1:
        raise ValueError("runs: either every run has samples or none has (draws must be alike)")
    classes = report.bma_classes(loaded, burn_in)
    parts = [_draws(r, burn_in, classes) for r in loaded]
    n = min(len(next(iter(post.values()))) for post, _ in parts)
    if n < 1:
        raise ValueError(f"runs: no draws left after burn_in={burn_in}")
    post = {k: np.stack([p[k][:n] for p, _ in parts]) for k in parts[0][0] if all(k in p for p, _ in parts)}
    stats = {k: np.stack([s[k][:n] for _, s in parts]) for k in parts[0][1] if all(k in s for _, s in parts)}
    dims = {"predictive": ["point"]} if "predictive" in post else None
    coords = {"point": np.arange(post["predictive"].shape[-1])} if dims else None
    idata = az.from_dict(posterior=post, sample_stats=stats, coords=coords, dims=dims)
    idata.posterior.attrs.update(
        {
            "runs": [os.fspath(p) for p in paths],
            "burn_in": burn_in,
            "inference_library": "tf_vrre",
            "predictive_classes": classes or [],
        }
    )
    return idata
