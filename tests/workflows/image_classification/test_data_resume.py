"""Resuming `tf-vrre train` on other images with the same labels is refused before anything is
written (the pixel digest and the fitted normalisation are compared, not only the labels)."""

import json
import os
import shutil

import numpy as np
import pytest
from _image_runs import cli_flags

from tf_vrre import cli
from tf_vrre.runs import run_json
from tf_vrre.workflows.image_classification import config, train
from tf_vrre.workflows.image_classification.data import pixels_digest


def _snapshot(out):
    return {
        os.path.relpath(os.path.join(d, f), out): os.stat(os.path.join(d, f)).st_mtime_ns
        for d, _, files in os.walk(out)
        for f in files
    }


def _other_images(src, dst):
    """A copy of the npz data with the same labels and other pixels (the negatives)."""
    shutil.copytree(src, dst)
    for d, _, files in os.walk(dst):
        for f in files:
            with np.load(os.path.join(d, f)) as z:
                x, y = z["x"], z["y"]
            np.savez(os.path.join(d, f), x=255 - x, y=y)
    return str(dst)


def _interrupted(out):
    """Marks the finished run as interrupted (as after a kill): the next command resumes it."""
    run = json.load(open(out / "run.json"))
    run["status"] = "running"
    run_json.write_json(out / "run.json", run)
    return run


def test_resume_on_other_pixels_is_refused_before_writing(image_data_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    assert cli.main(cli_flags("msgd", out, image_data_dir)) == 0
    run = _interrupted(out)
    assert run["data"]["pixels_digest"] == pixels_digest(
        np.concatenate(
            [np.load(os.path.join(image_data_dir, "cifar10", f"cifar10_train_part{k}of2.npz"))["x"] for k in (1, 2)]
        )
    )
    other = _other_images(image_data_dir, tmp_path / "other")
    before, text = _snapshot(out), open(out / "run.json").read()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main(cli_flags("msgd", out, other))
    assert exc.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("tf-vrre: error: train: --out") and "the training data in" in line and other in line
    assert "data.pixels_digest" in line and "resume with the run's data (npz" in line
    assert _snapshot(out) == before and open(out / "run.json").read() == text  # nothing written

    # a run recorded before the pixel digest: the fitted normalisation tells the images apart
    del run["data"]["pixels_digest"]
    run_json.write_json(out / "run.json", run)
    with pytest.raises(run_json.RunDirError, match=r"preprocessing.mean \[.*\] there, \[.*\] now"):
        train.train(config.resolve(run["config"]), out, data_dir=other, source="npz", verbose=0)
    # the run's own data (here given by a relative path of the same directory) resume it
    monkeypatch.chdir(os.path.dirname(image_data_dir))
    assert cli.main(cli_flags("msgd", out, os.path.basename(image_data_dir))) == 0
    done = json.load(open(out / "run.json"))
    assert done["status"] == "complete" and done["data"]["data_dir"] == image_data_dir
    # evaluate fits its temperature on the run's held-out images: not on other pixels of the same labels
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main(["evaluate", "--run", str(out), "--data-dir", other, "--ood", "none", "--fit-size", "16", "--quiet"])
    assert exc.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "is not the run's (data.pixels_digest" in line and "held-out images were not held out" in line
    assert not os.path.exists(out / "report.json")
