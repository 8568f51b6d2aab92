"""Config -> data, sampler, callbacks, ``fit``: the library behind ``tf-vrre train``.

:func:`train` runs one method config end to end into a run directory (layout in
:mod:`tf_vrre.rundir`) and resumes it when called again on the same directory:

1. the config is resolved (:mod:`tf_vrre.config`) and the run directory checked: a
   ``run.json`` of a *different* config is refused unless ``overwrite=True``; a complete run
   is left alone;
2. the training split is loaded (tfds or ``.npz``), a class-balanced part is held out, the
   normalisation is fitted on the training images;
3. the strategy is made (:mod:`tf_vrre.strategies`: default, mirrored, multiworker, tpu) and the
   sampler built inside its scope (``BatchNormalization(synchronized=True)`` when there are several
   replicas), with the schedule stretched to the run's epochs, and compiled with ``jit_compile`` /
   ``steps_per_execution`` (XLA forced under a TPU; both recorded in ``run.json["execution"]``);
   under ``MultiWorkerMirroredStrategy`` only the chief writes ``out``;
4. ``fit`` runs with ``EpochTimer`` -> ``SwapLogger`` -> ``SampleCollector`` -> progress -> CSV ->
   TensorBoard -> :class:`tf_vrre.Checkpoint` in ``out/backup`` (atomic; it saves after every
   callback's epoch end, so every record of an epoch is on disk before its checkpoint).

Example:
  >>> import os
  >>> from tf_vrre.workflows.image_classification import config, train as training
  >>> os.makedirs("data/cifar10")
  >>> np.savez("data/cifar10/cifar10_train.npz", y=np.arange(160) % 10,
  ...          x=np.random.default_rng(0).integers(0, 256, size=(160, 32, 32, 3), dtype=np.uint8))
  >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {
  ...     "training.epochs": 2, "data.subset": 128, "data.holdout": 32, "data.batch_size": 32,
  ...     "data.augment": False, "model.name": "cnn", "model.kwargs.width": 4, "samples.thinning": 2,
  ...     "samples.validation": 32, "variance_reduction.period": 2, "swap.period": 2}))
  >>> training.plan(cfg, data_dir="data", source="npz")["samples"] > 0
  True
"""

import os
import shutil
import sys
import tempfile
import time

import keras
import tensorflow as tf

from tf_vrre._version import __version__
from tf_vrre.callbacks import SampleCollector, SwapLogger
from tf_vrre.callbacks.checkpoint import Checkpoint
from tf_vrre.callbacks.progress import EpochCSVLogger, EpochProgress, EpochTimer, HostStepCounter
from tf_vrre.runs import atomic
from tf_vrre.runs import run_json as rundir
from tf_vrre.sampler.replica_exchange import ReplicaExchangeSampler
from tf_vrre.sgmcmc.control_variates import ControlVariates
from tf_vrre.sgmcmc.schedules import CyclicalCosine, EpochExponential, Scaled
from tf_vrre.sgmcmc.swaps import CorrectedSwap
import tf_vrre.workflows.image_classification.config as cfgmod
import tf_vrre.workflows.image_classification.models as models
import tf_vrre.workflows.image_classification.strategies as strategies
from tf_vrre.workflows.image_classification.data import Augmentation, load_training_data, sources
from tf_vrre.workflows.image_classification.planning import (_backup_epoch, _clear, check_execution,  # noqa: F401
                                                              check_numbers, check_run_dir, check_same_data,
                                                              expected_samples, train_size_hint)  # (re-exported: training.check_run_dir)
from tf_vrre.workflows.image_classification.strategies import STRATEGIES, make_strategy  # noqa: F401  (re-exported: training.make_strategy)

__all__ = ["STRATEGIES", "make_strategy", "plan", "check_run_dir", "check_same_data", "check_execution", "build_sampler",
           "train", "expected_samples"]


