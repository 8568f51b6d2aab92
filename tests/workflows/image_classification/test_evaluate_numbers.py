"""``evaluate`` on samples that are not well-behaved: a sample with NaN weights is named before any
work; over-confident samples get their exact NLL (the BMA in log space, nothing clipped), the
same number in the printed fit and in the report, and a temperature fit that says what it found.

The runs are copies of ``tests/fixtures/vr_resghmc_cnn_run`` (2 samples of a width-4 CNN) with
their sample files changed and the manifest's sizes and checksums updated, as another tool
would leave them."""

import json
import os
import shutil

import numpy as np
import pytest
from _paths import FIXTURES

from tf_vrre import cli
from tf_vrre.runs import run_json, samples
from tf_vrre.workflows.image_classification import evaluate, models
from tf_vrre.workflows.image_classification.data import Preprocessing, indices_digest, load_split, split_indices


@pytest.fixture
def run(tmp_path):
    path = tmp_path / "run"
    shutil.copytree(os.path.join(FIXTURES, "vr_resghmc_cnn_run"), path)
    return path


def rewrite(run, change, step=None):
    """Applies ``change(arrays)`` to the sample files (of ``step``), updating the manifest."""
    directory = run / "samples"
    manifest = json.loads((directory / "manifest.json").read_text())
    for entry in manifest["entries"]:
        if step is None or entry["step"] == step:
            path = directory / entry["file"]
            with np.load(path) as z:
                arrays = {k: z[k] for k in z.files}
            change(arrays)
            np.savez(path, **arrays)
            entry["bytes"], entry["sha256"] = os.path.getsize(path), samples.sha256(path)
    (directory / "manifest.json").write_text(json.dumps(manifest))


def nan_weight(arrays):
    arrays["w0003"] = arrays["w0003"].copy()
    arrays["w0003"][1] = np.nan


def test_a_sample_with_nan_weights_is_named_before_any_work(run, image_data_dir, capsys, monkeypatch):
    rewrite(run, nan_weight, step=4)
    bad = run / "samples" / "sample-000000004.npz"

    def fail(*args, **kwargs):
        raise AssertionError("the evaluation started")

    monkeypatch.setattr(evaluate, "evaluate", fail)
    with pytest.raises(SystemExit) as exc:
        cli.main(["evaluate", "--run", str(run), "--data-dir", image_data_dir, "--source", "npz", "--quiet"])
    assert exc.value.code == 2
    err = [row for row in capsys.readouterr().err.splitlines() if row.strip()]
    assert err == [
        f"tf-vrre: error: evaluate: --run: sample file {bad} (step 4): weight array 'w0003' holds 1 non-finite "
        "value(s) (NaN or inf) of 4; such a sample cannot be averaged (tf_vrre writes finite samples only: the "
        f"file was changed after it was written): move it out of the directory; {samples.repair_hint(run)}"
    ]
    monkeypatch.undo()
    monkeypatch.setattr(models, "build", fail)  # the Python call: refused before any model is built
    with pytest.raises(run_json.RunDirError, match=r"sample-000000004.npz \(step 4\): weight array 'w0003'"):
        evaluate.evaluate(run, data_dir=image_data_dir, source="npz", verbose=0)
    assert not (run / "report.json").exists()


def exact_nll(run, data_dir, x, y):
    """``-mean log mean_s softmax(z_s)[y]`` with 80-bit floats (``exp(-10^3)`` is a number there)."""
    net = models.build("cnn", width=4)
    pre = Preprocessing.from_dict(json.loads((run / "run.json").read_text())["preprocessing"])
    p = 0
    found = samples.load_samples(run / "samples")
    for w in found:
        net.set_weights(w)
        z = np.asarray(net.predict(pre.apply(x), verbose=0), np.longdouble)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        p = p + e / e.sum(axis=1, keepdims=True)
    p = p / len(found)
    return float(-np.mean(np.log(p[np.arange(len(y)), y])))


def test_over_confident_samples_get_their_exact_nll_everywhere(run, image_data_dir, capsys):
    def sharpen(arrays):  # the last (Dense) layer x 1000: every logit x 1000
        for k in ("w0008", "w0009"):
            arrays[k] = arrays[k] * np.float32(1e3)

    rewrite(run, sharpen)
    record = json.loads((run / "run.json").read_text())
    d = record["data"]
    xs, ys, _ = load_split("cifar10", "train", "npz", image_data_dir)
    held = split_indices(ys, d.get("subset"), d["holdout"], d["split_seed"])[1]
    d["holdout_digest"] = indices_digest(held)  # the held-out split of the images at hand
    (run / "run.json").write_text(json.dumps(record))
    report = evaluate.evaluate(run, ood="none", data_dir=image_data_dir, source="npz", fit_size=32, verbose=1)
    printed = capsys.readouterr().err
    x, y, _ = load_split("cifar10", "test", "npz", image_data_dir)
    test_nll = exact_nll(run, image_data_dir, x, y)
    assert test_nll > 100  # far beyond what probabilities clipped at 1e-7 (16.1 nats per image) allow
    assert report["test"]["T=1"]["nll"] == pytest.approx(test_nll, rel=1e-9)
    t = report["temperature"]
    assert t["heldout_nll_T1"] == pytest.approx(exact_nll(run, image_data_dir, xs[held[:32]], ys[held[:32]]), rel=1e-9)
    assert f"{t['heldout_nll_T1']:.4f} at T = 1" in printed  # the printed fit and the report agree
    assert t["T"] is not None and t["heldout_nll"] < t["heldout_nll_T1"]  # the fit did not give up
    if t["bound_hit"] is not None:  # an optimum beyond T = 100, said so
        assert t["bound_hit"] == "upper" and t["T"] == 100.0
        assert any("fitted temperature at the upper bound T = 100" in w for w in report["warnings"])
    else:
        assert report["test"]["T=fitted"]["nll"] < report["test"]["T=1"]["nll"]
