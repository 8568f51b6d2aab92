"""``tf-vrre train``: train one method config into a run directory (resumes after a kill).

    tf-vrre train --config vr-resghmc --dataset cifar10 --model resnet20 --out runs/c10-vr
    tf-vrre train --config vr-resghmc --model cnn --subset 2000 --epochs 10 --thinning 16 \\
        --data-dir data --source npz --out runs/cpu-vr         # CPU scale, real data
    tf-vrre train --config vr-resghmc --model resnet20 --strategy tpu --steps-per-execution 32 --out gs://b/r
    TF_CONFIG='{"cluster": {"worker": ["h0:2222", "h1:2222"]}, "task": {"type": "worker", "index": 0}}' \
        tf-vrre train --config vr-resghmc --strategy multiworker --out /shared/runs/c10-vr   # one per worker
"""

import atexit
import dataclasses
import math
import os
import re
import warnings

import tf_vrre.cli._args as _args
from tf_vrre.workflows.image_classification.strategies import MAX_STEPS_PER_EXECUTION, STRATEGIES

HELP = "train a method config (M-SGD, SGHMC, reSGHMC, VR-reSGHMC, cyclical) into a run directory"
DESCRIPTION = (
    "Trains a config file (shipped names: msgd, sghmc, resghmc, vr-resghmc, cycsghmc, cvr-resghmc; or a "
    "path to a .toml file) with the replica-exchange sampler, collects cold-chain samples, and writes "
    "RUN/run.json, samples/, swaps/, log.csv, tensorboard/ and backup/. Running the same command again "
    "after a kill resumes from the last epoch. Flags override config values; --set section.key=value "
    "overrides any of them. --epochs stretches the config's epoch schedule (same curves over the run); "
    "--schedule keep-rates keeps its per-epoch rates instead (for short runs). A schedule that changes the "
    "learning rate, the temperature or F by more than x10 per epoch gets a warning."
)

# flag dest -> config key
OVERRIDES = {
    "dataset": "data.dataset",
    "model": "model.name",
    "epochs": "training.epochs",
    "batch_size": "data.batch_size",
    "subset": "data.subset",
    "holdout": "data.holdout",
    "seed": "training.seed",
    "thinning": "samples.thinning",
    "lr": "sampler.lr",
    "erasing": "data.erasing",
    "chains": "ladder.chains",
}


