"""Figures of the Gaussian-mixture study (``tf-vrre mixture``).

Every function takes plain numbers / arrays (see ``tf_vrre.cli``) and returns a
``matplotlib.figure.Figure``, written as a PNG to ``path`` unless ``path`` is ``None`` (see
:mod:`tf_vrre._figures`: no pyplot, no backend switch).
"""

import numpy as np

from tf_vrre import _figures

COLORS = {"sgld": "tab:gray", "resgld": "tab:blue", "vr-resgld": "tab:red", "vr-resgld-ladder": "tab:purple"}
LABELS = {"sgld": "SGLD", "resgld": "reSGLD", "vr-resgld": "VR-reSGLD", "vr-resgld-ladder": "VR-reSGLD ladder"}


def _label(method):
    return LABELS.get(method, method)


def traces(path, traces_by_method, record_every, modes, exact_left, title=""):
    """Cold-chain trace of each method (one panel each), exact mode locations dashed.

    Args:
      traces_by_method: ``{method: [T] beta trace}`` (one seed).
      modes: the exact modes' locations ``(left, right)``.
      exact_left: exact weight of the left mode (shown in the legend).
    """
    methods = list(traces_by_method)
    fig = _figures.new(figsize=(8, 1.9 * len(methods) + 0.6))
    axes = fig.subplots(len(methods), 1, sharex=True, squeeze=False)
    for ax, method in zip(axes[:, 0], methods):
        beta = np.asarray(traces_by_method[method])
        it = (np.arange(beta.size) + 1) * record_every
        ax.plot(it, beta, lw=0.6, color=COLORS.get(method, "k"), label=f"{_label(method)} cold chain")
        for k, mode in enumerate(modes):
            ax.axhline(
                mode,
                ls="--",
                lw=1,
                color="k",
                label=(f"exact modes (weights {exact_left:.3f} / {1 - exact_left:.3f})" if k == 0 else None),
            )
        ax.set_ylabel(r"$\beta^{(1)}$")
        ax.set_ylim(min(modes) - 8, max(max(modes) + 8, float(np.max(beta)) + 1 if beta.size else 0))
        ax.legend(loc="upper right", fontsize=7, ncol=2)
    axes[-1, 0].set_xlabel("iteration")
    fig.suptitle(title or "Cold-chain traces", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=80)


def density(path, samples_by_method, grid, exact_density, ks_by_method=None, title=""):
    """Histogram of each cold chain (pooled seeds, after burn-in) against the exact density."""
    methods = list(samples_by_method)
    fig = _figures.new(figsize=(3.2 * len(methods), 3.0))
    axes = fig.subplots(1, len(methods), sharey=True, squeeze=False)
    keep = exact_density > exact_density.max() * 1e-4
    lo, hi = grid[keep].min() - 1.0, grid[keep].max() + 1.0
    for ax, method in zip(axes[0], methods):
        s = np.asarray(samples_by_method[method]).reshape(-1)
        bins = np.linspace(
            min(lo, np.percentile(s, 0.5)) if s.size else lo, max(hi, np.percentile(s, 99.5)) if s.size else hi, 300
        )
        ax.hist(s, bins=bins, density=True, color=COLORS.get(method, "k"), alpha=0.6, label="samples")
        ax.plot(grid, exact_density, "k", lw=1, label="exact")
        name = _label(method)
        if ks_by_method and method in ks_by_method:
            name += f"\nKS (pooled) = {ks_by_method[method]:.3f}"
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(r"$\beta$")
        ax.legend(fontsize=7, loc="upper center")
    axes[0, 0].set_ylabel("density")
    fig.suptitle(title or "Cold chain vs exact tempered posterior", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=80)


def variance(path, curves, record_every, title=""):
    """``log10 sigma^2`` over iterations: ``curves`` is ``[(label, method, [T] sigma2)]``."""
    fig = _figures.new(figsize=(6.5, 3.6))
    ax = fig.subplots()
    styles = ["-", "--", ":", "-."]
    vr_k = 0
    for label, method, s2 in curves:
        s2 = np.asarray(s2, np.float64)
        it = (np.arange(s2.size) + 1) * record_every
        ok = s2 > 0
        ls = "-"
        if method != "resgld":
            ls = styles[vr_k % len(styles)]
            vr_k += 1
        ax.plot(it[ok], np.log10(s2[ok]), ls, lw=1, color=COLORS.get(method, "k"), label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel(r"$\log_{10}\,\widetilde\sigma^2$")
    ax.legend(fontsize=8)
    ax.set_title(title or r"Estimated variance of $\widetilde U_1 - \widetilde U_2$", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=80)


def sensitivity(path, ratios, lrs, log10_sigma2, title=""):
    """Contour of ``log10 sigma^2`` (``[len(lrs), len(ratios)]``) over ``(n/N, eta)``, log axes."""
    z = np.asarray(log10_sigma2, np.float64)
    fig = _figures.new(figsize=(5.2, 4.0))
    ax = fig.subplots()
    x, y = np.log10(ratios), np.log10(lrs)
    xx, yy = np.meshgrid(x, y)
    if z.shape[0] >= 2 and z.shape[1] >= 2:
        cs = ax.contourf(x, y, z, levels=12, cmap="viridis")
    else:  # a line or a point: no contour, coloured markers
        cs = ax.scatter(xx, yy, c=z, s=200, cmap="viridis", marker="s")
    fig.colorbar(cs, ax=ax, label=r"$\log_{10}\,\widetilde\sigma^2$ (VR-reSGLD)")
    ax.scatter(xx, yy, s=10, c="w", edgecolors="k", linewidths=0.5, label="grid points", clip_on=False, zorder=3)
    ax.set_xlabel(r"$\log_{10}(n/N)$")
    ax.set_ylabel(r"$\log_{10}\,\eta$")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(title or r"Sensitivity of $\widetilde\sigma^2$ to $n/N$ and $\eta$", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=80)