def _schedules(cfg, values):
    """Learning rates, temperatures and F as numbers / step schedules (cold chain first)."""
    s, method, spe = cfg["sampler"], cfg["method"], values["steps_per_epoch"]
    if method in cfgmod.CYCLICAL:
        lr = CyclicalCosine(values["eta"], values["total_steps"], s["cycles"], cfg["samples"]["cycle_threshold"])
    else:
        lr = EpochExponential(values["eta"], values["lr_decay"], spe, constant_epochs=values["lr_constant_epochs"])
    tau = None
    if "temperature" in s:
        tau = s["temperature"]
        if values["temperature_annealing"] > 1 and values["burn_in_epochs"] > 0:
            tau = EpochExponential(tau, 1.0 / values["temperature_annealing"], spe, constant_epochs=1,
                                   stop_epoch=values["burn_in_epochs"])
    correction = None
    if "swap" in cfg:
        correction = cfg["swap"]["correction"]
        if values["correction_growth"] > 1 and values.get("burn_in_epochs", 0) > 0:
            correction = EpochExponential(correction, values["correction_growth"], spe, constant_epochs=1,
                                          stop_epoch=values["burn_in_epochs"])
    if method in cfgmod.REPLICA:
        lrs = [lr, Scaled(lr, s["hot_lr_multiplier"])]
        taus = [tau, Scaled(tau, s["hot_temperature_multiplier"])]
        return lrs, taus, correction
    return lr, tau, correction


def build_sampler(cfg, values, num_classes, input_shape, data_size, synchronized_bn=False):
    """The :class:`tf_vrre.ReplicaExchangeSampler` of a resolved config (call in a strategy scope).

    BatchNormalization is synchronized across replicas when ``synchronized_bn`` (set by
    :func:`train` when the strategy has several replicas) or ``model.kwargs.synchronized_bn``.
    """
    method, s = cfg["method"], cfg["sampler"]
    lrs, taus, correction = _schedules(cfg, values)
    kwargs = dict(cfg["model"]["kwargs"])
    synchronized_bn = bool(kwargs.pop("synchronized_bn", False)) or synchronized_bn
    model_fn = models.Builder(cfg["model"]["name"], num_classes=num_classes, input_shape=tuple(input_shape),
                              synchronized_bn=synchronized_bn, **kwargs)  # serializable: run identity, save
    swap = vr = None
    if method in cfgmod.REPLICA:
        sw = cfg["swap"]
        swap = CorrectedSwap(correction=correction, smoothing=sw["smoothing"], period=sw["period"] or None,
                             cooling_steps=values["cooling_steps"])
    if method in cfgmod.VARIANCE_REDUCED:
        v = cfg["variance_reduction"]
        vr = ControlVariates(period=v["period"], coefficient=v["coefficient"], smoothing=v["smoothing"],
                             batch_size=v["batch_size"])
    return ReplicaExchangeSampler(
        model_fn, data_size=data_size, num_chains=2 if method in cfgmod.REPLICA else 1,
        temperatures=taus, learning_rates=lrs, dynamics="msgd" if method == "msgd" else "sghmc",
        momentum=s["momentum"], weight_decay=values["weight_decay"], swap=swap, variance_reduction=vr,
        energy_mode=s["energy_mode"], seed=cfg["training"]["seed"])


def plan(cfg, data_dir=None, source="auto", download=True):
    """Loads the data of a resolved config and computes the run's numbers (no side effects).

    Returns:
      dict with ``train`` (:class:`tf_vrre.data.TrainingData`), ``holdout`` (uint8 ``(x, y)``),
      ``data`` (the ``run.json`` entry), ``values`` (:func:`tf_vrre.config.schedule_values`),
      ``model`` (the ``run.json`` entry) and ``samples`` (expected count).

    Raises:
      ValueError / FileNotFoundError: bad data set, source, sizes; a run that would collect
        no sample (naming ``samples.thinning`` and the steps after burn-in).
    """
    d = cfg["data"]
    train, holdout, info = load_training_data(d["dataset"], source, data_dir, d["subset"] or None, d["holdout"],
                                              d["split_seed"], download)
    values, count = check_numbers(cfg, train.size)
    model = {"name": cfg["model"]["name"], "kwargs": dict(cfg["model"]["kwargs"]),
             "num_classes": sources.num_classes(d["dataset"]), "input_shape": list(sources.image_shape(d["dataset"]))}
    return {"train": train, "holdout": holdout, "data": info, "values": values, "model": model, "samples": count}


def _versions():
    return {"tf_vrre": __version__, "tensorflow": tf.__version__, "keras": keras.__version__}


