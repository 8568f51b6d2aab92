"""Bayesian model averaging over a run's samples, uncertainty metrics, figures: ``tf-vrre evaluate``.

For a run directory (:mod:`tf_vrre.runs.run_json`), streaming over the collected cold-chain samples
(one set of weights in memory at a time):

1. *temperature fitting* on the run's held-out split (never trained on): the logits of every
   sample on ``fit_size`` held-out images are kept (``S x fit_size x C`` floats) and ``T``
   minimises the NLL of ``mean_s softmax(z_s / T)`` within ``[0.01, 100]``
   (:func:`tf_vrre.workflows.image_classification.metrics.fit_temperature`); a fit with no optimum
   inside (a model at chance level: the NLL falls all the way to the uniform prediction;
   over-confident samples whose optimum lies beyond ``T = 100``) gives the bound it hit as ``T``,
   marked in ``report["temperature"]["bound_hit"]``, and says so with the held-out NLL at the
   bound and at ``T = 1`` (``heldout_nll_T1``, computed as the fit computes it);
2. *BMA* ``p_T = mean_s softmax(z_s / T)`` on the test set and the out-of-distribution set for
   ``T = 1``, the paper's fixed ``T = 2`` and the fitted ``T`` (three running sums, and the same
   average in log space, ``logsumexp_s log_softmax(z_s / T) - log S``, for the NLL: nothing is
   clipped, so a confidently wrong prediction costs its full ``-log p_y``);
3. metrics (:mod:`tf_vrre.workflows.image_classification.metrics`): test accuracy, NLL, Brier, ECE (15 bins); OOD mean
   entropy, fraction of entropies > 1.5 (the paper's Figure 4 statistic), OOD Brier score
   (optimum ``1 / C``) and the AUROC of in- vs out-of-distribution by entropy; the last sample
   alone as a point-estimate reference; swap counts and sigma^2 from the swap log;
4. ``report.json``, the figures ``entropy_cdf.png``, ``reliability.png``, ``swaps.png`` and
   ``entropies.npz`` (the per-image entropies behind ``entropy_cdf.png``, for plots across runs);
5. warnings (:class:`EvaluationWarning`, also in ``report["warnings"]``): a test accuracy at
   chance level (within two binomial standard errors of ``1 / C``), a temperature fit without an
   optimum, a fitted ``T`` outside :data:`SANE_TEMPERATURES`.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from typing import Any

import numpy as np

import tf_vrre.workflows.image_classification.evaluation_checks as evaluation_checks
import tf_vrre.workflows.image_classification.metrics as metrics
import tf_vrre.workflows.image_classification.models as models
import tf_vrre.workflows.image_classification.plots as plots
from tf_vrre.callbacks import progress
from tf_vrre.diagnostics import runs
from tf_vrre.runs import atomic, locks, run_json
from tf_vrre.runs.samples import read_log
from tf_vrre.workflows.image_classification.data import (
    Preprocessing,
    eval_dataset,
    indices_digest,
    load_split,
    num_classes,
    pixels_digest,
    split_indices,
)

ENTROPY_THRESHOLD = 1.5
ECE_BINS = 15
SANE_TEMPERATURES = (0.2, 5.0)
"""Fitted temperatures outside this range get a warning: above 5 the logits are divided so much
that the samples' predictions carry little information (the model barely beats a uniform guess);
below 0.2 the average of the samples is strongly under-confident (they disagree: the chain moved
far between samples).  Temperature scaling of trained networks typically fits 1-3 (Guo et al.
2017); the paper's fixed choice is T = 2."""

__all__ = ["evaluate", "swap_summary", "EvaluationWarning", "SANE_TEMPERATURES"]


class EvaluationWarning(UserWarning):
    """A run evaluated without error whose numbers say something is off (chance-level accuracy,
    a temperature fit without an optimum, a fitted temperature outside :data:`SANE_TEMPERATURES`)."""


def _read_csv(path):
    """Rows of a CSV log as dicts (``[]`` if absent); a damaged row is a ``ValueError`` naming the
    file and line, only a last row torn by a kill is dropped."""
    if not os.path.isfile(path):
        return []
    header, rows = read_log(path)
    return [] if header is None else [dict(zip(header, row)) for _, row in rows]


