"""The callback of :func:`tf_vrre.diagnostics.advisor.advise`'s pilot: what it measures during the
pilot's second half (the pairs' energy differences and their noise with mini-batch and with
control-variate energies at offsets across a refresh period, every step's mini-batch energies,
quenched states, the outputs on probe inputs, the seconds of a step and of a pass).
"""

from __future__ import annotations

import math
import time

import keras
import numpy as np
import tensorflow as tf

from tf_vrre.sgmcmc import energy

OFFSETS = (0.25, 0.5, 0.75, 1.0)
"""Where in a refresh period of ``m`` steps the control variates' noise is measured (fractions)."""

QUENCH_STEPS = 25
"""Momentum-0.9 gradient steps of a quench, at the cold chain's learning rate on mini-batches
(a few relaxation times of a chain: its momentum form relaxes in about ``1 / (10 eta H)`` steps)."""


def snapshot_blocks(steps: int, period: int, blocks: int) -> int:
    """Snapshot blocks that fit in the second half of a pilot of ``steps`` steps."""
    return max(1, min(blocks, (steps - steps // 2) // (period + 1)))


def measured_offsets(period: int) -> list[int]:
    """The offsets (steps after a snapshot) at which the control variates' noise is measured."""
    return sorted({max(1, round(period * q)) for q in OFFSETS})


class PilotCallback(keras.callbacks.Callback):
    """The measurements of :func:`tf_vrre.diagnostics.advisor.advise` (after every step the callback sees).

    Made and read by ``advise`` alone, for one pilot: it is never saved with a model.
    """

    def __init__(self, sampler, subset, probe, steps, period, blocks, arrays, batch_size, seed, quenches):
        super().__init__()
        self.s, self.period = sampler, period
        self.x, self.y = subset
        self.arrays, self.batch, self.rng = arrays, batch_size, np.random.default_rng(seed + 1)
        self.probe = tf.constant(probe)
        self.N, K = sampler.data_size, sampler.num_chains
        self.M = len(tf.nest.flatten(self.x)[0])
        half = steps // 2
        count = snapshot_blocks(steps, period, blocks)
        self.offsets = measured_offsets(period)
        self.starts = [half + j * ((steps - half) // count) for j in range(count)]
        self.pending, self.snap_step = [], None
        self.half = half
        spacing = max(1, (steps - half) // max(1, quenches))
        self.inject = [half + spacing * (j + 1) for j in range(quenches) if half + spacing * (j + 1) <= steps]
        self.quenches = len(self.inject)
        self.quenched, self._quencher, self._nll_of = [], None, []
        self._best = None  # (mini-batch energy, weights) of the hottest chain's lowest state in this stretch
        self.snapshots = [sampler.model_fn() for _ in range(K)]
        self.rows, self.cold, self.hot, self.energies = [], [], [], []
        self.spent, self.clock, self.first, self.calls, self.step0 = 0.0, None, None, 0, 0
        self.pass_seconds = []
        self.evaluations = 0  # forward-only evaluations of the measurements and probes (one unit per example)

    def _nlls(self, model):
        """Per-example NLLs on the subset, float64 numpy, in chunks (eager: one trace per model would
        cost more than it saves here)."""
        out = []
        for i in range(0, self.M, 4096):
            part = slice(i, i + 4096)
            x = tf.nest.map_structure(lambda a, part=part: a[part], self.x)
            out.append(self.s.example_nlls(model, x, None if self.y is None else self.y[part]).numpy())
        self.evaluations += self.M
        return np.concatenate(out).astype(np.float64)

    def _prior(self, model):
        return float(energy.prior_energy(model.trainable_weights, self.s.weight_decay).numpy())

    def _measure(self, offset):
        s, N, M, n = self.s, self.N, self.M, self.batch
        cur = [self._nlls(c) for c in s.chains]
        prior = [self._prior(c) for c in s.chains]
        exact = M == N
        row = {"offset": offset, "diff": [], "diff_var": [], "naive_var": [], "vr_var": []}
        for p in range(s.num_chains - 1):
            d = cur[p] - cur[p + 1]
            row["diff"].append(N * d.mean() + prior[p] - prior[p + 1])
            row["diff_var"].append(0.0 if exact else N * N / M * (1 - M / N) * d.var(ddof=1))
            row["naive_var"].append(N * N / n * (1 - n / N) * d.var(ddof=1))
            if offset:
                e = d - (self.snap[p] - self.snap[p + 1])
                row["vr_var"].append(N * N / n * (1 - n / N) * e.var(ddof=1))
            else:
                row["vr_var"].append(math.nan)
        self.rows.append(row)

    def _quench_step(self):
        """A compiled momentum step of the quench model on a batch (``U_B`` = N-scaled NLL + prior)."""
        s, model = self.s, self._quencher
        velocity = [tf.Variable(tf.zeros_like(w), trainable=False) for w in model.trainable_weights]
        scale = float(self.N) / self.batch

        @tf.function
        def step(x, y, lr):
            with tf.GradientTape() as tape:
                nll = tf.reduce_sum(tf.cast(s.example_nlls(model, x, y), tf.float32))
                prior = tf.cast(energy.prior_energy(model.trainable_weights, s.weight_decay), tf.float32)
                u = scale * nll + prior
            for v, w, g in zip(velocity, model.trainable_weights, tape.gradient(u, model.trainable_weights)):
                v.assign(0.9 * v - lr * g)
                w.assign_add(v)

        return velocity, step

    def _quench(self, chain, weights):
        """A state of chain ``chain`` (its ``weights``) descended to its nearest mode: its outputs on
        the probe inputs, and its per-example NLLs on the subset (energy differences are taken paired)."""
        s = self.s
        if self._quencher is None:
            self._quencher = s.model_fn()
            self._velocity, self._step = self._quench_step()
        self._quencher.set_weights(weights)
        for v in self._velocity:
            v.assign(tf.zeros_like(v))
        lr = tf.constant(float(s.state.ladder.learning_rate.numpy()[0]), tf.float32)
        count = len(self.arrays[0])
        for _ in range(QUENCH_STEPS):
            pick = self.rng.choice(count, self.batch, replace=False)
            x = tf.constant(self.arrays[0][pick])
            self._step(x, tf.constant(self.arrays[1][pick]) if len(self.arrays) > 1 else None, lr)
        self.evaluations += QUENCH_STEPS * self.batch + len(self.probe)
        self._nll_of.append((self._nlls(self._quencher), self._prior(self._quencher)))
        self.quenched.append(
            {
                "chain": chain,
                "temperature": float(s.state.ladder.temperature.numpy()[chain]),
                "outputs": self._quencher(self.probe, training=False).numpy().reshape(-1).tolist(),
            }
        )

    def finish(self):
        """Each quenched state's energy above every quenched state of the cold chain, with the
        variance of that paired estimate (0 on the whole data)."""
        N, M = self.N, self.M
        cold = [i for i, q in enumerate(self.quenched) if q["chain"] == 0]
        for q, (nll, prior) in zip(self.quenched, self._nll_of):
            q["energy_above_cold"], q["energy_above_cold_var"] = [], []
            for i in cold:
                d = nll - self._nll_of[i][0]
                q["energy_above_cold"].append(N * d.mean() + prior - self._nll_of[i][1])
                q["energy_above_cold_var"].append(0.0 if M == N else N * N / M * (1 - M / N) * d.var(ddof=1))

    def _snapshot(self):
        t0 = time.perf_counter()
        for snap, chain in zip(self.snapshots, self.s.chains):
            snap.set_weights(chain.get_weights())
        self.snap = [self._nlls(m) for m in self.snapshots]
        self.pass_seconds.append((time.perf_counter() - t0) / len(self.snapshots) * self.N / self.M)

    def on_train_begin(self, logs=None):
        self.step0 = int(self.s.state.step.numpy())

    def on_train_batch_end(self, batch, logs=None):
        t0 = time.perf_counter()
        if self.first is None:  # the first call includes the tracing: time from here
            self.first = t0
        k = int(self.s.state.step.numpy()) - self.step0
        if k > self.half:
            self.energies.append(self.s.state.batch_energy.numpy().copy())
            self.cold.append(self.s.chains[0](self.probe, training=False).numpy())
            self.hot.append(self.s.chains[-1](self.probe, training=False).numpy())
            self.evaluations += 2 * len(self.probe)
        if self.starts and k >= self.starts[0]:  # a snapshot, measured at offset 0
            while self.starts and k >= self.starts[0]:
                self.starts.pop(0)
            self._snapshot()
            self._measure(0)
            self.snap_step, self.pending = k, list(self.offsets)
        elif self.pending and k - self.snap_step >= self.pending[0]:
            offset = k - self.snap_step
            self.pending = [o for o in self.pending if o > offset]
            self._measure(offset)
        if k > self.half and self.inject:  # the hottest chain's lowest state of this stretch, then its quench
            hot = self.s.num_chains - 1
            u = float(self.s.state.batch_energy.numpy()[hot])
            if self._best is None or u < self._best[0]:
                self._best = (u, self.s.chains[hot].get_weights())
            if k >= self.inject[0]:
                first = len(self.inject) == self.quenches
                self.inject = [i for i in self.inject if i > k]
                if first or not self.inject:
                    self._quench(0, self.s.chains[0].get_weights())
                self._quench(hot, self._best[1])
                self._best = None
        self.clock = time.perf_counter()
        self.spent += self.clock - t0
        self.calls += 1

    def step_seconds(self, steps_per_call):
        """Seconds per step of the sampler alone: the pilot's time after its first call, without
        the measurements (``nan`` with a single call)."""
        if self.first is None or self.calls < 2:
            return math.nan
        own = self.spent  # includes the first call's measurement time (counted from its start)
        return max(0.0, (self.clock - self.first) - own) / ((self.calls - 1) * steps_per_call)