def _callbacks(cfg, p, sampler, out, verbose, mirror):
    sm, values = cfg["samples"], p["values"]
    cbs = [EpochTimer(), mirror]  # EpochTimer first: its epoch time includes the other callbacks' work
    if sampler.swap_rule is not None:
        cbs.append(SwapLogger(os.path.join(out, rundir.SWAPS),
                              tensorboard_dir=os.path.join(out, rundir.TENSORBOARD, "swaps")))
    validation = None
    xh, yh = p["holdout"]
    if sm["validation"] and len(xh):
        k = min(sm["validation"], len(xh))
        validation = (p["train"].preprocessing.apply(xh[:k]), yh[:k])
    cycle = None
    if cfg["method"] in cfgmod.CYCLICAL:
        cycle = CyclicalCosine(values["eta"], values["total_steps"], cfg["sampler"]["cycles"], sm["cycle_threshold"])
    cbs.append(SampleCollector(os.path.join(out, rundir.SAMPLES), every=sm["thinning"],
                               burn_in_steps=values["sample_burn_in_steps"], cycle=cycle,
                               max_samples=sm["max_samples"] or None, keep=sm["keep"], validation_data=validation,
                               seed=cfg["training"]["seed"]))
    if verbose:
        cbs.append(EpochProgress(values["epochs"], values["steps_per_epoch"]))
    cbs.append(EpochCSVLogger(os.path.join(out, rundir.LOG)))
    cbs.append(keras.callbacks.TensorBoard(os.path.join(out, rundir.TENSORBOARD), write_graph=False))
    cbs.append(Checkpoint(os.path.join(out, rundir.BACKUP)))  # atomic: exact resume after a kill at any instant
    return cbs


def _write_run(out, cfg, p, sampler, strategy, execution):
    """Writes ``run.json`` (status running) and ``samples/model.json`` atomically; returns the run."""
    run = {"format": rundir.FORMAT, "method": cfg["method"], "config": cfg, "model": p["model"], "data": p["data"],
           "preprocessing": p["train"].preprocessing.to_dict(), "seed": cfg["training"]["seed"],
           "schedule": p["values"], "expected_samples": p["samples"],
           "replicas": int(strategy.num_replicas_in_sync), "execution": execution, "versions": _versions(),
           "status": "running"}
    rundir.write_json(os.path.join(out, rundir.RUN_JSON), run)
    os.makedirs(os.path.join(out, rundir.SAMPLES), exist_ok=True)
    model_json = os.path.join(out, rundir.SAMPLES, rundir.MODEL_JSON)
    atomic.write_text(model_json, sampler.cold_model.to_json())
    return run


def _agree(strat, out, state):
    """Multi-worker: every worker must see the same run state (``state``: -2 refused, -1 complete,
    else the backup epoch to resume from) before any collective step, or a worker would wait forever."""
    views = strategies.gather_ints(strat, [state])
    if len({v[0] for v in views}) > 1:
        names = {-3: "an unreadable backup", -2: "a refused run directory", -1: "a complete run", 0: "a new run"}
        seen = "; ".join(f"worker {i}: {names.get(v[0], f'a backup at epoch {v[0]}')}" for i, v in enumerate(views))
        raise rundir.RunDirError(f"the workers see different states of {out!r} ({seen}); put --out on storage "
                                 "every worker reads (a shared file system or a bucket) and run all workers again")


def _worker_root(strat, out, overwrite):
    """``(directory this process writes, is chief)``: ``out`` on the chief, a temporary directory on
    the other workers of a multi-worker run, seeded with the chief's backup so they resume alike."""
    if strategies.is_chief(strat):
        rundir.lock_run(out)  # the one writer (tf-vrre train took it already, before its checks)
        if overwrite:
            _clear(out)
        os.makedirs(out, exist_ok=True)
        return out, True
    root = tempfile.mkdtemp(prefix=f"tf_vrre-{strategies.worker_name(strat).replace(' ', '')}-")
    backup = os.path.join(out, rundir.BACKUP)
    if not overwrite and os.path.isdir(backup):
        shutil.copytree(backup, os.path.join(root, rundir.BACKUP))
    return root, False


