"""The Keras model that runs K replica-exchange SG-MCMC chains under ``model.fit``.

``train_step`` is the algorithm's recipe, one call per step into the module that owns it:

1. *Refresh* (VR only, ``step % m == 0``): snapshots <- chains, ``U_hat`` by a full pass
   (:func:`tf_vrre.control_variates.refresh`).
2. *Forward + gradient* of every chain on ``B_k`` (:func:`tf_vrre.gradients.forward_and_gradients`).
3. *Swap energies* ``U~_h`` on ``B_k`` at the current weights, read off step 2's forward where
   possible (:class:`tf_vrre.swap_energy.SwapEnergyEstimator`).
4. *Swap*: pairs proposed and decided with the corrected rule (:meth:`tf_vrre.CorrectedSwap.attempt`);
   accepted swaps move whole chain states (:mod:`tf_vrre.state`) and the gradients just computed.
5. *Update*: SGLD / SGHMC / M-SGD with each slot's current lr and temperature
   (:class:`tf_vrre.dynamics.Diffusion`).
6. *Bookkeeping*: the sigma2 window (:meth:`tf_vrre.CorrectedSwap.update_sigma2`), the adaptive
   coefficient (:func:`tf_vrre.control_variates.update_coefficient`), the per-step record
   (:mod:`tf_vrre.record`).

Slot 0 always holds the coldest temperature: **``sampler.cold_model`` is the sampled chain**
(states are exchanged, temperatures stay with their slots).  Velocities that move to a slot
with another ``(lr, tau)`` are rescaled by ``sqrt(lr_new tau_new / (lr_old tau_old))``, which maps
the stationary velocity law ``N(0, lr tau)`` of one slot onto the other's.
"""

import inspect
import numbers

import keras
import numpy as np
import tensorflow as tf

from tf_vrre import _keras_compat as kc
import tf_vrre.sampler.hyperparameters as _hyper
import tf_vrre.sampler.batch as bt
import tf_vrre.sampler.construction as construction
from tf_vrre.sgmcmc import control_variates as cvs
import tf_vrre.sampler.input_checks as data_checks
from tf_vrre.sgmcmc import distribute
from tf_vrre.sgmcmc import dynamics as dyn
from tf_vrre.sgmcmc import energy as en
import tf_vrre.sampler.invariants as faults
from tf_vrre.sgmcmc import gradients
import tf_vrre.sampler.datasets as indexed_data
from tf_vrre.sgmcmc import swap_record as record
import tf_vrre.sampler.saving as saving
from tf_vrre.sgmcmc import seeds
from tf_vrre.sgmcmc import swaps as sw
import tf_vrre.sampler.xla as xla
from tf_vrre.sampler.batch import INDEX_KEY, unpack  # noqa: F401  (public names of this module)
from tf_vrre.sampler.chain_metrics import ChainMetrics
from tf_vrre.sampler.listeners import SamplerListeners
from tf_vrre.sgmcmc.swap_record import swap_log_columns  # noqa: F401
from tf_vrre.sgmcmc.state import exchange, exchange_forward

_FIT_SIGNATURE = inspect.signature(keras.Model.fit)
SWAP_LOG_CAPACITY = record.CAPACITY
"""Rows (steps) of the in-graph swap record ring buffer read by ``tf_vrre.SwapLogger``."""


def require_sampler(model, who):
    """``model`` if it is a :class:`ReplicaExchangeSampler`, else a ``TypeError`` naming ``who``."""
    if not isinstance(model, ReplicaExchangeSampler):
        raise TypeError(f"{who} works with a tf_vrre.ReplicaExchangeSampler, got {type(model).__name__}")
    return model


