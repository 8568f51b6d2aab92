"""The tuning record of a :class:`tf_vrre.LadderTuner` run, read back: the barrier per round, the
ladder before and after tuning, how many chains the barrier asks for, and its figure.

Pure NumPy / SciPy and matplotlib (imported when a figure is drawn); no TensorFlow.  The record
is ``RUN/ladder.json`` or ``RUN/ladder/ladder.json`` (:mod:`tf_vrre.runs.ladder_file`).
"""

import os

import numpy as np

from tf_vrre import _figures
from tf_vrre.runs import ladder_file
from tf_vrre.sgmcmc import ladder


def read(run: str | os.PathLike) -> dict:
    """The tuning record of ``run`` (a run directory, its ``ladder/`` directory or the file).

    Raises:
      ValueError: no record there, or the file is not one.
    """
    return ladder_file.read(run)


def round_barrier(record: dict) -> ladder.Barrier:
    """The :class:`tf_vrre.sgmcmc.ladder.Barrier` of one ended round of the record."""
    return ladder.Barrier(record["temperatures"], record["rejection"], attempts=record["attempts"])


def summary(doc: dict) -> dict:
    """A JSON-ready summary of a tuning record.

    Returns:
      A dict with ``rounds`` (one dict per ended round: ``round``, ``start_step``, ``end_step``,
      ``kept``, ``barrier``, ``rejection``, ``recommended_chains``; ``kept`` says why a round
      kept its ladder, and a round with too few attempts has no ``barrier``) and ``num_chains``,
      ``tuning_steps``, ``initial_temperatures``, ``final_temperatures``,
      ``final_learning_rates``, ``final_correction``, ``target_acceptance``, ``barrier``,
      ``rejection_sum``, ``recommended_chains``, ``round_trip_rate``, ``started`` (rounds
      started), ``finished`` (``barrier`` and the rest from the last round that measured one,
      ``None`` before any did; ``round_trip_rate``: NRPT's round trips per even/odd swap attempt
      for that round's rejections, :func:`tf_vrre.sgmcmc.ladder.round_trip_rate`).

    Example:
      >>> sampler = toy_sampler(num_chains=4, temperatures=[0.01, 0.02, 0.03, 0.04],
      ...                       swap=tf_vrre.CorrectedSwap(pairs="deo"))
      >>> _ = sampler.fit(sampler.make_dataset(16, repeat=True), steps_per_epoch=8, epochs=6, verbose=0,
      ...     callbacks=[tf_vrre.LadderTuner(48, first_round_steps=16, directory="runs/t")])
      >>> s = summary(read("runs/t"))
      >>> [r["end_step"] for r in s["rounds"]], s["finished"], s["final_temperatures"][0]
      ([16, 48], True, 0.01)
    """
    done = ladder_file.completed(doc)
    found = ladder_file.measured(doc)
    initial = doc.get("initial") or {}
    out = {
        "num_chains": len(initial.get("temperatures", [])) or None,
        "tuning_steps": doc.get("tuning_steps"),
        "initial_temperatures": initial.get("temperatures"),
        "rounds": [
            {
                **{k: r[k] for k in ("round", "start_step", "end_step", "barrier", "rejection", "recommended_chains")},
                "kept": r.get("kept"),
            }
            for r in done
        ],
        "final_temperatures": done[-1]["new_temperatures"] if done else None,
        "final_learning_rates": done[-1]["new_learning_rates"] if done else None,
        "final_correction": done[-1].get("correction") if done else None,
        "target_acceptance": doc.get("target_acceptance"),
        "started": len(doc.get("rounds", [])),
        "finished": bool(done) and done[-1]["end_step"] >= doc.get("tuning_steps", np.inf),
    }
    last = found[-1] if found else {}
    for key in ("barrier", "rejection_sum", "recommended_chains", "round_trip_rate"):
        out[key] = last.get(key)
    return out


def format_table(doc: dict) -> str:
    """The rounds of a tuning record as text: steps, ``Lambda``, recommended chains, rejection per pair
    (and the ``F`` each round ended with when ``F`` was adapted to a target acceptance rate); a
    round that kept its ladder says why.

    Example:
      >>> print(format_table({"format": "tf_vrre.ladder/1", "tuning_steps": 8, "initial": None, "rounds": [
      ...     {"round": 0, "start_step": 0, "end_step": 8, "barrier": 1.23, "recommended_chains": 3,
      ...      "rejection": [0.5, 0.25], "new_temperatures": [1.0, 1.5, 2.0], "new_learning_rates": [1, 1, 1]}]}))
      round  steps        Lambda  chains  rejection per pair
          0  0-8           1.230       3  0.500 0.250
    """
    adapted = doc.get("target_acceptance") is not None
    lines = [
        f"{'round':>5}  {'steps':<11}{'Lambda':>8}{'chains':>8}"
        + (f"{'F':>11}" if adapted else "")
        + "  rejection per pair"
    ]
    for r in ladder_file.completed(doc):
        steps = f"{r['start_step']}-{r['end_step']}"
        f = f"{r.get('correction', float('nan')):>11.4g}" if adapted else ""
        kept = "" if r.get("kept") is None else f"  kept its ladder: {r['kept']}"
        if r["barrier"] is None:
            lines.append(f"{r['round']:>5}  {steps:<11}{'-':>8}{'-':>8}{f}{kept}")
            continue
        lines.append(
            f"{r['round']:>5}  {steps:<11}{r['barrier']:>8.3f}{r['recommended_chains']:>8}{f}  "
            + " ".join(f"{v:.3f}" for v in r["rejection"])
            + kept
        )
    return "\n".join(lines)


