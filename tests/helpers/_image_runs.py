"""Tiny image-workflow runs shared by the training / evaluation / CLI tests."""

import os

from tf_vrre.workflows.image_classification import config

TINY = {
    "data.subset": 64,
    "data.batch_size": 32,
    "data.holdout": 32,
    "training.epochs": 2,
    "model.name": "cnn",
    "model.kwargs.width": 4,
    "samples.thinning": 1,
    "samples.validation": 16,
}


def tiny_config(method, **overrides):
    """The shipped config of ``method`` at toy scale (4 steps on 64 real images)."""
    over = dict(TINY)
    if method in config.VARIANCE_REDUCED:
        over.update({"variance_reduction.period": 2, "variance_reduction.batch_size": 64})
    if method in config.REPLICA:
        over.update({"swap.period": 1, "swap.correction": 1e6})
    if method in config.CYCLICAL:
        over["sampler.cycles"] = 1
    else:
        over["samples.burn_in_epochs"] = 0
    over.update({k.replace("__", "."): v for k, v in overrides.items()})
    return config.resolve(config.apply_overrides(config.load(method), over))


def cli_flags(method, out, data_dir, epochs=2, subset=64):
    """``tf-vrre train`` flags of a tiny run."""
    flags = [
        "train",
        "--config",
        method,
        "--model",
        "cnn",
        "--set",
        "model.kwargs.width=4",
        "--subset",
        str(subset),
        "--batch-size",
        "32",
        "--holdout",
        "32",
        "--epochs",
        str(epochs),
        "--thinning",
        "2",
        "--set",
        "samples.validation=16",
        "--data-dir",
        data_dir,
        "--source",
        "npz",
        "--out",
        str(out),
        "--quiet",
    ]
    if method in config.VARIANCE_REDUCED:
        flags += ["--set", "variance_reduction.period=4", "--set", "variance_reduction.batch_size=64"]
    if method in config.REPLICA:
        flags += ["--set", "swap.period=2", "--set", "swap.correction=1e6"]
    if method not in config.CYCLICAL:
        flags += ["--set", "samples.burn_in_epochs=0"]
    return flags


# A K = 4 tuned-ladder run at toy scale (vr-resghmc-ladder): 6 epochs of 8 steps on 64 images, the
# ladder tuned over the first 5 epochs in rounds ending at steps 12 and 40 (DEO pairs: at least 6
# attempts per pair and round, what the tuner needs to measure a pair; two rounds need a phase of at
# least 3 x 12 steps), samples at steps 44 and 48, in the epoch after the tuning phase.
LADDER_RUN = {
    "data.subset": 64,
    "data.batch_size": 8,
    "data.holdout": 32,
    "data.augment": False,
    "training.epochs": 6,
    "training.schedule_epochs": 6,
    "model.name": "cnn",
    "model.kwargs.width": 4,
    "sampler.lr_constant_epochs": 6,
    "samples.thinning": 4,
    "samples.validation": 16,
    "samples.burn_in_epochs": 5,
    "ladder.tune_epochs": 5,
    "ladder.tune_first_round": 12,
    "variance_reduction.period": 8,
    "variance_reduction.batch_size": 64,
    "swap.period": 1,
    "swap.correction": 1e6,
}


def ladder_flags(out, data_dir, *extra):
    """``tf-vrre train`` flags of the toy K = 4 tuned-ladder run (:data:`LADDER_RUN`)."""
    flags = ["train", "--config", "vr-resghmc-ladder", "--data-dir", data_dir, "--source", "npz", "--out", str(out)]
    for key, value in LADDER_RUN.items():
        flags += ["--set", f"{key}={'false' if value is False else value}"]
    return flags + ["--quiet", *map(str, extra)]


def stopped_run(out, data_dir, method="msgd", epochs=2):
    """A tiny ``tf-vrre train`` run stopped right after its first checkpoint, as by a kill (the
    command returns 130): the same command again resumes it."""
    from tf_vrre import cli
    from tf_vrre.runs import fault_points

    def stop(name):
        if name == "checkpoint.committed":
            raise KeyboardInterrupt

    fault_points.hook = stop
    try:
        assert cli.main(cli_flags(method, out, data_dir, epochs=epochs)) == 130
    finally:
        fault_points.hook = None
    assert os.path.isdir(os.path.join(out, "backup"))
