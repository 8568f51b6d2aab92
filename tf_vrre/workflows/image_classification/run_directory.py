"""A training run's directory after its preflight: taken under the run lock, cleared for
``--overwrite``, given back at the end, and the epoch its backup resumes from.

:func:`take_run` takes the run lock (:mod:`tf_vrre.runs.locks`) of a run that passed
:func:`tf_vrre.workflows.image_classification.planning.preflight` and checks the directory again
under it; :func:`give_back` releases it, removing a directory made for a run that wrote nothing,
and only if it is still this process's.  :func:`clear` removes a run's outputs for
``--overwrite``; :func:`backup_epoch` reads the epoch a run resumes from.  No TensorFlow here.

Example:
  >>> from tf_vrre.workflows.image_classification import config, planning
  >>> pre = take_run(planning.Preflight(config.resolve(config.load("msgd")), "runs/a"))
  >>> sorted(os.listdir("runs/a")), backup_epoch("runs/a")
  (['.lock'], 0)
  >>> give_back(pre)                 # the directory it made, still empty: removed
  >>> os.path.exists("runs/a")
  False
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil

import tf_vrre.workflows.image_classification.planning as planning
from tf_vrre.runs import locks, run_json

__all__ = ["take_run", "give_back", "clear", "backup_epoch"]


def take_run(pre: planning.Preflight) -> planning.Preflight:
    """Takes the run lock of ``pre.out`` (creating the directory) and checks the directory again
    under it; returns ``pre`` with what was found then.  A complete run with nothing left to
    clean is not locked (nothing will be written).  The pid goes into the lock file when the run
    starts writing (:func:`tf_vrre.runs.locks.lock_run` again): a run refused after this (its data
    differ, say) leaves the lock file as it was.

    Raises:
      tf_vrre.runs.locks.RunLockedError: another process writes or reads ``out``.
      tf_vrre.runs.run_json.RunDirError: ``out`` changed since the preflight and is refused now.
    """
    if pre.complete and not os.path.isdir(os.path.join(pre.out, run_json.BACKUP)):
        return pre
    pre = dataclasses.replace(pre, created=locks.make_run_directory(pre.out))
    try:
        locks.lock_run(pre.out, mark=False)  # its pid is written when it starts writing (train.run)
        return dataclasses.replace(pre, existing=planning.check_run_dir(pre.out, pre.config, pre.overwrite))
    except BaseException:
        give_back(pre)
        raise


def give_back(pre: planning.Preflight) -> None:
    """Releases this process's lock of ``pre.out``; a directory :func:`take_run` created that holds
    nothing but the lock file is removed, if the lock file is still this process's and the
    directory still the one created (never a directory another process now owns)."""
    locks.give_back_run(pre.out, pre.created)


def clear(out: str) -> None:
    """Removes a run's training and derived outputs for ``--overwrite`` (never ``RUN/.lock``), under
    the run lock (taken for the call unless this process holds it).  A directory another process
    writes (its callback's lock held) is refused, not removed.

    Raises:
      tf_vrre.runs.locks.RunLockedError: another process writes or reads ``out`` or one of its
        directories, or this process no longer owns ``out`` (its lock file was deleted or replaced
        by hand: another process may write the run now).
    """
    taken = not locks.holds_run_lock(out)
    locks.lock_run(out)  # raises unless this process owns the run
    try:
        for name in run_json.TRAIN_OUTPUTS + run_json.DERIVED_OUTPUTS:
            path = os.path.join(out, name)
            if os.path.isdir(path) and not os.path.islink(path):
                _remove_tree(out, path)
            elif os.path.lexists(path):
                os.remove(path)
    finally:
        if taken:
            locks.unlock_run(out)


def _remove_tree(out: str, path: str) -> None:
    """Removes directory ``path`` while holding its writer lock (refused if a writer holds it)."""
    try:
        held = (
            locks.acquire(os.path.join(path, locks.LOCK)) if os.path.lexists(os.path.join(path, locks.LOCK)) else None
        )
    except locks.Busy as busy:
        if busy.pid != str(os.getpid()):  # this process's own earlier fit, interrupted: its files go too
            raise locks.RunLockedError(f"{out!r}: cannot replace {path}: " + locks.busy_message(path, busy)) from None
        held = None
    try:
        shutil.rmtree(path)
    finally:
        if held is not None:
            held.release()


def backup_epoch(root: str) -> int:
    """The epoch the :class:`tf_vrre.callbacks.checkpoint.Checkpoint` in ``root/backup`` resumes from
    (0 without one): read from its ``checkpoint`` index file (``ckpt-<epoch>``), without TensorFlow;
    -3 for an unreadable one."""
    path = os.path.join(root, run_json.BACKUP, "checkpoint")
    try:
        with open(path) as f:
            text = f.read(1 << 16)
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError):
        return -3  # unreadable: the workers must still agree
    found = re.search(r'^model_checkpoint_path:\s*"(?:.*/)?ckpt-(\d+)"', text, re.M)
    return int(found.group(1)) if found else -3
