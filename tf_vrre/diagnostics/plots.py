"""Figures of ``tf-vrre diagnose``: ``replicas.png`` (each state's slot over time) and
``acceptance.png`` (per-pair acceptance).  Each function returns a ``matplotlib.figure.Figure``,
written as a PNG to ``path`` unless ``path`` is ``None`` (see :mod:`tf_vrre._figures`: no
pyplot, no backend switch; matplotlib is imported when a figure is drawn)."""

import numpy as np

from tf_vrre import _figures

MAX_STATES = 8


def _tab10():
    import matplotlib

    return matplotlib.colormaps["tab10"]


def _zoom_window(flow):
    """Steps shown in the zoom panel: about 8 mean round-trip times from the start (at least
    100 steps, at most the whole log)."""
    span = flow["end_step"] - flow["start_step"]
    trip = flow["mean_round_trip_time"]
    return int(min(span, max(100, 8 * trip))) if trip else span


def replicas(path, flows, labels):
    """One panel per state (rows) and run (columns): the slot the state holds over the whole
    log (0 = coldest at the bottom, K-1 = hottest at the top; a flat stretch is a stuck
    state), with its round-trip count; the bottom panel overlays all states over the first ~8
    mean round-trip times (random pairs diffuse, DEO pairs sweep the ladder).

    Args:
      path: the PNG to write, or ``None``.
      flows: :func:`tf_vrre.diagnostics.replica_flow` results (with ``"_paths"``).
      labels: a title per run.
    """
    rows = min(MAX_STATES, max(f["num_chains"] for f in flows))
    fig = _figures.new(figsize=(7.5 * len(flows), 0.9 * rows + 3.2))
    axes = fig.subplots(rows + 1, len(flows), squeeze=False, gridspec_kw={"height_ratios": [1] * rows + [2.2]})
    colors = _tab10()
    for c, (flow, label) in enumerate(zip(flows, labels)):
        times, slots = flow["_paths"]
        K = flow["num_chains"]
        t = np.append(times, flow["end_step"])
        ticks = list(range(K)) if K <= 4 else [0, K - 1]
        names = ["cold" if k == 0 else "hot" if k == K - 1 else str(k) for k in ticks]
        window = flow["start_step"] + _zoom_window(flow)
        zoom = axes[rows, c]
        for i in range(rows):
            ax = axes[i, c]
            if i >= K:
                ax.axis("off")
                continue
            y = np.append(slots[:, i], slots[-1, i])
            ax.step(t, y, where="post", lw=0.6, color=colors(i % 10))
            ax.set_ylim(-0.3, K - 0.7)
            ax.set_yticks(ticks)
            ax.set_yticklabels(names, fontsize=7)
            ax.set_xlim(flow["start_step"], flow["end_step"])
            ax.axvspan(flow["start_step"], window, color="0.9", zorder=0)
            ax.set_ylabel(
                f"state {i}\n{flow['round_trips_per_state'][i]} trips", fontsize=7, rotation=0, ha="right", va="center"
            )
            if i < min(rows, K) - 1:
                ax.set_xticklabels([])
            m = t <= window
            zoom.step(t[m], y[m] + 0.06 * (i - (K - 1) / 2), where="post", lw=1.0, color=colors(i % 10))
        axes[0, c].set_title(
            f"{label}\nK={K}, {flow['swaps']} swaps, {flow['round_trips']} round trips "
            f"({_fmt(flow['round_trips_per_1000_steps'])} / 1000 steps)",
            fontsize=9,
        )
        zoom.set_xlim(flow["start_step"], window)
        zoom.set_yticks(ticks)
        zoom.set_yticklabels(names, fontsize=7)
        zoom.set_xlabel(f"step (bottom: all states, steps {flow['start_step']}-{window}, shaded above)", fontsize=8)
    if max(f["num_chains"] for f in flows) > MAX_STATES:
        fig.text(0.01, 0.01, f"first {MAX_STATES} states shown", fontsize=7)
    fig.suptitle("Slot of each state over time (states named by their slot at the start)", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=80)


def _fmt(v):
    return "-" if v is None else f"{v:.3g}"


def acceptance(path, flows, labels):
    """Per adjacent pair: swap acceptance rate with +-2 batch-means standard errors (bars) and
    the mean Metropolis probability ``min(1, exp(log S))`` (diamonds), one colour per run.

    Args:
      path: the PNG to write, or ``None``.
      flows: :func:`tf_vrre.diagnostics.replica_flow` results.
      labels: a legend entry per run.
    """
    P = max(f["num_chains"] for f in flows) - 1
    fig = _figures.new(figsize=(max(5.5, 1.2 * P + 3), 3.6 + 0.15 * len(flows)))
    ax = fig.subplots()
    width = 0.8 / len(flows)
    colors = _tab10()
    for r, (flow, label) in enumerate(zip(flows, labels)):
        pairs = flow["pairs"]
        x = np.array([p["pair"] for p in pairs]) + (r - (len(flows) - 1) / 2) * width
        rate = np.array([np.nan if p["acceptance"] is None else p["acceptance"] for p in pairs])
        se = np.array([0.0 if p["acceptance_se"] is None else 2 * p["acceptance_se"] for p in pairs])
        mean_p = np.array([np.nan if p["mean_accept_prob"] is None else p["mean_accept_prob"] for p in pairs])
        ax.bar(
            x,
            rate,
            width * 0.9,
            yerr=se,
            capsize=3,
            color=colors(r % 10),
            alpha=0.75,
            label=f"{label}: accepted / attempted (+-2 se)",
        )
        ax.plot(x, mean_p, "D", color="k", ms=4, label="mean min(1, exp(log S))" if r == 0 else None)
    ticks = range(P)
    temps = flows[0]["temperatures"]
    ax.set_xticks(list(ticks))
    ax.set_xticklabels([f"{p}: {_fmt(temps[p])}-{_fmt(temps[p + 1])}" for p in ticks], fontsize=7)
    ax.set_xlabel("pair: temperatures (lo-hi)")
    ax.set_ylabel("swap acceptance")
    tops = [
        p["acceptance"] + 2 * (p["acceptance_se"] or 0)
        for f in flows
        for p in f["pairs"]
        if p["acceptance"] is not None
    ]
    tops += [p["mean_accept_prob"] for f in flows for p in f["pairs"] if p["mean_accept_prob"] is not None]
    ax.set_ylim(0, min(1.05, max([0.05] + [1.25 * t for t in tops])))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    ax.set_title("Per-pair swap acceptance", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=80)