def swap_summary(run_dir: str | os.PathLike, late_fraction: float = 0.2) -> dict[str, Any] | None:
    """Swap counts and sigma^2 of a run's swap log (``None`` for single-chain runs).

    ``sigma2_late`` is the mean of ``sigma2_0`` over the last ``late_fraction`` of its updates.
    The log is read as ``tf-vrre diagnose`` reads it (:func:`tf_vrre.diagnostics.read_swap_log`,
    bounded by the run's steps): a damaged row, an impossible value or a step beyond the run is a
    ``RunFileError`` naming the file and line, never counted.
    """
    d = os.path.join(str(run_dir), run_json.SWAPS)
    if not os.path.isdir(d):
        return None
    if not os.path.isfile(os.path.join(d, "swaps.csv")):
        return {
            "attempts": 0,
            "swaps": 0,
            "accept_rate": None,
            "sigma2_final": None,
            "sigma2_late": None,
            "sigma2_updates": 0,
        }
    log = runs.read_swap_log(d, runs.run_steps(runs.read_run_json(run_dir)))
    attempts, accepted = int(log.swaps["step"].size), int(log.swaps["accepted"].sum())
    refresh = log.refresh or {}
    upd = [float(v) for v in refresh["sigma2_0"][refresh["sigma2_updated"] == 1]] if "sigma2_0" in refresh else []
    late = upd[int(len(upd) * (1 - late_fraction)) :] if upd else []
    return {
        "attempts": attempts,
        "swaps": accepted,
        "accept_rate": accepted / attempts if attempts else None,
        "sigma2_final": upd[-1] if upd else None,
        "sigma2_late": float(np.mean(late)) if late else None,
        "sigma2_updates": len(upd),
    }


def _balanced(y, size):
    if size is None or size >= len(y):
        return np.arange(len(y))
    return np.sort(split_indices(y, subset=int(size), holdout=0, seed=0)[0])


def _load(name, split, source, data_dir, size=None):
    x, y, _ = load_split(name, split, source, data_dir, download=False)
    idx = _balanced(y, size)
    return x[idx], y[idx]


def _heldout(run, source, data_dir, size):
    d = run["data"]
    if not d.get("holdout"):
        return None
    x, y, _ = load_split(d["dataset"], "train", source, data_dir, download=False)
    now = pixels_digest(x) if d.get("pixels_digest") else None
    if now != d.get("pixels_digest"):
        raise run_json.RunDirError(
            f"the training split in {data_dir!r} is not the run's (data.pixels_digest "
            f"{d['pixels_digest']!r} there, {now!r} now): its held-out images were "
            "not held out; pass the run's --data-dir / --source, or --fit-size 0"
        )
    train_idx, held_idx = split_indices(y, d.get("subset"), d["holdout"], d["split_seed"])
    if indices_digest(held_idx) != d.get("holdout_digest"):
        raise run_json.RunDirError(
            f"the held-out split rebuilt from {data_dir!r} differs from the run's "
            "(different training data?); pass the run's --data-dir / --source"
        )
    held_idx = held_idx[:size]
    return x[held_idx], y[held_idx]


def _logits(model, x, prep, batch_size):
    return np.asarray(model.predict(eval_dataset(x, prep, batch_size), verbose=0), np.float64)


def _classification(p, y, log_p):
    return {
        "accuracy": metrics.accuracy(p, y),
        "nll": metrics.nll(p, y, log_p),
        "brier": metrics.brier(p, y),
        "ece": metrics.ece(p, y, ECE_BINS),
    }


def _ood_metrics(p_in, p_out, num_classes):
    h_in, h_out = metrics.entropy(p_in), metrics.entropy(p_out)
    return (
        {
            "entropy_mean": float(h_out.mean()),
            "entropy_gt_1.5": float(np.mean(h_out > ENTROPY_THRESHOLD)),
            "brier": metrics.ood_brier(p_out),
            "auroc": metrics.auroc(h_in, h_out, 0.0, math.log(num_classes)),
            "in_entropy_mean": float(h_in.mean()),
        },
        h_in,
        h_out,
    )


