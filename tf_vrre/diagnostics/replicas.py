"""Replica flow from a swap log: each state's slot over time, round trips, first passages,
per-pair acceptance and the sigma^2 trend.  Pure NumPy.

Slots are temperature positions (slot 0 the coldest, slot K-1 the hottest); states move
between slots on accepted swaps.  States are named by the slot they hold at the start of the
log (state ``i`` starts in slot ``i``).  An accepted swap of pair ``p`` at step ``s``
exchanges the states of slots ``p`` and ``p + 1`` from step ``s`` on (pairs accepted at one
step are disjoint).
"""

import numpy as np


def slot_paths(step, pair, accepted, num_chains, start_step=0):
    """Each state's slot after every step with an accepted swap.

    Args:
      step, pair, accepted: the swap log's rows (one per attempted pair).
      num_chains: K.
      start_step: the first step of the log.

    Returns:
      ``(times [E+1], slots [E+1, K])``: ``slots[e, i]`` is the slot of state ``i`` from step
      ``times[e]`` on; ``times[0] = start_step`` and ``slots[0] = 0..K-1``.

    Example:
      >>> slot_paths([3, 5], [0, 0], [1, 1], 2)
      (array([0, 3, 5]), array([[0, 1], [1, 0], [0, 1]]))
    """
    step = np.asarray(step, np.int64).reshape(-1)
    pair = np.asarray(pair, np.int64).reshape(-1)
    accepted = np.asarray(accepted).reshape(-1) > 0.5
    K = int(num_chains)
    if K < 2:
        raise ValueError(f"num_chains must be >= 2, got {num_chains}")
    if not step.size == pair.size == accepted.size:
        raise ValueError(
            f"step, pair and accepted must have the same length, got {step.size}, {pair.size}, {accepted.size}"
        )
    if pair.size and (pair.min() < 0 or pair.max() > K - 2):
        raise ValueError(f"pair must be in 0..{K - 2}, got values in {pair.min()}..{pair.max()}")
    s, p = step[accepted], pair[accepted]
    order = np.lexsort((p, s))
    s, p = s[order], p[order]
    times, rows = [int(start_step)], [np.arange(K)]
    state_in_slot = np.arange(K)
    slot_of = np.arange(K)
    i = 0
    while i < s.size:
        j = i
        while j < s.size and s[j] == s[i]:
            lo = p[j]
            a, b = state_in_slot[lo], state_in_slot[lo + 1]
            state_in_slot[lo], state_in_slot[lo + 1] = b, a
            slot_of[a], slot_of[b] = lo + 1, lo
            j += 1
        times.append(int(s[i]))
        rows.append(slot_of.copy())
        i = j
    return np.asarray(times, np.int64), np.stack(rows)


def round_trips(times, slots):
    """Round trips cold -> hottest -> cold and first-passage times cold -> hottest.

    Rule, per state: after it holds slot 0 it is "going up"; its first arrival at slot K-1
    after that ends an up-passage (time measured from its arrival at slot 0, or from the
    start of the log for the state that starts there) and makes it "going down"; its next
    arrival at slot 0 completes a round trip (time from the arrival at slot 0 that started
    the trip).  A state seen first in the middle or at the top starts its first trip at its
    first arrival at slot 0.

    Args:
      times, slots: from :func:`slot_paths`.

    Returns:
      dict: ``{"per_state": [K] round trips, "up_passages": [...] steps, "round_trip_times": [...]
      steps, "trip_ends": [...] steps at which round trips completed}``.

    Example:
      >>> round_trips(*slot_paths([3, 5], [0, 0], [1, 1], 2))["per_state"]
      array([1, 0])
    """
    slots = np.asarray(slots)
    K = slots.shape[1]
    top = K - 1
    going_up = slots[0] == 0  # state has visited slot 0 and not yet the top since
    going_down = np.zeros(K, bool)  # state went 0 -> top and is on its way back
    up_start = np.where(going_up, times[0], -1)
    trip_start = up_start.copy()
    per_state = np.zeros(K, np.int64)
    ups, trips, ends = [], [], []
    for e in range(1, len(times)):
        t = int(times[e])
        for i in np.flatnonzero(slots[e] != slots[e - 1]):
            if slots[e, i] == top and going_up[i]:
                ups.append(t - int(up_start[i]))
                going_up[i], going_down[i] = False, True
            elif slots[e, i] == 0:
                if going_down[i]:
                    per_state[i] += 1
                    trips.append(t - int(trip_start[i]))
                    ends.append(t)
                going_up[i], going_down[i] = True, False
                up_start[i] = trip_start[i] = t
    return {"per_state": per_state, "up_passages": ups, "round_trip_times": trips, "trip_ends": ends}


