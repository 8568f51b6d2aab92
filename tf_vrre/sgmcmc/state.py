"""The sampler's state, in named containers that create their variables and permute themselves.

Three containers, one per part of the algorithm:

- :class:`ChainState` - what a chain *is*: its model (weights and BatchNorm statistics) and
  its SGHMC velocities.
- :class:`SwapState` - the swap rule's memory: ``sigma2`` per adjacent pair and its window,
  counters, the last swap, ``F`` in force, the per-step record.
- :class:`VRState` - the control variates: snapshot models, their full-data energies
  ``U_hat``, cached per-example snapshot NLLs, coefficients ``c`` and their window.

Every variable is a non-trainable weight of the sampler (created through ``new_variable``, a
``keras.Model.add_weight`` wrapper), so ``.keras`` files, ``BackupAndRestore`` and
``save_weights`` capture all of it.  The containers are plain Python objects (not Keras-tracked
tuples), so the file layout is the sampler's own variables in creation order plus its
``chains`` / ``snapshots`` sub-models; keep the creation order when adding fields.

On a swap, temperatures stay with their slots and states move: :meth:`ChainState.permute` and
:meth:`VRState.permute` move slot ``perm[j]``'s state into slot ``j``.
"""

import tensorflow as tf

import tf_vrre.sgmcmc.dynamics as dyn

NEVER = -(2 ** 62)  # last_swap_step before any swap


def permute_variables(groups, perm, scale=None):
    """Moves ``groups[perm[j]]`` into ``groups[j]`` (lists of variables, one list per slot).

    ``scale``: optional ``[K]`` factors applied to the value arriving in each slot.
    """
    num = len(groups)
    for i in range(len(groups[0])):
        vals = tf.stack([tf.identity(groups[h][i]) for h in range(num)])  # copies, not live views
        new = tf.gather(vals, perm)
        for h in range(num):
            value = new[h] if scale is None else new[h] * tf.cast(scale[h], new.dtype)
            groups[h][i].assign(value)


class ChainState:
    """The K chains: models (slot 0 is the coldest temperature) and velocities.

    Fields:
      models: K built ``keras.Model``; all their variables (weights, BN statistics) move on swaps.
      velocities: per chain, one variable per trainable weight (SGHMC / M-SGD), else ``None``.
    """

    def __init__(self, models, velocities):
        self.models = list(models)
        self.velocities = velocities

    @classmethod
    def create(cls, models, new_variable, with_velocities):
        """Velocities ``velocity_{h}_{i}`` (zeros) for every trainable weight when asked."""
        velocities = None
        if with_velocities:
            velocities = [[new_variable(f"velocity_{h}_{i}", tuple(v.shape), v.dtype)
                           for i, v in enumerate(m.trainable_weights)] for h, m in enumerate(models)]
        return cls(models, velocities)

    @property
    def trainable(self):
        """Per chain, the trainable weights (what the dynamics update)."""
        return [m.trainable_weights for m in self.models]

    def permute(self, perm, velocity_scale=None):
        """Slot ``j`` takes slot ``perm[j]``'s weights, statistics and velocities (scaled)."""
        permute_variables([m.weights for m in self.models], perm)
        if self.velocities is not None:
            permute_variables(self.velocities, perm, velocity_scale)


