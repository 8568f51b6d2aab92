"""The traces of a few weights of every chain during a tuning round: what
:class:`tf_vrre.LadderTuner` counts mode changes on (:mod:`tf_vrre.sgmcmc.mode_changes`).

:class:`ChainTracks` picks up to :data:`MAX_WEIGHTS` weights of a chain (all of them for a
small model; otherwise a fixed random choice seeded by the sampler's seed) and records their
values in every slot (slot 0 the cold chain) at the end of each executed block of the round.
A round keeps at most ``2 *`` :data:`MAX_RECORDS` records: when it has that many, only the
first record of every cell of a twice-as-long grid of steps stays (a function of the records'
steps alone, so a resumed round keeps the same records as an uninterrupted one).

With a tuning directory the round's records are saved with every committed
:class:`tf_vrre.Checkpoint` (``ladder_tracks.npz``, up to the committed step), so a run killed
mid-round and resumed counts the same mode changes as an uninterrupted run.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from tf_vrre.runs import atomic

MAX_WEIGHTS = 128
"""Weights traced per chain (a model with fewer has all of them traced)."""

MAX_RECORDS = 512
"""A round's records are thinned (every other grid cell) when they reach twice this number."""

FILE = "ladder_tracks.npz"


def pick(model: keras.Model, seed: int, count: int = MAX_WEIGHTS) -> list[tuple[int, np.ndarray]]:
    """``(variable index, flat indices)`` of the traced weights of ``model``: all of them when it
    has at most ``count`` trainable weights, else ``count`` drawn without replacement by a
    generator seeded with ``seed`` (the same for every chain)."""
    sizes = [int(np.prod(v.shape)) for v in model.trainable_weights]
    total = sum(sizes)
    chosen = np.arange(total) if total <= count else np.sort(np.random.default_rng(seed).choice(total, count, False))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    out = []
    for i, (a, b) in enumerate(zip(starts[:-1], starts[1:])):
        inside = chosen[(chosen >= a) & (chosen < b)] - a
        if inside.size:
            out.append((i, inside.astype(np.int64)))
    return out


class ChainTracks:
    """The traced weights of every slot over the round in progress.

    Args:
      sampler: the :class:`tf_vrre.ReplicaExchangeSampler`.
    """

    def __init__(self, sampler: keras.Model) -> None:
        self.sampler = sampler
        self.picks = pick(sampler.chains[0], sampler.seed)
        variables = [[m.trainable_weights[i] for i, _ in self.picks] for m in sampler.chains]
        indices = [tf.constant(idx) for _, idx in self.picks]

        @tf.function(autograph=False)
        def gather():
            return tf.stack(
                [
                    tf.concat([tf.gather(tf.reshape(v, [-1]), idx) for v, idx in zip(chain, indices)], 0)
                    for chain in variables
                ]
            )

        self._gather = gather
        self.reset(0)

    def reset(self, start_step: int) -> None:
        """Starts the records of a round that starts at ``start_step``."""
        self.start, self.grid, self.steps, self.values = int(start_step), 1, [], []

    def _cell(self, step: int) -> int:
        return (step - self.start) // self.grid

    def record(self, step: int) -> None:
        """Records the traced weights of every slot at ``step`` (the end of an executed block),
        unless the grid cell of ``step`` already has a record."""
        if self.steps and self._cell(step) <= self._cell(self.steps[-1]):
            return
        self.sampler.sync_chains()  # chain per replica: the host copy, in rung order (else a no-op)
        self.steps.append(int(step))
        self.values.append(self._gather().numpy().astype(np.float32))
        if len(self.steps) >= 2 * MAX_RECORDS:
            self.grid *= 2
            keep = [i for i, s in enumerate(self.steps) if i == 0 or self._cell(s) > self._cell(self.steps[i - 1])]
            self.steps = [self.steps[i] for i in keep]
            self.values = [self.values[i] for i in keep]

    def traces(self) -> np.ndarray:
        """``[K, n, M]``: per slot, the ``n`` records of the ``M`` traced weights."""
        if not self.values:
            return np.zeros((self.sampler.num_chains, 0, sum(idx.size for _, idx in self.picks)), np.float32)
        return np.stack(self.values, axis=1)

    # --- kept with the checkpoints of a run --------------------------------------------------------
    def save(self, directory: str, round_index: int, upto: int) -> None:
        """Writes the records up to step ``upto`` of round ``round_index`` to ``directory``."""
        n = sum(1 for s in self.steps if s <= upto)
        atomic.savez(
            os.path.join(directory, FILE),
            round=np.int64(round_index),
            start=np.int64(self.start),
            grid=np.int64(self.grid),
            steps=np.asarray(self.steps[:n], np.int64),
            values=np.asarray(self.values[:n], np.float32).reshape(n, self.sampler.num_chains, -1),
        )

    def load(self, directory: str, round_index: int, start_step: int, upto: int) -> bool:
        """Takes back the saved records of round ``round_index`` (started at ``start_step``) up to
        step ``upto``; ``False`` (and nothing taken) when ``directory`` holds none of that round."""
        path = os.path.join(directory, FILE)
        self.reset(start_step)
        if not os.path.isfile(path):
            return False
        try:
            with np.load(path) as f:
                saved = {k: f[k] for k in ("round", "start", "grid", "steps", "values")}
        except (OSError, ValueError, KeyError):
            return False
        values = saved["values"]
        shape_ok = values.ndim == 3 and values.shape[1:] == (self.sampler.num_chains, self.traces().shape[2])
        if int(saved["round"]) != round_index or int(saved["start"]) != start_step or not shape_ok:
            return False
        keep = saved["steps"] <= upto
        self.grid = int(saved["grid"])
        self.steps = [int(s) for s in saved["steps"][keep]]
        self.values = list(values[keep])
        return True
