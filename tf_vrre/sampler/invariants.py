"""Runtime invariants of the train step: checked in the graph, raised on the host.

What the constructor validates for constants can still break during training: a scheduled
temperature, learning rate or ``F`` that reaches 0 (or temperatures that stop increasing
across chains), a chain whose energy, gradient or weights stop being finite, a per-example
NLL of the wrong length.  Each step checks these in-graph with plain tensor ops (so the checks
also run under XLA, where ``tf.debugging`` asserts are dropped, and under ``tf.distribute``),
keeps the *first* fault in a small register, and does not write non-finite weights.  After
every ``train_function`` call the sampler reads the register and raises a :class:`SamplerError`
naming the step, the chain slot, its temperature and learning rate, and the offending value.

A fault is one of :class:`Fault` (messages in :data:`KINDS`); :func:`step_checks` builds every
check of a step, in :class:`Fault` order; the register is a float64 ``[5]`` vector
``(code, step, chain, value, extra)`` that is not part of the saved state.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tf_vrre import errors, numerics
from tf_vrre.sgmcmc import distribute


class Fault(enum.IntEnum):
    """The invariants of a train step, listed in the order :func:`step_checks` checks them (a
    step reports its first failing check; energy and gradient are checked chain by chain).
    The values are the codes stored in the fault register."""

    LEARNING_RATE = 6
    TEMPERATURE = 4
    TEMPERATURE_ORDER = 5
    NLL_LENGTH = 8
    INPUT = 9
    ENERGY = 1
    GRADIENT = 2
    CORRECTION = 7
    WEIGHTS = 3


KINDS = {
    Fault.ENERGY: (
        "energy",
        "the mini-batch energy of chain {chain} is not finite ({value}; diverged?). Lower learning_rates: "
        "they multiply the N-scaled gradient (eta = 2e-6 at N = 50000 is SGD lr 0.1)",
    ),
    Fault.GRADIENT: (
        "gradient",
        "the gradient of chain {chain} is not finite (diverged, or a non-finite input / label)",
    ),
    Fault.WEIGHTS: ("weights", "the updated weights of chain {chain} are not finite; the update was not applied"),
    Fault.TEMPERATURE: (
        "temperature",
        f"{numerics.TEMPERATURES.label}: chain {{chain}} has temperature {{value}}; "
        f"it must be {numerics.TEMPERATURES.allowed()}",
    ),
    Fault.TEMPERATURE_ORDER: (
        "temperature",
        "temperatures must stay strictly increasing across chains (non-decreasing "
        "without swaps): chain {chain} has {value}, not above chain {prev}'s",
    ),
    Fault.LEARNING_RATE: (
        "learning_rate",
        f"{numerics.LEARNING_RATES.label}: chain {{chain}} has learning rate "
        f"{{value}}; it must be {numerics.LEARNING_RATES.allowed()}",
    ),
    Fault.CORRECTION: (
        "correction",
        f"{numerics.CORRECTION.label} is {{value}}; it must be a finite number {numerics.CORRECTION.allowed()}",
    ),
    Fault.INPUT: (
        "input",
        "the mini-batch holds {value} non-finite input value(s) (NaN or inf in x); this is the "
        "data, not a divergence: clean or impute the inputs (e.g. np.isfinite(x).all(axis=...))",
    ),
    Fault.NLL_LENGTH: (
        "nll",
        "nll returned {value} values for a batch of {extra}; it must return one negative "
        "log-likelihood per example (shape [batch], no reduction)",
    ),
}
DIVERGENCE = (Fault.ENERGY, Fault.GRADIENT, Fault.WEIGHTS)


class SamplerError(errors.TfVrreError, tf.errors.InvalidArgumentError):
    """A runtime invariant of the sampler failed (see :data:`KINDS`).

    Attributes: ``kind`` (e.g. ``"temperature"``), ``step``, ``chain`` (slot), ``value``.
    """

    def __init__(self, message: str, kind: str, step: int, chain: int, value: float):
        super().__init__(None, None, message)
        self.kind, self.step, self.chain, self.value = kind, step, chain, value


class DivergenceError(SamplerError):
    """A chain's energy, gradient or updated weights are not finite."""


class InvariantError(SamplerError):
    """A hyperparameter in force or the likelihood's shape broke an invariant."""


def check(ok: Any, code: Fault, chain: Any, value: Any, extra: Any = 0.0) -> tuple:
    """One in-graph check: ``(ok, code, chain, value, extra)`` with ``ok`` a bool scalar."""
    return (
        tf.convert_to_tensor(ok),
        code,
        tf.cast(chain, tf.float64),
        tf.cast(value, tf.float64),
        tf.cast(extra, tf.float64),
    )


