"""Tuning records (ladder.json) as the LadderTuner writes them, built without a run: three rounds
on a ladder of four chains, the first kept for too few attempts, the last still open."""

from tf_vrre.runs import ladder_file, ownership

TEMPS = [1.0, 2.0, 4.0, 8.0]


def identity():
    ident = {"sampler": {"num_chains": 4, "seed": 0}, "weights": [[[4, 3], "float32"]], "tuner": {"tuning_steps": 80}}
    return {**ident, "fingerprint": ownership.fingerprint(ident)}


def round_record(i, start, due, end=None, kept=None):
    r = {
        "round": i,
        "start_step": start,
        "due_step": due,
        "start_attempts": [8 * i] * 3,
        "start_swaps": [4 * i] * 3,
        "temperatures": TEMPS,
        "learning_rates": [1e-3] * 4,
    }
    if end is not None:
        measured = {
            "rejection": [0.5, 0.5, 0.5],
            "pair_barrier": [0.54, 0.54, 0.54],
            "barrier": 1.62,
            "rejection_sum": 1.5,
            "recommended_chains": 4,
            "round_trip_rate": 0.125,
        }
        r.update(
            end_step=end,
            attempts=[8, 8, 8],
            swaps=[4, 4, 4],
            kept=kept,
            **(dict.fromkeys(measured) if kept else measured),
            new_temperatures=TEMPS,
            new_learning_rates=[1e-3] * 4,
            correction=2.0,
        )
    return r


def record():
    return {
        "format": ladder_file.FORMAT,
        "run": identity(),
        "tuner": {"tuning_steps": 80},
        "target_acceptance": None,
        "tuning_steps": 80,
        "initial": {"step": 0, "temperatures": TEMPS, "learning_rates": [1e-3] * 4},
        "rounds": [
            round_record(0, 0, 4, 4, kept="too few swap attempts to measure: pair 0 was attempted 2 times"),
            round_record(1, 4, 12, 12),
            round_record(2, 12, 80),
        ],
    }
