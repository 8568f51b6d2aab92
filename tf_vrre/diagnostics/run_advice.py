"""Where replica exchange pays, read off a finished run: the section of ``tf-vrre diagnose``.

:func:`from_run` prints the advice of a pilot that ran with ``directory``
(:func:`tf_vrre.diagnostics.advisor.advise` writes ``RUN/advice.json``), or, without one, a best
guess from the run's swap log and ladder tuning record: the noise penalty and acceptance of the
energy estimator in force (the other one was not measured).  The rules are those of
:mod:`tf_vrre.diagnostics.advice`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tf_vrre.diagnostics.advice as advice

PENALTY_SHUT = 10.0
"""A cold-pair penalty (nats) above which swaps with that estimator are shut off (``e^-10``)."""


def _from_log(log: Any, sampler: dict | None, tuning: dict | None) -> advice.Advice:
    """What a run's swap log (and its ladder tuning record) say, when no pilot measured both estimators:
    the penalty and acceptance of the estimator in force, and a best guess."""
    sw = log.swaps
    temps = log.temperatures()
    P = log.num_chains - 1
    vr = bool(sampler and sampler.get("variance_reduction"))
    in_force, other = ("control variates", "mini-batch") if vr else ("mini-batch", "control variates")
    pairs = []
    for p in range(P):
        rows = sw["pair"] == p
        if not rows.any():
            continue
        delta = 1.0 / sw["temperature_lo"][rows] - 1.0 / sw["temperature_hi"][rows]
        pairs.append(
            {
                "pair": p,
                "temperatures": [float(temps[p]), float(temps[p + 1])],
                "attempts": int(rows.sum()),
                "acceptance": float(sw["accepted"][rows].mean()),
                "noise_var": float(np.mean(sw["sigma2"][rows])),
                "penalty_nats": float(np.mean(delta**2 * sw["sigma2"][rows]) / 2.0),
            }
        )
    numbers: dict = {"estimator": in_force, "pairs": pairs}
    if tuning:
        numbers["ladder"] = tuning
    if not pairs:
        return advice.Advice(advice.ONE_CHAIN, 1, False, ["the swap log records no attempted swap"], numbers)
    cold = pairs[0]
    chains = log.num_chains if not tuning else int(tuning.get("recommended_chains", log.num_chains))
    text = (
        f"cold pair ({cold['temperatures'][0]:.4g}, {cold['temperatures'][1]:.4g}): noise penalty "
        f"{cold['penalty_nats']:.3g} nats per swap with {in_force} energies, acceptance {cold['acceptance']:.3g} "
        f"over {cold['attempts']} attempts"
    )
    hint = (
        f"{other} energies and whether the hot chains find other modes were not measured: run "
        "tf_vrre.diagnostics.advise(sampler, data, steps, batch_size=n, directory=RUN) on a pilot to decide"
    )
    worst = max(p["penalty_nats"] for p in pairs)
    if not vr and worst > PENALTY_SHUT:
        guess = advice.VARIANCE_REDUCED
        why = f"mini-batch swap energies pay up to {worst:.3g} nats per swap: swaps are shut off where they should carry modes"
    elif vr and cold["acceptance"] < advice.SHUT:
        guess = advice.ONE_CHAIN
        why = f"even the control variates' swaps are rejected ({cold['acceptance']:.3g} accepted)"
    else:
        guess = advice.VARIANCE_REDUCED if vr else advice.REPLICA_EXCHANGE
        why = f"the {in_force} energies' penalty, {worst:.3g} nats at most, lets swaps through"
    return advice.Advice(guess, chains if guess != advice.ONE_CHAIN else 1, False, [text, why, hint], numbers)


def from_run(run: Any) -> dict | None:
    """The advice section of ``tf-vrre diagnose`` for a run directory: the pilot's advice when
    ``RUN/advice.json`` exists (:func:`tf_vrre.diagnostics.advisor.advise` with ``directory``), else
    a best guess from the swap log and the ladder tuning record (``None`` without either).

    Returns:
      ``{"source", "advice", "text"}``: where it comes from (``"pilot"`` or ``"swap log"``), the
      :class:`tf_vrre.diagnostics.advice.Advice` as a dict, and its text.
    """
    import os

    import tf_vrre.diagnostics.runs as run_files
    from tf_vrre.runs import ladder_file, ownership
    from tf_vrre.runs.samples import read_json

    path = os.path.join(os.fspath(run), advice.FILE)
    if os.path.isfile(path):
        doc = read_json(path)
        if not isinstance(doc, dict) or doc.get("format") != advice.FORMAT:
            raise ValueError(
                f"{path}: not an advice record (format {doc.get('format') if isinstance(doc, dict) else None!r})"
            )
        a = advice.Advice(**doc["advice"])
        return {"source": "pilot", "advice": a.to_dict(), "text": advice.format_advice(a)}
    run = os.fspath(run)
    swaps_dir = next(
        (d for d in (run, os.path.join(run, "swaps")) if os.path.isfile(os.path.join(d, "swaps.csv"))), None
    )
    tuning = None
    record = ladder_file.locate(run)
    if record is not None:
        done = ladder_file.measured(ladder_file.read(record))
        if done:
            last = done[-1]
            keys = ("barrier", "recommended_chains", "round_trip_rate", "rejection", "swap_noise")
            tuning = {k: last.get(k) for k in keys}
    if swaps_dir is None:
        if tuning is None:
            return None
        K = int(tuning["recommended_chains"])
        reasons = [
            f"the ladder tuning record: barrier Lambda {tuning['barrier']:.3g} with the swap rule in force, "
            f"{K} chains recommended, rejection per pair {np.round(tuning['rejection'], 3).tolist()}"
        ]
        noise = tuning["swap_noise"]
        if noise:  # records written before the tuner kept the swap noise lack it
            reasons.append(
                f"swap noise penalty per pair {np.round(noise['penalty_nats'], 3).tolist()} nats with "
                f"{noise['energies']} energies (delta^2 sigma2 / 2 at the last round's end)"
            )
        reasons.append(
            "whether the hot chains find modes the cold one lacks, and the other energies' noise, were not "
            "measured: run tf_vrre.diagnostics.advise(sampler, data, steps, batch_size=n, directory=RUN) on a "
            "pilot to decide"
        )
        a = advice.Advice(advice.REPLICA_EXCHANGE, K, False, reasons, {"ladder": tuning})
        return {"source": "tuning record", "advice": a.to_dict(), "text": advice.format_advice(a)}
    log = run_files.read_swap_log(swaps_dir)
    sampler = (ownership.stored_run(os.path.join(swaps_dir, "identity.json"), "SwapLogger") or {}).get("sampler")
    a = _from_log(log, sampler, tuning)
    return {"source": "swap log", "advice": a.to_dict(), "text": advice.format_advice(a)}