def _key_value(text):
    import argparse

    if "=" not in text or not text.split("=", 1)[0].strip():
        raise argparse.ArgumentTypeError(f"expected section.key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


def _fraction_or_count(text):
    import argparse

    allowed = f"a count in [0, {_args.INT_MAX}] or a fraction in [0, 1)"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
    if value.is_integer() and "." not in text and "e" not in text.lower():
        value = int(text)
    if value < 0 or (isinstance(value, float) and value >= 1) or value > _args.INT_MAX:
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
    return value


def add_arguments(p):
    """Flags of ``tf-vrre train``."""
    p.add_argument("--config", required=True, help="shipped config name (e.g. vr-resghmc) or path to a .toml file")
    p.add_argument("--out", required=True, help="run directory (created; rerun the same command to resume)")
    _recipe_flags(p)
    _data_flags(p)
    _execution_flags(p)
    p.add_argument("--overwrite", action="store_true", help="replace a different run in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _recipe_flags(p):
    """The run's recipe: the config's values a flag overrides (data, model, length, sampler)."""
    p.add_argument("--dataset", help="cifar10, cifar100 or svhn (svhn_cropped)")
    p.add_argument("--model", help="cnn, resnet8, resnet20, resnet32 or resnet56")
    p.add_argument("--epochs", type=_args.positive(int), help="epochs (the config's schedule is stretched to them)")
    p.add_argument("--batch-size", type=_args.positive(int), help="mini-batch size n")
    p.add_argument("--subset", type=_args.nonnegative_int, help="training-set size N (0: the whole split)")
    p.add_argument("--holdout", type=_fraction_or_count, help="held-out count or fraction (fitted T, running BMA)")
    p.add_argument("--seed", type=_args.nonnegative_int, help="seed of the sampler, data order and augmentation")
    p.add_argument("--thinning", type=_args.positive(int), help="one sample every THINNING steps after burn-in")
    p.add_argument("--lr", type=_args.positive(float), help="learning rate on the mean loss (eta = lr / N)")
    p.add_argument("--erasing", type=_args.fraction(closed=True), help="random erasing probability in [0, 1]")
    p.add_argument(
        "--chains",
        type=_args.positive(int),
        metavar="K",
        help="number of chains K (ladder.chains; replica methods): without explicit ladder.temperatures, "
        "geometric from sampler.temperature to hot_temperature_multiplier times it",
    )
    p.add_argument(
        "--schedule",
        choices=("stretch", "keep-rates"),
        default="stretch",
        help="stretch (default): the config's schedule stretched to --epochs, the same curves over the "
        "run (4 epochs of the 500-epoch recipe grow F x11.9 per epoch); keep-rates: its per-epoch "
        "factors kept and its phases (constant lr, burn-in) scaled to --epochs, for short runs",
    )
    p.add_argument("--no-augment", action="store_true", help="train without crop / flip / erasing")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        type=_key_value,
        metavar="SECTION.KEY=VALUE",
        help="override any config value (TOML syntax), e.g. --set variance_reduction.period=50",
    )


def _data_flags(p):
    """Where the data come from (tfds or .npz files) and whether they may be downloaded."""
    p.add_argument(
        "--data-dir", help="tfds data directory, or the root of .npz files (DIR/cifar10/cifar10_train.npz, ...)"
    )
    p.add_argument(
        "--source",
        choices=("tfds", "npz", "auto"),
        default="tfds",
        help="tfds (default), npz, or auto (npz when --data-dir holds the files, else tfds)",
    )
    p.add_argument(
        "--no-download",
        action="store_true",
        help="tfds: use prepared data only (offline). Without it, data not prepared in --data-dir are "
        "downloaded once the download host answers a 5 s connection check (else one-line error)",
    )


def _execution_flags(p):
    """How the run executes: the tf.distribute strategy, the chains' placement, XLA, steps per call."""
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="tf.distribute strategy: auto (TPU if one is detected: /dev/accel*, /dev/vfio with a Google "
        "PCI device, or a $COLAB_TPU_ADDR accepting a TCP connection within 3 s; else mirrored with "
        "several GPUs, else default), default, mirrored, multiworker (reads TF_CONFIG; run the same "
        "command on every worker, the chief writes --out), tpu ($COLAB_TPU_ADDR or the local TPU; "
        "XLA always on)",
    )
    p.add_argument(
        "--placement",
        choices=("replicated", "chain-per-replica"),
        default="replicated",
        help="where the chains live under --strategy: replicated (every device holds every chain and "
        "a shard of each batch) or chain-per-replica (one chain per device: --strategy mirrored, tpu or "
        "multiworker with as many replicas as --chains; swaps move temperatures, not weights)",
    )
    p.add_argument(
        "--cpu-devices",
        type=_args.positive(int, 64),
        metavar="N",
        help="with --strategy mirrored: split the CPU into N logical devices and mirror over them, e.g. to "
        "try --placement chain-per-replica with N = --chains on a laptop (they share its cores: no faster)",
    )
    p.add_argument(
        "--jit-compile",
        choices=("auto", "on", "off"),
        help="XLA-compile the train step: auto picks XLA on TPU / GPU and for dense nets on one CPU "
        "(default: $TF_VRRE_JIT_COMPILE, else auto); TPUs always compile",
    )
    p.add_argument(
        "--steps-per-execution",
        type=_args.positive(int, MAX_STEPS_PER_EXECUTION),
        metavar="N",
        help="train steps per compiled call (default 1; must divide --thinning); fewer host round trips, the TPU lever",
    )


def resolved_config(args):
    """The checked config of the parsed flags (``ConfigError`` naming a bad key; no TensorFlow)."""
    from tf_vrre.workflows.image_classification import config, config_schedule

    raw = config.load(args.config)
    overrides = {key: getattr(args, dest) for dest, key in OVERRIDES.items() if getattr(args, dest) is not None}
    if args.no_augment:
        overrides["data.augment"] = False
    overrides.update(dict(args.set))
    raw = config.apply_overrides(raw, overrides)
    if args.schedule == "keep-rates":
        raw = config_schedule.keep_rates(raw)
    return config.resolve(raw)


