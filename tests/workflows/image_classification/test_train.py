"""`tf_vrre.workflows.image_classification.train`: every config trains, run directories follow the contract, resume, refusal."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from _image_runs import cli_flags, tiny_config
from _paths import HELPERS, ROOT

from tf_vrre.callbacks.sample_collector import load_samples
from tf_vrre.runs import run_json
from tf_vrre.workflows.image_classification import config, train


@pytest.mark.parametrize("method", config.METHODS)
def test_each_config_trains_and_writes_the_run_directory(method, image_data_dir, tmp_path):
    cfg = tiny_config(method, data__erasing=0.5 if method == "vr-resghmc" else 0.0)
    out = tmp_path / "run"
    result = train.train(cfg, out, data_dir=image_data_dir, source="npz", verbose=0)
    run = json.load(open(out / "run.json"))
    assert run["format"] == "tf_vrre.run/1" and run["method"] == method and run["status"] == "complete"
    assert (
        run["config"] == cfg.to_dict()
        and run["seed"] == 0
        and set(run["versions"]) == {"tf_vrre", "tensorflow", "keras"}
    )
    assert run["model"] == {"name": "cnn", "kwargs": {"width": 4}, "num_classes": 10, "input_shape": [32, 32, 3]}
    assert run["data"]["train_size"] == 64 and run["data"]["holdout"] == 32 and run["data"]["source"] == "npz"
    p = run["preprocessing"]
    assert p["kind"] == "normalize" and p["scale"] == 1 / 255 and len(p["mean"]) == len(p["std"]) == 3
    hist = result["history"]
    assert len(hist["loss"]) == 2 and all(np.isfinite(hist["loss"]))
    samples = load_samples(out / "samples")
    assert len(samples) == result["samples"] >= 1
    import keras

    net = keras.models.model_from_json(open(out / "samples" / "model.json").read())
    net.set_weights(samples.weights(0))
    assert os.path.isfile(out / "log.csv") and os.path.isdir(out / "tensorboard")
    assert os.path.isdir(out / "swaps") == (method in config.REPLICA)
    if method in config.REPLICA:
        rows = list(csv.DictReader(open(out / "swaps" / "swaps.csv")))
        assert len(rows) >= 1  # sigma2 exists after the first window: swaps are attempted
    assert not os.path.exists(out / "backup")  # removed when training completes
    assert (out / ".lock").read_text() == ""  # the run lock, released: no stale pid


def test_run_directory_refuses_another_config(image_data_dir, tmp_path):
    cfg = tiny_config("msgd")
    out = tmp_path / "run"
    train.train(cfg, out, data_dir=image_data_dir, source="npz", verbose=0)
    before = open(out / "run.json").read()
    other = tiny_config("msgd", training__seed=1)
    with pytest.raises(
        run_json.RunDirError,
        match=r"holds a different run \(msgd\): config key training.seed is 0 "
        r"there, 1 now; use --overwrite",
    ):
        train.train(other, out, data_dir=image_data_dir, source="npz", verbose=0)
    assert open(out / "run.json").read() == before  # nothing touched
    again = train.train(cfg, out, data_dir=image_data_dir, source="npz", verbose=0)
    assert again["already_complete"]
    train.train(other, out, data_dir=image_data_dir, source="npz", verbose=0, overwrite=True)
    assert json.load(open(out / "run.json"))["seed"] == 1
    os.remove(out / "run.json")
    with pytest.raises(run_json.RunDirError, match="but no run.json"):
        train.train(cfg, out, data_dir=image_data_dir, source="npz", verbose=0)
    with pytest.raises(ValueError, match=r"samples.thinning \(1000\) collects no sample"):
        train.plan(tiny_config("msgd", samples__thinning=1000), image_data_dir, "npz")


def _manifest(out):
    m = json.load(open(os.path.join(out, "samples", "manifest.json")))
    return [(e["step"], e["sha256"]) for e in m["entries"]]


def test_killed_training_resumes_to_the_same_samples(image_data_dir, tmp_path):
    """`tf-vrre train` killed (SIGKILL) mid-run, then run again: the same samples and swap records
    as an uninterrupted run, bit for bit (augmented VR-reSGHMC, ResNet-free tiny CNN)."""
    from tf_vrre import cli

    full, killed = tmp_path / "full", tmp_path / "killed"
    assert cli.main(cli_flags("vr-resghmc", full, image_data_dir, epochs=6, subset=256)) == 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tf_vrre.cli"] + cli_flags("vr-resghmc", killed, image_data_dir, epochs=6, subset=256),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    log = killed / "log.csv"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if log.exists() and len(open(log).read().splitlines()) >= 3:  # header + 2 epochs
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert json.load(open(killed / "run.json"))["status"] == "running", "the job finished before the kill"
    # what a kill between a temporary's creation and its rename leaves (tf_vrre.runs.atomic), and
    # files of the same look that are not the run's own temporaries
    own = ["swaps/.swaps.csv.k3j9x2a_.tmp", "swaps/.identity.json.0a1b2c3d.tmp", ".run.json.abcdefgh.tmp"]
    own += [
        ".log.csv.zz99zz99.tmp",
        "samples/.manifest.json.qwertyui.tmp",
        "samples/.sample-000000004.npz.a1b2c3d4.tmp",
    ]
    foreign = ["swaps/notes.tmp", "swaps/.swaps.csv.tmp", ".report.json.abcdefgh.tmp", "samples/.x.npz.a1b2c3d4.tmp"]
    for name in own + foreign:
        (killed / name).write_text("planted")
    assert cli.main(cli_flags("vr-resghmc", killed, image_data_dir, epochs=6, subset=256)) == 0
    assert [name for name in own if (killed / name).exists()] == []
    assert [(killed / name).read_text() for name in foreign] == ["planted"] * len(foreign)
    assert json.load(open(killed / "run.json"))["status"] == "complete"
    assert _manifest(killed) == _manifest(full) and len(_manifest(full)) >= 5
    for name in ("swaps/swaps.csv", "swaps/refresh.csv", "swaps/epochs.csv"):
        assert open(killed / name).read() == open(full / name).read(), name
    logs = [list(csv.DictReader(open(d / "log.csv"))) for d in (killed, full)]
    assert [{k: v for k, v in r.items() if k != "epoch_seconds"} for r in logs[0]] == [
        {k: v for k, v in r.items() if k != "epoch_seconds"} for r in logs[1]
    ]  # every metric but the clock


def test_mirrored_strategy_replicas_do_not_drift(image_data_dir, tmp_path):
    """MirroredStrategy over 2 logical CPUs (fresh process): synchronized BatchNorm, mirrored copies
    bit-identical, the same swap decisions and samples as one device up to round-off (amplified by
    synchronized BatchNorm's one-pass variance; without BatchNorm they agree to 3e-7, see
    tests/helpers/_image_distributed.py)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, os.path.join(HELPERS, "_image_distributed.py"), image_data_dir, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["replicas"] == 2 and r["synchronized_bn"] and all(r["synchronized_bn"])
    assert r["copy_diff"] == 0.0
    assert r["sample_steps"][0] == r["sample_steps"][1] and r["sample_steps"][0]
    assert r["sample_diff"] < 5e-3, r
    assert r["swaps"][0] == r["swaps"][1] and r["attempts"][0] == r["attempts"][1] > 0
