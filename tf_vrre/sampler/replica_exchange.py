"""The Keras model that runs K replica-exchange SG-MCMC chains under ``model.fit``.

``train_step`` is the algorithm's recipe, one call per step into the module that owns it:

1. *Refresh* (VR only, ``step % m == 0``): snapshots <- chains, ``U_hat`` by a full pass
   (:func:`tf_vrre.sgmcmc.control_variates.refresh`).
2. *Forward + gradient* of every chain on ``B_k`` (:func:`tf_vrre.sgmcmc.gradients.forward_and_gradients`).
3. *Swap energies* ``U~_h`` on ``B_k`` at the current weights, read off step 2's forward where
   possible (:class:`tf_vrre.sgmcmc.swap_energy.SwapEnergyEstimator`).
4. *Swap*: pairs proposed and decided with the corrected rule (:meth:`tf_vrre.CorrectedSwap.attempt`);
   accepted swaps move whole chain states (:func:`tf_vrre.sgmcmc.state.exchange_forward`) and the
   gradients just computed.
5. *Update*: SGLD / SGHMC / M-SGD with each slot's current lr and temperature
   (:class:`tf_vrre.sgmcmc.dynamics.Diffusion`).
6. *Bookkeeping*: the sigma2 window (:meth:`tf_vrre.CorrectedSwap.update_sigma2`), the adaptive
   coefficient (:func:`tf_vrre.sgmcmc.control_variates.update_coefficient`), the per-step record
   (:mod:`tf_vrre.sgmcmc.swap_record`).

Everything the sampler remembers between steps is one record, ``sampler.state``
(:class:`tf_vrre.sgmcmc.state.SamplerState`), created in the constructor.  Slot 0 always holds the
coldest temperature: **``sampler.cold_model`` is the sampled chain** (states are exchanged,
temperatures stay with their slots).  Velocities that move to a slot with another ``(lr, tau)``
are rescaled by ``sqrt(lr_new tau_new / (lr_old tau_old))``, which maps the stationary velocity
law ``N(0, lr tau)`` of one slot onto the other's.

Besides the recipe the model inherits its other parts from mixins, each beside the code it calls:
the chains and state its constructor builds (:class:`tf_vrre.sampler.building.ChainBuilding`),
steps 1 and 6 of the recipe (:class:`tf_vrre.sampler.bookkeeping.StepBookkeeping`), the gradient
noise measurement (:class:`tf_vrre.sampler.noise_measurement.GradientNoiseMeasurement`),
the setters of the values in force (:class:`tf_vrre.sampler.hyperparameters.LadderSetters`), the
reference data and indexed batches (:class:`tf_vrre.sampler.datasets.ReferenceData`), Keras' save
and load hooks (:class:`tf_vrre.sampler.saving.SavingHooks`), the placement of the chains on devices
(:class:`tf_vrre.sampler.placements.ChainPlacement`) and the per-chain metrics
(:class:`tf_vrre.sampler.chain_metrics.ChainMetrics`).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any, cast

import keras
import tensorflow as tf

import tf_vrre.sampler.batch as batch
import tf_vrre.sampler.construction as construction
import tf_vrre.sampler.cost as cost
import tf_vrre.sampler.datasets as datasets
import tf_vrre.sampler.execution as execution
import tf_vrre.sampler.hyperparameters as hyperparameters
import tf_vrre.sampler.input_checks as input_checks
import tf_vrre.sampler.invariants as invariants
import tf_vrre.sampler.placements as placements
import tf_vrre.sampler.replica_step as replica_step
import tf_vrre.sampler.xla as xla
from tf_vrre import _keras_compat
from tf_vrre.sampler.bookkeeping import StepBookkeeping
from tf_vrre.sampler.building import ChainBuilding
from tf_vrre.sampler.chain_metrics import ChainMetrics
from tf_vrre.sampler.datasets import ReferenceData
from tf_vrre.sampler.hyperparameters import LadderSetters
from tf_vrre.sampler.listeners import SamplerListeners
from tf_vrre.sampler.noise_measurement import GradientNoiseMeasurement
from tf_vrre.sampler.placements import ChainPlacement
from tf_vrre.sampler.saving import SavingHooks
from tf_vrre.sgmcmc import (
    control_variates,
    distribute,
    energy,
    gradient_noise,
    gradients,
    seeds,
    swaps,
)
from tf_vrre.sgmcmc import proposal as proposals
from tf_vrre.sgmcmc.dynamics import Diffusion
from tf_vrre.sgmcmc.state import (
    SwapState,
    exchange_forward,
)
from tf_vrre.sgmcmc.swap_energy import SwapEnergyEstimator

_FIT_SIGNATURE = inspect.signature(keras.Model.fit)


def require_sampler(model: Any, who: str) -> ReplicaExchangeSampler:
    """``model`` if it is a :class:`ReplicaExchangeSampler`, else a ``TypeError`` naming ``who``."""
    if not isinstance(model, ReplicaExchangeSampler):
        raise TypeError(f"{who} works with a tf_vrre.ReplicaExchangeSampler, got {type(model).__name__}")
    return model


@keras.saving.register_keras_serializable(package="tf_vrre")
class ReplicaExchangeSampler(
    ChainBuilding,
    ChainPlacement,
    ChainMetrics,
    GradientNoiseMeasurement,
    LadderSetters,
    ReferenceData,
    SavingHooks,
    StepBookkeeping,
    keras.Model,
):
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
      temperatures: per-chain ``tau`` (number, schedule, or list of K), strictly increasing
        (non-decreasing without swaps: equal temperatures make independent chains, e.g. a deep ensemble).
        Default 1.0 for one chain (0 for M-SGD); required for ``K >= 2``.  Or a
        :class:`tf_vrre.ProposedLadder` (``K >= 2``, with swaps): the cold temperature and a
        rejection rate per pair, the ladder proposed from the number of weights of one chain
        (``sampler.temperatures`` then holds it; a :class:`tf_vrre.LadderTuner` moves its hot end).
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
      placement: ``"replicated"`` (default: every replica of a ``tf.distribute`` strategy holds
        every chain and a shard of each batch) or ``"chain_per_replica"`` (in the scope of a
        ``MirroredStrategy`` / ``TPUStrategy`` / ``MultiWorkerMirroredStrategy`` with ``num_chains``
        replicas: replica ``r`` holds chain ``r``, swaps exchange temperatures and learning rates,
        not weights; :mod:`tf_vrre.sampler.placements`).  The samples are the same, to round-off.
      gradient_noise_every: measure every chain's gradient noise on one step in this many (one
        more backward pass that changes nothing in the step; ``None``: never) and log its *excess
        temperature* ``eta * mean_j Var(g_j) / (2 (1 - momentum))`` (SGLD: ``eta * mean_j
        Var(g_j) / 2``), the heat mini-batch gradient noise adds to ``tau``, as the epoch's mean in
        ``excess_temperature_h`` (``NaN`` in an epoch without a measurement;
        :mod:`tf_vrre.sgmcmc.gradient_noise`).  ``fit`` warns when it exceeds a tenth of a
        chain's temperature.

    State (``sampler.state``, a :class:`tf_vrre.sgmcmc.state.SamplerState`; every variable is
    saved with the sampler): ``state.step``; ``state.ladder.temperature`` / ``.learning_rate``
    in force; ``state.chains.velocities``; ``state.swap.sigma2``, ``.swap_count``,
    ``.attempt_count``, ``.correction``, ``.log`` (the per-step swap record);
    ``state.control_variates.snapshot_energy``, ``.coefficient``; ``state.batch_energy``.
    The chain models are ``sampler.chains`` (``sampler.snapshots`` with control variates);
    with ``placement="chain_per_replica"`` they are the host copy of the chains, in rung order,
    refreshed by :meth:`sync_chains` (``cold_model`` refreshes itself when read).

    Example:
      >>> sampler = ReplicaExchangeSampler(net, data_size=64, num_chains=2,
      ...     temperatures=[0.01, 0.05], learning_rates=[1e-3, 1.5e-3], weight_decay=1.0,
      ...     swap=tf_vrre.CorrectedSwap(correction=2.0),
      ...     variance_reduction=tf_vrre.ControlVariates(period=4), seed=1)
      >>> sampler.set_reference_data((x, y))
      >>> sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      ...                 metrics=["accuracy"])
      >>> _ = sampler.fit(sampler.make_dataset(16), epochs=2, verbose=0)
      >>> sampler.cold_model.predict(x[:3], verbose=0).shape
      (3, 2)
      >>> int(sampler.state.step.numpy()), sampler.state.ladder.temperature.numpy()
      (8, array([0.01, 0.05], dtype=float32))
    """

    def __init__(
        self,
        model_fn: Callable[[], keras.Model],
        data_size: int | None = None,
        num_chains: int = 2,
        temperatures: Any = None,
        learning_rates: Any = 1e-6,
        dynamics: str = "sghmc",
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        swap: Any = "auto",
        variance_reduction: control_variates.ControlVariates | None = None,
        energy_mode: str = "auto",
        nll: Callable | None = None,
        seed: int | None = None,
        independent_init: bool = False,
        placement: str = "replicated",
        gradient_noise_every: int | None = gradient_noise.PERIOD,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        construction.check_scalars(model_fn, data_size, num_chains, dynamics, momentum, weight_decay)
        seed = construction.check_options(energy_mode, nll, seed)
        gradient_noise_every = construction.check_gradient_noise_every(gradient_noise_every)
        num_chains = int(num_chains)
        strategy = placements.check(placement, num_chains)  # None: replicated
        swap_rule = swaps.resolve(swap, num_chains)
        control_variates.check(variance_reduction, swap_rule)
        proposal = proposals.check_sampler(temperatures, num_chains, swap_rule, dynamics)
        temps, lrs = hyperparameters.resolve(
            temperatures if proposal is None else proposals.placeholder(proposal, num_chains),
            learning_rates,
            num_chains,
            dynamics,
            swap_rule is not None,
        )

        self.model_fn = model_fn
        self.data_size = int(cast(int, data_size))  # not None: check_scalars refused it
        self.num_chains = num_chains
        self.temperatures = temps  # K entries as given (numbers or schedules); in force: state.ladder
        self.proposal = proposal  # a ProposedLadder: the temperatures are proposed once the chains exist
        self.learning_rates = lrs
        self.dynamics = dynamics
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self.swap_rule = swap_rule
        self._swap = None if swap_rule is None else swap_rule.resolved(variance_reduction is not None)
        self.variance_reduction = variance_reduction
        self.energy_mode_arg = energy_mode
        self.nll = nll
        self.independent_init = bool(independent_init)
        self.placement, self._strategy = placement, strategy
        self.seed = int(seed)
        self._diffusion = Diffusion(dynamics, momentum)
        self.gradient_noise_every = gradient_noise_every
        vr = variance_reduction
        # sigma2 window (steps) and the number of per-offset sigma2 estimates (steps since the refresh)
        # (1 without swaps, where neither is used)
        self._window_period: int = (swap_rule.period or (vr.period if vr is not None else 1)) if swap_rule else 1
        self._offsets: int = vr.period if vr is not None else self._window_period

        self._build_chains(model_fn, proposal, temps, lrs)
        # Plain objects, so Keras neither tracks nor saves them (tests/sampler/test_state.py).
        self._host = None if strategy is None else placements.HostCopy(self, strategy)  # chain per replica
        local = self.state.replica or self.state  # chain per replica: this replica's chain's swap energies
        self._swap_energy = None if swap_rule is None else self._swap_energy_estimator(local)
        self._faults = self._fault_register()  # the first runtime fault of a step (not saved)
        self.listeners = SamplerListeners()  # divergence / checkpoint-commit listeners
        self._reference = None  # a tf_vrre.sgmcmc.control_variates.Reference
        self._chain_loss = [keras.metrics.Mean(name=f"loss_{h}") for h in range(1, num_chains)]
        self._excess_temperature = self._noise_metrics()
        self._chain_metrics: list[Any] = []
        self._nll_fn: Callable | None = nll  # the per-example NLL: nll, or compile's loss
        self._batch_layout = None  # of the data of the last fit: the cost count (tf_vrre.sampler.cost)
        self.built = True
        if nll is not None:
            self.compile()

    @property
    def swap_penalty(self) -> str | None:
        """The swap penalty in force (``CorrectedSwap(penalty="auto")`` resolved), or ``None``."""
        return None if self._swap is None else self._swap.penalty

    @property
    def cold_model(self) -> keras.Model:
        """The sampled (coldest, slot 0) chain: a plain ``keras.Model``.  With ``placement=
        "chain_per_replica"``: the host copy of the chain holding the coldest rung, refreshed when read."""
        self._sync_cold()
        return self.chains[0]

    def call(self, inputs: Any, training: bool = False) -> Any:
        """Prediction of the cold chain."""
        return self.chains[0](inputs, training=training)

    def fit(self, *args: Any, **kwargs: Any) -> keras.callbacks.History:
        """``keras.Model.fit`` after host-side checks of array inputs and the reference data
        (:func:`tf_vrre.sampler.input_checks.check_fit`: lengths, dtypes, finite values, labels within the
        model's classes, sample weights, ``batch_size <= data_size``; a warning if the training
        arrays do not hold ``data_size`` examples): bad data fails before any graph runs, with an
        error naming the argument.  A dataset (``make_dataset``'s) is fitted in its own order:
        ``shuffle`` defaults to ``False`` for it (:func:`tf_vrre.sampler.datasets.carries_order`)."""
        bound = _FIT_SIGNATURE.bind(self, *args, **kwargs)
        if "shuffle" not in bound.arguments and datasets.carries_order(bound.arguments.get("x")):
            kwargs["shuffle"] = False  # Keras cannot shuffle a dataset: its default True only makes it warn
            bound = _FIT_SIGNATURE.bind(self, *args, **kwargs)
        bound.apply_defaults()
        self._placement_fit_check(bound.arguments["x"])
        self._reference_checked = input_checks.check_fit(self, bound.arguments)
        layout = cost.layout_of(bound.arguments)
        if layout != self._batch_layout:  # read when the train step is traced
            self._batch_layout, self.train_function = layout, None
        hyperparameters.check_setters(bound.arguments["callbacks"])
        args, kwargs = self._placement_fit_arguments(args, kwargs, bound.arguments["x"])
        try:
            history = super().fit(*args, **kwargs)
        finally:  # the callbacks of this fit registered them in on_train_begin
            self.listeners.clear()
            self.sync_chains()
        message = gradient_noise.heat_warning(history.history, self.num_chains, self.dynamics)
        if message:
            warnings.warn(gradient_noise.GradientNoiseWarning(message), stacklevel=2)
        return history

    # ---- compile / metrics ------------------------------------------------------------------
    def compile(
        self,
        loss: Any = None,
        metrics: Any = None,
        weighted_metrics: Any = None,
        run_eagerly: bool = False,
        steps_per_execution: int = 1,
        jit_compile: bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        """Configures the energy and metrics (there is no optimizer: the sampler updates weights).

        Args:
          loss: Keras loss used, unreduced, as the per-example NLL (unless ``nll`` was given).
          metrics, weighted_metrics: as in ``keras.Model.compile``; evaluated on the cold chain
            (plain names) and on every other chain ``h`` (names suffixed ``_h``).
          jit_compile: ``True``, ``False`` or ``"auto"``: XLA on TPU and GPU, and on a single CPU
            device for models without convolutions (see :mod:`tf_vrre.sampler.xla`, where the
            measurements behind the rule are); ``None`` (default): ``$TF_VRRE_JIT_COMPILE``, else
            ``"auto"``.  ``self.jit_compile`` holds the choice.
          steps_per_execution: train steps per compiled call (Keras').

        Under a strategy of several replicas (either placement) ``steps_per_execution > 1``
        (outside a TPU) and XLA on CPU devices cannot run: they are refused here with an
        :class:`tf_vrre.sampler.execution.ExecutionError` naming the argument and the values
        allowed, before any step (:mod:`tf_vrre.sampler.execution`).
        """
        if kwargs.get("optimizer") is not None:
            raise TypeError("compile: ReplicaExchangeSampler updates the weights itself; do not pass an optimizer")
        kwargs.pop("optimizer", None)
        if loss is not None and self.nll is not None:
            raise ValueError("compile: the sampler was built with nll=...; do not also pass loss")
        if loss is None and self.nll is None:
            raise ValueError(
                "compile: give loss= (a per-example negative log-likelihood, e.g. "
                "SparseCategoricalCrossentropy(from_logits=True)) or build the "
                "sampler with nll=callable"
            )
        execution.check(self.distribute_strategy, False if run_eagerly else jit_compile, steps_per_execution)
        use_xla = xla.resolve_jit_compile(jit_compile, self.chains[0]) and not run_eagerly
        super().compile(
            optimizer=None,
            loss=None,
            metrics=metrics,
            weighted_metrics=weighted_metrics,
            run_eagerly=run_eagerly,
            steps_per_execution=steps_per_execution,
            jit_compile=use_xla,
            **kwargs,
        )
        self._compile_args = {
            "loss": loss,
            "metrics": metrics,
            "weighted_metrics": weighted_metrics,
            "steps_per_execution": steps_per_execution,
            "jit_compile": jit_compile,
        }
        self._nll_fn = self.nll if self.nll is not None else energy.resolve_nll(loss)
        self._compile_chain_metrics(metrics, weighted_metrics)
        self.train_function = None

    # ---- energy helpers -----------------------------------------------------------------
    def _per_example_nll(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> tf.Tensor:
        if self._nll_fn is None:
            raise ValueError("the sampler has no likelihood yet: call compile(loss=...) before fit or evaluate")
        return energy.weighted_nll(self._nll_fn, x, y, y_pred, sample_weight)

    def _energy_fn(self, model: keras.Model, x: Any, y: Any, sample_weight: Any) -> tf.Tensor:
        """Per-example NLLs of ``model`` in the sampler's energy mode (snapshots, full pass)."""
        return self._per_example_nll(x, y, model(x, training=self.energy_mode == "train"), sample_weight)

    def _check_batch(self, x: Any, y: Any) -> None:
        batch.check(x, y, needs_labels=self.nll is None)

    # ---- the train step -------------------------------------------------------------------
    def _swapping(self) -> tuple[swaps.CorrectedSwap, SwapEnergyEstimator, SwapState] | None:
        """The swap rule in force, step 3's estimator and the swap state; ``None`` without swaps."""
        if self._swap is None or self._swap_energy is None or self.state.swap is None:
            return None
        return self._swap, self._swap_energy, self.state.swap

    def train_step(self, data: Any) -> dict:
        """One step of every chain on the batch ``data`` (the recipe in the module docstring)."""
        if self._host is not None:  # this replica's chain (tf_vrre.sampler.replica_step)
            return replica_step.train_step(self, data)
        minibatch = batch.from_data(data)
        self._check_batch(minibatch.x, minibatch.y)
        state = self.state
        step = tf.convert_to_tensor(state.step)
        key = seeds.step_key(seeds.base_key(self.seed), step)
        lrs = hyperparameters.current(self.learning_rates, state.ladder.learning_rate, step)
        temps = hyperparameters.current(self.temperatures, state.ladder.temperature, step)
        refreshed = self._refresh(step)  # 1. refresh
        scale = None if state.loss_scale is None else tf.convert_to_tensor(state.loss_scale.scale)
        forward = gradients.forward_and_gradients(
            self.chains,
            minibatch,
            self._per_example_nll,  # 2. gradients
            self.weight_decay,
            self.data_size,
            scale,
            measure=self._measures_noise(step),
        )
        swapping = self._swapping()
        if swapping is not None:
            rule, swap_energy, swap_state = swapping
            # Why the swap reads this step's batch and the pre-update weights: Algorithm 1 of the
            # paper updates beta_k on B_k, then tests a swap of the updated beta_k on the *next*
            # batch B_{k+1}. Steps k and k+1 meet here: the weights before this step's update are
            # beta_k and this batch is B_{k+1}, so the swap test is Algorithm 1's, one step
            # shifted, and in energy_mode="train" its energies are the gradient's forward pass
            # (no extra forward). The swapped states then take this step's update, gradients
            # moved with them (exchange_forward) - see tf_vrre.sgmcmc.swap_energy.
            possible = rule.possible(step, swap_state)
            adaptive = self.variance_reduction is not None and self.variance_reduction.adaptive
            energies = swap_energy(minibatch, forward, possible, adaptive)  # 3. energies
            results = rule.attempt(swap_state, energies, temps, step, key)  # 4. swap
            forward = exchange_forward(state.chains, state.control_variates, results, (lrs, temps), forward)
            rule.count(swap_state, results, step, energies.energy)
        sums = tf.stack([tf.reduce_sum(tf.cast(v, tf.float64)) for v in forward.nlls])
        if forward.noise is None:
            sums = distribute.all_reduce(sums)
        else:  # one cross-replica sum for both
            both = distribute.all_reduce(tf.concat([sums, tf.reshape(tf.stack(forward.noise), [-1])], 0))
            sums = both[: self.num_chains]
            self._update_excess_temperature(tf.reshape(both[self.num_chains :], [-1, 2]), minibatch.size, lrs)
        state.batch_energy.assign(
            energy.minibatch_energy(sums, minibatch.size, self.data_size, tf.stack(forward.priors))
        )
        overflow = tf.constant(False)
        if state.loss_scale is not None:  # float16: non-finite gradients lower the scale, skip the update
            overflow = tf.logical_not(invariants.all_finite([g for gs in forward.grads for g in gs]))
            state.loss_scale.update(tf.logical_not(overflow))
        updated = self._diffusion.step(state.chains, forward.grads, lrs, temps, key)  # 5. update
        if swapping is not None:
            self._bookkeeping(rule, swap_state, step, possible, results, energies, refreshed)  # 6. bookkeeping
        self._faults.record(
            step,
            invariants.step_checks(
                lrs,
                temps,
                forward,
                minibatch.x,
                sums,
                overflow,
                updated,
                None if swapping is None else results.correction,
            ),
        )
        self._update_metrics(minibatch, forward)
        logs = self._step_logs(lrs, temps)
        logs[cost.LOG_KEY] = cost.of_step(self, step, minibatch.size)
        if swapping is not None:
            logs.update({f"sigma2_used_{p}": results.sigma2[p] for p in range(self.num_chains - 1)})
        # After the batch is consumed (make_dataset reads the counter when its iterator starts;
        # without the data dependency the increment may run before get_next).
        with tf.control_dependencies([sums]):  # sums of this batch's NLLs: data-dependent
            state.step.assign_add(1)
        return distribute.reducible_logs(logs)

    def _maybe_symbolic_build(self, iterator: Any = None, data_batch: Any = None) -> None:
        """As Keras, but from the first replica's batch (:func:`tf_vrre.sgmcmc.distribute.symbolic_build`);
        overrides a private Keras method (:data:`tf_vrre._keras_compat.SYMBOLIC_BUILD_HOOK`)."""
        if not _keras_compat.has_distribute_strategy(self) or iterator is None:
            return super()._maybe_symbolic_build(iterator, data_batch)
        distribute.symbolic_build(self, iterator)

    def make_train_function(self, force: bool = False) -> Callable:
        """Keras' train function, followed by the host check of the in-graph fault register
        (:func:`tf_vrre.sampler.invariants.checked`): a broken invariant raises a ``SamplerError``."""
        super().make_train_function(force)
        function = invariants.checked(self, self.train_function)
        if self._host is not None:
            function = placements.synced(self, function)
        self.train_function = function
        return function
