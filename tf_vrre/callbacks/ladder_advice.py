"""What :class:`tf_vrre.LadderTuner` tells the user about a ladder, in one line each (pure Python:
the texts of its warnings, built from the round records of :mod:`tf_vrre.runs.ladder_file`).

- :func:`too_few_chains` - the barrier needs far more chains than ``K`` (the round's estimate,
  which later rounds revise), with :func:`too_wide` when every pair rejected nearly all its
  swaps: the tuner narrows the ladder (a hot end that may move) or says how (a fixed one);
- :func:`revised` - the last round's estimate of the number of chains differs from the one a
  warning gave;
- :func:`too_cold_to_cross` - the range the swaps of ``K`` chains can afford is colder than the
  coldest hot end at which the chains were seen to change modes: the range is kept, not shrunk;
- :func:`unrecommendable` - no round measured a barrier, so no number of chains can be recommended.
"""

from __future__ import annotations

from tf_vrre.sgmcmc.tuning import NEARLY_ALL


def _temps(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


def _round(record: dict) -> str:
    return f"round {record['round']} (steps {record['start_step']}-{record['end_step']})"


def too_wide(record: dict, moves: bool, proposal: list[float] | None) -> str | None:
    """What to do when every pair of ``record`` rejected at least :data:`NEARLY_ALL` of its swaps
    (the ladder is too wide), else ``None``.  ``moves``: the tuner may move the hot end
    (``bounds``, or a :class:`tf_vrre.ProposedLadder`); ``proposal``: the Gaussian rule's ladder
    for this model (``None`` if unknown)."""
    rejection = record.get("rejection")
    if rejection is None or min(rejection) < NEARLY_ALL:
        return None
    head = (
        f"The ladder {_temps(record['temperatures'])} is too wide: its pairs rejected "
        + ", ".join(f"{r:.0%}" for r in rejection)
        + " of their swaps"
    )
    if moves:
        return f"{head}; the tuner narrows it (hottest temperature now {record['new_temperatures'][-1]:.4g})"
    rule = "" if proposal is None else f" the Gaussian rule for this model's weights gives {_temps(proposal)};"
    return (
        f"{head}. Narrow it:{rule} pass temperatures=tf_vrre.ProposedLadder(cold={record['temperatures'][0]:g}), "
        "or give the tuner bounds=(low, high) to let it move the hottest temperature"
    )


def too_few_chains(record: dict, num_chains: int, wide: str | None = None) -> str | None:
    """The warning when ``K`` is under half the round's recommendation, else ``None``; ``wide``:
    :func:`too_wide`'s advice, appended."""
    chains = record.get("recommended_chains")
    if chains is None or chains / 2 <= num_chains:
        return None
    return (
        f"LadderTuner: the communication barrier is Lambda >= {record['barrier']:.3g} (round {record['round']}), "
        f"which needs about {chains} chains (2 Lambda); with num_chains={num_chains} each pair "
        f"rejects {sum(record['rejection']) / len(record['rejection']):.0%} of its swaps on average and the chains "
        "hardly exchange states. Use more chains, or a narrower temperature range. This is round "
        f"{record['round']}'s estimate: later rounds revise it as the ladder moves (the last one is in "
        "logs['ladder_recommended_chains'] and the tuning record)" + ("" if wide is None else f". {wide}")
    )


def revised(first: dict, last: dict) -> str | None:
    """The warning when the last round's number of chains differs from the one ``first`` warned of."""
    if first is last or last.get("recommended_chains") in (None, first.get("recommended_chains")):
        return None
    return (
        f"LadderTuner: the last tuning round ({last['round']}) revised the number of chains the barrier needs "
        f"to about {last['recommended_chains']} (round {first['round']} estimated {first['recommended_chains']})"
    )


def too_cold_to_cross(record: dict, num_chains: int, affordable: float, floor: float, seen: dict) -> str:
    """The warning when the swaps of ``K`` chains would move the hot end to ``affordable``, below
    ``floor``, the coldest hot end at which the chains changed modes (round ``seen``)."""
    return (
        f"LadderTuner: {_round(record)}: with num_chains={num_chains} the swaps reach equal rejection with "
        f"the hottest temperature at {affordable:.4g}, but the chains changed modes with it at {floor:.4g} "
        f"(by round {seen['round']}: {sum(seen['mode_changes'])} moves of states between two levels of a weight); "
        "a range that narrow may be too cold to cross "
        f"the posterior's barriers, so the hottest temperature stays at {floor:.4g} rather than shrink. "
        f"Each pair rejects {sum(record['rejection']) / len(record['rejection']):.0%} of its swaps on average; "
        f"about {record['recommended_chains']} chains (2 Lambda) would exchange states over this range"
    )


def unrecommendable(rounds: list[dict], min_attempts: int) -> str:
    """The warning when no round measured a barrier (every round too few attempts)."""
    fewest = min((min(r["attempts"]) for r in rounds if r.get("attempts")), default=0)
    return (
        "LadderTuner: no number of chains can be recommended: no tuning round attempted every pair at "
        f"least {min_attempts} times (at most {fewest} for some pair in a round), so no barrier was measured; "
        "lengthen the rounds (first_round_steps, tuning_steps) or attempt swaps more often "
        "(CorrectedSwap(pairs='deo'))"
    )
