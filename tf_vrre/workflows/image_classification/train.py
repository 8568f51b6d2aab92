"""Config -> data, sampler, callbacks, ``fit``: the library behind ``tf-vrre train``.

:func:`train` runs one method config end to end into a run directory (layout in
:mod:`tf_vrre.runs.run_json`) and resumes it when called again on the same directory:

1. the preflight (:func:`tf_vrre.workflows.image_classification.planning.preflight`, the checks
   ``tf-vrre train`` makes before TensorFlow starts) checks the run directory against the config
   (checked once by :func:`tf_vrre.workflows.image_classification.config.resolve`): a ``run.json``
   of a *different* config is refused unless ``overwrite=True``; a complete run is left alone;
2. the training split is loaded (tfds or ``.npz``), a class-balanced part is held out, the
   normalisation is fitted on the training images;
3. the strategy is made (:mod:`tf_vrre.workflows.image_classification.strategies`: default,
   mirrored, multiworker, tpu), the run lock taken (:mod:`tf_vrre.runs.locks`) and the
   sampler built inside its scope (``BatchNormalization(synchronized=True)`` when there are several
   replicas), with the schedule stretched to the run's epochs, and compiled with ``jit_compile`` /
   ``steps_per_execution`` (XLA forced under a TPU; both recorded in ``run.json["execution"]``);
   under ``MultiWorkerMirroredStrategy`` only the chief writes ``out``;
4. ``fit`` runs with ``EpochTimer`` -> ``SwapLogger`` -> ``SampleCollector`` -> progress -> CSV ->
   TensorBoard -> :class:`tf_vrre.callbacks.checkpoint.Checkpoint` in ``out/backup`` (atomic; it saves
   after every callback's epoch end, so every record of an epoch is on disk before its checkpoint).

Example:
  >>> import os
  >>> from tf_vrre.workflows.image_classification import config
  >>> os.makedirs("data/cifar10")
  >>> np.savez("data/cifar10/cifar10_train.npz", y=np.arange(160) % 10,
  ...          x=np.random.default_rng(0).integers(0, 256, size=(160, 32, 32, 3), dtype=np.uint8))
  >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {
  ...     "training.epochs": 2, "data.subset": 128, "data.holdout": 32, "data.batch_size": 32,
  ...     "data.augment": False, "model.name": "cnn", "model.kwargs.width": 4, "samples.thinning": 2,
  ...     "samples.validation": 32, "variance_reduction.period": 2, "swap.period": 2}))
  >>> plan(cfg, data_dir="data", source="npz")["samples"] > 0
  True
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any

import keras

import tf_vrre.workflows.image_classification.config as config
import tf_vrre.workflows.image_classification.config_ladder as config_ladder
import tf_vrre.workflows.image_classification.models as models
import tf_vrre.workflows.image_classification.placement_checks as placement_checks
import tf_vrre.workflows.image_classification.planning as planning
import tf_vrre.workflows.image_classification.run_callbacks as run_callbacks
import tf_vrre.workflows.image_classification.run_directory as run_directory
import tf_vrre.workflows.image_classification.run_record as run_record
import tf_vrre.workflows.image_classification.strategies as strategies
import tf_vrre.workflows.image_classification.workers as workers
from tf_vrre.callbacks.progress import HostStepCounter
from tf_vrre.runs import atomic, locks, run_json
from tf_vrre.sampler import placements
from tf_vrre.sampler.replica_exchange import ReplicaExchangeSampler
from tf_vrre.sgmcmc import gradient_noise
from tf_vrre.sgmcmc.control_variates import ControlVariates
from tf_vrre.sgmcmc.schedules import CyclicalCosine, EpochExponential, Scaled
from tf_vrre.sgmcmc.swaps import CorrectedSwap
from tf_vrre.workflows.image_classification.data import Augmentation, load_training_data, sources
from tf_vrre.workflows.image_classification.strategies import make_strategy

__all__ = ["plan", "build_sampler", "train", "run"]


def _schedules(cfg: config.Config, values: dict) -> tuple[Any, Any, Any]:
    """Learning rates, temperatures and F as numbers / step schedules (cold chain first)."""
    s, spe = cfg.sampler, values["steps_per_epoch"]
    if cfg.cyclical:
        lr = CyclicalCosine(values["eta"], values["total_steps"], s.cycles, cfg.samples.cycle_threshold)
    else:
        lr = EpochExponential(values["eta"], values["lr_decay"], spe, constant_epochs=values["lr_constant_epochs"])
    tau = None
    if s.temperature is not None:
        tau = s.temperature
        if values["temperature_annealing"] > 1 and values["burn_in_epochs"] > 0:
            tau = EpochExponential(
                tau, 1.0 / values["temperature_annealing"], spe, constant_epochs=1, stop_epoch=values["burn_in_epochs"]
            )
    correction = None
    if cfg.swap is not None:
        correction = cfg.swap.correction
        if values["correction_growth"] > 1 and values.get("burn_in_epochs", 0) > 0:
            correction = EpochExponential(
                correction, values["correction_growth"], spe, constant_epochs=1, stop_epoch=values["burn_in_epochs"]
            )
    if not cfg.replica:
        return lr, tau, correction
    if cfg.ladder is None:  # the paper's two chains
        return [lr, Scaled(lr, s.hot_lr_multiplier)], [tau, Scaled(tau, s.hot_temperature_multiplier)], correction
    temperature_multiples, lr_multiples = config_ladder.rungs(cfg)
    lrs = [lr] + [Scaled(lr, m) for m in lr_multiples[1:]]
    if config_ladder.tuned(cfg):  # numbers: the tuner sets them (a tuned ladder has a fixed temperature)
        return lrs, [float(s.temperature) * m for m in temperature_multiples], correction
    return lrs, [tau] + [Scaled(tau, m) for m in temperature_multiples[1:]], correction


def build_sampler(
    cfg: config.Config,
    values: dict,
    num_classes: int,
    input_shape: Any,
    data_size: int,
    synchronized_bn: bool = False,
    placement: str = "replicated",
) -> ReplicaExchangeSampler:
    """The :class:`tf_vrre.sampler.replica_exchange.ReplicaExchangeSampler` of a checked config (call
    in a strategy scope).

    BatchNormalization is synchronized across replicas when ``synchronized_bn`` (set by
    :func:`train` when the strategy has several replicas) or ``model.kwargs.synchronized_bn``.
    ``placement``: the sampler's (:mod:`tf_vrre.sampler.placements`; ``"chain_per_replica"``
    refuses synchronized BatchNormalization, which would average statistics across chains).
    """
    s = cfg.sampler
    lrs, taus, correction = _schedules(cfg, values)
    kwargs = dict(cfg.model.kwargs)
    synchronized_bn = bool(kwargs.pop("synchronized_bn", False)) or synchronized_bn
    model_fn = models.Builder(
        cfg.model.name,
        num_classes=num_classes,
        input_shape=tuple(input_shape),
        synchronized_bn=synchronized_bn,
        **kwargs,
    )  # serializable: run identity, save
    swap = vr = None
    if cfg.swap is not None:
        sw = cfg.swap
        ladder = {} if cfg.ladder is None else {"pairs": cfg.ladder.pairs, "deo_window": cfg.ladder.deo_window}
        swap = CorrectedSwap(
            correction=correction,
            smoothing=sw.smoothing,
            period=sw.period or None,
            cooling_steps=values["cooling_steps"],
            **ladder,
        )
    if cfg.variance_reduction is not None:
        v = cfg.variance_reduction
        vr = ControlVariates(period=v.period, coefficient=v.coefficient, smoothing=v.smoothing, batch_size=v.batch_size)
    return ReplicaExchangeSampler(
        model_fn,
        data_size=data_size,
        num_chains=cfg.num_chains,
        temperatures=taus,
        learning_rates=lrs,
        dynamics="msgd" if cfg.method == "msgd" else "sghmc",
        momentum=s.momentum,
        weight_decay=values["weight_decay"],
        swap=swap,
        variance_reduction=vr,
        energy_mode=s.energy_mode,
        seed=cfg.training.seed,
        placement=placement,
    )


def plan(
    cfg: config.Config,
    data_dir: str | None = None,
    source: str = "auto",
    download: bool = True,
    checked: planning.Preflight | None = None,
) -> dict:
    """Loads the data of a checked config and computes the run's numbers (no side effects).

    Args:
      cfg: a checked config.
      data_dir, source, download: where the data are (as :func:`train`).
      checked: the preflight of this run: its numbers are used when they were computed for the
        training-set size found (else they are computed now, e.g. for tfds data).

    Returns:
      dict with ``train`` (:class:`tf_vrre.workflows.image_classification.data.pipeline.TrainingData`),
      ``holdout`` (uint8 ``(x, y)``), ``data`` (the ``run.json`` entry), ``values``
      (:func:`tf_vrre.workflows.image_classification.config_schedule.schedule_values`), ``model`` (the
      ``run.json`` entry) and ``samples`` (expected count).

    Raises:
      ValueError / FileNotFoundError: bad data set, source, sizes; a run that would collect
        no sample (naming ``samples.thinning`` and the steps after burn-in).
    """
    d = cfg.data
    train, holdout, info = load_training_data(
        d.dataset, source, data_dir, d.subset or None, d.holdout, d.split_seed, download
    )
    if checked is not None and checked.train_size == train.size and checked.values is not None:
        values, count = checked.values, checked.samples
    else:
        values, count = planning.check_numbers(cfg, train.size)
    model = {
        "name": cfg.model.name,
        "kwargs": dict(cfg.model.kwargs),
        "num_classes": sources.num_classes(d.dataset),
        "input_shape": list(sources.image_shape(d.dataset)),
    }
    return {"train": train, "holdout": holdout, "data": info, "values": values, "model": model, "samples": count}


def _compile(
    cfg: config.Config, p: dict, strat: Any, jit_compile: Any, steps_per_execution: Any, placement: str, verbose: Any
) -> tuple[Any, dict]:
    """The compiled sampler (built in the strategy's scope) and the ``run.json`` execution record."""
    requested = jit_compile
    forced = strategies.is_tpu(strat) and jit_compile is not True
    if forced:
        jit_compile = True
        _say(verbose, f"jit_compile={requested!r} -> True: TPUStrategy runs XLA-compiled steps only")
    train_data = p["train"]
    with strat.scope():
        sampler = build_sampler(
            cfg,
            p["values"],
            p["model"]["num_classes"],
            p["model"]["input_shape"],
            train_data.size,
            placement=placement,
            synchronized_bn=strat.num_replicas_in_sync > 1 and placement == "replicated",
        )
        if sampler.variance_reduction is not None:
            sampler.set_reference_data(train_data.reference)
        sampler.compile(
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            jit_compile=jit_compile,
            steps_per_execution=steps_per_execution or 1,
        )
    execution = {
        "strategy": strategies.name_of(strat),
        "workers": strategies._num_workers(strat),
        "jit_compile": requested,
        "xla": bool(sampler.jit_compile),
        "xla_forced_by_tpu": forced,
        "steps_per_execution": int(steps_per_execution or 1),
        "placement": placement,
        "replicas": int(strat.num_replicas_in_sync),
        "devices": run_record.devices(strat),
    }
    return sampler, execution


def _say(verbose: Any, text: str) -> None:
    if verbose:
        sys.stderr.write(text + "\n")


def train(
    cfg: config.Config,
    out: str | os.PathLike,
    data_dir: str | None = None,
    source: str = "auto",
    download: bool = True,
    strategy: Any = "auto",
    overwrite: bool = False,
    verbose: Any = 1,
    prepared: dict | None = None,
    jit_compile: bool | str | None = None,
    steps_per_execution: int | None = None,
    placement: str = "replicated",
) -> dict:
    """Trains a checked config into run directory ``out`` (resuming a killed run of it).

    Runs :func:`tf_vrre.workflows.image_classification.planning.preflight` (what ``tf-vrre train``
    checks before TensorFlow starts), then :func:`run`.

    Args:
      cfg: a checked config (:func:`tf_vrre.workflows.image_classification.config.resolve`).
      out: the run directory (created).
      data_dir: tfds data directory or the ``.npz`` root.
      source: ``"auto"`` (npz files in ``data_dir`` if present, else tfds), ``"npz"``, ``"tfds"``.
      download: let tfds download missing data.
      strategy: a name of :data:`tf_vrre.workflows.image_classification.strategies.STRATEGIES`
        (:func:`tf_vrre.workflows.image_classification.strategies.make_strategy`) or a
        ``tf.distribute.Strategy``.  ``"multiworker"`` must be created before TensorFlow runs an
        op: pass the name before doing anything else with TensorFlow, or create it first.  Under
        it only the chief writes ``out``; the other workers write to a temporary directory
        (removed at the end) and, to resume, read the chief's ``out/backup``.
      overwrite: replace a different run in ``out`` (its train and evaluate outputs are removed).
      verbose: progress bar and epoch summaries on stderr.
      prepared: the output of :func:`plan` for this config, if already computed.
      jit_compile: ``None`` (the sampler's default), ``True``, ``False`` or ``"auto"``
        (:mod:`tf_vrre.sampler.xla`); ``True`` under ``TPUStrategy`` whatever is given (logged).
      steps_per_execution: train steps per ``tf.function`` call (``None``: 1), dividing
        ``samples.thinning``; the TPU lever (fewer host round trips).
      placement: ``"replicated"`` or ``"chain_per_replica"`` (one chain per replica: the
        strategy must have as many replicas as the method has chains;
        :mod:`tf_vrre.sampler.placements`), checked when the strategy is made, before the data
        are loaded.

    Returns:
      ``{"status", "resumed", "already_complete", "run", "history", "seconds", "samples", "chief"}``
      (``run["execution"]`` records strategy, workers, ``jit_compile`` asked, ``xla`` used,
      ``steps_per_execution`` and ``placement``).

    Raises:
      tf_vrre.runs.run_json.RunDirError: ``out`` holds a different run (naming the first differing
        key) or foreign outputs; another process writes or reads ``out``
        (:class:`tf_vrre.runs.locks.RunLockedError`: the chief holds ``out/.lock`` while it trains);
        the workers of a multi-worker run see different states of ``out``; ValueError /
        FileNotFoundError from the preflight or :func:`plan`, a bad ``jit_compile`` /
        ``steps_per_execution`` or strategy.  Nothing is written before these checks pass.

    Example:
      >>> import os
      >>> from tf_vrre.workflows.image_classification import config
      >>> os.makedirs("data/cifar10")
      >>> np.savez("data/cifar10/cifar10_train.npz", y=np.arange(160) % 10,
      ...          x=np.random.default_rng(0).integers(0, 256, size=(160, 32, 32, 3), dtype=np.uint8))
      >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {
      ...     "training.epochs": 2, "data.subset": 128, "data.holdout": 32, "data.batch_size": 32,
      ...     "data.augment": False, "model.name": "cnn", "model.kwargs.width": 4, "samples.thinning": 2,
      ...     "samples.validation": 32, "variance_reduction.period": 2, "swap.period": 2}))
      >>> result = train(cfg, "runs/demo", data_dir="data", source="npz", verbose=0,
      ...                jit_compile="auto", steps_per_execution=2)
      >>> result["status"], result["samples"] > 0, sorted(os.listdir("runs/demo"))[:4]
      ('complete', True, ['.lock', 'log.csv', 'run.json', 'samples'])
      >>> open("runs/demo/.lock").read()       # the run lock stays, without a pid once released
      ''
    """
    with _train_checks(cfg, out, strategy, placement):
        pre = planning.preflight(
            cfg, out, data_dir, source, download, overwrite, jit_compile, steps_per_execution, strategy
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gradient_noise.GradientNoiseWarning)
        result = run(dataclasses.replace(pre, placement=placement), strategy, verbose, prepared)
    for w in caught:  # the sampler's warning of its fit, at train's caller; any other as it was
        if issubclass(w.category, gradient_noise.GradientNoiseWarning):
            warnings.warn(w.message, stacklevel=2)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result


@contextlib.contextmanager
def _train_checks(cfg: config.Config, out: str | os.PathLike, strategy: Any, placement: str) -> Iterator[None]:
    """:func:`train`'s checks around its preflight: the ``placement`` first
    (:func:`tf_vrre.workflows.image_classification.placement_checks.check_placement`); a refused run
    directory is shown to every worker of a multi-worker run (or the others would wait forever).
    The preflight runs in :func:`train`'s own frame, so its warnings point at train's caller."""
    if isinstance(cfg, config.Config):  # else the preflight names it
        placement_checks.check_placement(cfg, placement, strategy)
    elif placement not in placement_checks.PLACEMENTS:
        raise ValueError(f"placement must be one of {placement_checks.PLACEMENTS}, got {placement!r}")
    try:
        yield
    except run_json.RunDirError:
        if workers.is_multi_worker(strategy):
            workers.agree(make_strategy(strategy) if isinstance(strategy, str) else strategy, os.fspath(out), -2)
        raise


def check_placement(strategy: Any, pre: planning.Preflight, flags: bool = False) -> None:
    """``ValueError`` if ``pre.placement`` cannot apply under ``strategy`` (one chain per replica
    with a number of replicas other than the config's chains, or a strategy without replicas),
    before data are loaded; ``flags``: the message names the command line's flags."""
    if pre.placement == "replicated":
        return
    where = ", ".join(_short_device(d) for d in run_record.devices(strategy))
    why = placement_checks.replica_mismatch(
        pre.config, strategy.num_replicas_in_sync, strategies.name_of(strategy), where, flags=flags
    )
    if why is not None:
        raise ValueError(why)
    with strategy.scope():
        placements.check(pre.placement, pre.config.num_chains)


def _short_device(name: str) -> str:
    """``"CPU:0"`` for ``"/job:localhost/replica:0/task:0/device:CPU:0"``, ``"worker 1 CPU:0"`` for a
    device of task 1 of job ``worker``."""
    parts = dict(p.split(":", 1) for p in name.strip("/").split("/") if ":" in p)
    device = parts.get("device", name)
    return device if parts.get("job", "localhost") == "localhost" else f"{parts['job']} {parts.get('task', 0)} {device}"


def run(pre: planning.Preflight, strategy: Any = "auto", verbose: Any = 1, prepared: dict | None = None) -> dict:
    """Trains the run ``pre`` describes (a :func:`tf_vrre.workflows.image_classification.planning.preflight`
    that passed); what :func:`train` and ``tf-vrre train`` run after their checks.

    The chief takes the run lock unless this process holds it (:func:`tf_vrre.workflows.image_classification.run_directory.take_run`) and
    releases it at the end; a complete run is left as it is (a leftover checkpoint removed).
    Arguments and result as :func:`train`.
    """
    out = pre.out
    strat = make_strategy(strategy) if isinstance(strategy, str) else strategy  # before plan: multiworker
    strategies.check_options(strat, pre.jit_compile, pre.steps_per_execution)
    check_placement(strat, pre)
    chief = strategies.is_chief(strat)
    if strategies.is_multi_worker(strat):
        workers.agree(strat, out, workers.run_state(pre))
    if pre.complete:
        if chief and os.path.isdir(os.path.join(out, run_json.BACKUP)):  # a kill after the completion record
            taken = not locks.holds_run_lock(out)
            pre = run_directory.take_run(pre) if taken else pre
            shutil.rmtree(os.path.join(out, run_json.BACKUP), ignore_errors=True)
            if taken:
                run_directory.give_back(pre)
        return {
            "status": "complete",
            "resumed": False,
            "already_complete": True,
            "run": pre.existing,
            "history": {},
            "seconds": 0.0,
            "samples": None,
            "chief": chief,
        }
    p = prepared if prepared is not None else plan(pre.config, pre.data_dir, pre.source, pre.download, pre)
    if pre.existing is not None:
        planning.check_same_data(out, pre.existing, p)
    taken = chief and not locks.holds_run_lock(out)
    if taken:
        pre = run_directory.take_run(pre)
    try:
        root, chief = workers.worker_root(strat, pre)
        try:
            return _fit(
                pre.config,
                p,
                strat,
                (out, root, chief),
                (pre.jit_compile, pre.steps_per_execution, pre.placement),
                verbose,
            )
        finally:
            if not chief:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        if taken:
            run_directory.give_back(pre)


def _fit(
    cfg: config.Config, p: dict, strat: Any, where: tuple[str, str, bool], execution: tuple[Any, Any, str], verbose: Any
) -> dict:
    """Compiles, writes ``run.json`` and fits into ``root`` (``where = (out, root, chief)``;
    ``execution = (jit_compile, steps_per_execution, placement)``)."""
    out, root, chief = where
    if not chief:
        _say(
            verbose,
            f"{strategies.worker_name(strat)}: the chief writes {out}; this worker writes to {root} "
            "(removed at the end)",
        )
        verbose = 0
    jit_compile, steps_per_execution, placement = execution
    sampler, record = _compile(cfg, p, strat, jit_compile, steps_per_execution, placement, verbose)
    atomic.remove_temporaries(root, {run_json.RUN_JSON, run_json.LOG})  # a killed run's half-written run.json, log.csv
    run = run_record.write_run(root, cfg, p, sampler, strat, record)
    d = cfg.data
    aug = Augmentation(d.crop_padding, d.flip, d.erasing) if d.augment else None
    mirror = HostStepCounter()  # the pipeline reads the step on the host (a TPU / GPU variable is not readable there)
    ds = p["train"].dataset(d.batch_size, cfg.training.seed, mirror.counter, aug)
    resumed = run_directory.backup_epoch(root) > 0
    _say(
        verbose,
        f"{'resuming' if resumed else 'training'} {cfg.method} ({cfg.num_chains} chain(s), {cfg.model.name}, {d.dataset} "
        f"N={p['train'].size}, {p['values']['epochs']} epochs x {p['values']['steps_per_epoch']} steps, "
        f"{strat.num_replicas_in_sync} replica(s) on {record['workers']} worker(s), "
        f"XLA {'on' if record['xla'] else 'off'}, {record['steps_per_execution']} step(s) per execution)"
        f" -> {out}",
    )
    start = time.perf_counter()
    hist = sampler.fit(
        ds,
        epochs=p["values"]["epochs"],
        verbose=0,
        shuffle=False,
        callbacks=run_callbacks.callbacks(cfg, p, sampler, root, verbose, mirror),
    )
    seconds = time.perf_counter() - start
    if chief:
        locks.lock_run(out)  # still this process's run? (a lock file deleted by hand lets another writer in)
    run["status"] = "complete"
    run["rungs"] = run_record.rungs(sampler, strat)  # the ladder at the end, and where each rung was
    run_json.write_json(os.path.join(root, run_json.RUN_JSON), run)
    # As BackupAndRestore did: a complete run needs no checkpoint (removed after the record, so
    # a kill in between leaves a complete run, whose rerun removes it).
    shutil.rmtree(os.path.join(root, run_json.BACKUP), ignore_errors=True)
    return {
        "status": "complete",
        "resumed": resumed,
        "already_complete": False,
        "run": run,
        "history": hist.history,
        "seconds": seconds,
        "samples": p["samples"],
        "sampler": sampler,
        "chief": chief,
    }
