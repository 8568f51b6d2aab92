"""Config -> data, sampler, callbacks, ``fit``: the library behind ``tf-vrre train``.

:func:`train` runs one method config end to end into a run directory (layout in
:mod:`tf_vrre.rundir`) and resumes it when called again on the same directory:

1. the config is resolved (:mod:`tf_vrre.config`) and the run directory checked: a
   ``run.json`` of a *different* config is refused unless ``overwrite=True``; a complete run
   is left alone;
2. the training split is loaded (tfds or ``.npz``), a class-balanced part is held out, the
   normalisation is fitted on the training images;
3. the sampler is built inside the strategy's scope (``BatchNormalization(synchronized=True)``
   when there are several replicas), with the schedule stretched to the run's epochs;
4. ``fit`` runs with ``EpochTimer`` -> ``SwapLogger`` -> ``SampleCollector`` -> progress -> CSV ->
   TensorBoard -> ``BackupAndRestore`` (last, so every record of an epoch is on disk before its
   checkpoint).

Example:
  >>> from tf_vrre import config, training
  >>> cfg = config.resolve(config.apply_overrides(config.load("vr-resghmc"), {
  ...     "training.epochs": 4, "data.subset": 2000, "model.name": "cnn", "samples.thinning": 16}))
  >>> result = training.train(cfg, "runs/demo", data_dir="/work/shared/data", source="npz")
"""

import math
import os
import shutil
import time

from tf_vrre import config as cfgmod
from tf_vrre import rundir

STRATEGIES = ("auto", "default", "mirrored")

__all__ = ["STRATEGIES", "make_strategy", "plan", "check_run_dir", "build_sampler", "train", "expected_samples"]


