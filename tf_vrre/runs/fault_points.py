"""Fault injection for the kill-at-any-instant resume tests (not part of the public API).

The writers of a run call :func:`point` at named instants: between writing a file and the
write that makes it count, and around every checkpoint.  A test process sets :data:`hook` to
a function of the point's name that may kill the process there (``tests/helpers/_ckpt_job.py``).

Points: ``sample.file`` (sample written, manifest not yet), ``sample.manifest`` (manifest
written, evicted files not yet deleted), ``swaps.drained`` (swap rows flushed),
``csv.row`` (log row flushed), ``checkpoint.data`` (checkpoint files written, not yet
committed), ``checkpoint.committed`` (committed and older ones deleted), ``atomic.write``
(a temporary file written, not yet synced and renamed: a hook raising ``OSError(ENOSPC)``
simulates a full disk).
"""

from __future__ import annotations

from collections.abc import Callable

hook: Callable[[str], object] | None = None


def point(name: str) -> None:
    """Calls :data:`hook` with ``name`` when a test installed one."""
    if hook is not None:
        hook(name)