def evaluate(
    run_dir: str | os.PathLike,
    ood: str = "auto",
    data_dir: str | None = None,
    source: str | None = None,
    test_size: int | None = None,
    fit_size: int = 2000,
    batch_size: int = 500,
    verbose: Any = 1,
) -> dict:
    """Evaluates a run; writes ``report.json`` and the figures into it; returns the report.

    Args:
      run_dir: a run directory with samples.
      ood: out-of-distribution set, one of
        :data:`tf_vrre.workflows.image_classification.evaluation_checks.OOD_CHOICES` (``"auto"``: CIFAR-100 for
        CIFAR-10 runs, CIFAR-10 otherwise; ``"none"``: skip).
      data_dir, source: where the data are (default: the run's).
      test_size: evaluate on a class-balanced subset of the test (and OOD) set.
      fit_size: held-out images used to fit ``T`` (0: no fitted temperature).
      batch_size: prediction batch size.
      verbose: print progress (on stderr).

    Warns:
      EvaluationWarning: chance-level accuracy, a temperature fit without an optimum, a fitted
        ``T`` outside :data:`SANE_TEMPERATURES` (the texts are also in ``report["warnings"]``).

    Raises:
      tf_vrre.runs.run_json.RunDirError: no run / no samples (naming the missing file); ValueError for
        bad arguments.  Checked before anything is computed or written.

    The run is read under a reader's shared lock (:func:`tf_vrre.runs.locks.share_run`), so no
    ``tf-vrre train`` or ``repair`` starts writing it meanwhile; a run being trained is read as it is.
    """
    if ood not in evaluation_checks.OOD_CHOICES:
        raise ValueError(f"ood must be one of {', '.join(evaluation_checks.OOD_CHOICES)}; got {ood!r}")
    with locks.reading(run_dir):  # a reader's shared lock: no train / repair starts writing the run meanwhile
        run, samples = evaluation_checks.check_run(run_dir)
        data_dir, source, ood_name = evaluation_checks.data_sources(run, ood, data_dir, source)
        run_path = os.path.join(str(run_dir), run_json.RUN_JSON)
        prep = Preprocessing.from_dict(run["preprocessing"], where=f"{run_path}: preprocessing")
        dataset = run["data"]["dataset"]
        x_test, y_test = _load(dataset, "test", source, data_dir, test_size)
        ood_data = _load(ood_name, "test", source, data_dir, test_size) if ood_name else None
        held = _heldout(run, source, data_dir, fit_size) if fit_size else None
        m = run["model"]
        model = models.build(
            m["name"], num_classes=m["num_classes"], input_shape=tuple(m["input_shape"]), **m["kwargs"]
        )
        say = (lambda s: print(s, file=sys.stderr, flush=True)) if verbose else (lambda s: None)
        fitted = _fit(model, samples, held, prep, batch_size, say)
        temps = {"T=1": 1.0, "T=2": 2.0}
        if fitted and fitted["T"] is not None:
            temps["T=fitted"] = fitted["T"]
        bar = progress.StepProgress(len(samples), unit="sample") if verbose and samples else None
        sums, last = _stream(model, samples, temps, (x_test, ood_data), prep, batch_size, bar)
        report = _report_head(run_dir, run, len(samples), fitted, len(y_test), ood_name, ood_data)
        entropies, bins = _score(report, sums, last, y_test, num_classes(dataset))
        report["warnings"] = _warnings(report, num_classes(dataset))
        for text in report["warnings"]:
            warnings.warn(text, EvaluationWarning, stacklevel=2)
        _write_outputs(run_dir, run, report, entropies, bins)
        return report


def _report_head(run_dir, run, num_samples, fitted, test_size, ood_name, ood_data):
    """The report's description of the run, its samples, the fitted temperature and the data."""
    data, m = run["data"], run["model"]
    run_path = os.path.join(str(run_dir), run_json.RUN_JSON)
    return {
        "run": {
            "dir": os.path.abspath(str(run_dir)),
            "method": run["method"],
            "model": m["name"],
            "dataset": data["dataset"],
            "train_size": data["train_size"],
            "status": run.get("status"),
            "epochs": run_json.field(run, "config.training.epochs", int, run_path),
        },
        "samples": num_samples,
        "temperature": fitted,
        "test": {"dataset": data["dataset"], "size": test_size},
        "ood": {"dataset": ood_name, "size": len(ood_data[1])} if ood_data else None,
        "swaps": swap_summary(run_dir),
    }