def _compile(cfg, p, strat, jit_compile, steps_per_execution, verbose):
    """The compiled sampler (built in the strategy's scope) and the ``run.json`` execution record."""
    requested = jit_compile
    forced = strategies.is_tpu(strat) and jit_compile is not True
    if forced:
        jit_compile = True
        _say(verbose, f"jit_compile={requested!r} -> True: TPUStrategy runs XLA-compiled steps only")
    train_data = p["train"]
    with strat.scope():
        sampler = build_sampler(cfg, p["values"], p["model"]["num_classes"], p["model"]["input_shape"],
                                train_data.size, synchronized_bn=strat.num_replicas_in_sync > 1)
        if sampler.variance_reduction is not None:
            sampler.set_reference_data(train_data.reference)
        sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                        jit_compile=jit_compile, steps_per_execution=steps_per_execution or 1)
    execution = {"strategy": strategies.name_of(strat), "workers": strategies._num_workers(strat),
                 "jit_compile": requested, "xla": bool(sampler.jit_compile), "xla_forced_by_tpu": forced,
                 "steps_per_execution": int(steps_per_execution or 1)}
    return sampler, execution


def _say(verbose, text):
    if verbose:
        sys.stderr.write(text + "\n")


def _existing_run(cfg, out, overwrite, strat):
    """The run already in ``out`` (same config) or ``None``; raises after every worker of a
    multi-worker run has seen the same state of ``out`` (a refusal, a complete run, the epoch)."""
    refused, existing = None, None
    try:
        existing = check_run_dir(out, cfg, overwrite)
    except rundir.RunDirError as err:
        refused = err
    complete = existing is not None and existing.get("status") == "complete"
    if strategies.is_multi_worker(strat):
        _agree(strat, out, -2 if refused else -1 if complete else 0 if overwrite else _backup_epoch(out))
    if refused is not None:
        raise refused
    return existing


def train(cfg, out, data_dir=None, source="auto", download=True, strategy="auto", overwrite=False, verbose=1,
          prepared=None, jit_compile=None, steps_per_execution=None):
    """Trains a resolved config into run directory ``out`` (resuming a killed run of it).

    Args:
      cfg: a resolved config (:func:`tf_vrre.config.resolve`).
      out: the run directory (created).
      data_dir: tfds data directory or the ``.npz`` root.
      source: ``"auto"`` (npz files in ``data_dir`` if present, else tfds), ``"npz"``, ``"tfds"``.
      download: let tfds download missing data.
      strategy: a name of :data:`STRATEGIES` (:func:`tf_vrre.strategies.make_strategy`) or a
        ``tf.distribute.Strategy``.  ``"multiworker"`` must be created before TensorFlow runs an
        op: pass the name before doing anything else with TensorFlow, or create it first.  Under
        it only the chief writes ``out``; the other workers write to a temporary directory
        (removed at the end) and, to resume, read the chief's ``out/backup``.
      overwrite: replace a different run in ``out`` (its train and evaluate outputs are removed).
      verbose: progress bar and epoch summaries on stderr.
      prepared: the output of :func:`plan` for this config, if already computed.
      jit_compile: ``None`` (the sampler's default), ``True``, ``False`` or ``"auto"``
        (:mod:`tf_vrre.xla`); ``True`` under ``TPUStrategy`` whatever is given (logged).
      steps_per_execution: train steps per ``tf.function`` call (``None``: 1), dividing
        ``samples.thinning``; the TPU lever (fewer host round trips).

    Returns:
      ``{"status", "resumed", "already_complete", "run", "history", "seconds", "samples", "chief"}``
      (``run["execution"]`` records strategy, workers, ``jit_compile`` asked, ``xla`` used and
      ``steps_per_execution``).

    Raises:
      tf_vrre.rundir.RunDirError: ``out`` holds a different run (naming the first differing
        key) or foreign outputs; another process writes ``out`` (:class:`tf_vrre.rundir.RunLockedError`:
        the chief holds ``out/.lock`` while it trains); the workers of a multi-worker run see different states of
        ``out``; ValueError / FileNotFoundError from :func:`plan`, a bad ``jit_compile`` /
        ``steps_per_execution`` or strategy.  Nothing is written before these checks pass.

    Example:
      >>> import os
      >>> from tf_vrre.workflows.image_classification import config, train as training
      >>> os.makedirs("data/cifar10")
      >>> np.savez("data/cifar10/cifar10_train.npz", y=np.arange(160) % 10,
      ...          x=np.random.default_rng(0).integers(0, 256, size=(160, 32, 32, 3), dtype=np.uint8))
      >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {
      ...     "training.epochs": 2, "data.subset": 128, "data.holdout": 32, "data.batch_size": 32,
      ...     "data.augment": False, "model.name": "cnn", "model.kwargs.width": 4, "samples.thinning": 2,
      ...     "samples.validation": 32, "variance_reduction.period": 2, "swap.period": 2}))
      >>> result = training.train(cfg, "runs/demo", data_dir="data", source="npz", verbose=0,
      ...                         jit_compile="auto", steps_per_execution=2)
      >>> result["status"], result["samples"] > 0, sorted(os.listdir("runs/demo"))[:4]
      ('complete', True, ['.lock', 'log.csv', 'run.json', 'samples'])
    """
    out = str(out)
    check_execution(cfg, jit_compile, steps_per_execution)
    strat = make_strategy(strategy) if isinstance(strategy, str) else strategy  # before plan: multiworker
    strategies.check_options(strat, jit_compile, steps_per_execution)
    existing = _existing_run(cfg, out, overwrite, strat)
    complete = existing is not None and existing.get("status") == "complete"
    if complete:
        if strategies.is_chief(strat):  # a kill after the completion record left the checkpoint
            shutil.rmtree(os.path.join(out, rundir.BACKUP), ignore_errors=True)
        return {"status": "complete", "resumed": False, "already_complete": True, "run": existing,
                "history": {}, "seconds": 0.0, "samples": None, "chief": strategies.is_chief(strat)}
    p = prepared if prepared is not None else plan(cfg, data_dir, source, download)
    if existing is not None:
        check_same_data(out, existing, p)
    locked = rundir.holds_lock(out)
    root, chief = _worker_root(strat, out, overwrite)
    try:
        return _fit(cfg, p, strat, (out, root, chief), (jit_compile, steps_per_execution), verbose)
    finally:
        if not chief:
            shutil.rmtree(root, ignore_errors=True)
        elif not locked:  # taken here: released when this call ends
            rundir.unlock_run(out)