def per_chain(ok: Any, code: Fault, values: Any) -> list[tuple]:
    """Checks of a ``[K]`` bool vector ``ok`` with ``values`` ``[K]``: one check per chain."""
    ok, values = tf.convert_to_tensor(ok), tf.convert_to_tensor(values)
    return [check(ok[h], code, h, values[h]) for h in range(ok.shape[0])]


def in_range(values: tf.Tensor, rule: numerics.HyperparameterRule, swaps: bool) -> tf.Tensor:
    """Bool tensor: ``values`` finite and above ``rule.MINIMUM`` (or at it, where the
    :class:`tf_vrre.numerics.HyperparameterRule` allows 0 for a sampler that swaps when ``swaps``)."""
    above = values >= rule.MINIMUM if rule.allows_zero(swaps) else values > rule.MINIMUM
    return tf.math.logical_and(above, tf.math.is_finite(values))


def hyperparameter_checks(learning_rates: Any, temperatures: Any, swaps: bool) -> list[tuple]:
    """The rules of :mod:`tf_vrre.numerics` on the values in force: learning rates > 0;
    temperatures > 0 with swaps (>= 0 without), strictly increasing (non-decreasing without swaps)."""
    lrs, temps = tf.cast(learning_rates, tf.float64), tf.cast(temperatures, tf.float64)
    checks = per_chain(in_range(lrs, numerics.LEARNING_RATES, swaps), Fault.LEARNING_RATE, lrs)
    checks += per_chain(in_range(temps, numerics.TEMPERATURES, swaps), Fault.TEMPERATURE, temps)
    if temps.shape[0] > 1:
        order = tf.math.greater if swaps else tf.math.greater_equal  # without swaps equal rungs are allowed
        checks += [
            check(order(temps[h], temps[h - 1]), Fault.TEMPERATURE_ORDER, h, temps[h]) for h in range(1, temps.shape[0])
        ]
    return checks


def nll_length_check(nll: tf.Tensor, x: Any) -> tuple:
    """The per-example NLL has one value per example: ``ValueError`` at trace time when both
    lengths are static, else an in-graph check."""
    n = distribute.batch_size(x)
    got, want = nll.shape[0], tf.nest.flatten(x)[0].shape[0]
    if got is not None and want is not None and got != want:
        raise ValueError(
            f"nll returned {got} values for a batch of {want}; it must return one negative "
            "log-likelihood per example (shape [batch], no reduction)"
        )
    return check(tf.equal(tf.shape(nll)[0], n), Fault.NLL_LENGTH, 0, tf.shape(nll)[0], n)


def input_check(x: Any, split_batch: bool = True) -> tuple:
    """The floating inputs of the mini-batch are finite (a NaN feature is named as the data's,
    before the energy it makes non-finite is taken for a divergence); with ``split_batch`` (each
    replica holds a slice of the batch) the count is all-reduced, so every replica sees the same."""
    floats = [t for t in tf.nest.flatten(x) if t.dtype.is_floating]
    bad = (
        tf.add_n([tf.reduce_sum(tf.cast(~tf.math.is_finite(t), tf.float64)) for t in floats])
        if floats
        else tf.constant(0.0, tf.float64)
    )
    if split_batch:
        bad = distribute.all_reduce(bad)
    return check(tf.equal(bad, 0.0), Fault.INPUT, 0, bad)


def step_checks(
    lrs: tf.Tensor,
    temps: tf.Tensor,
    forward: Any,
    x: Any,
    nll_sums: tf.Tensor,
    overflow: tf.Tensor,
    updated: tf.Tensor,
    correction: tf.Tensor | None = None,
    slots: Any = None,
) -> list[tuple]:
    """Every invariant of one train step, in :class:`Fault` order: the hyperparameters in force
    (a sampler that swaps passes its swap's ``correction``), the NLL's length, per chain a finite energy (``nll_sums``:
    all-reduced ``[K]``, so every replica sees the same) after finite inputs ``x`` and finite gradients (unless a float16
    ``overflow`` of the loss-scaled gradients explains them), the swap's ``correction`` (with
    swaps) and the ``updated`` ``[K]`` flags of finite new weights.  ``slots``: the slot (rung)
    each chain of ``forward`` is reported under (default ``0..K-1``; chain-per-replica placement:
    this replica's chain and its rung)."""
    checks = hyperparameter_checks(lrs, temps, correction is not None)
    checks.append(nll_length_check(forward.nlls[0], x))
    checks.append(input_check(x, split_batch=slots is None))  # chain-per-replica: every replica has the whole batch
    slots = list(range(len(forward.grads))) if slots is None else list(slots)
    for h, grads in enumerate(forward.grads):
        checks.append(check(tf.math.is_finite(nll_sums[h]), Fault.ENERGY, slots[h], nll_sums[h]))
        checks.append(check(tf.logical_or(all_finite(grads), overflow), Fault.GRADIENT, slots[h], 0.0))
    if correction is not None:
        checks.append(check(in_range(correction, numerics.CORRECTION, True), Fault.CORRECTION, 0, correction))
    ok = tf.logical_or(updated, overflow)
    checks += [check(ok[h], Fault.WEIGHTS, slots[h], 0.0) for h in range(len(forward.grads))]
    return checks