@keras.saving.register_keras_serializable(package="tf_vrre")
class ReplicaExchangeSampler(ChainMetrics, keras.Model):
    """K chains of SGLD / SGHMC with (variance-reduced) replica exchange, trained by ``fit``.

    Each chain ``h`` (temperature ``tau_h``, lr ``eta_h``) follows, for SGHMC::

        v_h    <- momentum * v_h - eta_h grad U_B(beta_h) + sqrt(2 (1-momentum) eta_h tau_h) xi
        beta_h <- beta_h + v_h

    (SGLD: ``beta_h <- beta_h - eta_h grad U_B + sqrt(2 eta_h tau_h) xi``; M-SGD: no noise),
    with ``U_B = (N/n) sum_B l + wd/2 ||beta||^2``.  Adjacent chains swap states with
    probability ``min(1, exp(delta (U~_lo - U~_hi - delta sigma2 / F)))``; ``U~`` is the
    mini-batch energy or, with ``variance_reduction``, the control-variate energy.

    Units: ``eta`` multiplies the *N-scaled* gradient: ``eta = 2e-6`` with ``N = 50000`` is SGD
    lr 0.1 on the mean loss; ``weight_decay = 25`` is 5e-4 on the mean loss.

    Args:
      model_fn: callable returning a *built* ``keras.Model`` (one per chain; registered with
        ``keras.saving.register_keras_serializable`` for ``get_config``).
      data_size: ``N``, the number of training examples (required).
      num_chains: ``K >= 1``.  ``K = 1``: SGLD / SGHMC / M-SGD baselines.
      temperatures: per-chain ``tau`` (number, schedule, or list of K), strictly increasing.
        Default 1.0 for one chain (0 for M-SGD); required for ``K >= 2``.
      learning_rates: per-chain ``eta > 0`` (number, schedule, or list of K).
      dynamics: ``"sghmc"`` (default), ``"sgld"`` or ``"msgd"`` (SGHMC at temperature 0).
      momentum: SGHMC momentum in ``[0, 1)``; friction is ``1 - momentum``.
      weight_decay: Gaussian prior precision ``wd >= 0`` (prior energy ``wd/2 ||beta||^2``).
      swap: ``"auto"`` (``CorrectedSwap()`` when ``K >= 2``), ``"corrected"``, ``"none"``/``None``
        (independent chains) or a ``tf_vrre.CorrectedSwap``.
      variance_reduction: ``None`` or a ``tf_vrre.ControlVariates`` (VR-reSG*; then call
        ``set_reference_data`` before ``fit``).
      energy_mode: ``"train"`` (energies from the gradient's ``training=True`` forward, no extra
        cost), ``"inference"`` (extra ``training=False`` forwards; exact per-example energies
        for nets with BatchNorm/Dropout), or ``"auto"`` (inference iff the model has such layers).
      nll: optional ``callable(x, y, y_pred) -> [batch]`` per-example negative log-likelihood;
        otherwise the loss given to ``compile`` is used (unreduced).
      seed: integer seed of the noise, swaps and (via ``keras.utils.set_random_seed``) the
        initial weights; ``None`` draws one.
      independent_init: if False (default) every chain starts from chain 0's initial weights.

    Example:
      >>> x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
      >>> y = (x[:, 0] > 0).astype("int64")
      >>> def build_net():
      ...     return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
      >>> sampler = ReplicaExchangeSampler(build_net, data_size=64, num_chains=2,
      ...     temperatures=[0.01, 0.05], learning_rates=[1e-3, 1.5e-3], weight_decay=1.0,
      ...     swap=tf_vrre.CorrectedSwap(correction=2.0),
      ...     variance_reduction=tf_vrre.ControlVariates(period=4), seed=1)
      >>> sampler.set_reference_data((x, y))
      >>> sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      ...                 metrics=["accuracy"])
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0)
      >>> sampler.cold_model.predict(x[:3], verbose=0).shape
      (3, 2)
    """

    def __init__(self, model_fn, data_size=None, num_chains=2, temperatures=None,
                 learning_rates=1e-6, dynamics="sghmc", momentum=0.9, weight_decay=0.0,
                 swap="auto", variance_reduction=None, energy_mode="auto", nll=None,
                 seed=None, independent_init=False, **kwargs):
        super().__init__(**kwargs)
        construction.check_scalars(model_fn, data_size, num_chains, dynamics, momentum, weight_decay)
        if energy_mode not in en.ENERGY_MODES:
            raise ValueError(f"energy_mode must be one of {en.ENERGY_MODES}, got {energy_mode!r}")
        if nll is not None:
            en.check_nll_callable(nll)
        num_chains = int(num_chains)
        swap_rule = sw.resolve(swap, num_chains)
        cvs.check(variance_reduction, swap_rule)
        temps, lrs = _hyper.validated(temperatures, learning_rates, num_chains, dynamics, swap_rule is not None)
        if seed is None:
            seed = int(np.random.randint(0, 2 ** 31 - 1))
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an integer or None, got {seed!r}")

        self.model_fn = model_fn
        self.data_size = int(data_size)
        self.num_chains = num_chains
        self.dynamics = dynamics
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.swap_rule = swap_rule
        self._swap = None if swap_rule is None else swap_rule.resolved(variance_reduction is not None)
        self.variance_reduction = variance_reduction
        self.energy_mode_arg = energy_mode
        self.nll = nll
        self.independent_init = bool(independent_init)
        self.seed = int(seed)
        self._temperature_values = temps
        self._learning_rate_values = lrs
        self._diffusion = dyn.Diffusion(dynamics, momentum)

        keras.utils.set_random_seed(self.seed)
        self.chains = [construction.build_chain(model_fn) for _ in range(num_chains)]
        data_checks.check_distinct_models(self.chains)
        construction.tie_initial_weights(self.chains, self.independent_init)
        ref = self.chains[0]
        self.energy_mode = energy_mode
        if energy_mode == "auto":
            self.energy_mode = "inference" if en.has_training_dependent_layers(ref) else "train"
        # Cached per-example snapshot NLLs equal a snapshot forward only if energies do not
        # depend on the rest of the batch (inference mode, or no BN/Dropout-like layers).
        self._cache_exact = bool(variance_reduction is not None and variance_reduction.cache and (
            self.energy_mode == "inference" or not en.has_training_dependent_layers(ref)))
        construction.create_state(self, _hyper.initial_values(temps), _hyper.initial_values(lrs))
        object.__setattr__(self, "_faults", faults.FaultRegister())  # not a saved weight (see faults.py)
        object.__setattr__(self, "listeners", SamplerListeners())  # divergence / checkpoint-commit listeners
        if variance_reduction is not None:
            data_checks.check_distinct_models(self.chains + self.snapshots)
        self._reference = None  # a tf_vrre.control_variates.Reference
        self._chain_loss = [keras.metrics.Mean(name=f"loss_{h}") for h in range(1, num_chains)]
        self._chain_metrics = []
        self._nll_fn = nll
        self.built = True
        if nll is not None:
            self.compile()

    @property
    def swap_penalty(self):
        """The swap penalty in force (``CorrectedSwap(penalty="auto")`` resolved), or ``None``."""
        return None if self._swap is None else self._swap.penalty

    @property
    def cold_model(self):
        """The sampled (coldest, slot 0) chain: a plain ``keras.Model``."""
        return self.chains[0]

    def call(self, inputs, training=False):
        """Prediction of the cold chain."""
        return self.chains[0](inputs, training=training)

    # ---- public state (documented names; the variables live in the state containers) ------
    velocities = property(lambda self: self.chain_state.velocities)
    sigma2 = property(lambda self: self.swap_state.sigma2)
    sigma2_ready = property(lambda self: self.swap_state.sigma2_ready)
    swap_count = property(lambda self: self.swap_state.swap_count)
    attempt_count = property(lambda self: self.swap_state.attempt_count)
    attempt_index = property(lambda self: self.swap_state.attempt_index)
    last_swap_step = property(lambda self: self.swap_state.last_swap_step)
    last_energy = property(lambda self: self.swap_state.last_energy)
    last_log_ratio = property(lambda self: self.swap_state.last_log_ratio)
    correction = property(lambda self: self.swap_state.correction)
    swap_log = property(lambda self: self.swap_state.log)
    snapshot_energy = property(lambda self: self.vr_state.snapshot_energy)
    coefficient = property(lambda self: self.vr_state.coefficient)
    snapshot_nll = property(lambda self: self.vr_state.snapshot_nll)

    # ---- user-facing setters ------------------------------------------------------------
    def set_temperatures(self, temperatures):
        """Assigns new per-chain temperatures (strictly increasing, validated)."""
        t = _hyper.checked_temperatures(temperatures, self.num_chains, self.swap_rule is not None)
        self.temperature.assign(np.asarray(t, np.float32))

    def set_learning_rates(self, learning_rates):
        """Assigns new per-chain learning rates (> 0)."""
        v = _hyper.checked_learning_rates(learning_rates, self.num_chains)
        self.learning_rate.assign(np.asarray(v, np.float32))

    def set_correction(self, correction):
        """Assigns a new correction factor ``F > 0`` (not with a scheduled ``F``)."""
        self.correction.assign(_hyper.checked_correction(correction, self.swap_rule))

    def set_reference_data(self, data, batch_size=None):
        """Sets the full training data used for the snapshot energies ``U_hat`` (VR only).

        Args:
          data: ``(x, y)`` arrays, ``x`` alone (unlabeled models), or a ``tf.data.Dataset``
            yielding batches with the same structure as the training batches.  It must hold
            exactly ``data_size`` examples with the preprocessing of the mini-batch energies
            (normally: no augmentation).
          batch_size: full-pass batch size (default ``variance_reduction.batch_size``).
        """
        if self.variance_reduction is None:
            raise ValueError("set_reference_data: the sampler has no variance_reduction")
        batch_size = self.variance_reduction.batch_size if batch_size is None else batch_size
        data_checks.check_batch_size("set_reference_data", batch_size)
        if not isinstance(data, tf.data.Dataset):
            data = data_checks.check_reference(self, data)  # structure, dtypes, lengths, finite, labels
        self._reference = cvs.make_reference(data, batch_size, self.data_size)
        self._reference_checked = data_checks.loss_key(self)
        self.train_function = None  # retrace with the new dataset

    def make_dataset(self, batch_size, shuffle=True, seed=None, repeat=False, drop_remainder=False):
        """Training batches drawn from the reference data, each carrying its example indices.

        Elements are ``(x, y, {"example_index": i})`` (``y`` is zeros for unlabeled data; a
        sample weight in the reference data is carried as ``"sample_weight"``).  With
        ``ControlVariates(cache=True)`` the snapshot energies of these batches are read from the
        per-example table of the last full pass, so VR costs no snapshot forward per step.
        Do not add random augmentation to these batches (the cache would no longer match).

        The order is a pure function of the seed and the step counter (:mod:`tf_vrre.indexed_data`):
        a resumed run sees exactly the batches of the uninterrupted one, and a second ``fit``
        continues the stream instead of restarting it.

        Args:
          batch_size: mini-batch size ``n``.
          shuffle: a new permutation every data epoch (seeded by ``seed``, default the
            sampler's seed); ``False``: the reference order.
          repeat: an endless stream (then pass ``steps_per_epoch`` to ``fit``), starting at
            batch ``step_counter``; otherwise each iterator yields one whole data epoch, number
            ``ceil(step_counter / batches_per_epoch)``.
          drop_remainder: drop the last partial batch of every data epoch.
        """
        if self._reference is None or isinstance(self._reference.source, tf.data.Dataset):
            raise ValueError("make_dataset: call set_reference_data with in-memory arrays first")
        data_checks.check_batch_size("make_dataset", batch_size, self.data_size)
        for name, value in (("shuffle", shuffle), ("repeat", repeat), ("drop_remainder", drop_remainder)):
            if not isinstance(value, bool):
                raise TypeError(f"make_dataset: {name} must be True or False, got {value!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise TypeError(f"make_dataset: seed must be an integer or None, got {seed!r}")
        source = self._reference.source
        parts = list(source) if isinstance(source, (tuple, list)) else [source]
        key = seeds.fold(seeds.base_key(self.seed if seed is None else seed), seeds.DATA)
        return indexed_data.indexed_dataset(parts, self.step_counter, batch_size, key, shuffle=shuffle,
                                            repeat=repeat, drop_remainder=drop_remainder)

    def fit(self, *args, **kwargs):
        """``keras.Model.fit`` after host-side checks of array inputs and the reference data
        (:func:`tf_vrre.data_checks.check_fit`: lengths, dtypes, finite values, labels within the
        model's classes, sample weights, ``batch_size <= data_size``; a warning if the training
        arrays do not hold ``data_size`` examples): bad data fails before any graph runs, with an
        error naming the argument."""
        bound = _FIT_SIGNATURE.bind(self, *args, **kwargs)
        bound.apply_defaults()
        data_checks.check_fit(self, bound.arguments)
        try:
            return super().fit(*args, **kwargs)
        finally:  # the callbacks of this fit registered them in on_train_begin
            self.listeners.clear()

    # ---- compile / metrics ------------------------------------------------------------------
    def compile(self, loss=None, metrics=None, weighted_metrics=None, run_eagerly=False,
                steps_per_execution=1, jit_compile=None, **kwargs):
        """Configures the energy and metrics (there is no optimizer: the sampler updates weights).

        Args:
          loss: Keras loss used, unreduced, as the per-example NLL (unless ``nll`` was given).
          metrics, weighted_metrics: as in ``keras.Model.compile``; evaluated on the cold chain
            (plain names) and on every other chain ``h`` (names suffixed ``_h``).
          jit_compile: ``True``, ``False`` or ``"auto"``: XLA on TPU and GPU, and on a single CPU
            device for models without convolutions (see :mod:`tf_vrre.xla`, where the
            measurements behind the rule are); ``None`` (default): ``$TF_VRRE_JIT_COMPILE``, else
            ``"auto"``.  ``self.jit_compile`` holds the choice.
        """
        if kwargs.get("optimizer") is not None:
            raise TypeError("compile: ReplicaExchangeSampler updates the weights itself; "
                            "do not pass an optimizer")
        kwargs.pop("optimizer", None)
        if loss is not None and self.nll is not None:
            raise ValueError("compile: the sampler was built with nll=...; do not also pass loss")
        if loss is None and self.nll is None:
            raise ValueError("compile: give loss= (a per-example negative log-likelihood, e.g. "
                             "SparseCategoricalCrossentropy(from_logits=True)) or build the "
                             "sampler with nll=callable")
        use_xla = xla.resolve_jit_compile(jit_compile, self.chains[0]) and not run_eagerly
        super().compile(optimizer=None, loss=None, metrics=metrics,
                        weighted_metrics=weighted_metrics, run_eagerly=run_eagerly,
                        steps_per_execution=steps_per_execution, jit_compile=use_xla, **kwargs)
        self._compile_args = {"loss": loss, "metrics": metrics, "weighted_metrics": weighted_metrics,
                              "steps_per_execution": steps_per_execution, "jit_compile": jit_compile}
        self._nll_fn = self.nll if self.nll is not None else en.resolve_nll(loss)
        self._compile_chain_metrics(metrics, weighted_metrics)
        self.train_function = None

    def get_compile_config(self):
        """Serialized ``compile`` arguments (loss, metrics, steps_per_execution, jit_compile)."""
        if not getattr(self, "_compile_args", None):
            return {}
        return {k: keras.saving.serialize_keras_object(v) for k, v in self._compile_args.items()}

    def compile_from_config(self, config):
        """Re-compiles from :meth:`get_compile_config` output (used by ``keras.saving``)."""
        if config:
            self.compile(**{k: keras.saving.deserialize_keras_object(v) for k, v in config.items()})

    # ---- energy helpers -----------------------------------------------------------------
    def _per_example_nll(self, x, y, y_pred, sample_weight):
        return en.weighted_nll(self._nll_fn, x, y, y_pred, sample_weight)

    def _energy_fn(self, model, x, y, sample_weight):
        """Per-example NLLs of ``model`` in the sampler's energy mode (snapshots, full pass)."""
        return self._per_example_nll(x, y, model(x, training=self.energy_mode == "train"), sample_weight)

    def _check_batch(self, x, y):
        bt.check(x, y, needs_labels=self.nll is None)

    # ---- swaps --------------------------------------------------------------------------
    def _permute(self, perm, lrs, temps, tensors):
        """Moves chain states by ``perm`` (slot j <- slot perm[j]); returns permuted ``tensors``."""
        return exchange(self.chain_state, self.vr_state, perm, (lrs, temps), tensors)

    def _bookkeeping(self, step, possible, results, energies, refreshed):
        """Step 6: sigma2 and adaptive-c windows (steps where a swap was possible count), then
        the per-step record."""
        weight = tf.cast(possible, tf.float64)
        rule, vr = self._swap, self.variance_reduction
        updated = rule.update_sigma2(self.swap_state, energies.variance, weight, step, self._window_period)
        if rule.penalty == "offset":
            rule.update_offsets(self.swap_state, energies.variance, weight, step)
        if energies.cross_moments is not None:
            cvs.update_coefficient(self.vr_state, energies.cross_moments, weight, step, vr)
        coefs = (tf.convert_to_tensor(self.vr_state.coefficient) if vr is not None
                 else tf.zeros([self.num_chains], tf.float64))
        record.write(self.swap_state.log, record.StepRecord(
            step, updated, refreshed, results, energies.energy, tf.convert_to_tensor(self.swap_state.sigma2), coefs))

    # ---- the train step -------------------------------------------------------------------
    def train_step(self, data):
        batch = bt.from_data(data)
        self._check_batch(batch.x, batch.y)
        step = tf.convert_to_tensor(self.step_counter)
        key = seeds.step_key(seeds.base_key(self.seed), step)
        lrs = _hyper.current(self._learning_rate_values, self.learning_rate, step)
        temps = _hyper.current(self._temperature_values, self.temperature, step)
        refreshed = tf.constant(False)
        if self.variance_reduction is not None:                                          # 1. refresh
            if self._reference is None:
                raise ValueError("variance_reduction needs the full training data: call "
                                 "sampler.set_reference_data((x_train, y_train)) before fit")
            refreshed = cvs.refresh(self.vr_state, self.chains, self._reference, self._energy_fn, step,
                                    self.variance_reduction.period)
        scale = None if self.loss_scale is None else tf.convert_to_tensor(self.loss_scale.scale)
        forward = gradients.forward_and_gradients(self.chains, batch, self._per_example_nll,  # 2. gradients
                                                  self.weight_decay, self.data_size, scale)
        if self.swap_rule is not None:
            # Why the swap reads this step's batch and the pre-update weights: Algorithm 1 of the
            # paper updates beta_k on B_k, then tests a swap of the updated beta_k on the *next*
            # batch B_{k+1}. Steps k and k+1 meet here: the weights before this step's update are
            # beta_k and this batch is B_{k+1}, so the swap test is Algorithm 1's, one step
            # shifted, and in energy_mode="train" its energies are the gradient's forward pass
            # (no extra forward). The swapped states then take this step's update, gradients
            # moved with them (exchange_forward) - see tf_vrre.sgmcmc.swap_energy.
            possible = self._swap.possible(step, self.swap_state)
            adaptive = self.variance_reduction is not None and self.variance_reduction.adaptive
            energies = self._swap_energy(batch, forward, possible, adaptive)               # 3. energies
            results = self._swap.attempt(self.swap_state, energies, temps, step, key)  # 4. swap
            forward = exchange_forward(self.chain_state, self.vr_state, results, (lrs, temps), forward)
            self._swap.count(self.swap_state, results, step, energies.energy)
        sums = distribute.all_reduce(tf.stack([tf.reduce_sum(tf.cast(v, tf.float64)) for v in forward.nlls]))
        self.batch_energy.assign(en.minibatch_energy(sums, batch.size, self.data_size, tf.stack(forward.priors)))
        overflow = tf.constant(False)
        if self.loss_scale is not None:  # float16: non-finite gradients lower the scale, skip the update
            overflow = tf.logical_not(faults.all_finite([g for gs in forward.grads for g in gs]))
            self.loss_scale.update(tf.logical_not(overflow))
        updated = self._diffusion.step(self.chain_state, forward.grads, lrs, temps, key)  # 5. update
        if self.swap_rule is not None:
            self._bookkeeping(step, possible, results, energies, refreshed)                # 6. bookkeeping
        self._faults.record(step, faults.step_checks(
            lrs, temps, forward, batch.x, sums, overflow, updated,
            None if self.swap_rule is None else results.correction))
        self._update_metrics(batch, forward)
        logs = self._step_logs(lrs, temps)
        if self.swap_rule is not None:
            logs.update({f"sigma2_used_{p}": results.sigma2[p] for p in range(self.num_chains - 1)})
        # After the batch is consumed (make_dataset reads the counter when its iterator starts;
        # without the data dependency the increment may run before get_next).
        with tf.control_dependencies([sums]):  # sums of this batch's NLLs: data-dependent
            self.step_counter.assign_add(1)
        return distribute.reducible_logs(logs)

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        """As Keras, but from the first replica's batch (:func:`tf_vrre.distribute.symbolic_build`);
        overrides a private Keras method (:data:`tf_vrre._keras_compat.SYMBOLIC_BUILD_HOOK`)."""
        if not kc.has_distribute_strategy(self) or iterator is None:
            return super()._maybe_symbolic_build(iterator, data_batch)
        distribute.symbolic_build(self, iterator)

    def make_train_function(self, force=False):
        """Keras' train function, followed by the host check of the in-graph fault register
        (:func:`tf_vrre.faults.checked`): a broken invariant raises a ``SamplerError``."""
        super().make_train_function(force)
        self.train_function = faults.checked(self, self.train_function)
        return self.train_function

    # ---- config ----------------------------------------------------------------------
    def get_config(self):
        """The constructor arguments, serialized; ``ValueError`` if they cannot be restored
        (e.g. an unregistered ``model_fn``), so a save fails now instead of a later load."""
        config = self._config()
        saving.check_restorable(self, config)
        return config

    def _config(self):
        ser = keras.saving.serialize_keras_object
        return {
            "name": self.name,
            "model_fn": ser(self.model_fn),
            "data_size": self.data_size,
            "num_chains": self.num_chains,
            "temperatures": _hyper.serialize(self._temperature_values),
            "learning_rates": _hyper.serialize(self._learning_rate_values),
            "dynamics": self.dynamics,
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "swap": ser(self.swap_rule) if self.swap_rule is not None else None,
            "variance_reduction": ser(self.variance_reduction) if self.variance_reduction is not None else None,
            "energy_mode": self.energy_mode_arg,
            "nll": ser(self.nll) if self.nll is not None else None,
            "seed": self.seed,
            "independent_init": self.independent_init,
        }

    def save(self, filepath, *args, **kwargs):
        """``keras.Model.save`` after checking that the config can be restored (nothing is written
        otherwise; see :func:`tf_vrre.saving.check_restorable`)."""
        self.get_config()
        return super().save(filepath, *args, **kwargs)

    def load_own_variables(self, store):
        saving.check_own_variables(self, store)  # names another num_chains / architecture
        super().load_own_variables(store)

    def load_weights(self, filepath, *args, **kwargs):
        """``keras.Model.load_weights`` after checking that the file's chains match this sampler
        (``ValueError`` naming another ``num_chains`` or architecture)."""
        saving.check_weights_file(self, filepath)
        return super().load_weights(filepath, *args, **kwargs)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        des = keras.saving.deserialize_keras_object
        for k in ("model_fn", "nll", "swap", "variance_reduction"):
            if config.get(k) is not None:
                config[k] = des(config[k])
        if config.get("swap") is None:
            config["swap"] = None
        config["temperatures"] = _hyper.deserialize(config["temperatures"])
        config["learning_rates"] = _hyper.deserialize(config["learning_rates"])
        return cls(**config)