def _write_outputs(run_dir, run, report, entropies, bins):
    """The figures, the entropies (``.npz``) and ``report.json``, into the run directory."""
    _figures(run_dir, run, report, entropies, bins, num_classes(run["data"]["dataset"]), plots)
    arrays = {
        f"{where}_{k}".replace("=", "_"): h.astype(np.float32)
        for k, pair in entropies.items()
        for where, h in zip(("test", "ood"), pair)
        if h is not None
    }
    atomic.savez(os.path.join(str(run_dir), run_json.ENTROPIES), **arrays)
    run_json.write_json(os.path.join(str(run_dir), run_json.REPORT), report)


def _fit(model, samples, held, prep, batch_size, say):
    """The fitted temperature on the held-out images (``None`` without them).  A fit without an
    optimum inside :data:`metrics.TEMPERATURE_BOUNDS` gives the bound it hit as ``T`` (the best
    ``T`` within them) and ``"bound_hit"``; a fit that did not converge gives ``"T": None``."""
    if held is None:
        return None
    x, y = held
    logits = np.stack([_logits(_set(model, w), x, prep, batch_size) for w in samples])
    out = {"heldout_nll_T1": metrics.heldout_nll(logits, y, 1.0), "fit_size": len(y), "bound_hit": None}
    try:
        t, t_nll = metrics.fit_temperature(logits, y)
    except metrics.TemperatureFitError as err:
        say(
            f"temperature on {len(y)} held-out images ({len(samples)} samples): {str(err).removeprefix('fit_temperature: ')}"
        )
        return out | {
            "T": err.temperature if err.bound else None,
            "bound_hit": err.bound,
            "heldout_nll": err.nll,
            "reason": str(err).removeprefix("fit_temperature: "),
        }
    say(
        f"fitted temperature T = {t:.3f} on {len(y)} held-out images ({len(samples)} samples): held-out NLL "
        f"{t_nll:.4f} there, {out['heldout_nll_T1']:.4f} at T = 1"
    )
    return out | {"T": t, "heldout_nll": t_nll}


def _warnings(report, num_classes):
    """What a demanding user wants to be told about an evaluation that ran (see the module docstring)."""
    out = []
    test = report["test"]
    acc, n, chance = test["T=1"]["accuracy"], test["size"], 1.0 / num_classes
    margin = 2.0 * math.sqrt(chance * (1 - chance) / n)
    if acc < chance + margin:
        where = "below" if acc < chance - margin else "at"
        out.append(
            f"test accuracy {acc:.3f} is {where} chance level (1/{num_classes} = {chance:.3f}; two standard "
            f"errors for n = {n}: {margin:.3f}): the samples have learned nothing yet; train longer or with a "
            "schedule fit for the run's length (tf-vrre train --schedule keep-rates)"
        )
    t = report["temperature"]
    if t is not None and t["T"] is None:
        out.append(f"no fitted temperature: {t['reason']}; the report has no T=fitted rows")
    elif t is not None and t["bound_hit"]:
        out.append(
            f"fitted temperature at the {t['bound_hit']} bound T = {t['T']:g}: {t['reason']}; the T=fitted "
            "rows use the bound"
            + (
                "; the optimum lies beyond it: a model at chance level has no better temperature than T = infinity, "
                "and over-confident samples (logits far larger than their accuracy warrants) need a T above 100"
                if t["bound_hit"] == "upper"
                else "; every held-out image is predicted right with a margin, so sharper is always better there"
            )
        )
    elif t is not None and not SANE_TEMPERATURES[0] <= t["T"] <= SANE_TEMPERATURES[1]:
        why = (
            "above 5 the logits are divided so much that the samples barely beat a uniform guess"
            if t["T"] > SANE_TEMPERATURES[1]
            else "below 0.2 the samples' average is strongly under-confident: they disagree (the chain moved far "
            "between samples)"
        )
        out.append(
            f"fitted temperature T = {t['T']:.3g} is outside [{SANE_TEMPERATURES[0]:g}, "
            f"{SANE_TEMPERATURES[1]:g}]: {why}"
        )
    return out