def _fit(cfg, p, strat, where, execution, verbose):
    """Compiles, writes ``run.json`` and fits into ``root`` (``where = (out, root, chief)``)."""
    out, root, chief = where
    if not chief:
        _say(verbose, f"{strategies.worker_name(strat)}: the chief writes {out}; this worker writes to {root} "
                      "(removed at the end)")
        verbose = 0
    sampler, record = _compile(cfg, p, strat, *execution, verbose)
    run = _write_run(root, cfg, p, sampler, strat, record)
    d = cfg["data"]
    aug = None
    if d["augment"]:
        aug = Augmentation(d["crop_padding"], d["flip"], d["erasing"])
    mirror = HostStepCounter()  # the pipeline reads the step on the host (a TPU / GPU variable is not readable there)
    ds = p["train"].dataset(d["batch_size"], cfg["training"]["seed"], mirror.counter, aug)
    resumed = _backup_epoch(root) > 0
    _say(verbose, f"{'resuming' if resumed else 'training'} {cfg['method']} ({cfg['model']['name']}, {d['dataset']} "
                  f"N={p['train'].size}, {p['values']['epochs']} epochs x {p['values']['steps_per_epoch']} steps, "
                  f"{strat.num_replicas_in_sync} replica(s) on {record['workers']} worker(s), "
                  f"XLA {'on' if record['xla'] else 'off'}, {record['steps_per_execution']} step(s) per execution)"
                  f" -> {out}")
    start = time.perf_counter()
    hist = sampler.fit(ds, epochs=p["values"]["epochs"], verbose=0, shuffle=False,
                       callbacks=_callbacks(cfg, p, sampler, root, verbose, mirror))
    seconds = time.perf_counter() - start
    run["status"] = "complete"
    rundir.write_json(os.path.join(root, rundir.RUN_JSON), run)
    # As BackupAndRestore did: a complete run needs no checkpoint (removed after the record, so
    # a kill in between leaves a complete run, whose rerun removes it).
    shutil.rmtree(os.path.join(root, rundir.BACKUP), ignore_errors=True)
    return {"status": "complete", "resumed": resumed, "already_complete": False, "run": run,
            "history": hist.history, "seconds": seconds, "samples": p["samples"], "sampler": sampler, "chief": chief}
