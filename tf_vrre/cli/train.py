"""``tf-vrre train``: train one method config into a run directory (resumes after a kill).

    tf-vrre train --config vr-resghmc --dataset cifar10 --model resnet20 --out runs/c10-vr
    tf-vrre train --config vr-resghmc --model cnn --subset 2000 --epochs 10 --thinning 16 \\
        --data-dir data --source npz --out runs/cpu-vr         # CPU scale, real data
    tf-vrre train --config vr-resghmc --model resnet20 --strategy tpu --steps-per-execution 32 --out gs://b/r
    TF_CONFIG='{"cluster": {"worker": ["h0:2222", "h1:2222"]}, "task": {"type": "worker", "index": 0}}' \
        tf-vrre train --config vr-resghmc --strategy multiworker --out /shared/runs/c10-vr   # one per worker
"""

import atexit
import math
import os

from tf_vrre.cli._args import INT_MAX as _INT_MAX
from tf_vrre.cli._args import check_config_ranges as _check_config_ranges
from tf_vrre.cli._args import die as _die
from tf_vrre.cli._args import fraction as _fraction
from tf_vrre.cli._args import nonnegative_int as _nonnegative_int
from tf_vrre.cli._args import positive as _positive
from tf_vrre.cli._args import writable as _writable
from tf_vrre.runs.run_json import LOCK as LOCK_NAME
from tf_vrre.workflows.image_classification.strategies import MAX_STEPS_PER_EXECUTION, STRATEGIES

HELP = "train a method config (M-SGD, SGHMC, reSGHMC, VR-reSGHMC, cyclical) into a run directory"
DESCRIPTION = (
    "Trains a config file (shipped names: msgd, sghmc, resghmc, vr-resghmc, cycsghmc, cvr-resghmc; or a "
    "path to a .toml file) with the replica-exchange sampler, collects cold-chain samples, and writes "
    "RUN/run.json, samples/, swaps/, log.csv, tensorboard/ and backup/. Running the same command again "
    "after a kill resumes from the last epoch. Flags override config values; --set section.key=value "
    "overrides any of them. --epochs stretches the config's epoch schedule (same curves over the run).")

# flag dest -> config key
OVERRIDES = {"dataset": "data.dataset", "model": "model.name", "epochs": "training.epochs",
             "batch_size": "data.batch_size", "subset": "data.subset", "holdout": "data.holdout",
             "seed": "training.seed", "thinning": "samples.thinning", "lr": "sampler.lr",
             "erasing": "data.erasing"}