def all_finite(tensors: Sequence[Any]) -> tf.Tensor:
    """True if every tensor of the list is finite."""
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors]) if tensors else tf.constant(True)


class FaultRegister:
    """The first fault of a run: ``(code, step, chain, value, extra)``, float64, kept across steps.

    The variable is deliberately not a tracked sampler weight (not saved; old files keep their
    layout); under a strategy every replica computes the same checks from all-reduced values.
    With ``strategy`` (chain-per-replica placement) the variable is created per replica by the
    caller: each replica checks its own chain, and the host reports the earliest fault of any.
    """

    def __init__(self, strategy: Any = None):
        self.strategy = strategy
        self.variable = keras.Variable(np.zeros(5), dtype="float64", trainable=False, name="fault_register")

    def held(self) -> np.ndarray:
        """The held fault ``(code, step, chain, value, extra)``; of all replicas, the earliest
        (step, then chain slot) with ``strategy``."""
        if self.strategy is None:
            return np.asarray(self.variable.numpy())
        rows = [np.asarray(part.numpy()) for part in self.strategy.experimental_local_results(self.variable.value)]
        faults = [r for r in rows if r[0] > 0]
        return min(faults, key=lambda r: (r[1], r[2])) if faults else rows[0]

    def record(self, step: tf.Tensor, checks: Sequence[tuple]) -> None:
        """Keeps the first failing check of ``checks`` (in order) unless a fault is already held."""
        if not checks:
            return
        oks = tf.stack([c[0] for c in checks])
        rows = tf.stack(
            [
                tf.stack([tf.constant(float(c[1]), tf.float64), tf.cast(step, tf.float64), c[2], c[3], c[4]])
                for c in checks
            ]
        )
        first = tf.argmin(tf.cast(oks, tf.int32))  # index of the first False (0 if all True)
        new = tf.where(tf.reduce_all(oks), tf.zeros([5], tf.float64), tf.gather(rows, first))  # not rows[first]: XLA
        # compiles a strided slice's begin as a constant, i.e. once per distinct value
        held = tf.convert_to_tensor(self.variable)
        self.variable.assign(tf.where(held[0] > 0, held, new))

    def clear(self) -> None:
        self.variable.assign(np.zeros(5))

    def raise_if_set(self, learning_rates: Sequence[float], temperatures: Sequence[float]) -> None:
        """Raises the :class:`SamplerError` of the held fault (host side), then clears it."""
        code, step, chain, value, extra = (float(v) for v in self.held())
        if code == 0:
            return
        self.clear()
        code, step, chain = Fault(int(code)), int(step), int(chain)
        kind, text = KINDS[code]
        detail = text.format(chain=chain, value=_fmt(value), prev=chain - 1, extra=_fmt(extra))
        h = min(chain, len(temperatures) - 1)
        message = (
            f"tf_vrre: at step {step}, chain slot {chain} (temperature {_fmt(temperatures[h])}, "
            f"learning rate {_fmt(learning_rates[h])}): {detail}"
        )
        cls = DivergenceError if code in DIVERGENCE else InvariantError
        raise cls(message, kind, step, chain, value)


def _fmt(value):
    value = float(value)
    return f"{value:.6g}" if np.isfinite(value) else str(value)


def checked(sampler: Any, train_function: Callable) -> Callable:
    """``train_function`` followed by :meth:`FaultRegister.raise_if_set` of ``sampler._faults``
    (wrapped once; the learning rates and temperatures in force, ``sampler.state.ladder``, name
    the chain's state)."""
    if getattr(train_function, "_tf_vrre_checked", False):
        return train_function

    def run(iterator):
        logs = train_function(iterator)
        try:
            ladder = sampler.state.ladder
            sampler._faults.raise_if_set(ladder.learning_rate.numpy(), ladder.temperature.numpy())
        except DivergenceError as err:  # the collectors flag the samples of the explosion
            sampler.listeners.divergence(err)
            raise
        return logs

    run._tf_vrre_checked = True
    return run
