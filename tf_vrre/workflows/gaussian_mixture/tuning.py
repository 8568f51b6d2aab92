"""Ladder tuning in the mixture study (``tf-vrre mixture --tune-ladder T``): a
:class:`tf_vrre.LadderTuner` on every ``vr-resgld-ladder`` run, its record in
``OUT/ladder/<method>-seed<seed>/ladder.json``; with ``--target-acceptance r`` the swap's ``F``
is adapted to ``r`` during the same tuning phase (``CorrectedSwap(correction="auto")``)."""

import argparse
import os

import tf_vrre.sgmcmc.tuning as tuning
import tf_vrre.workflows.gaussian_mixture.target as target
from tf_vrre.callbacks.ladder_tuner import LadderTuner

RECORDS = "ladder"

FIRST_ROUND_MIN_STEPS = 8 * tuning.MIN_ROUND_ATTEMPTS
"""Fewest steps of the first tuning round (48).  Under DEO a pair is attempted on every other
step at best, and fewer once the swap rule skips attempts, so 8 steps per needed attempt give each
pair of the study's ladder its :data:`tf_vrre.sgmcmc.tuning.MIN_ROUND_ATTEMPTS` attempts with
room to spare (a 20-step round gave a pair 5 attempts, and the round kept its ladder)."""
"""Directory of the tuning records inside the study's output directory."""


def record_directory(out: str, method: str, seed: int) -> str:
    """Where the tuning record of one run goes: ``OUT/ladder/<method>-seed<seed>``."""
    return os.path.join(out, RECORDS, f"{method}-seed{seed}")


def tuned(args: argparse.Namespace, method: str) -> bool:
    """True when this run's ladder is tuned: ``--tune-ladder`` given and the method has K >= 3 chains."""
    return bool(getattr(args, "tune_ladder", None)) and method == target.LADDER


def run_options(args: argparse.Namespace, method: str, seed: int, out: str) -> dict:
    """Extra arguments of :func:`tf_vrre.workflows.gaussian_mixture.target.run` for one run: the tuner
    (its first round 1/64 of the tuning phase, at least :data:`FIRST_ROUND_MIN_STEPS`; learning rates left alone, as
    the study sets them) and, with a target acceptance rate, ``correction="auto"``."""
    if not tuned(args, method):
        return {}
    steps = int(args.tune_ladder)
    tuner = LadderTuner(
        steps,
        first_round_steps=min(steps, max(FIRST_ROUND_MIN_STEPS, steps // 64)),
        learning_rates=None,
        directory=record_directory(out, method, seed),
        overwrite=bool(args.overwrite),
    )
    options: dict = {"callbacks": [tuner]}
    if getattr(args, "target_acceptance", None) is not None:
        options.update(
            correction="auto",
            swap_options={"penalty": args.penalty, "target_acceptance": float(args.target_acceptance)},
        )
    return options