def _key_value(text):
    import argparse

    if "=" not in text or not text.split("=", 1)[0].strip():
        raise argparse.ArgumentTypeError(f"expected section.key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


def _fraction_or_count(text):
    import argparse

    allowed = f"a count in [0, {_INT_MAX}] or a fraction in [0, 1)"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
    if value.is_integer() and "." not in text and "e" not in text.lower():
        value = int(text)
    if value < 0 or (isinstance(value, float) and value >= 1) or value > _INT_MAX:
        raise argparse.ArgumentTypeError(f"must be {allowed}, got {text}")
    return value


def add_arguments(p):
    """Flags of ``tf-vrre train``."""
    p.add_argument("--config", required=True, help="shipped config name (e.g. vr-resghmc) or path to a .toml file")
    p.add_argument("--out", required=True, help="run directory (created; rerun the same command to resume)")
    p.add_argument("--dataset", help="cifar10, cifar100 or svhn (svhn_cropped)")
    p.add_argument("--model", help="cnn, resnet8, resnet20, resnet32 or resnet56")
    p.add_argument("--epochs", type=_positive(int), help="epochs (the config's schedule is stretched to them)")
    p.add_argument("--batch-size", type=_positive(int), help="mini-batch size n")
    p.add_argument("--subset", type=_nonnegative_int, help="training-set size N (0: the whole split)")
    p.add_argument("--holdout", type=_fraction_or_count, help="held-out count or fraction (fitted T, running BMA)")
    p.add_argument("--seed", type=_nonnegative_int, help="seed of the sampler, data order and augmentation")
    p.add_argument("--thinning", type=_positive(int), help="one sample every THINNING steps after burn-in")
    p.add_argument("--lr", type=_positive(float), help="learning rate on the mean loss (eta = lr / N)")
    p.add_argument("--erasing", type=_fraction(closed=True), help="random erasing probability in [0, 1]")
    p.add_argument("--no-augment", action="store_true", help="train without crop / flip / erasing")
    p.add_argument("--set", action="append", default=[], type=_key_value, metavar="SECTION.KEY=VALUE",
                   help="override any config value (TOML syntax), e.g. --set variance_reduction.period=50")
    p.add_argument("--data-dir", help="tfds data directory, or the root of .npz files (DIR/cifar10/cifar10_train.npz, ...)")
    p.add_argument("--source", choices=("tfds", "npz", "auto"), default="tfds",
                   help="tfds (default), npz, or auto (npz when --data-dir holds the files, else tfds)")
    p.add_argument("--no-download", action="store_true",
                   help="tfds: use prepared data only (offline). Without it, data not prepared in --data-dir are "
                        "downloaded once the download host answers a 5 s connection check (else one-line error)")
    p.add_argument("--strategy", choices=STRATEGIES, default="auto",
                   help="tf.distribute strategy: auto (TPU if one is detected: /dev/accel*, /dev/vfio with a Google "
                        "PCI device, or a $COLAB_TPU_ADDR accepting a TCP connection within 3 s; else mirrored with "
                        "several GPUs, else default), default, mirrored, multiworker (reads TF_CONFIG; run the same "
                        "command on every worker, the chief writes --out), tpu ($COLAB_TPU_ADDR or the local TPU; "
                        "XLA always on)")
    p.add_argument("--jit-compile", choices=("auto", "on", "off"),
                   help="XLA-compile the train step: auto picks XLA on TPU / GPU and for dense nets on one CPU "
                        "(default: $TF_VRRE_JIT_COMPILE, else auto); TPUs always compile")
    p.add_argument("--steps-per-execution", type=_positive(int, MAX_STEPS_PER_EXECUTION), metavar="N",
                   help="train steps per compiled call (default 1; must divide --thinning); fewer host round "
                        "trips, the TPU lever")
    p.add_argument("--overwrite", action="store_true", help="replace a different run in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def resolved_config(args):
    """The resolved config of the parsed flags (``ConfigError`` naming a bad key; no TensorFlow)."""
    from tf_vrre.workflows.image_classification import config

    raw = config.load(args.config)
    overrides = {key: getattr(args, dest) for dest, key in OVERRIDES.items() if getattr(args, dest) is not None}
    if args.no_augment:
        overrides["data.augment"] = False
    overrides.update(dict(args.set))
    return config.resolve(config.apply_overrides(raw, overrides))


def _check_augment_flags(args):
    """``--no-augment`` with an augmentation setting is a contradiction, not a silent no-op."""
    if not args.no_augment:
        return
    given = [f"--erasing {args.erasing:g}"] if args.erasing is not None else []
    given += [f"--set {key}={value}" for key, value in args.set if key in ("data.erasing", "data.flip",
                                                                           "data.crop_padding", "data.augment")]
    if given:
        _die(f"--no-augment contradicts {', '.join(given)}: training without augmentation has no crop, flip or "
             "erasing; drop one of them")


def _is_chief(strategy):
    """False for a non-chief worker of a multi-worker run (``$TF_CONFIG``; no TensorFlow)."""
    from tf_vrre.workflows.image_classification import strategies

    if strategy != "multiworker":
        return True
    try:
        cfg = strategies.tf_config()
    except ValueError as err:
        _die(f"--strategy multiworker: {err}")
    if cfg is None:
        return True
    task = cfg["task"]
    return task["type"] == "chief" or ("chief" not in cfg["cluster"] and task["type"] == "worker"
                                       and int(task["index"]) == 0)


def _lock(args):
    """Takes the run-level lock (:func:`tf_vrre.rundir.lock_run`) for the rest of the process: exit 2
    naming ``--out`` if another process writes it.  A non-chief worker of a multi-worker run writes
    elsewhere and takes none.  A directory made here and left holding only the lock is removed at exit."""
    from tf_vrre.runs import run_json as rundir

    args.run_lock = None
    if not _is_chief(args.strategy):
        return
    created = not os.path.exists(args.out)
    try:
        args.run_lock = rundir.lock_run(args.out)
    except rundir.RunLockedError as err:
        _die(f"--out: {err}")
    except OSError as err:
        _die(f"--out: cannot lock {args.out!r}: {err}")
    if created:
        atexit.register(_remove_if_unused, args.out)


def _remove_if_unused(out):
    try:
        if os.listdir(out) == [LOCK_NAME]:
            os.remove(os.path.join(out, LOCK_NAME))
            os.rmdir(out)
    except OSError:
        pass


def check(args):
    """Config, data location, run directory and ``--out``, before TensorFlow starts (exit 2 on a bad one).

    Sets ``args.cfg`` (the resolved config) and ``args.existing`` (the run already in ``--out``
    with the same config, or ``None``).  Checks that need the images (sizes, the number of
    samples the schedule collects) are made here when the training-set size is known without
    reading images (``--subset``, or npz labels); otherwise in :func:`run`, before anything is written.
    """
    args.run_lock = None
    args.created_out = not os.path.exists(args.out)
    try:
        _check(args)
    except SystemExit:
        _give_back(args)
        raise


def _give_back(args):
    """After a refusal: a directory made for the run lock and still holding nothing else is removed."""
    if getattr(args, "created_out", False) and getattr(args, "run_lock", None) is not None:
        from tf_vrre.runs import run_json as rundir

        rundir.unlock_run(args.out)
        _remove_if_unused(args.out)


def _check(args):
    """The checks of :func:`check` (the run lock first)."""
    from tf_vrre.runs import run_json as rundir
    from tf_vrre.workflows.image_classification import planning as training  # no TensorFlow
    from tf_vrre.workflows.image_classification import strategies
    from tf_vrre.workflows.image_classification.data import sources

    _check_augment_flags(args)
    try:
        args.cfg = resolved_config(args)
    except ValueError as err:
        _die(str(err))
    _check_config_ranges(args.cfg)
    _writable(args.out)
    _lock(args)  # before any check or clear of --out
    try:
        args.existing = training.check_run_dir(args.out, args.cfg, args.overwrite)
    except rundir.RunDirError as err:
        _die(f"--out: {err}")
    try:
        sources.check_available(args.cfg["data"]["dataset"], "train", args.source, args.data_dir,
                                download=not args.no_download)
        size = training.train_size_hint(args.cfg, args.source, args.data_dir)
    except (ValueError, OSError) as err:
        _die(f"--data-dir / --source: {err}")
    if size is not None:
        try:
            training.check_numbers(args.cfg, size)
        except ValueError as err:
            _die(str(err))
    try:
        strategies.check(args.strategy)
    except ValueError as err:
        _die(f"--strategy {args.strategy}: {err}")
    args.jit = {None: None, "auto": "auto", "on": True, "off": False}[args.jit_compile]
    try:
        training.check_execution(args.cfg, args.jit, args.steps_per_execution)
    except ValueError as err:
        _die(f"--jit-compile / --steps-per-execution: {err}")


def run(args):
    """Creates the strategy, loads the data, checks the run's numbers, then trains (after :func:`check`);
    returns the exit status."""
    try:
        return _run(args)
    except SystemExit:
        _give_back(args)
        raise


def _run(args):
    """The body of :func:`run`."""
    from tf_vrre.runs import run_json as rundir
    from tf_vrre.workflows.image_classification import strategies, train as training
    from tf_vrre.runs import samples as run_files

    cfg = args.cfg
    if args.strategy != "multiworker" and args.existing is not None and args.existing.get("status") == "complete":
        print(f"{args.out}: run already complete ({args.existing['method']}); nothing to do")
        return 0
    try:  # first: MultiWorkerMirroredStrategy must exist before TensorFlow runs anything
        strategy = training.make_strategy(args.strategy)
        strategies.check_options(strategy, args.jit, args.steps_per_execution)
    except ValueError as err:
        _die(f"--strategy {args.strategy}: {err}")
    try:
        prepared = training.plan(cfg, args.data_dir, args.source, not args.no_download)
    except (ValueError, OSError) as err:
        _die(str(err))
    try:
        result = training.train(cfg, args.out, args.data_dir, args.source, not args.no_download, strategy,
                                args.overwrite, verbose=not args.quiet, prepared=prepared, jit_compile=args.jit,
                                steps_per_execution=args.steps_per_execution)
    except rundir.RunDirError as err:  # e.g. the workers of a multi-worker run see different states of --out
        _die(f"--out: {err}")
    except run_files.RunFileError as err:  # a damaged sample, manifest or log found on resume
        _die(f"--out: {err}; {run_files.repair_hint(args.out)}" if "sample" in str(err) else f"--out: {err}")
    if result["already_complete"]:
        print(f"{args.out}: run already complete ({result['run']['method']}); nothing to do")
        return 0
    hist = result["history"]
    last = {k: v[-1] for k, v in hist.items() if v}
    parts = [f"{k} {last[k]:.4g}" for k in ("loss", "accuracy", "swaps", "bma_accuracy", "bma_nll") if k in last]
    if not result["chief"]:
        print(f"{cfg['method']}: {', '.join(parts)}; {result['seconds']:.0f} s (a non-chief worker: the chief "
              f"wrote {args.out})")
        return 0
    print(f"{cfg['method']}: {', '.join(parts)}; {result['seconds']:.0f} s -> {args.out} "
          f"(next: tf-vrre evaluate --run {args.out})")
    return 0
