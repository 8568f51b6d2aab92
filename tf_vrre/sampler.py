"""The Keras model that runs K replica-exchange SG-MCMC chains under ``model.fit``.

One training step (``train_step``), in this order:

1. *Refresh* (variance reduction only, when ``step % m == 0``): every chain's weights are
   copied into its snapshot and the snapshot's full-data energy ``U_hat`` is computed by a
   pass over the reference data (sharded across replicas, all-reduced).
2. *Forward + gradient* of every chain on the batch ``B_k`` (``training=True``); per-example
   NLLs, gradients of ``(N/n) sum_B l`` all-reduced across replicas, prior gradient added.
3. *Energies* ``U~_h`` on ``B_k`` at the current weights: the paper's Algorithm 1 tests a
   swap of the post-update weights ``beta_k`` on the next batch ``B_{k+1}``; that is exactly
   this step's pre-update state and batch, so in ``energy_mode="train"`` the energy is read
   off the gradient's forward pass at no cost.  Snapshot forwards (and the inference-mode
   forwards of ``energy_mode="inference"``) run only on steps where a swap can be attempted
   or ``sigma2`` is still being estimated.
4. *Swap*: adjacent pairs proposed by the swap rule, accepted with the corrected rule; the
   whole chain state moves (weights, BN statistics, velocities, snapshot and ``U_hat``) and so
   does the gradient just computed, so step 5 is exactly "update from the swapped state".
5. *Update*: SGLD / SGHMC / M-SGD with the current lr and temperature of each slot.
6. *Statistics*: within-batch estimates of ``Var(U~_p - U~_{p+1})`` (and of the adaptive
   control-variate coefficient) are averaged over each window of ``period`` steps and folded
   into ``sigma2`` (and ``c``) by stochastic approximation.

Slot 0 always holds the coldest temperature: **``sampler.cold_model`` is the sampled chain**
(weights are exchanged, temperatures stay with their slots).  Velocities that move to a
slot with another ``(lr, tau)`` are rescaled by ``sqrt(lr_new tau_new / (lr_old tau_old))``,
which maps the stationary velocity law ``N(0, lr tau)`` of one slot onto the other's.
"""

import numbers

import keras
import numpy as np
import tensorflow as tf

from tf_vrre import _hyper
from tf_vrre import dynamics as dyn
from tf_vrre import energy as en
from tf_vrre import seeds
from tf_vrre import stats
from tf_vrre import swaps as sw

_NEVER = -(2 ** 62)
INDEX_KEY = "example_index"
SWAP_LOG_CAPACITY = 1024
"""Rows (steps) of the in-graph swap record ring buffer read by ``tf_vrre.callbacks.SwapLogger``."""


def swap_log_columns(num_chains):
    """Column names of :attr:`ReplicaExchangeSampler.swap_log` rows.

    ``step, sigma2_updated, refreshed`` then, per adjacent pair ``p``: ``proposed_p,
    accepted_p, energy_lo_p, energy_hi_p, log_ratio_p, sigma2_p`` (the value the decision
    used), ``sigma2_new_p`` (after this step's window update), then ``c_h`` per chain (0
    without variance reduction) and ``correction``.
    """
    cols = ["step", "sigma2_updated", "refreshed"]
    for p in range(max(num_chains - 1, 1)):
        cols += [f"{k}_{p}" for k in ("proposed", "accepted", "energy_lo", "energy_hi", "log_ratio", "sigma2",
                                      "sigma2_new")]
    cols += [f"c_{h}" for h in range(num_chains)]
    return cols + ["correction"]


def unpack(data):
    """``(x, y, sample_weight, example_index)`` of a batch.

    Batches from :meth:`ReplicaExchangeSampler.make_dataset` carry ``{"example_index": i}`` (and
    optionally ``"sample_weight"``) in the sample-weight slot.
    """
    x, y, swt = keras.utils.unpack_x_y_sample_weight(data)
    index = None
    if isinstance(swt, dict):
        index = swt.get(INDEX_KEY)
        swt = swt.get("sample_weight")
    return x, y, swt, index


def _all_reduce(value):
    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return value
    return ctx.all_reduce("sum", value)


def _batch_size(x):
    first = tf.nest.flatten(x)[0]
    return tf.shape(first)[0]


def _resolve_swap(swap, num_chains):
    if isinstance(swap, str):
        if swap == "auto":
            return sw.CorrectedSwap() if num_chains >= 2 else None
        if swap == "none":
            return None
        if swap == "corrected":
            swap = sw.CorrectedSwap()
        else:
            raise ValueError(f"swap must be 'auto', 'none', 'corrected', None or a CorrectedSwap, got {swap!r}")
    if swap is None:
        return None
    if not isinstance(swap, sw.CorrectedSwap):
        raise TypeError(f"swap must be a tf_vrre.CorrectedSwap, a string or None, got {swap!r}")
    if num_chains < 2:
        raise ValueError("swap: swaps need num_chains >= 2 (got num_chains=1); use swap=None")
    return swap


