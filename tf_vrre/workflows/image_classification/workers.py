"""The workers of a run and its directory: under ``MultiWorkerMirroredStrategy`` every worker must
see the same state of the run directory before any collective step (:func:`agree`, or a worker
would wait forever), and only the chief writes ``out``; the others write to a temporary directory
seeded with the chief's backup and ladder tuning record (:func:`worker_root`), so that all resume alike.  One process, or
a strategy of one worker, is its own chief.

Example:
  >>> from tf_vrre.workflows.image_classification import config, planning
  >>> is_multi_worker("multiworker"), is_multi_worker("default")
  (True, False)
  >>> run_state(planning.Preflight(config.resolve(config.load("msgd")), "runs/new"))   # 0: a new run
  0
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import tf_vrre.workflows.image_classification.planning as planning
import tf_vrre.workflows.image_classification.run_directory as run_directory
import tf_vrre.workflows.image_classification.strategies as strategies
from tf_vrre.runs import ladder_file, locks, run_json

__all__ = ["agree", "worker_root", "is_multi_worker", "run_state"]


def agree(strat: Any, out: str, state: int) -> None:
    """Multi-worker: every worker must see the same run state (``state``: -2 refused, -1 complete,
    else the backup epoch to resume from) before any collective step, or a worker would wait forever."""
    views = strategies.gather_ints(strat, [state])
    if len({v[0] for v in views}) > 1:
        names = {-3: "an unreadable backup", -2: "a refused run directory", -1: "a complete run", 0: "a new run"}
        seen = "; ".join(f"worker {i}: {names.get(v[0], f'a backup at epoch {v[0]}')}" for i, v in enumerate(views))
        raise run_json.RunDirError(
            f"the workers see different states of {out!r} ({seen}); put --out on storage "
            "every worker reads (a shared file system or a bucket) and run all workers again"
        )


def worker_root(strat: Any, pre: planning.Preflight) -> tuple[str, bool]:
    """``(directory this process writes, is chief)``: ``out`` on the chief (its lock held: an
    ``overwrite`` clears it now), a temporary directory on the other workers of a multi-worker run,
    seeded with the chief's backup and ``ladder/ladder.json`` so they resume alike."""
    out = pre.out
    if strategies.is_chief(strat):
        locks.lock_run(out)  # held already (take_run); checks this process still owns it
        if pre.overwrite:
            run_directory.clear(out)
        os.makedirs(out, exist_ok=True)
        return out, True
    root = tempfile.mkdtemp(prefix=f"tf_vrre-{strategies.worker_name(strat).replace(' ', '')}-")
    backup = os.path.join(out, run_json.BACKUP)
    if not pre.overwrite and os.path.isdir(backup):
        shutil.copytree(backup, os.path.join(root, run_json.BACKUP))
        ladder = os.path.join(out, run_json.LADDER, ladder_file.FILE)  # a tuning round's start, to resume it alike
        if os.path.isfile(ladder):
            os.makedirs(os.path.join(root, run_json.LADDER))
            shutil.copyfile(ladder, os.path.join(root, run_json.LADDER, ladder_file.FILE))
    return root, False


def is_multi_worker(strategy: Any) -> bool:
    """Whether ``strategy`` (a name of :data:`tf_vrre.workflows.image_classification.strategies.STRATEGIES`
    or a strategy) is a multi-worker one, without making it."""
    return strategy == "multiworker" if isinstance(strategy, str) else strategies.is_multi_worker(strategy)


def run_state(pre: planning.Preflight) -> int:
    """The run state workers compare: -1 complete, else the backup epoch (0: new or overwritten)."""
    return -1 if pre.complete else 0 if pre.overwrite or pre.existing is None else run_directory.backup_epoch(pre.out)
