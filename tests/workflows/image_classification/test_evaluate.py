"""`tf_vrre.workflows.image_classification.evaluate` / `tf-vrre evaluate` on a tiny run: every file, numbers cross-checked."""

import json
import os
import shutil

import numpy as np
import pytest
from _image_runs import tiny_config

from tf_vrre.callbacks.sample_collector import load_samples
from tf_vrre.runs import run_json
from tf_vrre.workflows.image_classification import evaluate, train


@pytest.fixture(scope="module")
def tiny_run(image_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "run"
    cfg = tiny_config("vr-resghmc", training__epochs=3)
    train.train(cfg, out, data_dir=image_data_dir, source="npz", verbose=0)
    return str(out)


def test_evaluate_writes_every_file_and_consistent_numbers(tiny_run, image_data_dir):
    from tf_vrre.workflows.image_classification import models
    from tf_vrre.workflows.image_classification.data import Preprocessing, load_split

    report = evaluate.evaluate(tiny_run, fit_size=32, verbose=0)
    for name in run_json.EVAL_OUTPUTS:
        assert os.path.getsize(os.path.join(tiny_run, name)) > 0, name
    assert json.load(open(os.path.join(tiny_run, "report.json"))) == json.loads(json.dumps(report))
    samples = load_samples(os.path.join(tiny_run, "samples"))
    assert report["samples"] == len(samples) >= 2 and report["test"]["size"] == 200
    assert report["ood"]["dataset"] == "cifar100" and report["ood"]["size"] == 200
    assert 0 < report["temperature"]["T"] < 100 and report["temperature"]["fit_size"] == 32
    assert report["temperature"]["heldout_nll"] <= report["temperature"]["heldout_nll_T1"] + 1e-9
    for k in ("T=1", "T=2", "T=fitted", "last_sample"):
        t = report["test"][k]
        assert 0 <= t["accuracy"] <= 1 and t["nll"] > 0 and 0 <= t["brier"] <= 2 and 0 <= t["ece"] <= 1
        o = report["ood"][k]
        assert 0 <= o["entropy_mean"] <= np.log(10) + 1e-9 and 0 <= o["auroc"] <= 1 and 0.1 - 1e-9 <= o["brier"] <= 1
    # the streamed BMA at T = 1 equals SampleSet.predict (mean of softmax over the samples)
    run = run_json.read_run(tiny_run)
    x, y, _ = load_split("cifar10", "test", "npz", image_data_dir)
    net = models.build("cnn", width=4)
    p = samples.predict(net, Preprocessing.from_dict(run["preprocessing"]).apply(x))
    assert report["test"]["T=1"]["accuracy"] == pytest.approx(float(np.mean(p.argmax(1) == y)))
    nll = -np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-7, 1)))
    assert report["test"]["T=1"]["nll"] == pytest.approx(nll, rel=1e-4)
    brier = np.mean(np.sum((p - np.eye(10)[y]) ** 2, axis=1))
    assert report["test"]["T=1"]["brier"] == pytest.approx(brier, rel=1e-4)
    assert report["swaps"]["attempts"] > 0 and report["swaps"]["sigma2_late"] > 0


def test_evaluate_cli_and_errors(tiny_run, tmp_path, capsys):
    from tf_vrre import cli

    assert cli.main(["evaluate", "--run", tiny_run, "--ood", "none", "--fit-size", "0", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "T=2" in out and "OOD" not in out
    assert json.load(open(os.path.join(tiny_run, "report.json")))["ood"] is None
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(os.path.join(tiny_run, "run.json"), empty / "run.json")
    for args, message in (
        (["--run", str(empty)], "samples/manifest.json does not exist"),
        (["--run", str(tmp_path / "nope")], "run directory"),
        (["--run", tiny_run, "--ood", "mnist"], "--ood: invalid choice"),
        (["--run", tiny_run, "--test-size", "0"], "--test-size: must be > 0"),
    ):
        with pytest.raises(SystemExit) as exc:
            cli.main(["evaluate"] + args)
        assert exc.value.code == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert message in err[-1] and err[-1].startswith("tf-vrre: error:"), err
    assert sorted(os.listdir(empty)) == ["run.json"]  # nothing half-written
