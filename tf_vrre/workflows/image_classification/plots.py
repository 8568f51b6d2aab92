"""Figures of ``tf-vrre evaluate``: entropy CDF, reliability diagram, swaps and sigma^2.

Each function returns a ``matplotlib.figure.Figure`` and writes it as a PNG to ``path`` unless
``path`` is ``None`` (see :mod:`tf_vrre._figures`: no pyplot, no backend switch).
"""

import math

import numpy as np

from tf_vrre import _figures

__all__ = ["entropy_cdf", "reliability", "swaps"]


def _save(fig, path):
    return _figures.save(fig, path, dpi=110, bbox_inches="tight")


def entropy_cdf(path, curves, threshold=1.5, max_entropy=None, title=None):
    """Empirical CDFs of predictive entropy (the paper's Figure 4 style).

    Args:
      path: output PNG, or ``None``.
      curves: list of ``(label, entropies, style)`` with ``style`` a dict of matplotlib line
        arguments (e.g. ``{"ls": "--"}``) or ``None``.
      threshold: a vertical line (the paper's entropy 1.5); the legend gives each curve's
        fraction above it.
      max_entropy: ``log C`` (x-axis limit and a marker for the uniform prediction).
      title: figure title.
    """
    fig = _figures.new(figsize=(6.4, 4.4))
    ax = fig.subplots()
    for label, values, style in curves:
        v = np.sort(np.asarray(values, np.float64))
        frac = float(np.mean(v > threshold)) if threshold is not None else None
        extra = f" ({100 * frac:.0f}% > {threshold:g})" if frac is not None else ""
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=f"{label}{extra}", **(style or {}))
    if threshold is not None:
        ax.axvline(threshold, color="grey", lw=0.8, ls=":")
    if max_entropy is not None:
        ax.axvline(max_entropy, color="black", lw=0.8, ls="--", label=f"uniform (log C = {max_entropy:.2f})")
        ax.set_xlim(0, max_entropy * 1.03)
    ax.set_ylim(0, 1.001)
    ax.set_xlabel("predictive entropy (nats)")
    ax.set_ylabel("fraction of images with entropy <= x")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    return _save(fig, path)


def reliability(path, panels, title=None):
    """Reliability diagrams: accuracy vs confidence per bin, one panel per calibration.

    Args:
      path: output PNG, or ``None``.
      panels: list of ``(label, bins, ece)`` with ``bins`` from
        :func:`tf_vrre.workflows.image_classification.metrics.reliability_bins`.
      title: figure title.
    """
    fig = _figures.new(figsize=(3.6 * len(panels), 5.0))
    axes = fig.subplots(2, len(panels), sharex=True, gridspec_kw={"height_ratios": [3, 1]}, squeeze=False)
    for j, (label, bins, ece) in enumerate(panels):
        lo = np.array([b[0] for b in bins])
        width = np.array([b[1] - b[0] for b in bins])
        count = np.array([b[2] for b in bins], np.float64)
        conf = np.array([b[3] for b in bins])
        acc = np.array([b[4] for b in bins])
        ax, hx = axes[0, j], axes[1, j]
        ax.bar(
            lo,
            np.nan_to_num(acc),
            width=width,
            align="edge",
            color="C0",
            alpha=0.8,
            edgecolor="k",
            lw=0.4,
            label="accuracy",
        )
        gap = np.nan_to_num(conf) - np.nan_to_num(acc)
        ax.bar(
            lo,
            gap,
            bottom=np.nan_to_num(acc),
            width=width,
            align="edge",
            color="C3",
            alpha=0.35,
            label="confidence - accuracy",
        )
        ax.plot([0, 1], [0, 1], color="k", lw=0.8, ls="--")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(f"{label}: ECE {ece:.3f}", fontsize=9)
        if j == 0:
            ax.set_ylabel("accuracy in bin")
            ax.legend(fontsize=7, loc="upper left")
        hx.bar(lo, count / max(count.sum(), 1), width=width, align="edge", color="grey", edgecolor="k", lw=0.4)
        hx.set_xlabel("confidence (max probability)")
        if j == 0:
            hx.set_ylabel("fraction")
    if title:
        fig.suptitle(title, fontsize=9)
    return _save(fig, path)


def _col(rows, key):
    return np.array([float(r[key]) if r.get(key) not in (None, "") else math.nan for r in rows], np.float64)


def swaps(path, swap_rows, refresh_rows, log_rows, num_pairs=1, title=None):
    """Swaps and sigma^2 over training, with the loss per epoch.

    Args:
      path: output PNG, or ``None``.
      swap_rows: rows of ``swaps/swaps.csv`` (dicts), or ``None`` for a single-chain run.
      refresh_rows: rows of ``swaps/refresh.csv``.
      log_rows: rows of ``log.csv``.
      num_pairs: adjacent pairs ``K - 1``.
      title: figure title.
    """
    fig = _figures.new(figsize=(6.4, 7.2))
    axes = fig.subplots(3, 1)
    ax = axes[0]
    if swap_rows is None:
        ax.text(0.5, 0.5, "single chain: no swaps", ha="center", va="center", transform=ax.transAxes)
        axes[1].text(0.5, 0.5, "single chain: no sigma^2", ha="center", va="center", transform=axes[1].transAxes)
    else:
        step = _col(swap_rows, "step")
        acc = _col(swap_rows, "accepted")
        ax.plot(step, np.arange(1, len(step) + 1), label="attempts", color="grey")
        ax.plot(step, np.cumsum(acc), label=f"swaps ({int(np.nansum(acc))})", color="C3")
        ax.set_ylabel("cumulative count")
        ax.legend(fontsize=8)
        upd = [r for r in refresh_rows if r.get("sigma2_updated") in ("1", "1.0", "True")] or refresh_rows
        if upd:
            for p in range(num_pairs):
                s2 = _col(upd, f"sigma2_{p}")
                ok = s2 > 0
                axes[1].semilogy(_col(upd, "step")[ok], s2[ok], label=f"sigma^2 pair {p}")
            axes[1].legend(fontsize=8)
        axes[1].set_ylabel("sigma^2 (energy-difference variance)")
    for ax in axes[:2]:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    if log_rows:
        ep = _col(log_rows, "epoch") + 1
        for key, label in (("loss", "cold chain NLL"), ("loss_1", "hot chain NLL")):
            if key in log_rows[0]:
                axes[2].plot(ep, _col(log_rows, key), marker=".", label=label)
        if "bma_nll" in log_rows[0]:
            axes[2].plot(ep, _col(log_rows, "bma_nll"), marker=".", label="running BMA NLL (held out)")
        axes[2].legend(fontsize=8)
    axes[2].set_xlabel("epoch")
    axes[2].set_ylabel("mean NLL")
    axes[2].grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return _save(fig, path)