@keras.saving.register_keras_serializable(package="tf_vrre")
class ReplicaExchangeSampler(keras.Model):
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
      >>> sampler = ReplicaExchangeSampler(build_net, data_size=50000, num_chains=2,
      ...     temperatures=[0.01, 0.05], learning_rates=[2e-6, 3e-6], weight_decay=25.0,
      ...     swap=CorrectedSwap(correction=1.5e5),
      ...     variance_reduction=ControlVariates(period=392), seed=1)
      >>> sampler.set_reference_data((x_train, y_train))
      >>> sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      ...                 metrics=["accuracy"])
      >>> sampler.fit(train_ds, epochs=10)
      >>> sampler.cold_model.predict(x_test)
    """

    def __init__(self, model_fn, data_size=None, num_chains=2, temperatures=None,
                 learning_rates=1e-6, dynamics="sghmc", momentum=0.9, weight_decay=0.0,
                 swap="auto", variance_reduction=None, energy_mode="auto", nll=None,
                 seed=None, independent_init=False, **kwargs):
        super().__init__(**kwargs)
        # ---- validation -------------------------------------------------------------
        if not callable(model_fn):
            raise TypeError(f"model_fn must be a callable returning a keras.Model, got {model_fn!r}")
        if data_size is None:
            raise ValueError("data_size (N, the number of training examples) is required")
        if isinstance(data_size, bool) or not isinstance(data_size, numbers.Integral) or data_size < 1:
            raise ValueError(f"data_size must be a positive integer, got {data_size!r}")
        if isinstance(num_chains, bool) or not isinstance(num_chains, numbers.Integral) or num_chains < 1:
            raise ValueError(f"num_chains must be an integer >= 1, got {num_chains!r}")
        if dynamics not in dyn.DYNAMICS:
            raise ValueError(f"dynamics must be one of {dyn.DYNAMICS}, got {dynamics!r}")
        if not isinstance(momentum, numbers.Real) or not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        if not isinstance(weight_decay, numbers.Real) or not weight_decay >= 0 or not np.isfinite(weight_decay):
            raise ValueError(f"weight_decay must be a finite number >= 0, got {weight_decay!r}")
        if energy_mode not in en.ENERGY_MODES:
            raise ValueError(f"energy_mode must be one of {en.ENERGY_MODES}, got {energy_mode!r}")
        if nll is not None:
            en.check_nll_callable(nll)
        num_chains = int(num_chains)
        swap_rule = _resolve_swap(swap, num_chains)
        if variance_reduction is not None:
            if not isinstance(variance_reduction, en.ControlVariates):
                raise TypeError("variance_reduction must be a tf_vrre.ControlVariates or None, "
                                f"got {variance_reduction!r}")
            if swap_rule is None:
                raise ValueError("variance_reduction: control variates only serve swap energies; "
                                 "it needs num_chains >= 2 and a swap rule")
        if dynamics == "msgd":
            if swap_rule is not None:
                raise ValueError("swap: M-SGD runs at temperature 0, where swaps are undefined; "
                                 "use swap=None or dynamics='sghmc'")
            if temperatures is None:
                temperatures = 0.0
        if temperatures is None:
            if num_chains >= 2:
                raise ValueError("temperatures: give one temperature per chain (strictly "
                                 f"increasing) for num_chains={num_chains}")
            temperatures = 1.0
        temps = _hyper.per_chain(temperatures, num_chains, "temperatures")
        lrs = _hyper.per_chain(learning_rates, num_chains, "learning_rates")
        temps0 = _hyper.initial_values(temps)
        lrs0 = _hyper.initial_values(lrs)
        if dynamics == "msgd" and any(t != 0 for t in temps0):
            raise ValueError(f"temperatures must be 0 for dynamics='msgd', got {temps0}")
        lo = 0.0 if swap_rule is None else np.nextafter(0.0, 1.0)
        if any(not t >= lo for t in temps0):
            raise ValueError("temperatures must be " + (">= 0" if swap_rule is None else "> 0 with swaps")
                             + f", got {temps0}")
        if any(b <= a for a, b in zip(temps0, temps0[1:])):
            raise ValueError(f"temperatures must be strictly increasing (tau_1 < tau_2 < ...), got {temps0}")
        if any(not v > 0 for v in lrs0):
            raise ValueError(f"learning_rates must be > 0, got {lrs0}")

        self.model_fn = model_fn
        self.data_size = int(data_size)
        self.num_chains = num_chains
        self.dynamics = dynamics
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.swap_rule = swap_rule
        self.variance_reduction = variance_reduction
        self.energy_mode_arg = energy_mode
        self.nll = nll
        self.independent_init = bool(independent_init)
        if seed is None:
            seed = int(np.random.randint(0, 2 ** 31 - 1))
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an integer or None, got {seed!r}")
        self.seed = int(seed)
        self._temperature_values = temps
        self._learning_rate_values = lrs

        # ---- chains --------------------------------------------------------------------
        keras.utils.set_random_seed(self.seed)
        self.chains = [self._build_chain(h) for h in range(num_chains)]
        ref = self.chains[0]
        for h, chain in enumerate(self.chains[1:], 1):
            if [v.shape for v in chain.weights] != [v.shape for v in ref.weights]:
                raise ValueError("model_fn must return models with identical variables on every call")
            if not self.independent_init:
                for dst, src in zip(chain.weights, ref.weights):
                    dst.assign(src)
        if not ref.trainable_weights:
            raise ValueError("model_fn returned a model without trainable weights")
        mode = energy_mode
        if mode == "auto":
            mode = "inference" if en.has_training_dependent_layers(ref) else "train"
        self.energy_mode = mode
        # Cached per-example snapshot NLLs equal a snapshot forward only if energies do not
        # depend on the rest of the batch (inference mode, or no BN/Dropout-like layers).
        self._cache_exact = bool(variance_reduction is not None and variance_reduction.cache and (
            mode == "inference" or not en.has_training_dependent_layers(ref)))

        # ---- sampler state (created eagerly: fit() does not build subclassed models) ----
        K = num_chains

        def state(name, shape, dtype, value=0):
            return self.add_weight(name=name, shape=shape, dtype=dtype, trainable=False,
                                   initializer=keras.initializers.Constant(value))

        self.step_counter = state("step", (), "int64")
        self.temperature = state("temperature", (K,), "float32")
        self.learning_rate = state("learning_rate", (K,), "float32")
        self.temperature.assign(np.asarray(temps0, np.float32))
        self.learning_rate.assign(np.asarray(lrs0, np.float32))
        self.velocities = None
        if dynamics in ("sghmc", "msgd"):
            self.velocities = [
                [state(f"velocity_{h}_{i}", tuple(v.shape), v.dtype) for i, v in enumerate(chain.trainable_weights)]
                for h, chain in enumerate(self.chains)]
        P = max(K - 1, 1)
        if swap_rule is not None:
            self.sigma2 = state("sigma2", (P,), "float64")
            self.sigma2_ready = state("sigma2_ready", (), "bool", False)
            self.swap_count = state("swap_count", (P,), "int64")
            self.attempt_count = state("attempt_count", (P,), "int64")
            self.attempt_index = state("attempt_index", (), "int64")
            self.last_swap_step = state("last_swap_step", (), "int64", _NEVER)
            self.window_steps = state("window_steps", (), "float64")
            self.window_variance = state("window_variance", (P,), "float64")
            self.last_energy = state("last_energy", (K,), "float64")
            self.last_log_ratio = state("last_log_ratio", (P,), "float64")
            self.correction = state("correction", (), "float64", swap_rule.initial_correction())
            # Ring buffer of per-step swap records (slot = step % capacity), drained by
            # tf_vrre.callbacks.SwapLogger; rows are laid out as swap_log_columns(K).
            self.swap_log = state("swap_log", (SWAP_LOG_CAPACITY, len(swap_log_columns(K))), "float64", -1)
        # Mini-batch energy U_B of the state in each slot on this step's batch (before the update).
        self.batch_energy = state("batch_energy", (K,), "float64")
        if variance_reduction is not None:
            self.snapshots = [self._build_chain(h, snapshot=True) for h in range(K)]
            self.snapshot_energy = state("snapshot_energy", (K,), "float64")
            self.coefficient = state("coefficient", (K,), "float64",
                                     variance_reduction.initial_coefficient
                                     if variance_reduction.adaptive else variance_reduction.coefficient)
            self.window_cov = state("window_cov", (K,), "float64")
            self.window_var = state("window_var", (K,), "float64")
            if variance_reduction.cache:
                self.snapshot_nll = state("snapshot_nll", (K, self.data_size), "float32")
        self._reference = None  # (dataset, num_batches, num_examples)
        self._chain_loss = [keras.metrics.Mean(name=f"loss_{h}") for h in range(1, K)]
        self._chain_metrics = []
        self._nll_fn = nll
        self.built = True
        if nll is not None:
            self.compile()

    # ------------------------------------------------------------------------------------
    def _build_chain(self, h, snapshot=False):
        model = self.model_fn()
        if not isinstance(model, keras.Model):
            raise TypeError(f"model_fn must return a keras.Model, got {type(model).__name__}")
        if not model.built or not model.weights:
            raise ValueError("model_fn must return a built model (e.g. a functional model with "
                             "keras.Input, or call model.build(input_shape) inside model_fn)")
        # Snapshots stay `trainable` (never updated: the sampler only moves chain weights):
        # Keras BatchNormalization uses batch statistics only when `training and trainable`,
        # and energy_mode="train" needs the snapshot evaluated exactly like the chain.
        del snapshot
        return model

    @property
    def cold_model(self):
        """The sampled (coldest, slot 0) chain: a plain ``keras.Model``."""
        return self.chains[0]

    def call(self, inputs, training=False):
        """Prediction of the cold chain."""
        return self.chains[0](inputs, training=training)

    # ---- user-facing setters ------------------------------------------------------------
    def set_temperatures(self, temperatures):
        """Assigns new per-chain temperatures (strictly increasing, validated)."""
        t = _hyper.initial_values(_hyper.per_chain(temperatures, self.num_chains, "temperatures"))
        if any(b <= a for a, b in zip(t, t[1:])) or any(v < 0 for v in t) or (
                self.swap_rule is not None and any(v <= 0 for v in t)):
            raise ValueError(f"temperatures must be >= 0 (> 0 with swaps) and strictly increasing, got {t}")
        self.temperature.assign(np.asarray(t, np.float32))

    def set_learning_rates(self, learning_rates):
        """Assigns new per-chain learning rates (> 0)."""
        v = _hyper.initial_values(_hyper.per_chain(learning_rates, self.num_chains, "learning_rates"))
        if any(not x > 0 for x in v):
            raise ValueError(f"learning_rates must be > 0, got {v}")
        self.learning_rate.assign(np.asarray(v, np.float32))

    def set_correction(self, correction):
        """Assigns a new correction factor ``F > 0`` (not with a scheduled ``F``)."""
        if self.swap_rule is None:
            raise ValueError("set_correction: the sampler has no swap rule")
        if self.swap_rule.scheduled_correction:
            raise ValueError("set_correction: F follows the swap rule's schedule; build the "
                             "CorrectedSwap with a number to set F from a callback")
        if isinstance(correction, bool) or not isinstance(correction, numbers.Real) or not (
                correction > 0 and np.isfinite(correction)):
            raise ValueError(f"correction (F) must be a finite number > 0, got {correction!r}")
        self.correction.assign(float(correction))

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
        batch_size = batch_size or self.variance_reduction.batch_size
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if isinstance(data, tf.data.Dataset):
            ds = data.unbatch().batch(batch_size)
            count, batches = 0, 0
            for batch in ds:
                count += int(_batch_size(batch))
                batches += 1
            source = ds
        else:
            # In-memory data: kept as tensors and sliced inside the graph (no iterator set-up
            # per refresh, which dominates for small m).
            source = tf.nest.map_structure(tf.convert_to_tensor, data)
            count = int(_batch_size(source))
            batches = -(-count // batch_size)
        if count != self.data_size:
            raise ValueError(f"reference data holds {count} examples but data_size={self.data_size}; "
                             "they must match (U_hat is a sum over the N training examples)")
        self._reference = (source, batches, count, int(batch_size))
        self.train_function = None  # retrace with the new dataset

    def make_dataset(self, batch_size, shuffle=True, seed=None, repeat=False, drop_remainder=False):
        """Training batches drawn from the reference data, each carrying its example indices.

        Elements are ``(x, y, {"example_index": i})`` (``y`` is zeros for unlabeled data; a
        sample weight in the reference data is carried as ``"sample_weight"``).  With
        ``ControlVariates(cache=True)`` the snapshot energies of these batches are read from the
        per-example table of the last full pass, so VR costs no snapshot forward per step.
        Do not add random augmentation to these batches (the cache would no longer match).

        The order is a pure function of the seed and the sampler's step counter (read when
        the iterator yields its first batch): data epoch ``e`` is the stateless permutation
        ``shuffle(seed, e)``.  So a run resumed from a checkpoint
        (``keras.callbacks.BackupAndRestore``) sees exactly the batches the uninterrupted run
        would have seen, and a second ``fit`` continues the stream instead of restarting it.

        Args:
          batch_size: mini-batch size ``n``.
          shuffle: a new permutation every data epoch (seeded by ``seed``, default the
            sampler's seed); ``False``: the reference order.
          repeat: an endless stream (then pass ``steps_per_epoch`` to ``fit``), starting at
            batch ``step_counter``; otherwise each iterator yields one whole data epoch, number
            ``ceil(step_counter / batches_per_epoch)``.
          drop_remainder: drop the last partial batch of every data epoch.
        """
        if self._reference is None or isinstance(self._reference[0], tf.data.Dataset):
            raise ValueError("make_dataset: call set_reference_data with in-memory arrays first")
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if drop_remainder and batch_size > self.data_size:
            raise ValueError(f"batch_size must be <= data_size ({self.data_size}) with drop_remainder, "
                             f"got {batch_size}")
        source = self._reference[0]
        parts = list(source) if isinstance(source, (tuple, list)) else [source]
        N, n = self.data_size, int(batch_size)
        per_epoch = N // n if drop_remainder else -(-N // n)
        key = seeds.fold(seeds.base_key(self.seed if seed is None else seed), seeds.DATA)
        counter = self.step_counter

        def epoch_batches(e):
            order = tf.range(N, dtype=tf.int64)
            if shuffle:
                order = tf.random.experimental.stateless_shuffle(order, seeds.fold(key, e))
            return tf.data.Dataset.from_tensor_slices(order).batch(n, drop_remainder=drop_remainder)

        def stream(_):
            start = tf.convert_to_tensor(counter)  # read when the iterator first yields
            if not repeat:  # one whole data epoch: the first one not yet (fully) started
                return epoch_batches((start + per_epoch - 1) // per_epoch)
            first = start // per_epoch
            return tf.data.Dataset.range(first, tf.int64.max).flat_map(epoch_batches).skip(start % per_epoch)

        def take(i):
            got = [tf.gather(p, i) for p in parts]
            extra = {INDEX_KEY: i}
            if len(got) == 1:
                got.append(tf.zeros(tf.shape(i), tf.float32))
            if len(got) == 3:
                extra["sample_weight"] = got.pop()
            return got[0], got[1], extra

        ds = tf.data.Dataset.from_tensors(0).flat_map(stream).map(take)
        ds = ds.repeat() if repeat else ds.apply(tf.data.experimental.assert_cardinality(per_epoch))
        ds = ds.prefetch(2)
        options = tf.data.Options()
        options.autotune.enabled = False  # autotuning stalled short fit() calls in benchmarks
        return ds.with_options(options)

    # ---- compile / metrics ------------------------------------------------------------------
    def compile(self, loss=None, metrics=None, weighted_metrics=None, run_eagerly=False,
                steps_per_execution=1, jit_compile=False, **kwargs):
        """Configures the energy and metrics (there is no optimizer: the sampler updates weights).

        Args:
          loss: Keras loss used, unreduced, as the per-example NLL (unless ``nll`` was given).
          metrics, weighted_metrics: as in ``keras.Model.compile``; evaluated on the cold chain
            (plain names) and on every other chain ``h`` (names suffixed ``_h``).
          jit_compile: XLA off by default (slower for convnets on CPU, fails under
            MirroredStrategy on CPU).
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
        super().compile(optimizer=None, loss=None, metrics=metrics,
                        weighted_metrics=weighted_metrics, run_eagerly=run_eagerly,
                        steps_per_execution=steps_per_execution, jit_compile=jit_compile, **kwargs)
        self._compile_args = {"loss": loss, "metrics": metrics, "weighted_metrics": weighted_metrics,
                              "steps_per_execution": steps_per_execution, "jit_compile": jit_compile}
        self._nll_fn = self.nll if self.nll is not None else en.resolve_nll(loss)
        for old in getattr(self, "_chain_metrics", []):  # a re-compile replaces them: untrack
            if old in self._metrics:
                self._metrics.remove(old)
        self._chain_metrics = []
        if metrics is not None or weighted_metrics is not None:
            from keras.src.trainers.compile_utils import CompileMetrics
            self._chain_metrics = [CompileMetrics(metrics, weighted_metrics, name=f"chain_{h}_metrics")
                                   for h in range(1, self.num_chains)]
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

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if isinstance(sample_weight, dict):
            sample_weight = sample_weight.get("sample_weight")
        for m in self._chain_metrics:
            if not m.built:
                m.build(y, y_pred)
        return super().compute_metrics(x, y, y_pred, sample_weight)

    # ---- energy helpers -----------------------------------------------------------------
    def _per_example_nll(self, x, y, y_pred, sample_weight):
        nll = en.per_example(self._nll_fn(x, y, y_pred))
        nll = tf.cast(nll, tf.float32)
        if sample_weight is not None:
            nll = nll * tf.cast(tf.reshape(sample_weight, tf.shape(nll)), nll.dtype)
        return nll

    def _check_batch(self, x, y):
        if x is None:
            raise ValueError("dataset: elements must be x, (x,), (x, y) or (x, y, sample_weight)")
        if self.nll is None and y is None:
            raise ValueError("dataset: the compiled loss needs labels but the dataset yields inputs "
                             "only; yield (x, y) or build the sampler with nll=callable(x, y, y_pred)")

    def _prior(self, weights):
        return en.prior_energy(weights, self.weight_decay)

    def _current_hyper(self, step):
        """Current lr and temperature vectors; scheduled entries are evaluated and stored."""
        def current(values, var):
            if not any(_hyper.is_schedule(v) for v in values):
                return tf.convert_to_tensor(var)
            cur = tf.unstack(tf.convert_to_tensor(var))
            vec = tf.stack([tf.cast(v(step), tf.float32) if _hyper.is_schedule(v) else cur[h]
                            for h, v in enumerate(values)])
            var.assign(vec)
            return vec
        return (current(self._learning_rate_values, self.learning_rate),
                current(self._temperature_values, self.temperature))

    def _full_pass(self):
        """Local (this replica's share) sums of snapshot NLLs over the reference data, [K].

        Batches ``i = r, r + R, r + 2R, ...`` go to replica ``r`` of ``R``; the caller
        all-reduces.  Runs the snapshot models with the sampler's energy mode.
        """
        source, num_batches, count, batch_size = self._reference
        ctx = tf.distribute.get_replica_context()
        replicas = 1 if ctx is None else ctx.num_replicas_in_sync
        rid = tf.constant(0, tf.int64) if replicas == 1 else tf.cast(ctx.replica_id_in_sync_group, tf.int64)
        training = self.energy_mode == "train"
        if isinstance(source, tf.data.Dataset):
            if replicas > 1:
                source = source.shard(replicas, rid)
            iterator = iter(source)
            get = lambda i: iterator.get_next()  # noqa: E731
        else:
            def get(i):
                start = i * batch_size
                stop = tf.minimum(start + batch_size, count)
                return tf.nest.map_structure(lambda t: t[start:stop], source)
        num = (tf.constant(num_batches, tf.int64) - rid + replicas - 1) // replicas

        cache = self.variance_reduction.cache
        K = self.num_chains

        def body(j, total, table):
            i = rid + j * replicas
            x, y, swt = keras.utils.unpack_x_y_sample_weight(get(i))
            vals = [self._per_example_nll(x, y, snap(x, training=training), swt) for snap in self.snapshots]
            total = total + tf.stack([tf.reduce_sum(tf.cast(v, tf.float64)) for v in vals])
            if cache:
                pos = i * batch_size + tf.range(tf.shape(vals[0], out_type=tf.int64)[0])
                table = tf.tensor_scatter_nd_update(table, pos[:, None], tf.stack(vals, axis=1))
            return j + 1, total, table

        table = tf.zeros([count if cache else 0, K], tf.float32)
        _, total, table = tf.while_loop(lambda j, t, c: j < num, body,
                                        (tf.constant(0, tf.int64), tf.zeros([K], tf.float64), table))
        return total, (tf.transpose(table) if cache else None)

    def _refresh(self, step):
        """VR: on ``step % m == 0`` copy weights to snapshots and recompute ``U_hat``; returns that flag."""
        m = self.variance_reduction.period
        due = tf.equal(tf.math.floormod(step, m), 0)

        K, cache = self.num_chains, self.variance_reduction.cache
        ctx = tf.distribute.get_replica_context()
        single = ctx is None or ctx.num_replicas_in_sync == 1

        def do():
            ops = []
            for chain, snap in zip(self.chains, self.snapshots):
                for dst, src in zip(snap.weights, chain.weights):
                    ops.append(dst.assign(tf.identity(src)))
            with tf.control_dependencies(ops):
                total, table = self._full_pass()
            if not cache:
                return total, tf.zeros([K, 0])
            if single:  # no all-reduce needed: write the per-example table here
                with tf.control_dependencies([self.snapshot_nll.assign(table)]):
                    return tf.identity(total), tf.zeros([K, 0])
            return total, table

        def skip():
            width = 0 if (single or not cache) else self.data_size
            return tf.zeros([K], tf.float64), tf.zeros([K, width])

        partial, table = tf.cond(due, do, skip)
        total = _all_reduce(partial)
        self.snapshot_energy.assign(tf.where(due, total, self.snapshot_energy))
        if cache and not single:  # shards fill disjoint examples: the sum is the full table
            table = _all_reduce(table)
            self.snapshot_nll.assign(tf.where(due, table, self.snapshot_nll))
        return due

    # ---- swaps --------------------------------------------------------------------------
    def _state_groups(self):
        """Per-chain lists of variables that move together on a swap (except velocities)."""
        groups = [chain.weights for chain in self.chains]
        if self.variance_reduction is not None:
            groups = [g + s.weights for g, s in zip(groups, self.snapshots)]
        return groups

    def _permute(self, perm, lrs, temps, tensors):
        """Moves chain states by ``perm`` (slot j <- slot perm[j]); returns permuted ``tensors``."""
        K = self.num_chains
        groups = self._state_groups()
        for i in range(len(groups[0])):
            vals = tf.stack([tf.identity(groups[h][i]) for h in range(K)])
            new = tf.gather(vals, perm)
            for h in range(K):
                groups[h][i].assign(new[h])
        if self.velocities is not None:
            scale = dyn.velocity_scale(tf.gather(lrs, perm), tf.gather(temps, perm), lrs, temps)
            for i in range(len(self.velocities[0])):
                vals = tf.stack([tf.identity(self.velocities[h][i]) for h in range(K)])
                new = tf.gather(vals, perm)
                for h in range(K):
                    self.velocities[h][i].assign(new[h] * tf.cast(scale[h], new.dtype))
        if self.variance_reduction is not None:
            self.snapshot_energy.assign(tf.gather(self.snapshot_energy, perm))
            if self.variance_reduction.cache:
                self.snapshot_nll.assign(tf.gather(self.snapshot_nll, perm))
        return [tf.unstack(tf.gather(tf.stack(t), perm), num=K) for t in tensors]

    # ---- the train step -------------------------------------------------------------------
    def train_step(self, data):
        x, y, swt, index = unpack(data)
        self._check_batch(x, y)
        step = tf.convert_to_tensor(self.step_counter)
        key = seeds.step_key(seeds.base_key(self.seed), step)
        lrs, temps = self._current_hyper(step)
        n = _all_reduce(tf.cast(_batch_size(x), tf.float64))
        scale = tf.cast(self.data_size, tf.float64) / n
        vr = self.variance_reduction

        if vr is not None:
            if self._reference is None:
                raise ValueError("variance_reduction needs the full training data: call "
                                 "sampler.set_reference_data((x_train, y_train)) before fit")
            refreshed = self._refresh(step)
        else:
            refreshed = tf.constant(False)

        # Forward + gradients of every chain.
        nlls, preds, grads, priors = [], [], [], []
        for chain in self.chains:
            weights = chain.trainable_weights
            with tf.GradientTape() as tape:
                y_pred = chain(x, training=True)
                nll = self._per_example_nll(x, y, y_pred, swt)
                objective = tf.debugging.assert_all_finite(
                    tf.reduce_sum(nll) * tf.cast(scale, nll.dtype),
                    "tf_vrre: a chain's mini-batch energy is not finite (diverged?). Lower learning_rates: "
                    "they multiply the N-scaled gradient (eta = 2e-6 at N = 50000 is SGD lr 0.1)")
            g = tape.gradient(objective, weights)
            g = [tf.zeros_like(w) if gi is None else tf.convert_to_tensor(gi) for gi, w in zip(g, weights)]
            nlls.append(nll)
            preds.append(y_pred)
            grads.append(g)
            if self.swap_rule is not None:
                priors.append(self._prior(weights))
        grads = _all_reduce(grads)
        if self.weight_decay:
            grads = [[gi + tf.cast(self.weight_decay, gi.dtype) * w for gi, w in zip(g, chain.trainable_weights)]
                     for g, chain in zip(grads, self.chains)]

        if self.swap_rule is not None:
            grads, nlls, preds, prior_now = self._swap_step(step, key, x, y, swt, index, n, lrs, temps,
                                                            nlls, preds, grads, priors, refreshed)
        else:
            prior_now = tf.stack([self._prior(c.trainable_weights) for c in self.chains])

        # Energy of the state now in each slot on this batch, before the update (recorded).
        sums = _all_reduce(tf.stack([tf.reduce_sum(tf.cast(v, tf.float64)) for v in nlls]))
        self.batch_energy.assign(en.minibatch_energy(sums, n, self.data_size, prior_now))

        # Updates.
        noise_key = seeds.fold(key, seeds.NOISE)
        friction = 1.0 - self.momentum
        for h, chain in enumerate(self.chains):
            weights = chain.trainable_weights
            lr, tau = lrs[h], temps[h]
            noises = None
            if self.dynamics != "msgd":
                sizes = [int(np.prod(w.shape)) for w in weights]
                flat = tf.random.stateless_normal([sum(sizes)], seeds.fold(noise_key, h))
                noises = [tf.reshape(z, w.shape) for z, w in zip(tf.split(flat, sizes), weights)]
            for i, (w, g) in enumerate(zip(weights, grads[h])):
                lr_i, tau_i = tf.cast(lr, w.dtype), tf.cast(tau, w.dtype)
                z = None if noises is None else tf.cast(noises[i], w.dtype)
                if self.dynamics == "sgld":
                    w.assign(dyn.sgld_update(w, g, lr_i, tau_i, z))
                else:
                    v = self.velocities[h][i]
                    new_w, new_v = dyn.sghmc_update(w, v, g, lr_i, tau_i, friction, z)
                    v.assign(new_v)
                    w.assign(new_w)

        # Metrics.
        self._loss_tracker.update_state(tf.reduce_mean(nlls[0]), sample_weight=tf.cast(tf.size(nlls[0]), tf.float32))
        for tracker, nll in zip(self._chain_loss, nlls[1:]):
            tracker.update_state(tf.reduce_mean(nll), sample_weight=tf.cast(tf.size(nll), tf.float32))
        if self._compile_metrics is not None and y is not None:
            self._compile_metrics.update_state(y, preds[0], swt)
            for m, p in zip(self._chain_metrics, preds[1:]):
                m.update_state(y, p, swt)
        # After the batch is consumed (make_dataset reads the counter when its iterator starts;
        # without the data dependency the increment may run before get_next).
        with tf.control_dependencies([sums]):  # sums of this batch's NLLs: data-dependent
            self.step_counter.assign_add(1)
        return self._logs(lrs, temps)

    def _swap_step(self, step, key, x, y, swt, index, n, lrs, temps, nlls, preds, grads, priors, refreshed):
        K, rule, vr = self.num_chains, self.swap_rule, self.variance_reduction
        P = K - 1
        period = rule.period or (vr.period if vr is not None else 1)
        possible = step - self.last_swap_step > rule.cooling_steps
        cached = vr is not None and index is not None and self._cache_exact
        need_extra = (vr is not None and not cached) or self.energy_mode == "inference"

        # Per-example energies (current, snapshot) on this batch; extra forwards in a cond.
        if need_extra:
            def extra():
                if self.energy_mode == "inference":
                    cur = [self._per_example_nll(x, y, c(x, training=False), swt) for c in self.chains]
                else:
                    cur = list(nlls)
                snap = []
                if vr is not None and not cached:
                    training = self.energy_mode == "train"
                    snap = [self._per_example_nll(x, y, s(x, training=training), swt) for s in self.snapshots]
                return cur, snap

            def none():
                z = tf.zeros_like(nlls[0])
                return [z] * K, ([z] * K if (vr is not None and not cached) else [])

            cur, snap = tf.cond(possible, extra, none)
        else:
            cur, snap = list(nlls), []
        if cached:  # per-example snapshot NLLs from the last full pass: no snapshot forward
            snap = tf.unstack(tf.gather(self.snapshot_nll, tf.cast(index, tf.int64), axis=1), num=K)

        cur64 = [tf.cast(c, tf.float64) for c in cur]
        coef = None
        if vr is not None:
            coef = tf.unstack(tf.convert_to_tensor(self.coefficient))
            snap64 = [tf.cast(s, tf.float64) for s in snap]
            per_ex = [c + coef[h] * s for h, (c, s) in enumerate(zip(cur64, snap64))]
        else:
            per_ex = cur64
        pieces = [tf.stack([tf.reduce_sum(c) for c in cur64])]                      # [K]
        if vr is not None:
            pieces += [tf.stack([tf.reduce_sum(sn) for sn in snap64])]              # [K]
        pieces += [stats.moments(per_ex[p] - per_ex[p + 1]) for p in range(P)]       # P x [3]
        if vr is not None and vr.adaptive:
            pieces += [stats.cross_moments(cur64[h], snap64[h]) for h in range(K)]   # K x [5]
        flat = _all_reduce(tf.concat(pieces, 0))
        prior = tf.stack(priors)
        if vr is not None:
            energy = en.control_variate_energy(flat[:K], flat[K:2 * K], self.snapshot_energy, tf.stack(coef),
                                               n, self.data_size, prior)
            flat = flat[2 * K:]
        else:
            energy = en.minibatch_energy(flat[:K], n, self.data_size, prior)
            flat = flat[K:]
        pair_m = tf.reshape(flat[:3 * P], [P, 3])

        # Decision.
        attempt = tf.logical_and(possible, tf.convert_to_tensor(self.sigma2_ready))
        proposed = tf.logical_and(rule.propose(K, self.attempt_index, seeds.fold(key, seeds.SWAP_PAIR)), attempt)
        if rule.scheduled_correction:
            self.correction.assign(tf.cast(rule.correction(step), tf.float64))
        correction = tf.convert_to_tensor(self.correction)
        sigma2_used = tf.convert_to_tensor(self.sigma2)
        log_ratio = sw.log_swap_ratio(energy[:-1], energy[1:], temps[:-1], temps[1:], sigma2_used, correction)
        res = sw.decide_swaps(log_ratio, proposed, seeds.fold(key, seeds.SWAP_UNIFORM))
        any_acc = tf.reduce_any(res.accepted)

        def do_swap():
            return self._permute(res.permutation, lrs, temps, [list(t) for t in zip(*grads)] + [nlls, preds])

        def keep():
            return [list(t) for t in zip(*grads)] + [nlls, preds]

        out = tf.cond(any_acc, do_swap, keep)
        per_var, nlls, preds = out[:-2], out[-2], out[-1]
        grads = [list(g) for g in zip(*per_var)] if per_var else [[] for _ in range(K)]

        self.attempt_count.assign_add(tf.cast(proposed, tf.int64))
        self.swap_count.assign_add(tf.cast(res.accepted, tf.int64))
        self.attempt_index.assign_add(tf.cast(attempt, tf.int64))
        self.last_swap_step.assign(tf.where(any_acc, step, self.last_swap_step))
        self.last_energy.assign(energy)
        self.last_log_ratio.assign(log_ratio)

        # Within-batch variance of U~_p - U~_{p+1}: window average, then stochastic approximation.
        s2 = stats.estimator_variance(pair_m[:, 0], pair_m[:, 1], pair_m[:, 2], self.data_size)
        w = tf.cast(possible, tf.float64)
        self.window_steps.assign_add(w)
        self.window_variance.assign_add(w * s2)
        reset = tf.equal(tf.math.floormod(step + 1, period), 0)  # last step of a sigma2 window
        end = tf.logical_and(reset, self.window_steps > 0)
        mean_s2 = tf.math.divide_no_nan(tf.convert_to_tensor(self.window_variance), self.window_steps)
        new_sigma2 = stats.stochastic_approximation(self.sigma2, mean_s2, rule.smoothing, self.sigma2_ready)
        self.sigma2.assign(tf.where(end, new_sigma2, self.sigma2))
        self.sigma2_ready.assign(tf.logical_or(self.sigma2_ready, end))
        if vr is not None and vr.adaptive:
            cm = tf.reshape(flat[3 * P:], [K, 5])
            cov, var = stats.covariance_and_variance(cm)
            self.window_cov.assign_add(w * cov)
            self.window_var.assign_add(w * var)
            vr_reset = tf.equal(tf.math.floormod(step + 1, vr.period), 0)
            vr_end = tf.logical_and(vr_reset, self.window_var > 0)
            c_new = -tf.math.divide_no_nan(tf.convert_to_tensor(self.window_cov), self.window_var)
            smoothed = stats.stochastic_approximation(self.coefficient, c_new, vr.smoothing, True)
            self.coefficient.assign(tf.where(vr_end, smoothed, self.coefficient))
            self.window_cov.assign(tf.where(vr_reset, tf.zeros_like(self.window_cov), self.window_cov))
            self.window_var.assign(tf.where(vr_reset, tf.zeros_like(self.window_var), self.window_var))
        self.window_steps.assign(tf.where(reset, tf.zeros_like(self.window_steps), self.window_steps))
        self.window_variance.assign(tf.where(reset, tf.zeros_like(self.window_variance), self.window_variance))

        # Per-step record (ring buffer; see swap_log_columns).
        f64 = lambda t: tf.cast(t, tf.float64)  # noqa: E731
        per_pair = tf.stack([f64(proposed), f64(res.accepted), energy[:-1], energy[1:], log_ratio,
                             sigma2_used, tf.convert_to_tensor(self.sigma2)], axis=1)
        coefs = tf.convert_to_tensor(self.coefficient) if vr is not None else tf.zeros([K], tf.float64)
        row = tf.concat([tf.stack([f64(step), f64(end), f64(refreshed)]), tf.reshape(per_pair, [-1]),
                         coefs, correction[None]], 0)
        slot = tf.math.floormod(step, SWAP_LOG_CAPACITY)
        self.swap_log.assign(tf.tensor_scatter_nd_update(tf.convert_to_tensor(self.swap_log),
                                                         slot[None, None], row[None]))
        return grads, nlls, preds, tf.gather(prior, res.permutation)  # prior of each slot's new state

    def _logs(self, lrs, temps):
        logs = {"loss": self._loss_tracker.result()}
        for h, tracker in enumerate(self._chain_loss, 1):
            logs[f"loss_{h}"] = tracker.result()
        if self._compile_metrics is not None:
            logs.update(self._compile_metrics.result())
            for h, m in enumerate(self._chain_metrics, 1):
                if m.built:
                    logs.update({f"{k}_{h}": v for k, v in m.result().items()})
        for h in range(self.num_chains):
            logs[f"temperature_{h}"] = temps[h]
            logs[f"lr_{h}"] = lrs[h]
        if self.swap_rule is not None:
            swaps = tf.reduce_sum(self.swap_count)
            attempts = tf.reduce_sum(self.attempt_count)
            logs["swaps"] = swaps
            logs["swap_attempts"] = attempts
            logs["accept_rate"] = tf.math.divide_no_nan(tf.cast(swaps, tf.float64), tf.cast(attempts, tf.float64))
            logs["correction"] = self.correction
            for p in range(self.num_chains - 1):
                logs[f"sigma2_{p}"] = self.sigma2[p]
                if self.num_chains > 2:
                    logs[f"swaps_{p}"] = self.swap_count[p]
                    logs[f"accept_rate_{p}"] = tf.math.divide_no_nan(
                        tf.cast(self.swap_count[p], tf.float64), tf.cast(self.attempt_count[p], tf.float64))
        if self.variance_reduction is not None:
            for h in range(self.num_chains):
                logs[f"c_{h}"] = self.coefficient[h]
        return logs

    def test_step(self, data):
        x, y, swt, _ = unpack(data)
        self._check_batch(x, y)
        y_pred = self.chains[0](x, training=False)
        nll = self._per_example_nll(x, y, y_pred, swt)
        self._loss_tracker.update_state(tf.reduce_mean(nll), sample_weight=tf.cast(tf.size(nll), tf.float32))
        logs = {"loss": self._loss_tracker.result()}
        if self._compile_metrics is not None and y is not None:
            self._compile_metrics.update_state(y, y_pred, swt)
            logs.update(self._compile_metrics.result())
        return logs

    def predict_step(self, data):
        x, _, _, _ = unpack(data)
        return self.chains[0](x, training=False)

    # ---- config ----------------------------------------------------------------------
    def get_config(self):
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
