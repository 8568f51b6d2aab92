"""The traces of a few weights of every chain during tuning: what
:class:`tf_vrre.LadderTuner` counts mode changes on (:mod:`tf_vrre.sgmcmc.mode_changes`).

:class:`ChainTracks` picks up to :data:`MAX_WEIGHTS` weights of a chain (all of them for a
small model; otherwise a fixed random choice seeded by the sampler's seed) and records their
values at the end of each executed block since the hot end was last set, **per state**, not
per slot: an accepted
swap moves two states between slots (their weights jump from one slot's variables to the
other's), so the tracks follow each state through the swaps it made (read from the sampler's
swap record, :mod:`tf_vrre.sgmcmc.swap_record`).  A state's trace then moves only by the
dynamics, at whichever temperatures the state visited: a move between two distant levels is a
mode change of a chain, not a swap.
At most ``2 *`` :data:`MAX_RECORDS` records are kept: at that many, only the first record of
every cell of a twice-as-long grid of steps stays (a function of the records' steps alone, so a
resumed run keeps the same records as an uninterrupted one).

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
from tf_vrre.sgmcmc.swap_record import CAPACITY, swap_log_columns

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
        columns = swap_log_columns(sampler.num_chains)
        self._accepted = [columns.index(f"accepted_{p}") for p in range(sampler.num_chains - 1)]
        self.read_to = int(sampler.state.step.numpy())
        self.reset(0)

    def reset(self, start_step: int) -> None:
        """Starts the records of a round that starts at ``start_step`` (its states numbered by
        their slots there)."""
        self.start, self.grid, self.steps, self.values, self.energies = int(start_step), 1, [], [], []
        self.state_in_slot = np.arange(self.sampler.num_chains)

    def _follow_swaps(self, step: int) -> None:
        """Applies the accepted swaps of steps ``read_to .. step - 1`` to ``state_in_slot``."""
        if self.sampler.swap_rule is None or step <= self.read_to:
            self.read_to = max(self.read_to, step)
            return
        log = self.sampler.state.swap.log.numpy()
        for t in range(max(self.read_to, step - CAPACITY), step):
            row = log[t % CAPACITY]
            for p, column in enumerate(self._accepted):
                if row[column] > 0.5:  # accepted pairs of a step are disjoint: one transposition each
                    self.state_in_slot[[p, p + 1]] = self.state_in_slot[[p + 1, p]]
        self.read_to = step

    def _cell(self, step: int) -> int:
        return (step - self.start) // self.grid

    def record(self, step: int) -> None:
        """Follows the swaps up to ``step`` (the end of an executed block) and records the traced
        weights of every state, unless the grid cell of ``step`` already has a record."""
        self._follow_swaps(step)
        if self.steps and self._cell(step) <= self._cell(self.steps[-1]):
            return
        self.sampler.sync_chains()  # chain per replica: the host copy, in rung order (else a no-op)
        by_slot = self._gather().numpy().astype(np.float32)
        by_state = np.empty_like(by_slot)
        by_state[self.state_in_slot] = by_slot
        self.steps.append(int(step))
        self.values.append(by_state)
        self.energies.append(float(np.mean(self.sampler.state.batch_energy.numpy())))
        if len(self.steps) >= 2 * MAX_RECORDS:
            self.grid *= 2
            keep = [i for i, s in enumerate(self.steps) if i == 0 or self._cell(s) > self._cell(self.steps[i - 1])]
            self.steps = [self.steps[i] for i in keep]
            self.values = [self.values[i] for i in keep]
            self.energies = [self.energies[i] for i in keep]

    def traces(self) -> np.ndarray:
        """``[K, n, M]``: per state (numbered by its slot when the round began), the ``n``
        records of the ``M`` traced weights."""
        if not self.values:
            return np.zeros((self.sampler.num_chains, 0, sum(idx.size for _, idx in self.picks)), np.float32)
        return np.stack(self.values, axis=1)

    def energy(self) -> np.ndarray:
        """``[n]``: the chains' mean mini-batch energy at each record (burn-in shows as a fall)."""
        return np.asarray(self.energies, np.float64)

    # --- kept with the checkpoints of a run --------------------------------------------------------
    def save(self, directory: str, upto: int) -> None:
        """Writes the records up to step ``upto`` to ``directory``."""
        self._follow_swaps(upto)  # (a checkpoint committed before this block's record)
        n = sum(1 for s in self.steps if s <= upto)
        atomic.savez(
            os.path.join(directory, FILE),
            start=np.int64(self.start),
            grid=np.int64(self.grid),
            state_in_slot=self.state_in_slot.astype(np.int64),
            read_to=np.int64(upto),
            steps=np.asarray(self.steps[:n], np.int64),
            values=np.asarray(self.values[:n], np.float32).reshape(n, self.sampler.num_chains, self.traces().shape[2]),
            energies=np.asarray(self.energies[:n], np.float64),
        )

    def load(self, directory: str, start_step: int, upto: int) -> bool:
        """Takes back the saved records that began at ``start_step``, up to step ``upto`` (the
        restored step, where they were saved); ``False`` (and nothing taken) when ``directory``
        holds no such records."""
        path = os.path.join(directory, FILE)
        self.reset(start_step)
        self.read_to = int(upto)
        if not os.path.isfile(path):
            return False
        try:
            with np.load(path) as f:
                keys = ("start", "grid", "steps", "values", "energies", "state_in_slot", "read_to")
                saved = {k: f[k] for k in keys}
        except (OSError, ValueError, KeyError):
            return False
        if int(saved["read_to"]) != int(upto):  # saved with another checkpoint than the one restored
            return False
        values = saved["values"]
        shape_ok = values.ndim == 3 and values.shape[1:] == (self.sampler.num_chains, self.traces().shape[2])
        if int(saved["start"]) != start_step or not shape_ok:
            return False
        keep = saved["steps"] <= upto
        self.grid = int(saved["grid"])
        self.state_in_slot = saved["state_in_slot"].astype(np.int64)
        self.steps = [int(s) for s in saved["steps"][keep]]
        self.values = list(values[keep])
        self.energies = [float(e) for e in saved["energies"][keep]]
        return True
