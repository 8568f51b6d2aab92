"""Who the sampler tells about a divergence and about a committed checkpoint.

:class:`tf_vrre.SampleCollector` registers itself in ``on_train_begin``: on a
:class:`tf_vrre.sampler.invariants.DivergenceError` it flags the samples taken while the energy was
exploding; after each commit of a :class:`tf_vrre.Checkpoint` it deletes the evicted samples
no resume can need.  The sampler removes every listener when ``fit`` returns or raises (after
all ``on_train_end`` calls, so a checkpoint committed by the last ``on_train_end`` still
reaches the collectors).  Listeners are keyed (a collector by its directory): a newer listener
under the same key replaces an older one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable


class SamplerListeners:
    """The sampler's divergence and checkpoint-commit listeners, and the newest committed step."""

    def __init__(self):
        self._divergence = {}
        self._committed = {}
        self.committed_step = None
        """Step of the newest committed :class:`tf_vrre.Checkpoint` (None: no checkpoint)."""

    def add(
        self,
        key: Hashable,
        on_divergence: Callable[[Exception], None] | None = None,
        on_checkpoint_committed: Callable[[], None] | None = None,
    ) -> None:
        """Registers ``on_divergence(error)`` and ``on_checkpoint_committed()`` under ``key``."""
        self.remove(key)
        if on_divergence is not None:
            self._divergence[key] = on_divergence
        if on_checkpoint_committed is not None:
            self._committed[key] = on_checkpoint_committed

    def remove(self, key: Hashable) -> None:
        """Removes the listeners registered under ``key`` (if any)."""
        self._divergence.pop(key, None)
        self._committed.pop(key, None)

    def clear(self) -> None:
        """Removes every listener (the committed step stays: it describes the checkpoint on disk)."""
        self._divergence.clear()
        self._committed.clear()

    def divergence(self, error: Exception) -> None:
        """Tells every divergence listener about ``error`` (a :class:`DivergenceError`)."""
        for listener in list(self._divergence.values()):
            listener(error)

    def checkpoint_committed(self, step: int) -> None:
        """Records ``step`` as the newest committed step and tells every commit listener."""
        self.committed_step = step
        for listener in list(self._committed.values()):
            listener()