class SwapState:
    """Memory of the swap rule (``K`` chains, ``P = K - 1`` adjacent pairs).

    Fields:
      sigma2: float64 ``[P]``, estimate of ``Var(U~_p - U~_{p+1})`` used in the penalty.
      sigma2_ready: bool, an estimate exists (no swap before).
      swap_count, attempt_count: int64 ``[P]``, accepted / attempted swaps per pair.
      attempt_index: int64, swap attempts so far (drives the even/odd schedule).
      last_swap_step: int64, step of the last accepted swap (cooling).
      window_steps: float64, steps in the current sigma2 window.
      window_variance: float64 ``[P]``, sum of within-batch variance estimates in the window.
      last_energy: float64 ``[K]``, swap energies of the last step.
      last_log_ratio: float64 ``[P]``, log acceptance ratios of the last step.
      correction: float64, the correction factor ``F`` in force.
      log: float64 ring buffer of per-step records (``tf_vrre.record``).
      sigma2_offset: float64 ``[P, offsets]``, one sigma2 per step since the snapshot refresh
        (``CorrectedSwap(penalty="offset")`` only, else ``None``).
      offset_ready: bool ``[offsets]``, that offset has an estimate (or ``None``).
      offsets: int, number of offsets (the snapshot period ``m``; the sigma2 window without VR).
    """

    FIELDS = ("sigma2", "sigma2_ready", "swap_count", "attempt_count", "attempt_index", "last_swap_step",
              "window_steps", "window_variance", "last_energy", "last_log_ratio", "correction", "log",
              "sigma2_offset", "offset_ready", "offsets")

    def __init__(self, **variables):
        for name in self.FIELDS:
            setattr(self, name, variables.get(name))

    @classmethod
    def create(cls, new_variable, num_chains, rule, log_shape, offsets):
        """Creates the variables (names as in saved files) with their initial values; the
        per-offset table only for ``rule.penalty == "offset"`` (files of other rules keep their layout)."""
        K, P = num_chains, max(num_chains - 1, 1)
        variables = dict(
            sigma2=new_variable("sigma2", (P,), "float64"),
            sigma2_ready=new_variable("sigma2_ready", (), "bool", False),
            swap_count=new_variable("swap_count", (P,), "int64"),
            attempt_count=new_variable("attempt_count", (P,), "int64"),
            attempt_index=new_variable("attempt_index", (), "int64"),
            last_swap_step=new_variable("last_swap_step", (), "int64", NEVER),
            window_steps=new_variable("window_steps", (), "float64"),
            window_variance=new_variable("window_variance", (P,), "float64"),
            last_energy=new_variable("last_energy", (K,), "float64"),
            last_log_ratio=new_variable("last_log_ratio", (P,), "float64"),
            correction=new_variable("correction", (), "float64", rule.initial_correction()),
            log=new_variable("swap_log", log_shape, "float64", -1))
        if rule.penalty == "offset":
            variables.update(sigma2_offset=new_variable("sigma2_offset", (P, offsets), "float64"),
                             offset_ready=new_variable("offset_ready", (offsets,), "bool", False))
        return cls(**variables, offsets=int(offsets))

    def logs(self):
        """Swap diagnostics for Keras ``logs``: totals, acceptance, ``F``, sigma2 per pair (and
        per-pair counts on a ladder)."""
        swaps, attempts = tf.reduce_sum(self.swap_count), tf.reduce_sum(self.attempt_count)
        rate = lambda a, b: tf.math.divide_no_nan(tf.cast(a, tf.float64), tf.cast(b, tf.float64))  # noqa: E731
        logs = {"swaps": swaps, "swap_attempts": attempts, "correction": self.correction,
                "accept_rate": rate(swaps, attempts)}
        num_pairs = self.swap_count.shape[0]
        for p in range(num_pairs):
            logs[f"sigma2_{p}"] = self.sigma2[p]
            if num_pairs > 1:
                logs[f"swaps_{p}"] = self.swap_count[p]
                logs[f"accept_rate_{p}"] = rate(self.swap_count[p], self.attempt_count[p])
        return logs