def _check_schedule_flags(args):
    """``--schedule keep-rates`` sets the schedule's epochs itself: an explicit one contradicts it."""
    given = [f"--set {key}={value}" for key, value in args.set if key == "training.schedule_epochs"]
    if args.schedule == "keep-rates" and given:
        _args.die(
            f"--schedule: keep-rates contradicts {', '.join(given)}: keep-rates writes the schedule for the run's "
            "epochs (training.schedule_epochs = --epochs); drop one of them"
        )


def _warn_schedule(args, caught):
    """The preflight's :class:`ScheduleWarning`, as one ``tf-vrre: warning`` line naming the flags."""
    from tf_vrre.workflows.image_classification import planning

    for w in caught:
        if not isinstance(w.message, planning.ScheduleWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        m = w.message
        _args.warn(
            f"--epochs {m.epochs}: the {m.schedule_epochs}-epoch schedule of --config {args.config} squeezed into "
            f"{m.epochs} epochs changes {m.changes}, more than x10 per epoch, faster than the chains can follow; "
            f"for a short run add --schedule keep-rates (the config's per-epoch rates), or use --epochs "
            f"{m.fewest_epochs} or more"
        )


def _warn_heat(caught):
    """The sampler's :class:`GradientNoiseWarning` as one ``tf-vrre: warning`` line naming the flags;
    any other warning as it was."""
    from tf_vrre.sgmcmc import gradient_noise

    for w in caught:
        if issubclass(w.category, gradient_noise.GradientNoiseWarning):
            _args.warn(f"{w.message} (tf-vrre train: a lower --lr or a larger --batch-size)")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _check_augment_flags(args):
    """``--no-augment`` with an augmentation setting is a contradiction, not a silent no-op."""
    if not args.no_augment:
        return
    given = [f"--erasing {args.erasing:g}"] if args.erasing is not None else []
    given += [
        f"--set {key}={value}"
        for key, value in args.set
        if key in ("data.erasing", "data.flip", "data.crop_padding", "data.augment")
    ]
    if given:
        _args.die(
            f"--no-augment: contradicts {', '.join(given)}: training without augmentation has no crop, flip or "
            "erasing; drop one of them"
        )


# the input a preflight error concerns -> the flags the one-line error names
_FLAGS = {"out": "--out", "data": "--data-dir / --source", "execution": "--jit-compile / --steps-per-execution"}
FLAG_OF = {key: "--" + dest.replace("_", "-") for dest, key in OVERRIDES.items()}
"""Config key -> the flag that sets it (``data.batch_size`` -> ``--batch-size``)."""
_KEY = re.compile(r"\b((?:data|model|training|sampler|swap|ladder|variance_reduction|samples)\.[a-z_]+)")


def config_flag(message, args):
    """The flag an error or warning about a config value names: ``--set`` if the first config key
    in ``message`` was given with ``--set``, else that key's flag (``--batch-size`` for
    ``data.batch_size``), else ``--config``."""
    found = _KEY.search(message)
    key = found.group(1) if found else None
    if key is not None and key in dict(args.set):
        return "--set"
    return FLAG_OF.get(key, "--config")


def _lost_worker(err, strategy):
    """True when ``err`` says another worker of a multi-worker run stopped (crashed or killed):
    TensorFlow's collective ops then fail on the others (``UnavailableError``, after its health
    check misses the worker's heartbeats)."""
    import tensorflow as tf

    from tf_vrre.workflows.image_classification import strategies

    return isinstance(err, tf.errors.UnavailableError) and strategies.is_multi_worker(strategy)


def _check_placement(args, cfg):
    """``--placement``, ``--chains``, ``--strategy`` and ``--cpu-devices`` agree, before TensorFlow
    starts; the number of replicas of a strategy that needs TensorFlow to count them (GPUs, TPU
    cores, workers) is checked once it is made."""
    from tf_vrre.workflows.image_classification import placement_checks

    if args.cpu_devices is not None and args.strategy != "mirrored":
        _args.die(f"--cpu-devices: splits the CPU for --strategy mirrored, got --strategy {args.strategy}")
    try:
        placement_checks.check_placement(
            cfg, args.placement.replace("-", "_"), args.strategy, args.cpu_devices, flags=True
        )
    except ValueError as err:
        _args.die(f"--placement: {err}")


def _strategy_error(args, err):
    text = str(err)
    return f"--strategy: {text}" if text.startswith("strategy") else f"--strategy: {args.strategy}: {text}"


# compile argument -> (its flag, the flag's values that run under several replicas)
_EXECUTION_FLAGS = {
    "steps_per_execution": ("--steps-per-execution", "1"),
    "jit_compile": ("--jit-compile", "off or auto"),
}


def _execution_error(args, err):
    """The one line for an execution option the strategy cannot run
    (:class:`tf_vrre.sampler.execution.ExecutionError`), naming the flag and its allowed values."""
    if getattr(err, "argument", None) not in _EXECUTION_FLAGS:
        return _strategy_error(args, err)
    flag, allowed = _EXECUTION_FLAGS[err.argument]
    if err.argument == "steps_per_execution":
        value = str(args.steps_per_execution)
    elif err.source:
        value = f"not given, and {err.source} turns XLA on: it"
    else:
        value = args.jit_compile
    return f"{flag}: {value} {err.reason} (--strategy {args.strategy}); allowed here: {allowed}"


def check(args):
    """Config, data location, run directory and ``--out``, before TensorFlow starts (exit 2 on a bad one).

    One preflight (:func:`tf_vrre.workflows.image_classification.planning.preflight`, the one
    ``train()`` runs too) checks everything that needs no image: the config, the run directory
    (read only), the data location, the run's numbers when the training-set size is known
    without reading images (``--subset``, or npz labels; otherwise after loading them, before
    anything is written), the strategy and the execution options.  Then the run lock is taken
    (the chief of a multi-worker run only) and the directory checked again under it; a refused
    command has changed nothing.  Sets ``args.preflight``.
    """
    from tf_vrre.runs import run_json
    from tf_vrre.workflows.image_classification import planning, run_directory

    _check_augment_flags(args)
    _check_schedule_flags(args)
    try:
        cfg = resolved_config(args)
    except ValueError as err:
        _args.die(f"{config_flag(str(err), args)}: {err}")
    _check_placement(args, cfg)
    if os.path.isdir(args.out):  # an existing run: no probe file in it (a refused command changes nothing)
        if not os.access(args.out, os.W_OK | os.X_OK):
            _args.die(f"--out: {args.out!r} is not writable: permission denied")
    else:
        _args.writable(args.out)
    args.jit = {None: None, "auto": "auto", "on": True, "off": False}[args.jit_compile]
    try:
        writer = planning.writes_run(args.strategy)  # False: a non-chief worker, writing elsewhere, takes no lock
    except ValueError as err:
        _args.die(_strategy_error(args, err))
    try:
        with warnings.catch_warnings(record=True) as caught:  # printed below, once the run is accepted
            warnings.simplefilter("always", planning.ScheduleWarning)
            args.preflight = planning.preflight(
                cfg,
                args.out,
                args.data_dir,
                args.source,
                not args.no_download,
                args.overwrite,
                args.jit,
                args.steps_per_execution,
                args.strategy,
                writer,
            )
    except (ValueError, OSError) as err:
        argument = getattr(err, "argument", None)
        flag = config_flag(str(err), args) if argument == "config" else _FLAGS.get(argument, "--config")
        _args.die(_strategy_error(args, err) if argument == "strategy" else f"{flag}: {err}")
    args.preflight = dataclasses.replace(args.preflight, placement=args.placement.replace("-", "_"))
    if not writer:
        _warn_schedule(args, caught)
        return
    try:
        args.preflight = run_directory.take_run(args.preflight)
    except run_json.RunDirError as err:  # RunLockedError too
        _args.die(f"--out: {err}")
    except OSError as err:
        _args.die(f"--out: cannot lock {args.out!r}: {err}")
    atexit.register(run_directory.give_back, args.preflight)
    _warn_schedule(args, caught)


def run(args):
    """Creates the strategy, loads the data, checks the run's numbers if not done yet, then trains
    (after :func:`check`); releases the run lock; returns the exit status."""
    from tf_vrre.workflows.image_classification import run_directory

    try:
        return _run(args)
    finally:
        run_directory.give_back(args.preflight)


def _run(args):
    """The body of :func:`run`."""
    import shutil

    from tf_vrre.runs import run_json, samples
    from tf_vrre.workflows.image_classification import strategies, train

    pre = args.preflight
    if args.strategy != "multiworker" and pre.complete:
        if os.path.isdir(os.path.join(args.out, run_json.BACKUP)):  # a kill after the completion record
            from tf_vrre.runs import locks

            locks.lock_run(args.out)  # held since check(): its pid now, as it writes
            shutil.rmtree(os.path.join(args.out, run_json.BACKUP), ignore_errors=True)
        print(f"{args.out}: run already complete ({pre.existing['method']}); nothing to do")
        return 0
    try:  # first: MultiWorkerMirroredStrategy must exist before TensorFlow runs anything
        cpus = getattr(args, "cpu_devices", None)
        strategy = (
            train.make_strategy(args.strategy) if cpus is None else train.make_strategy(args.strategy, cpu_devices=cpus)
        )
    except ValueError as err:
        _args.die(_strategy_error(args, err))
    try:
        strategies.check_options(strategy, pre.jit_compile, pre.steps_per_execution)
    except ValueError as err:  # the sampler's rule (tf_vrre.sampler.execution), in the flags' words
        _args.die(_execution_error(args, err))
    try:
        train.check_placement(strategy, pre, flags=True)
    except ValueError as err:
        _args.die(f"--placement: {err}")
    try:
        prepared = train.plan(pre.config, pre.data_dir, pre.source, pre.download, checked=pre)
    except (ValueError, OSError) as err:  # the data (tfds: their size is known only now), or the numbers for it
        flag = config_flag(str(err), args) if _KEY.search(str(err)) else "--data-dir / --source"
        _args.die(f"{flag}: {err}")
    from tf_vrre.sgmcmc import gradient_noise

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", gradient_noise.GradientNoiseWarning)
            result = train.run(pre, strategy, verbose=not args.quiet, prepared=prepared)
        _warn_heat(caught)
    except run_json.RunDirError as err:  # e.g. the workers of a multi-worker run see different states of --out
        _args.die(f"--out: {err}")
    except samples.RunFileError as err:  # a damaged sample, manifest or log found on resume
        _args.die(f"--out: {err}; {samples.repair_hint(args.out)}" if "sample" in str(err) else f"--out: {err}")
    except Exception as err:
        if not _lost_worker(err, strategy):
            raise
        task = re.search(r"/job:\w+/replica:\d+/task:\d+", str(err))
        what = f"{task.group(0)} stopped answering" if task else str(err).strip().splitlines()[0][:200]
        _args.die(
            f"--strategy: multiworker: a worker stopped ({what}); TensorFlow cannot go on or resume with a worker "
            "missing: start every worker again with the same command, and all resume from "
            f"{os.path.join(args.out, 'backup')} (the chief's last finished epoch)"
        )
    if result["already_complete"]:
        print(f"{args.out}: run already complete ({result['run']['method']}); nothing to do")
        return 0
    hist = result["history"]
    last = {k: v[-1] for k, v in hist.items() if v}
    parts = [f"{k} {last[k]:.4g}" for k in ("loss", "accuracy", "swaps", "bma_accuracy", "bma_nll") if k in last]
    method = pre.config.method
    if not result["chief"]:
        print(
            f"{method}: {', '.join(parts)}; {result['seconds']:.0f} s (a non-chief worker: the chief wrote {args.out})"
        )
        return 0
    print(
        f"{method}: {', '.join(parts)}; {result['seconds']:.0f} s -> {args.out} "
        f"(next: tf-vrre evaluate --run {args.out})"
    )
    return 0