def _stream(model, samples, temps, inputs, prep, batch_size, bar=None):
    """The BMA per T on ``inputs = (x_test, ood_data)`` (``ood_data`` may be ``None``), and the last
    sample's prediction: ``({T: (p_test, p_ood, log_p_test)}, (p_test, p_ood, log_p_test))``, from
    running sums of ``softmax(z / T)`` over the samples and, for the test NLL, of their
    log-probabilities in log space (``logaddexp``); ``bar``: a
    :class:`tf_vrre.callbacks.progress.StepProgress` over the samples."""
    x_test, ood_data = inputs
    sums = {k: [0.0, 0.0] for k in temps}
    log_sums = {k: -np.inf for k in temps}
    last = None
    for i, w in enumerate(samples):
        _set(model, w)
        z_in = _logits(model, x_test, prep, batch_size)
        z_out = _logits(model, ood_data[0], prep, batch_size) if ood_data else None
        for k, t in temps.items():
            sums[k][0] = sums[k][0] + metrics.softmax(z_in, t)
            log_sums[k] = np.logaddexp(log_sums[k], metrics.log_softmax(z_in, t))
            if z_out is not None:
                sums[k][1] = sums[k][1] + metrics.softmax(z_out, t)
        last = (metrics.softmax(z_in), metrics.softmax(z_out) if z_out is not None else None, metrics.log_softmax(z_in))
        if bar is not None:
            bar.update(i + 1)
    S = len(samples)
    bma = {k: (v[0] / S, v[1] / S if ood_data else None, log_sums[k] - np.log(S)) for k, v in sums.items()}
    return bma, last


def _score(report, bma, last, y_test, C):
    """Fills the report's test / OOD metrics; returns the entropies and reliability bins per T."""
    entropies, bins = {}, []
    for k, (p_in, p_out, log_p_in) in bma.items():
        report["test"][k] = _classification(p_in, y_test, log_p_in)
        bins.append((f"BMA {k}", metrics.reliability_bins(p_in, y_test, ECE_BINS), report["test"][k]["ece"]))
        if p_out is not None:
            report["ood"][k], h_in, h_out = _ood_metrics(p_in, p_out, C)
            entropies[k] = (h_in, h_out)
        else:
            entropies[k] = (metrics.entropy(p_in), None)
    report["test"]["last_sample"] = _classification(last[0], y_test, last[2])
    if last[1] is not None:
        report["ood"]["last_sample"] = _ood_metrics(last[0], last[1], C)[0]
    return entropies, bins


def _set(model, weights):
    model.set_weights(weights)
    return model


def _figures(run_dir, run, report, entropies, bins, C, figures):
    run_dir = str(run_dir)
    label = f"{run['method']} {run['model']['name']} on {run['data']['dataset']} ({report['samples']} samples)"
    curves = []
    for i, (k, (h_in, h_out)) in enumerate(entropies.items()):
        if h_out is not None:
            curves.append((f"OOD {report['ood']['dataset']}, {k}", h_out, {"color": f"C{i}"}))
        curves.append((f"test {run['data']['dataset']}, {k}", h_in, {"color": f"C{i}", "ls": "--", "lw": 0.9}))
    figures.entropy_cdf(
        os.path.join(run_dir, "entropy_cdf.png"),
        curves,
        ENTROPY_THRESHOLD,
        math.log(C),
        title=f"BMA predictive entropy: {label}",
    )
    figures.reliability(os.path.join(run_dir, "reliability.png"), bins, title=f"Reliability (test): {label}")
    swaps_dir = os.path.join(run_dir, run_json.SWAPS)
    rows = _read_csv(os.path.join(swaps_dir, "swaps.csv")) if os.path.isdir(swaps_dir) else None
    figures.swaps(
        os.path.join(run_dir, "swaps.png"),
        rows,
        _read_csv(os.path.join(swaps_dir, "refresh.csv")),
        _read_csv(os.path.join(run_dir, run_json.LOG)),
        title=label,
    )
