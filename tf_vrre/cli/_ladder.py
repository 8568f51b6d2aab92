"""The ladder tuning's command-line parts (no TensorFlow): the flags of ``tf-vrre mixture``
(``--tune-ladder``, ``--target-acceptance``) and the tuning record's table in ``tf-vrre diagnose``
and at the end of a study."""

import argparse
import glob
import math
import os

import numpy as np

import tf_vrre.cli._args as _args
from tf_vrre import numerics
from tf_vrre.runs import ladder_file

MIXTURE_LADDER = "vr-resgld-ladder"


def _open_unit(text: str) -> float:
    """Argument type: a number in the open interval (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not numerics.F32_TINY <= value < 1 or not float(np.float32(value)) < 1:  # a rate the sampler can hold
        raise argparse.ArgumentTypeError(
            f"must be a number in (0, 1), got {text} (at least {numerics.F32_TINY:.4g} and below 1 in float32)"
        )
    return value


def add_mixture_arguments(m) -> None:
    """``--tune-ladder STEPS`` and ``--target-acceptance R`` of ``tf-vrre mixture``."""
    m.add_argument(
        "--tune-ladder",
        type=_args.positive(int),
        metavar="STEPS",
        help="tune the ladder of vr-resgld-ladder (LadderTuner) during the first STEPS iterations, "
        "then keep it fixed; STEPS must lie within the burn-in. Records in OUT/ladder/",
    )
    m.add_argument(
        "--target-acceptance",
        type=_open_unit,
        metavar="R",
        help="with --tune-ladder: adapt F to the swap acceptance rate R in (0, 1) during the tuning "
        "phase (CorrectedSwap(correction='auto')); biases the swaps, see the ladder guide",
    )


def check_mixture(args) -> None:
    """Refuses tuning flags that cannot work, before anything runs."""
    steps = getattr(args, "tune_ladder", None)
    target = getattr(args, "target_acceptance", None)
    if steps is None:
        if target is not None:
            _args.die("--target-acceptance: needs --tune-ladder (F is adapted during the tuning phase)")
        return
    if MIXTURE_LADDER not in args.methods:
        _args.die(f"--tune-ladder: tunes the ladder of {MIXTURE_LADDER} (K >= 3 chains); add it to --methods")
    burn = int(args.burn_in * args.steps)
    if steps > burn:
        _args.die(
            f"--tune-ladder: must be <= the burn-in (--burn-in x --iterations = {burn} steps), got {steps}: "
            "the ladder changes while it is tuned, so tuning steps must not be measured"
        )


def study_records(out: str) -> list:
    """The tuning records written by a study in ``out`` (``OUT/ladder/*/ladder.json``), sorted."""
    return sorted(glob.glob(os.path.join(out, "ladder", "*", ladder_file.FILE)))


def record_only(run: str) -> bool:
    """True when ``run`` holds a tuning record and neither a swap log nor samples."""
    from tf_vrre.runs import samples

    if ladder_file.locate(run) is None:
        return False
    try:
        samples.locate(run)
    except ValueError:
        return True
    return False


def check_records(runs) -> None:
    """Every tuning record among ``runs`` readable (exit 2 with one line naming the file and the
    field otherwise, or both records when a run holds two)."""
    for run in runs:
        try:
            if ladder_file.locate(run) is not None:
                ladder_file.read(run)
        except ValueError as err:
            _args.die(f"--run: {err}")


def _unfinished(doc) -> str | None:
    """Why a record has nothing to tabulate yet, or ``None``."""
    rounds = doc["rounds"]
    if not rounds:
        return "no round has started"
    if not ladder_file.completed(doc):
        first = rounds[0]
        return (
            f"round {first['round']} started at step {first['start_step']} and none has ended (the run "
            "stopped during its first round): no barrier measured yet"
        )
    return None


def print_tables(paths, title=lambda p: p) -> dict:
    """Prints the table of each tuning record in ``paths`` (runs or files); returns
    ``{path: summary}`` for the records found."""
    from tf_vrre.diagnostics import ladder_report

    out = {}
    for path in paths:
        if ladder_file.locate(path) is None:
            continue
        doc = ladder_file.read(path)
        s = ladder_report.summary(doc)
        out[path] = s
        done = ladder_file.completed(doc)
        header = f"\nladder tuning of {title(path)} ({len(done)} rounds, "
        empty = _unfinished(doc)
        if empty is not None:
            print(header + f"not finished at step {doc['tuning_steps']}): {empty}")
            continue
        print(header + f"{'finished' if s['finished'] else 'not finished'} at step {doc['tuning_steps']}):")
        print(ladder_report.format_table(doc))
        if s["barrier"] is None:
            print(
                "no round measured a barrier (every round had too few swap attempts per pair); temperatures "
                + " ".join(f"{t:.4g}" for t in s["final_temperatures"])
            )
            continue
        print(
            f"Lambda = {s['barrier']:.3f}: about {s['recommended_chains']} chains recommended "
            f"(2 Lambda), {s['num_chains']} used; final temperatures "
            + " ".join(f"{t:.4g}" for t in s["final_temperatures"])
            + (
                ""
                if s.get("final_correction") is None or s.get("target_acceptance") is None
                else f"; F = {s['final_correction']:.4g} (target acceptance {s['target_acceptance']:g})"
            )
        )
    return out


def figures(paths, out_dir: str) -> list:
    """``ladder.png`` (or ``ladder-<i>.png`` with several records): the local barrier with the
    ladder before and after tuning, for the records with a round that measured one; returns the
    file names written."""
    from tf_vrre.diagnostics import ladder_report

    found = [p for p in paths if ladder_file.locate(p) is not None]
    names = []
    for i, path in enumerate(found):
        doc = ladder_file.read(path)
        if not ladder_file.measured(doc):
            continue
        name = "ladder.png" if len(found) == 1 else f"ladder-{i}.png"
        ladder_report.plot_barrier(os.path.join(out_dir, name), doc)
        names.append(name)
    return names


def report(runs, out_dir: str, draw: bool = True) -> tuple:
    """``tf-vrre diagnose``'s ladder part: the tables of the runs' tuning records printed, their
    figures drawn into ``out_dir`` (unless not ``draw``); returns ``(summaries, file names)``."""
    summaries = print_tables(runs)
    return {os.fspath(k): v for k, v in summaries.items()}, (figures(runs, out_dir) if draw and summaries else [])


def study_hint(run: str) -> str:
    """A pointer to the tuning records of a ``tf-vrre mixture`` study in ``run`` (else ``""``)."""
    found = study_records(run)
    if not found:
        return ""
    return f"; its ladder tuning records can be read with --run {os.path.dirname(found[0])}"