def make_strategy(name="auto"):
    """``"default"``: the current strategy; ``"mirrored"``: ``MirroredStrategy`` over all local
    devices; ``"auto"``: mirrored when there is more than one GPU, else default."""
    import tensorflow as tf

    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")
    if name == "mirrored" or (name == "auto" and len(tf.config.list_logical_devices("GPU")) > 1):
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def expected_samples(cfg, values):
    """Number of cold-chain samples the run will collect (thinning, burn-in, cycles)."""
    every, total = cfg["samples"]["thinning"], values["total_steps"]
    burn = values["sample_burn_in_steps"]
    steps = range(every * (burn // every + 1), total + 1, every)
    if cfg["method"] in cfgmod.CYCLICAL:  # CyclicalCosine.in_sampling_phase(step - 1), without Keras
        length = math.ceil(total / cfg["sampler"]["cycles"])
        steps = [s for s in steps if ((s - 1) % length) / length > cfg["samples"]["cycle_threshold"]]
    count = len(steps)
    cap = cfg["samples"]["max_samples"]
    return min(count, cap) if cap else count


def _schedules(cfg, values):
    """Learning rates, temperatures and F as numbers / step schedules (cold chain first)."""
    from tf_vrre.schedules import CyclicalCosine, EpochExponential, Scaled

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
    import models
    from tf_vrre.energy import ControlVariates
    from tf_vrre.sampler import ReplicaExchangeSampler
    from tf_vrre.swaps import CorrectedSwap

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
    from tf_vrre.data import load_training_data, sources

    d = cfg["data"]
    train, holdout, info = load_training_data(d["dataset"], source, data_dir, d["subset"] or None, d["holdout"],
                                              d["split_seed"], download)
    values, count = check_numbers(cfg, train.size)
    model = {"name": cfg["model"]["name"], "kwargs": dict(cfg["model"]["kwargs"]),
             "num_classes": sources.num_classes(d["dataset"]), "input_shape": list(sources.image_shape(d["dataset"]))}
    return {"train": train, "holdout": holdout, "data": info, "values": values, "model": model, "samples": count}


def check_numbers(cfg, train_size):
    """``(values, samples)`` of a run on ``train_size`` images, or a ``ValueError`` (no TensorFlow).

    Checks: the batch fits the data, the control variates are refreshed at least once, the
    schedule collects at least one sample (naming ``samples.thinning`` and the burn-in).
    """
    d = cfg["data"]
    if d["batch_size"] > train_size:
        raise ValueError(f"data.batch_size ({d['batch_size']}) must be <= the {train_size} training examples")
    values = cfgmod.schedule_values(cfg, train_size, train_size // d["batch_size"])
    if "variance_reduction" in cfg and cfg["variance_reduction"]["period"] > values["total_steps"]:
        raise ValueError(f"variance_reduction.period ({cfg['variance_reduction']['period']}) must be <= the run's "
                         f"{values['total_steps']} steps, or the control variates are never refreshed")
    count = expected_samples(cfg, values)
    if count == 0:
        raise ValueError(f"samples.thinning ({cfg['samples']['thinning']}) collects no sample: the run has "
                         f"{values['total_steps']} steps, {values['sample_burn_in_steps']} of them burn-in; "
                         "lower --thinning or raise --epochs")
    return values, count


def train_size_hint(cfg, source, data_dir):
    """The number of training images, known without reading images: ``data.subset``, or for the
    npz source the split's label count less the held-out part; ``None`` for tfds (no TensorFlow)."""
    from tf_vrre.data import sources

    d = cfg["data"]
    if d["subset"]:
        return int(d["subset"])
    name = sources.check_dataset(d["dataset"])
    if sources.resolve_source(source, name, "train", data_dir) != "npz":
        return None
    total = sources.npz_split_size(data_dir, name, "train")
    return total - sources.example_count(d["holdout"], total, "holdout")


def check_run_dir(out, cfg, overwrite=False):
    """The existing run (same config) or ``None``; refuses a different run unless ``overwrite``."""
    existing = rundir.read_run(out, required=False)
    if overwrite:
        return None
    if existing is None:
        foreign = [p for p in rundir.TRAIN_OUTPUTS if os.path.exists(os.path.join(out, p))]
        if foreign:
            raise rundir.RunDirError(f"{out!r} holds {', '.join(foreign)} but no run.json; use --overwrite to "
                                     "replace it or choose another --out")
        return None
    diff = rundir.config_difference(existing["config"], cfg)
    if diff is not None:
        key, old, new = diff
        raise rundir.RunDirError(f"{out!r} holds a different run ({existing['method']}): config key {key} is "
                                 f"{old!r} there, {new!r} now; use --overwrite to replace it or choose another --out")
    return existing


def _clear(out):
    for name in rundir.TRAIN_OUTPUTS + rundir.EVAL_OUTPUTS:
        path = os.path.join(out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


def _versions():
    import keras
    import tensorflow as tf

    import tf_vrre

    return {"tf_vrre": tf_vrre.__version__, "tensorflow": tf.__version__, "keras": keras.__version__}


def _callbacks(cfg, p, sampler, out, verbose):
    import keras

    from tf_vrre.callbacks import SampleCollector, SwapLogger
    from tf_vrre.run_callbacks import EpochCSVLogger, EpochProgress, EpochTimer
    from tf_vrre.schedules import CyclicalCosine

    sm, values = cfg["samples"], p["values"]
    cbs = [EpochTimer()]  # first: its epoch time includes the other callbacks' work
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
    cbs.append(keras.callbacks.BackupAndRestore(os.path.join(out, rundir.BACKUP), double_checkpoint=True))
    return cbs


def _write_run(out, cfg, p, sampler, strategy):
    """Writes ``run.json`` (status running) and ``samples/model.json`` atomically; returns the run."""
    run = {"format": rundir.FORMAT, "method": cfg["method"], "config": cfg, "model": p["model"], "data": p["data"],
           "preprocessing": p["train"].preprocessing.to_dict(), "seed": cfg["training"]["seed"],
           "schedule": p["values"], "expected_samples": p["samples"],
           "replicas": int(strategy.num_replicas_in_sync), "versions": _versions(), "status": "running"}
    rundir.write_json(os.path.join(out, rundir.RUN_JSON), run)
    os.makedirs(os.path.join(out, rundir.SAMPLES), exist_ok=True)
    model_json = os.path.join(out, rundir.SAMPLES, rundir.MODEL_JSON)
    with open(model_json + ".tmp", "w") as f:
        f.write(sampler.cold_model.to_json())
    os.replace(model_json + ".tmp", model_json)
    return run


def train(cfg, out, data_dir=None, source="auto", download=True, strategy="auto", overwrite=False, verbose=1,
          prepared=None):
    """Trains a resolved config into run directory ``out`` (resuming a killed run of it).

    Args:
      cfg: a resolved config (:func:`tf_vrre.config.resolve`).
      out: the run directory (created).
      data_dir: tfds data directory or the ``.npz`` root.
      source: ``"auto"`` (npz files in ``data_dir`` if present, else tfds), ``"npz"``, ``"tfds"``.
      download: let tfds download missing data.
      strategy: ``"auto"``, ``"default"``, ``"mirrored"`` or a ``tf.distribute.Strategy``.
      overwrite: replace a different run in ``out`` (its train and evaluate outputs are removed).
      verbose: progress bar and epoch summaries on stderr.
      prepared: the output of :func:`plan` for this config, if already computed.

    Returns:
      ``{"status", "resumed", "already_complete", "run", "history", "seconds", "samples"}``.

    Raises:
      tf_vrre.rundir.RunDirError: ``out`` holds a different run (naming the first differing
        key) or foreign outputs; ValueError / FileNotFoundError from :func:`plan`.  Nothing is
        written before these checks pass.
    """
    out = str(out)
    existing = check_run_dir(out, cfg, overwrite)
    if existing is not None and existing.get("status") == "complete":
        return {"status": "complete", "resumed": False, "already_complete": True, "run": existing,
                "history": {}, "seconds": 0.0, "samples": None}
    p = prepared if prepared is not None else plan(cfg, data_dir, source, download)
    if existing is not None:
        for key in ("train_digest", "holdout_digest", "source"):
            if existing["data"].get(key) != p["data"][key]:
                raise rundir.RunDirError(f"{out!r}: the training data differ from the run's (data.{key} "
                                         f"{existing['data'].get(key)!r} there, {p['data'][key]!r} now)")
    strat = make_strategy(strategy) if isinstance(strategy, str) else strategy
    if overwrite:
        _clear(out)
    os.makedirs(out, exist_ok=True)
    train_data = p["train"]
    with strat.scope():
        sampler = build_sampler(cfg, p["values"], p["model"]["num_classes"], p["model"]["input_shape"],
                                train_data.size, synchronized_bn=strat.num_replicas_in_sync > 1)
        if sampler.variance_reduction is not None:
            sampler.set_reference_data(train_data.reference)
        import keras

        sampler.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    run = _write_run(out, cfg, p, sampler, strat)
    aug = None
    d = cfg["data"]
    if d["augment"]:
        from tf_vrre.data import Augmentation

        aug = Augmentation(d["crop_padding"], d["flip"], d["erasing"])
    ds = train_data.dataset(d["batch_size"], cfg["training"]["seed"], sampler.step_counter, aug)
    resumed = os.path.isdir(os.path.join(out, rundir.BACKUP))
    if verbose:
        import sys

        sys.stderr.write(f"{'resuming' if resumed else 'training'} {cfg['method']} ({cfg['model']['name']}, "
                         f"{d['dataset']} N={train_data.size}, {p['values']['epochs']} epochs x "
                         f"{p['values']['steps_per_epoch']} steps, {strat.num_replicas_in_sync} replica(s)) -> {out}\n")
    start = time.perf_counter()
    hist = sampler.fit(ds, epochs=p["values"]["epochs"], verbose=0, shuffle=False,
                       callbacks=_callbacks(cfg, p, sampler, out, verbose))
    seconds = time.perf_counter() - start
    run["status"] = "complete"
    rundir.write_json(os.path.join(out, rundir.RUN_JSON), run)
    return {"status": "complete", "resumed": resumed, "already_complete": False, "run": run,
            "history": hist.history, "seconds": seconds, "samples": p["samples"], "sampler": sampler}