class VRState:
    """Control-variate state of the K chains.

    Snapshots, ``U_hat`` and the cached NLLs move with the chain states on a swap; the
    coefficients ``c`` and their window belong to the slot.

    Fields:
      snapshots: K ``keras.Model`` holding ``beta_hat`` (copied from the chains every ``m`` steps).
      snapshot_energy: float64 ``[K]``, ``U_hat = sum_i l(x_i | beta_hat)`` over the reference data.
      coefficient: float64 ``[K]``, the control-variate coefficient ``c``.
      window_cov, window_var: float64 ``[K]``, sums of within-batch Cov / Var for adaptive ``c``.
      snapshot_nll: float32 ``[K, N]`` per-example snapshot NLLs of the last full pass, or ``None``.
    """

    def __init__(self, snapshots, snapshot_energy, coefficient, window_cov, window_var, snapshot_nll):
        self.snapshots = list(snapshots)
        self.snapshot_energy = snapshot_energy
        self.coefficient = coefficient
        self.window_cov = window_cov
        self.window_var = window_var
        self.snapshot_nll = snapshot_nll

    @classmethod
    def create(cls, snapshots, new_variable, control_variates, data_size):
        K = len(snapshots)
        cv = control_variates
        return cls(
            snapshots,
            snapshot_energy=new_variable("snapshot_energy", (K,), "float64"),
            coefficient=new_variable("coefficient", (K,), "float64",
                                     cv.initial_coefficient if cv.adaptive else cv.coefficient),
            window_cov=new_variable("window_cov", (K,), "float64"),
            window_var=new_variable("window_var", (K,), "float64"),
            snapshot_nll=new_variable("snapshot_nll", (K, data_size), "float32") if cv.cache else None)

    def permute(self, perm):
        """Slot ``j`` takes slot ``perm[j]``'s snapshot, ``U_hat`` and cached NLLs."""
        permute_variables([s.weights for s in self.snapshots], perm)
        self.snapshot_energy.assign(tf.gather(self.snapshot_energy, perm))
        if self.snapshot_nll is not None:
            self.snapshot_nll.assign(tf.gather(self.snapshot_nll, perm))


def exchange(chain_state, vr_state, perm, hyper, tensors):
    """Moves every chain state by ``perm`` (slot ``j`` <- slot ``perm[j]``).

    ``hyper = (learning_rates, temperatures)`` of the slots (velocities are rescaled by
    :func:`tf_vrre.dynamics.velocity_scale`); ``tensors``: lists of K per-chain tensors of this
    step, returned permuted the same way.
    """
    lrs, temps = hyper
    scale = None
    if chain_state.velocities is not None:
        scale = dyn.velocity_scale(tf.gather(lrs, perm), tf.gather(temps, perm), lrs, temps)
    chain_state.permute(perm, scale)
    if vr_state is not None:
        vr_state.permute(perm)
    num = len(chain_state.models)
    return [tf.unstack(tf.gather(tf.stack(t), perm), num=num) for t in tensors]


def exchange_forward(chain_state, vr_state, results, hyper, forward):
    """Step 4b: if a swap was accepted, moves the states and this step's
    :class:`tf_vrre.gradients.Forward` (gradients, NLLs, predictions, priors) with them, so the
    update that follows is exactly "from the swapped state"."""
    num = len(chain_state.models)
    tensors = [list(t) for t in zip(*forward.grads)] + [forward.nlls, forward.preds]
    out = tf.cond(tf.reduce_any(results.accepted),
                  lambda: exchange(chain_state, vr_state, results.permutation, hyper, tensors), lambda: tensors)
    per_var = out[:-2]
    grads = [list(g) for g in zip(*per_var)] if per_var else [[] for _ in range(num)]
    priors = tf.unstack(tf.gather(tf.stack(forward.priors), results.permutation), num=num)
    return forward._replace(grads=grads, nlls=out[-2], preds=out[-1], priors=priors)


class LossScale:
    """Dynamic loss scale of float16 policies (as ``keras.optimizers.LossScaleOptimizer``).

    Fields: ``scale`` (float32; starts at ``initial``), ``good_steps`` (int64).  After a step with
    non-finite gradients the scale halves (and the step's update is skipped); after ``period``
    finite steps in a row it doubles.
    """

    def __init__(self, new_variable, initial=2.0 ** 15, period=2000):
        self.scale = new_variable("loss_scale", (), "float32", initial)
        self.good_steps = new_variable("loss_scale_good_steps", (), "int64")
        self.period = int(period)

    def update(self, finite):
        good = tf.where(finite, self.good_steps + 1, tf.zeros_like(self.good_steps))
        grow = good >= self.period
        scale = tf.where(finite, tf.where(grow, self.scale * 2.0, self.scale), self.scale / 2.0)
        self.scale.assign(tf.maximum(scale, 1e-30))
        self.good_steps.assign(tf.where(grow, tf.zeros_like(good), good))