def _pair_means(barrier):
    """Per pair: its ``b`` interval and mean local barrier (the pair's barrier over its width)."""
    b = barrier.beta
    return b[:-1], b[1:], barrier.pair_barrier[::-1] / np.diff(b)


def plot_barrier(path: str | os.PathLike, doc: dict, title: str | None = None) -> None:
    """The local barrier over inverse temperature, and the ladder before and after tuning.

    Rounds that kept their ladder for too few attempts measured no barrier and are left out.
    Top (log-log): the last round's local barrier, each pair's mean ``lambda`` over its interval
    (steps) and the PCHIP derivative (line), the earlier rounds' in grey; along the bottom the
    initial ladder's ``b`` (open circles) and the tuned one's (filled).  A barrier ``~ 1 / b`` is a
    straight line of slope -1 there, and its optimal ladder is geometric.  Middle: the last round's
    cumulative barrier with the tuned ladder placed at equal shares of ``Lambda`` (dashed).
    Bottom: ``Lambda`` per round.

    Args:
      path: the PNG to write, or ``None``.
      doc: a tuning record (:func:`read`).
      title: optional title.

    Returns:
      The ``matplotlib.figure.Figure``.
    """
    done = ladder_file.measured(doc)
    if not done:
        raise ValueError("the tuning record has no round that measured a barrier yet: nothing to plot")
    fig = _figures.new(figsize=(7.5, 8.4))
    top, mid, low = fig.subplots(3, 1, gridspec_kw={"height_ratios": [2.4, 2.0, 1.1]})
    means = np.concatenate([_pair_means(round_barrier(r))[2] for r in done])
    means = means[means > 0]  # a pair that never rejected has no place on a log axis
    ylo, yhi = (0.2 * np.min(means), 3.0 * np.max(means)) if means.size else (1e-3, 1.0)
    for i, rec in enumerate(done):
        b = round_barrier(rec)
        is_last = rec is done[-1]
        color = "k" if is_last else str(0.85 - 0.5 * (i + 1) / len(done))
        lo, hi, mean = _pair_means(b)
        top.hlines(
            mean,
            lo,
            hi,
            color=color,
            lw=2.0 if is_last else 0.8,
            label="last round: mean over each pair" if is_last else ("earlier rounds" if i == 0 else None),
        )
        if is_last:
            grid = np.geomspace(*b.beta_range, 400)
            local = b.local(grid)
            keep = local > ylo  # PCHIP's end slopes may drop to 0 at the ladder's ends
            top.plot(grid[keep], local[keep], color="k", lw=0.7, ls=":", label="interpolated (PCHIP)")
    first = np.asarray((doc.get("initial") or {}).get("temperatures") or done[0]["temperatures"], np.float64)
    final = np.asarray(ladder_file.completed(doc)[-1]["new_temperatures"], np.float64)
    top.set_xscale("log")
    top.set_yscale("log")
    top.set_ylim(ylo * 0.5, yhi)
    top.plot(1.0 / first, np.full(first.size, ylo * 0.7), "o", mfc="none", color="tab:blue", label="ladder before")
    top.plot(1.0 / final, np.full(final.size, ylo * 1.05), "o", color="tab:red", label="ladder after")
    top.set_xlabel("inverse temperature b = 1 / tau")
    top.set_ylabel("local barrier lambda(b)")
    top.legend(fontsize=7)
    last = round_barrier(done[-1])
    lo, hi = last.beta_range
    grid = np.geomspace(lo, hi, 400)
    mid.plot(grid, last.cumulative(grid), color="k")
    for b, v in zip(1.0 / final, last.cumulative(np.clip(1.0 / final, lo, hi))):
        mid.plot([lo, b, b], [v, v, 0], "--", color="tab:red", lw=0.7)
    mid.set_xscale("log")
    mid.set_xlabel("inverse temperature b")
    mid.set_ylabel("cumulative barrier")
    mid.set_title(
        f"last round: Lambda = {last.total:.3g} (sum of rejections {last.rejection_sum:.3g}), "
        f"about {ladder.recommended_chains(last.total)} chains recommended",
        fontsize=8,
    )
    low.plot([r["round"] for r in done], [r["barrier"] for r in done], "o-", color="k")
    low.set_xticks([r["round"] for r in done])
    low.set_xlabel("round")
    low.set_ylabel("Lambda")
    fig.suptitle(title or f"Ladder tuning: K = {final.size}, tau {final[0]:.3g} .. {final[-1]:.3g}", fontsize=10)
    fig.tight_layout()
    return _figures.save(fig, path, dpi=90)
