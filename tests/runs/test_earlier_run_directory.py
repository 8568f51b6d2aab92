"""A run directory written by an earlier version of the package (tests/fixtures/vr_resghmc_cnn_run:
``tf-vrre train --config vr-resghmc --model cnn`` at toy scale, 2 epochs on the first images of
the CIFAR-10 test set, laid out as the ``image_data_dir`` fixture) still evaluates, exports,
diagnoses and resumes: the run-directory format and the Keras names stored in it are stable."""

import json
import os
import shutil

import pytest
from _paths import FIXTURES
from conftest import SHARED_DATA

from tf_vrre import cli

FIXTURE = os.path.join(FIXTURES, "vr_resghmc_cnn_run")
TRAIN_FLAGS = [
    "train",
    "--config",
    "vr-resghmc",
    "--model",
    "cnn",
    "--set",
    "model.kwargs.width=4",
    "--subset",
    "64",
    "--batch-size",
    "32",
    "--holdout",
    "32",
    "--epochs",
    "2",
    "--thinning",
    "2",
    "--set",
    "samples.validation=16",
    "--source",
    "npz",
    "--quiet",
    "--set",
    "variance_reduction.period=4",
    "--set",
    "variance_reduction.batch_size=64",
    "--set",
    "swap.period=2",
    "--set",
    "swap.correction=1e6",
    "--set",
    "samples.burn_in_epochs=0",
]


@pytest.fixture
def run(tmp_path):
    path = str(tmp_path / "run")
    shutil.copytree(FIXTURE, path)
    return path


def _files(root):
    """Every file's bytes and mtime, and every directory's mtime."""
    out = {}
    for d, _, names in os.walk(root):
        out[os.path.relpath(d, root)] = os.stat(d).st_mtime_ns
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = (open(p, "rb").read(), os.stat(p).st_mtime_ns)
    return out


# The fixture was trained on real CIFAR-10 images: evaluating it needs the same images (its
# held-out split is checked against them), which a machine without the real data cannot rebuild.
REAL_IMAGES = os.path.exists(os.path.join(SHARED_DATA, "cifar10", "cifar10_test.npz"))


@pytest.mark.skipif(not REAL_IMAGES, reason="the fixture run's held-out split is of the real CIFAR-10 images")
def test_evaluate(run, image_data_dir):
    assert cli.main(["evaluate", "--run", run, "--data-dir", image_data_dir, "--quiet"]) == 0
    report = json.load(open(os.path.join(run, "report.json")))
    assert report["samples"] == 2 and 0.0 <= report["test"]["T=1"]["accuracy"] <= 1.0


def test_export(run, tmp_path, capsys):
    out = str(tmp_path / "serving")
    assert cli.main(["export", "--run", run, "--out", out]) == 0
    assert "exported 2 of 2 samples (steps 2..4)" in capsys.readouterr().out


def test_diagnose_and_export_read_the_run_and_touch_nothing(run, tmp_path):
    """Read-only commands take the run's lock shared when there is one and never create it: not a
    byte, an entry or an mtime of the run changes."""
    before = _files(run)
    out = str(tmp_path / "diag")
    assert cli.main(["diagnose", "--run", run, "--out", out, "--no-figures"]) == 0
    assert os.path.exists(os.path.join(out, "diagnostics.json"))
    assert cli.main(["export", "--run", run, "--out", str(tmp_path / "serving")]) == 0
    assert _files(run) == before


def test_rerun_of_the_complete_run_touches_nothing(run, image_data_dir, capsys):
    """The config recorded by the earlier version compares equal to today's typed config, so the
    rerun finds the same, complete run: nothing to do, and nothing in the directory changes (no
    lock file created, no mtime moved)."""
    before = _files(run)
    assert cli.main(TRAIN_FLAGS + ["--data-dir", image_data_dir, "--out", run]) == 0
    assert "run already complete (vr-resghmc); nothing to do" in capsys.readouterr().out
    assert _files(run) == before
    assert json.load(open(os.path.join(run, "run.json")))["status"] == "complete"