def pair_acceptance(log, blocks=20):
    """Per adjacent pair: attempts, swaps, acceptance rate with a batch-means standard error,
    and the mean Metropolis probability ``mean min(1, exp(log S))`` (a lower-variance
    estimate of the same expectation).

    The standard error treats the log as ``blocks`` consecutive blocks of steps (ratio
    estimator: ``se = sqrt(sum_b (a_b - r n_b)^2 / (B (B - 1))) / mean_b n_b`` with ``a_b``
    swaps and ``n_b`` attempts in block ``b``), so it accounts for the autocorrelation of
    successive decisions; ``None`` with fewer than 2 blocks that attempted the pair.

    Args:
      log: a :class:`tf_vrre.diagnostics.SwapLog`.
      blocks: number of blocks B (>= 2).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> from tf_vrre.diagnostics import read_swap_log
      >>> [p["attempts"] for p in pair_acceptance(read_swap_log("runs/toy/swaps"))] == [int(sampler.state.swap.attempt_count.numpy()[0])]
      True
    """
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 2:
        raise ValueError(f"blocks must be an integer >= 2, got {blocks!r}")
    sw = log.swaps
    edges = np.linspace(log.start_step, max(log.end_step, log.start_step + 1), blocks + 1)
    temps = log.temperatures()
    out = []
    for p in range(log.num_chains - 1):
        m = sw["pair"] == p
        acc, steps = sw["accepted"][m], sw["step"][m]
        n = int(m.sum())
        rate = float(acc.mean()) if n else None
        se = None
        if n:
            b = np.clip(np.searchsorted(edges, steps, side="right") - 1, 0, blocks - 1)
            nb = np.bincount(b, minlength=blocks).astype(float)
            ab = np.bincount(b, weights=acc, minlength=blocks)
            if (nb > 0).sum() >= 2:
                used = nb > 0
                nb, ab = nb[used], ab[used]
                B = nb.size
                se = float(np.sqrt(np.sum((ab - rate * nb) ** 2) / (B * (B - 1))) / nb.mean())
        out.append(
            {
                "pair": p,
                "temperature_lo": _num(temps[p]),
                "temperature_hi": _num(temps[p + 1]),
                "attempts": n,
                "swaps": int(acc.sum()),
                "acceptance": rate,
                "acceptance_se": se,
                "mean_accept_prob": float(sw["accept_prob"][m].mean()) if n else None,
            }
        )
    return out


def _num(v):
    return None if v is None or not np.isfinite(v) else float(v)


def sigma2_trend(log):
    """Per pair: sigma^2 at its first and last update and the means over the first and last
    quarter of the updates (``refresh.csv`` rows with ``sigma2_updated = 1``); ``[]`` without
    a refresh file.  A ratio ``last_quarter / first_quarter`` far from 1 says the estimator's
    variance is still drifting (e.g. the chains are still moving apart)."""
    r = log.refresh
    if r is None or not r["step"].size:
        return []
    rows = r["sigma2_updated"] > 0.5
    out = []
    for p in range(log.num_chains - 1):
        key = f"sigma2_{p}"
        if key not in r or not rows.any():
            continue
        v = r[key][rows]
        q = max(1, v.size // 4)
        first, last = float(v[:q].mean()), float(v[-q:].mean())
        out.append(
            {
                "pair": p,
                "updates": int(v.size),
                "first": float(v[0]),
                "last": float(v[-1]),
                "first_quarter_mean": first,
                "last_quarter_mean": last,
                "ratio": (last / first) if first > 0 else None,
            }
        )
    return out


def replica_flow(log, blocks=20):
    """Replica diagnostics of one swap log: slots over time, round trips, passages, acceptance.

    Round trips per 1,000 steps = ``1000 * sum_i trips_i / steps`` (all states together);
    the mean first-passage time cold -> hot averages the completed up-passages (see
    :func:`round_trips`).  For K = 2 the hottest slot is slot 1.

    Args:
      log: a :class:`tf_vrre.diagnostics.SwapLog`.
      blocks: blocks for the acceptance standard errors (:func:`pair_acceptance`).

    Returns:
      A JSON-ready dict: ``num_chains, steps, start_step, end_step, temperatures, swaps,
      attempts, round_trips, round_trips_per_state, round_trips_per_1000_steps,
      mean_first_passage_cold_to_hot, first_passages, mean_round_trip_time, pairs,
      sigma2_trend``, plus ``"_paths": (times, slots)`` for plotting (not JSON).

    Example:
      >>> sampler = toy_sampler()
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=4, verbose=0, callbacks=[
      ...     tf_vrre.SwapLogger("runs/toy/swaps"),
      ...     tf_vrre.SampleCollector("runs/toy/samples", every=2, validation_data=(x[:8], y[:8]))])
      >>> from tf_vrre.diagnostics import read_swap_log
      >>> flow = replica_flow(read_swap_log("runs/toy/swaps"))
      >>> len(flow["pairs"]), flow["round_trips_per_1000_steps"] >= 0
      (1, True)
    """
    sw = log.swaps
    times, slots = slot_paths(sw["step"], sw["pair"], sw["accepted"], log.num_chains, log.start_step)
    rt = round_trips(times, slots)
    steps = log.num_steps
    trips = int(rt["per_state"].sum())
    return {
        "num_chains": log.num_chains,
        "steps": steps,
        "start_step": log.start_step,
        "end_step": log.end_step,
        "temperatures": [_num(t) for t in log.temperatures()],
        "attempts": int(sw["pair"].size),
        "swaps": int(sw["accepted"].sum()),
        "round_trips": trips,
        "round_trips_per_state": [int(v) for v in rt["per_state"]],
        "round_trips_per_1000_steps": 1000.0 * trips / steps if steps else None,
        "first_passages": len(rt["up_passages"]),
        "mean_first_passage_cold_to_hot": float(np.mean(rt["up_passages"])) if rt["up_passages"] else None,
        "mean_round_trip_time": float(np.mean(rt["round_trip_times"])) if rt["round_trip_times"] else None,
        "pairs": pair_acceptance(log, blocks),
        "sigma2_trend": sigma2_trend(log),
        "_paths": (times, slots),
    }
